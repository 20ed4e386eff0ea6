"""Which config files a Hydra entry point composes, as far as the repository and its launchers say.

``@hydra.main(config_path="conf", config_name="train")`` names ``conf/train.yaml`` beside the script (the
``config_ref`` of kind ``hydra`` the Python reader emits). A launcher may choose another one
(``--config-name big``, ``-cn big``, ``--config-path ../other``) and other group options (``trainer=gpu``); the
config's ``defaults:`` list (the ``config.hydra`` fact) names the group files composed with it. Every launcher
of the workload has to agree, else nothing is linked and the workload says the config is unknown: what a run
composes is then decided at run time. Key overrides (``trainer.precision=bf16-mixed``) are not applied here:
the resolver reads them from the launchers (gpulint.resolve.precision).

Pure functions of paths, facts and launcher arguments; the linker (workloads.py) attaches what they return.
"""
from __future__ import annotations

import posixpath
import re
from typing import Callable, Iterable

from gpulint.core.model import Fact

#: at most this many nested defaults lists are followed (a group file's own defaults)
_MAX_DEPTH = 4
_CHOOSERS = {"--config-name": "name", "-cn": "name", "--config-path": "path", "-cp": "path"}


def _flag_values(args: list, flags: dict[str, str]) -> dict[str, str]:
    """The value each of ``flags`` (flag -> what it chooses) is given on a launch line, as ``--flag v`` or
    ``--flag=v``; "" for a flag with no word after it. A later flag of the same choice wins."""
    out: dict[str, str] = {}
    for i, a in enumerate(args):
        if not isinstance(a, str):
            continue
        flag, eq, value = a.partition("=")
        if flag in flags:
            if not eq:
                value = args[i + 1] if i + 1 < len(args) and isinstance(args[i + 1], str) else ""
            out[flags[flag]] = value
    return out


def _chosen(args: list) -> dict[str, str | None]:
    """The ``--config-name`` / ``--config-path`` a launch passes ({"name": ..., "path": ...}; None: not literal)."""
    return {k: v if v and "$" not in v else None for k, v in _flag_values(args, _CHOOSERS).items()}


def _search_dir(args: list) -> str | None:
    """The folder a launch adds to Hydra's search path (``--config-dir D`` / ``-cd D``): None without one, "" when
    no word follows it."""
    return _flag_values(args, {"--config-dir": "dir", "-cd": "dir"}).get("dir")


def _yaml(name: str) -> str:
    return name if name.endswith((".yaml", ".yml")) else name + ".yaml"


def primary_config(ref: Fact, launchers: list[Fact], exists: Callable[[str], bool]) -> tuple[str | None, str]:
    """The primary config a workload composes (or None) and why: the decorator's, or the one every launcher
    chooses with ``--config-name`` / ``--config-path``."""
    script_dir = posixpath.dirname(ref.loc.path)
    default = posixpath.normpath(posixpath.join(script_dir, ref.value["path"]))
    default_dir, default_name = posixpath.split(default)
    picks = set()
    for launch in launchers:
        chosen = _chosen(launch.value.get("args") or [])
        if None in chosen.values():
            return None, f"{launch.loc.short()} chooses the Hydra config from a value read at run time"
        name = _yaml(chosen["name"]) if "name" in chosen else default_name
        if "path" not in chosen:
            pick = posixpath.normpath(posixpath.join(default_dir, name))
        else:
            # --config-path is relative to the script (Hydra's rule) or, as often written, to where the launcher runs
            cands = [posixpath.normpath(posixpath.join(d, chosen["path"], name))
                     for d in (script_dir, posixpath.dirname(launch.loc.path), "")]
            found = [c for c in cands if exists(c)]
            pick = found[0] if found else cands[0]
        extra = _search_dir(launch.value.get("args") or [])
        if extra is not None:
            # --config-dir adds a folder to the search path (relative to where the run starts): a name found there
            # as well as in the primary folder is one Hydra's search order decides, not the repository
            if not extra or "$" in extra or "`" in extra:
                return None, f"{launch.loc.short()} adds a Hydra config folder read at run time (--config-dir)"
            added = [c for c in dict.fromkeys(posixpath.normpath(posixpath.join(d, extra, name))
                                               for d in (posixpath.dirname(launch.loc.path), "")) if exists(c)]
            held = sorted({*added, *([pick] if exists(pick) else [])})
            if len(held) > 1:
                return None, f"{launch.loc.short()} composes {name}, which both {' and '.join(held)} hold"
            pick = held[0] if held else pick
        picks.add(pick)
    if len(picks) > 1:
        return None, f"its launchers compose different Hydra configs ({', '.join(sorted(picks))})"
    path = picks.pop() if picks else default
    if not exists(path):
        return None, f"the Hydra config {path} is not a file of the repository"
    why = f"code: {ref.loc.short()} composes it (Hydra config_path and config_name)" if path == default else \
        f"launcher: {', '.join(l.loc.short() for l in launchers)} composes it (--config-name/--config-path/--config-dir)"
    return path, why


def _group_choice(launchers: list[Fact], group: str) -> tuple[bool, str | None]:
    """(decided, option): the ``group=option`` every launcher passes (decided, option), none passes it
    (decided, None), or they differ / one reads it at run time (not decided)."""
    seen = set()
    for launch in launchers:
        option = None
        for a in launch.value.get("args") or []:
            if isinstance(a, str) and not a.startswith("-"):
                key, eq, value = a.lstrip("+").partition("=")
                if eq and key == group:
                    option = value
        if option is not None and "$" in option:
            return False, None
        seen.add(option)
    if len(seen) > 1:
        return False, None
    return True, (seen.pop() if seen else None)


def composed(primary: str, facts_of: Callable[[str], list[Fact]], launchers: list[Fact],
             exists: Callable[[str], bool]) -> list[tuple[str, str]]:
    """The group files the primary config's defaults list (and theirs, nested) composes with it, with why: each
    static entry whose file is in the repository, with the option the launchers choose (``trainer=gpu``)."""
    root = posixpath.dirname(primary)
    out: list[tuple[str, str]] = []
    todo = [(primary, 0)]
    while todo:
        path, depth = todo.pop(0)
        here = posixpath.dirname(path)
        for f in facts_of(path):
            if f.kind != "config.hydra":
                continue
            for entry in f.value.get("defaults") or []:
                group, option = entry.get("group", ""), entry.get("option")
                if group:
                    decided, chosen = _group_choice(launchers, group.lstrip("/"))
                    if not decided:
                        continue
                    option = chosen or option
                if not isinstance(option, str) or option in ("null", "???"):
                    continue
                folder = posixpath.join(root, group[1:]) if group.startswith("/") else posixpath.join(here, group)
                cand = posixpath.normpath(posixpath.join(folder, _yaml(option)))
                if cand != primary and exists(cand) and cand not in [p for p, _ in out]:
                    out.append((cand, f"the defaults list of {path} ({f.loc.short()}) composes {group or 'it'}: {option}"))
                    if depth + 1 < _MAX_DEPTH:
                        todo.append((cand, depth + 1))
    return out


#: how a program that is Hydra's own entry point (fairseq-hydra-train) is told its primary config: a folder added to
#: the search path (--config-dir / -cd, or --config-path / -cp) and a name in it (--config-name / -cn)
_PROGRAM_CHOOSERS = {"--config-dir": "dir", "-cd": "dir", "--config-path": "dir", "-cp": "dir",
                     "--config-name": "name", "-cn": "name"}
#: a leading run-time part of a folder: ``$ROOT/``, ``${HOME}/x/``, ``$(pwd)/``, ```pwd`/``, an absolute path of the
#: machine it runs on
_RUN_TIME_PREFIX = re.compile(r"^(?:.*(?:\$\{?\w+\}?|\$\([^()]*\)|`[^`]*`)(?:/|$)|/)")


def program_config(args: list, bases: list[str], files: Iterable[str]) -> tuple[str | None, str]:
    """The primary config a Hydra program launched from the command line composes (not a decorator of the
    repository: the program's own config folder is not the repository's), and why; (None, why) when the launch
    names no config of the repository or chooses it at run time. ``bases``: the folders the launch runs in, first
    the likeliest (where the launcher is, where it cds to, the repository root); ``files`` the repository's YAML
    files. A folder written with a run-time part (``$ROOT/conf``, ``/workspace/proj/conf``) is the one folder of
    the repository that ends like its literal rest, if exactly one does."""
    chosen = _flag_values(args, _PROGRAM_CHOOSERS)
    name, folder = chosen.get("name"), chosen.get("dir")
    if not name:
        return None, "no --config-name: it composes the program's own config"
    if "$" in name or "{" in name:
        return None, f"--config-name {name} is decided at run time"
    name = _yaml(name)
    if folder is None:
        return None, f"no --config-dir: {name} is one of the program's own configs"
    files = set(files)
    rest = _RUN_TIME_PREFIX.sub("", folder)
    if rest == folder:  # a literal folder, relative to where the launch runs
        for base in bases:
            cand = posixpath.normpath(posixpath.join(base, folder, name))
            if cand in files:
                return cand, f"--config-dir {folder} --config-name {name}"
        # run from a folder the repository does not say (a README's "cd multi_target && bash scripts/train.sh"):
        # the one folder of the repository that ends like it, as for a run-time prefix
    parts = [p for p in rest.split("/") if p and p != "."]
    if "$" in rest or "{" in rest or not parts:
        return None, f"--config-dir {folder} is decided at run time"
    # the longest literal tail of the folder that a folder of the repository ends in: /fsx/me/proj/conf/ft is the
    # checkout's conf/ft wherever it was cloned
    for k in range(len(parts)):
        tail = posixpath.join(*parts[k:], name)
        found = sorted(p for p in files if p == tail or p.endswith("/" + tail))
        if len(found) == 1:
            return found[0], (f"--config-dir {folder} --config-name {name} (the one folder of the repository "
                              f"ending in {posixpath.dirname(tail)})")
        if found:
            return None, f"--config-dir {folder} may be any of {len(found)} folders ending in {posixpath.dirname(tail)}"
    return None, f"--config-dir {folder} is not a folder of the repository (decided where it runs)"


def overrides(args: list) -> dict[str, dict[str, str]]:
    """A Hydra launch's key overrides by group: ``common.fp16=true`` and ``+checkpoint.save_dir=x`` ->
    {"common": {"fp16": "true"}, "checkpoint": {"save_dir": "x"}} (``++`` forces, ``+`` adds; both set the key)."""
    out: dict[str, dict[str, str]] = {}
    for a in args:
        if not isinstance(a, str) or a.startswith(("-", "~")):
            continue
        key, eq, value = a.lstrip("+").partition("=")
        group, dot, name = key.partition(".")
        if eq and dot and group and name and "." not in name:
            out.setdefault(group, {})[name] = value
    return out
