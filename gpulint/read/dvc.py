"""DVC pipelines (``dvc.yaml``) -> launch and env facts, one target per stage.

Each stage's ``cmd`` (a string or a list of strings, each run in its own shell)
is read by the shell scanner; a launch carries ``attrs["stage"]``. DVC runs a
stage in its ``wdir`` (relative to the dvc.yaml's folder), so the paths of a
launch (script, config files) are joined to it: they stay relative to the
dvc.yaml's folder, like every launcher's. DVC's own ``${...}`` templating is
resolved from the file's inline ``vars`` when literal, otherwise unknown
(``foreach``/``matrix`` items, params.yaml values).
"""
from __future__ import annotations

import posixpath
import re
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.kubernetes import FactSink, dotted, emit_step, launches_from_script
from gpulint.read.yamlnodes import Doc

__all__ = ["looks_like_dvc", "read_dvc"]

_PATH_KEYS = ("script", "config_file", "deepspeed_config")


def looks_like_dvc(doc: Doc, path: str) -> bool:
    """DVC reads pipelines only from files named dvc.yaml."""
    return posixpath.basename(path) == "dvc.yaml" and isinstance(doc.data, dict) and isinstance(
        doc.data.get("stages"), dict)


def read_dvc(docs: list[Doc], path: str) -> list[Fact]:
    facts: list[Fact] = []
    for doc in docs:
        if not looks_like_dvc(doc, path):
            continue
        sink = FactSink(doc, path)
        variables = _inline_vars(doc.data.get("vars"))
        for name, stage in doc.data["stages"].items():
            if isinstance(stage, dict) and isinstance(name, (str, int)):
                _stage(sink, str(name), stage, variables)
        facts += sink.facts
    return facts


def _inline_vars(value: Any) -> dict:
    """``vars:`` entries given inline (dicts); file names (params.yaml) are not read here."""
    out: dict = {}
    for item in value if isinstance(value, list) else [value]:
        if isinstance(item, dict):
            out.update(item)
    return out


def _lookup(expr: str, variables: dict):
    node: Any = variables
    for part in expr.split("."):
        if isinstance(node, dict) and part in node:
            node = node[part]
        else:
            return None
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node) if isinstance(node, (str, int, float)) else None


def _interpolate(text: str, variables: dict) -> str:
    """DVC's ``${name}`` made shell: the literal value, or an unknown shell word."""
    def sub(m: re.Match) -> str:
        if m.group(0).startswith("\\"):
            return m.group(0)[1:]
        value = _lookup(m.group(1).strip(), variables)
        return value if value is not None else "${" + "_" * max(1, len(m.group(1))) + "}"

    return re.sub(r"\\?\$\{([^{}]*)\}", sub, text)


def _stage(sink: FactSink, name: str, stage: dict, variables: dict) -> None:
    base = ("stages", name)
    body = stage
    attrs: dict = {"stage": name}
    if isinstance(stage.get("do"), dict) and "foreach" in stage:
        body, base = stage["do"], base + ("do",)
        attrs["foreach"] = True
    elif "matrix" in stage:
        attrs["matrix"] = True
    wdir = body.get("wdir")
    wdir = wdir if isinstance(wdir, str) and "${" not in wdir else ("" if wdir is None else None)
    if wdir:
        attrs["wdir"] = wdir
    cmd = body.get("cmd")
    cmds = [(base + ("cmd",), cmd)] if isinstance(cmd, str) else [
        (base + ("cmd", i), c) for i, c in enumerate(cmd if isinstance(cmd, list) else []) if isinstance(c, str)]
    target = f"stages.{name}"
    for at, text in cmds:
        multi = "\n" in text
        for k, step in enumerate(launches_from_script(_interpolate(text, variables))):
            if step.launch is not None:
                step.launch = _in_wdir(step.launch, wdir)
            emit_step(sink, at, step.offset if multi else None, step, target, f"{dotted(at)}[{k}]", attrs)


def _in_wdir(launch: dict, wdir: str | None) -> dict:
    """Paths relative to the stage's wdir, made relative to the dvc.yaml's folder."""
    out = dict(launch)
    for key in _PATH_KEYS:
        value = out.get(key)
        if not isinstance(value, str) or value.startswith("/"):
            continue
        if wdir is None:
            out[key] = None  # the stage runs in a folder decided elsewhere
        elif wdir:
            out[key] = posixpath.normpath(posixpath.join(wdir, value))
    return out

