"""Facts from the config files of config-driven trainers, where precision, devices and checkpointing are keys of a
YAML file rather than arguments in Python:

- a Lightning ``trainer:`` section (a Hydra config, a LightningCLI ``--config`` file, a NeMo config), or a Hydra
  ``trainer/`` group file (``_target_: lightning.pytorch.Trainer``, or a file of a ``trainer/`` folder): its
  ``precision`` is the fact a ``Trainer(precision=...)`` call gives (frameworks.lightning.precision_value), its
  ``devices`` / ``num_nodes`` / ``accelerator`` / ``strategy`` are kept in ``config.trainer``;
- NeMo's ``exp_manager:`` section: ``create_checkpoint_callback`` saves, ``resume_if_exists`` resumes;
- a Hydra ``defaults:`` list (``config.hydra``): the group files the linker composes with the config.

A value that is an interpolation (``${oc.env:PRECISION}``, ``${trainer.precision}``) is decided when the config is
composed: the fact says so (enabled null, ``undecided``), it never guesses. Called by configs.config_facts for
documents no other config reader claims.
"""
from __future__ import annotations

import posixpath
from typing import Any

from gpulint.core.model import Fact
from gpulint.core.sources import Source
from gpulint.read.python.frameworks.lightning import asks_several, precision_value
from gpulint.read.yamlnodes import Doc

#: keys of a Lightning Trainer's arguments that say what it runs on and in what precision
TRAINER_KEYS = ("precision", "devices", "num_nodes", "accelerator", "strategy", "gpus")
#: ``_target_`` of a Hydra config that instantiates a Lightning Trainer
LIGHTNING_TARGETS = ("lightning.pytorch.Trainer", "lightning.pytorch.trainer.Trainer", "lightning.pytorch.trainer.trainer.Trainer",
                     "pytorch_lightning.Trainer", "pytorch_lightning.trainer.Trainer", "pytorch_lightning.trainer.trainer.Trainer",
                     "lightning.Trainer", "nemo.lightning.Trainer", "nemo.lightning.pytorch.trainer.Trainer")


def interpolated(v: Any) -> bool:
    """An OmegaConf interpolation (``${...}``): its value is decided when the config is composed."""
    return isinstance(v, str) and "${" in v


def _loc(source: Source, doc: Doc, path: tuple):
    line, col = doc.at(path)
    return source.loc(line, col)


def _trainer_section(source: Source, d: dict) -> tuple[dict | None, tuple]:
    """The Lightning Trainer arguments of a document and their key path: its ``trainer:`` section, or the whole
    document when it is a Hydra trainer group file."""
    t = d.get("trainer")
    if isinstance(t, dict) and any(k in t for k in TRAINER_KEYS if k != "strategy"):
        return t, ("trainer",)
    if str(d.get("_target_")) in LIGHTNING_TARGETS:
        return d, ()
    if posixpath.basename(posixpath.dirname(source.path)) == "trainer" and any(k in d for k in TRAINER_KEYS if k != "strategy"):
        return d, ()  # conf/trainer/gpu.yaml: Hydra puts the file's keys under trainer.
    return None, ()


def _plain(v: Any) -> Any:
    return v if isinstance(v, (int, str, bool)) or v is None else str(v)


def lightning_trainer(source: Source, doc: Doc) -> list[Fact]:
    d = doc.data
    t, base = _trainer_section(source, d)
    if t is None:
        return []
    values = {k: _plain(t[k]) for k in TRAINER_KEYS if k in t}
    out = [Fact("config.trainer", {"framework": "lightning", **values}, _loc(source, doc, base), "trainer")]
    out += _devices(source, doc, t, base)
    if "precision" in t:
        p = t["precision"]
        where = _loc(source, doc, base + ("precision",))
        if interpolated(p):
            value = {"mechanism": "lightning_config", "dtype": None, "enabled": None,
                     "undecided": f"trainer.precision is {p}, decided when the config is composed"}
        elif p is None:
            value = {"mechanism": "lightning_config", "dtype": None, "enabled": None,
                     "undecided": "trainer.precision is null here, set elsewhere (the command line or another config)"}
        else:
            value = {**precision_value(p), "mechanism": "lightning_config"}
        out.append(Fact("precision", value, where, "trainer.precision"))
    else:
        # Lightning's own default (32-true); the resolver counts it only for a Trainer built from the config
        # (``Trainer(**cfg.trainer)``), and only when no composed file or launch line sets the key
        out.append(Fact("precision", {"mechanism": "lightning_config", "dtype": "fp32", "enabled": False, "default": True},
                        _loc(source, doc, base), "trainer.precision"))
    return out


def _devices(source: Source, doc: Doc, t: dict, base: tuple) -> list[Fact]:
    """What the trainer runs on, as devices.py says it of a Trainer call: ``accelerator: cpu`` is the CPU; gpu,
    cuda, auto or no accelerator a GPU (auto: one if there is one), with ``several`` for two devices or more."""
    acc = t.get("accelerator", "auto")
    if any(interpolated(t.get(k)) for k in ("accelerator", "devices", "gpus")) or not isinstance(acc, str):
        return []
    where = _loc(source, doc, base + (("accelerator",) if "accelerator" in t else ()))
    if acc.lower() == "cpu":
        return [Fact("cpu_only", {"via": "lightning_config accelerator='cpu'"}, where, "trainer.accelerator")]
    if acc.lower() not in ("gpu", "cuda", "auto"):
        return []  # tpu, mps, hpu: other accelerators, not said here
    several = asks_several(t.get("devices"), t.get("gpus"), t.get("num_nodes"), t.get("strategy"))
    return [Fact("uses_gpu", {"via": "lightning_config", "auto": acc.lower() == "auto", **({"several": True} if several else {})},
                 where, "trainer.accelerator")]


def _true(v: Any) -> bool:
    return v is True or (isinstance(v, str) and v.lower() == "true")


def nemo_exp_manager(source: Source, doc: Doc) -> list[Fact]:
    """NeMo's ``exp_manager:`` section: the checkpoint callback it creates and whether it resumes."""
    em = doc.data.get("exp_manager")
    if not isinstance(em, dict):
        return []
    out = []
    folder = em.get("exp_dir") if isinstance(em.get("exp_dir"), str) and not interpolated(em.get("exp_dir")) else None
    if _true(em.get("create_checkpoint_callback")):
        out.append(Fact("checkpoint.save", {"via": "nemo_exp_manager", "dir": folder},
                        _loc(source, doc, ("exp_manager", "create_checkpoint_callback")), "exp_manager.create_checkpoint_callback"))
    if _true(em.get("resume_if_exists")):
        out.append(Fact("checkpoint.resume", {"via": "nemo_exp_manager", "value": True},
                        _loc(source, doc, ("exp_manager", "resume_if_exists")), "exp_manager.resume_if_exists"))
    return out


def hydra_defaults(source: Source, doc: Doc) -> list[Fact]:
    """A Hydra ``defaults:`` list: each static entry as {group, option} (a bare name is another config of the same
    folder: group ""). Entries whose option is an interpolation, ``???`` or null are left out: decided elsewhere."""
    defaults = doc.data.get("defaults")
    if not isinstance(defaults, list):
        return []
    entries = []
    for item in defaults:
        if isinstance(item, str) and item != "_self_" and not interpolated(item):
            entries.append({"group": "", "option": item})
        elif isinstance(item, dict) and len(item) == 1:
            [(key, option)] = item.items()
            if not isinstance(key, str) or not isinstance(option, str) or interpolated(option) or option == "???":
                continue
            words = key.split()
            if not words or words[0] not in ("override", "optional") and len(words) > 1:
                continue
            group = words[-1]
            group, _, package = group.partition("@")
            entries.append({"group": group, "option": option, **({"package": package} if package else {})})
    if not entries:
        return []
    return [Fact("config.hydra", {"defaults": entries}, _loc(source, doc, ("defaults",)), "defaults")]


def trainer_facts(source: Source, doc: Doc) -> list[Fact]:
    """Every fact of a config-driven trainer's document (nothing when it is none of theirs)."""
    if not isinstance(doc.data, dict):
        return []
    return hydra_defaults(source, doc) + lightning_trainer(source, doc) + nemo_exp_manager(source, doc)
