"""DVC: dvc.yaml stages as launchers, and `dvc repro` / `dvc exp run` as launches of a pipeline."""
from __future__ import annotations

import textwrap

import pytest

from gpulint.read.dvc import looks_like_dvc, read_dvc
from gpulint.read.shell.scanner import read_shell
from gpulint.read.skypilot import read_skypilot
from gpulint.read.yamlnodes import load_documents

DVC = textwrap.dedent("""\
    vars:
      - train:
          epochs: 3
    stages:
      prepare:
        cmd: python src/prepare.py data/raw data/prepared
        deps: [src/prepare.py, data/raw]
        outs: [data/prepared]
      train:
        wdir: src
        cmd:
          - NCCL_DEBUG=INFO torchrun --nproc_per_node 8 train.py --epochs ${train.epochs}
          - python evaluate.py --model ../models/last.pt
      sweep:
        foreach: [1, 2, 3]
        do:
          cmd: accelerate launch --config_file configs/accelerate.yaml tune.py --seed ${item}
      multi:
        cmd: |
          export WANDB_MODE=offline
          deepspeed --num_gpus 8 ds_train.py --deepspeed ds_config.json
    """)


def read(text=DVC, path="pipelines/dvc.yaml"):
    return read_dvc(load_documents(text), path)


def line_of(needle, text=DVC):
    hits = [i for i, ln in enumerate(text.splitlines(), 1) if needle in ln]
    assert len(hits) == 1, (needle, hits)
    return hits[0]


def test_one_launch_per_command_with_the_stage_name():
    got = [(f.attrs["stage"], f.value["tool"], f.value["script"], f.loc.line, f.target)
           for f in read() if f.kind == "launch"]
    assert got == [
        ("prepare", "python", "src/prepare.py", line_of("src/prepare.py data/raw"), "stages.prepare"),
        # wdir: src -> the script is src/train.py, relative to the dvc.yaml's folder
        ("train", "torchrun", "src/train.py", line_of("torchrun"), "stages.train"),
        ("train", "python", "src/evaluate.py", line_of("evaluate.py"), "stages.train"),
        ("sweep", "accelerate", "tune.py", line_of("accelerate launch"), "stages.sweep"),
        ("multi", "deepspeed", "ds_train.py", line_of("deepspeed --num_gpus"), "stages.multi"),
    ]


def test_values_vars_and_templating():
    launches = {f.value["script"]: f for f in read() if f.kind == "launch"}
    train = launches["src/train.py"]
    assert train.value["nproc_per_node"] == 8 and train.value["args"] == ["--epochs", "3"]  # inline vars
    assert train.attrs["wdir"] == "src"
    sweep = launches["tune.py"]
    assert sweep.value["config_file"] == "configs/accelerate.yaml" and sweep.attrs["foreach"] is True
    assert sweep.value["args"][0] == "--seed" and "$" in sweep.value["args"][1]  # ${item}: unknown
    assert launches["ds_train.py"].value["deepspeed_config"] == "ds_config.json"


def test_env_of_a_stage_shares_its_target():
    env = {f.value["name"]: f for f in read() if f.kind == "env"}
    assert env["NCCL_DEBUG"].target == "stages.train" and env["NCCL_DEBUG"].value["value"] == "INFO"
    assert env["WANDB_MODE"].loc.line == line_of("WANDB_MODE")


def test_wdir_from_a_template_makes_relative_paths_unknown():
    text = "stages:\n  t:\n    wdir: ${dir}\n    cmd: python train.py\n"
    [launch] = [f for f in read(text) if f.kind == "launch"]
    assert launch.value["script"] is None


@pytest.mark.parametrize("path,text,ok", [
    ("dvc.yaml", DVC, True),
    ("sub/dvc.yaml", DVC, True),
    ("pipeline.yaml", DVC, False),  # DVC reads only dvc.yaml
    ("dvc.yaml", "stages: [a, b]\n", False),
    ("dvc.yaml", "- 1\n", False),
])
def test_looks_like_dvc(path, text, ok):
    assert looks_like_dvc(load_documents(text)[0], path) is ok


def test_gitlab_ci_stages_are_not_dvc():
    text = "stages: [build, test]\ntrain:\n  stage: test\n  script: python train.py\n"
    assert read(text, ".gitlab-ci.yml") == []


@pytest.mark.parametrize("line,script,stage", [
    ("dvc repro", "dvc.yaml", None),
    ("dvc repro train", "dvc.yaml", "train"),
    ("dvc repro -f train", "dvc.yaml", "train"),
    ("dvc repro pipelines/dvc.yaml:train", "pipelines/dvc.yaml", "train"),
    ("dvc repro pipelines/dvc.yaml", "pipelines/dvc.yaml", None),
    ("dvc exp run", "dvc.yaml", None),
    ("dvc exp run -S train.lr=0.1 -n lr-sweep train", "dvc.yaml", "train"),
    ("uv run dvc exp run --queue train", "dvc.yaml", "train"),
])
def test_dvc_commands_are_pipeline_launches(line, script, stage):
    [launch] = [f for f in read_shell(line + "\n", "run.sh") if f.kind == "launch"]
    assert launch.value["tool"] == "dvc" and launch.value["script"] == script and launch.value["stage"] == stage


def test_dvc_repro_of_several_targets():
    got = [(f.value["script"], f.value["stage"]) for f in read_shell("dvc repro prepare train\n", "run.sh")
           if f.kind == "launch"]
    assert got == [("dvc.yaml", "prepare"), ("dvc.yaml", "train")]


@pytest.mark.parametrize("line", ["dvc pull", "dvc push -r s3", "dvc exp show", "dvc add data/raw", "dvc status"])
def test_other_dvc_commands_are_not_launches(line):
    assert [f for f in read_shell(line + "\n", "run.sh") if f.kind == "launch"] == []


def test_skypilot_run_dvc_exp_run():
    text = "resources:\n  accelerators: A100:8\n  use_spot: true\nrun: |\n  dvc pull\n  dvc exp run train\n"
    [launch] = [f for f in read_skypilot(load_documents(text), "sky.yaml") if f.kind == "launch"]
    assert launch.value["tool"] == "dvc" and launch.value["stage"] == "train" and launch.target == "task"
    assert launch.loc.line == 6
