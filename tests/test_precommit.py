"""Real pre-commit driving the hook of .pre-commit-hooks.yaml on a throw-away
git repository. Slow (pre-commit builds a virtualenv and pip-installs gpulint
from this checkout), but part of CI."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import FIXTURES, ROOT

pytestmark = pytest.mark.slow

BAD = (FIXTURES / "clean" / "train.py").read_text().replace(
    '            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):\n                logits = model(x)\n'
    "                loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())\n",
    "            logits = model(x)\n            loss = F.cross_entropy(logits.flatten(0, 1), y.flatten())\n",
)
GOOD = (FIXTURES / "clean" / "train.py").read_text()


def _pre_commit() -> list[str]:
    exe = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or shutil.which("pre-commit")
    if exe is None:
        pytest.fail("pre-commit is not installed: pip install -e '.[test]'")
    return [exe]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    home = tmp_path_factory.mktemp("pre-commit-home")
    e = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    e.update({"PRE_COMMIT_HOME": str(home), "NO_COLOR": "1", "PRE_COMMIT_COLOR": "never",
              "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
              "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})
    return e


def git(repo, *args, env):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)


def make_repo(path: Path, env) -> Path:
    """A small project: the clean fixture's package, with a train.py lacking AMP."""
    shutil.copytree(FIXTURES / "clean", path)
    (path / "train.py").write_text(BAD)
    git(path, "init", "-q", env=env)
    git(path, "add", "-A", env=env)
    return path


def test_hooks_file_declares_gpulint():
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "gpulint"
    assert hook["entry"] == "gpulint scan"
    assert hook["language"] == "python"
    assert hook["pass_filenames"] is True and hook["require_serial"] is True
    assert hook["types"] == ["text"] and "types_or" not in hook  # chosen by name: see the filter test below


# Every name gpulint's file kinds claim (one sample per glob of gpulint.read.builtin), and names it does not.
def _claimed_samples() -> list[str]:
    from gpulint.testing import default_host

    out = []
    for kind in default_host().registry.file_kinds:
        for glob in kind.globs:
            out.append(("sub/" if len(out) % 2 else "") + glob.replace("*", "x"))
    return out


NOT_CLAIMED = ["README.md", "docs/guide.rst", "data.csv", "tox.ini", ".gitignore"]  # (setup.cfg is read: console scripts)


def _local_hook_repo(path: Path, env, hook: dict, entry: str) -> Path:
    """A repository whose .pre-commit-config.yaml runs `entry` with gpulint's own file filter
    (files/types/types_or/exclude of .pre-commit-hooks.yaml): pre-commit's real matching, no venv build."""
    local = {"id": "filter", "name": "gpulint filter", "entry": entry, "language": "system", "pass_filenames": True,
             "verbose": True, "require_serial": True}
    for key in ("files", "exclude", "types", "types_or", "exclude_types"):
        if key in hook:
            local[key] = hook[key]
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", env=env)
    (path / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}))
    return path


def test_hook_filter_passes_every_file_gpulint_reads_and_only_those(tmp_path, env):
    """pre-commit's type tags miss non-executable .sbatch/.slurm scripts and launch scripts without an
    extension; the hook selects files by the names gpulint's file kinds claim instead."""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    repo = _local_hook_repo(tmp_path / "proj", env, hook, f"{sys.executable} -c \"import sys; print('PASSED:' + '|'.join(sys.argv[1:]))\"")
    claimed = _claimed_samples()
    for name in claimed + NOT_CLAIMED:
        p = repo / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text("#!/bin/bash\n#SBATCH --nodes=2\necho hi\n" if "sbatch" in name or "slurm" in name else "x = 1\n")
        p.chmod(0o644)  # job scripts submitted with sbatch are rarely executable
    (repo / "launch").write_text("#!/bin/bash\ntorchrun train.py\n")  # a shebang script without extension
    from gpulint.run.discover import JOB_SCRIPT_EXTENSIONS
    jobs_by_ext = [f"jobs/run.{ext}" for ext in sorted(JOB_SCRIPT_EXTENSIONS)]  # scheduler job scripts by shebang
    for name in jobs_by_ext:
        (repo / "jobs").mkdir(exist_ok=True)
        (repo / name).write_text("#!/bin/bash\n#SBATCH --nodes=2\nsrun python train.py\n")
    (repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\0\0binary")
    git(repo, "add", "-A", env=env)
    proc = subprocess.run([*_pre_commit(), "run", "--all-files"], cwd=repo, capture_output=True, text=True, env=env, timeout=300)
    line = next(l for l in proc.stdout.splitlines() if l.startswith("PASSED:"))
    passed = set(line[len("PASSED:"):].split("|"))
    jobs = {n for n in claimed if n.endswith((".sbatch", ".slurm"))}
    assert len(jobs) == 2 and jobs <= passed  # non-executable Slurm job scripts reach the hook
    assert set(claimed) <= passed, sorted(set(claimed) - passed)
    assert "launch" in passed
    assert set(jobs_by_ext) <= passed, sorted(set(jobs_by_ext) - passed)
    assert not passed & set(NOT_CLAIMED + ["logo.png"]), sorted(passed & set(NOT_CLAIMED))


SPOT_TRAIN = """\
import torch
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
"""
ON_DEMAND = 'resource "aws_instance" "trainer" {\n  ami           = "ami-0abc"\n  instance_type = "p4d.24xlarge"\n}\n'
SPOT = ON_DEMAND.replace('"p4d.24xlarge"\n', '"p4d.24xlarge"\n  instance_market_options {\n    market_type = "spot"\n  }\n')


def test_hook_reports_what_an_infrastructure_only_change_causes(tmp_path, env):
    """A commit that only turns on spot in main.tf: the hook gets main.tf alone, and reports the
    finding on train.py (no checkpoints) whose related location is the spot setting."""
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    repo = _local_hook_repo(tmp_path / "proj", env, hook, f"{sys.executable} -m gpulint scan")
    (repo / "train.py").write_text(SPOT_TRAIN)
    (repo / "infra").mkdir()
    (repo / "infra" / "main.tf").write_text(ON_DEMAND)
    git(repo, "add", "-A", env=env)
    git(repo, "commit", "-qm", "on demand", env=env)
    clean = subprocess.run([*_pre_commit(), "run", "--files", "infra/main.tf"], cwd=repo, capture_output=True, text=True, env=env, timeout=300)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    (repo / "infra" / "main.tf").write_text(SPOT)
    git(repo, "add", "infra/main.tf", env=env)
    proc = subprocess.run([*_pre_commit(), "run"], cwd=repo, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "train.py:" in proc.stdout and "SPOT001" in proc.stdout and "spot" in proc.stdout


def test_try_repo_fails_on_fp32_training_and_passes_after_the_fix(tmp_path, env):
    repo = make_repo(tmp_path / "proj", env)
    cmd = [*_pre_commit(), "try-repo", str(ROOT), "gpulint", "--files", "train.py"]
    bad = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    out = bad.stdout + bad.stderr
    assert bad.returncode == 1, out
    assert "Failed" in out and "- hook id: gpulint" in out
    assert "train.py:48:13: AMP001 [warning] Training loop runs in fp32" in out

    (repo / "train.py").write_text(GOOD)
    git(repo, "add", "train.py", env=env)
    good = subprocess.run(cmd, cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    assert good.returncode == 0, good.stdout + good.stderr
    assert "Passed" in good.stdout


def test_commit_is_refused_then_accepted(tmp_path, env):
    """The hook installed in .git/hooks: `git commit` fails on the fp32 script
    and succeeds once autocast is back. The hook repository is a clone of this
    checkout's HEAD (pre-commit pins a rev)."""
    hook_repo = tmp_path / "gpulint-clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(hook_repo)], check=True, env=env, capture_output=True)
    rev = git(hook_repo, "rev-parse", "HEAD", env=env).stdout.strip()
    repo = make_repo(tmp_path / "proj", env)
    (repo / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo.as_uri()}\n    rev: {rev}\n    hooks:\n      - id: gpulint\n")
    git(repo, "add", ".pre-commit-config.yaml", env=env)
    subprocess.run([*_pre_commit(), "install"], cwd=repo, check=True, env=env, capture_output=True)

    refused = subprocess.run(["git", "commit", "-m", "train in fp32"], cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    assert refused.returncode != 0, refused.stdout + refused.stderr
    assert "AMP001" in refused.stdout + refused.stderr
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, env=env).returncode != 0  # nothing committed

    (repo / "train.py").write_text(GOOD)
    git(repo, "add", "train.py", env=env)
    accepted = subprocess.run(["git", "commit", "-m", "train in bf16"], cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert "gpulint (GPU spend)" in accepted.stdout + accepted.stderr and "Passed" in accepted.stdout + accepted.stderr
