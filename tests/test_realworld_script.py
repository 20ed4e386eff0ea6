"""The pure parts of scripts/realworld.py: test paths, repeats, label matching, precision,
reason grouping, run comparison, and extraction of a commit from a small git repository.

The real-world runs themselves need snapshots from outside and are not part of CI."""
from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("realworld", ROOT / "scripts" / "realworld.py")
rw = importlib.util.module_from_spec(_spec)
sys.modules["realworld"] = rw
_spec.loader.exec_module(rw)


def finding(code="AMP001", path="train.py", line=3, repo="o/r", severity="warning", fp=None, related=()):
    raw = {"code": code, "path": path, "line": line, "severity": severity, "fingerprint": fp,
           "related": [{"path": p, "line": 1} for p in related], "cost_impact": {"usd_per_hour": 1.5}, "workload": "train.py"}
    return rw.compact(raw, repo)


@pytest.mark.parametrize("path", [
    "tests/test_x.py", "pkg/tests/helpers.py", "test/e2e/run.sh", "src/testing/utils.py", "a/test_utils/x.py",
    "test_train.py", "pkg/train_test.py", "conftest.py", "pkg/conftest.py", "nb/test_notebook.ipynb",
    "      build/tests/x.py",
])
def test_in_tests(path):
    assert rw.in_tests(path)


@pytest.mark.parametrize("path", [
    "train.py", "contest.py", "attest.py", "latest/train.py", "tests.py", "testing.py", "pretest_data.py",
    "test_config.yaml", "src/test-data/x.py", "scripts/run_tests.sh",
])
def test_not_in_tests(path):
    assert not rw.in_tests(path)


def test_repeats_count_findings_beyond_the_first_of_one_code_file_and_line():
    fs = [finding(), finding(), finding(), finding(line=4), finding(code="IO001"), finding(code="IO001", path="b.py")]
    assert rw.count_repeats(fs) == {"AMP001": 2}
    table = rw.code_table(fs)
    assert table["AMP001"]["findings"] == 4 and table["AMP001"]["repeats"] == 2
    assert table["IO001"]["repeats"] == 0
    assert rw.headline(fs)["repeats"] == 2


def test_cross_file_by_code_or_by_a_related_location_in_another_file():
    assert finding(code="MEM002").get("cross_file")
    assert finding(code="SPOT001").get("cross_file")
    assert not finding(code="SPOT003").get("cross_file")
    assert not finding(code="AMP001", related=["train.py"]).get("cross_file")
    assert finding(code="AMP001", related=["train.py", "infra/main.tf"]).get("cross_file")


def test_workloads_of_a_finding_from_either_report_shape():
    assert finding()["workloads"] == ["train.py"]
    raw = {"code": "AMP001", "path": "a.py", "line": 1, "workloads": ["a.py", "b.py"], "related": []}
    assert rw.compact(raw, "o/r")["workloads"] == ["a.py", "b.py"]


def label(**kw):
    base = dict(repo="o/r", path="train.py", code="AMP001", line=3, verdict="right", commit="abc123", index=0)
    base.update(kw)
    return rw.Label(**base)


def test_labels_match_by_repo_path_code_and_line():
    fs = [finding(), finding(line=4), finding(code="IO001"), finding(repo="o/other")]
    labs = [label(index=0), label(index=1, line=9, verdict="wrong")]
    matched, unmatched = rw.match_labels(fs, labs, {"o/r": "abc123def", "o/other": "fff"})
    assert [m.index if m else None for m in matched] == [0, None, None, None]
    assert [u.index for u in unmatched] == [1]


def test_a_label_of_another_commit_matches_by_fingerprint_only():
    fs = [finding(fp="fp1"), finding(line=7, fp="fp2")]
    labs = [label(index=0, commit="0ld"), label(index=1, commit="0ld", line=5, fingerprint="fp2", verdict="wrong")]
    matched, unmatched = rw.match_labels(fs, labs, {"o/r": "abc123"})
    assert matched[0] is None  # same line, but another commit's line
    assert matched[1].index == 1
    assert [u.index for u in unmatched] == [0]


def test_labels_of_repositories_not_scanned_are_not_reported_unmatched():
    matched, unmatched = rw.match_labels([finding()], [label(repo="x/y")], {"o/r": "abc123"})
    assert matched == [None] and unmatched == []


def test_precision_is_right_over_labelled_with_debatable_apart():
    fs = [finding(line=i) for i in range(1, 6)] + [finding(code="IO001")]
    verdicts = ["right", "right", "debatable", "wrong", None, None]
    matched = [label(line=i + 1, verdict=v, index=i) if v else None for i, v in enumerate(verdicts)]
    table = rw.precision_table(fs, matched)
    assert table["AMP001"] == {"labelled": 4, "unlabelled": 1, "right": 2, "debatable": 1, "wrong": 1, "precision": 0.5}
    assert table["IO001"]["precision"] is None and table["IO001"]["unlabelled"] == 1
    sev = rw.severity_precision(fs, matched)
    assert sev["warning"]["right"] == 2 and sev["error"]["precision"] is None


def test_load_labels_rejects_bad_entries(tmp_path):
    p = tmp_path / "labels.yaml"
    p.write_text("- {repo: o/r, path: a.py, line: 1, code: AMP001, verdict: maybe}\n")
    with pytest.raises(SystemExit, match="verdict 'maybe'"):
        rw.load_labels(p)
    p.write_text("- {repo: o/r, path: a.py, code: AMP001, verdict: right}\n")
    with pytest.raises(SystemExit, match="line"):
        rw.load_labels(p)
    p.write_text("- {repo: o/r, path: a.py, line: 2, code: AMP001, verdict: wrong, reason: toy model}\n")
    [lab] = rw.load_labels(p)
    assert (lab.line, lab.verdict, lab.reason) == (2, "wrong", "toy model")


def test_reason_groups_drop_names_paths_and_numbers():
    a = rw.reason_group("instance: infra/a.yml#command/job names no instance type")
    b = rw.reason_group("instance: jobs/b/job.yaml#sweep/x names no instance type")
    assert a == b == "instance: <where> names no instance type"
    assert rw.reason_group("instance type 'ml.c5.2xlarge' is not in the catalogue") == rw.reason_group("instance type 'x' is not in the catalogue")
    assert rw.reason_group("compute: ambiguous: 21 GPU compute targets (a.tf#x, b.yaml#Pod/y) and 2 training workloads without one. Pin it in pyproject.toml:\n  [[tool.gpulint.workloads]]") == "compute: ambiguous: N GPU compute targets (...) and N training workloads without one"


def test_workload_stats_count_resolved_and_unresolved():
    wls = [
        {"name": "a", "compute": {"instance": "p4d.24xlarge"}, "unknown": []},
        {"name": "b", "compute": {"id": "x", "why_no_price": "x.yml#job names no instance type"}, "unknown": []},
        {"name": "c", "compute": None, "unknown": ["compute: no launcher, infrastructure file or config names the instance this runs on"]},
        {"name": "d", "computes": [{"resolution": {"instance": "g5.xlarge"}}]},
        {"name": "tests/test_e.py", "compute": {"id": "nb.ipynb#PyTorch@est", "device": "cpu",
                                                  "device_reason": "ml.c5.xlarge is a CPU family (c5)"}},
    ]
    s = rw.workload_stats(wls)
    assert (s["workloads"], s["with_compute"], s["resolved"], s["test_entrypoints"]) == (5, 4, 2, 1)
    assert s["devices"] == {"-": 3, "cpu": 1}
    assert s["unresolved_reasons"] == {"<where> names no instance type": 1,
                                       "compute: no launcher, infrastructure file or config names the instance this runs on": 1,
                                       "CPU compute: ml.c5.xlarge is a CPU family (...)": 1}


def record(findings, repos=("o/r",)):
    return {"repos": [{"repo": r, "workload_model": {"workloads": 1, "with_compute": 0, "resolved": 0}} for r in repos],
            "findings": findings}


def test_compare_counts_appeared_and_vanished_per_code_with_verdicts():
    old = [finding(), finding(), finding(line=9), finding(code="IO001", repo="gone/repo")]
    old[2]["verdict"] = "wrong"
    new = [finding(), finding(code="NET006")]
    diff = rw.compare(record(old, ("o/r", "gone/repo")), record(new))
    assert diff["only_old"] == ["gone/repo"]
    assert diff["per_code"]["AMP001"] == {"old": 3, "new": 1, "appeared": 0, "vanished": 2, "vanished_right": 0,
                                          "vanished_debatable": 0, "vanished_wrong": 1}
    assert diff["per_code"]["NET006"]["appeared"] == 1
    assert "IO001" not in diff["per_code"]  # its repository was not scanned by the new run


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_extract_writes_the_pinned_commit_and_skips_links(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    git = ["git", "-C", str(src), "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    (src / "train.py").write_text("v1\n")
    (src / "infra").mkdir()
    (src / "infra" / "main.tf").write_text("resource {}\n")
    (src / "link").symlink_to("/etc/passwd")
    subprocess.run(git + ["add", "-A"], check=True)
    subprocess.run(git + ["commit", "-qm", "one"], check=True)
    first = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    (src / "train.py").write_text("v2\n")
    subprocess.run(git + ["commit", "-qam", "two"], check=True)
    dest = tmp_path / "work" / "tree"
    dest.parent.mkdir()
    stats = rw.extract(src / ".git", first, dest)
    assert (dest / "train.py").read_text() == "v1\n"
    assert (dest / "infra" / "main.tf").is_file()
    assert not (dest / "link").exists()
    assert stats == {"written": 2, "missing": 0, "links_or_submodules": 1, "unsafe_paths": 0}
    assert json.loads((dest.parent / "tree.extracted.json").read_text())["commit"] == first
