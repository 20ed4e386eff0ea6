"""Launchers that name the trainer by a cluster or container path, or hold it in variables and arrays
(fixtures/wl-cluster-paths, issue 46): each joins the repository's file, the join says when it rests on an
assumption, and a path that could mean several files, or none, joins nothing."""
from __future__ import annotations

import json
import textwrap

import pytest

from conftest import FIXTURES, run_cli
from gpulint.link.byname import by_path_tail
from gpulint.read.shell.scanner import read_shell
from gpulint.testing import scan_tree, write_tree

ENTRY = "training/fsdp/src/train.py"


@pytest.fixture(scope="module")
def wl_doc():
    proc = run_cli("workloads", FIXTURES / "wl-cluster-paths", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _launchers_of(doc: dict, entry: str) -> dict[str, str]:
    """launcher file -> the `linked: launcher` reason, over every workload of `entry`."""
    out = {}
    for w in doc["workloads"]:
        if w["entrypoint"] != entry:
            continue
        for l in w["launchers"]:
            why = next((r for r in w["links"] if r.startswith(f"launcher: {l['path']}:")), "")
            out[l["path"]] = why
    return out


def test_every_launcher_of_the_trainer_is_joined(wl_doc):
    joined = _launchers_of(wl_doc, ENTRY)
    assert set(joined) == {"training/fsdp/slurm/llama.sbatch", "training/fsdp/kubernetes/fsdp-job.yaml",
                           "clusters/slinky/p5-llama.sbatch"}


def test_assumed_joins_say_so_and_stated_ones_do_not(wl_doc):
    joined = _launchers_of(wl_doc, ENTRY)
    assert "assumed: joined by path tail, /fsx/my-platform/training/fsdp/src/train.py -> " + ENTRY \
        in joined["clusters/slinky/p5-llama.sbatch"]
    assert "assumed: the image built from training/fsdp/Dockerfile copies src/ to /fsdp/" \
        in joined["training/fsdp/kubernetes/fsdp-job.yaml"]
    assert "assumed" not in joined["training/fsdp/slurm/llama.sbatch"]
    assert "the only one that is a file of the repository" in joined["training/fsdp/slurm/llama.sbatch"]


def test_paths_of_the_image_or_of_several_files_join_nothing(wl_doc):
    launchers = {l["path"] for w in wl_doc["workloads"] for l in w["launchers"]}
    for not_joined in ("clusters/slinky/foundry.sbatch", "clusters/slinky/other-src.sbatch", "serving/k8s/job.yaml"):
        assert not_joined not in launchers
    serving = next(w for w in wl_doc["workloads"] if w["entrypoint"] == "serving/src/train.py")
    assert serving["launchers"] == []


def test_the_sbatch_allocation_reaches_the_trainer(wl_doc):
    w = next(w for w in wl_doc["workloads"] if w["entrypoint"] == ENTRY
             and any(l["path"] == "training/fsdp/slurm/llama.sbatch" for l in w["launchers"]))
    launch = w["launchers"][0]["value"]
    assert (launch["nnodes"], launch["nproc_per_node"]) == (4, 8)


def test_fp32_on_the_h100s_of_the_joined_job_is_a_warning():
    proc = run_cli("scan", FIXTURES / "wl-cluster-paths", "--format", "json", "--no-cache")
    findings = json.loads(proc.stdout)["findings"]
    amp = [f for f in findings if f["code"] == "AMP001"]
    assert [(f["path"], f["severity"]) for f in amp] == [(ENTRY, "warning")]


# ---------------------------------------------------------------- the reader: variables and arrays

def _launch(text: str):
    out = [f for f in read_shell(textwrap.dedent(text), "slurm/run.sbatch") if f.kind == "launch"]
    assert len(out) == 1, out
    return out[0]


def test_script_set_in_an_if_then_defaulted_lists_both_values():
    launch = _launch("""\
        if [ -n "$IMAGE" ]; then
            export TRAIN_SCRIPT=./train.py
        fi
        export TRAIN_SCRIPT=${TRAIN_SCRIPT:=../src/train.py}
        torchrun --nproc_per_node=8 $TRAIN_SCRIPT
        """)
    assert launch.value["script"] is None
    assert [(c["script"], c["line"]) for c in launch.attrs["script_candidates"]] == \
        [("./train.py", 2), ("../src/train.py", 4)]


def test_a_flag_variable_set_in_an_if_does_not_hide_the_script_candidates():
    launch = _launch("""\
        if [ -n "$IMAGE" ]; then TRAIN_SCRIPT=./train.py; fi
        : "${TRAIN_SCRIPT:=../src/train.py}"
        RESUME=""
        if [ -d /opt/sagemaker_cluster ]; then RESUME="--auto-resume=1"; fi
        export TORCHRUN=torchrun
        srun ${RESUME} -l ${TORCHRUN} --nproc_per_node=8 $TRAIN_SCRIPT
        """)
    assert launch.value["tool"] == "torchrun"
    assert [c["script"] for c in launch.attrs["script_candidates"]] == ["./train.py", "../src/train.py"]


def test_two_script_variables_each_with_values_decide_nothing():
    launch = _launch("""\
        if [ -n "$A" ]; then S=a.py; T=b.py; else S=c.py; T=d.py; fi
        python $S $T
        """)
    assert launch.attrs.get("script_candidates") is None or \
        {c["var"] for c in launch.attrs["script_candidates"]} == {"S"}


# ---------------------------------------------------------------- path tails

@pytest.mark.parametrize("script, paths, expected", [
    ("/fsx/clone/a/b/train.py", ["a/b/train.py", "c/b/train.py"], "a/b/train.py"),   # the whole repository path
    ("/fsx/u/x/pytorch/fsdp/src/train.py", ["3.cases/pytorch/fsdp/src/train.py"], "3.cases/pytorch/fsdp/src/train.py"),
    ("/fsx/somewhere/src/train.py", ["a/src/train.py", "b/src/train.py"], None),      # two files end so
    ("/fsx/somewhere/src/train.py", ["a/src/train.py"], None),                         # a tail of two is too common
    ("/llm-foundry/scripts/train/train.py", ["train.py"], None),                       # a bare name is no tail
    ("train/train.py", ["train/train.py"], None),                                      # relative: the linker's own rules
    ("/fsx/$USER/a/b/train.py", ["a/b/train.py"], None),                               # unresolved
])
def test_by_path_tail(script, paths, expected):
    got = by_path_tail(script, paths)
    assert (got[0] if got else None) == expected


def test_a_bare_name_in_a_container_job_joins_the_only_one_in_its_project(tmp_path):
    job = textwrap.dedent("""\
        apiVersion: batch/v1
        kind: Job
        metadata: {name: finetune}
        spec:
          template:
            spec:
              containers:
                - name: train
                  image: example/finetune:1
                  command: ["torchrun", "--nproc_per_node=1", "train.py"]
                  resources: {limits: {nvidia.com/gpu: 1}}
        """)
    loop = "import torch\nm = torch.nn.Linear(8, 8).cuda()\nfor _ in range(3):\n    m(torch.ones(8).cuda()).sum().backward()\n"
    write_tree(tmp_path, {"llama/k8s/templates/job.yaml": job, "llama/src/train.py": loop,
                          "other/k8s/job.yaml": job, "other/a/train.py": loop, "other/b/train.py": loop})
    _, wls = scan_tree(tmp_path)
    by_entry = {w.entrypoint: {l.loc.path for l in w.launchers} for w in wls}
    assert by_entry["llama/src/train.py"] == {"llama/k8s/templates/job.yaml"}
    assert by_entry.get("other/a/train.py", set()) == set() and by_entry.get("other/b/train.py", set()) == set()


def test_workloads_says_which_launchers_it_could_not_join_and_why(wl_doc):
    launchers = wl_doc["launchers"]
    assert (launchers["named"], launchers["joined"]) == (6, 3)
    missed = {u["path"]: u for u in launchers["unjoined"]}
    assert set(missed) == {"clusters/slinky/foundry.sbatch", "clusters/slinky/other-src.sbatch", "serving/k8s/job.yaml"}
    other = missed["clusters/slinky/other-src.sbatch"]
    assert other["where"] == "clusters/slinky/other-src.sbatch:4" and other["command"] == "torchrun /fsx/somewhere/src/train.py"
    assert "serving/src/train.py, training/fsdp/src/train.py have that name" in other["why"]
    assert "[[tool.gpulint.workloads]]" in other["why"]
    text = run_cli("workloads", FIXTURES / "wl-cluster-paths").stdout
    assert "launchers joined to a repository script: 3 of 6" in text
    assert "launchers not joined:\n  clusters/slinky/foundry.sbatch:4: composer /llm-foundry/scripts/train/train.py: " in text


def test_a_script_held_in_an_unset_variable_is_listed_with_the_variable(tmp_path):
    write_tree(tmp_path, {"src/train.py": "import torch\nm = torch.nn.Linear(2, 2).cuda()\nfor _ in range(2):\n"
                                          "    m(torch.ones(2).cuda()).sum().backward()\n",
                          "run.sh": "#!/bin/bash\ntorchrun --nproc_per_node=8 $CODE_DIR/train.py\n"})
    doc = json.loads(run_cli("workloads", tmp_path, "--format", "json").stdout)
    [u] = doc["launchers"]["unjoined"]
    assert u["where"] == "run.sh:2" and "holds a variable the launcher does not set" in u["why"]
