"""SARIF 2.1.0 for GitHub code scanning and other SARIF viewers.

Valid against the OASIS schema, and inside GitHub's upload rules: one run;
non-empty message texts; regions with startLine/startColumn >= 1; artifact
URIs relative (no leading ``./``, percent-encoded) against ``%SRCROOT%``;
at most 25,000 results per run and 1,000 related locations per result.
"""
from __future__ import annotations

import os
import posixpath
from pathlib import PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gpulint.core.model import Finding, Location, Severity
from gpulint.report.base import ReportOptions, Reporter, dumps, one_line, posix, sorted_findings, usd
from gpulint.report.explain import explain_markdown, explain_text

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.core.result import ScanResult

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
FINGERPRINT_KEY = "gpulintFingerprint/v1"
LEVEL = {"error": "error", "warning": "warning", "info": "note"}
# GitHub rejects larger runs outright; better a truncated upload (announced) than none.
MAX_RESULTS = 25_000
MAX_RELATED = 1_000
MAX_TAGS = 10  # GitHub keeps 10 of at most 20


def _level(sev: Any) -> str:
    return LEVEL.get(str(getattr(sev, "value", sev)), "warning")


def _is_abs(path: str) -> bool:
    return PurePosixPath(path).is_absolute() or PureWindowsPath(path).is_absolute()


def _uri(path: str) -> str:
    # Percent-encode everything a URI reference cannot carry; keep '/' as separator.
    return quote(posix(path), safe="/-._~!$&'()*+,;=@")


def _root_uri(root_dir: str) -> str:
    if PureWindowsPath(root_dir).drive and not root_dir.startswith("/"):
        uri = PureWindowsPath(root_dir).as_uri()
    else:
        uri = PurePosixPath(root_dir).as_uri()
    return uri if uri.endswith("/") else uri + "/"


class _Paths:
    """Where %SRCROOT% is and how a finding's root-relative path is written against it.

    GitHub resolves artifact URIs from the repository checkout, so when the
    root was given relative to the working directory (``gpulint scan
    training/``), %SRCROOT% is the working directory and URIs carry the root
    prefix; otherwise %SRCROOT% is the scanned root itself.
    """

    def __init__(self, root: str):
        r = posix(root or ".").rstrip("/") or "."
        if PureWindowsPath(root or "").drive and not PurePosixPath(root).is_absolute():
            self.base_dir = str(PureWindowsPath(root))  # a Windows root, whatever OS renders it
            self.prefix = ""
        elif _is_abs(root or "") or r == "." or ".." in r.split("/"):
            self.base_dir = os.path.abspath(root or ".")
            self.prefix = ""
        else:
            self.base_dir = os.path.abspath(".")
            self.prefix = r + "/"

    def artifact(self, path: str) -> dict[str, Any]:
        p = posix(path)
        if _is_abs(p):  # outside the root: an absolute file URI without a base id
            uri = PureWindowsPath(p).as_uri() if PureWindowsPath(p).drive else PurePosixPath(p).as_uri()
            return {"uri": uri}
        p = posixpath.normpath(self.prefix + p) if self.prefix else posixpath.normpath(p)
        return {"uri": _uri(p), "uriBaseId": SRCROOT}

    def original_uri_base_ids(self) -> dict[str, Any]:
        return {SRCROOT: {"uri": _root_uri(self.base_dir)}}


def _region(loc: Location) -> dict[str, Any]:
    line = max(1, int(loc.line or 1))
    col = max(1, int(loc.column or 1))
    region: dict[str, Any] = {"startLine": line, "startColumn": col}
    if loc.end_line is not None and loc.end_line >= line:
        region["endLine"] = int(loc.end_line)
        end_col = loc.end_column
        if end_col is not None:
            end_col = max(1, int(end_col))
            if loc.end_line == line and end_col < col:  # never an inverted region
                end_col = col
            region["endColumn"] = end_col
    return region


def _physical(paths: _Paths, loc: Location) -> dict[str, Any]:
    return {"artifactLocation": paths.artifact(loc.path), "region": _region(loc)}


def _text(value: str, fallback: str) -> str:
    t = str(value or "").strip()
    return t if t else fallback


def rule_descriptor(rule: type, enabled: set[str] | None = None) -> dict[str, Any]:
    code = str(rule.code)
    summary = ""
    try:
        summary = rule.summary()
        sections = rule.sections()
    except Exception:  # a plugin's odd docstring must not break the upload
        sections = {}
    full = sections.get("What it does") or summary
    family = str(getattr(rule, "family", "") or "")
    tags = ["gpulint", "gpu-spend"] + ([family.lower()] if family else [])
    config: dict[str, Any] = {"level": _level(getattr(rule, "severity", Severity.WARNING))}
    if enabled and code not in enabled:
        config["enabled"] = False
    out: dict[str, Any] = {
        "id": code,
        "name": str(getattr(rule, "name", "") or code),
        "shortDescription": {"text": one_line(_text(summary, code))},
        "fullDescription": {"text": _text(full, code)},
        "help": {"text": _text(explain_text(rule), code), "markdown": _text(explain_markdown(rule, heading_level=2), code)},
        "defaultConfiguration": config,
        "properties": {"family": family, "since": str(getattr(rule, "since", "")), "tags": tags[:MAX_TAGS]},
    }
    return out


def _fallback_descriptor(f: Finding) -> dict[str, Any]:
    """A finding of a rule the run does not list (a plugin that failed to load)."""
    return {
        "id": f.code,
        "name": f.name or f.code,
        "shortDescription": {"text": f.name or f.code},
        "defaultConfiguration": {"level": _level(f.severity)},
        "properties": {"family": f.code.rstrip("0123456789"), "tags": ["gpulint", "gpu-spend"]},
    }


def _result(f: Finding, index: int, paths: _Paths) -> dict[str, Any]:
    message = _text(one_line(f.message), f"{f.code} {f.name}".strip())
    res: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": index,
        "level": _level(f.severity),
        "message": {"text": message},
        "locations": [{"physicalLocation": _physical(paths, f.loc)}],
    }
    related = []
    for i, r in enumerate(f.related[:MAX_RELATED], start=1):
        related.append(
            {
                "id": i,
                "physicalLocation": _physical(paths, r.loc),
                "message": {"text": _text(one_line(r.message), "related location")},
            }
        )
    if related:
        res["relatedLocations"] = related
    if f.fingerprint:
        res["partialFingerprints"] = {FINGERPRINT_KEY: f.fingerprint}
    cost = f.cost_impact.to_json()
    cost["usd_per_hour"] = usd(cost.get("usd_per_hour"))
    props: dict[str, Any] = {"cost_impact": cost, "workload": f.workload, "severity": f.severity.value}
    if f.guidance:
        props["guidance"] = f.guidance
    if f.loc.cell is not None:
        props["notebook_cell"] = f.loc.cell
        props["notebook_cell_line"] = f.loc.cell_line
    res["properties"] = props
    return res


def document(result: "ScanResult") -> dict[str, Any]:
    paths = _Paths(result.root)
    enabled = set(result.enabled or ())
    by_code: dict[str, dict[str, Any]] = {}
    for rule in result.rules:
        code = getattr(rule, "code", "")
        if code and code not in by_code:
            by_code[code] = rule_descriptor(rule, enabled)
    findings = sorted_findings(result.findings)
    for f in findings:
        if f.code not in by_code:
            by_code[f.code] = _fallback_descriptor(f)
    codes = sorted(by_code)
    index = {c: i for i, c in enumerate(codes)}

    # Errors first, so a truncated run keeps what matters (GitHub does the same).
    kept = sorted(findings, key=lambda f: -f.severity.rank)[:MAX_RESULTS]
    kept_ids = {id(f) for f in kept}
    results = [_result(f, index[f.code], paths) for f in findings if id(f) in kept_ids]

    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "gpulint",
                "version": result.version,
                "rules": [by_code[c] for c in codes],
            }
        },
        "originalUriBaseIds": paths.original_uri_base_ids(),
        "columnKind": "unicodeCodePoints",
        "results": results,
    }
    if len(findings) > MAX_RESULTS:
        run["invocations"] = [
            {
                "executionSuccessful": True,
                "toolExecutionNotifications": [
                    {
                        "level": "warning",
                        "message": {
                            "text": f"{len(findings)} findings; only the {MAX_RESULTS} most severe are in this file "
                            "(GitHub code scanning rejects larger runs)."
                        },
                    }
                ],
            }
        ]
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


class SarifReporter(Reporter):
    name = "sarif"
    description = "SARIF 2.1.0 (GitHub code scanning, editors' SARIF viewers)"

    def reads_fixes(self, options: ReportOptions) -> bool:  # no fix is shown in this format
        return False

    def render(self, result: "ScanResult", options: ReportOptions) -> str:
        return dumps(document(result)) + "\n"


__all__ = ["SarifReporter", "document", "rule_descriptor"]
