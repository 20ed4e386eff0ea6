"""Determined experiment configs -> compute and launch facts.

A Determined experiment YAML names what it runs (``entrypoint: model_def:CIFARTrial``, a trial class in
the experiment's folder, or a command such as ``python3 -m determined.launch.torch_distributed python3
train.py``) and how many GPUs each trial gets (``resources.slots_per_trial``, 1 by default; a slot is a
GPU on GPU agents). The cluster's machine type is not in the config (agents belong to resource pools set
up elsewhere), so the compute target has a GPU count and no instance.
"""
from __future__ import annotations

import re
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.kubernetes import FactSink, as_dict, as_int, emit_step, launches_from_script
from gpulint.read.yamlnodes import Doc

#: keys of other YAML dialects that may also say ``entrypoint`` (Kubernetes, Ray, SkyPilot, CI, Compose)
_FOREIGN_KEYS = ("apiVersion", "kind", "run", "setup", "jobs", "services", "steps", "stages", "runtime_env")
#: keys only an experiment config has beside its entrypoint
_EXPERIMENT_KEYS = ("searcher", "hyperparameters", "records_per_epoch", "min_validation_period", "min_checkpoint_period",
                    "max_restarts", "checkpoint_storage", "bind_mounts", "scheduling_unit", "profiling")
_TRIAL = re.compile(r"^\s*([A-Za-z_][\w.]*):([A-Za-z_]\w*)\s*$")
#: Determined's launch layers: ``python3 -m determined.launch.torch_distributed [opts] python3 train.py``
_LAYER = re.compile(r"^\s*python3?\s+-m\s+determined\.launch\.\w+\s+")


def looks_like_determined(doc: Doc) -> bool:
    data = doc.data
    if not isinstance(data, dict) or any(k in data for k in _FOREIGN_KEYS):
        return False
    return isinstance(data.get("entrypoint"), str) and any(k in data for k in _EXPERIMENT_KEYS + ("resources",))


def read_determined(docs: list[Doc], path: str) -> list[Fact]:
    facts: list[Fact] = []
    for n, doc in enumerate(d for d in docs if looks_like_determined(d)):
        facts += _read_experiment(doc, path, "experiment" if n == 0 else f"experiment#{n + 1}")
    return facts


def _slots(data: dict) -> tuple[Any, tuple]:
    res = as_dict(data.get("resources"))
    if "slots_per_trial" in res:
        return as_int(res.get("slots_per_trial")), ("resources", "slots_per_trial")
    return 1, ("entrypoint",)  # Determined's default: one slot per trial


def _run_samples(data: dict) -> int | None:
    """Samples one trial trains on, where the config decides it: ``searcher.max_length`` in records, in batches of
    ``hyperparameters.global_batch_size``, or in epochs of ``records_per_epoch``."""
    length = as_dict(as_dict(data.get("searcher")).get("max_length"))
    batch = as_dict(data.get("hyperparameters")).get("global_batch_size")
    batch = as_int(batch) if not isinstance(batch, dict) else None  # a searched range: undecided
    if as_int(length.get("records")) is not None:
        return as_int(length["records"])
    if as_int(length.get("batches")) is not None and batch:
        return as_int(length["batches"]) * batch
    if as_int(length.get("epochs")) is not None and as_int(data.get("records_per_epoch")):
        return as_int(length["epochs"]) * as_int(data["records_per_epoch"])
    return None


def _read_experiment(doc: Doc, path: str, target: str) -> list[Fact]:
    data = doc.data
    sink = FactSink(doc, path)
    samples = _run_samples(data)
    budget = {"run_samples": samples, "run_samples_at": sink.loc(("searcher", "max_length")).short()} if samples else {}
    name = data.get("name") if isinstance(data.get("name"), str) else target
    sink.add("compute.target", {"source": "determined", "provider": None, "resource": name, "role": "training"},
             ("entrypoint",), target)
    slots, at = _slots(data)
    pool = as_dict(data.get("resources")).get("resource_pool")
    attrs = {"slots_per_trial": slots, **({"resource_pool": pool} if isinstance(pool, str) else {})}
    # slots spread over the agents of a pool whose machines the config does not name: up to 8 fit one node
    if isinstance(slots, int) and 0 < slots <= 8:
        sink.add("compute.gpus_per_node", slots, at, target, attrs=attrs)
        sink.add("compute.node_count", 1, at, target, attrs={"assumed": "a trial of up to 8 slots on one agent"})
    elif isinstance(slots, int) and slots > 8:
        sink.add("compute.accelerator", {"type": "GPU", "count": slots}, at, target, attrs=attrs)
    entry = data["entrypoint"]
    command = _LAYER.sub("", entry)
    layer = command != entry
    # ``module:Class`` as the entrypoint, or behind a launch layer's --trial
    trial = _TRIAL.match(entry) or (re.search(r"--trial\s+([A-Za-z_][\w.]*):(\w+)", command) if layer else None)
    if trial:
        # the module is a file of the experiment's folder (the context directory)
        launch = {"tool": "determined", "script": trial.group(1).replace(".", "/") + ".py", "module": None, "args": [],
                  "nnodes": None, "nproc_per_node": None, "mixed_precision": None, "config_file": None,
                  "deepspeed_config": None, "wrapper": None}
        sink.add("launch", launch, ("entrypoint",), target, key="entrypoint",
                 attrs={"trial_class": trial.group(2), **({"determined_layer": True} if layer else {}), **budget})
        return sink.facts
    if layer:
        command = re.sub(r"^(?:--\S+(?:[ =](?!python)\S+)?\s+)*", "", command)  # the layer's own options
    for n, step in enumerate(launches_from_script(command)):
        emit_step(sink, ("entrypoint",), None, step, target, f"entrypoint[{n}]",
                  {**({"determined_layer": layer} if layer else {}), **budget})
    return sink.facts
