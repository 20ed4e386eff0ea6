"""Makefiles, cheaply: variable assignments for env names and recipe lines that launch training.

Each recipe line runs in its own shell, so it is scanned as a fresh shell
fragment after substituting literal make variables (`$(NNODES)`, `${NNODES}`).
`?=` and `!=` values depend on the caller's environment or a shell, so they
stay unknown; so does anything built from make functions.
"""
from __future__ import annotations

import re

from gpulint.core.model import Fact, Location
from gpulint.read.errors import ReadError
from gpulint.read.shell.scanner import ShellScanner

__all__ = ["read_makefile"]

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_ASSIGN = re.compile(r"^(?P<pre>\s*(?:(?:export|override)\s+)*)(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)\s*"
                     r"(?P<op>::=|:::=|:=|\?=|\+=|!=|=)\s*(?P<value>.*)$")
_REF = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}]")


def _logical_lines(text: str):
    """(first line number, text) with `\\` continuations joined and the newline kept for recipes."""
    lines = text.splitlines()
    k = 0
    while k < len(lines):
        start = k
        buf = [lines[k]]
        while buf[-1].endswith("\\") and not buf[-1].endswith("\\\\") and k + 1 < len(lines):
            k += 1
            buf.append(lines[k])
        k += 1
        yield start + 1, buf


def _expand(value: str, mvars: dict) -> str | None:
    """Substitute literal make variables; None when something stays unresolved."""
    def sub(m):
        v = mvars.get(m.group(1))
        if v is None:
            raise KeyError(m.group(1))
        return v

    try:
        out = _REF.sub(sub, value)
    except KeyError:
        return None
    if "$(" in out or "${" in out or re.search(r"\$[A-Za-z@<^*?%]", out.replace("$$", "")):
        return None
    return out.replace("$$", "$")


def read_makefile(text: str, path: str) -> list[Fact]:
    if not isinstance(text, str) or "\x00" in text:
        raise ReadError("Makefile is not text")
    mvars: dict[str, str] = {}
    facts: list[Fact] = []
    scanner = ShellScanner(path)
    for lineno, buf in _logical_lines(text):
        first = buf[0]
        if first.startswith("\t"):
            facts.extend(_recipe(scanner, lineno, buf, mvars))
            continue
        joined = " ".join(part[:-1] if part.endswith("\\") else part for part in buf)
        if joined.lstrip().startswith("#"):
            continue
        m = _ASSIGN.match(joined)
        if not m or ":" in m.group("pre"):
            continue
        name, op = m.group("name"), m.group("op")
        raw = re.sub(r"(?<!\\)#.*$", "", m.group("value")).strip()
        value = None if op in ("?=", "!=") else _expand(raw, mvars)
        if op == "+=" and value is not None:
            value = (mvars[name] + " " + value) if name in mvars else None
        if value is None:
            mvars.pop(name, None)
        else:
            mvars[name] = value
        if _ENV_NAME.match(name):
            col = len(m.group("pre")) + 1
            loc = Location(path, lineno, col, lineno, col + len(name))
            exported = "export" in m.group("pre").split()
            facts.append(Fact("env", {"name": name, "value": value}, loc, key=name,
                              attrs={"exported": exported, "instruction": "make"}))
    return facts


def _recipe(scanner: ShellScanner, lineno: int, buf: list[str], mvars: dict) -> list[Fact]:
    lines = [buf[0][1:]] + [b[1:] if b.startswith("\t") else b for b in buf[1:]]
    body = "\n".join(lines)
    stripped = body.lstrip("@-+ ")
    column = 2 + len(body) - len(stripped)  # the tab is column 1
    # `$(NAME)` -> `${NAME}` keeps columns; the shell side then sees make variables as its own.
    shell_text = _REF.sub(lambda m: "${" + m.group(1) + "}", stripped).replace("$$", "$")
    scanner.vars = dict(mvars)
    scanner.stack = []
    return scanner.feed(shell_text, lineno, column)
