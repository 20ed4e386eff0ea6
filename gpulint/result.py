"""The outcome of one scan, as every report format and the language server read it."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from gpulint import __version__
from gpulint.model import Finding, Severity


@dataclass
class WorkloadSpend:
    workload: str
    instance: str | None
    usd_per_hour_price: float | None  # what the workload's compute costs per hour (all nodes)
    usd_per_hour_avoidable: float  # combined estimate of this workload's findings
    findings: int
    capacity: str | None = None  # the capacity the price is for: "spot" | "on-demand"


@dataclass
class ScanResult:
    root: str
    findings: list[Finding] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)  # as `gpulint workloads --format json`
    computes: list[dict[str, Any]] = field(default_factory=list)  # every compute target, resolved
    files_scanned: int = 0
    rules: list = field(default_factory=list)  # every known rule class (SARIF tool.driver)
    enabled: set[str] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)  # tracebacks for --verbose
    version: str = __version__
    hours_per_month: float = 730.0  # [tool.gpulint.pricing] hours-per-month: monthly figures of always-on spend

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
            out.append(WorkloadSpend(name, compute.get("instance"), price, round(avoidable, 2), len(fs),
                                     compute.get("price_capacity")))
        return out

    def summary(self) -> dict[str, Any]:
        return {
            "files": self.files_scanned,
            "findings": self.counts(),
            "workloads": len(self.workloads),
            "usd_per_hour_avoidable": round(sum(s.usd_per_hour_avoidable for s in self.spend()), 2),
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
