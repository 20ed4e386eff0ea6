"""What transformers / TRL settings say: the facts of one ``TrainingArguments`` (or TRL ``*Config``) call, and
the precision of arguments parsed from the command line by ``HfArgumentParser`` / ``TrlParser``.

One TrainingArguments call holds the precision, the DeepSpeed config, tf32, the Trainer's data loader and
its checkpointing; precision.py calls ``training_arguments`` for each such call (in its place among the
precision mechanisms, so the facts keep their order) and ``parsed_arguments`` for each parser.
"""
from __future__ import annotations

import ast
from typing import Any

from gpulint.read.python.common import Facts, norm, qualified
from gpulint.read.python.frameworks import deepspeed
from gpulint.read.python.index import Call, elements

TRL_BF16_DEFAULT = "TRL >= 0.19 turns bf16 on when fp16 is not set; older releases train in fp32"


def parsed_arguments(f: Facts, c: Call) -> None:
    """The precision of TrainingArguments that ``HfArgumentParser(...)`` / ``TrlParser(...)`` reads from the
    command line: the launcher's ``--bf16`` / ``--fp16``."""
    # TrainingArguments parsed from the command line (or a JSON file the launcher passes); a TRL
    # config among the parsed classes defaults --bf16 to "not --fp16" (TRL >= 0.19)
    trl = any(q.startswith("trl.") and q.endswith("Config") for q in _parsed_classes(f, c)) or c.qualname == "trl.TrlParser"
    fact = {"mechanism": "hf_cli", "dtype": None,
            "enabled": {"bf16": {"cli_arg": "--bf16", "default": None if trl else False},
                        "fp16": {"cli_arg": "--fp16", "default": False}}}
    if trl:
        fact["undecided"] = TRL_BF16_DEFAULT
    f.add("precision", fact, c.node, c.qualname)


def _parsed_classes(f: Facts, c: Call) -> list[str]:
    """Qualified names of the dataclasses an HfArgumentParser(...) call parses."""
    first = c.positional(0) or c.kwarg("dataclass_types")
    items = elements(first)
    items = items if items is not None else [first] if first is not None else []
    out = []
    for node in items:
        q = qualified(f, node.value if isinstance(node, ast.Starred) else node)
        if q:
            out.append(q)
    return out


def training_arguments(f: Facts, c: Call) -> None:
    values: dict[str, Any] = {}
    for key in ("fp16", "bf16", "tf32", "gradient_checkpointing", "save_strategy", "save_steps", "deepspeed", "fsdp",
                "dataloader_num_workers", "dataloader_pin_memory", "resume_from_checkpoint", "output_dir", "optim",
                "per_device_train_batch_size", "half_precision_backend"):
        if f.present(c, key):
            values[key] = norm(f.val(c, key))
    star = f.opaque_kwargs(c)
    fp16, bf16 = values.get("fp16", False if not star else None), values.get("bf16", False if not star else None)
    trl_default = (c.qualname or "").startswith("trl.") and "bf16" not in values and fp16 is not True
    if trl_default:
        bf16 = None  # TRL >= 0.19 turns bf16 on when fp16 is not set; older releases train in fp32
    dtype, enabled = None, None
    if fp16 is True or bf16 is True:
        dtype, enabled = ("bf16" if bf16 is True else "fp16"), True
    elif fp16 is False and bf16 is False:
        dtype, enabled = "fp32", False
    elif isinstance(fp16, dict) or isinstance(bf16, dict):
        enabled = {"bf16": bf16, "fp16": fp16}  # decided by the launcher's flags
    fact = {"mechanism": "hf_args", "dtype": dtype, "enabled": enabled}
    if enabled is False and "fp16" not in values and "bf16" not in values:
        fact["default"] = True  # neither is written: fp32 is the default, not a choice the code makes
    if trl_default and enabled is None:
        fact["undecided"] = TRL_BF16_DEFAULT
    f.add("precision", fact, c.node, c.qualname or "TrainingArguments")
    f.add("config.hf_args", values, c.node, c.qualname or "TrainingArguments")
    ds = values.get("deepspeed")
    if isinstance(ds, str):
        f.add("config_ref", {"kind": "deepspeed", "path": ds}, c.node, "deepspeed")
    elif isinstance(ds, dict):
        deepspeed.config_precision(f, ds, c.node)
    if "tf32" in values:
        f.add("tf32", {"enabled": values["tf32"], "via": "TrainingArguments(tf32=...)"}, c.node, "tf32")
    if "dataloader_num_workers" in values or True:
        f.add("dataloader", {"num_workers": values.get("dataloader_num_workers", 0 if not star else None),
                             "pin_memory": values.get("dataloader_pin_memory", True if not star else None),
                             "num_workers_set": "dataloader_num_workers" in values, "pin_memory_set": True,
                             "via": "hf_trainer"}, c.node, "dataloader_num_workers")
    gc = values.get("gradient_checkpointing")
    if gc is not None:
        f.add("grad_checkpointing", {"enabled": gc, "via": "TrainingArguments"}, c.node, "gradient_checkpointing")
    ss = values.get("save_strategy")
    if ss is not None and not isinstance(ss, dict) and str(ss).lower() != "no":
        f.add("checkpoint.save", {"via": "hf_trainer", "dir": values.get("output_dir")}, c.node, "save_strategy")
    elif ss is None and not star:
        f.add("checkpoint.save", {"via": "hf_trainer", "dir": values.get("output_dir"), "default": True}, c.node, "save_strategy")
