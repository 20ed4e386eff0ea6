"""SageMaker HyperPod: create-cluster input -> one target per instance group; provisioning_parameters.json ->
the partition map. Values and lines."""
from __future__ import annotations

import json

from conftest import run_cli

from gpulint.read.clusters import read_clusters
from gpulint.read.clusters.hyperpod import looks_like
from gpulint.read.parsers import parse_json, parse_yaml
from helpers import line_of, only_fact as one

SLURM = """\
{
  "ClusterName": "pretrain",
  "InstanceGroups": [
    {
      "InstanceGroupName": "head",
      "InstanceType": "ml.m5.2xlarge",
      "InstanceCount": 1,
      "LifeCycleConfig": {"SourceS3Uri": "s3://lc-bucket/base/", "OnCreate": "on_create.sh"},
      "ThreadsPerCore": 2
    },
    {
      "InstanceGroupName": "gpu-workers",
      "InstanceType": "ml.p5.48xlarge",
      "InstanceCount": 8,
      "ThreadsPerCore": 1,
      "TrainingPlanArn": "arn:aws:sagemaker:us-east-2:111122223333:training-plan/p5-plan",
      "InstanceStorageConfigs": [{"EbsVolumeConfig": {"VolumeSizeInGB": 500}}]
    },
    {
      "InstanceGroupName": "spot-dev",
      "InstanceType": "ml.g5.12xlarge",
      "InstanceCount": 2,
      "CapacityRequirements": {"Spot": {}},
      "SlurmConfig": {"NodeType": "Compute", "PartitionNames": ["dev"]}
    }
  ]
}
"""

PARAMS = """\
{
  "version": "1.0.0",
  "workload_manager": "slurm",
  "controller_group": "head",
  "login_group": "login",
  "worker_groups": [
    {
      "instance_group_name": "gpu-workers",
      "partition_name": "train"
    },
    {"instance_group_name": "spot-dev"}
  ],
  "fsx_dns_name": "fs-0123.fsx.us-east-2.amazonaws.com"
}
"""

EKS = """\
ClusterName: inference
Orchestrator:
  Eks:
    ClusterArn: arn:aws:eks:us-west-2:111122223333:cluster/hp-eks
NodeRecovery: Automatic
InstanceGroups:
  - InstanceGroupName: g6e
    InstanceType: ml.g6e.12xlarge
    InstanceCount: 3
    KubernetesConfig:
      Labels:
        team: serving
      Taints:
        - Key: nvidia.com/gpu
          Value: "present"
          Effect: NoSchedule
        - Key: odd
          Effect: Sometimes
"""


def facts_of(text: str, path: str):
    parse = parse_json if path.endswith(".json") else parse_yaml
    return read_clusters(parse(text, path))


def test_slurm_cluster_groups_run_always():
    facts = facts_of(SLURM, "cluster-config.json")
    assert sorted({f.target for f in facts}) == ["gpu-workers", "head", "spot-dev"]
    t = one(facts, "compute.target", "gpu-workers")
    assert t.value == {"source": "hyperpod", "provider": "aws", "resource": "InstanceGroup/gpu-workers",
                       "role": None, "partition": None}
    assert t.attrs == {"capacity_of": "slurm", "cluster": "pretrain", "hyperpod": True, "threads_per_core": 1}
    assert t.loc.line == line_of(SLURM, "\"gpu-workers\"") - 1  # the group's object, its opening brace
    inst = one(facts, "compute.instance_type", "gpu-workers")
    assert (inst.value, inst.loc.line) == ("ml.p5.48xlarge", line_of(SLURM, '"ml.p5.48xlarge"'))
    for kind in ("compute.node_count", "compute.min_nodes"):
        f = one(facts, kind, "gpu-workers")
        assert (f.value, f.loc.line) == (8, line_of(SLURM, '"InstanceCount": 8'))
    cap = one(facts, "compute.capacity", "gpu-workers")
    assert (cap.value, cap.loc.line) == ("reserved", line_of(SLURM, "TrainingPlanArn"))
    head = one(facts, "compute.capacity", "head")
    assert (head.value, head.attrs) == ("on-demand", {"default": True})


def test_spot_group_and_its_own_slurm_partition():
    facts = facts_of(SLURM, "cluster-config.json")
    t = one(facts, "compute.target", "spot-dev")
    assert t.value["partition"] == "dev" and t.attrs["slurm_node_type"] == "Compute"
    cap = one(facts, "compute.capacity", "spot-dev")
    assert (cap.value, cap.loc.line) == ("spot", line_of(SLURM, '"CapacityRequirements"'))


def test_provisioning_parameters_map_groups_to_partitions():
    facts = facts_of(PARAMS, "LifecycleScripts/base-config/provisioning_parameters.json")
    got = [(f.value, f.loc.line, f.target) for f in facts]
    assert got == [
        ({"group": "head", "partition": None, "node_type": "controller"}, line_of(PARAMS, "controller_group"), ""),
        ({"group": "login", "partition": None, "node_type": "login"}, line_of(PARAMS, "login_group"), ""),
        ({"group": "gpu-workers", "partition": "train", "node_type": "compute"}, line_of(PARAMS, "{", 1), ""),
        ({"group": "spot-dev", "partition": None, "node_type": "compute"}, line_of(PARAMS, "spot-dev"), ""),
    ]
    assert {f.kind for f in facts} == {"cluster.partition_map"}


def test_eks_orchestrated_groups_carry_node_labels_and_taints():
    facts = facts_of(EKS, "hyperpod-eks.yaml")
    t = one(facts, "compute.target", "g6e")
    assert t.loc.line == line_of(EKS, "- InstanceGroupName: g6e")
    assert t.attrs["capacity_of"] == "kubernetes"
    assert t.attrs["labels"] == {"team": "serving", "sagemaker.amazonaws.com/instance-group-name": "g6e",
                                 "node.kubernetes.io/instance-type": "ml.g6e.12xlarge"}
    assert t.attrs["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    assert one(facts, "compute.node_count", "g6e").loc.line == line_of(EKS, "InstanceCount: 3")


def test_bare_instance_group_list_and_autoscaling():
    bare = '[\n  {"InstanceGroupName": "c", "InstanceType": "ml.c5.xlarge", "InstanceCount": 1},\n' \
           '  {"InstanceGroupName": "w", "InstanceType": "ml.trn1.32xlarge", "InstanceCount": 4}\n]\n'
    facts = facts_of(bare, "cluster-config.json")
    assert one(facts, "compute.node_count", "w").value == 4 and one(facts, "compute.node_count", "w").loc.line == 3
    assert one(facts, "compute.target", "w").attrs["capacity_of"] == "slurm"
    scaled = EKS.replace("NodeRecovery: Automatic", "AutoScaling:\n  Mode: Enable\n  AutoScalerType: Karpenter")
    facts = facts_of(scaled, "hp.yaml")
    assert one(facts, "compute.target", "g6e").attrs["autoscaling"] is True
    assert not [f for f in facts if f.kind in ("compute.node_count", "compute.min_nodes")]


def test_not_claimed_and_odd_shapes():
    for text in ('{"InstanceGroups": [{"Name": "x"}]}', '[{"InstanceType": "ml.p5.48xlarge"}]',
                 '{"worker_groups": [], "name": "not hyperpod"}', '[]',
                 '{"Resources": {}, "InstanceGroups": [{"InstanceGroupName": "a", "InstanceType": "ml.g5.xlarge"}]}'):
        src = parse_json(text, "x.json")
        assert not any(looks_like(d, "x.json") for d in src.tree), text
    odd = ('{"ClusterName": 3, "Orchestrator": "Eks", "InstanceGroups": [7, {"InstanceGroupName": "a", '
           '"InstanceType": ["ml.p5.48xlarge"], "InstanceCount": "many", "CapacityRequirements": [], '
           '"KubernetesConfig": 1}, {"InstanceGroupName": "b", "InstanceType": "ml.g5.xlarge"}]}')
    facts = facts_of(odd, "odd.json")
    assert sorted({f.target for f in facts}) == ["a", "b"]
    assert one(facts, "compute.target", "a").attrs["capacity_of"] is None  # an Orchestrator it cannot read
    assert not [f for f in facts if f.target == "a" and f.kind != "compute.target"]
    params = '{"controller_group": 5, "worker_groups": [1, {"instance_group_name": ""}, {"instance_group_name": "w", "partition_name": 3}]}'
    assert [f.value for f in facts_of(params, "provisioning_parameters.json")] == [
        {"group": "w", "partition": None, "node_type": "compute"}]


def test_workloads_lists_instance_groups(tmp_path):
    (tmp_path / "cluster-config.json").write_text(SLURM)
    (tmp_path / "provisioning_parameters.json").write_text(PARAMS)
    proc = run_cli("workloads", "--format", "json", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    computes = {c["resource"]: c for c in json.loads(proc.stdout)["computes"]}
    assert sorted(computes) == ["InstanceGroup/gpu-workers", "InstanceGroup/head", "InstanceGroup/spot-dev"]
    p5 = computes["InstanceGroup/gpu-workers"]
    assert (p5["nodes"], p5["min_nodes"], p5["capacity"], p5["instance"]) == (8, 8, "reserved", "p5.48xlarge")


AWSCC = """\
variable "gpu_type" { default = "ml.p5.48xlarge" }

resource "awscc_sagemaker_cluster" "hp" {
  cluster_name = "train"
  instance_groups = [
    {
      instance_group_name = "controller"
      instance_type       = "ml.m5.xlarge"
      instance_count      = 1
    },
    {
      instance_group_name = "workers"
      instance_type       = var.gpu_type
      instance_count      = 16
      training_plan_arn   = "arn:aws:sagemaker:us-east-1:111122223333:training-plan/p5"
    },
    {
      instance_group_name = "spot"
      instance_type       = "ml.g5.xlarge"
      instance_count      = 2
      capacity_requirements = { spot = {} }
    },
  ]
  orchestrator = {
    eks = { cluster_arn = aws_eks_cluster.main.arn }
  }
}
"""


def test_terraform_twin_awscc_sagemaker_cluster():
    from gpulint.read.terraform.reader import read

    facts = read(AWSCC, "hyperpod.tf")
    workers = "awscc_sagemaker_cluster.hp.workers"
    t = one(facts, "compute.target", workers)
    assert t.value == {"source": "terraform", "provider": "aws", "resource": "awscc_sagemaker_cluster.hp", "role": None}
    assert t.attrs["capacity_of"] == "kubernetes" and t.attrs["cluster"] == "train" and t.attrs["hyperpod"] is True
    assert t.attrs["labels"] == {"sagemaker.amazonaws.com/instance-group-name": "workers",
                                 "node.kubernetes.io/instance-type": "ml.p5.48xlarge"}
    assert t.loc.line == line_of(AWSCC, "\"workers\"") - 1  # the group's object
    inst = one(facts, "compute.instance_type", workers)
    assert (inst.value, inst.attrs, inst.loc.line) == ("ml.p5.48xlarge", {"resolved_from": "var.gpu_type"},
                                                       line_of(AWSCC, "var.gpu_type"))
    for kind in ("compute.node_count", "compute.min_nodes"):
        assert (one(facts, kind, workers).value, one(facts, kind, workers).loc.line) == (16, line_of(AWSCC, "= 16"))
    assert one(facts, "compute.capacity", workers).value == "reserved"
    assert one(facts, "compute.capacity", "awscc_sagemaker_cluster.hp.spot").value == "spot"
    ctl = one(facts, "compute.capacity", "awscc_sagemaker_cluster.hp.controller")
    assert (ctl.value, ctl.attrs) == ("on-demand", {"default": True})
