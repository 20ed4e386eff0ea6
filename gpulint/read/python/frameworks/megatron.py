"""What Megatron-LM's ``pretrain`` trains in: fp32 unless its command line says ``--bf16`` / ``--fp16``.

Called by precision.py for the first ``pretrain`` call of the file.
"""
from __future__ import annotations

from typing import Any

from gpulint.read.python.common import Facts
from gpulint.read.python.index import Call


def precision(f: Facts, call: Call) -> None:
    """Megatron trains in fp32 unless its command line says --bf16 or --fp16 (megatron/training/arguments.py).
    ``args_defaults={...}`` of the file (given to pretrain or parse_and_validate_args) replaces a flag's default;
    one gpulint cannot read, or a --yaml-cfg launch, leaves the precision undecided."""
    defaults: dict[str, Any] = {"bf16": False, "fp16": False}
    for c in (c for c in f.ix.calls if c.has_kwarg("args_defaults")):
        given = f.val(c, "args_defaults")
        if not isinstance(given, dict):
            defaults = {"bf16": None, "fp16": None}
            break
        for key in defaults:
            if key in given:
                defaults[key] = given[key] if isinstance(given[key], bool) else None
    f.add("precision", {"mechanism": "megatron_cli", "dtype": None, "replaced_by": "--yaml-cfg",
                        "enabled": {k: {"cli_arg": f"--{k}", "default": v} for k, v in defaults.items()}},
          call.node, call.qualname)
