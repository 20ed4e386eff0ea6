"""Which files a scan looks at, and as what. A file with a YAML syntax error is
used as a probe: it yields SYS001 exactly when the scan read it."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import FIXTURES, run_cli

BROKEN_YAML = "optimizer: {lr: 0.1\n"
FP32_TRAIN = (FIXTURES / "pytorch-fp32-loop" / "train.py").read_text()


def write(root, rel, text, mode="w"):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def scan(root, *args):
    proc = run_cli("scan", root, "--format", "json", *args)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)


def sys001_paths(data) -> set[str]:
    return {f["path"] for f in data["findings"] if f["code"] == "SYS001"}


def git_init(root):
    subprocess.run(["git", "init", "-q", str(root)], check=True)


SKIPPED = [".venv/lib/cfg.yaml", "venv/cfg.yaml", "node_modules/pkg/cfg.yaml", "__pycache__/cfg.yaml", "build/cfg.yaml",
           "dist/cfg.yaml", ".tox/py311/cfg.yaml", "pkg.egg-info/cfg.yaml", ".ipynb_checkpoints/cfg.yaml", "wandb/run/cfg.yaml",
           ".terraform/modules/cfg.yaml"]


@pytest.mark.parametrize("in_git", [False, True])
def test_virtualenvs_node_modules_and_build_dirs_are_skipped(tmp_path, in_git):
    if in_git:
        git_init(tmp_path)
    for rel in SKIPPED:
        write(tmp_path, rel, BROKEN_YAML)
    write(tmp_path, ".venv/pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path, "configs/cfg.yaml", BROKEN_YAML)
    assert sys001_paths(scan(tmp_path)) == {"configs/cfg.yaml"}


@pytest.mark.parametrize("in_git", [False, True])
def test_a_virtualenv_under_any_name_is_skipped(tmp_path, in_git):
    if in_git:
        git_init(tmp_path)
    write(tmp_path, "py311-cuda/pyvenv.cfg", "home = /usr/bin\n")
    write(tmp_path, "py311-cuda/lib/python3.11/site-packages/pkg/cfg.yaml", BROKEN_YAML)
    write(tmp_path, "py311-cuda/share/cfg.yaml", BROKEN_YAML)
    write(tmp_path, "configs/cfg.yaml", BROKEN_YAML)
    assert sys001_paths(scan(tmp_path)) == {"configs/cfg.yaml"}


def test_git_directory_is_never_read(tmp_path):
    git_init(tmp_path)
    write(tmp_path, ".git/hooks/cfg.yaml", BROKEN_YAML)
    write(tmp_path, "cfg.yaml", BROKEN_YAML)
    assert sys001_paths(scan(tmp_path)) == {"cfg.yaml"}


def test_a_folder_named_env_that_is_not_a_virtualenv_is_code(tmp_path):
    write(tmp_path, "env/cartpole.yaml", BROKEN_YAML)
    assert sys001_paths(scan(tmp_path)) == {"env/cartpole.yaml"}


def test_gitignore_is_respected_in_a_work_tree(tmp_path):
    git_init(tmp_path)
    write(tmp_path, ".gitignore", "outputs/\n*.gen.yaml\n/local.yaml\n!keep.gen.yaml\n")
    write(tmp_path, "outputs/run1/config.yaml", BROKEN_YAML)
    write(tmp_path, "configs/sweep.gen.yaml", BROKEN_YAML)
    write(tmp_path, "configs/keep.gen.yaml", BROKEN_YAML)
    write(tmp_path, "local.yaml", BROKEN_YAML)
    write(tmp_path, "configs/local.yaml", BROKEN_YAML)  # the anchored pattern only matches at the top
    write(tmp_path, "sub/.gitignore", "secret.yaml\n")  # nested .gitignore files count too
    write(tmp_path, "sub/secret.yaml", BROKEN_YAML)
    write(tmp_path, "sub/public.yaml", BROKEN_YAML)
    assert sys001_paths(scan(tmp_path)) == {"configs/keep.gen.yaml", "configs/local.yaml", "sub/public.yaml"}


def test_gitignore_of_the_enclosing_repository_applies_to_a_scanned_subdirectory(tmp_path):
    git_init(tmp_path)
    write(tmp_path, ".gitignore", "scratch/\n")
    write(tmp_path, "project/scratch/cfg.yaml", BROKEN_YAML)
    write(tmp_path, "project/cfg.yaml", BROKEN_YAML)
    assert sys001_paths(scan(tmp_path / "project")) == {"cfg.yaml"}


def test_tracked_and_untracked_files_are_both_scanned(tmp_path):
    git_init(tmp_path)
    write(tmp_path, "tracked.yaml", BROKEN_YAML)
    subprocess.run(["git", "-C", str(tmp_path), "add", "tracked.yaml"], check=True)
    write(tmp_path, "untracked.yaml", BROKEN_YAML)
    assert sys001_paths(scan(tmp_path)) == {"tracked.yaml", "untracked.yaml"}


def test_exclude_globs_apply_on_top(tmp_path):
    git_init(tmp_path)
    write(tmp_path, ".gpulint.toml", 'exclude = ["charts/**", "**/fixtures/*.yaml"]\n')
    write(tmp_path, "charts/trainer/templates/job.yaml", "spec: {{ .Values.x }\n")
    write(tmp_path, "tests/fixtures/bad.yaml", BROKEN_YAML)
    write(tmp_path, "conf/other.yaml", BROKEN_YAML)
    assert sys001_paths(scan(tmp_path)) == {"conf/other.yaml"}


# -- classification ---------------------------------------------------------------------------------
@pytest.mark.parametrize("rel, text", [
    ("a.yaml", BROKEN_YAML),
    ("a.yml", BROKEN_YAML),
    ("a.json", '{"bf16": true,\n'),
    ("a.toml", "x = [\n"),
    # code files are parsed only when they mention an ML framework (the text gate)
    ("a.ipynb", '{"cells": [{"cell_type": "code", "source": ["import torch"]}\n'),
    ("train.py", "import torch\ndef f(:\n    pass\n"),
])
def test_known_kinds_by_extension_are_parsed(tmp_path, rel, text):
    write(tmp_path, rel, text)
    assert sys001_paths(scan(tmp_path)) == {rel}


@pytest.mark.parametrize("rel", ["notes.txt", "data.csv", "README.md", "config.ini", "model.yaml.bak"])
def test_unknown_kinds_are_not_read(tmp_path, rel):
    write(tmp_path, rel, BROKEN_YAML)
    data = scan(tmp_path)
    assert data["findings"] == [] and data["summary"]["files"] == 0


def test_python_by_shebang(tmp_path):
    p = write(tmp_path, "bin/train", "#!/usr/bin/env python3\n" + FP32_TRAIN.split("\n", 1)[1])
    p.chmod(0o755)
    write(tmp_path, "imgcls/__init__.py", "")
    codes = {(f["code"], f["path"]) for f in scan(tmp_path)["findings"]}
    assert ("AMP001", "bin/train") in codes


def test_shell_launcher_by_shebang(tmp_path):
    write(tmp_path, "train.py", FP32_TRAIN)
    write(tmp_path, "run", "#!/bin/bash\nset -e\ntorchrun --nproc_per_node 4 train.py\n")
    data = scan(tmp_path)
    (wl,) = data["workloads"]
    assert [l["path"] for l in wl["launchers"]] == ["run"]


@pytest.mark.parametrize("name, read", [("submit.sbatch_shifter", True), ("run.slurm-gpu", True), ("job.sh_old", True),
                                        ("notes.txt_old", False), ("submit.sbatch_shifter", False)])
def test_a_variant_of_a_job_script_extension_is_read_by_its_shebang(tmp_path, name, read):
    """NERSC-style ``submit.sbatch_shifter``: a job script's extension with a suffix is a job script when its first line
    is a shell's shebang (a file without one, or of another extension, is not read)."""
    write(tmp_path, "train.py", FP32_TRAIN)
    shebang = "#!/bin/bash\n" if read or name.startswith("notes") else ""
    write(tmp_path, name, shebang + "#SBATCH --nodes=1\n#SBATCH --gres=gpu:4\ntorchrun --nproc_per_node 4 train.py\n")
    data = scan(tmp_path)
    launchers = [l["path"] for wl in data["workloads"] for l in wl["launchers"]]
    assert (launchers == [name]) is read


def test_plain_python_without_ml_imports_is_not_a_workload(tmp_path):
    write(tmp_path, "tools/report.py", "import csv\nfor row in csv.reader(open('x')):\n    print(row)\n")
    data = scan(tmp_path)
    assert data["findings"] == [] and data["workloads"] == []


# -- unreadable files -------------------------------------------------------------------------------
def test_non_utf8_file_is_sys001_and_the_scan_goes_on(tmp_path):
    write(tmp_path, "configs/legacy.yaml", "comment: caf\xe9 au lait\nlr: 0.1\n".encode("latin-1"))
    write(tmp_path, "train.py", FP32_TRAIN)
    data = scan(tmp_path)
    (f,) = [f for f in data["findings"] if f["code"] == "SYS001"]
    assert f["path"] == "configs/legacy.yaml" and "not UTF-8" in f["message"]
    assert "AMP001" in {x["code"] for x in data["findings"]}


def test_utf8_bom_is_fine(tmp_path):
    write(tmp_path, "cfg.yaml", "\ufefflr: 0.1\n".encode("utf-8"))
    assert scan(tmp_path)["findings"] == []


def test_binary_file_with_a_known_extension_is_sys001_at_info(tmp_path):
    """Not skipped silently (the scan says what it did not read), but it fails no CI: nothing uses it."""
    write(tmp_path, "weights.json", b"\x00\x01\x02binary")
    (f,) = scan(tmp_path)["findings"]
    assert (f["code"], f["path"], f["severity"]) == ("SYS001", "weights.json", "info")
    assert "binary content (a NUL byte at offset 0)" in f["message"]


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads every file")
def test_unreadable_file_is_sys001(tmp_path):
    p = write(tmp_path, "secret.yaml", "a: 1\n")
    p.chmod(0)
    try:
        (f,) = scan(tmp_path)["findings"]
        assert (f["code"], f["path"]) == ("SYS001", "secret.yaml") and "could not be read" in f["message"]
    finally:
        p.chmod(0o644)


def test_symlink_leaving_the_root_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    write(outside, "cfg.yaml", BROKEN_YAML)
    root = tmp_path / "root"
    write(root, "ok.yaml", "a: 1\n")
    (root / "linked.yaml").symlink_to(outside / "cfg.yaml")
    assert sys001_paths(scan(root)) == set()


def test_scanning_a_single_file_outside_git(tmp_path):
    write(tmp_path, "cfg.yaml", BROKEN_YAML)
    write(tmp_path, "other.yaml", BROKEN_YAML)
    proc = run_cli("scan", "cfg.yaml", "--format", "json", cwd=tmp_path)
    assert {f["path"] for f in json.loads(proc.stdout)["findings"]} == {"cfg.yaml"}
