"""KubeRay (RayJob, RayCluster, RayService): head and worker groups are targets of their own, and a RayJob's
entrypoint runs on its accelerated worker group, never on the head."""
from __future__ import annotations

import pytest

from gpulint.read.kubernetes import read_kubernetes
from gpulint.read.yamlnodes import load_documents
from helpers import facts_of_kind as of, line_of as line, only_fact as one

pytest.importorskip("gpulint.read.shell.commands")

RAYJOB = """\
apiVersion: ray.io/v1
kind: RayJob
metadata:
  name: sft
spec:
  entrypoint: |
    export NCCL_DEBUG=INFO
    python /app/train_sft.py --num-workers 8
  rayClusterSpec:
    enableInTreeAutoscaling: true
    headGroupSpec:
      rayStartParams: {}
      template:
        spec:
          containers:
            - name: ray-head
              image: rayproject/ray:2.40.0
              resources:
                limits: {cpu: "4", memory: 16Gi}
    workerGroupSpecs:
      - groupName: cpu-pool
        replicas: 2
        minReplicas: 0
        maxReplicas: 4
        template:
          spec:
            containers:
              - name: ray-worker
                image: rayproject/ray:2.40.0
                resources: {limits: {cpu: "8"}}
      - groupName: h100
        replicas: 2
        minReplicas: 1
        maxReplicas: 8
        template:
          spec:
            nodeSelector:
              node.kubernetes.io/instance-type: p5.48xlarge
            containers:
              - name: ray-worker
                image: rayproject/ray:2.40.0-gpu
                resources:
                  limits:
                    nvidia.com/gpu: 8
                    vpc.amazonaws.com/efa: 32
"""


def test_rayjob_groups_are_targets_and_the_entrypoint_runs_on_the_gpu_group():
    facts = read_kubernetes(load_documents(RAYJOB), "k8s/rayjob.yaml")
    gpu = "RayJob/sft/h100"
    # only the accelerated group is compute; the head and the CPU group are not GPU capacity
    assert [f.target for f in of(facts, "compute.target")] == [gpu]
    t = one(facts, "compute.target", gpu)
    assert t.loc.line == line(RAYJOB, "groupName: h100")
    assert t.attrs["min_replicas"] == 1 and t.attrs["max_replicas"] == 8 and t.attrs["autoscaling"] is True
    assert (one(facts, "compute.node_count", gpu).value, one(facts, "compute.node_count", gpu).loc.line) == \
        (2, line(RAYJOB, "replicas: 2", 1))
    assert (one(facts, "compute.min_nodes", gpu).value, one(facts, "compute.min_nodes", gpu).loc.line) == \
        (1, line(RAYJOB, "minReplicas: 1"))
    assert one(facts, "compute.gpus_per_node", gpu).value == 8
    assert one(facts, "compute.instance_type", gpu).value == "p5.48xlarge"
    launch = one(facts, "launch")
    assert launch.target == gpu and "runs_on_any_of" not in launch.attrs
    assert launch.value["script"] == "/app/train_sft.py"
    assert launch.loc.line == line(RAYJOB, "python /app/train_sft.py")
    env = one(facts, "env")
    assert env.target == gpu and env.value == {"name": "NCCL_DEBUG", "value": "INFO"}
    assert env.loc.line == line(RAYJOB, "export NCCL_DEBUG")


def test_several_gpu_groups_leave_the_launch_on_the_job_with_its_choices():
    text = RAYJOB.replace("resources: {limits: {cpu: \"8\"}}", "resources: {limits: {nvidia.com/gpu: 1}}")
    facts = read_kubernetes(load_documents(text), "k8s/rayjob.yaml")
    assert sorted(f.target for f in of(facts, "compute.target")) == ["RayJob/sft/cpu-pool", "RayJob/sft/h100"]
    launch = one(facts, "launch")
    assert launch.target == "RayJob/sft"
    assert launch.attrs["runs_on_any_of"] == ["RayJob/sft/cpu-pool", "RayJob/sft/h100"]
    assert not of(facts, "compute.target", "RayJob/sft")  # the job itself is no capacity


def test_a_gpu_head_does_not_take_the_launch_from_the_gpu_workers():
    text = RAYJOB.replace('limits: {cpu: "4", memory: 16Gi}', "limits: {nvidia.com/gpu: 1}")
    facts = read_kubernetes(load_documents(text), "k8s/rayjob.yaml")
    assert sorted(f.target for f in of(facts, "compute.target")) == ["RayJob/sft/h100", "RayJob/sft/head"]
    assert one(facts, "launch").target == "RayJob/sft/h100"


def test_cpu_only_rayjob_keeps_the_launch_on_the_head():
    text = RAYJOB.split("      - groupName: h100")[0]
    facts = read_kubernetes(load_documents(text), "k8s/rayjob.yaml")
    assert not of(facts, "compute.target")
    assert one(facts, "launch").target == "RayJob/sft/head"


RAYSERVICE = """\
apiVersion: ray.io/v1
kind: RayService
metadata: {name: llm}
spec:
  serveConfigV2: |
    applications:
      - name: llm
        import_path: serve_app:deployment
  rayClusterConfig:
    headGroupSpec:
      template:
        spec:
          containers: [{name: ray-head, image: rayproject/ray-ml:2.40.0}]
    workerGroupSpecs:
      - groupName: l4
        replicas: 3
        minReplicas: 1
        maxReplicas: 5
        template:
          spec:
            nodeSelector: {cloud.google.com/gke-accelerator: nvidia-l4}
            containers:
              - name: w
                image: rayproject/ray-ml:2.40.0-gpu
                resources: {limits: {nvidia.com/gpu: 1}}
"""


def test_rayservice_worker_groups_are_read_from_ray_cluster_config():
    facts = read_kubernetes(load_documents(RAYSERVICE), "k8s/svc.yaml")
    t = "RayService/llm/l4"
    assert one(facts, "compute.target", t).value["provider"] == "gcp"
    assert one(facts, "compute.accelerator", t).value == {"type": "nvidia-l4", "count": None}
    # no autoscaler: KubeRay keeps `replicas` pods standing
    floor = one(facts, "compute.min_nodes", t)
    assert (floor.value, floor.loc.line) == (3, line(RAYSERVICE, "replicas: 3"))
    assert not of(facts, "launch")


def test_raycluster_floor_follows_the_autoscaler():
    text = RAYSERVICE.replace("kind: RayService", "kind: RayCluster").replace("  rayClusterConfig:\n", "") \
        .replace("\n    ", "\n  ").replace("spec:\n  serveConfigV2: |\n  applications:\n    - name: llm\n"
                                            "      import_path: serve_app:deployment\n", "spec:\n")
    text = text.replace("spec:\n", "spec:\n  enableInTreeAutoscaling: true\n", 1)
    facts = read_kubernetes(load_documents(text), "k8s/rc.yaml")
    floor = one(facts, "compute.min_nodes", "RayCluster/llm/l4")
    assert (floor.value, floor.loc.line) == (1, line(text, "minReplicas: 1"))


def test_not_kuberay_without_the_ray_api_group():
    text = RAYJOB.replace("apiVersion: ray.io/v1", "apiVersion: example.com/v1")
    assert read_kubernetes(load_documents(text), "x.yaml") == []
