"""The per-file result cache, parallel scans, multi-path scans and the progress bar, end to end.

Each test has a cache folder of its own (conftest), so the first scan of a test is cold."""
import json
import os
import pickle
import re
import shutil
import sys
from pathlib import Path

import pytest

from conftest import FIXTURES, read_all, run_cli
from helpers import reported

#: fixtures with cross-file workloads, notebooks, a syntax error and infrastructure
SAMPLES = ["pytorch-fp32-loop", "broken", "notebook", "accelerate-no-mp", "wl-terraform-gcp", "cost-eks-always-on"]


def _scan(path, *extra, cwd=None, env=None):
    return run_cli("scan", path, "--format", "json", *extra, cwd=cwd, env=env)


def _copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


def _stats(proc) -> tuple[int, int]:
    line = next(l for l in proc.stderr.splitlines() if l.startswith("gpulint: cache "))
    m = re.search(r": (\d+) file results reused, (\d+) files read", line)
    return int(m.group(1)), int(m.group(2))


@pytest.mark.parametrize("name", SAMPLES)
def test_findings_identical_cold_warm_uncached_and_for_every_jobs(name, tmp_path):
    repo = _copy(name, tmp_path)
    cold = reported(_scan(repo))
    warm = reported(_scan(repo))
    uncached = reported(_scan(repo, "--no-cache"))
    one = reported(_scan(repo, "--no-cache", "--jobs", "1"))
    three = reported(_scan(repo, "--no-cache", "--jobs", "3"))
    assert cold, "the fixture must have findings for the comparison to mean anything"
    assert cold == warm == uncached == one == three


def test_warm_scan_reads_only_the_changed_file(tmp_path):
    repo = _copy("pytorch-fp32-loop", tmp_path)
    first = _scan(repo, "--verbose")
    reused, read = _stats(first)
    assert reused == 0 and read > 3
    files = read
    second = _scan(repo, "--verbose")
    assert _stats(second) == (files, 0)
    # one file changes: only it is read again, and its new content counts
    train = repo / "train.py"
    train.write_text(train.read_text().replace('init_process_group("gloo")', 'init_process_group("nccl")'))
    third = _scan(repo, "--verbose")
    assert _stats(third) == (files - 1, 1)
    assert "NET005" in {f["code"] for f in reported(first)}
    assert "NET005" not in {f["code"] for f in reported(third)}
    assert reported(third) == reported(_scan(repo, "--no-cache"))


def test_no_cache_neither_reads_nor_writes(tmp_path):
    repo = _copy("pytorch-fp32-loop", tmp_path)
    cache = tmp_path / "cache"
    proc = _scan(repo, "--no-cache", "--verbose", env={"GPULINT_CACHE_DIR": str(cache)})
    assert not cache.exists()
    assert not any(l.startswith("gpulint: cache ") for l in proc.stderr.splitlines())


def test_cache_folder_ignores_itself_and_is_tagged(tmp_path):
    repo = _copy("pytorch-fp32-loop", tmp_path)
    cache = tmp_path / "cache"
    _scan(repo, env={"GPULINT_CACHE_DIR": str(cache)})
    assert (cache / ".gitignore").read_text().splitlines()[-1] == "*"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert list(cache.glob("v*/*.cache"))


def test_default_location_is_the_project_root_and_clean_removes_it(tmp_path):
    repo = _copy("pytorch-fp32-loop", tmp_path)
    (repo / ".gpulint.toml").write_text("")  # the project root (no git here)
    env = {"GPULINT_CACHE_DIR": ""}
    _scan(repo / "imgcls", env=env, cwd=repo)
    assert (repo / ".gpulint_cache" / "CACHEDIR.TAG").is_file()
    # the cache folder is never scanned itself
    listed = _scan(repo, env=env, cwd=repo)
    assert not any(".gpulint_cache" in f["path"] for f in reported(listed))
    proc = run_cli("clean", repo, env=env, cwd=repo)
    assert proc.returncode == 0 and "removed" in proc.stdout
    assert not (repo / ".gpulint_cache").exists()
    again = run_cli("clean", repo, env=env, cwd=repo)
    assert again.returncode == 0 and "no cache" in again.stdout


def test_clean_refuses_a_folder_gpulint_did_not_make(tmp_path):
    mine = tmp_path / "important"
    mine.mkdir()
    (mine / "data.txt").write_text("keep me")
    proc = run_cli("clean", tmp_path, env={"GPULINT_CACHE_DIR": str(mine)})
    assert proc.returncode == 2 and "not removed" in proc.stderr
    assert (mine / "data.txt").read_text() == "keep me"


def test_a_planted_cache_file_is_never_unpickled(tmp_path):
    """A cache folder lives in the repository: anyone who can commit could plant a pickle there.
    Only files signed with this user's key are loaded."""
    repo = _copy("pytorch-fp32-loop", tmp_path)
    cache = tmp_path / "cache"
    env = {"GPULINT_CACHE_DIR": str(cache)}
    expected = reported(_scan(repo, env=env))
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    for entry in cache.glob("v*/*.cache"):
        raw = entry.read_bytes()
        magic = raw.split(b"\n", 1)[0] + b"\n"
        entry.write_bytes(magic + b"\0" * 32 + pickle.dumps(Evil()))
    proc = _scan(repo, "--verbose", env=env)
    assert not marker.exists()
    assert reported(proc) == expected
    assert _stats(proc)[0] == 0  # ignored: the scan ran cold


def test_a_corrupt_or_foreign_cache_is_a_cold_scan(tmp_path):
    repo = _copy("pytorch-fp32-loop", tmp_path)
    cache = tmp_path / "cache"
    env = {"GPULINT_CACHE_DIR": str(cache)}
    expected = reported(_scan(repo, env=env))
    for entry in cache.glob("v*/*.cache"):
        entry.write_bytes(entry.read_bytes()[:40])
    assert reported(_scan(repo, env=env)) == expected
    # another user's key (or another machine's): the file does not verify
    other = tmp_path / "other-home"
    proc = _scan(repo, "--verbose", env={**env, "XDG_CACHE_HOME": str(other)})
    assert reported(proc) == expected and _stats(proc)[0] == 0


def test_unwritable_cache_folder_scans_without_it(tmp_path):
    repo = _copy("pytorch-fp32-loop", tmp_path)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache folder would be")
    proc = _scan(repo, env={"GPULINT_CACHE_DIR": str(blocker / "cache")})
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert reported(proc) == reported(_scan(repo, "--no-cache"))


def test_settings_are_part_of_the_key(tmp_path):
    """A configuration change that changes per-file results (budgets, options) is not served stale."""
    repo = _copy("broken", tmp_path)
    before = reported(_scan(repo))
    assert any(f["code"] == "SYS001" for f in before)
    (repo / ".gpulint.toml").write_text('exclude = ["*.py", "*.yaml", "*.yml", "*.json", "*.ipynb"]\n')
    after = reported(_scan(repo))
    assert not any(f["code"] == "SYS001" and f["path"].endswith((".py", ".yaml")) for f in after)


def test_jobs_defaults_to_the_usable_cpus_and_rejects_negative(tmp_path):
    proc = run_cli("scan", "--help")
    assert "one per usable CPU" in proc.stdout
    bad = run_cli("scan", FIXTURES / "clean", "--jobs", "-1")
    assert bad.returncode == 2 and "--jobs" in bad.stderr


# -- several paths -------------------------------------------------------------------------------
def test_several_folders_scan_exactly_those_folders(tmp_path):
    root = tmp_path / "mono"
    for name in ("pytorch-fp32-loop", "notebook", "accelerate-no-mp"):
        shutil.copytree(FIXTURES / name, root / name)
    (root / ".gpulint.toml").write_text("")
    proc = run_cli("scan", "pytorch-fp32-loop", "notebook", "--format", "json", cwd=root)
    data = json.loads(proc.stdout)
    paths = {f["path"] for f in data["findings"]}
    assert paths and all(p.startswith(("pytorch-fp32-loop/", "notebook/")) for p in paths)
    whole = json.loads(run_cli("scan", ".", "--format", "json", cwd=root).stdout)
    assert any(f["path"].startswith("accelerate-no-mp/") for f in whole["findings"])
    assert data["summary"]["files"] == sum(json.loads(run_cli("scan", n, "--format", "json", cwd=root).stdout)["summary"]["files"]
                                           for n in ("pytorch-fp32-loop", "notebook"))
    assert whole["summary"]["files"] > data["summary"]["files"]
    # the findings of the two folders are what each folder gives on its own
    alone = [f for name in ("notebook", "pytorch-fp32-loop") for f in reported(run_cli("scan", name, "--format", "json", cwd=root))]
    assert sorted(f["code"] for f in data["findings"]) == sorted(f["code"] for f in alone)


def test_files_alone_keep_the_repository_as_context(tmp_path):
    """What pre-commit passes: the changed files, reported with the rest of the repository as context."""
    root = _copy("pytorch-fp32-loop", tmp_path)
    (root / ".gpulint.toml").write_text("")
    proc = run_cli("scan", "train.py", "imgcls/data.py", "--format", "json", cwd=root)
    data = json.loads(proc.stdout)
    assert {f["path"] for f in data["findings"]} == {"train.py"}
    assert data["summary"]["files"] > 2


# -- progress ------------------------------------------------------------------------------------
def test_no_progress_when_piped():
    proc = run_cli("scan", FIXTURES / "pytorch-fp32-loop", env={"GPULINT_NO_PROGRESS": "", "GPULINT_PROGRESS_DELAY": "0"})
    assert "file/s" not in proc.stderr and "files/s" not in proc.stderr and proc.stderr == ""


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_progress_on_a_terminal(tmp_path):
    import pty
    import subprocess

    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # a new pty is 0 columns wide
    env = {**os.environ, "NO_COLOR": "1", "GPULINT_NO_PROGRESS": "", "GPULINT_PROGRESS_DELAY": "0"}
    out = tmp_path / "report.txt"
    proc = subprocess.Popen([sys.executable, "-m", "gpulint", "scan", str(FIXTURES / "pytorch-fp32-loop"), "-o", str(out)],
                            stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    text = read_all(master).decode("utf-8", "replace")
    proc.wait(timeout=300)
    os.close(master)
    assert "gpulint" in text and "file" in text  # tqdm's "gpulint: 100%|...| 8/8 [..., files/s]"
    assert "AMP001" in out.read_text()
    quiet = subprocess.run([sys.executable, "-m", "gpulint", "scan", str(FIXTURES / "pytorch-fp32-loop"), "-q", "-o", str(out)],
                           capture_output=True, text=True, env=env, timeout=300)
    assert quiet.stderr == ""


def test_an_unchanged_tree_is_answered_by_the_scan_record_in_every_format(tmp_path):
    """The warm scan of an unchanged tree returns the stored result: the same bytes as a cold scan in every
    format, and `gpulint workloads` too."""
    repo = _copy("wl-terraform-gcp", tmp_path)
    for fmt in ("json", "text", "sarif"):
        cold = run_cli("scan", repo, "--format", fmt, "--no-cache")
        run_cli("scan", repo, "--format", fmt)  # fills the cache
        warm = run_cli("scan", repo, "--format", fmt, "--verbose")
        assert "the last scan's result was reused" in warm.stderr
        assert warm.stdout == cold.stdout and warm.returncode == cold.returncode
    shutil.rmtree(tmp_path / "cache", ignore_errors=True)
    first = run_cli("workloads", repo, "--format", "json", env={"GPULINT_CACHE_DIR": str(tmp_path / "cache")})
    again = run_cli("workloads", repo, "--format", "json", env={"GPULINT_CACHE_DIR": str(tmp_path / "cache")})
    assert json.loads(first.stdout)["workloads"] and again.stdout == first.stdout


def test_the_scan_record_is_not_served_when_its_inputs_change(tmp_path):
    """Another selection, a new file, a removed file or a changed baseline each make a new result."""
    repo = _copy("pytorch-fp32-loop", tmp_path)
    full = reported(_scan(repo))
    assert {"AMP001", "NET005"} <= {f["code"] for f in full}
    only_net = _scan(repo, "--select", "NET", "--verbose")
    assert "result was reused" not in only_net.stderr
    assert {f["code"] for f in reported(only_net)} == {f["code"] for f in full if f["code"].startswith("NET")}
    assert reported(_scan(repo)) == full
    # a new training script is a new workload: its findings appear
    (repo / "train2.py").write_text((repo / "train.py").read_text())
    added = reported(_scan(repo, "--verbose"))
    assert any(f["path"] == "train2.py" for f in added)
    (repo / "train2.py").unlink()
    assert reported(_scan(repo)) == full
    # a baseline written now hides every finding; emptied, it hides none
    base = tmp_path / "baseline.json"
    assert run_cli("scan", repo, "--write-baseline", base).returncode in (0, 1)
    assert reported(_scan(repo, "--baseline", base)) == []
    base.write_text(json.dumps({"gpulint_baseline": 1, "findings": []}))
    assert reported(_scan(repo, "--baseline", base)) == full


def test_workloads_no_cache_writes_nothing_into_the_scanned_tree(tmp_path, monkeypatch):
    """`gpulint workloads --no-cache` is accepted as `scan --no-cache` is, and leaves no .gpulint_cache behind
    (GPULINT_CACHE_DIR unset, so the cache would go to the project root); without it the cache is written there."""
    monkeypatch.delenv("GPULINT_CACHE_DIR", raising=False)
    repo = _copy("wl-terraform-gcp", tmp_path)
    (repo / ".gpulint.toml").write_text("")  # the project root (no git here)
    uncached = run_cli("workloads", repo, "--format", "json", "--no-cache", cwd=repo)
    assert uncached.returncode == 0, uncached.stderr
    assert json.loads(uncached.stdout)["workloads"]
    assert not (repo / ".gpulint_cache").exists()
    text = run_cli("workloads", repo, "--no-cache", cwd=repo)
    assert text.returncode == 0 and text.stdout and not (repo / ".gpulint_cache").exists()
    cached = run_cli("workloads", repo, "--format", "json", cwd=repo)
    assert cached.returncode == 0 and cached.stdout == uncached.stdout
    assert (repo / ".gpulint_cache" / "CACHEDIR.TAG").is_file()
