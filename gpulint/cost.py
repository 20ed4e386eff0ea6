"""Cost impact of a finding: the workload's hourly price times the avoidable
fraction, with the price's instance, region, date and source and the
assumption in one sentence. Never a figure without a known price."""
from __future__ import annotations

from gpulint.model import CostImpact
from gpulint.workloads import Workload


def price_basis(wl: Workload) -> str:
    c = wl.resolved.get("compute") or {}
    nodes = c.get("nodes") or 1
    count = f"{nodes} x " if nodes > 1 else ""
    return (f"{count}{c.get('instance')} at ${c.get('unit_usd_per_hour'):.2f}/h {c.get('capacity') or 'on-demand'} "
            f"({c.get('region')}, price as of {c.get('as_of')}; {c.get('price_source')})")


def avoidable(wl: Workload, fraction: float, assumption: str, confidence: str = "medium") -> CostImpact:
    """``fraction`` of the workload's hourly spend is avoidable under ``assumption``."""
    c = wl.resolved.get("compute") or {}
    price = c.get("usd_per_hour")
    if not price:
        why = c.get("why_no_price") or "no instance is known for this workload (no infrastructure, launcher or config names one)"
        return CostImpact(None, f"No price attached: {why}. {assumption}", "low")
    return CostImpact(round(price * fraction, 2), f"{price_basis(wl)}; {assumption}; so about {fraction:.0%} of each hour is avoidable.", confidence)


def unpriced(basis: str) -> CostImpact:
    return CostImpact(None, basis, "low")
