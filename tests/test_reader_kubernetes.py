"""Kubernetes reader: realistic manifests in, facts at exact lines out; silent on non-GPU objects."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gpulint.read.kubernetes import launches_from_script, looks_like_kubernetes, read_kubernetes
from gpulint.read.yamlnodes import Doc, load_documents

DATA = Path(__file__).parent / "data" / "k8s"


def read(name):
    path = DATA / name
    return read_kubernetes(load_documents(path.read_text()), str(path))


def line_of(name, needle, nth=0):
    """1-based line of the nth line of the file containing `needle`."""
    hits = [i for i, line in enumerate((DATA / name).read_text().splitlines(), 1) if needle in line]
    assert len(hits) > nth, f"{needle!r} not in {name}"
    return hits[nth]


def only(facts, kind, target=None):
    found = [f for f in facts if f.kind == kind and (target is None or f.target == target)]
    assert len(found) == 1, (kind, target, found)
    return found[0]


def kinds(facts, target=None):
    return sorted({f.kind for f in facts if target is None or f.target == target})


# ---------------------------------------------------------------- PyTorchJob with EFA (awsome-distributed-training)

WORKER = "PyTorchJob/llama-ft/Worker"


def test_pytorchjob_compute_facts_point_at_their_keys():
    name = "fsdp-pytorchjob.yaml"
    facts = read(name)
    target = only(facts, "compute.target", WORKER)
    assert target.value == {"source": "kubernetes", "provider": "aws", "resource": "PyTorchJob/llama-ft",
                            "role": "training"}
    assert target.loc.line == line_of(name, "Worker:")
    assert target.attrs["elastic"] == {"minReplicas": 1, "maxReplicas": 4, "maxRestarts": 100}

    gpus = only(facts, "compute.gpus_per_node", WORKER)
    assert gpus.value == 8
    assert gpus.loc.line == line_of(name, "nvidia.com/gpu: 8", nth=1)  # the limits entry
    assert gpus.key == "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0].resources.limits.nvidia.com/gpu"
    assert gpus.loc.column == 19

    efa = only(facts, "compute.efa", WORKER)
    assert efa.value == 32 and efa.loc.line == line_of(name, "vpc.amazonaws.com/efa: 32", nth=1)

    inst = only(facts, "compute.instance_type", WORKER)
    assert inst.value == "p5.48xlarge" and inst.loc.line == line_of(name, "node.kubernetes.io/instance-type")
    assert inst.key == "spec.pytorchReplicaSpecs.Worker.template.spec.nodeSelector.node.kubernetes.io/instance-type"

    cap = only(facts, "compute.capacity", WORKER)
    assert cap.value == "spot" and cap.loc.line == line_of(name, "karpenter.sh/capacity-type: spot")

    nodes = only(facts, "compute.node_count", WORKER)
    assert nodes.value == 4 and nodes.loc.line == line_of(name, "replicas: 4")
    assert only(facts, "compute.min_nodes", WORKER).value == 1


def test_pytorchjob_env_and_launch():
    name = "fsdp-pytorchjob.yaml"
    facts = read(name)
    env = {f.value["name"]: f for f in facts if f.kind == "env"}
    assert env["FI_PROVIDER"].value["value"] == "efa"
    assert env["NCCL_SOCKET_IFNAME"].value["value"] == "^lo"
    assert env["NCCL_SOCKET_IFNAME"].loc.line == line_of(name, "name: NCCL_SOCKET_IFNAME")
    assert env["HF_TOKEN"].value == {"name": "HF_TOKEN", "value": None}  # valueFrom: unknown
    assert env["NCCL_DEBUG"].key.endswith("containers[0].env.NCCL_DEBUG")
    assert all(f.target == WORKER for f in env.values())


def test_pytorchjob_launch_from_command():
    pytest.importorskip("gpulint.read.shell.commands")
    name = "fsdp-pytorchjob.yaml"
    launch = only(read(name), "launch", WORKER)
    assert launch.value["tool"] == "torchrun"
    assert launch.value["script"] == "/fsdp/train.py"
    assert launch.value["nnodes"] == 4 and launch.value["nproc_per_node"] == 8
    assert "--resume_from_checkpoint=/checkpoints" in launch.value["args"]
    assert launch.loc.line == line_of(name, "command:")
    assert launch.attrs["container"] == "pytorch"


def test_unfilled_template_counts_are_unknown_not_guessed():
    facts = read("fsdp-template.yaml")
    target = "PyTorchJob/fsdp/Worker"
    assert only(facts, "compute.gpus_per_node", target).value is None
    assert only(facts, "compute.efa", target).value is None
    assert only(facts, "compute.node_count", target).value is None
    assert not [f for f in facts if f.kind == "compute.instance_type"]  # the selector is commented out


def test_master_and_worker_report_the_job_node_total():
    facts = read("mnist-nccl.yaml")
    for replica in ("Master", "Worker"):
        target = f"PyTorchJob/pytorch-dist-mnist-nccl/{replica}"
        assert only(facts, "compute.node_count", target).value == 2
        assert only(facts, "compute.gpus_per_node", target).value == 1
        efa = only(facts, "compute.efa", target)
        assert efa.value == 0 and efa.attrs == {"absent": True}
        assert only(facts, "compute.target", target).value["provider"] is None
    # args alone go to the image's ENTRYPOINT, which the manifest does not show
    assert not [f for f in facts if f.kind == "launch"]


def test_mpijob_launcher_launch_runs_on_workers():
    pytest.importorskip("gpulint.read.shell.commands")
    name = "mpijob.yaml"
    facts = read(name)
    worker = "MPIJob/tensorflow-benchmarks/Worker"
    assert [f.target for f in facts if f.kind == "compute.target"] == [worker]
    launch = only(facts, "launch")
    assert launch.target == worker
    assert launch.value["script"] == "scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py"
    assert launch.loc.line == line_of(name, "command:")
    p2p = only(facts, "env")
    assert p2p.value == {"name": "NCCL_P2P_DISABLE", "value": "1"} and p2p.target == worker
    assert only(facts, "compute.node_count", worker).value == 2


# ---------------------------------------------------------------- GKE A3 + TCPX Job next to a Service


def test_gke_job_spot_accelerator_and_script_lines():
    pytest.importorskip("gpulint.read.shell.commands")
    name = "gke-a3-tcpx.yaml"
    facts = read(name)
    target = "Job/a3-train"
    assert {f.target for f in facts} == {target}  # the Service says nothing
    t = only(facts, "compute.target", target)
    assert t.value["provider"] == "gcp" and t.value["role"] == "training"
    acc = only(facts, "compute.accelerator", target)
    assert acc.value == {"type": "nvidia-h100-80gb", "count": None}
    assert acc.loc.line == line_of(name, "gke-accelerator: nvidia-h100-80gb")
    cap = only(facts, "compute.capacity", target)
    assert cap.value == "spot" and cap.loc.line == line_of(name, 'cloud.google.com/gke-spot: "true"')
    assert only(facts, "compute.node_count", target).value == 2
    gpus = only(facts, "compute.gpus_per_node", target)
    assert gpus.value == 8 and gpus.key == "spec.template.spec.containers[1].resources.limits.nvidia.com/gpu"
    assert only(facts, "compute.efa", target).value == 0  # GPUs requested, no EFA resource

    # the trainer's `bash -c` script: one launch, on the torchrun line; the daemon's script launches nothing
    launch = only(facts, "launch", target)
    assert launch.value["tool"] == "torchrun"
    assert launch.value["nnodes"] == 2 and launch.value["nproc_per_node"] == 8
    assert launch.value["script"] == "train.py"
    assert launch.loc.line == line_of(name, "torchrun --nnodes=2")
    env = {f.value["name"]: f for f in facts if f.kind == "env"}
    assert env["NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX"].value["value"] == "/run/tcpx"
    assert env["NCCL_GPUDIRECTTCPX_UNIX_CLIENT_PREFIX"].loc.line == line_of(name, "export NCCL_GPUDIRECTTCPX")
    assert env["NCCL_GPUDIRECTTCPX_SOCKET_IFNAME"].value["value"] == "eth1,eth2,eth3,eth4"


# ---------------------------------------------------------------- JobSet, serving Deployment, List


def test_jobset_affinity_alternatives_and_node_count():
    pytest.importorskip("gpulint.read.shell.commands")
    name = "jobset-vllm.yaml"
    facts = read(name)
    target = "JobSet/pretrain/workers"
    accs = [f for f in facts if f.kind == "compute.accelerator" and f.target == target]
    assert [a.value["type"] for a in accs] == ["nvidia-tesla-a100", "nvidia-a100-80gb"]
    assert all(a.attrs == {"alternatives": True} for a in accs)
    assert accs[1].loc.line == line_of(name, "- nvidia-a100-80gb")
    cap = only(facts, "compute.capacity", target)
    assert cap.value == "spot" and cap.loc.line == line_of(name, 'values: ["true"]')
    assert only(facts, "compute.node_count", target).value == 4  # 2 replicas x parallelism 2
    launch = only(facts, "launch", target)
    assert launch.value["tool"] == "torchrun" and launch.value["nproc_per_node"] == 4


def test_vllm_deployment_is_serving_on_aks_spot_by_toleration():
    name = "jobset-vllm.yaml"
    facts = read(name)
    target = "Deployment/llama-serve"
    t = only(facts, "compute.target", target)
    assert t.value["role"] == "serving" and t.value["provider"] == "azure"
    cap = only(facts, "compute.capacity", target)
    assert cap.value == "spot" and cap.attrs == {"via": "toleration"}
    assert cap.loc.line == line_of(name, "key: kubernetes.azure.com/scalesetpriority")
    assert only(facts, "compute.gpus_per_node", target).value == 2
    assert only(facts, "compute.node_count", target).value == 2
    assert not [f for f in facts if f.kind == "launch" and f.target == target]  # vLLM entrypoint + args


def test_list_items_are_read():
    name = "jobset-vllm.yaml"
    facts = read(name)
    target = "Pod/debug"
    assert only(facts, "compute.target", target).value["provider"] == "aws"
    assert only(facts, "compute.capacity", target).value == "on-demand"
    inst = only(facts, "compute.instance_type", target)
    assert inst.value == "g5.2xlarge" and inst.key == "items[0].spec.nodeSelector.node.kubernetes.io/instance-type"
    assert inst.loc.line == line_of(name, "instance-type: g5.2xlarge")


# ---------------------------------------------------------------- Karpenter


def test_karpenter_nodepool_and_provisioner():
    name = "karpenter.yaml"
    facts = read(name)
    assert {f.target for f in facts} == {"NodePool/gpu", "Provisioner/g5"}  # EC2NodeClass is silent
    pool = only(facts, "compute.target", "NodePool/gpu")
    assert pool.value["provider"] == "aws"
    assert pool.attrs["limits"]["nvidia.com/gpu"] == 64
    types = [f for f in facts if f.kind == "compute.instance_type" and f.target == "NodePool/gpu"]
    assert [f.value for f in types] == ["p4d.24xlarge", "p5.48xlarge"]
    assert all(f.attrs == {"alternatives": True} for f in types)
    assert types[0].loc.line == line_of(name, '"p4d.24xlarge", "p5.48xlarge"')
    cap = only(facts, "compute.capacity", "NodePool/gpu")
    assert cap.value == "spot" and cap.attrs == {"on_demand_fallback": True}
    assert cap.loc.line == line_of(name, '["spot", "on-demand"]')

    assert only(facts, "compute.instance_type", "Provisioner/g5").value == "g5.12xlarge"
    assert only(facts, "compute.capacity", "Provisioner/g5").value == "on-demand"
    assert only(facts, "compute.target", "Provisioner/g5").attrs["limits"] == {"nvidia.com/gpu": 16}


def test_karpenter_capacity_operators():
    def cap(req):
        doc = load_documents(
            "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: p}\n"
            f"spec:\n  template:\n    spec:\n      requirements:\n        - {req}\n")
        return [f.value for f in read_kubernetes(doc, "np.yaml") if f.kind == "compute.capacity"]

    assert cap('{key: karpenter.sh/capacity-type, operator: NotIn, values: ["spot"]}') == ["on-demand"]
    assert cap('{key: karpenter.sh/capacity-type, operator: NotIn, values: ["on-demand"]}') == ["spot"]
    assert cap("{key: karpenter.sh/capacity-type, operator: Exists}") == ["spot"]
    assert cap('{key: kubernetes.io/arch, operator: In, values: ["amd64"]}') == []


# ---------------------------------------------------------------- silence


def test_configmap_service_cpu_deployment_daemonset_emit_no_compute():
    facts = read("silent.yaml")
    assert not [f for f in facts if f.kind.startswith("compute.")]
    assert not [f for f in facts if f.kind == "env"]  # ConfigMap data is not a container's environment


def test_helm_values_are_not_kubernetes():
    docs = load_documents((DATA / "values.yaml").read_text())
    assert not looks_like_kubernetes(docs[0])
    assert read_kubernetes(docs, "values.yaml") == []


def test_gke_spot_false_and_preferred_affinity_say_nothing():
    text = """\
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  nodeSelector:
    cloud.google.com/gke-spot: "false"
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1
          preference:
            matchExpressions:
              - {key: node.kubernetes.io/instance-type, operator: In, values: [p4d.24xlarge]}
  containers:
    - name: c
      image: x
      resources: {limits: {nvidia.com/gpu: "1"}}
"""
    facts = read_kubernetes(load_documents(text), "p.yaml")
    assert kinds(facts) == ["compute.efa", "compute.gpus_per_node", "compute.node_count", "compute.target"]
    assert only(facts, "compute.gpus_per_node").value == 1  # quoted count is still a literal


def test_cronjob_and_statefulset_templates():
    text = """\
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly}
spec:
  schedule: "0 2 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          containers:
            - name: t
              image: x
              command: [python3, finetune.py]
              resources: {limits: {nvidia.com/gpu: 4}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: lab}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: nb
          image: quay.io/jupyter/pytorch-notebook:cuda12-latest
          resources: {limits: {nvidia.com/gpu: 1}}
"""
    facts = read_kubernetes(load_documents(text), "c.yaml")
    assert only(facts, "compute.target", "CronJob/nightly").value["role"] == "training"
    assert only(facts, "compute.gpus_per_node", "CronJob/nightly").value == 4
    assert only(facts, "compute.target", "StatefulSet/lab").value["role"] == "notebook"


def test_rayjob_entrypoint_and_worker_groups():
    pytest.importorskip("gpulint.read.shell.commands")
    text = """\
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: ray-ft}
spec:
  entrypoint: python /home/ray/ft.py --num-workers 4
  rayClusterSpec:
    headGroupSpec:
      template:
        spec:
          containers: [{name: head, image: rayproject/ray:2.9.0}]
    workerGroupSpecs:
      - groupName: gpu
        replicas: 4
        minReplicas: 1
        template:
          spec:
            containers:
              - name: w
                image: rayproject/ray:2.9.0-gpu
                resources: {limits: {nvidia.com/gpu: 1}}
"""
    facts = read_kubernetes(load_documents(text), "r.yaml")
    assert only(facts, "compute.node_count", "RayJob/ray-ft/gpu").value == 4
    # without the autoscaler KubeRay keeps `replicas` pods: minReplicas is no floor
    assert not [f for f in facts if f.kind == "compute.min_nodes"]
    scaled = read_kubernetes(load_documents(text.replace("  rayClusterSpec:\n", "  rayClusterSpec:\n    enableInTreeAutoscaling: true\n")), "r.yaml")
    assert only(scaled, "compute.min_nodes", "RayJob/ray-ft/gpu").value == 1
    launch = only(facts, "launch")
    # the driver starts beside the head; the training it submits runs on the one GPU worker group
    assert launch.target == "RayJob/ray-ft/gpu" and launch.value["script"] == "/home/ray/ft.py"
    assert launch.loc.line == 5
    assert not [f for f in facts if f.kind == "compute.target" and f.target == "RayJob/ray-ft/head"]


def test_duplicate_names_get_distinct_targets():
    pod = ("apiVersion: v1\nkind: Pod\nmetadata: {name: same}\nspec:\n  containers:\n"
           "    - {name: c, image: x, resources: {limits: {nvidia.com/gpu: 1}}}\n")
    facts = read_kubernetes(load_documents(pod + "---\n" + pod), "d.yaml")
    assert [f.target for f in facts if f.kind == "compute.target"] == ["Pod/same", "Pod/same#2"]


# ---------------------------------------------------------------- robustness


def _mutations(data):
    """Every way of replacing one node of `data` by a value of another type."""
    def paths(node, path=()):
        yield path
        if isinstance(node, dict):
            for k, v in node.items():
                yield from paths(v, path + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield from paths(v, path + (i,))

    for path in list(paths(data))[1:]:
        for bad in (None, 7, "x", [], {}, [None], {"a": None}, True):
            out = copy.deepcopy(data)
            node = out
            for part in path[:-1]:
                node = node[part]
            node[path[-1]] = bad
            yield out


@pytest.mark.parametrize("name", ["fsdp-pytorchjob.yaml", "gke-a3-tcpx.yaml", "karpenter.yaml", "jobset-vllm.yaml",
                                  "mpijob.yaml"])
def test_wrong_types_anywhere_never_raise(name):
    pytest.importorskip("gpulint.read.shell.commands")
    for doc in load_documents((DATA / name).read_text()):
        for data in _mutations(doc.data):
            read_kubernetes([Doc(data, doc.marks, doc.start_line)], name)


def test_non_mapping_documents_are_ignored():
    docs = [Doc(None), Doc([1, 2]), Doc("text"), Doc({"apiVersion": 1, "kind": "Pod"}), Doc({"kind": "Pod"})]
    assert read_kubernetes(docs, "x.yaml") == []


def test_script_steps_join_continuations_and_skip_comments():
    script = "# c\n\nexport A=1\ntorchrun \\\n  --nnodes=2 \\\n  t.py\n"
    steps = launches_from_script(script)
    assert [(s.offset, s.env, s.launch and s.launch["script"]) for s in steps] == [(2, {"A": "1"}, None), (3, {}, "t.py")]
    assert steps[1].launch["nnodes"] == 2
