"""Findings -> LSP diagnostics and hover text.

gpulint locations are 1-based lines and columns counted in code points, end
column exclusive; LSP positions are 0-based and counted in the position
encoding negotiated with the client (UTF-16 unless it asked otherwise), so
every range is converted with the text of its line.
"""
from __future__ import annotations

from typing import Callable, Sequence

from lsprotocol import types
from pygls.workspace.position_codec import PositionCodec

from gpulint.core.model import Finding, Location, Severity
from gpulint.report.base import cost_suffix, money, one_line

SOURCE = "gpulint"

SEVERITY = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}

#: path relative to the scan root -> the lines of that file as the scan saw it (None: unreadable)
LinesOf = Callable[[str], "Sequence[str] | None"]
#: path relative to the scan root -> the document URI the client knows it by
UriOf = Callable[[str], str]


def loc_range(loc: Location, lines: Sequence[str] | None, codec: PositionCodec) -> types.Range:
    """The LSP range of a location.

    Without an end, the range runs to the end of the line's text, so the
    squiggle is visible; notebook findings are mapped to their line in the
    .ipynb JSON, whose columns are not the cell's, so they cover that line.
    """
    lines = list(lines or [])
    line = max(0, loc.line - 1)
    text = lines[line] if line < len(lines) else ""
    stripped = len(text.rstrip())
    if loc.cell is not None:
        start = len(text) - len(text.lstrip())
        end_line, end = line, stripped
    else:
        start = min(max(0, loc.column - 1), len(text))
        if loc.end_line is not None and loc.end_column is not None and loc.end_line >= loc.line:
            end_line = max(0, loc.end_line - 1)
            end_text = lines[end_line] if end_line < len(lines) else ""
            end = min(max(0, loc.end_column - 1), len(end_text))
            if end_line == line and end < start:
                end = start
        else:
            end_line, end = line, max(stripped, start)
    if end_line == line and end == start and start < stripped:
        end = stripped  # a zero-width range is invisible in most editors
    if line >= len(lines):  # the file changed under the finding: keep it at the line, codec-free
        return types.Range(types.Position(line, start), types.Position(end_line, end))
    s = codec.position_to_client_units(lines, types.Position(line, start))
    e = codec.position_to_client_units(lines, types.Position(end_line, end)) if end_line < len(lines) else types.Position(end_line, end)
    return types.Range(s, e)


def diagnostic(f: Finding, lines: Sequence[str] | None, codec: PositionCodec, lines_of: LinesOf, uri_of: UriOf) -> types.Diagnostic:
    """One diagnostic; the rule name, fingerprint and cost travel in ``data``
    (no ``codeDescription``: gpulint documents rules offline, `gpulint explain CODE`)."""
    related = [
        types.DiagnosticRelatedInformation(
            location=types.Location(uri=uri_of(r.loc.path), range=loc_range(r.loc, lines_of(r.loc.path), codec)),
            message=one_line(r.message) or r.loc.short(),
        )
        for r in f.related
    ]
    data = {"name": f.name, "fingerprint": f.fingerprint, "workload": f.workload,
            "usd_per_hour": f.cost_impact.usd_per_hour, "has_fix": getattr(f, "fix", None) is not None}
    return types.Diagnostic(
        range=loc_range(f.loc, lines, codec),
        severity=SEVERITY.get(f.severity, types.DiagnosticSeverity.Warning),
        code=f.code,
        source=SOURCE,
        message=one_line(f.message) + cost_suffix(f),
        related_information=related or None,
        data=data,
    )


def hover_markdown(findings: Sequence[Finding], root_display: Callable[[Location], str] | None = None) -> str:
    """Guidance and cost impact of the findings under the cursor, as markdown."""
    parts = []
    for f in findings:
        out = [f"**{f.code}** `{f.name}` ({f.severity.value})", "", one_line(f.message)]
        if f.guidance.strip():
            out += ["", f.guidance.strip()]
        ci = f.cost_impact
        if ci.usd_per_hour:
            out += ["", f"**Cost impact:** ~{money(ci.usd_per_hour)}/h avoidable ({ci.confidence} confidence). {ci.basis}".rstrip()]
        elif ci.basis and ci.basis.strip():
            out += ["", f"**Cost impact:** {ci.basis.strip()}"]
        if f.related:
            out += ["", "**Related:**"]
            for r in f.related:
                where = root_display(r.loc) if root_display else r.loc.short()
                out.append(f"- `{where}`: {one_line(r.message)}")
        fix = getattr(f, "fix", None)
        if fix is not None:
            how = "a quick fix" if fix.safe else f"a quick fix, unsafe: {fix.unsafe_because}"
            out += ["", f"**Fix:** {fix.description} ({how})"]
        if f.workload:
            out += ["", f"Workload: `{f.workload}` · `gpulint explain {f.code}` for the full rule"]
        else:
            out += ["", f"`gpulint explain {f.code}` for the full rule"]
        parts.append("\n".join(out))
    return "\n\n---\n\n".join(parts)


def contains(rng: types.Range, pos: types.Position) -> bool:
    """Whether a position lies in a range (end inclusive, as the cursor sits after the last character)."""
    start = (rng.start.line, rng.start.character)
    end = (rng.end.line, rng.end.character)
    return start <= (pos.line, pos.character) <= end


def overlaps_lines(rng: types.Range, other: types.Range) -> bool:
    """Code actions are asked for a cursor or a selection: any shared line counts."""
    return not (other.end.line < rng.start.line or other.start.line > rng.end.line)
