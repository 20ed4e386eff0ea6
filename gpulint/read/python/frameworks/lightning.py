"""What a Lightning Trainer's (or Fabric's) arguments say: its precision string, whether it asks for several
devices, and whether its step budget is a demo's.

Called by precision.py (``precision_value``), devices.py (``several_devices``) and benchmark.py
(``step_budget``), which choose the Trainer calls; this module only reads their arguments.
"""
from __future__ import annotations

from typing import Any

from gpulint.read.python.common import DEMO_MAX_STEPS, Facts
from gpulint.read.python.index import UNKNOWN, Call


def precision_value(p: Any) -> dict:
    """The precision fact of a Trainer's ``precision=`` value (``"bf16-mixed"``, ``"16"``, ``32``, ...; UNKNOWN
    when it is not a literal)."""
    if p is UNKNOWN:
        return {"mechanism": "lightning", "dtype": None, "enabled": None}
    s = str(p).lower()
    if s in ("32", "32-true", "64", "64-true", "transformer-engine-float32"):
        return {"mechanism": "lightning", "dtype": "fp32", "enabled": False}
    if "bf16" in s:
        return {"mechanism": "lightning", "dtype": "bf16", "enabled": True}
    if s.startswith("16") or "fp16" in s:
        return {"mechanism": "lightning", "dtype": "fp16", "enabled": True}
    if "transformer-engine" in s or "fp8" in s:
        return {"mechanism": "lightning", "dtype": "fp8", "enabled": True}
    return {"mechanism": "lightning", "dtype": None, "enabled": None}


#: Lightning strategies that spread one run over several devices
_LIGHTNING_MULTI = ("ddp", "fsdp", "deepspeed")


def several_devices(f: Facts, c: Call, gpus: Any) -> bool:
    """Does a Lightning Trainer ask for two or more devices (``devices=4``, ``gpus=8``, ``devices=-1`` for
    all of them, ``num_nodes=2``, a ddp/fsdp/deepspeed strategy)?"""
    devices = f.val(c, "devices") if f.present(c, "devices") else UNKNOWN
    nodes = f.val(c, "num_nodes") if f.present(c, "num_nodes") else UNKNOWN
    strategy = f.val(c, "strategy") if f.present(c, "strategy") else UNKNOWN
    count = lambda v: type(v) is int and (v > 1 or v == -1)  # noqa: E731 - -1 is every device of the machine
    if any(count(v) for v in (devices, gpus, nodes)):
        return True
    return isinstance(strategy, str) and strategy.lower().startswith(_LIGHTNING_MULTI)


def step_budget(f: Facts, c: Call) -> str | None:
    """A Lightning Trainer that runs a few steps at most: ``fast_dev_run=True`` (one batch), ``max_steps`` or
    ``limit_train_batches`` x ``max_epochs`` of DEMO_MAX_STEPS or fewer (a bug-report template, a smoke test)."""
    fast = f.val(c, "fast_dev_run")
    if fast is True or (type(fast) is int and fast > 0):
        return f"fast_dev_run={fast}"
    steps = f.val(c, "max_steps")
    if type(steps) is int and 0 < steps <= DEMO_MAX_STEPS:
        return f"{steps}-step budget (max_steps={steps})"
    batches, epochs = f.val(c, "limit_train_batches"), f.val(c, "max_epochs")
    if type(batches) is int and type(epochs) is int and 0 < batches * epochs <= DEMO_MAX_STEPS:
        return f"{batches * epochs}-step budget (limit_train_batches={batches}, max_epochs={epochs})"
    return None
