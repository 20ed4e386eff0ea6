"""The supervised worker pool (gpulint/isolation.py) and the per-file unit of
work: pure, picklable, lazy, and the same whichever process computes it."""
from __future__ import annotations

import dataclasses
import os
import pickle
import signal
import time

import pytest

from conftest import FIXTURES
from gpulint.run import isolation
from gpulint.core.config import load_config
from gpulint.run.engine import FileResult, ScanRequest, Scanner, analyze_file
from gpulint.run.isolation import Budget, WorkersUnavailable, crash_reason, run_supervised
from gpulint.core.model import Fact, Finding
from gpulint.core.sources import Source


def _square(job):
    if job == "segv":
        os.kill(os.getpid(), signal.SIGSEGV)
    if job == "sleep":
        time.sleep(60)
    if job == "spin":
        while True:
            pass
    return job * job


def _failed(job, why):
    return ("failed", job, why)


@pytest.mark.parametrize("workers", [1, 3])
def test_results_crashes_and_timeouts(workers):
    out = list(run_supervised([1, 2, "segv", 3, "sleep", 4], _square, _failed, workers=workers, budget=Budget(timeout=1, stall_factor=3)))
    assert sorted(x for x in out if isinstance(x, int)) == [1, 4, 9, 16]
    failures = {x[1]: x[2] for x in out if isinstance(x, tuple)}
    assert failures.keys() == {"segv", "sleep"}
    assert failures["segv"].startswith("the parser crashed (SIGSEGV")
    # a worker stuck without using CPU is a stall, after stall_factor timeouts of wall-clock time
    assert failures["sleep"] == "parsing did not finish in 3 s (3 x file-timeout): stalled"


def test_cpu_time_is_the_budget():
    """A busy machine slows the wall clock, not the file: the budget is the worker's CPU time."""
    (out,) = run_supervised(["spin"], _square, _failed, budget=Budget(timeout=2, stall_factor=60))
    assert out == ("failed", "spin", "parsing took longer than 2 s of CPU time (file-timeout)")


def test_jobs_are_taken_only_when_a_worker_is_free():
    taken = []

    def jobs():
        for i in range(20):
            taken.append(i)
            yield i

    it = run_supervised(jobs(), _square, _failed, workers=2)
    first = next(it)
    assert first in (0, 1, 4) and len(taken) <= 3  # never every file's bytes at once
    assert sorted([first, *it]) == sorted(i * i for i in range(20))


def test_a_worker_whose_memory_grew_is_replaced_and_nothing_is_lost():
    out = list(run_supervised(range(10), _square, _failed, workers=2, budget=Budget(recycle_mb=1)))  # every worker recycles
    assert sorted(out) == [i * i for i in range(10)]


def test_no_workers_at_all_is_reported_with_the_jobs_not_done(monkeypatch):
    def no_fork(*a, **k):
        raise OSError("fork not permitted")

    monkeypatch.setattr(isolation, "_Worker", no_fork)
    with pytest.raises(WorkersUnavailable) as err:
        list(run_supervised([1, 2], _square, _failed))
    assert err.value.jobs == [1]  # taken but not done; the rest is still in the iterator


def test_the_scan_falls_back_to_this_process_when_no_worker_starts(monkeypatch, host):
    root = FIXTURES / "pytorch-fp32-loop"
    cfg = load_config(None, root)
    expected = [f.to_json() for f in Scanner(host, cfg).scan(ScanRequest(paths=[root]))[0].findings]
    monkeypatch.setattr(isolation, "_Worker", lambda *a, **k: (_ for _ in ()).throw(OSError("no fork")))
    got = [f.to_json() for f in Scanner(host, cfg).scan(ScanRequest(paths=[root]))[0].findings]
    assert got == expected and got


def test_crash_reasons_name_the_signal():
    assert crash_reason(-signal.SIGSEGV).startswith("the parser crashed (SIGSEGV: a segmentation fault")
    assert crash_reason(-signal.SIGKILL).startswith("the parser crashed (SIGKILL")
    assert crash_reason(3) == "the parser process exited unexpectedly (exit code 3)"


# -- the unit of work ------------------------------------------------------------------------------------------------
def test_per_file_results_hold_facts_and_findings_only(host):
    """Parse trees and texts are never kept: a scan's memory does not grow with the repository (issue 10 item 13)."""
    assert "source" not in {f.name for f in dataclasses.fields(FileResult)}
    scanner = Scanner(host, load_config(None, FIXTURES / "wl-k8s-efa"))
    scanner.scan(ScanRequest(paths=[FIXTURES / "wl-k8s-efa"], cache=False))  # a reused scan keeps no per-file facts
    allowed = (str, int, float, bool, type(None), Fact, Finding, tuple, list, dict)

    def walk(value):
        assert not isinstance(value, Source) and type(value).__module__.split(".")[0] != "libcst", type(value)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            for f in dataclasses.fields(value):
                walk(getattr(value, f.name))
        elif isinstance(value, dict):
            for k, v in value.items():
                walk(k)
                walk(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                walk(v)

    for res in scanner.last_results.values():
        walk(res)
        pickle.dumps(res)
        assert all(isinstance(f, allowed) for f in res.facts)


def test_the_unit_of_work_is_the_same_in_a_worker_and_in_process(host):
    scanner = Scanner(host, load_config(None, FIXTURES / "wl-k8s-efa"))
    scanner.scan(ScanRequest(paths=[FIXTURES / "wl-k8s-efa"], cache=False))  # a reused scan keeps no per-file facts
    rules = scanner.rules()
    for rel, res in scanner.last_results.items():
        data = (FIXTURES / "wl-k8s-efa" / rel).read_bytes()
        here = analyze_file(rel, data, res.kind, host.registry, scanner.config, rules, force=True)
        if res.parsed and not res.skipped:
            assert here.facts == res.facts and here.findings == res.findings
