"""CloudFormation templates: capacity resources -> targets named by logical id; Ref to a parameter's Default read
as the template's default; every other intrinsic left out. Values and lines."""
from __future__ import annotations

import json

from conftest import run_cli

from gpulint.read.clusters import read_clusters
from gpulint.read.clusters.cloudformation import looks_like
from gpulint.read.parsers import parse_json, parse_yaml
from helpers import line_of, only_fact as one

TEMPLATE = """\
AWSTemplateFormatVersion: '2010-09-09'
Description: Training capacity

Parameters:
  GpuInstanceType:
    Type: String
    Default: ml.p4d.24xlarge
  GpuCount:
    Type: Number
    Default: 4
  ClusterArn:
    Type: String
  UseSpare:
    Type: String
    Default: 'false'

Conditions:
  Spare: !Equals [!Ref UseSpare, 'true']

Resources:
  Cluster:
    Type: AWS::SageMaker::Cluster
    Properties:
      ClusterName: train-hp
      Orchestrator:
        Eks:
          ClusterArn: !Ref ClusterArn
      InstanceGroups:
        - InstanceGroupName: gpu
          InstanceType: !Ref GpuInstanceType
          InstanceCount: !Ref GpuCount
          ExecutionRole: !Sub 'arn:${AWS::Partition}:iam::${AWS::AccountId}:role/hp'
          KubernetesConfig:
            Labels:
              pool: a100
        - !If
          - Spare
          - InstanceGroupName: spare
            InstanceType: ml.p4d.24xlarge
            InstanceCount: 1
          - !Ref AWS::NoValue
        - InstanceGroupName: cpu
          InstanceType: !Sub 'ml.${Family}.xlarge'
          InstanceCount: 2

  EfaTemplate:
    Type: AWS::EC2::LaunchTemplate
    Properties:
      LaunchTemplateData:
        InstanceType: p5.48xlarge
        InstanceMarketOptions:
          MarketType: capacity-block
        NetworkInterfaces:
          - NetworkCardIndex: 0
            DeviceIndex: 0
            InterfaceType: efa
          - NetworkCardIndex: 1
            DeviceIndex: 1
            InterfaceType: efa-only

  GpuCE:
    Type: AWS::Batch::ComputeEnvironment
    Properties:
      Type: MANAGED
      ComputeResources:
        Type: EC2
        MinvCpus: 0
        MaxvCpus: 1536
        InstanceTypes:
          - p5.48xlarge
        LaunchTemplate:
          LaunchTemplateId: !Ref EfaTemplate
          Version: $Latest

  SpotCE:
    Type: AWS::Batch::ComputeEnvironment
    Properties:
      Type: MANAGED
      ComputeResources:
        Type: SPOT
        MinvCpus: 96
        MaxvCpus: 384
        InstanceTypes: [g5, g5.12xlarge]

  TrainQueue:
    Type: AWS::Batch::JobQueue
    Properties:
      JobQueueName: train
      Priority: 1
      ComputeEnvironmentOrder:
        - ComputeEnvironment: !Ref GpuCE
          Order: 1

  Trainer:
    Type: AWS::Batch::JobDefinition
    Properties:
      Type: container
      ContainerProperties:
        Image: 111122223333.dkr.ecr.us-east-1.amazonaws.com/train:latest
        Command: ["torchrun", "--nproc_per_node=8", "train.py", "--bf16"]
        ResourceRequirements:
          - Type: GPU
            Value: "8"
          - Type: VCPU
            Value: "96"

  Nodes:
    Type: AWS::EKS::Nodegroup
    Properties:
      ClusterName: prod
      NodegroupName: l4-spot
      CapacityType: SPOT
      InstanceTypes: [g6.xlarge, g6.2xlarge]
      ScalingConfig:
        MinSize: 0
        MaxSize: 12
        DesiredSize: 1
      Labels:
        accel: l4
      Taints:
        - Key: nvidia.com/gpu
          Value: "true"
          Effect: NO_SCHEDULE

  Box:
    Type: AWS::EC2::Instance
    Properties:
      InstanceType: g5.xlarge
      InstanceMarketOptions:
        MarketType: spot

  Workers:
    Type: AWS::AutoScaling::AutoScalingGroup
    Properties:
      MinSize: '1'
      MaxSize: '6'
      MixedInstancesPolicy:
        InstancesDistribution:
          OnDemandBaseCapacity: 1
          OnDemandPercentageAboveBaseCapacity: 25
        LaunchTemplate:
          LaunchTemplateSpecification:
            LaunchTemplateId: !Ref EfaTemplate
            Version: !GetAtt EfaTemplate.LatestVersionNumber
          Overrides:
            - InstanceType: g5.12xlarge
            - InstanceType: g5.24xlarge
"""


def facts_of(text: str, path: str = "stack.yaml"):
    parse = parse_json if path.endswith(".json") else parse_yaml
    return read_clusters(parse(text, path))


def test_sagemaker_cluster_groups_resolve_parameter_defaults_only():
    facts = facts_of(TEMPLATE)
    assert sorted({f.target for f in facts if f.target.startswith("Cluster.")}) == ["Cluster.cpu", "Cluster.gpu"]
    t = one(facts, "compute.target", "Cluster.gpu")
    assert t.value == {"source": "cloudformation", "provider": "aws", "resource": "InstanceGroup/gpu", "role": None,
                       "partition": None}
    assert t.loc.line == line_of(TEMPLATE, "- InstanceGroupName: gpu")
    assert t.attrs["capacity_of"] == "kubernetes" and t.attrs["cluster"] == "train-hp"
    assert t.attrs["labels"] == {"pool": "a100", "sagemaker.amazonaws.com/instance-group-name": "gpu",
                                 "node.kubernetes.io/instance-type": "ml.p4d.24xlarge"}
    inst = one(facts, "compute.instance_type", "Cluster.gpu")
    assert (inst.value, inst.attrs, inst.loc.line) == (
        "ml.p4d.24xlarge", {"parameter": "GpuInstanceType", "template_default": True},
        line_of(TEMPLATE, "InstanceType: !Ref GpuInstanceType"))
    for kind in ("compute.node_count", "compute.min_nodes"):
        f = one(facts, kind, "Cluster.gpu")
        assert (f.value, f.attrs, f.loc.line) == (4, {"parameter": "GpuCount", "template_default": True},
                                                  line_of(TEMPLATE, "InstanceCount: !Ref GpuCount"))
    # !Sub is not evaluated: the cpu group states its count but no instance type
    assert not [f for f in facts if f.target == "Cluster.cpu" and f.kind == "compute.instance_type"]
    assert one(facts, "compute.node_count", "Cluster.cpu").value == 2


def test_batch_compute_environments_vcpus_queue_and_launch_template():
    facts = facts_of(TEMPLATE)
    ce = one(facts, "compute.target", "GpuCE")
    assert ce.value["resource"] == "AWS::Batch::ComputeEnvironment/GpuCE" and ce.value["partition"] == "train"
    assert ce.attrs == {"capacity_of": "batch", "launch_template": "EfaTemplate", "min_vcpus": 0, "max_vcpus": 1536,
                        "queues": ["train"]}
    assert ce.loc.line == line_of(TEMPLATE, "  GpuCE:")
    low = one(facts, "compute.min_nodes", "GpuCE")
    assert (low.value, low.loc.line) == (0, line_of(TEMPLATE, "MinvCpus: 0"))
    assert not [f for f in facts if f.target == "GpuCE" and f.kind == "compute.node_count"]
    cap = one(facts, "compute.capacity", "GpuCE")  # the launch template's capacity block
    assert (cap.value, cap.loc.line) == ("reserved", line_of(TEMPLATE, "MarketType: capacity-block"))
    efa = one(facts, "compute.efa", "GpuCE")
    assert (efa.value, efa.loc.line) == (2, line_of(TEMPLATE, "InterfaceType: efa"))

    spot = one(facts, "compute.target", "SpotCE")
    assert spot.attrs["min_vcpus"] == 96 and spot.attrs["instance_families"] == ["g5"]
    assert spot.value["partition"] is None and "queues" not in spot.attrs
    assert not [f for f in facts if f.target == "SpotCE" and f.kind in ("compute.min_nodes", "compute.node_count")]
    assert [f.value for f in facts if f.target == "SpotCE" and f.kind == "compute.instance_type"] == ["g5.12xlarge"]
    assert one(facts, "compute.capacity", "SpotCE").loc.line == line_of(TEMPLATE, "Type: SPOT")
    assert one(facts, "compute.efa", "SpotCE").attrs == {"absent": True}


def test_job_definition_is_a_job_target_with_its_launch():
    facts = facts_of(TEMPLATE)
    t = one(facts, "compute.target", "Trainer")
    assert t.value["resource"] == "AWS::Batch::JobDefinition/Trainer" and t.attrs == {"capacity_of": None}
    gpus = one(facts, "compute.gpus_per_node", "Trainer")
    assert (gpus.value, gpus.loc.line) == (8, line_of(TEMPLATE, 'Value: "8"'))
    launch = one(facts, "launch", "Trainer")
    assert (launch.value["tool"], launch.value["script"], launch.value["nproc_per_node"]) == ("torchrun", "train.py", 8)
    assert launch.loc.line == line_of(TEMPLATE, 'Command: ["torchrun"')


def test_eks_nodegroup_instance_and_autoscaling_group():
    facts = facts_of(TEMPLATE)
    ng = one(facts, "compute.target", "Nodes")
    assert ng.attrs["labels"] == {"accel": "l4", "eks.amazonaws.com/nodegroup": "l4-spot",
                                  "eks.amazonaws.com/capacityType": "SPOT"}
    assert ng.attrs["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]
    assert ng.attrs["desired"] == 1 and ng.attrs["capacity_of"] == "kubernetes"
    assert (one(facts, "compute.node_count", "Nodes").value, one(facts, "compute.min_nodes", "Nodes").value) == (12, 0)
    assert one(facts, "compute.capacity", "Nodes").loc.line == line_of(TEMPLATE, "CapacityType: SPOT")
    assert one(facts, "compute.efa", "Nodes").attrs == {"absent": True}

    box = one(facts, "compute.capacity", "Box")
    assert (box.value, box.loc.line) == ("spot", line_of(TEMPLATE, "MarketType: spot"))
    assert one(facts, "compute.node_count", "Box").value == 1

    asg = [f for f in facts if f.target == "Workers"]
    assert [f.value for f in asg if f.kind == "compute.instance_type"] == ["g5.12xlarge", "g5.24xlarge"]
    assert (one(facts, "compute.node_count", "Workers").value, one(facts, "compute.min_nodes", "Workers").value) == (6, 1)
    cap = one(facts, "compute.capacity", "Workers")
    assert cap.value == "spot" and cap.attrs["mixed"] is True
    assert one(facts, "compute.target", "Workers").attrs["launch_template"] == "EfaTemplate"
    lt = one(facts, "compute.target", "EfaTemplate")
    assert lt.value["resource"] == "AWS::EC2::LaunchTemplate/EfaTemplate"


def test_json_template_with_ref_objects():
    text = json.dumps({
        "AWSTemplateFormatVersion": "2010-09-09",
        "Parameters": {"Size": {"Type": "String", "Default": "p4d.24xlarge"}},
        "Resources": {
            "Node": {"Type": "AWS::EC2::Instance", "Properties": {"InstanceType": {"Ref": "Size"}}},
            "Other": {"Type": "AWS::EC2::Instance", "Properties": {"InstanceType": {"Fn::FindInMap": ["M", "a", "b"]}}},
        }}, indent=2)
    facts = facts_of(text, "stack.json")
    inst = one(facts, "compute.instance_type", "Node")
    assert (inst.value, inst.attrs["parameter"]) == ("p4d.24xlarge", "Size")
    assert inst.loc.line == line_of(text, '"InstanceType": {')
    assert not [f for f in facts if f.target == "Other" and f.kind == "compute.instance_type"]


def test_not_claimed_and_odd_shapes():
    for text in ("Resources:\n  Bucket:\n    Type: AWS::S3::Bucket\n", "Resources: !Ref X\n", "Type: AWS::EC2::Instance\n"):
        assert not any(looks_like(d, "t.yaml") for d in parse_yaml(text, "t.yaml").tree), text
    odd = ("Resources:\n  A: {Type: AWS::EC2::Instance, Properties: !If [c, {}, {}]}\n"
           "  B: {Type: AWS::Batch::ComputeEnvironment, Properties: {Type: UNMANAGED}}\n"
           "  C: {Type: AWS::Batch::ComputeEnvironment, Properties: {ComputeResources: {Type: FARGATE, MaxvCpus: 4}}}\n"
           "  D: {Type: AWS::Batch::JobDefinition, Properties: {NodeProperties: {NumNodes: 2, NodeRangeProperties: 5}}}\n"
           "  E: {Type: AWS::EKS::Nodegroup, Properties: {InstanceTypes: !Ref T, Taints: [{Key: a, Effect: NO_SCHEDULE}, 3]}}\n"
           "  F: {Type: AWS::EC2::LaunchTemplate, Properties: {LaunchTemplateData: {NetworkInterfaces: [{InterfaceType: !Ref I}]}}}\n"
           "  G: {Type: !Ref Kind, Properties: {}}\n"
           "  H: {Type: AWS::EKS::Nodegroup, Properties: {Taints: [{Key: b, Effect: !Ref E}]}}\n"
           "  I: {Type: AWS::EC2::Instance, Properties: {InstanceType: g5.xlarge, InstanceMarketOptions: {MarketType: !Ref M}}}\n")
    facts = facts_of(odd)
    assert sorted({f.target for f in facts}) == ["E", "F", "H", "I"]
    assert not [f for f in facts if f.target == "I" and f.kind == "compute.capacity"]  # not the on-demand default
    assert "taints" not in one(facts, "compute.target", "H").attrs
    assert one(facts, "compute.target", "E").attrs["taints"] == [{"key": "a", "value": "", "effect": "NoSchedule"}]
    assert not [f for f in facts if f.target == "F" and f.kind == "compute.efa"]


def test_workloads_lists_template_targets(tmp_path):
    (tmp_path / "stack.yaml").write_text(TEMPLATE)
    proc = run_cli("workloads", "--format", "json", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    computes = {c["resource"]: c for c in json.loads(proc.stdout)["computes"]}
    assert {"InstanceGroup/gpu", "AWS::Batch::ComputeEnvironment/GpuCE", "AWS::EKS::Nodegroup/Nodes",
            "AWS::EC2::Instance/Box"} <= set(computes)
    gpu = computes["InstanceGroup/gpu"]
    assert (gpu["nodes"], gpu["instance"]) == (4, "p4d.24xlarge")


PCLUSTER_STACK = """\
AWSTemplateFormatVersion: '2010-09-09'
Parameters:
  Architecture:
    Type: String
    Default: GPU
    AllowedValues: [x86, GPU]
  ComputeInstanceMax:
    Type: Number
    Default: 4
  HeadSubnet:
    Type: AWS::EC2::Subnet::Id
Mappings:
  InstanceTypeForArchitecture:
    ComputeNodes:
      x86: c6i.8xlarge
      GPU: g5.12xlarge
Resources:
  PclusterClusterProvider:
    Type: AWS::CloudFormation::Stack
    Properties:
      TemplateURL: https://example.com/custom_resource/cluster.yaml
  PclusterCluster:
    Type: Custom::PclusterCluster
    Properties:
      ServiceToken: !GetAtt PclusterClusterProvider.Outputs.ServiceToken
      ClusterName: !Sub 'c-${AWS::StackName}'
      ClusterConfiguration:
        Image:
          Os: alinux2
        HeadNode:
          InstanceType: c6i.xlarge
          Networking:
            SubnetId: !Ref HeadSubnet
        Scheduling:
          Scheduler: slurm
          SlurmQueues:
            - Name: compute
              ComputeResources:
                - Name: nodes
                  InstanceType: !FindInMap [InstanceTypeForArchitecture, ComputeNodes, !Ref Architecture]
                  MinCount: 0
                  MaxCount: !Ref ComputeInstanceMax
              Networking:
                SubnetIds:
                  - !Ref HeadSubnet
"""


def test_parallelcluster_resource_reads_its_cluster_configuration_with_parameter_defaults():
    facts = read_clusters(parse_yaml(PCLUSTER_STACK, "infra/cluster.yaml"))
    lines = PCLUSTER_STACK.splitlines()
    target = {f.target for f in facts if f.kind == "compute.target"}
    assert target == {"compute/nodes"}
    t = next(f for f in facts if f.kind == "compute.target")
    assert t.value["source"] == "parallelcluster" and t.value["partition"] == "compute" and t.attrs["default"] is True
    itype = next(f for f in facts if f.kind == "compute.instance_type")
    assert itype.value == "g5.12xlarge" and "FindInMap" in lines[itype.loc.line - 1]
    nodes = next(f for f in facts if f.kind == "compute.node_count")
    assert nodes.value == 4 and "MaxCount" in lines[nodes.loc.line - 1]


def test_parallelcluster_resource_with_an_unresolvable_instance_type_states_none():
    text = PCLUSTER_STACK.replace("    Default: GPU\n", "")  # the parameter has no default: the deployment decides
    facts = read_clusters(parse_yaml(text, "infra/cluster.yaml"))
    assert [f for f in facts if f.kind == "compute.target"] and not [f for f in facts if f.kind == "compute.instance_type"]
