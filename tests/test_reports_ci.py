"""The pull-request formats, each read back by what consumes it: GitLab Code Quality
(its documented field set and severities, as a JSON Schema), JUnit XML (a standard XML
parser, as CI systems read it), Markdown (a CommonMark parser with GitHub's tables);
plus the cost-gate and diff-base lines of the text summary and `--statistics`."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import jsonschema
import pytest
from markdown_it import MarkdownIt

from conftest import FIXTURES, run_cli
from test_reports import RULES, WORKLOADS, _findings

from gpulint.core.model import CostImpact, Finding, Fix, Location, Severity
from gpulint.report import ReportOptions, render
from gpulint.core.result import CostGate, DiffBase, ScanResult

# GitLab's Code Quality report format (docs.gitlab.com/ci/testing/code_quality/, "Code Quality
# report format"): an array of objects with these fields; `severity` one of five values;
# `location.path` relative to the repository; `location.lines.begin` (or positions.begin.line).
GITLAB_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "array",
    "items": {
        "type": "object",
        "required": ["description", "check_name", "fingerprint", "severity", "location"],
        "properties": {
            "description": {"type": "string", "minLength": 1},
            "check_name": {"type": "string", "minLength": 1},
            "fingerprint": {"type": "string", "minLength": 1},
            "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
            "location": {
                "type": "object",
                "required": ["path", "lines"],
                "properties": {
                    "path": {"type": "string", "minLength": 1, "not": {"pattern": r"^(/|\./)|\\"}},
                    "lines": {"type": "object", "required": ["begin"],
                              "properties": {"begin": {"type": "integer", "minimum": 1}, "end": {"type": "integer", "minimum": 1}}},
                },
            },
            # the Code Climate fields GitLab accepts
            "type": {"const": "issue"},
            "categories": {"type": "array", "items": {"type": "string"}},
            "content": {"type": "object", "required": ["body"], "properties": {"body": {"type": "string"}}},
        },
    },
}


@pytest.fixture
def result() -> ScanResult:
    return ScanResult(root="/repo", findings=_findings(), workloads=[dict(w) for w in WORKLOADS], files_scanned=12,
                      rules=list(RULES), enabled={"AMP001", "SPOT001"})


def _render(result, fmt, **opts) -> str:
    return render(result, fmt, ReportOptions(**opts))


# -- GitLab Code Quality --------------------------------------------------------------------------
def test_gitlab_validates_against_the_documented_shape(result):
    issues = json.loads(_render(result, "gitlab"))
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert [i["check_name"] for i in issues] == ["INF002", "SPOT001", "AMP001", "AMP001"]  # sorted by place
    assert len({i["fingerprint"] for i in issues}) == len(issues)  # GitLab compares branches by fingerprint
    by_fp = {i["fingerprint"]: i for i in issues}
    amp = by_fp["a1b2c3d4e5f60718"]
    assert amp["severity"] == "major" and amp["location"] == {"path": "train.py", "lines": {"begin": 42, "end": 42}}
    assert "(~$10.96/h avoidable)" in amp["description"] and "torch.autocast" in amp["content"]["body"]
    assert "`infra/main.tf:12`" in amp["content"]["body"]
    assert by_fp["ffeeddccbbaa9988"]["severity"] == "critical" and by_fp["0011223344556677"]["severity"] == "info"


def test_gitlab_paths_follow_a_relative_root_and_empty_is_an_array(result):
    result.root = "services/train"
    issues = json.loads(_render(result, "gitlab"))
    jsonschema.validate(issues, GITLAB_SCHEMA)
    assert {i["location"]["path"] for i in issues} == {"services/train/train.py", "services/train/notebooks/eval.ipynb"}
    assert json.loads(_render(ScanResult(root="."), "gitlab")) == []


# -- JUnit XML ------------------------------------------------------------------------------------
def _junit(result) -> ET.Element:
    return ET.fromstring(_render(result, "junit").encode("utf-8"))


@pytest.mark.parametrize("fail_on,failures", [(Severity.WARNING, 3), (Severity.ERROR, 1), (Severity.INFO, 4)])
def test_junit_one_case_per_finding_failures_at_or_above_fail_on(result, fail_on, failures):
    result.fail_on = fail_on
    root = _junit(result)
    assert root.tag == "testsuites"
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == 4 == int(suite.get("tests")) == int(root.get("tests"))
    failed = [c for c in cases if c.find("failure") is not None]
    assert len(failed) == failures == int(suite.get("failures")) == int(root.get("failures"))
    for c in cases:
        assert c.get("classname").startswith("gpulint.") and c.get("file") and int(c.get("line")) >= 1
        assert (c.find("failure") is None) == (c.find("system-out") is not None)  # passing findings still say what they are
    spot = next(c for c in cases if c.get("name").startswith("SPOT001"))
    assert spot.get("name") == "SPOT001 train.py:7:1"
    fail = spot.find("failure")
    assert fail.get("type") == "SPOT001 error" and "never saves a checkpoint" in fail.get("message")
    assert "Related: launch/job.yaml:4" in fail.text


def test_junit_escapes_and_drops_what_xml_cannot_carry(result):
    weird = Finding("AMP001", "missing-mixed-precision", Severity.ERROR, Location('a&b/<x> "q".py', 3, 1),
                    'bad <tag> & "quotes" \x1b[31m\x00 end', guidance="]]> <![CDATA[")
    result.findings = [weird]
    case = _junit(result).find("testsuite/testcase")
    assert case.get("file") == 'a&b/<x> "q".py'
    assert case.find("failure").get("message") == 'bad <tag> & "quotes" [31m end'
    assert "]]> <![CDATA[" in case.find("failure").text


def test_junit_without_findings_is_one_passing_case():
    root = _junit(ScanResult(root="."))
    (case,) = root.findall("testsuite/testcase")
    assert case.get("name") == "gpulint scan" and case.find("failure") is None and root.get("failures") == "0"


# -- Markdown -------------------------------------------------------------------------------------
def _md(text: str):
    return MarkdownIt("commonmark").enable("table").parse(text)


def _tables(tokens) -> list[list[list[str]]]:
    """Each table as rows of cell texts, as GitHub would lay it out."""
    tables, rows, row, inside = [], [], [], False
    for i, t in enumerate(tokens):
        if t.type == "table_open":
            rows, inside = [], True
        elif t.type == "table_close":
            tables.append(rows)
            inside = False
        elif inside and t.type == "tr_open":
            row = []
        elif inside and t.type == "tr_close":
            rows.append(row)
        elif inside and t.type == "inline":
            row.append(t.content)
    return tables


def test_markdown_summary_counts_cost_table_and_findings_by_file(result):
    text = _render(result, "markdown")
    tokens = _md(text)
    heads = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    assert heads[0] == "gpulint: 4 findings (1 error, 2 warnings, 1 info)"
    assert heads[1:] == ["Estimated avoidable spend", "Findings", "`notebooks/eval.ipynb`", "`train.py`"]
    (table,) = _tables(tokens)
    assert table[0] == ["Workload", "Instance", "Capacity", "Price/h", "Avoidable/h", "Avoidable/month"]
    # two AMP001 findings of $10.96/h on a $21.96/h workload combine to $16.45/h; a month is 730 h
    assert table[1] == ["`train.py`", "p4d.24xlarge", "spot", "$21.96", "$16.45", "$12,008"]
    assert "a month is 730 hours" in text
    assert "1 workload with findings has no known instance" not in text  # serve.py has no findings
    # guidance folded under each finding, as HTML blocks GitHub renders as <details>
    blocks = [t.content for t in tokens if t.type == "html_block"]
    assert sum("<details><summary>Guidance</summary>" in b for b in blocks) == 3  # the notebook finding has none
    assert "with torch.autocast('cuda', dtype=torch.bfloat16):" in text


def test_markdown_table_leaves_out_workloads_without_an_instance(result):
    result.findings = [f.with_(workload="serve.py", cost_impact=CostImpact(None, "no price", "low")) for f in result.findings]
    result.fixable = (0, 2)
    text = _render(result, "markdown")
    assert _tables(_md(text)) == []
    assert "1 workload with findings has no known instance, so no price" in text
    assert "2 findings fixable with `gpulint scan --fix --unsafe-fixes`." in text


def test_markdown_escapes_repository_text(result):
    evil = Finding("AMP001", "missing-mixed-precision", Severity.WARNING, Location("a|b.py", 1), "x | y <img src=x onerror=alert(1)> *z*",
                   workload="w|1", cost_impact=CostImpact(1.0, "b", "low"))
    result.findings = [evil]
    result.workloads = [{"name": "w|1", "compute": {"instance": "p4d|x", "usd_per_hour": 2.0}}]
    tokens = _md(_render(result, "markdown"))
    assert not [t for t in tokens if t.type == "html_inline"] and not any("<img" in t.content for t in tokens if t.type == "html_block")
    (table,) = _tables(tokens)
    assert all(len(r) == 6 for r in table)  # a '|' in a name cannot add a column
    inline = [t for t in tokens if t.type == "inline" and "onerror" in t.content]
    assert inline and not any(c.type == "em_open" for t in inline for c in t.children)


def test_markdown_stays_under_githubs_comment_limit(result):
    base = _findings()[0]
    result.findings = [base.with_(loc=Location(f"pkg/m{i}.py", 3), fingerprint=str(i)) for i in range(3000)]
    text = _render(result, "markdown")
    assert len(text) < 65_536
    assert "more findings not shown" in text


def test_markdown_diff_base_gate_and_fix_lines(result):
    amp = result.findings[0]
    result.findings = [amp.with_(fix=Fix("Add pin_memory=True", "safe"))]
    result.diff_base = DiffBase("origin/main", "0123456789abcdef0123", 5, 1, 2, 3.5, 14.46, 10.96, {}, [amp])
    result.cost_gate = CostGate(5.0, 10.96, [amp])
    text = _render(result, "markdown")
    assert text.startswith("## gpulint: 1 new finding (0 errors, 1 warning, 0 info)")
    assert ("Compared with `origin/main` (merge base `0123456789ab`): 1 new finding, 2 findings gone. "
            "**New avoidable spend: $10.96/h** (about $8,001 a month)") in text
    assert "**Cost gate failed**: $10.96/h avoidable is more than the $5.00/h limit (`--fail-on-cost 5`)." in text
    assert "- $10.96/h AMP001 at `train.py:42`" in text
    assert "fixable with `--fix`" in text and "Fix: Add pin\\_memory=True." in text
    _md(text)


def test_text_summary_states_gate_and_diff_base(result):
    result.diff_base = DiffBase("origin/main", "0123456789abcdef", 5, 2, 1, 3.5, 14.46, 10.96, {"x": 1.0}, [])
    result.cost_gate = CostGate(5.0, 10.96, [result.findings[0]])
    text = _render(result, "text")
    assert "Against origin/main (merge base 0123456789ab): 2 new findings, 1 costlier than there, 1 finding gone; new avoidable spend: $10.96/h" in text
    assert "Cost gate failed: $10.96/h avoidable is more than the $5.00/h limit." in text
    assert "$10.96/h  AMP001 /repo/train.py:42:5  (train.py)" not in text and "$10.96/h  AMP001 train.py:42:5  (train.py)" in text
    result.cost_gate = CostGate(20.0, 10.96, [])
    assert "Cost gate passed: $10.96/h avoidable, limit $20.00/h." in _render(result, "text")


def test_json_summary_carries_gate_and_diff_base_and_validates(result):
    from test_reports import OUTPUT_SCHEMA

    result.findings = [result.findings[0].with_(fix=Fix("Set bf16=True", "unsafe", (), "numerics change"))]
    result.diff_base = DiffBase("main", "abc", 1, 1, 0, 0.0, 10.96, 10.96, {}, [])
    result.cost_gate = CostGate(1.0, 10.96, result.findings)
    doc = json.loads(_render(result, "json"))
    jsonschema.validate(doc, OUTPUT_SCHEMA)
    assert doc["findings"][0]["fix"] == {"description": "Set bf16=True", "applicability": "unsafe", "unsafe_because": "numerics change"}
    assert doc["summary"]["cost_gate"] == {"limit_usd_per_hour": 1.0, "usd_per_hour_avoidable": 10.96, "failed": True,
                                           "findings": ["a1b2c3d4e5f60718"]}
    assert doc["summary"]["diff_base"]["usd_per_hour_avoidable_new"] == 10.96


# -- through the command line ---------------------------------------------------------------------
def test_every_format_through_the_cli_on_a_fixture():
    repo = FIXTURES / "pytorch-fp32-loop"
    gl = run_cli("scan", ".", "--output-format", "gitlab", cwd=repo)
    jsonschema.validate(json.loads(gl.stdout), GITLAB_SCHEMA)
    assert gl.returncode == 1
    ju = run_cli("scan", ".", "--format", "junit", "--fail-on", "error", cwd=repo)
    root = ET.fromstring(ju.stdout.encode())
    assert int(root.get("tests")) == len(json.loads(gl.stdout)) and root.get("failures") == "0" and ju.returncode == 0
    md = run_cli("scan", ".", "--format", "markdown", cwd=repo)
    assert md.stdout.startswith("## gpulint: ") and _md(md.stdout)


def test_statistics_counts_per_code_like_ruff():
    repo = FIXTURES / "pytorch-fp32-loop"
    full = json.loads(run_cli("scan", ".", "--format", "json", cwd=repo).stdout)["findings"]
    proc = run_cli("scan", ".", "--statistics", cwd=repo)
    rows = [line.split("\t") for line in proc.stdout.splitlines()]
    counts = {}
    for f in full:
        counts[f["code"]] = counts.get(f["code"], 0) + 1
    assert {r[1].strip(): int(r[0]) for r in rows} == counts
    assert [int(r[0]) for r in rows] == sorted((int(r[0]) for r in rows), reverse=True)
    marks = {r[1].strip(): r[2][:3] for r in rows}
    assert marks["IO002"] == "[*]" and marks["IO001"] == "[-]" and marks["AMP001"] == "[ ]"
    assert proc.returncode == 1  # the gate still decides
    js = json.loads(run_cli("scan", ".", "--statistics", "--format", "json", cwd=repo).stdout)
    assert {r["code"]: r["count"] for r in js} == counts
    assert next(r for r in js if r["code"] == "IO002")["fixable"] is True
