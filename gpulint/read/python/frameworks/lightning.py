"""What a Lightning Trainer's (or Fabric's) arguments say: its precision string, whether it asks for several
devices, and whether its step budget is a demo's; and which LightningCLI calls fit a Trainer of their own.

Called by precision.py (``precision_value``), devices.py (``several_devices``), benchmark.py (``step_budget``)
and training.py / precision.py / devices.py (``cli_runs``), which choose the calls; this module only reads their
arguments. Trainer configs in YAML are read with the same words (gpulint.read.trainer_configs).
"""
from __future__ import annotations

from typing import Any

from gpulint.read.python.common import DEMO_MAX_STEPS, Facts
from gpulint.read.python.index import UNKNOWN, Call
from gpulint.read.python.names import LIGHTNING_CLI


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


def cli_runs(f: Facts) -> list[Call]:
    """``LightningCLI(Model)`` calls that run a subcommand (``python main.py fit --config x.yaml``): the CLI builds
    the Trainer from its config file and ``--trainer.*`` flags and fits it. ``run=False`` leaves the fitting to
    the file, which says so itself."""
    return [c for c in f.ix.calls_to(*LIGHTNING_CLI) if f.val(c, "run") is not False]


#: Lightning strategies that spread one run over several devices
_LIGHTNING_MULTI = ("ddp", "fsdp", "deepspeed")


def several_devices(f: Facts, c: Call, gpus: Any) -> bool:
    """Does a Lightning Trainer ask for two or more devices (``devices=4``, ``gpus=8``, ``devices=-1`` for
    all of them, ``num_nodes=2``, a ddp/fsdp/deepspeed strategy)?"""
    devices = f.val(c, "devices") if f.present(c, "devices") else UNKNOWN
    nodes = f.val(c, "num_nodes") if f.present(c, "num_nodes") else UNKNOWN
    strategy = f.val(c, "strategy") if f.present(c, "strategy") else UNKNOWN
    return asks_several(devices, gpus, nodes, strategy)


def device_count(f: Facts, c: Call, gpus: Any) -> int | None:
    """The GPUs per node a Trainer is told to use, when its ``devices=`` (or Lightning 1.x ``gpus=``) is a positive
    literal count; None for ``-1``/``"auto"`` (every device of the machine), a list, a flag or a config's value."""
    v = f.val(c, "devices") if f.present(c, "devices") else gpus if f.present(c, "gpus") else UNKNOWN
    return v if type(v) is int and v > 0 else None


def asks_several(devices: Any, gpus: Any, nodes: Any, strategy: Any) -> bool:
    """The same question of the values themselves (a Trainer call's, or a trainer config's keys): a count of two
    or more, -1 (every device of the machine), a list of two device ids or more, or a multi-device strategy."""
    def count(v: Any) -> bool:
        if isinstance(v, str) and v.strip().lstrip("-").isdigit():
            v = int(v)
        if isinstance(v, list):
            return len(v) > 1
        return type(v) is int and (v > 1 or v == -1)

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
