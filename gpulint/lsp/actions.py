"""Code actions: inline suppression comments and (when a finding carries one) quick fixes.

A suppression is only offered where inserting the comment cannot change what
the file means: never inside a string, a heredoc or after a line
continuation. Where the end of the finding's line is not safe, the comment
goes on a line of its own above (``gpulint: ignore`` covers its own line and
the next); where neither is safe, only the file-wide suppression is offered.
Dockerfiles only know comments at the start of a line (``ENV A=1 # x`` makes
``# x`` part of the value), so theirs always go above. JSON has no comments
and notebooks keep code in JSON strings: neither gets a comment action.
"""
from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass
from typing import Sequence

from gpulint.run.suppressions import parse_codes

_LINE_DIRECTIVE = re.compile(r"gpulint:\s*ignore\[([^\]]*)\]")
_FILE_DIRECTIVE = re.compile(r"gpulint:\s*ignore-file\[([^\]]*)\]")
_CODING = re.compile(r"^[ \t\f]*#.*?coding[:=]")
_DOCKER_DIRECTIVE = re.compile(r"^#\s*[A-Za-z_]+\s*=")
_HEREDOC = re.compile(r"(?<!<)<<-?\s*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?")

#: file kinds whose comments are whole lines only
OWN_LINE_ONLY = {"dockerfile"}
NO_COMMENTS = {"json", "notebook"}


@dataclass(frozen=True)
class Edit:
    """A text edit in 0-based lines and code-point columns (converted to the
    client's position encoding by the server)."""

    start_line: int
    start_char: int
    end_line: int
    end_char: int
    text: str


def newline_of(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n"


def _prefix(comment: Sequence[str]) -> str:
    return comment[0]


def _extend(line_no: int, line: str, m: re.Match, code: str) -> Edit | None:
    codes = parse_codes(m.group(1))
    if code in codes:
        return None
    new = ", ".join((*codes, code))
    return Edit(line_no, m.start(1), line_no, m.end(1), new)


def _comment_directive(line: str, prefix: str, pattern: re.Pattern) -> re.Match | None:
    """A directive inside a comment of the line (not inside a string before it)."""
    from gpulint.run.suppressions import _comment_start

    idx = _comment_start(line, prefix)
    return pattern.search(line, idx) if idx >= 0 else None


def _continues(line: str) -> bool:
    return line.rstrip("\r\n").endswith("\\")


def _heredoc_lines(lines: Sequence[str]) -> set[int]:
    """0-based lines inside heredoc bodies (shell, Terraform, Dockerfile), terminators included."""
    inside: set[int] = set()
    term: str | None = None
    for i, line in enumerate(lines):
        if term is not None:
            inside.add(i)
            if line.strip() == term:
                term = None
            continue
        m = _HEREDOC.search(line)
        if m and "#" not in line[: m.start()]:
            term = m.group(1)
    return inside


def _toml_multiline(lines: Sequence[str]) -> set[int]:
    inside: set[int] = set()
    delim: str | None = None
    for i, line in enumerate(lines):
        if delim is not None:
            inside.add(i)
        for m in re.finditer(r'"""|\'\'\'', line):
            if delim is None:
                delim = m.group(0)
            elif m.group(0) == delim:
                delim = None
        if delim is not None and i not in inside:
            inside.add(i)  # the line that opens the string ends inside it
    return inside


def _python_unsafe(text: str) -> tuple[set[int], set[int]] | None:
    """(lines whose end is inside a string, lines strictly inside a string), 0-based;
    None when the file does not tokenize (then only continuation rules apply)."""
    ends_inside: set[int] = set()
    strictly: set[int] = set()
    try:
        fstarts: list[int] = []  # Python 3.12+ splits f-strings into START/MIDDLE/END tokens
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == getattr(tokenize, "FSTRING_START", -1):
                fstarts.append(tok.start[0])
                continue
            if tok.type == getattr(tokenize, "FSTRING_END", -1) and fstarts:
                first = fstarts.pop()
            elif tok.type == tokenize.STRING:
                first = tok.start[0]
            else:
                continue
            s, e = first - 1, tok.end[0] - 1
            ends_inside.update(range(s, e))
            strictly.update(range(s + 1, e + 1))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return ends_inside, strictly


def line_suppression(kind: str, comment: Sequence[str], text: str, line: int, code: str) -> Edit | None:
    """The edit that suppresses `code` on 0-based `line`, or None when no safe one exists."""
    if kind in NO_COMMENTS or not comment:
        return None
    lines = text.splitlines()
    if line >= len(lines):
        return None
    prefix = _prefix(comment)
    cur = lines[line]
    # an existing directive on the line, or on a comment line just above, takes the code
    for ln in (line, line - 1):
        if ln < 0:
            continue
        target = lines[ln]
        if ln != line and not target.lstrip().startswith(prefix):
            continue
        m = _comment_directive(target, prefix, _LINE_DIRECTIVE)
        if m:
            return _extend(ln, target, m, code)
    nl = newline_of(text)
    directive = f"{prefix} gpulint: ignore[{code}]"
    indent = cur[: len(cur) - len(cur.lstrip())]
    above = Edit(line, 0, line, 0, f"{indent}{directive}{nl}")
    prev_continues = line > 0 and _continues(lines[line - 1])
    if kind in ("shell", "terraform", "dockerfile", "makefile") and line in _heredoc_lines(lines):
        return None
    if kind == "toml" and line in _toml_multiline(lines):
        return None
    if kind in OWN_LINE_ONLY:
        return above
    append = Edit(line, len(cur.rstrip()), line, len(cur), f"  {directive}")
    if kind == "python":
        unsafe = _python_unsafe(text)
        if unsafe is not None:
            ends_inside, strictly = unsafe
            if line in strictly:
                return None
            if line in ends_inside:
                return None if prev_continues else above
    if _continues(cur):
        return None if prev_continues else above
    return append


def file_suppression(kind: str, comment: Sequence[str], text: str, code: str) -> Edit | None:
    """The edit that suppresses `code` in the whole file, or None (JSON, notebooks)."""
    if kind in NO_COMMENTS or not comment:
        return None
    prefix = _prefix(comment)
    lines = text.splitlines()
    heredocs = _heredoc_lines(lines) if kind in ("shell", "terraform", "dockerfile", "makefile") else set()
    for i, line in enumerate(lines):
        if i in heredocs:
            continue
        m = _comment_directive(line, prefix, _FILE_DIRECTIVE)
        if m:
            return _extend(i, line, m, code)
    at = 0
    if lines and lines[0].startswith("#!"):
        at = 1
    if kind == "python":
        while at < min(2, len(lines)) and _CODING.match(lines[at]):
            at += 1
    if kind == "dockerfile":
        while at < len(lines) and _DOCKER_DIRECTIVE.match(lines[at]):
            at += 1  # parser directives must stay first, before any comment
    nl = newline_of(text)
    return Edit(at, 0, at, 0, f"{prefix} gpulint: ignore-file[{code}]{nl}")


@dataclass(frozen=True)
class FixEdit:
    """One replacement of a quick fix, in 0-based lines and code-point columns of file `path`."""

    path: str
    start_line: int
    start_char: int
    end_line: int
    end_char: int
    text: str


@dataclass(frozen=True)
class QuickFix:
    title: str
    edits: tuple[FixEdit, ...]
    safe: bool


def finding_fix(finding, read, kind_of) -> QuickFix | None:
    """The finding's fix (``gpulint.core.fixes``) as editor edits against the text the editor has now.

    `read(path)` gives a file's current text (the unsaved buffer when open),
    `kind_of(path)` its file kind; paths are relative to the scan root. A fix
    that no longer applies (the code changed since the scan) is not offered.
    Unsafe fixes are offered too, as `gpulint scan --fix --unsafe-fixes`
    would apply them: the user picks each one, and the title says it may
    change behaviour.
    """
    from gpulint.core.fixes import FixError, Materializer, line_col

    fix = getattr(finding, "fix", None)
    if fix is None:
        return None
    try:
        edits = Materializer(read, kind_of).edits(fix)
    except FixError:
        return None
    out = []
    for e in edits:
        text = read(e.path) or ""
        sl, sc = line_col(text, e.start)
        el, ec = line_col(text, e.end)
        out.append(FixEdit(e.path, sl, sc, el, ec, e.new))
    title = f"{fix.description} ({finding.code})" if fix.safe else f"{fix.description} ({finding.code}, unsafe: may change behaviour)"
    return QuickFix(title, tuple(out), fix.safe)
