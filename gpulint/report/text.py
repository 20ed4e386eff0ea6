"""The default, human format: one ruff-style line per finding, then a summary.

    train.py:42:5: AMP001 [warning] Training loop runs in fp32 ...  (~$10.96/h avoidable)

Lines keep the `path:line:col:` prefix editors' problem matchers parse; a
notebook finding reads `path:cell N:line:col:` (line within the cell).
"""
from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING

from gpulint.core.model import NO_COST, Finding, Severity
from gpulint.report.base import (
    ReportOptions,
    Reporter,
    cost_suffix,
    display_path,
    money,
    one_line,
    period_spend,
    sorted_findings,
    usd,
)

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.core.result import ScanResult

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_DIM = "\x1b[2m"
_SEVERITY_COLOR = {"error": "\x1b[31m", "warning": "\x1b[33m", "info": "\x1b[36m"}
_CYAN = "\x1b[36m"
_GREEN = "\x1b[32m"

INDENT = "    "

# Where the money figures come from; each basis adds its instance, region and price date.
PRICE_NOTE = (
    "Figures are estimates, not measurements: prices are Linux list prices from gpulint's bundled "
    "instance catalogue (or your [tool.gpulint] overrides), on-demand unless the workload runs on "
    "spot, where the catalogue's observed spot midpoint is used; each finding's cost basis names "
    "the instance, capacity, region and date of its price (--show-guidance). The monthly column "
    "assumes the workload runs every hour of the month; scale it by the hours it really runs. "
    "A job whose launcher states its time limit (Slurm --time, SageMaker max_run, a Job's activeDeadlineSeconds) shows one "
    "run at that limit instead, or a month of its runs when a schedule says how often it runs."
)


class _Paint:
    def __init__(self, on: bool):
        self.on = on

    def __call__(self, text: str, *codes: str) -> str:
        if not self.on or not codes:
            return text
        return "".join(codes) + text + _RESET


def location_prefix(root: str, f: Finding) -> str:
    path = display_path(root, f.loc.path)
    if f.loc.cell is not None:
        line = f.loc.cell_line if f.loc.cell_line is not None else f.loc.line
        return f"{path}:cell {f.loc.cell}:{line}:{f.loc.column}"
    return f"{path}:{f.loc.line}:{f.loc.column}"


def finding_line(root: str, f: Finding, paint: _Paint | None = None) -> str:
    paint = paint or _Paint(False)
    sev = f.severity.value
    return (
        f"{paint(location_prefix(root, f), _BOLD)}: "
        f"{paint(f.code, _BOLD, _SEVERITY_COLOR.get(sev, ''))} "
        f"{paint('[' + sev + ']', _SEVERITY_COLOR.get(sev, ''))} "
        f"{one_line(f.message)}"
        f"{paint(cost_suffix(f), _GREEN)}"
    )


def _indented(text: str, prefix: str = INDENT) -> list[str]:
    return [prefix + line if line.strip() else "" for line in textwrap.dedent(text).strip("\n").splitlines()]


def _details(root: str, f: Finding, paint: _Paint) -> list[str]:
    out: list[str] = []
    for r in f.related:
        where = display_path(root, r.loc.path)
        where += f":cell {r.loc.cell}:{r.loc.cell_line}" if r.loc.cell is not None else f":{r.loc.line}"
        out.append(f"{INDENT}{paint('related:', _DIM)} {where}: {one_line(r.message)}")
    if f.guidance.strip():
        out.extend(_indented(f.guidance))
    ci = f.cost_impact
    if ci.basis.strip() and ci != NO_COST:  # "no spend attributed" is noise under every finding
        figure = money(ci.usd_per_hour) + "/h" if usd(ci.usd_per_hour) is not None else "no figure"
        out.append(f"{INDENT}{paint('cost:', _DIM)} {figure} ({ci.confidence} confidence). {one_line(ci.basis)}")
    return out


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary_lines(result: "ScanResult", paint: _Paint) -> list[str]:
    counts = result.counts()
    total = sum(counts.values())
    parts = []
    for sev in Severity:
        n = counts.get(sev.value, 0)
        label = sev.value if sev is Severity.INFO or n == 1 else sev.value + "s"  # "info" has no plural
        parts.append(paint(f"{n} {label}", _SEVERITY_COLOR[sev.value]) if n else f"{n} {label}")
    head = "No findings" if total == 0 else f"Found {_plural(total, 'finding')}"
    lines = [
        f"{paint(head, _BOLD)} ({', '.join(parts)}); "
        f"{_plural(result.files_scanned, 'file')} scanned, "
        f"{_plural(len(result.workloads), 'workload')} found."
        + (f" {_plural(result.baseline_hidden, 'finding')} hidden by the baseline {result.baseline}."
           if result.baseline_hidden else "")
    ]
    lines.extend(spend_table(result, paint))
    lines.extend(diff_base_lines(result, paint))
    lines.extend(cost_gate_lines(result, paint))
    safe, unsafe = result.fixable
    if safe or unsafe:
        hint = []
        if safe:
            hint.append(f"{_plural(safe, 'finding')} fixable with `gpulint scan --fix`")
        if unsafe:
            hint.append(f"{unsafe} more with `--unsafe-fixes`" if safe else f"{_plural(unsafe, 'finding')} fixable with `--fix --unsafe-fixes`")
        lines.extend(["", "; ".join(hint) + " (`--diff` shows the edits)."])
    return lines


def _per_month(usd_per_hour: float, hours: float) -> str:
    """The avoidable figure over a month of always-on hours (an upper bound for work that runs less)."""
    return f"${usd_per_hour * hours:,.0f}"


def diff_base_lines(result: "ScanResult", paint: _Paint) -> list[str]:
    d = result.diff_base
    if d is None:
        return []
    costlier = f", {len(d.costlier)} costlier than there" if d.costlier else ""
    return ["", f"Against {d.ref} (merge base {d.commit[:12]}): {_plural(d.new, 'new finding')}{costlier}, {_plural(d.gone, 'finding')} gone; "
                f"{paint('new avoidable spend: ' + money(d.usd_per_hour_new) + '/h', _BOLD)} "
                f"(avoidable {money(d.usd_per_hour_base)}/h at {d.ref}, {money(d.usd_per_hour_head)}/h now)."]


def cost_gate_lines(result: "ScanResult", paint: _Paint) -> list[str]:
    g = result.cost_gate
    if g is None:
        return []
    if g.failed:
        head = paint("Cost gate failed:", _BOLD, _SEVERITY_COLOR["error"]) + f" {money(g.total)}/h avoidable is more than the {money(g.limit)}/h limit."
    else:
        head = f"Cost gate passed: {money(g.total)}/h avoidable, limit {money(g.limit)}/h."
    out = ["", head]
    if g.failed and g.contributors:
        out.append(f"{INDENT}made up of (combined per workload):")
        for f in sorted(g.contributors, key=lambda f: (-(usd(f.cost_impact.usd_per_hour) or 0), f.sort_key())):
            out.append(f"{INDENT}{INDENT}{money(f.cost_impact.usd_per_hour)}/h  {f.code} {location_prefix(result.root, f)}  ({f.workload})")
    return out


def spend_table(result: "ScanResult", paint: _Paint | None = None) -> list[str]:
    paint = paint or _Paint(False)
    rows = [s for s in result.spend() if usd(s.usd_per_hour_avoidable)]
    if not rows:
        return []
    hours = result.hours_per_month
    per_run = any(s.run_hours for s in rows)
    header = ("workload", "instance", "price/h", "avoidable/h", f"per month ({hours:g} h)" + (" or per run" if per_run else ""))

    table = [header] + [
        (s.workload, (s.instance or "unknown") + (f" ({s.capacity})" if s.capacity == "spot" else ""),
         money(s.usd_per_hour_price), money(s.usd_per_hour_avoidable), period_spend(s, hours))
        for s in rows
    ]
    total = round(sum(s.usd_per_hour_avoidable for s in rows), 2)
    if len(rows) > 1:
        # runs and months do not add up: the total's period figure is shown only when every row is a month
        table.append(("total", "", "", money(total), "" if per_run else _per_month(total, hours)))
    widths = [max(len(r[i]) for r in table) for i in range(5)]

    def fmt(row: tuple[str, ...]) -> str:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1])] + [row[i].rjust(widths[i]) for i in (2, 3, 4)]
        return (INDENT + "  ".join(cells)).rstrip()

    out = ["", paint("Estimated avoidable spend per hour the workload runs:", _BOLD), paint(fmt(header), _DIM)]
    out.extend(fmt(r) for r in table[1:])
    out.extend(textwrap.wrap(PRICE_NOTE, width=100))
    return out


class TextReporter(Reporter):
    name = "text"
    description = "one line per finding (path:line:col: CODE [severity] message), then a summary"

    def reads_fixes(self, options: ReportOptions) -> bool:  # only the summary counts fixes; --quiet has none
        return not options.quiet

    def render(self, result: "ScanResult", options: ReportOptions) -> str:
        paint = _Paint(options.color)
        lines: list[str] = []
        for f in sorted_findings(result.findings):
            lines.append(finding_line(result.root, f, paint))
            if options.show_guidance:
                lines.extend(_details(result.root, f, paint))
                lines.append("")
        if not options.quiet:
            if lines and lines[-1] != "":
                lines.append("")
            lines.extend(summary_lines(result, paint))
            if options.verbose and result.errors:
                lines.append("")
                lines.append(paint("Internal errors (please report):", _BOLD))
                for err in result.errors:
                    lines.extend(_indented(err))
        while lines and lines[-1] == "":
            lines.pop()
        return "\n".join(lines) + ("\n" if lines else "")
