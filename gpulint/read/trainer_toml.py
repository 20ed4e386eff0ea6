"""Facts from torchtitan's TOML job configs (``--job.config_file llama3_8b.toml``): ``[training]
mixed_precision_param`` is the dtype FSDP computes in, ``[checkpoint] enable_checkpoint`` saves to ``folder`` and
resumes from the newest step found there, ``[activation_checkpoint] mode`` is activation checkpointing.

Recognised by its sections (``[job]`` with ``[training]`` or ``[checkpoint]``), not its name. Keys that are absent
say nothing: torchtitan's defaults change between releases. Positions come from the text (tomllib keeps none).
"""
from __future__ import annotations

import re
from typing import Any

from gpulint.core.model import Fact
from gpulint.core.sources import Source

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}
_SECTION = re.compile(r"^\s*\[\s*([A-Za-z0-9_.\-]+)\s*\]\s*(?:#.*)?$")


def _line(text: str, section: str, key: str) -> int:
    """The 1-based line of ``key = ...`` in ``[section]`` (the section's header line when the key is not found)."""
    current, header = None, 1
    for n, raw in enumerate(text.splitlines(), start=1):
        m = _SECTION.match(raw)
        if m:
            current = m.group(1)
            if current == section:
                header = n
            continue
        if current == section and re.match(rf"^\s*{re.escape(key)}\s*=", raw):
            return n
    return header


def is_torchtitan(d: Any) -> bool:
    return isinstance(d, dict) and isinstance(d.get("job"), dict) and any(
        isinstance(d.get(k), dict) for k in ("training", "checkpoint", "parallelism"))


def toml_facts(source: Source) -> list[Fact]:
    d = source.tree
    if not is_torchtitan(d):
        return []
    out: list[Fact] = []
    at = lambda section, key: source.loc(_line(source.text, section, key), 1)  # noqa: E731
    training = d.get("training") if isinstance(d.get("training"), dict) else {}
    if "mixed_precision_param" in training:
        word = training["mixed_precision_param"]
        dtype = _DTYPES.get(str(word).lower()) if isinstance(word, str) else None
        value = {"mechanism": "torchtitan_config", "dtype": dtype, "enabled": None if dtype is None else dtype != "fp32"}
        if dtype is None:
            value["undecided"] = f"training.mixed_precision_param is {word!r}, a dtype gpulint does not know"
        out.append(Fact("precision", value, at("training", "mixed_precision_param"), "training.mixed_precision_param"))
    ckpt = d.get("checkpoint") if isinstance(d.get("checkpoint"), dict) else {}
    if ckpt.get("enable_checkpoint") is True or ckpt.get("enable") is True:
        key = "enable_checkpoint" if "enable_checkpoint" in ckpt else "enable"
        folder = ckpt.get("folder") if isinstance(ckpt.get("folder"), str) else None
        out.append(Fact("checkpoint.save", {"via": "torchtitan_config", "dir": folder}, at("checkpoint", key), f"checkpoint.{key}"))
        # the checkpointer loads the newest step of its folder at start (load_step -1, the default)
        if ckpt.get("load_step", -1) == -1:
            out.append(Fact("checkpoint.resume", {"via": "torchtitan_config", "value": True}, at("checkpoint", key), f"checkpoint.{key}"))
    ac = d.get("activation_checkpoint") if isinstance(d.get("activation_checkpoint"), dict) else {}
    if isinstance(ac.get("mode"), str):
        out.append(Fact("grad_checkpointing", {"enabled": ac["mode"].lower() != "none", "via": "torchtitan activation_checkpoint"},
                        at("activation_checkpoint", "mode"), "activation_checkpoint.mode"))
    return out
