"""SkyPilot reader: task YAML in, compute/env/launch/storage facts at exact lines out."""
from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gpulint.read.skypilot import looks_like_skypilot, read_skypilot
from gpulint.read.yamlnodes import Doc, load_documents

DATA = Path(__file__).parent / "data" / "skypilot"


def read(name):
    path = DATA / name
    return read_skypilot(load_documents(path.read_text()), str(path))


def line_of(name, needle):
    hits = [i for i, line in enumerate((DATA / name).read_text().splitlines(), 1) if needle in line]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def only(facts, kind, target=None):
    found = [f for f in facts if f.kind == kind and (target is None or f.target == target)]
    assert len(found) == 1, (kind, target, found)
    return found[0]


def test_spot_training_task_compute_facts():
    name = "train.yaml"
    facts = read(name)
    target = "vicuna-train"
    t = only(facts, "compute.target", target)
    assert t.value == {"source": "skypilot", "provider": None, "resource": "vicuna-train", "role": None}
    acc = only(facts, "compute.accelerator", target)
    assert acc.value == {"type": "A100-80GB", "count": 8} and acc.attrs == {}
    assert acc.loc.line == line_of(name, "accelerators:") and acc.key == "resources.accelerators"
    assert only(facts, "compute.gpus_per_node", target).value == 8
    cap = only(facts, "compute.capacity", target)
    assert cap.value == "spot" and cap.loc.line == line_of(name, "use_spot: true")
    nodes = only(facts, "compute.node_count", target)
    assert nodes.value == 2 and nodes.loc.line == line_of(name, "num_nodes: 2")


def test_envs_and_required_env_without_value():
    name = "train.yaml"
    env = {f.value["name"]: f for f in read(name) if f.kind == "env"}
    assert env["MODEL_SIZE"].value["value"] == "7"
    assert env["HF_TOKEN"].value["value"] is None  # to be passed with --env
    assert env["WANDB_MODE"].loc.line == line_of(name, "WANDB_MODE: offline")


def test_run_script_launch_resolves_skypilot_variables():
    pytest.importorskip("gpulint.read.shell.commands")
    name = "train.yaml"
    facts = read(name)
    launch = only(facts, "launch")
    assert launch.value["tool"] == "torchrun"
    assert launch.value["script"] == "fastchat/train/train_mem.py"
    # $SKYPILOT_NUM_GPUS_PER_NODE and $SKYPILOT_NUM_NODES are decided by the YAML itself
    assert launch.value["nproc_per_node"] == 8 and launch.value["nnodes"] == 2
    assert launch.loc.line == line_of(name, "  torchrun \\")
    assert launch.attrs == {"phase": "run", "cwd": {"path": "FastChat"}}  # the run script cd's into the clone
    env = {f.value["name"]: f for f in facts if f.kind == "env"}
    assert env["NCCL_DEBUG"].value["value"] == "INFO"
    assert env["NCCL_DEBUG"].loc.line == line_of(name, "export NCCL_DEBUG=INFO")
    assert env["NUM_NODES"].value["value"] is None  # command substitution: unknown
    assert not [f for f in facts if f.kind == "launch" and f.attrs.get("phase") == "setup"]  # pip installs


def test_file_mounts_buckets_not_local_files():
    name = "train.yaml"
    mounts = [f for f in read(name) if f.kind == "storage.mount"]
    assert [m.value for m in mounts] == [
        {"path": "/artifacts", "bucket": "my-vicuna-checkpoints", "mode": "MOUNT"},
        {"path": "/datasets", "bucket": "s3://my-datasets", "mode": "COPY"},
    ]
    assert mounts[0].loc.line == line_of(name, "/artifacts:")


def test_accelerator_set_list_and_mapping():
    pytest.importorskip("gpulint.read.shell.commands")
    name = "alternatives.yaml"
    facts = read(name)
    sft = [f for f in facts if f.kind == "compute.accelerator" and f.target == "sft"]
    assert [a.value for a in sft] == [{"type": "A100", "count": 8}, {"type": "H100", "count": 8}]
    assert all(a.attrs == {"alternatives": True, "ordered": False} for a in sft)
    assert only(facts, "compute.gpus_per_node", "sft").value == 8
    cap = only(facts, "compute.capacity", "sft")
    assert cap.value == "spot" and cap.attrs == {"alternatives": True}
    assert only(facts, "compute.target", "sft").value["provider"] is None  # aws or gcp

    ordered = [f for f in facts if f.kind == "compute.accelerator" and f.target == "sft-ordered"]
    assert [a.value["type"] for a in ordered] == ["H100", "A100-80GB", "A100"]
    assert all(a.attrs["ordered"] for a in ordered)

    single = only(facts, "compute.accelerator", "single")
    assert single.value == {"type": "L4", "count": 1} and single.attrs == {}
    assert only(facts, "compute.capacity", "single").value == "on-demand"
    assert only(facts, "compute.target", "single").value["provider"] == "gcp"
    launch = only(facts, "launch", "single")
    assert launch.value["script"] == "infer.py" and launch.loc.line == 22
    assert only(facts, "launch", "sft").value["tool"] == "accelerate"


def test_instance_type_task_without_spot_key():
    name = "tcpx.yaml"
    facts = read(name)
    target = "nccl-gpu-direct-tcpx"
    inst = only(facts, "compute.instance_type", target)
    assert inst.value == "a3-highgpu-8g" and inst.loc.line == line_of(name, "instance_type:")
    assert only(facts, "compute.target", target).value["provider"] == "gcp"
    assert not [f for f in facts if f.kind == "compute.capacity"]  # use_spot unset: say nothing
    assert not [f for f in facts if f.kind == "compute.gpus_per_node"]  # only the catalogue knows


def test_cpu_task_has_launch_but_no_compute_target():
    pytest.importorskip("gpulint.read.shell.commands")
    facts = read("cpu-task.yaml")
    assert not [f for f in facts if f.kind.startswith("compute.")]
    launch = only(facts, "launch", "preprocess")
    assert launch.value["script"] == "preprocess.py" and launch.loc.line == 5


@pytest.mark.parametrize("text", [
    (Path(__file__).parent / "data" / "k8s" / "values.yaml").read_text(),          # Helm values
    "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec: {}\n",                  # Kubernetes
    "$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\ncommand: python t.py\n",
    "type: task\ncommands: [python train.py]\nresources: {gpu: 24GB}\n",             # dstack
    "on: push\njobs:\n  t:\n    steps:\n      - run: pytest\n",                       # GitHub Actions
    "resources:\n  limits: {nvidia.com/gpu: 1}\n",                                  # k8s resources block
    "name: only-a-name\n",
])
def test_other_yaml_is_not_skypilot(text):
    docs = load_documents(text)
    assert not any(looks_like_skypilot(d) for d in docs)
    assert read_skypilot(docs, "other.yaml") == []


def _mutations(data):
    """Every way of replacing one node of `data` by a value of another type."""
    def paths(node, path=()):
        yield path
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for k, v in items:
            yield from paths(v, path + (k,))

    for path in list(paths(data))[1:]:
        for bad in (None, 7, "x", [], {}, [None], {"a": None}, True):
            out = copy.deepcopy(data)
            node = out
            for part in path[:-1]:
                node = node[part]
            node[path[-1]] = bad
            yield out


def test_wrong_types_anywhere_never_raise():
    pytest.importorskip("gpulint.read.shell.commands")
    for name in ("train.yaml", "alternatives.yaml"):
        for doc in load_documents((DATA / name).read_text()):
            for data in _mutations(doc.data):
                read_skypilot([Doc(data, doc.marks, doc.start_line)], name)
