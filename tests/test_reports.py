"""Report formats: text, json, sarif, github, and `gpulint explain` rendering.

Results are built directly (no scan), with two small rule classes that carry
real docstrings and examples, so the formats are tested on their own.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest

from gpulint.core.model import CostImpact, Finding, Location, Related, Severity
from gpulint.run.plugins import PluginHost
from gpulint.report import ReportError, ReportOptions, builtin_reporters, render
from gpulint.report import github as gh
from gpulint.report.explain import explain, explain_markdown, explain_text, language
from gpulint.report.text import PRICE_NOTE
from gpulint.core.result import ScanResult
from gpulint.rule import Example, Expect, Rule

ROOT = Path(__file__).resolve().parents[1]
OUTPUT_SCHEMA = json.loads((ROOT / "gpulint" / "schemas" / "output.schema.json").read_text())
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())


class MissingMixedPrecision(Rule):
    """Training runs in fp32 on a GPU with Tensor Cores.

    What it does:
        Finds workloads that train on GPU without autocast, a GradScaler or a
        framework precision setting.
    Why it costs money:
        fp32 matmuls leave the Tensor Cores mostly idle; the same job runs
        1.5-3x longer and is billed for every hour.
    How to fix:
        Wrap the forward pass in autocast::

            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = model(batch)
    Cost model:
        At a 2x speed-up half of each training hour is avoidable.
    Sources:
        NVIDIA mixed precision training guide.
    """

    code = "AMP001"
    name = "missing-mixed-precision"
    severity = Severity.WARNING
    family = "AMP"
    since = "0.1.0"
    options = {"type": "object", "properties": {"min_gpus": {"type": "integer", "description": "smallest GPU count", "default": 1}}}
    INVALID = [
        Example(
            {
                "train.py": """
                for batch in loader:
                    loss = model(batch)
                    loss.backward()
                    opt.step()
                """,
                "infra/main.tf": 'resource "aws_instance" "t" { instance_type = "p4d.24xlarge" }\n',
            },
            expect=[Expect("train.py", 3, "fp32")],
        )
    ]
    VALID = [Example("with torch.autocast('cuda'):\n    loss = model(batch)\n", title="autocast on")]


class SpotWithoutCheckpointing(Rule):
    """Spot capacity without checkpoints loses all work at each interruption.

    What it does:
        Flags spot workloads whose code never saves a checkpoint.
    Why it costs money:
        Every interruption restarts training from step zero.
    How to fix:
        Save a checkpoint every N steps and resume from the latest one.
    Cost model:
        Expected lost hours per interruption times the hourly price.
    """

    code = "SPOT001"
    name = "spot-without-checkpointing"
    severity = Severity.ERROR
    family = "SPOT"


class PlainInfo(Rule):
    """Notebook cell keeps autograd state during inference.

    What it does:
        Flags model calls outside torch.no_grad().
    Why it costs money:
        Activations are kept for a backward pass that never comes.
    How to fix:
        Use torch.inference_mode().
    Cost model:
        Memory only; no hourly figure.
    """

    code = "INF002"
    name = "inference-without-no-grad"
    severity = Severity.INFO
    family = "INF"


RULES = [SpotWithoutCheckpointing, MissingMixedPrecision, PlainInfo]

AMP_COST = CostImpact(
    10.96,
    "p4d.24xlarge at $21.96/h (aws us-east-1, catalogue snapshot mid-2025); mixed precision typically "
    "runs 1.5-3x faster on A100 Tensor Cores; at 2x half of each training hour is avoidable.",
    "medium",
)


def _findings() -> list[Finding]:
    amp = Finding(
        code="AMP001",
        name="missing-mixed-precision",
        severity=Severity.WARNING,
        loc=Location("train.py", 42, 5, 42, 30),
        message="Training loop runs in fp32 on p4d.24xlarge (8x A100-40GB); no mixed precision found",
        guidance="Wrap the forward pass in torch.autocast:\n    with torch.autocast('cuda', dtype=torch.bfloat16):\n        loss = model(x)",
        cost_impact=AMP_COST,
        related=(Related(Location("infra/main.tf", 12, 3), "p4d.24xlarge, spot"),),
        workload="train.py",
        symbol="loop",
        fingerprint="a1b2c3d4e5f60718",
    )
    spot = Finding(
        code="SPOT001",
        name="spot-without-checkpointing",
        severity=Severity.ERROR,
        loc=Location("train.py", 7, 1),
        message="Runs on spot (infra/main.tf:12) but never saves a checkpoint: 100%, really, a:b",
        cost_impact=CostImpact(None, "Instance price unknown: p9x.huge is not in the catalogue.", "low"),
        related=(
            Related(Location("infra/main.tf", 12, 3), "capacity: spot"),
            Related(Location("launch/job.yaml", 4, 9), "launcher runs train.py"),
        ),
        workload="train.py",
        fingerprint="ffeeddccbbaa9988",
    )
    notebook = Finding(
        code="INF002",
        name="inference-without-no-grad",
        severity=Severity.INFO,
        loc=Location("notebooks/eval.ipynb", 57, 3, 57, 12, cell=4, cell_line=2),
        message="model(x) runs outside torch.no_grad()",
        workload=None,
        fingerprint="0011223344556677",
    )
    # Same path and line as `amp` but an earlier column: sorting must put it first.
    amp_early = amp.with_(loc=Location("train.py", 42, 1), message="fp32 again", fingerprint="1111", related=())
    return [amp, notebook, spot, amp_early]


WORKLOADS = [
    {
        "name": "train.py",
        "entrypoint": "train.py",
        "compute": {"instance": "p4d.24xlarge", "count": 1, "usd_per_hour": 21.96, "capacity": "spot"},
    },
    {"name": "serve.py", "compute": {}},
]


@pytest.fixture
def result() -> ScanResult:
    return ScanResult(
        root="/repo",
        findings=_findings(),
        workloads=[dict(w) for w in WORKLOADS],
        files_scanned=12,
        rules=list(RULES),
        enabled={"AMP001", "SPOT001"},
    )


def _render(result, fmt, **opts) -> str:
    return render(result, fmt, ReportOptions(**opts))


# -- registry -----------------------------------------------------------------


def test_formats_register_through_the_hook():
    import gpulint.report as reports

    host = PluginHost(extra_modules=[reports], use_entry_points=False)
    assert sorted(host.registry.formats) == ["github", "gitlab", "json", "junit", "markdown", "sarif", "text"]
    assert all(st.ok for st in host.statuses)


def test_render_helper_accepts_registry_mapping_and_rejects_unknown(result):
    formats = {r.name: r for r in builtin_reporters()}
    assert render(result, "json", ReportOptions(), formats) == _render(result, "json")
    with pytest.raises(ReportError, match="unknown output format 'xml'"):
        render(result, "xml", ReportOptions(), formats)


# -- text ---------------------------------------------------------------------


def test_text_lines_sorted_with_cost_and_notebook_cells(result):
    out = _render(result, "text")
    lines = out.splitlines()
    assert lines[:4] == [
        "notebooks/eval.ipynb:cell 4:2:3: INF002 [info] model(x) runs outside torch.no_grad()",
        "train.py:7:1: SPOT001 [error] Runs on spot (infra/main.tf:12) but never saves a checkpoint: 100%, really, a:b",
        "train.py:42:1: AMP001 [warning] fp32 again  (~$10.96/h avoidable)",
        "train.py:42:5: AMP001 [warning] Training loop runs in fp32 on p4d.24xlarge (8x A100-40GB); "
        "no mixed precision found  (~$10.96/h avoidable)",
    ]
    # null cost: no figure is invented
    assert "SPOT001" in lines[1] and "avoidable" not in lines[1]
    assert "\x1b[" not in out


def test_text_summary_and_spend_table(result):
    out = _render(result, "text")
    assert "Found 4 findings (1 error, 2 warnings, 1 info); 12 files scanned, 2 workloads found." in out
    table = out[out.index("Estimated avoidable spend") :]
    row = [ln for ln in table.splitlines() if ln.strip().startswith("train.py")][0]
    assert row.split() == ["train.py", "p4d.24xlarge", "$21.96", "$16.45", "$12,008"]  # combined 1-(1-s)^2, not the $21.92 sum; x 730 h
    assert "estimates" in table and "catalogue" in table and "date" in table
    assert " ".join(table.split()).count(" ".join(PRICE_NOTE.split())) == 1


def test_text_without_any_price_has_no_table(result):
    result.findings = [f for f in result.findings if f.code != "AMP001"]
    out = _render(result, "text")
    assert "Estimated avoidable spend" not in out
    assert "estimates" not in out
    assert out.rstrip().endswith("2 workloads found.")


def test_text_quiet_shows_findings_only(result):
    out = _render(result, "text", quiet=True)
    assert len(out.splitlines()) == 4
    assert "Found" not in out and "Estimated" not in out


def test_text_empty_result():
    out = _render(ScanResult(root=".", files_scanned=3), "text")
    assert out == "No findings (0 errors, 0 warnings, 0 info); 3 files scanned, 0 workloads found.\n"
    assert _render(ScanResult(root="."), "text", quiet=True) == ""


def test_text_show_guidance_indents_guidance_related_and_basis(result):
    out = _render(result, "text", show_guidance=True)
    block = out[out.index("train.py:42:5:") :].split("\n\n")[0].splitlines()
    assert block[1] == "    related: infra/main.tf:12: p4d.24xlarge, spot"
    assert block[2] == "    Wrap the forward pass in torch.autocast:"
    assert block[3] == "        with torch.autocast('cuda', dtype=torch.bfloat16):"
    assert block[-1].startswith("    cost: $10.96/h (medium confidence). p4d.24xlarge at $21.96/h (aws us-east-1")
    spot = out[out.index("train.py:7:1:") :].split("\n\n")[0]
    assert "cost: no figure (low confidence). Instance price unknown" in spot
    notebook = out[: out.index("train.py:7:1:")]
    assert "cost:" not in notebook  # NO_COST says nothing worth a line


def test_text_color_only_when_asked(result):
    colored = _render(result, "text", color=True)
    assert "\x1b[31m" in colored and "\x1b[0m" in colored
    plain = re.sub(r"\x1b\[[0-9;]*m", "", colored)
    assert plain == _render(result, "text")


def test_text_relative_root_prefixes_paths_for_terminals(result):
    result.root = "./services/trainer"
    out = _render(result, "text", quiet=True)
    assert out.splitlines()[1].startswith("services/trainer/train.py:7:1: SPOT001")


def test_text_multiline_message_stays_one_line(result):
    result.findings = [result.findings[0].with_(message="first\nsecond\r\nthird")]
    assert _render(result, "text", quiet=True).splitlines()[0].endswith("first second third  (~$10.96/h avoidable)")


def test_text_verbose_adds_internal_errors(result):
    result.errors = ["Traceback (most recent call last):\n  boom"]
    assert "Traceback" not in _render(result, "text")
    out = _render(result, "text", verbose=True)
    assert "Internal errors" in out and "    Traceback" in out


# -- json ---------------------------------------------------------------------


def test_json_shape_and_schema(result):
    doc = json.loads(_render(result, "json"))
    jsonschema.Draft202012Validator.check_schema(OUTPUT_SCHEMA)
    jsonschema.validate(doc, OUTPUT_SCHEMA, cls=jsonschema.Draft202012Validator)
    assert list(doc) == ["version", "root", "findings", "workloads", "summary"]
    assert doc["root"] == "/repo"
    first = [f for f in doc["findings"] if f["fingerprint"] == "a1b2c3d4e5f60718"][0]
    assert list(first) == [
        "code", "name", "severity", "path", "line", "column", "end_line", "end_column", "message",
        "guidance", "cost_impact", "related", "workload", "workloads", "fingerprint",
    ]
    assert first["cost_impact"] == {"usd_per_hour": 10.96, "basis": AMP_COST.basis, "confidence": "medium"}
    assert first["related"] == [{"path": "infra/main.tf", "line": 12, "message": "p4d.24xlarge, spot", "column": 3}]
    assert [(f["path"], f["line"], f["column"]) for f in doc["findings"]] == [
        ("notebooks/eval.ipynb", 57, 3), ("train.py", 7, 1), ("train.py", 42, 1), ("train.py", 42, 5),
    ]
    nb = doc["findings"][0]
    assert (nb["cell"], nb["cell_line"]) == (4, 2)
    assert doc["findings"][1]["cost_impact"]["usd_per_hour"] is None
    assert doc["summary"]["findings"] == {"error": 1, "warning": 2, "info": 1}
    assert doc["summary"]["files"] == 12
    assert doc["summary"]["usd_per_hour_avoidable"] == 16.45
    assert [w["name"] for w in doc["workloads"]] == ["serve.py", "train.py"]


def test_json_is_deterministic_whatever_the_input_order(result):
    a = _render(result, "json")
    result.findings.reverse()
    result.workloads.reverse()
    assert _render(result, "json") == a


def test_json_never_emits_nan_and_survives_odd_workload_values(result):
    result.findings = [result.findings[0].with_(cost_impact=CostImpact(float("nan"), "broken", "low"))]
    result.workloads = [{"name": "w", "paths": {Path("b"), Path("a")}, "sev": Severity.ERROR, "x": float("inf")}]
    text = _render(result, "json")
    doc = json.loads(text)
    assert "NaN" not in text and "Infinity" not in text
    assert doc["findings"][0]["cost_impact"]["usd_per_hour"] is None
    assert doc["workloads"] == [{"name": "w", "paths": ["a", "b"], "sev": "error", "x": None}]


def test_output_schema_rejects_what_the_contract_forbids(result):
    doc = json.loads(_render(result, "json"))
    bad = json.loads(json.dumps(doc))
    bad["findings"][0]["severity"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, OUTPUT_SCHEMA, cls=jsonschema.Draft202012Validator)
    bad = json.loads(json.dumps(doc))
    del bad["findings"][0]["fingerprint"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, OUTPUT_SCHEMA, cls=jsonschema.Draft202012Validator)
    bad = json.loads(json.dumps(doc))
    bad["workloads"].append({"compute": {}})
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, OUTPUT_SCHEMA, cls=jsonschema.Draft202012Validator)


def test_json_empty_result_is_valid():
    doc = json.loads(_render(ScanResult(root="."), "json"))
    jsonschema.validate(doc, OUTPUT_SCHEMA, cls=jsonschema.Draft202012Validator)
    assert doc["findings"] == [] and doc["summary"]["usd_per_hour_avoidable"] == 0.0


# -- sarif --------------------------------------------------------------------


def _sarif(result) -> dict:
    doc = json.loads(_render(result, "sarif"))
    assert SARIF_SCHEMA["$schema"] == "http://json-schema.org/draft-04/schema#"
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(doc)
    return doc


def test_sarif_valid_and_complete(result):
    doc = _sarif(result)
    assert doc["version"] == "2.1.0" and len(doc["runs"]) == 1
    run = doc["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "gpulint" and driver["version"] == result.version
    assert "informationUri" not in driver
    assert [r["id"] for r in driver["rules"]] == ["AMP001", "INF002", "SPOT001"]
    amp = driver["rules"][0]
    assert amp["name"] == "missing-mixed-precision"
    assert amp["shortDescription"]["text"] == "Training runs in fp32 on a GPU with Tensor Cores."
    assert amp["fullDescription"]["text"].startswith("Finds workloads that train on GPU")
    assert "## Why it costs money" in amp["help"]["markdown"]
    assert "```python" in amp["help"]["markdown"]
    assert "Why it costs money:" in amp["help"]["text"]
    assert amp["defaultConfiguration"] == {"level": "warning"}
    assert amp["properties"]["family"] == "AMP" and "amp" in amp["properties"]["tags"]
    levels = {r["id"]: r["defaultConfiguration"]["level"] for r in driver["rules"]}
    assert levels == {"AMP001": "warning", "INF002": "note", "SPOT001": "error"}
    # INF002 is known but not enabled by the config
    assert driver["rules"][1]["defaultConfiguration"]["enabled"] is False

    assert run["originalUriBaseIds"] == {"%SRCROOT%": {"uri": "file:///repo/"}}
    res = run["results"]
    assert [r["ruleId"] for r in res] == ["INF002", "SPOT001", "AMP001", "AMP001"]
    for r in res:
        assert driver["rules"][r["ruleIndex"]]["id"] == r["ruleId"]
        assert r["message"]["text"].strip()
        loc = r["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert not loc["artifactLocation"]["uri"].startswith(("/", "./"))
        assert loc["region"]["startLine"] >= 1 and loc["region"]["startColumn"] >= 1
    amp_res = res[3]
    assert amp_res["level"] == "warning"
    assert amp_res["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 42, "startColumn": 5, "endLine": 42, "endColumn": 30,
    }
    assert amp_res["partialFingerprints"] == {"gpulintFingerprint/v1": "a1b2c3d4e5f60718"}
    assert amp_res["properties"]["cost_impact"]["usd_per_hour"] == 10.96
    assert amp_res["properties"]["workload"] == "train.py"
    spot_res = res[1]
    assert spot_res["level"] == "error"
    assert spot_res["properties"]["cost_impact"]["usd_per_hour"] is None
    rel = spot_res["relatedLocations"]
    assert [x["id"] for x in rel] == [1, 2]
    assert rel[1]["physicalLocation"]["artifactLocation"]["uri"] == "launch/job.yaml"
    assert rel[1]["message"]["text"] == "launcher runs train.py"
    nb = res[0]
    assert nb["level"] == "note"
    assert nb["properties"]["notebook_cell"] == 4


def test_sarif_uris_are_encoded_and_relative(result):
    result.findings = [
        result.findings[0].with_(loc=Location("./my dir/train #1.py", 0, 0), message="   "),
    ]
    doc = _sarif(result)
    r = doc["runs"][0]["results"][0]
    loc = r["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "my%20dir/train%20%231.py"
    assert loc["region"] == {"startLine": 1, "startColumn": 1}
    assert r["message"]["text"] == "AMP001 missing-mixed-precision"


def test_sarif_relative_root_resolves_from_working_directory(result, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    result.root = "services/trainer"
    doc = _sarif(result)
    run = doc["runs"][0]
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.as_uri() + "/"
    assert run["results"][1]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "services/trainer/train.py"


def test_sarif_uris_are_uri_references(result):
    from urllib.parse import urlsplit

    doc = _sarif(result)
    run = doc["runs"][0]
    base = urlsplit(run["originalUriBaseIds"]["%SRCROOT%"]["uri"])
    assert base.scheme == "file" and base.path.endswith("/")
    for res in run["results"]:
        for loc in res["locations"] + res.get("relatedLocations", []):
            uri = loc["physicalLocation"]["artifactLocation"]["uri"]
            parts = urlsplit(uri)
            assert not parts.scheme and not parts.netloc and " " not in uri and "\\" not in uri


def test_sarif_windows_root_becomes_a_file_uri(result):
    result.root = "C:\\work\\repo"
    doc = _sarif(result)
    assert doc["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"] == "file:///C:/work/repo/"


def test_sarif_inverted_end_and_unknown_rule_are_repaired(result):
    odd = Finding(
        code="XYZ123",
        name="from-a-broken-plugin",
        severity=Severity.WARNING,
        loc=Location("a.py", 5, 10, 5, 2),
        message="m",
    )
    result.findings = [odd]
    doc = _sarif(result)
    run = doc["runs"][0]
    r = run["results"][0]
    assert run["tool"]["driver"]["rules"][r["ruleIndex"]]["id"] == "XYZ123"
    assert r["locations"][0]["physicalLocation"]["region"]["endColumn"] == 10
    assert "partialFingerprints" not in r


def test_sarif_deterministic_and_empty_valid(result):
    a = _render(result, "sarif")
    result.findings.reverse()
    assert _render(result, "sarif") == a
    doc = _sarif(ScanResult(root="/repo"))
    assert doc["runs"][0]["results"] == []


# -- github -------------------------------------------------------------------


def test_github_commands(result):
    lines = _render(result, "github").splitlines()
    assert lines[0] == (
        "::notice file=notebooks/eval.ipynb,line=57,col=3,endLine=57,endColumn=12,"
        "title=INF002 inference-without-no-grad::model(x) runs outside torch.no_grad()"
    )
    assert lines[1] == (
        "::error file=train.py,line=7,col=1,title=SPOT001 spot-without-checkpointing::"
        "Runs on spot (infra/main.tf:12) but never saves a checkpoint: 100%25, really, a:b"
    )
    assert lines[3] == (
        "::warning file=train.py,line=42,col=5,endLine=42,endColumn=30,title=AMP001 missing-mixed-precision::"
        "Training loop runs in fp32 on p4d.24xlarge (8x A100-40GB); no mixed precision found  (~$10.96/h avoidable)"
    )


def test_github_escaping():
    assert gh.escape_data("50%\r\nnext") == "50%25%0D%0Anext"
    assert gh.escape_property("a,b:c%d\ne") == "a%2Cb%3Ac%25d%0Ae"
    f = Finding("AMP001", "missing-mixed-precision", Severity.WARNING, Location("dir,x/a:b.py", 1, 1), "m")
    assert gh.command(".", f).startswith("::warning file=dir%2Cx/a%3Ab.py,line=1,col=1,")


def test_github_show_guidance_is_one_escaped_command(result):
    out = _render(result, "github", show_guidance=True)
    assert len(out.splitlines()) == 4
    amp = out.splitlines()[3]
    assert "%0A%0AWrap the forward pass" in amp
    assert "Related: infra/main.tf:12: p4d.24xlarge, spot" in amp


def test_github_empty_is_empty():
    assert _render(ScanResult(root="."), "github") == ""


# -- explain ------------------------------------------------------------------


def test_explain_text_sections_in_order_with_examples():
    out = explain_text(MissingMixedPrecision)
    assert out.startswith("AMP001 missing-mixed-precision\nTraining runs in fp32 on a GPU with Tensor Cores.\n")
    assert "severity: warning, family: AMP, since: 0.1.0, enabled by default: yes" in out
    order = [out.index(t) for t in ("What it does:", "Why it costs money:", "How to fix:", "Cost model:", "Sources:")]
    assert order == sorted(order)
    assert out.index("Before (flagged):") < out.index("After (not flagged): autocast on")
    assert "  --- train.py\n    for batch in loader:\n        loss = model(batch)" in out
    assert "  --- infra/main.tf" in out
    assert "reports AMP001 at train.py:3 (message mentions 'fp32')" in out
    assert "min_gpus [integer]: smallest GPU count (default 1)" in out


def test_explain_markdown_code_blocks_with_file_names():
    md = explain_markdown(MissingMixedPrecision)
    assert md.startswith("# AMP001 missing-mixed-precision\n")
    assert "**severity**: warning" in md
    assert "## How to fix" in md
    assert "## Before (flagged)\n\n`train.py`:\n\n```python\nfor batch in loader:" in md
    assert "`infra/main.tf`:\n\n```hcl\n" in md
    assert "## After (not flagged): autocast on" in md
    assert md.count("```") % 2 == 0
    assert explain(MissingMixedPrecision, "markdown") == md
    with pytest.raises(ValueError):
        explain(MissingMixedPrecision, "html")


def test_explain_rule_without_examples_or_options():
    out = explain(SpotWithoutCheckpointing)
    assert "Before" not in out and "Options" not in out
    assert "severity: error, family: SPOT" in out


def test_explain_fence_survives_backticks_in_examples():
    class Ticks(Rule):
        """Has backticks.

        What it does:
            x
        Why it costs money:
            x
        How to fix:
            x
        Cost model:
            x
        """

        code = "IO009"
        name = "ticks"
        family = "IO"
        VALID = [Example({"README.md": "```\ncode\n```\n"})]

    md = explain_markdown(Ticks)
    assert "````\n```\ncode\n```\n````" in md


@pytest.mark.parametrize(
    "path, lang",
    [("train.py", "python"), ("a/Dockerfile", "dockerfile"), ("c.yml", "yaml"), ("main.tf", "hcl"), ("x.unknown", "")],
)
def test_explain_languages(path, lang):
    assert language(path) == lang


def test_every_installed_rule_renders_in_explain_and_sarif():
    """Rules of the installed packs (whatever has loaded so far) document cleanly."""
    rules = list(PluginHost().registry.rules.values())
    result = ScanResult(root="/repo", rules=rules + list(RULES))
    doc = _sarif(result)
    ids = [r["id"] for r in doc["runs"][0]["tool"]["driver"]["rules"]]
    assert ids == sorted(set(ids))
    for rule in rules:
        md = explain_markdown(rule)
        assert md.startswith(f"# {rule.code} {rule.name}")
        assert md.count("```") % 2 == 0
        assert explain_text(rule).startswith(f"{rule.code} {rule.name}")
