"""The outcome of one scan, as every report format and the language server read it."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gpulint import __version__
from gpulint.core.model import Finding, Severity


@dataclass
class WorkloadSpend:
    workload: str
    instance: str | None
    usd_per_hour_price: float | None  # what the workload's compute costs per hour (all nodes)
    usd_per_hour_avoidable: float  # combined estimate of this workload's findings
    findings: int
    capacity: str | None = None  # the capacity the price is for: "spot" | "on-demand"
    run_hours: float | None = None  # one run's time limit as the launcher states it (Slurm --time, SageMaker max_run)
    runs_per_month: float | None = None  # how often a scheduled job runs (a CronJob's schedule)

    def period(self, hours_per_month: float) -> tuple[float, str]:
        """The hours a period figure covers and its label: with a run's time limit and a schedule, a month of
        runs; with the limit alone, one run (both capped at a month); else a month of ``hours_per_month`` hours."""
        if self.run_hours and self.runs_per_month:
            hours = min(self.run_hours * self.runs_per_month, hours_per_month)
            return hours, f"per month ({self.runs_per_month:g} runs x {self.run_hours:g} h)"
        if self.run_hours:
            hours = min(self.run_hours, hours_per_month)
            return hours, f"per run ({hours:g} h)"
        return hours_per_month, "per month"


@dataclass
class DiffBase:
    """``--diff-base REF``: the findings were compared with a scan of the merge base."""

    ref: str
    commit: str  # the merge base of REF and HEAD
    base_findings: int  # findings at the merge base
    new: int  # findings whose fingerprints the merge base does not have (the ones reported)
    gone: int  # findings of the merge base that are no longer there
    usd_per_hour_base: float  # avoidable spend at the merge base
    usd_per_hour_head: float  # avoidable spend of the whole tree now
    usd_per_hour_new: float  # avoidable spend of the new findings, plus the increase of costlier ones
    costlier: dict[str, float] = field(default_factory=dict)  # fingerprint -> its $/h at the base, for findings that cost more now
    priced: list[Finding] = field(default_factory=list)  # the reported findings with the figures that make up the new spend

    def to_json(self) -> dict[str, Any]:
        return {"ref": self.ref, "commit": self.commit, "base_findings": self.base_findings, "new_findings": self.new,
                "costlier_findings": len(self.costlier), "gone_findings": self.gone,
                "usd_per_hour_avoidable_base": self.usd_per_hour_base, "usd_per_hour_avoidable_head": self.usd_per_hour_head,
                "usd_per_hour_avoidable_new": self.usd_per_hour_new}


@dataclass
class CostGate:
    """``--fail-on-cost USD``: the reported findings' avoidable spend against a limit."""

    limit: float
    total: float  # the summary's avoidable $/h (combined per workload)
    contributors: list[Finding] = field(default_factory=list)  # the priced findings that make it up

    @property
    def failed(self) -> bool:
        return self.total > self.limit

    def to_json(self) -> dict[str, Any]:
        return {"limit_usd_per_hour": self.limit, "usd_per_hour_avoidable": self.total, "failed": self.failed,
                "findings": [f.fingerprint for f in self.contributors]}


@dataclass
class ScanResult:
    root: str
    findings: list[Finding] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)  # as `gpulint workloads --format json`
    computes: list[dict[str, Any]] = field(default_factory=list)  # every compute target, resolved
    #: launches that name a repository script: {"named": N, "joined": N, "unjoined": [{where, command, why}]}
    launchers: dict[str, Any] = field(default_factory=dict)
    files_scanned: int = 0
    rules: list = field(default_factory=list)  # every known rule class (SARIF tool.driver)
    enabled: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)  # tracebacks for --verbose
    version: str = __version__
    hours_per_month: float = 730.0  # [tool.gpulint.pricing] hours-per-month: monthly figures of always-on spend
    diff_base: DiffBase | None = None
    cost_gate: CostGate | None = None
    fixable: tuple[int, int] = (0, 0)  # findings --fix would fix, and how many more --unsafe-fixes would
    fail_on: Severity = Severity.WARNING  # the severity gate of this run (JUnit failures)
    baseline: str | None = None  # the --baseline file this scan was filtered through
    baseline_hidden: int = 0  # findings that file hid

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for f in self.findings:
            out[f.severity.value] += 1
        return out

    def spend(self) -> list[WorkloadSpend]:
        """Avoidable spend per workload.

        Savings of several findings on one workload do not add up: fixing one
        shortens the hours the next one saves on. Each finding's saving is
        taken as a fraction of the workload's hourly price and the fractions
        are combined multiplicatively: 1 - prod(1 - s_i). Without a price the
        plain sum is shown.
        """
        by_wl: dict[str, list[Finding]] = defaultdict(list)
        for f in self.findings:
            if f.cost_impact.usd_per_hour:
                for name in f.affected:  # a finding shared by several workloads counts for each
                    by_wl[name].append(f)
        meta = {w.get("name"): w for w in self.workloads}
        out = []
        for name in sorted(by_wl):
            fs = by_wl[name]
            wl = meta.get(name, {})
            price = (wl.get("compute") or {}).get("usd_per_hour")
            if price:
                keep = 1.0
                for f in fs:
                    keep *= max(0.0, 1.0 - min(1.0, f.cost_impact.usd_per_hour / price))
                avoidable = price * (1.0 - keep)
            else:
                avoidable = sum(f.cost_impact.usd_per_hour for f in fs)
            compute = wl.get("compute") or {}
            out.append(WorkloadSpend(name, compute.get("instance") or _gpus(compute), price, round(avoidable, 2), len(fs),
                                     compute.get("price_capacity"), compute.get("run_hours"), compute.get("runs_per_month")))
        return out

    def avoidable_total(self) -> float:
        return round(sum(s.usd_per_hour_avoidable for s in self.spend()), 2)

    def priced(self) -> list[Finding]:
        """The findings that carry an avoidable figure and count in the summary's total."""
        return [f for f in self.findings if f.workload and f.cost_impact.usd_per_hour]

    def summary(self) -> dict[str, Any]:
        out = {
            "files": self.files_scanned,
            "findings": self.counts(),
            "workloads": len(self.workloads),
            "usd_per_hour_avoidable": self.avoidable_total(),
            "per_workload": [
                {
                    "workload": s.workload,
                    "instance": s.instance,
                    "usd_per_hour": s.usd_per_hour_price,
                    "usd_per_hour_avoidable": s.usd_per_hour_avoidable,
                }
                for s in self.spend()
            ],
        }
        if self.diff_base is not None:
            out["diff_base"] = self.diff_base.to_json()
        if self.cost_gate is not None:
            out["cost_gate"] = self.cost_gate.to_json()
        return out


def _gpus(compute: dict) -> str | None:
    """What a job priced per GPU-hour runs on, for a summary's instance column ("8x A100-SXM4-40GB")."""
    rate = compute.get("priced_per_gpu_hour")
    return f"{rate['gpus_per_node']}x {rate['gpu_model']}" if rate else None
