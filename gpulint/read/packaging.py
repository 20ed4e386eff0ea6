"""The repository's own packaging -> the console scripts it declares.

A launcher may start a training module through a command the package installs
(``fairseq-train`` = ``fairseq_cli.train:cli_main``). The declarations are read
statically: setup.py through ``ast`` (the literal ``entry_points`` of the
``setup(...)`` call, or a module-level name bound once to a literal; never
executed), pyproject.toml with tomllib (``[project.scripts]``,
``[tool.poetry.scripts]``) and setup.cfg with configparser
(``[options.entry_points] console_scripts``). Anything else (entry points built
by code, a file that does not parse) gives no fact.
"""
from __future__ import annotations

import ast
import configparser
import posixpath
import re

from gpulint.core.model import Fact, Location

__all__ = ["read_packaging", "read_pyproject", "read_setup_cfg", "read_setup_py", "NEEDS"]

#: a file declares console scripts only if it holds one of these
NEEDS = ("console_scripts", "scripts")

# `name = package.module:function [extra]` (the entry-point syntax; the object may be dotted: app.run)
_ENTRY = re.compile(r"^\s*([A-Za-z0-9][\w.+-]*)\s*=\s*([A-Za-z_][\w.]*)\s*(?::\s*([A-Za-z_][\w.]*))?\s*(?:\[[^\]]*\])?\s*$")


def _entry(text: str) -> dict | None:
    m = _ENTRY.match(text)
    if not m:
        return None
    return {"name": m.group(1), "module": m.group(2), "function": m.group(3)}


def _fact(value: dict, path: str, line: int, column: int = 1) -> Fact:
    return Fact("package.console_script", value, Location(path, line, column), key=value["name"])


# ---------------------------------------------------------------- setup.py

def read_setup_py(text: str, path: str) -> list[Fact]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return []  # the Python reader reports the syntax error
    # module-level names bound exactly once to a literal (`ENTRY_POINTS = {...}` then `setup(entry_points=ENTRY_POINTS)`)
    bound: dict[str, ast.AST] = {}
    twice: set[str] = set()
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
        for t in targets:
            if isinstance(t, ast.Name):
                if t.id in bound:
                    twice.add(t.id)
                bound[t.id] = node.value
    for name in twice:
        bound.pop(name, None)

    def literal(node: ast.AST | None, depth: int = 0) -> ast.AST | None:
        if isinstance(node, ast.Name) and depth < 3:
            return literal(bound.get(node.id), depth + 1)
        return node

    out: list[Fact] = []
    for call in ast.walk(tree):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
        if name != "setup":
            continue
        for kw in call.keywords:
            if kw.arg != "entry_points":
                continue
            eps = literal(kw.value)
            if isinstance(eps, ast.Dict):
                for k, v in zip(eps.keys, eps.values):
                    if isinstance(k, ast.Constant) and k.value == "console_scripts":
                        out += _entries_of(literal(v), path, literal)
            elif isinstance(eps, ast.Constant) and isinstance(eps.value, str):
                out += _ini_entries(eps.value, eps.lineno, path)  # entry_points="[console_scripts]\n..."
    return out


def _entries_of(node: ast.AST | None, path: str, literal) -> list[Fact]:
    """The entries of a console_scripts value: a list/tuple of strings, or one string of lines."""
    out: list[Fact] = []
    if isinstance(node, (ast.List, ast.Tuple)):
        for elt in node.elts:
            elt = literal(elt)
            if isinstance(elt, ast.Constant) and isinstance(elt.value, str):
                value = _entry(elt.value)
                if value:
                    out.append(_fact(value, path, elt.lineno, elt.col_offset + 1))
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        for k, line in enumerate(node.value.split("\n")):
            value = _entry(line) if line.strip() else None
            if value:
                out.append(_fact(value, path, node.lineno + k))
    return out


def _ini_entries(text: str, first_line: int, path: str) -> list[Fact]:
    out, section = [], ""
    for k, line in enumerate(text.split("\n")):
        s = line.strip()
        if s.startswith("[") and s.endswith("]"):
            section = s[1:-1].strip()
        elif section == "console_scripts" and s:
            value = _entry(s)
            if value:
                out.append(_fact(value, path, first_line + k))
    return out


# ---------------------------------------------------------------- pyproject.toml

def read_pyproject(text: str, path: str) -> list[Fact]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError, ValueError):
        return []  # the TOML parser reports it
    lines = text.split("\n")
    out: list[Fact] = []
    tables = (("project", "scripts"), ("tool", "poetry", "scripts"))
    for keys in tables:
        table = data
        for k in keys:
            table = table.get(k) if isinstance(table, dict) else None
        if not isinstance(table, dict):
            continue
        header = _header_line(lines, ".".join(keys))
        for name, ref in table.items():
            if not isinstance(ref, str):
                continue  # a poetry {reference, type = "file"} script is no module
            value = _entry(f"{name} = {ref}")
            if value:
                out.append(_fact(value, path, _key_line(lines, name, header)))
    return out


def _header_line(lines: list[str], dotted: str) -> int:
    pat = re.compile(r"^\s*\[\s*" + r"\s*\.\s*".join(re.escape(p) for p in dotted.split(".")) + r"\s*\]")
    return next((i for i, line in enumerate(lines) if pat.match(line)), -1)


def _key_line(lines: list[str], name: str, after: int) -> int:
    """The 1-based line where `name` is a key, searching from the table's header (or the whole file)."""
    pat = re.compile(r"""^\s*["']?""" + re.escape(name) + r"""["']?\s*=""")
    start = after + 1 if after >= 0 else 0
    for i in range(start, len(lines)):
        if pat.match(lines[i]):
            return i + 1
    inline = re.compile(r"""(?:^|[{,\s])["']?""" + re.escape(name) + r"""["']?\s*=""")
    return next((i + 1 for i, line in enumerate(lines) if inline.search(line)), max(after + 1, 1))


# ---------------------------------------------------------------- setup.cfg

def read_setup_cfg(text: str, path: str) -> list[Fact]:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
        raw = parser.get("options.entry_points", "console_scripts", fallback=None)
    except (configparser.Error, ValueError):
        return []
    if not raw:
        return []
    lines = text.split("\n")
    header = _header_line(lines, "options.entry_points")
    key = next((i for i in range(header + 1, len(lines)) if re.match(r"^\s*console_scripts\s*[=:]", lines[i])), header) \
        if header >= 0 else -1
    out: list[Fact] = []
    for entry in raw.split("\n"):
        value = _entry(entry) if entry.strip() else None
        if value:
            out.append(_fact(value, path, _key_line(lines, value["name"], key)))
    return out


def read_packaging(text: str, path: str) -> list[Fact]:
    """Console scripts of a setup.py, pyproject.toml or setup.cfg (by file name); other files give none."""
    name = posixpath.basename(path)
    if name == "setup.py":
        return read_setup_py(text, path)
    if name == "pyproject.toml":
        return read_pyproject(text, path)
    if name == "setup.cfg":
        return read_setup_cfg(text, path)
    return []
