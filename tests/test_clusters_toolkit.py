"""GCP Cluster Toolkit blueprints: Slurm nodesets in their partitions, and GKE node pools, at their lines."""
from __future__ import annotations

import jsonschema

from gpulint.core import facts as vocabulary
from gpulint.read.clusters import read_clusters
from gpulint.read.clusters.toolkit import looks_like
from gpulint.read.parsers import parse_yaml
from gpulint.read.yamlnodes import load_documents
from helpers import facts_of_kind as of, line_of, only_fact as one

BLUEPRINT = """\
blueprint_name: llm-training

vars:
  project_id: my-project
  deployment_name: llm
  region: us-central1
  zone: us-central1-c
  slurm_cluster_name: llmslurm
  a3_partition: a3
  a3_nodes: 4
  reservation: ""

deployment_groups:
- group: primary
  modules:
  - id: network
    source: modules/network/vpc

  - id: a3_nodeset
    source: community/modules/compute/schedmd-slurm-gcp-v6-nodeset
    use: [network]
    settings:
      machine_type: a3-highgpu-8g
      node_count_static: $(vars.a3_nodes)
      node_count_dynamic_max: 0
      reservation_name: $(vars.reservation)
      enable_spot_vm: false

  - id: a3_partition
    source: community/modules/compute/schedmd-slurm-gcp-v6-partition
    use: [a3_nodeset]
    settings:
      partition_name: $(vars.a3_partition)
      is_default: true

  - id: g2_nodeset
    source: github.com/GoogleCloudPlatform/cluster-toolkit//community/modules/compute/schedmd-slurm-gcp-v6-nodeset?ref=v1.40.0
    use: [network]
    settings:
      machine_type: g2-standard-48
      node_count_dynamic_max: 12
      enable_spot_vm: true
      guest_accelerator:
      - type: nvidia-l4
        count: 4

  - id: cpu_nodeset
    source: community/modules/compute/schedmd-slurm-gcp-v6-nodeset
    use: [network]

  - id: batch_partition
    source: community/modules/compute/schedmd-slurm-gcp-v6-partition
    use: [g2_nodeset, cpu_nodeset]
    settings:
      partition_name: batch
      partition_conf:
        Default: "NO"

  - id: orphan_nodeset
    source: community/modules/compute/schedmd-slurm-gcp-v6-nodeset
    settings:
      machine_type: a2-highgpu-8g

  - id: slurm_controller
    source: community/modules/scheduler/schedmd-slurm-gcp-v6-controller
    use: [network, a3_partition, batch_partition]
"""


def read(text, path="blueprint.yaml"):
    out = read_clusters(parse_yaml(text, path))
    for f in out:
        jsonschema.validate(f.value, vocabulary.KINDS[f.kind].schema)
    return out


def test_nodesets_are_targets_of_the_partition_that_uses_them():
    out = read(BLUEPRINT)
    targets = {f.target: f for f in out if f.kind == "compute.target"}
    assert list(targets) == ["a3_partition/a3_nodeset", "batch_partition/g2_nodeset", "batch_partition/cpu_nodeset"]
    t = targets["a3_partition/a3_nodeset"]
    assert t.value == {"source": "toolkit", "provider": "gcp", "resource": "Nodeset/a3_nodeset", "role": None,
                       "partition": "a3"}  # partition_name from $(vars.a3_partition)
    assert t.attrs == {"capacity_of": "slurm", "default": True, "cluster": "llmslurm"}  # cluster from vars, like a setting
    assert t.loc.line == line_of(BLUEPRINT, "- id: a3_nodeset")
    assert "default" not in targets["batch_partition/g2_nodeset"].attrs  # partition_conf Default NO
    assert targets["batch_partition/cpu_nodeset"].value["partition"] == "batch"


def test_node_counts_machine_and_capacity():
    out = read(BLUEPRINT)
    a3 = "a3_partition/a3_nodeset"
    inst = one(out, "compute.instance_type", a3)
    assert (inst.value, inst.attrs, inst.loc.line) == ("a3-highgpu-8g", {}, line_of(BLUEPRINT, "machine_type: a3-highgpu-8g"))
    nodes, idle = one(out, "compute.node_count", a3), one(out, "compute.min_nodes", a3)
    assert (nodes.value, nodes.loc.line) == (4, line_of(BLUEPRINT, "node_count_dynamic_max: 0"))  # static 4 + dynamic 0
    assert (idle.value, idle.loc.line) == (4, line_of(BLUEPRINT, "node_count_static:"))
    cap = one(out, "compute.capacity", a3)  # reservation_name resolves to "": no reservation
    assert (cap.value, cap.loc.line) == ("on-demand", line_of(BLUEPRINT, "enable_spot_vm: false"))


def test_spot_and_guest_accelerators():
    out = read(BLUEPRINT)
    g2 = "batch_partition/g2_nodeset"
    assert one(out, "compute.capacity", g2).value == "spot"
    assert one(out, "compute.node_count", g2).value == 12 and of(out, "compute.min_nodes", g2) == []
    acc = one(out, "compute.accelerator", g2)
    assert (acc.value, acc.loc.line) == ({"type": "nvidia-l4", "count": 4}, line_of(BLUEPRINT, "- type: nvidia-l4"))
    gpn = one(out, "compute.gpus_per_node", g2)
    assert (gpn.value, gpn.loc.line) == (4, line_of(BLUEPRINT, "guest_accelerator:"))


def test_module_defaults():
    out = read(BLUEPRINT)
    cpu = "batch_partition/cpu_nodeset"
    inst = one(out, "compute.instance_type", cpu)
    assert (inst.value, inst.attrs, inst.loc.line) == ("c2-standard-60", {"default": True}, line_of(BLUEPRINT, "- id: cpu_nodeset"))
    assert one(out, "compute.node_count", cpu).value == 10  # node_count_dynamic_max's default
    assert of(out, "compute.capacity", cpu) == []


def test_reservation_and_unresolved_expressions():
    text = BLUEPRINT.replace('reservation: ""', "reservation: a3-reservation-1").replace(
        "partition_name: batch", "partition_name: $(vars.not_defined)").replace(
        "node_count_dynamic_max: 12", "node_count_dynamic_max: $(network.subnetwork_count)")
    out = read(text)
    cap = one(out, "compute.capacity", "a3_partition/a3_nodeset")
    assert (cap.value, cap.loc.line) == ("reserved", line_of(text, "reservation_name:"))
    g2 = one(out, "compute.target", "batch_partition/g2_nodeset")
    assert g2.value["partition"] is None
    assert of(out, "compute.node_count", "batch_partition/g2_nodeset") == []


def test_deployment_variables_fill_unwritten_settings():
    text = BLUEPRINT.replace("  reservation: \"\"\n", "  reservation: \"\"\n  machine_type: n2-standard-32\n")
    out = read(text)
    inst = one(out, "compute.instance_type", "batch_partition/cpu_nodeset")
    assert (inst.value, inst.attrs, inst.loc.line) == ("n2-standard-32", {}, line_of(text, "machine_type: n2-standard-32"))


GKE = """\
blueprint_name: gke-gpu
vars:
  project_id: p
  deployment_name: gke-gpu
  accelerator_type: nvidia-h100-80gb
deployment_groups:
- group: primary
  modules:
  - id: gke_cluster
    source: modules/scheduler/gke-cluster
    settings:
      name: train-cluster
  - id: h100_pool
    source: modules/compute/gke-node-pool
    use: [gke_cluster]
    settings:
      name: h100
      machine_type: a3-highgpu-8g
      static_node_count: 2
      guest_accelerator:
      - type: $(vars.accelerator_type)
        count: 8
      kubernetes_labels:
        team: research
      taints:
      - key: dedicated
        value: training
        effect: NO_SCHEDULE
      reservation_affinity:
        consume_reservation_type: SPECIFIC_RESERVATION
        specific_reservations:
        - name: $(vars.reservation)
  - id: spot_pool
    source: modules/compute/gke-node-pool
    use: [gke_cluster]
    settings:
      machine_type: g2-standard-8
      spot: true
      autoscaling_total_min_nodes: 0
      autoscaling_total_max_nodes: 6
"""


def test_gke_node_pools_are_kubernetes_capacity_with_their_labels():
    out = read(GKE)
    t = one(out, "compute.target", "h100_pool")
    assert t.value == {"source": "toolkit", "provider": "gcp", "resource": "NodePool/h100", "role": None, "partition": None}
    assert t.attrs["capacity_of"] == "kubernetes" and t.attrs["cluster"] == "train-cluster"
    assert t.attrs["labels"] == {"team": "research", "cloud.google.com/gke-nodepool": "h100",
                                 "node.kubernetes.io/instance-type": "a3-highgpu-8g",
                                 "cloud.google.com/gke-accelerator": "nvidia-h100-80gb"}
    assert t.attrs["taints"] == [{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]
    assert (one(out, "compute.node_count", "h100_pool").value, one(out, "compute.min_nodes", "h100_pool").value) == (2, 2)
    assert one(out, "compute.node_count", "h100_pool").loc.line == line_of(GKE, "static_node_count: 2")
    cap = one(out, "compute.capacity", "h100_pool")
    assert (cap.value, cap.loc.line) == ("reserved", line_of(GKE, "reservation_affinity:"))
    assert one(out, "compute.accelerator", "h100_pool").value == {"type": "nvidia-h100-80gb", "count": 8}
    spot = one(out, "compute.target", "spot_pool")
    assert spot.attrs["labels"] == {"node.kubernetes.io/instance-type": "g2-standard-8", "cloud.google.com/gke-spot": "true"}
    assert one(out, "compute.capacity", "spot_pool").value == "spot"
    assert (one(out, "compute.node_count", "spot_pool").value, one(out, "compute.min_nodes", "spot_pool").value) == (6, 0)


def test_must_not_read_and_never_raises():
    assert read("blueprint_name: net-only\ndeployment_groups:\n- group: g\n  modules:\n  - id: n\n    source: modules/network/vpc\n") == []
    assert not looks_like(load_documents("deployment_groups: [1]\nname: x\n")[0], "x.yaml")  # no blueprint keys
    assert read("name: x\ndeployment_groups:\n- group: g\n") == []
    for text in ("blueprint_name: b\ndeployment_groups: [1, {modules: 3}, {modules: [{id: 1}, 2, {id: p, source: 5}]}]\n",
                 "blueprint_name: b\nvars: {a: $(vars.a)}\ndeployment_groups:\n- modules:\n  - {id: p, source: x/schedmd-slurm-gcp-v6-partition,"
                 " use: [n, 7], settings: {partition_name: $(vars.a)}}\n  - {id: n, source: x/schedmd-slurm-gcp-v6-nodeset,"
                 " settings: {guest_accelerator: 3, node_count_static: [1], taints: 2}}\n",
                 "blueprint_name: b\ndeployment_groups:\n- modules:\n  - {id: q, source: modules/compute/gke-node-pool,"
                 " use: [{a: 1}, [2]], settings: {taints: [1, {key: k}], kubernetes_labels: [1], guest_accelerator: [{count: x}], reservation_affinity: 1}}\n"):
        read(text)
