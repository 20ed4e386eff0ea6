"""Markdown for a CI job summary or a pull-request comment (GitHub-flavoured).

    ## gpulint: 3 findings (0 errors, 2 warnings, 1 info)
    (new findings against the diff base, the cost gate)
    ### Estimated avoidable spend     <- one row per workload: instance, capacity, $/h, avoidable $/h and $/month
    ### Findings                      <- grouped by file, guidance folded in <details>

Text from the scanned repository (messages, paths, instance names) is
escaped, so a file name with ``|`` or ``<`` cannot break the table or inject
HTML. GitHub refuses comments over 65,536 characters; the findings list stops
before that and says how many were left out.
"""
from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING

from gpulint.core.model import NO_COST, Finding
from gpulint.report.base import ReportOptions, Reporter, display_path, money, one_line, period_spend, sorted_findings, usd

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.core.result import ScanResult

MAX_CHARS = 60_000  # below GitHub's 65,536-character comment limit, with room for a marker
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")


def esc(text: str) -> str:
    """Plain text as inline markdown: punctuation that could start markup is backslash-escaped."""
    return _SPECIAL.sub(r"\\\1", one_line(text)).replace("&", "&amp;")


def code(text: str) -> str:
    """Inline code that survives backticks and pipes in the text."""
    t = one_line(text).replace("|", "\\|")
    fence = "``" if "`" in t else "`"
    pad = " " if t.startswith("`") or t.endswith("`") else ""
    return f"{fence}{pad}{t}{pad}{fence}"


def _plural(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else (plural or word + 's')}"


def _counts(result: "ScanResult") -> str:
    c = result.counts()
    return ", ".join([_plural(c["error"], "error"), _plural(c["warning"], "warning"), f"{c['info']} info"])


def monthly(usd_per_hour: float | None, hours: float) -> str:
    v = usd(usd_per_hour)
    return "?" if v is None else f"${v * hours:,.0f}"


def _head(result: "ScanResult") -> list[str]:
    n = len(result.findings)
    what = "new finding" if result.diff_base is not None else "finding"
    title = f"## gpulint: {_plural(n, what)}" if n else f"## gpulint: no {what}s"
    return [f"{title} ({_counts(result)})", ""]


def _diff_base(result: "ScanResult", hours: int) -> list[str]:
    d = result.diff_base
    if d is None:
        return []
    new = money(d.usd_per_hour_new)
    costlier = f", {len(d.costlier)} costlier than there" if d.costlier else ""
    line = (f"Compared with {code(d.ref)} (merge base {code(d.commit[:12])}): {_plural(d.new, 'new finding')}{costlier}, "
            f"{_plural(d.gone, 'finding')} gone. **New avoidable spend: {new}/h** (about {monthly(d.usd_per_hour_new, hours)} a month); "
            f"avoidable spend {money(d.usd_per_hour_base)}/h at {code(d.ref)}, {money(d.usd_per_hour_head)}/h now.")
    return [line, ""]


def _gate(result: "ScanResult", root: str) -> list[str]:
    g = result.cost_gate
    if g is None:
        return []
    verdict = "**Cost gate failed**" if g.failed else "Cost gate passed"
    cmp = "more than" if g.failed else "within"
    out = [f"{verdict}: {money(g.total)}/h avoidable is {cmp} the {money(g.limit)}/h limit (`--fail-on-cost {g.limit:g}`)."]
    if g.contributors:
        out.append("")
        out.append("Made up of (combined per workload, so the parts may add up to more than the total):")
        out.append("")
        for f in sorted(g.contributors, key=lambda f: -(usd(f.cost_impact.usd_per_hour) or 0)):
            out.append(f"- {money(f.cost_impact.usd_per_hour)}/h {f.code} at {code(display_path(root, f.loc.path) + ':' + str(f.loc.line))}"
                       f" ({esc(f.workload or '')})")
    out.append("")
    return out


def _spend_table(result: "ScanResult", hours: int) -> list[str]:
    meta = {w.get("name"): w for w in result.workloads}
    spend = {s.workload: s for s in result.spend()}
    names = sorted({f.workload for f in result.findings if f.workload} | set(spend))
    if not names:
        return []
    def priced_or_named(n: str) -> bool:
        c = (meta.get(n) or {}).get("compute") or {}
        return bool(c.get("instance") or c.get("usd_per_hour") or n in spend)

    unpriced = [n for n in names if not priced_or_named(n)]
    names = [n for n in names if n not in unpriced]
    note = ([f"{_plural(len(unpriced), 'workload')} with findings {'has' if len(unpriced) == 1 else 'have'} no known instance, "
             "so no price: `gpulint workloads` names, under `to_price:`, the one fact that would price each.", ""] if unpriced else [])
    if not names:
        return ["### Estimated avoidable spend", ""] + note
    rows = []
    for name in names:
        c = (meta.get(name) or {}).get("compute") or {}
        s = spend.get(name)
        price = usd(c.get("usd_per_hour"))
        avoid = s.usd_per_hour_avoidable if s else None
        what = c.get("instance") or (s.instance if s else None)
        rows.append((code(name), esc(what or "unknown"), esc(c.get("capacity") or ("on-demand" if what else "?")),
                     money(price) if price is not None else "?", money(avoid) if avoid else "–",
                     period_spend(s, hours) if avoid else "–"))
    per_run = any(s.run_hours for s in spend.values())
    out = ["### Estimated avoidable spend", "",
           "| Workload | Instance | Capacity | Price/h | Avoidable/h | Avoidable/month" + (" or per run" if per_run else "") + " |",
           "|---|---|---|---:|---:|---:|"]
    out += [f"| {' | '.join(r)} |" for r in rows]
    total = result.avoidable_total()
    if len(rows) > 1 and total:
        out.append(f"| **total** | | | | **{money(total)}** | {'' if per_run else '**' + monthly(total, hours) + '**'} |")
    out += ["", f"Estimates, not measurements: a month is {hours:g} hours of the workload running; scale by the hours it really runs"
                + (" (a job whose launcher states its time limit shows one run at that limit)" if per_run else "") + ". "
                "Prices are list prices from gpulint's dated catalogue (or your `[tool.gpulint.pricing]`); each finding's "
                "cost basis names the instance, region and date of its price. Several findings on one workload are combined, "
                "not added up.", ""] + note
    return out


def _finding(root: str, f: Finding, result: "ScanResult") -> list[str]:
    where = code(f"{display_path(root, f.loc.path)}:{f.loc.line}")
    cost = f" (~{money(f.cost_impact.usd_per_hour)}/h avoidable)" if (usd(f.cost_impact.usd_per_hour) or 0) > 0 else ""
    d = result.diff_base
    if d is not None and f.fingerprint in d.costlier:
        cost += f", {money(d.costlier[f.fingerprint])}/h at {code(d.ref)}"
    fix = ""
    if f.fix is not None:
        fix = " · fixable with `--fix`" if f.fix.safe else " · fixable with `--fix --unsafe-fixes`"
    out = [f"- **{f.code}** {f.severity.value} at {where}: {esc(f.message)}{cost}{fix}"]
    details: list[str] = []
    if f.guidance.strip():
        details.append(_block(f.guidance))
    ci = f.cost_impact
    if ci.basis.strip() and ci != NO_COST:
        figure = f"{money(ci.usd_per_hour)}/h" if usd(ci.usd_per_hour) is not None else "no figure"
        details.append(f"Cost: {figure} ({ci.confidence} confidence). {esc(ci.basis)}")
    for r in f.related:
        details.append(f"Related: {code(display_path(root, r.loc.path) + ':' + str(r.loc.line))} {esc(r.message)}")
    if f.fix is not None:
        why = f" Unsafe: {esc(f.fix.unsafe_because)}." if f.fix.unsafe_because else ""
        details.append(f"Fix: {esc(f.fix.description)}.{why}")
    if details:
        body = "\n\n".join(details)
        out += ["", "  <details><summary>Guidance</summary>", "", _indent(body, "  "), "", "  </details>", ""]
    return out


def _block(text: str) -> str:
    """Guidance as markdown: rule docs mark code with '::' and an indented block, which is a code block here too."""
    import textwrap

    t = textwrap.dedent(text).strip("\n")
    t = re.sub(r"::\n", ":\n", t)
    return t


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line if line.strip() else "" for line in text.splitlines())


class MarkdownReporter(Reporter):
    name = "markdown"
    description = "Markdown job summary / pull-request comment: counts, per-workload cost table, findings by file"

    def render(self, result: "ScanResult", options: ReportOptions) -> str:
        hours = result.hours_per_month  # [tool.gpulint.pricing] hours-per-month, 730 by default
        root = result.root
        lines = _head(result) + _diff_base(result, hours) + _gate(result, root) + _spend_table(result, hours)
        findings = sorted_findings(result.findings)
        if findings:
            lines += ["### Findings", ""]
            by_file: dict[str, list[Finding]] = defaultdict(list)
            for f in findings:
                by_file[f.loc.path].append(f)
            size = sum(len(l) + 1 for l in lines)
            left = len(findings)
            for path in sorted(by_file):
                block = [f"#### {code(display_path(root, path))}", ""]
                for f in by_file[path]:
                    block += _finding(root, f, result)
                block.append("")
                cost = sum(len(l) + 1 for l in block)
                if size + cost > MAX_CHARS:
                    lines.append(f"_…and {_plural(left, 'more finding')} not shown (the comment would be too long for GitHub); "
                                 "`gpulint scan` or the SARIF upload lists them all._")
                    lines.append("")
                    break
                lines += block
                size += cost
                left -= len(by_file[path])
        if result.fixable[0] or result.fixable[1]:
            safe, unsafe = result.fixable
            hint = []
            if safe:
                hint.append(f"{_plural(safe, 'finding')} fixable with `gpulint scan --fix`")
            if unsafe:
                hint.append(f"{unsafe} more with `--unsafe-fixes`" if safe else f"{_plural(unsafe, 'finding')} fixable with `gpulint scan --fix --unsafe-fixes`")
            lines += ["; ".join(hint) + ".", ""]
        while lines and lines[-1] == "":
            lines.pop()
        return "\n".join(lines) + "\n"


__all__ = ["MarkdownReporter", "esc", "code"]
