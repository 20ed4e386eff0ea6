"""What a DeepSpeed config dict says about precision (its ``fp16`` / ``bf16`` sections).

The dict comes from ``deepspeed.initialize(config={...})`` (precision.py) or from
``TrainingArguments(deepspeed={...})`` (frameworks/hf.py); a config file is a ``config_ref`` read elsewhere.
"""
from __future__ import annotations

import ast

from gpulint.read.python.common import Facts


def config_precision(f: Facts, cfg: dict, node: ast.AST) -> None:
    fp16 = (cfg.get("fp16") or {}).get("enabled") if isinstance(cfg.get("fp16"), dict) else None
    bf16 = (cfg.get("bf16") or cfg.get("bfloat16") or {}) if isinstance(cfg.get("bf16") or cfg.get("bfloat16"), dict) else {}
    bf16 = bf16.get("enabled") if bf16 else None
    on = fp16 is True or bf16 is True or fp16 == "auto" or bf16 == "auto"
    f.add("precision", {"mechanism": "deepspeed", "dtype": "bf16" if bf16 is True else "fp16" if fp16 is True else None,
                        "enabled": True if on else (False if fp16 in (False, None) and bf16 in (False, None) else None)}, node, "deepspeed")
