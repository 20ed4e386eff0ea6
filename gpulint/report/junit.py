"""JUnit XML, for CI systems that show test reports (GitLab, Jenkins, Azure Pipelines, CircleCI).

One ``<testcase>`` per finding, named by code and place; a finding at or above
the run's ``--fail-on`` severity is a ``<failure>``, one below it passes with
its message as ``<system-out>``. A scan without findings is one passing test
case, so the report never looks like "no tests ran". Written with
``xml.etree`` so every character is escaped as XML requires.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

from gpulint.core.model import Finding
from gpulint.report.base import ReportOptions, Reporter, cost_suffix, display_path, money, one_line, sorted_findings, usd

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.core.result import ScanResult


def _xml_text(text: str) -> str:
    """XML 1.0 cannot carry most control characters, even escaped."""
    return "".join(ch for ch in str(text) if ch in "\t\n\r" or ord(ch) >= 0x20 and ch not in "\ufffe\uffff")


def _details(root: str, f: Finding) -> str:
    parts = [f"{display_path(root, f.loc.path)}:{f.loc.line}:{f.loc.column}: {f.code} [{f.severity.value}] {one_line(f.message)}"]
    if f.guidance.strip():
        parts.append(f.guidance.strip())
    if usd(f.cost_impact.usd_per_hour) is not None:
        parts.append(f"Cost: {money(f.cost_impact.usd_per_hour)}/h avoidable ({f.cost_impact.confidence} confidence). "
                     + one_line(f.cost_impact.basis))
    for r in f.related:
        parts.append(f"Related: {display_path(root, r.loc.path)}:{r.loc.line}: {one_line(r.message)}")
    return _xml_text("\n\n".join(parts))


class JunitReporter(Reporter):
    name = "junit"
    description = "JUnit XML: one test case per finding, failures at or above --fail-on"

    def reads_fixes(self, options: ReportOptions) -> bool:  # no fix is shown in this format
        return False

    def render(self, result: "ScanResult", options: ReportOptions) -> str:
        findings = sorted_findings(result.findings)
        threshold = result.fail_on.rank
        failures = sum(1 for f in findings if f.severity.rank >= threshold)
        tests = max(1, len(findings))
        suites = ET.Element("testsuites", name="gpulint", tests=str(tests), failures=str(failures), errors="0")
        suite = ET.SubElement(suites, "testsuite", name="gpulint", tests=str(tests), failures=str(failures), errors="0",
                              skipped="0")
        if not findings:
            ET.SubElement(suite, "testcase", name="gpulint scan", classname="gpulint")
        for f in findings:
            path = display_path(result.root, f.loc.path)
            case = ET.SubElement(suite, "testcase", name=_xml_text(f"{f.code} {path}:{f.loc.line}:{f.loc.column}"),
                                 classname=_xml_text(f"gpulint.{f.code}.{f.name}"), file=_xml_text(path), line=str(f.loc.line))
            message = _xml_text(f"{one_line(f.message)}{cost_suffix(f)}")
            if f.severity.rank >= threshold:
                fail = ET.SubElement(case, "failure", message=message, type=f"{f.code} {f.severity.value}")
                fail.text = _details(result.root, f)
            else:
                out = ET.SubElement(case, "system-out")
                out.text = _details(result.root, f)
        ET.indent(suites)
        return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"
