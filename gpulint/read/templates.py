"""Template syntax inside configuration files, replaced by placeholders of the
same length so the rest of the file can be read, every position unchanged.

Helm and other Go templates (``{{ .Values.image }}``, ``{{- if .x }}``),
Jinja (``{% for %}``, ``{# #}``) and Terraform's ``templatefile`` (``%{ if }``,
a line that is only ``${indent(4, yamlencode(x))}``) and a line that is only a sed-style placeholder
(``__ALMA8_PLAN__``, replaced by a deploy script) make a YAML file invalid
YAML until they are rendered. gpulint does not render them (that needs the
values and the tool); it reads what is there:

- a line that holds nothing but template actions (control flow, includes,
  ``toYaml`` blocks, comments) becomes blank;
- an action inside a line (``image: {{ .Values.image }}``) becomes a run of
  placeholder characters the YAML parser reads as a plain scalar; the loader
  puts the original text back (``"{{ .Values.image }}"``), so a reader sees a
  value it cannot decide and stays silent on it.

The scan is linear: each delimiter pair is searched with ``str.find``.
"""
from __future__ import annotations

import re

PLACEHOLDER = "\ue000"  # private-use characters: printable for YAML, absent from real files
_START = "\ue001"  # the first character of each action's placeholder, so adjacent actions stay apart
# (opening, closing, what nests inside): Go/Helm, Jinja, Terraform directives and interpolations
_PAIRS = (("{{", "}}", "{{"), ("{%", "%}", "{%"), ("{#", "#}", "{#"), ("%{", "}", "{"), ("${", "}", "{"))


#: a line that is only a sed-style placeholder (``__ALMA8_PLAN__``), which a deploy script replaces with YAML lines
_SED_LINE = re.compile(r"(?m)^[ \t]*(__[A-Z][A-Z0-9_]*__)[ \t]*\r?$")


def has_template(text: str) -> bool:
    return any(a in text for a, _, _ in _PAIRS) or _SED_LINE.search(text) is not None



def spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every template action, outermost only, in order."""
    found: list[tuple[int, int]] = []
    for start_tok, end_tok, nested in _PAIRS:
        pos = 0
        while True:
            a = text.find(start_tok, pos)
            if a < 0:
                break
            b = _close(text, a + len(start_tok), nested, end_tok)
            if b < 0:
                break  # unterminated: nothing after it can close either
            found.append((a, b))
            pos = b
    found += [(m.start(1), m.end(1)) for m in _SED_LINE.finditer(text)]
    found.sort()
    out: list[tuple[int, int]] = []
    for a, b in found:
        if out and a < out[-1][1]:  # inside (or overlapping) the previous action
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
            continue
        out.append((a, b))
    return out


def _close(text: str, pos: int, nested: str, end_tok: str) -> int:
    """End of the action whose body starts at `pos`; actions nest (Go:
    ``{{ f "x/{{ .Tag }}" }}``, Terraform: ``${merge({a = 1})}``). -1 if unterminated."""
    depth = 1
    while True:
        close = text.find(end_tok, pos)
        if close < 0:
            return -1
        opened = text.find(nested, pos, close)
        if opened >= 0:
            depth += 1
            pos = opened + len(nested)
            continue
        depth -= 1
        pos = close + len(end_tok)
        if depth == 0:
            return pos


def with_placeholders(text: str, blank_lines: bool = True) -> tuple[str, list[tuple[int, int]]] | None:
    """The text with template actions replaced (same length, same lines), and
    the spans of the inline ones; None when there is no template syntax.
    With `blank_lines` false every action is a placeholder, even one alone on
    its line (inside a block scalar a line is data, not structure)."""
    found = spans(text)
    if not found:
        return None
    chars = list(text)
    inline: list[tuple[int, int]] = []
    for a, b in found:
        line_a = text.rfind("\n", 0, a) + 1
        line_b = text.find("\n", b)
        line_b = len(text) if line_b < 0 else line_b
        alone = blank_lines and not _without(text, found, line_a, a).strip() and not _without(text, found, b, line_b).strip()
        for i in range(a, b):
            if chars[i] != "\n":
                chars[i] = " " if alone else PLACEHOLDER
        if not alone:
            chars[a] = _START
        if not alone:
            inline.append((a, b))
    return "".join(chars), inline


def _without(text: str, found: list[tuple[int, int]], start: int, end: int) -> str:
    """text[start:end] with every action removed."""
    rest = []
    pos = start
    for a, b in found:
        if b <= pos or a >= end:
            continue
        rest.append(text[pos:max(pos, a)])
        pos = max(pos, b)
    if pos < end:
        rest.append(text[pos:end])
    return "".join(rest)


def restore(value: str, original: str, start: int, end: int, inline: list[tuple[int, int]]) -> str:
    """A scalar read from the placeholder text, with each run of placeholders
    replaced by the template action it stands for (`start`/`end`: the scalar's
    offsets in the text)."""
    if _START not in value:
        return value
    actions = [original[a:b] for a, b in inline if a < end and b > start]
    out, k = [], 0
    for part in value.split(_START)[1:]:
        out.append(actions[k] if k < len(actions) else "")
        k += 1
        out.append(part.lstrip(PLACEHOLDER))
    head = value.split(_START, 1)[0]
    return head + "".join(out)
