"""GitHub Actions workflow commands: one annotation per finding.

    ::warning file=train.py,line=42,col=5,endLine=42,endColumn=30,title=AMP001 missing-mixed-precision::message

Escaping follows the Actions runner (toolkit `command.ts`): in the message,
``%`` ``\\r`` ``\\n``; in property values also ``:`` and ``,``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from gpulint.core.model import Finding
from gpulint.report.base import ReportOptions, Reporter, cost_suffix, display_path, money, one_line, sorted_findings, usd

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.core.result import ScanResult

LEVEL = {"error": "error", "warning": "warning", "info": "notice"}


def escape_data(text: str) -> str:
    return str(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(root: str, f: Finding, show_guidance: bool = False) -> str:
    loc = f.loc
    line = max(1, int(loc.line or 1))
    col = max(1, int(loc.column or 1))
    props = [("file", display_path(root, loc.path)), ("line", str(line)), ("col", str(col))]
    if loc.end_line is not None and loc.end_line >= line:
        props.append(("endLine", str(loc.end_line)))
        if loc.end_column is not None:
            end_col = max(1, int(loc.end_column))
            props.append(("endColumn", str(col if loc.end_line == line and end_col < col else end_col)))
    props.append(("title", f"{f.code} {f.name}".strip()))
    message = one_line(f.message) or f"{f.code} {f.name}"
    message += cost_suffix(f)
    if show_guidance:
        # Annotations may span lines (escaped as %0A); the guidance is what to change.
        extra = []
        if f.guidance.strip():
            extra.append(f.guidance.strip())
        if f.cost_impact.basis.strip() and usd(f.cost_impact.usd_per_hour) is not None:
            extra.append(f"Cost: {money(f.cost_impact.usd_per_hour)}/h ({f.cost_impact.confidence} confidence). "
                         + one_line(f.cost_impact.basis))
        for r in f.related:
            extra.append(f"Related: {display_path(root, r.loc.path)}:{r.loc.line}: {one_line(r.message)}")
        if extra:
            message += "\n\n" + "\n".join(extra)
    level = LEVEL.get(f.severity.value, "warning")
    head = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    return f"::{level} {head}::{escape_data(message)}"


class GithubReporter(Reporter):
    name = "github"
    description = "GitHub Actions annotations (::error/::warning/::notice workflow commands)"

    def reads_fixes(self, options: ReportOptions) -> bool:  # no fix is shown in this format
        return False

    def render(self, result: "ScanResult", options: ReportOptions) -> str:
        lines = [command(result.root, f, options.show_guidance) for f in sorted_findings(result.findings)]
        return "\n".join(lines) + ("\n" if lines else "")
