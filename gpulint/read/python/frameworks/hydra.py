"""Which config file a Hydra entry point composes: ``@hydra.main(config_path="conf", config_name="train")`` (and
NeMo's ``@hydra_runner``, which takes the same two arguments) names ``conf/train.yaml``, relative to the script;
and which Trainer it builds from that config: ``trainer = hydra.utils.instantiate(cfg.trainer)`` then
``trainer.fit(model, ...)`` (the lightning-hydra-template layout).

Called by precision.py (the pass that emits ``config_ref`` facts). The linker resolves the path against the
repository, follows the config's defaults list and applies a launcher's ``--config-name`` and ``key=value``
overrides; this module only reads the decorator's literal arguments. A config given only as a structured
schema (``config_name="TranscriptionConfig"`` with no ``config_path``) names no file: nothing is said.
"""
from __future__ import annotations

import posixpath

from gpulint.read.python.common import Facts
from gpulint.read.python.index import Call, dotted

#: decorators that compose a Hydra config for the function they wrap
HYDRA_MAIN = {"hydra.main", "nemo.core.config.hydra_runner", "nemo.core.config.hydra_runner.hydra_runner",
              "nemo.core.hydra_runner"}


#: Hydra's object builder: it builds what the config node's ``_target_`` names
INSTANTIATE = "hydra.utils.instantiate"


def instantiated_trainers(f: Facts) -> list[tuple[Call, Call]]:
    """(instantiate call, fit call): ``trainer = hydra.utils.instantiate(cfg.trainer, callbacks=...)`` then
    ``trainer.fit(model, ...)`` in the same function, the node named ``trainer``. Its ``_target_`` is the config's
    to say (a Lightning Trainer in the lightning-hydra-template layout): the fit is Lightning's, and the linked
    config's trainer section (gpulint.read.trainer_configs) says its precision, accelerator and devices; with no
    config linked nothing is said of them."""
    out = []
    built = [c for c in f.ix.calls_to(INSTANTIATE) if c.assigned_to]
    for fit in f.ix.method_calls("fit"):
        if fit.qualname != INSTANTIATE + "().fit":
            continue
        before = [c for c in built if c.scope == fit.scope and c.assigned_to == fit.receiver and c.order < fit.order]
        node = dotted(before[-1].node.args[0]) if before and before[-1].node.args else None
        if node and node.rpartition(".")[2] == "trainer":
            out.append((before[-1], fit))
    return out


def config_path(f: Facts, c: Call) -> str | None:
    """The config file a Hydra decorator names (``conf/train.yaml``, relative to the script), or None when its
    ``config_path`` or ``config_name`` is not a literal, or is absent (a structured config only)."""
    if not c.decorator:
        return None
    folder, name = f.val(c, "config_path", 0), f.val(c, "config_name", 1)
    if not isinstance(folder, str) or not isinstance(name, str) or not name or "$" in folder + name:
        return None
    if folder.startswith("pkg://") or posixpath.isabs(folder):
        return None  # a package's configs or a machine path: not a file of this repository
    if not name.endswith((".yaml", ".yml")):
        name += ".yaml"
    return posixpath.normpath(posixpath.join(folder, name))


def config_refs(f: Facts) -> None:
    for c in f.ix.calls_to(*HYDRA_MAIN):
        path = config_path(f, c)
        if path is not None:
            f.add("config_ref", {"kind": "hydra", "path": path}, c.node, "config_name")
