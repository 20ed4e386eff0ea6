"""GitLab Code Quality: a JSON array of issues, as GitLab's merge request widget reads it.

GitLab documents the fields it uses (docs.gitlab.com, "Code Quality", the
report format): ``description``, ``check_name``, ``fingerprint`` (unique per
issue: GitLab compares the fingerprints of the source and target branches to
show what a merge request adds or fixes), ``severity`` (``info``, ``minor``,
``major``, ``critical`` or ``blocker``), ``location.path`` (relative to the
repository root) and ``location.lines.begin``. The rest of the Code Climate
issue shape it accepts is filled in too: ``type``, ``categories``,
``content.body`` (the guidance, markdown) and ``location.lines.end``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gpulint.core.model import Finding
from gpulint.report.base import ReportOptions, Reporter, cost_suffix, display_path, dumps, money, one_line, sorted_findings, usd

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.core.result import ScanResult

SEVERITY = {"error": "critical", "warning": "major", "info": "info"}


def issue(root: str, f: Finding) -> dict[str, Any]:
    line = max(1, int(f.loc.line or 1))
    end = int(f.loc.end_line) if f.loc.end_line is not None and f.loc.end_line >= line else line
    body = [f.guidance.strip()] if f.guidance.strip() else []
    if usd(f.cost_impact.usd_per_hour) is not None:
        body.append(f"Cost: {money(f.cost_impact.usd_per_hour)}/h avoidable ({f.cost_impact.confidence} confidence). "
                    + one_line(f.cost_impact.basis))
    for r in f.related:
        body.append(f"Related: `{display_path(root, r.loc.path)}:{r.loc.line}` {one_line(r.message)}")
    out: dict[str, Any] = {
        "type": "issue",
        "check_name": f.code,
        "description": f"{f.code} {one_line(f.message)}{cost_suffix(f)}",
        "categories": ["Performance"],
        "severity": SEVERITY.get(f.severity.value, "major"),
        "fingerprint": f.fingerprint or f"{f.code}:{f.loc.path}:{line}",
        "location": {"path": display_path(root, f.loc.path), "lines": {"begin": line, "end": end}},
    }
    if body:
        out["content"] = {"body": "\n\n".join(body)}
    return out


class GitlabReporter(Reporter):
    name = "gitlab"
    description = "GitLab Code Quality report (artifacts:reports:codequality)"

    def reads_fixes(self, options: ReportOptions) -> bool:  # no fix is shown in this format
        return False

    def render(self, result: "ScanResult", options: ReportOptions) -> str:
        issues = [issue(result.root, f) for f in sorted_findings(result.findings)]
        return dumps(issues) + "\n"
