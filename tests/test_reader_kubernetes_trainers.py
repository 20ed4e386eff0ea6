"""Kubeflow Trainer v2 (TrainJob, ClusterTrainingRuntime/TrainingRuntime) and
SageMaker HyperPod on EKS (HyperPodPyTorchJob, ml.* instance-type selectors)."""
from __future__ import annotations

import textwrap

from gpulint.read.kubernetes import read_kubernetes
from gpulint.read.yamlnodes import load_documents


def read(text, path="job.yaml"):
    return read_kubernetes(load_documents(textwrap.dedent(text).lstrip("\n")), path)


def only(facts, kind, target=None):
    found = [f for f in facts if f.kind == kind and (target is None or f.target == target)]
    assert len(found) == 1, (kind, target, found)
    return found[0]


def line_of(text, needle):
    hits = [i for i, ln in enumerate(textwrap.dedent(text).lstrip("\n").splitlines(), 1) if needle in ln]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


TRAINJOB = """
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: TrainJob
    metadata:
      name: llama-sft
    spec:
      runtimeRef:
        name: torch-distributed
      trainer:
        image: ghcr.io/acme/trainer:1.2
        numNodes: 4
        numProcPerNode: 8
        command: [torchrun]
        args: [--nnodes=4, --nproc_per_node=8, /workspace/sft.py, --bf16]
        env:
          - name: NCCL_DEBUG
            value: INFO
        resourcesPerNode:
          limits:
            nvidia.com/gpu: 8
            vpc.amazonaws.com/efa: 4
      runtimePatches:
        - manager: platform.acme.io/gpu
          trainingRuntimeSpec:
            template:
              spec:
                replicatedJobs:
                  - name: node
                    template:
                      spec:
                        template:
                          spec:
                            nodeSelector:
                              node.kubernetes.io/instance-type: p5.48xlarge
                              karpenter.sh/capacity-type: spot
    """


def test_trainjob_compute_facts():
    facts = read(TRAINJOB)
    target = "TrainJob/llama-sft"
    t = only(facts, "compute.target", target)
    assert t.value == {"source": "kubernetes", "provider": "aws", "resource": target, "role": "training"}
    assert t.attrs["runtime_ref"] == {"kind": "ClusterTrainingRuntime", "name": "torch-distributed"}
    assert t.attrs["num_proc_per_node"] == 8
    nodes = only(facts, "compute.node_count", target)
    assert nodes.value == 4 and nodes.loc.line == line_of(TRAINJOB, "numNodes: 4")
    gpus = only(facts, "compute.gpus_per_node", target)
    assert gpus.value == 8 and gpus.key == "spec.trainer.resourcesPerNode.limits.nvidia.com/gpu"
    assert only(facts, "compute.efa", target).value == 4
    it = only(facts, "compute.instance_type", target)
    assert it.value == "p5.48xlarge" and it.loc.line == line_of(TRAINJOB, "instance-type: p5.48xlarge")
    assert only(facts, "compute.capacity", target).value == "spot"


def test_trainjob_launch_and_env():
    facts = read(TRAINJOB)
    launch = only(facts, "launch", "TrainJob/llama-sft")
    assert launch.value["tool"] == "torchrun" and launch.value["script"] == "/workspace/sft.py"
    assert launch.value["nnodes"] == 4 and launch.value["nproc_per_node"] == 8 and launch.value["args"] == ["--bf16"]
    env = only(facts, "env", "TrainJob/llama-sft")
    assert env.value == {"name": "NCCL_DEBUG", "value": "INFO"}


def test_trainjob_without_gpu_signal_is_not_compute_but_still_launches():
    text = """
        apiVersion: trainer.kubeflow.org/v1alpha1
        kind: TrainJob
        metadata:
          name: t
        spec:
          runtimeRef:
            name: torch-distributed
          trainer:
            numNodes: 2
            command: [python, train.py]
        """
    facts = read(text)
    assert not [f for f in facts if f.kind.startswith("compute.")]
    assert only(facts, "launch").value["script"] == "train.py"


def test_trainjob_older_pod_template_overrides():
    text = """
        apiVersion: trainer.kubeflow.org/v1alpha1
        kind: TrainJob
        metadata:
          name: t
        spec:
          trainer:
            resourcesPerNode:
              requests:
                nvidia.com/gpu: 1
          podTemplateOverrides:
            - targetJobs:
                - name: node
              spec:
                nodeSelector:
                  cloud.google.com/gke-accelerator: nvidia-l4
        """
    facts = read(text)
    assert only(facts, "compute.accelerator").value == {"type": "nvidia-l4", "count": None}
    assert only(facts, "compute.target").value["provider"] == "gcp"


RUNTIME = """
    apiVersion: trainer.kubeflow.org/v1alpha1
    kind: ClusterTrainingRuntime
    metadata:
      name: torch-gpu
    spec:
      mlPolicy:
        numNodes: 2
        torch:
          numProcPerNode: auto
      template:
        spec:
          replicatedJobs:
            - name: dataset-initializer
              template:
                spec:
                  template:
                    spec:
                      containers:
                        - name: dataset-initializer
                          image: ghcr.io/kubeflow/trainer/dataset-initializer
            - name: node
              template:
                spec:
                  template:
                    spec:
                      containers:
                        - name: node
                          image: pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime
                          command: [torchrun, /workspace/train.py]
                          resources:
                            limits:
                              nvidia.com/gpu: 4
    """


def test_cluster_training_runtime_trainer_job():
    facts = read(RUNTIME)
    target = "ClusterTrainingRuntime/torch-gpu/node"
    assert {f.target for f in facts if f.kind == "compute.target"} == {target}
    assert only(facts, "compute.node_count", target).value == 2
    assert only(facts, "compute.node_count", target).loc.line == line_of(RUNTIME, "numNodes: 2")
    assert only(facts, "compute.gpus_per_node", target).value == 4
    assert only(facts, "launch", target).value["script"] == "/workspace/train.py"


HYPERPOD = """
    apiVersion: sagemaker.amazonaws.com/v1
    kind: HyperPodPyTorchJob
    metadata:
      name: fsdp
    spec:
      nprocPerNode: "8"
      replicaSpecs:
        - name: pods
          replicas: 4
          template:
            spec:
              nodeSelector:
                node.kubernetes.io/instance-type: ml.p5.48xlarge
              containers:
                - name: pytorch
                  image: 123456789012.dkr.ecr.us-west-2.amazonaws.com/fsdp:latest
                  command:
                    - hyperpodrun
                    - --nnodes=4
                    - --nproc_per_node=8
                    - /fsdp/train.py
                  resources:
                    limits:
                      nvidia.com/gpu: 8
                      vpc.amazonaws.com/efa: 32
    """


def test_hyperpod_pytorch_job():
    facts = read(HYPERPOD)
    target = "HyperPodPyTorchJob/fsdp/pods"
    t = only(facts, "compute.target", target)
    assert t.value["provider"] == "aws" and t.value["role"] == "training" and t.attrs["hyperpod"] is True
    assert t.attrs["nproc_per_node"] == 8
    assert only(facts, "compute.instance_type", target).value == "ml.p5.48xlarge"
    assert only(facts, "compute.node_count", target).value == 4
    assert only(facts, "compute.efa", target).value == 32
    launch = only(facts, "launch", target)
    assert launch.value["tool"] == "torchrun" and launch.value["script"] == "/fsdp/train.py"
    assert launch.value["nnodes"] == 4 and launch.value["nproc_per_node"] == 8


def test_eks_job_on_hyperpod_nodes_by_affinity():
    text = """
        apiVersion: batch/v1
        kind: Job
        metadata:
          name: imagenet
        spec:
          template:
            spec:
              affinity:
                nodeAffinity:
                  requiredDuringSchedulingIgnoredDuringExecution:
                    nodeSelectorTerms:
                      - matchExpressions:
                          - key: sagemaker.amazonaws.com/node-health-status
                            operator: In
                            values: [Schedulable]
                          - key: node.kubernetes.io/instance-type
                            operator: In
                            values: [ml.g5.8xlarge]
              containers:
                - name: train
                  image: pytorch
                  command: [python, train.py]
        """
    facts = read(text)
    t = only(facts, "compute.target", "Job/imagenet")
    assert t.value["provider"] == "aws" and t.attrs["hyperpod"] is True
    assert only(facts, "compute.instance_type").value == "ml.g5.8xlarge"


def test_hyperpod_karpenter_node_class_is_aws():
    text = """
        apiVersion: karpenter.sh/v1
        kind: NodePool
        metadata:
          name: gpu
        spec:
          template:
            spec:
              nodeClassRef:
                group: karpenter.sagemaker.amazonaws.com
                kind: HyperpodNodeClass
                name: p5
              requirements:
                - key: node.kubernetes.io/instance-type
                  operator: In
                  values: [ml.p5.48xlarge]
        """
    facts = read(text)
    assert only(facts, "compute.target").value["provider"] == "aws"
    assert only(facts, "compute.instance_type").value == "ml.p5.48xlarge"
