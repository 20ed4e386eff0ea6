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
    assert {"python", "jupyter", "yaml", "json", "toml", "terraform", "shell", "dockerfile"} <= set(hook["types_or"])


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
