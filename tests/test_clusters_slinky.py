"""Slinky NodeSets (Slurm nodes as pods): one Slurm capacity target per NodeSet, from the custom resource or the
slurm Helm chart's values; a Slurm job on a NodeSet reaches its machine through the node group the pods select."""
from __future__ import annotations

from gpulint.read.clusters import slinky
from gpulint.read.yamlnodes import load_documents
from gpulint.report.workloads_text import render_workloads
from gpulint.testing import scan_files
from samples import DDP_BF16_LOOP
from helpers import facts_of_kind, findings, line_of as line, only_fact as one

VALUES = """\
controller:
  extraConfMap:
    GresTypes: gpu
nodesets:
  cpu:
    enabled: true
    replicas: 2
    slurmd:
      resources:
        limits:
          cpu: 8
    partition:
      enabled: true
  h100:
    enabled: true
    replicas: 4
    slurmd:
      resources:
        limits:
          nvidia.com/gpu: 8
          vpc.amazonaws.com/efa: 32
    podSpec:
      nodeSelector:
        workload: slurm-gpu
      tolerations:
        - key: nvidia.com/gpu
          operator: Exists
          effect: NoSchedule
    partition:
      enabled: true
  disabled:
    enabled: false
    replicas: 1
    slurmd: {}
"""

LEGACY = """\
compute:
  nodesets:
    - name: a10
      enabled: true
      replicas: 2
      resources:
        limits:
          nvidia.com/gpu: 4
      nodeSelector:
        node.kubernetes.io/instance-type: g5.12xlarge
      partition:
        enabled: true
"""

RESOURCE = """\
apiVersion: slinky.slurm.net/v1beta1
kind: NodeSet
metadata:
  name: gpu-workers
spec:
  controllerRef:
    name: slurm
  replicas: 0
  slurmd:
    image: ghcr.io/slinkyproject/slurmd:25.05-ubuntu24.04
    resources:
      limits:
        nvidia.com/gpu: 8
  partition:
    enabled: false
  template:
    spec:
      nodeSelector:
        cloud.google.com/gke-nodepool: a3-pool
"""


def _facts(text: str, path: str = "helm/slurm-values.yaml"):
    docs = load_documents(text)
    assert all(slinky.looks_like(d, path) for d in docs)
    return slinky.read(docs, path)


def test_chart_values_give_one_slurm_target_per_enabled_nodeset():
    facts = _facts(VALUES)
    targets = {f.target: f for f in facts_of_kind(facts, "compute.target")}
    assert sorted(targets) == ["cpu", "h100"]  # "disabled" renders no NodeSet
    t = targets["h100"]
    assert t.value["source"] == "slinky" and t.value["partition"] == "h100" and t.attrs["capacity_of"] == "slurm"
    assert t.attrs["node_selector"] == {"workload": "slurm-gpu"}
    assert t.attrs["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    assert one(facts, "compute.gpus_per_node", "h100").value == 8
    assert one(facts, "compute.gpus_per_node", "h100").loc.line == line(VALUES, "nvidia.com/gpu: 8")
    assert one(facts, "compute.efa", "h100").value == 32
    assert one(facts, "compute.node_count", "h100").value == 4
    # replicas are scaled by the operator: a ceiling, never a floor the cost rules would price as always on
    assert facts_of_kind(facts, "compute.min_nodes") == []
    assert facts_of_kind([f for f in facts if f.target == "cpu"], "compute.gpus_per_node") == []


def test_legacy_chart_values_and_an_instance_type_selector():
    facts = _facts(LEGACY)
    assert one(facts, "compute.target", "a10").value["partition"] == "a10"
    assert one(facts, "compute.instance_type", "a10").value == "g5.12xlarge"
    assert one(facts, "compute.gpus_per_node", "a10").value == 4


def test_the_custom_resource_and_a_disabled_partition():
    facts = _facts(RESOURCE, "k8s/nodeset.yaml")
    t = one(facts, "compute.target", "gpu-workers")
    assert t.value["partition"] is None  # partition.enabled: false -> jobs cannot name it
    assert one(facts, "compute.gpus_per_node", "gpu-workers").value == 8
    assert facts_of_kind(facts, "compute.node_count") == []  # replicas: 0 is scaled from the queue, not a size


def test_other_charts_nodesets_and_other_kinds_are_not_slinky():
    other = load_documents("nodesets:\n  a:\n    replicas: 2\n    image: nginx\n")
    assert not slinky.looks_like(other[0], "values.yaml")
    nodeset = load_documents("apiVersion: example.com/v1\nkind: NodeSet\nmetadata: {name: x}\nspec: {replicas: 1}\n")
    assert not slinky.looks_like(nodeset[0], "x.yaml")


TRAIN = DDP_BF16_LOOP

EKSCTL = """\
apiVersion: eksctl.io/v1alpha5
kind: ClusterConfig
metadata:
  name: slurm-on-eks
  region: us-west-2
managedNodeGroups:
  - name: gpu
    instanceType: {instance}
    minSize: 0
    maxSize: 4
    efaEnabled: true
    labels:
      workload: slurm-gpu
    taints:
      - key: nvidia.com/gpu
        value: "true"
        effect: NoSchedule
"""

SBATCH = """\
#!/bin/bash
#SBATCH --partition={partition}
#SBATCH --nodes=4
#SBATCH --gres=gpu:8
srun torchrun --nproc_per_node=8 train.py
"""


def _compute(result):
    [wl] = [w for w in result.workloads if w["entrypoint"] == "train.py"]
    return wl["compute"]


def test_a_slurm_job_on_a_nodeset_runs_on_the_node_group_its_pods_select():
    comp = _compute(scan_files({"train.py": TRAIN, "jobs/train.sbatch": SBATCH.format(partition="h100"),
                                "cluster/slurm-values.yaml": VALUES,
                                "cluster/eksctl.yaml": EKSCTL.format(instance="p5.48xlarge")}))
    assert comp["instance"] == "p5.48xlarge"
    assert comp["placed_on"] == "cluster/slurm-values.yaml#h100"
    assert comp["placed_via"] == ["cluster/slurm-values.yaml#h100", "cluster/eksctl.yaml#gpu"]
    assert "--partition h100" in comp["placement"]


def test_a_job_on_another_partition_or_a_nodeset_on_no_group_names_no_machine():
    comp = _compute(scan_files({"train.py": TRAIN, "jobs/train.sbatch": SBATCH.format(partition="a100"),
                                "cluster/slurm-values.yaml": VALUES,
                                "cluster/eksctl.yaml": EKSCTL.format(instance="p5.48xlarge")}))
    assert comp["instance"] is None and comp.get("placed_on") is None
    # the NodeSet selects a label no node group of the repository has: the job is placed, its machine unknown
    comp = _compute(scan_files({"train.py": TRAIN, "jobs/train.sbatch": SBATCH.format(partition="h100"),
                                "cluster/slurm-values.yaml": VALUES.replace("workload: slurm-gpu", "workload: other"),
                                "cluster/eksctl.yaml": EKSCTL.format(instance="p5.48xlarge")}))
    assert comp["placed_on"] == "cluster/slurm-values.yaml#h100" and comp["instance"] is None


def test_the_node_group_under_a_nodeset_is_the_jobs_capacity_for_the_cost_rules_and_the_workloads_report():
    files = {"train.py": TRAIN, "jobs/train.sbatch": SBATCH.format(partition="h100"),
             "cluster/slurm-values.yaml": VALUES,
             "cluster/eksctl.yaml": EKSCTL.format(instance="p5.48xlarge").replace("minSize: 0", "minSize: 2")}
    [cost] = findings(files, "COST001")
    # a job trains on it (through the NodeSet): a warning naming the workload, not "no serving workload uses it"
    assert cost.severity.value == "warning" and "train.py trains on it" in cost.message
    text = render_workloads(scan_files(files))
    assert "cluster/slurm-values.yaml#h100 placed on: the GPU node group(s)" in text
    idle = text.split("compute targets no workload runs on:")[-1]
    assert "cluster/eksctl.yaml#gpu" not in idle and "cluster/slurm-values.yaml#h100" not in idle
    assert "cluster/slurm-values.yaml#cpu" in idle


PARTITIONS = """\
partitions:
  all:
    enabled: true
    nodesets: [ALL]
    configMap:
      Default: "YES"
      MaxTime: UNLIMITED
  debug:
    enabled: false
    nodesets: [cpu]
"""


def test_chart_partitions_over_all_nodesets_name_them_and_the_default():
    facts = _facts(VALUES + PARTITIONS)
    t = one(facts, "compute.target", "h100")
    assert t.attrs["partitions"] == ["all"] and t.attrs["default"] is True
    assert "partitions" in one(facts, "compute.target", "cpu").attrs  # "all" spans it too; "debug" is disabled
    assert one(facts, "compute.target", "cpu").attrs["partitions"] == ["all"]
    # a GPU job on -p all runs on the NodeSet with GPUs, and through it on the node group
    comp = _compute(scan_files({"train.py": TRAIN, "jobs/train.sbatch": SBATCH.format(partition="all"),
                                "cluster/slurm-values.yaml": VALUES + PARTITIONS,
                                "cluster/eksctl.yaml": EKSCTL.format(instance="p5.48xlarge")}))
    assert comp["placed_on"] == "cluster/slurm-values.yaml#h100" and comp["instance"] == "p5.48xlarge"
    # without the chart's partitions, "all" is no partition of this cluster
    comp = _compute(scan_files({"train.py": TRAIN, "jobs/train.sbatch": SBATCH.format(partition="all"),
                                "cluster/slurm-values.yaml": VALUES,
                                "cluster/eksctl.yaml": EKSCTL.format(instance="p5.48xlarge")}))
    assert comp.get("placed_on") is None
