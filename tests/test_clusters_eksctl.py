"""eksctl ClusterConfig: one capacity target per node group, with eksctl's defaults said as such, at exact lines."""
from __future__ import annotations

import json

from conftest import run_cli

from gpulint.read.clusters import read_clusters
from gpulint.read.clusters.eksctl import looks_like
from gpulint.read.parsers import parse_yaml
from helpers import line_of, only_fact as one

CLUSTER = """\
apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig

metadata:
  name: llm-train
  region: us-east-1

managedNodeGroups:
  - name: system
    instanceType: m6i.xlarge
    desiredCapacity: 2
  - name: h100
    instanceType: p5.48xlarge
    efaEnabled: true
    minSize: 0
    desiredCapacity: 4
    maxSize: 16
    availabilityZones: ["us-east-1c"]
    capacityReservation:
      capacityReservationTarget:
        capacityReservationID: cr-0abc
    labels:
      workload: training
      gpu: h100
    taints:
      - key: nvidia.com/gpu
        value: "true"
        effect: NoSchedule
  - name: spot-g5
    instanceTypes: ["g5.12xlarge", "g5.24xlarge"]
    spot: true
    maxSize: 6
  - name: p5-block
    instanceType: p5.48xlarge
    instanceMarketOptions:
      marketType: capacity-block
    capacityReservation:
      capacityReservationTarget:
        capacityReservationID: cr-0def
    efaEnabled: false

nodeGroups:
  - name: mixed-gpu
    minSize: 1
    maxSize: 8
    instancesDistribution:
      instanceTypes: ["g4dn.xlarge", "g4dn.2xlarge"]
      onDemandBaseCapacity: 1
      onDemandPercentageAboveBaseCapacity: 0
      spotAllocationStrategy: capacity-optimized
    taints:
      dedicated: "ml:NoSchedule"
      other: "PreferNoSchedule"
"""


def read(text: str, path: str = "cluster.yaml"):
    return read_clusters(parse_yaml(text, path))


def test_managed_gpu_group_with_reservation_efa_labels_and_taints():
    facts = read(CLUSTER)
    t = one(facts, "compute.target", "h100")
    assert t.value == {"source": "eksctl", "provider": "aws", "resource": "ManagedNodeGroup/h100", "role": None,
                       "partition": None}
    assert t.loc.line == line_of(CLUSTER, "- name: h100")
    assert t.attrs["capacity_of"] == "kubernetes" and t.attrs["cluster"] == "llm-train"
    assert t.attrs["labels"] == {"workload": "training", "gpu": "h100", "alpha.eksctl.io/nodegroup-name": "h100",
                                 "alpha.eksctl.io/cluster-name": "llm-train", "eks.amazonaws.com/nodegroup": "h100",
                                 "eks.amazonaws.com/capacityType": "ON_DEMAND",
                                 "node.kubernetes.io/instance-type": "p5.48xlarge"}
    assert t.attrs["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert t.attrs["desired"] == 4 and t.attrs["zones"] == ["us-east-1c"]
    inst = one(facts, "compute.instance_type", "h100")
    assert (inst.value, inst.loc.line, inst.attrs) == ("p5.48xlarge", line_of(CLUSTER, "instanceType: p5.48xlarge"), {})
    assert (one(facts, "compute.node_count", "h100").value, one(facts, "compute.node_count", "h100").loc.line) == \
        (16, line_of(CLUSTER, "maxSize: 16"))
    assert (one(facts, "compute.min_nodes", "h100").value, one(facts, "compute.min_nodes", "h100").loc.line) == \
        (0, line_of(CLUSTER, "minSize: 0"))
    cap = one(facts, "compute.capacity", "h100")
    assert (cap.value, cap.loc.line) == ("reserved", line_of(CLUSTER, "capacityReservationTarget:"))
    efa = one(facts, "compute.efa", "h100")
    assert (efa.value, efa.attrs, efa.loc.line) == (1, {"all": True}, line_of(CLUSTER, "efaEnabled: true"))


def test_eksctl_defaults_are_applied_and_marked():
    facts = read(CLUSTER)
    # system: sizes follow desiredCapacity; capacity on-demand and EFA off by default
    for kind in ("compute.node_count", "compute.min_nodes"):
        f = one(facts, kind, "system")
        assert (f.value, f.attrs, f.loc.line) == (2, {"from": "desiredCapacity"}, line_of(CLUSTER, "desiredCapacity: 2"))
    cap = one(facts, "compute.capacity", "system")
    assert (cap.value, cap.attrs, cap.loc.line) == ("on-demand", {"default": True}, line_of(CLUSTER, "- name: system"))
    efa = one(facts, "compute.efa", "system")
    assert (efa.value, efa.attrs) == (0, {"absent": True})
    # spot-g5: minSize defaults to eksctl's 2 when neither minSize nor desiredCapacity is written
    low = one(facts, "compute.min_nodes", "spot-g5")
    assert (low.value, low.attrs, low.loc.line) == (2, {"default": True}, line_of(CLUSTER, "- name: spot-g5"))


def test_group_without_any_instance_type_gets_eksctls_default_type():
    text = "apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\nmetadata: {name: c}\nmanagedNodeGroups:\n  - name: ng\n"
    facts = read(text)
    inst = one(facts, "compute.instance_type", "ng")
    assert (inst.value, inst.attrs, inst.loc.line) == ("m5.large", {"default": True}, 5)
    assert one(facts, "compute.node_count", "ng").value == 2
    # a selector or a launch template decides the type elsewhere: none is stated
    for extra in ("    instanceSelector: {vCPUs: 8, gpus: 1}\n", "    launchTemplate: {id: lt-0abc}\n"):
        facts = read(text + extra)
        assert not [f for f in facts if f.kind == "compute.instance_type"]
        assert "node.kubernetes.io/instance-type" not in one(facts, "compute.target", "ng").attrs["labels"]


def test_spot_alternatives_and_capacity_block():
    facts = read(CLUSTER)
    types = [f for f in facts if f.kind == "compute.instance_type" and f.target == "spot-g5"]
    assert [(f.value, f.attrs, f.loc.line) for f in types] == [
        ("g5.12xlarge", {"alternatives": True}, line_of(CLUSTER, "instanceTypes: [\"g5.12xlarge\"")),
        ("g5.24xlarge", {"alternatives": True}, line_of(CLUSTER, "instanceTypes: [\"g5.12xlarge\""))]
    cap = one(facts, "compute.capacity", "spot-g5")
    assert (cap.value, cap.loc.line) == ("spot", line_of(CLUSTER, "spot: true"))
    labels = one(facts, "compute.target", "spot-g5").attrs["labels"]
    assert labels["eks.amazonaws.com/capacityType"] == "SPOT" and "node.kubernetes.io/instance-type" not in labels
    # max 6, min: no minSize, no desiredCapacity -> 2
    assert one(facts, "compute.node_count", "spot-g5").value == 6
    block = one(facts, "compute.capacity", "p5-block")
    assert (block.value, block.loc.line) == ("reserved", line_of(CLUSTER, "marketType: capacity-block"))
    assert one(facts, "compute.target", "p5-block").attrs["labels"]["eks.amazonaws.com/capacityType"] == "CAPACITY_BLOCK"
    efa = one(facts, "compute.efa", "p5-block")
    assert (efa.value, efa.attrs, efa.loc.line) == (0, {}, line_of(CLUSTER, "efaEnabled: false"))


def test_unmanaged_group_distribution_and_map_taints():
    facts = read(CLUSTER)
    t = one(facts, "compute.target", "mixed-gpu")
    assert t.value["resource"] == "NodeGroup/mixed-gpu" and t.attrs["managed"] is False
    assert "eks.amazonaws.com/nodegroup" not in t.attrs["labels"]
    assert t.attrs["labels"]["alpha.eksctl.io/nodegroup-name"] == "mixed-gpu"
    assert t.attrs["taints"] == [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"},
                                 {"key": "other", "value": "", "effect": "PreferNoSchedule"}]
    assert [f.value for f in facts if f.kind == "compute.instance_type" and f.target == "mixed-gpu"] == \
        ["g4dn.xlarge", "g4dn.2xlarge"]
    cap = one(facts, "compute.capacity", "mixed-gpu")
    assert cap.value == "spot" and cap.loc.line == line_of(CLUSTER, "onDemandPercentageAboveBaseCapacity: 0")
    assert cap.attrs == {"on_demand_percentage_above_base_capacity": 0, "on_demand_base_capacity": 1, "mixed": True}


def test_values_that_are_not_literal_are_left_out():
    text = """\
apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig
metadata:
  name: ${CLUSTER_NAME}
managedNodeGroups:
  - name: gpu
    instanceType: ${INSTANCE_TYPE}
    maxSize: $MAX
    minSize: 1
    spot: "${SPOT}"
    efaEnabled: "${EFA}"
  - name: ${GROUP}
    instanceType: p4d.24xlarge
"""
    facts = read(text)
    assert {f.target for f in facts} == {"gpu"}  # a group whose name is a placeholder is not a target
    t = one(facts, "compute.target", "gpu")
    assert "cluster" not in t.attrs and "alpha.eksctl.io/cluster-name" not in t.attrs["labels"]
    assert sorted(f.kind for f in facts) == ["compute.min_nodes", "compute.target"]


def test_not_claimed_and_bad_shapes_do_not_raise():
    for text in ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
                 "apiVersion: eksctl.io/v1alpha5\nkind: NodeConfig\n",
                 "kind: ClusterConfig\nmanagedNodeGroups: [{name: a}]\n"):
        src = parse_yaml(text, "x.yaml")
        assert not any(looks_like(d, "x.yaml") for d in src.tree)
    odd = ("apiVersion: eksctl.io/v1alpha5\nkind: ClusterConfig\nmanagedNodeGroups: {name: a}\n"
           "nodeGroups: [3, [x], {name: 5}, {name: ok, labels: [a], taints: 7, instancesDistribution: 1, maxSize: [1]}]\n")
    facts = read(odd)
    assert {f.target for f in facts} == {"ok"}
    assert one(facts, "compute.capacity", "ok").value == "on-demand"
    assert not [f for f in facts if f.kind == "compute.node_count"]


def test_workloads_lists_node_groups_and_kubernetes_reader_stays_silent(tmp_path):
    (tmp_path / "cluster.yaml").write_text(CLUSTER)
    proc = run_cli("workloads", "--format", "json", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    computes = json.loads(proc.stdout)["computes"]
    assert sorted(c["resource"] for c in computes) == [
        "ManagedNodeGroup/h100", "ManagedNodeGroup/p5-block", "ManagedNodeGroup/spot-g5", "ManagedNodeGroup/system",
        "NodeGroup/mixed-gpu"]
    assert {c["source"] for c in computes} == {"eksctl"}  # the Kubernetes reader emits nothing for ClusterConfig
    h100 = next(c for c in computes if c["resource"] == "ManagedNodeGroup/h100")
    assert (h100["nodes"], h100["min_nodes"], h100["capacity"]) == (16, 0, "reserved")
