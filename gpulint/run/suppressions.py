"""Inline suppressions: ``# gpulint: ignore[AMP001]`` on the finding's line or
the line above, ``# gpulint: ignore-file[AMP001]`` anywhere in the file, and a
bare ``# gpulint: ignore`` for everything on that line. A suppression that
suppresses nothing is itself reported (SYS004)."""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field

from gpulint.core.model import Location

_DIRECTIVE = re.compile(r"gpulint:\s*(ignore-file|ignore)\b(?:\[([^\]]*)\])?")


@dataclass
class Suppression:
    line: int  # line of the comment (file line)
    column: int
    file_wide: bool
    codes: tuple[str, ...]  # empty = all codes
    loc: Location | None = None
    used: set = field(default_factory=set)  # codes (or "*") that matched a finding

    def covers(self, code: str) -> bool:
        return not self.codes or any(code == c or (code.startswith(c) and not c[-1:].isdigit()) for c in self.codes)


def parse_codes(text: str | None) -> tuple[str, ...]:
    if text is None:
        return ()
    return tuple(c.strip().upper() for c in text.split(",") if c.strip())


def find_suppressions(text: str, comment: tuple[str, ...], python: bool = False) -> list[tuple[int, int, bool, tuple[str, ...]]]:
    """(line, column, file_wide, codes) for every directive in a comment."""
    if "gpulint:" not in text or not comment:
        return []
    if python:
        return _python_comments(text)
    out = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if "gpulint:" not in line:
            continue
        for prefix in comment:
            idx = _comment_start(line, prefix)
            if idx < 0:
                continue
            m = _DIRECTIVE.search(line, idx)
            if m:
                out.append((lineno, idx + 1, m.group(1) == "ignore-file", parse_codes(m.group(2))))
                break
    return out


def _comment_start(line: str, prefix: str) -> int:
    """Index of a comment that starts outside quotes (a cheap lexer for YAML,
    shell, HCL, Dockerfile and TOML lines)."""
    quote = None
    i = 0
    while i < len(line):
        ch = line[i]
        if quote:
            if ch == "\\" and quote == '"':
                i += 2
                continue
            if ch == quote:
                quote = None
        elif ch in "\"'":
            quote = ch
        elif line.startswith(prefix, i) and (i == 0 or line[i - 1].isspace() or prefix != "#"):
            return i
        i += 1
    return -1


def _python_comments(text: str) -> list[tuple[int, int, bool, tuple[str, ...]]]:
    out = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.COMMENT:
                m = _DIRECTIVE.search(tok.string)
                if m:
                    out.append((tok.start[0], tok.start[1] + 1, m.group(1) == "ignore-file", parse_codes(m.group(2))))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        # a file that does not tokenize still gets its directives, line by line
        return find_suppressions(text, ("#",), python=False)
    return out


def is_suppressed(code: str, line: int, sups: list[Suppression]) -> Suppression | None:
    for s in sups:
        if (s.file_wide or s.line in (line, line - 1)) and s.covers(code):
            return s
    return None
