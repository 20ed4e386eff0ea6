"""AWS ParallelCluster v3 configs: one capacity target per Slurm queue compute resource, at its lines."""
from __future__ import annotations

import jsonschema

from gpulint.core import facts as vocabulary
from gpulint.read.clusters import read_clusters
from gpulint.read.clusters.parallelcluster import looks_like
from gpulint.read.parsers import parse_yaml
from gpulint.read.yamlnodes import load_documents
from helpers import facts_of_kind as of, line_of, only_fact as one

CONFIG = """\
Region: us-west-2
Image:
  Os: ubuntu2204
HeadNode:
  InstanceType: c5.4xlarge
  Networking:
    SubnetId: subnet-0a1b2c3d
Scheduling:
  Scheduler: slurm
  SlurmSettings:
    ScaledownIdletime: 10
  SlurmQueues:
    - Name: train
      CapacityType: ONDEMAND
      Networking:
        SubnetIds: [subnet-0a1b2c3d]
        PlacementGroup:
          Enabled: true
      ComputeResources:
        - Name: p5
          InstanceType: p5.48xlarge
          MinCount: 2
          MaxCount: 8
          Efa:
            Enabled: true
            GdrSupport: true
        - Name: g5
          Instances:
            - InstanceType: g5.12xlarge
            - InstanceType: g5.24xlarge
          MaxCount: 4
    - Name: cheap
      CapacityType: SPOT
      ComputeResources:
        - Name: g4dn
          InstanceType: g4dn.12xlarge
          MaxCount: 10
          Efa:
            Enabled: false
    - Name: block
      CapacityType: CAPACITY_BLOCK
      ComputeResources:
        - Name: h100
          InstanceType: p5.48xlarge
          MinCount: 4
          MaxCount: 4
          Efa:
            Enabled: true
          CapacityReservationTarget:
            CapacityReservationId: cr-0123456789abcdef0
"""


def read(text, path="cluster-config.yaml"):
    out = read_clusters(parse_yaml(text, path))
    for f in out:  # every fact is of its registered shape
        jsonschema.validate(f.value, vocabulary.KINDS[f.kind].schema)
    return out


def test_each_compute_resource_is_a_target_of_its_queue():
    out = read(CONFIG)
    targets = {f.target: f for f in out if f.kind == "compute.target"}
    assert list(targets) == ["train/p5", "train/g5", "cheap/g4dn", "block/h100"]
    t = targets["train/p5"]
    assert t.value == {"source": "parallelcluster", "provider": "aws", "resource": "ComputeResource/train/p5",
                       "role": None, "partition": "train"}
    assert t.attrs == {"capacity_of": "slurm", "default": True}
    assert t.loc.line == line_of(CONFIG, "- Name: p5")
    # only the first queue is Slurm's default partition
    assert all("default" not in targets[n].attrs for n in ("cheap/g4dn", "block/h100"))
    assert targets["train/g5"].attrs["default"] is True and targets["cheap/g4dn"].value["partition"] == "cheap"


def test_instance_counts_capacity_and_efa():
    out = read(CONFIG)
    inst = one(out, "compute.instance_type", "train/p5")
    assert (inst.value, inst.attrs, inst.loc.line) == ("p5.48xlarge", {}, line_of(CONFIG, "InstanceType: p5.48xlarge"))
    assert (one(out, "compute.min_nodes", "train/p5").value, one(out, "compute.min_nodes", "train/p5").loc.line) == (
        2, line_of(CONFIG, "MinCount: 2"))
    assert (one(out, "compute.node_count", "train/p5").value, one(out, "compute.node_count", "train/p5").loc.line) == (
        8, line_of(CONFIG, "MaxCount: 8"))
    cap = one(out, "compute.capacity", "train/p5")
    assert (cap.value, cap.loc.line) == ("on-demand", line_of(CONFIG, "CapacityType: ONDEMAND"))
    efa = one(out, "compute.efa", "train/p5")
    assert (efa.value, efa.attrs, efa.loc.line) == (1, {"all": True}, line_of(CONFIG, "Enabled: true", 1))


def test_several_instance_types_are_alternatives():
    out = read(CONFIG)
    types = of(out, "compute.instance_type", "train/g5")
    assert [(f.value, f.attrs, f.loc.line) for f in types] == [
        ("g5.12xlarge", {"alternatives": True}, line_of(CONFIG, "g5.12xlarge")),
        ("g5.24xlarge", {"alternatives": True}, line_of(CONFIG, "g5.24xlarge"))]
    assert of(out, "compute.min_nodes", "train/g5") == []  # MinCount defaults to 0: nothing idles


def test_efa_absent_is_off_by_default_and_explicit_off_is_plain_zero():
    out = read(CONFIG)
    absent = one(out, "compute.efa", "train/g5")
    assert (absent.value, absent.attrs, absent.loc.line) == (0, {"absent": True}, line_of(CONFIG, "- Name: g5"))
    off = one(out, "compute.efa", "cheap/g4dn")
    assert (off.value, off.attrs, off.loc.line) == (0, {}, line_of(CONFIG, "Enabled: false"))


def test_spot_and_capacity_blocks():
    out = read(CONFIG)
    assert one(out, "compute.capacity", "cheap/g4dn").value == "spot"
    block = one(out, "compute.capacity", "block/h100")
    # the compute resource's reservation target is where the reservation is named
    assert (block.value, block.loc.line) == ("reserved", line_of(CONFIG, "CapacityReservationTarget:"))


def test_queue_level_reservation_makes_on_demand_reserved():
    text = CONFIG.replace("""      CapacityType: ONDEMAND
""", """      CapacityType: ONDEMAND
      CapacityReservationTarget:
        CapacityReservationResourceGroupArn: arn:aws:resource-groups:us-west-2:123456789012:group/odcrs
""")
    out = read(text)
    cap = one(out, "compute.capacity", "train/p5")
    assert (cap.value, cap.loc.line) == ("reserved", line_of(text, "CapacityReservationTarget:"))
    assert one(out, "compute.capacity", "cheap/g4dn").value == "spot"


def test_envsubst_placeholders_are_not_guessed():
    text = """\
Region: ${AWS_REGION}
HeadNode:
  InstanceType: m5.8xlarge
Scheduling:
  Scheduler: slurm
  SlurmQueues:
    - Name: compute-gpu
      CapacityType: ONDEMAND
      ComputeResources:
        - Name: distributed-ml
          InstanceType: ${INSTANCE}
          MinCount: ${NUM_INSTANCES}
          MaxCount: ${NUM_INSTANCES}
          Efa:
            Enabled: true
          CapacityReservationTarget:
            CapacityReservationId: ${CAPACITY_RESERVATION_ID}
"""
    out = read(text)
    target = "compute-gpu/distributed-ml"
    assert one(out, "compute.target", target).value["partition"] == "compute-gpu"
    for kind in ("compute.instance_type", "compute.node_count", "compute.min_nodes"):
        assert of(out, kind, target) == [], kind
    assert one(out, "compute.capacity", target).value == "reserved"  # a reservation is targeted, whichever
    assert one(out, "compute.efa", target).value == 1


def test_must_not_read():
    # an AWS Batch scheduler config, a CloudFormation template and a Kubernetes manifest are not Slurm queues
    batch = "Region: us-east-1\nHeadNode:\n  InstanceType: t3.large\nScheduling:\n  Scheduler: awsbatch\n  AwsBatchQueues:\n" \
            "    - Name: q\n      ComputeResources:\n        - Name: ce\n          InstanceTypes: [p3.2xlarge]\n"
    assert read(batch) == []
    assert not looks_like(load_documents("Resources:\n  Cluster:\n    Type: AWS::ParallelCluster::Cluster\n")[0], "t.yaml")
    assert not looks_like(load_documents("Scheduling:\n  SlurmQueues: []\n")[0], "notes.yaml")  # a fragment
    assert read("apiVersion: v1\nkind: Pod\nmetadata: {name: SlurmQueues}\n") == []


def test_odd_shapes_never_raise():
    for text in ("Region: x\nScheduling:\n  SlurmQueues: [1, null, {Name: q, ComputeResources: 3}]\n",
                 "Region: x\nScheduling:\n  SlurmQueues:\n    - ComputeResources: [{InstanceType: [1]}, 7, {Efa: 3}]\n",
                 "Region: x\nScheduling:\n  SlurmQueues:\n    - {Name: q, CapacityType: [SPOT], ComputeResources: [{Name: c, Instances: 5}]}\n"):
        read(text)
    out = read("Region: x\nScheduling:\n  SlurmQueues:\n    - ComputeResources:\n        - InstanceType: g5.xlarge\n")
    t = one(out, "compute.target", "queue-0/compute-resource-0")
    assert t.value["partition"] is None and "default" not in t.attrs  # no name, no partition a job could name
