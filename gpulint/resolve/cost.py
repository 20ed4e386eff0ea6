"""Cost impact of a finding: the workload's hourly price times the avoidable
fraction, with the price's instance, region, date and source and the
assumption in one sentence. Never a figure without a known price."""
from __future__ import annotations

from gpulint.core.model import CostImpact, price_origin
from gpulint.resolve.results import ResolvedCompute
from gpulint.link.workloads import Workload


def compute_of(wl: Workload) -> ResolvedCompute | None:
    return wl.resolution.compute if wl.resolution is not None else None


def price_basis(target: Workload | ResolvedCompute) -> str:
    """"2 x p4d.24xlarge at $21.96/h spot (us-east-1, price as of ...; source)" for a priced compute."""
    c = compute_of(target) if isinstance(target, Workload) else target
    if c is None or c.price is None or not c.price.unit_usd_per_hour:
        return "no price is known"
    p = c.price
    count = f"{p.nodes} x " if p.nodes > 1 else ""
    what = c.instance_name
    if what is None and c.gpu_hour is not None:  # priced per GPU-hour: the GPUs a node holds, not a machine
        what = f"{c.gpus_per_node}x {c.gpu_hour.gpu_model}" if p.nodes <= 1 else f"({c.gpus_per_node}x {c.gpu_hour.gpu_model})"
    return f"{count}{what} at ${p.unit_usd_per_hour:.2f}/h {p.capacity} ({price_origin(p.region, p.as_of, p.source)})"


def avoidable(wl: Workload, fraction: float, assumption: str, confidence: str = "medium") -> CostImpact:
    """``fraction`` of the workload's hourly spend is avoidable under ``assumption``."""
    c = compute_of(wl)
    price = c.usd_per_hour if c is not None else None
    if not price:
        why = (c.why_no_price if c is not None else None) or \
            "no instance is known for this workload (no infrastructure, launcher or config names one)"
        return CostImpact(None, f"No price attached: {why}. {assumption}", "low")
    return CostImpact(round(price * fraction, 2), f"{price_basis(wl)}; {assumption}; so about {fraction:.0%} of each hour is avoidable.", confidence)


def unpriced(basis: str) -> CostImpact:
    return CostImpact(None, basis, "low")
