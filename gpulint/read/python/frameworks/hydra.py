"""Which config file a Hydra entry point composes: ``@hydra.main(config_path="conf", config_name="train")`` (and
NeMo's ``@hydra_runner``, which takes the same two arguments) names ``conf/train.yaml``, relative to the script.

Called by precision.py (the pass that emits ``config_ref`` facts). The linker resolves the path against the
repository, follows the config's defaults list and applies a launcher's ``--config-name`` and ``key=value``
overrides; this module only reads the decorator's literal arguments. A config given only as a structured
schema (``config_name="TranscriptionConfig"`` with no ``config_path``) names no file: nothing is said.
"""
from __future__ import annotations

import posixpath

from gpulint.read.python.common import Facts
from gpulint.read.python.index import Call

#: decorators that compose a Hydra config for the function they wrap
HYDRA_MAIN = {"hydra.main", "nemo.core.config.hydra_runner", "nemo.core.config.hydra_runner.hydra_runner",
              "nemo.core.hydra_runner"}


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
