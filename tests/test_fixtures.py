"""End to end over the sample repositories in fixtures/: exact findings, every
report format against its contract, and the exit codes of design/output.md.
Everything runs the CLI in a subprocess, as a user or CI would."""
from __future__ import annotations

import json
import re
import shutil
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest

from conftest import FIXTURES, ROOT, run_cli

OUTPUT_SCHEMA = json.loads((ROOT / "gpulint" / "schemas" / "output.schema.json").read_text(encoding="utf-8"))
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))

# (code, path relative to the fixture, line) of every finding each fixture must produce
EXPECTED = {
    "pytorch-fp32-loop": [
        ("NET005", "train.py", 24),
        ("NET006", "train.py", 27),
        ("IO001", "train.py", 30),
        ("IO002", "train.py", 30),
        ("AMP001", "train.py", 36),
        # the A100s it asks for are Ampere (the GPU-hour rate's instance says so): fp32 matmuls without TF32
        ("AMP005", "train.py", 36),
    ],
    "accelerate-no-mp": [("AMP001", "configs/accelerate.yaml", 8)],
    "hf-trainer-bf16": [],
    "clean": [],
    "broken": [
        ("SYS001", "configs/train.yaml", 6),
        ("SYS001", "seg/augment.py", 11),
        ("AMP001", "train.py", 19),
    ],
    "notebook": [("AMP001", "finetune_vit.ipynb", 82)],
    # its own CUDA kernel's backward is not the training step (the loop's loss.backward() at 82 is); TF32 is on
    "amp-custom-kernel": [("AMP001", "train.py", 82)],
    "hf-trainer-subclass-fp32": [("AMP001", "vlm/train.py", 39)],
}


def validate_json_report(text: str) -> dict:
    data = json.loads(text)
    jsonschema.Draft202012Validator(OUTPUT_SCHEMA).validate(data)
    return data


def validate_sarif(text: str) -> dict:
    data = json.loads(text)
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(data)
    return data


@lru_cache(maxsize=None)
def scan_json(name: str) -> tuple[int, dict]:
    proc = run_cli("scan", f"fixtures/{name}", "--format", "json", cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, validate_json_report(proc.stdout)


def triples(data: dict) -> list[tuple[str, str, int]]:
    return [(f["code"], f["path"], f["line"]) for f in data["findings"]]


# -- exact findings ---------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture_findings_are_exact(name):
    rc, data = scan_json(name)
    assert sorted(triples(data)) == sorted(EXPECTED[name])
    assert rc == (1 if EXPECTED[name] else 0)
    assert data["root"] == f"fixtures/{name}"
    # findings come sorted by path, line, column, code
    keys = [(f["path"], f["line"], f["column"], f["code"]) for f in data["findings"]]
    assert keys == sorted(keys)


def test_hf_trainer_bf16_has_no_finding():
    rc, data = scan_json("hf-trainer-bf16")
    assert triples(data) == []
    assert rc == 0


def test_hf_trainer_bf16_args_file_without_shared_keys_is_clean(tmp_path):
    """The same project with the DeepSpeed-looking key removed: bf16 from the
    JSON arguments file is understood, workers are set, nothing to report.
    (The fixture itself keeps gradient_accumulation_steps, a key DeepSpeed
    configs share, which once made the file look like one.)"""
    repo = tmp_path / "hf"
    shutil.copytree(FIXTURES / "hf-trainer-bf16", repo)
    args = repo / "configs" / "train_args.json"
    data = json.loads(args.read_text())
    del data["gradient_accumulation_steps"]
    args.write_text(json.dumps(data, indent=2) + "\n")
    proc = run_cli("scan", repo, "--format", "json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert validate_json_report(proc.stdout)["findings"] == []


def test_hf_trainer_bf16_flag_from_launcher(tmp_path):
    """TrainingArguments from the command line, `--bf16 True` in the launcher: no AMP001;
    the same launcher without the flag: AMP001 at the trainer."""
    repo = tmp_path / "hf"
    shutil.copytree(FIXTURES / "hf-trainer-bf16", repo)
    (repo / "configs" / "train_args.json").unlink()
    train = repo / "train.py"
    train.write_text(train.read_text().replace("(training_args,) = parser.parse_json_file(json_file=sys.argv[1])",
                                               "(training_args,) = parser.parse_args_into_dataclasses()"))
    launcher = repo / "scripts" / "run_sft.sh"
    launcher.write_text("#!/bin/bash\nset -euo pipefail\ntorchrun --nproc_per_node 8 train.py --output_dir out "
                        "--bf16 True --dataloader_num_workers 8\n")
    proc = run_cli("scan", repo, "--format", "json")
    assert proc.returncode == 0, proc.stdout
    assert validate_json_report(proc.stdout)["findings"] == []

    launcher.write_text("#!/bin/bash\nset -euo pipefail\ntorchrun --nproc_per_node 8 train.py --output_dir out "
                        "--dataloader_num_workers 8\n")
    proc = run_cli("scan", repo, "--format", "json")
    data = validate_json_report(proc.stdout)
    assert [(f["code"], f["path"]) for f in data["findings"]] == [("AMP001", "train.py")]
    assert proc.returncode == 1


def test_accelerate_finding_points_at_the_key_and_names_related_places():
    _, data = scan_json("accelerate-no-mp")
    (f,) = data["findings"]
    assert (f["line"], f["column"]) == (8, 1)
    assert "mixed_precision" in f["message"]
    assert f["workload"] == "train.py"
    related = {(r["path"], r["line"]) for r in f["related"]}
    assert ("train.py", 23) in related  # the training step it judged
    assert ("scripts/train.sh", 3) in related  # the launcher that passes the config


def test_every_finding_carries_guidance_cost_and_fingerprint():
    for name in EXPECTED:
        _, data = scan_json(name)
        for f in data["findings"]:
            assert f["guidance"].strip()
            assert f["fingerprint"]
            cost = f["cost_impact"]
            if f["code"] == "AMP001" and name == "notebook":
                # the kernel's instance (metadata) and a named ViT: a figure, with the assumption it rests on
                assert cost["usd_per_hour"] and "assumed" in cost["basis"] and "g4dn.xlarge" in cost["basis"]
            elif f["code"] == "AMP001" and name == "amp-custom-kernel":
                # priced instance, but TF32 is on: the plain-fp32 speed-up does not hold, so no figure, and it says why
                assert cost["usd_per_hour"] is None and "TF32 is on" in cost["basis"]
            elif f["code"] == "AMP001" and name == "pytorch-fp32-loop":
                # the quick start's Slurm job names 8 A100s and no machine: priced per GPU-hour, the assumption said
                assert cost["usd_per_hour"] == 7.32 and "8x A100-SXM4-40GB at $21.96/h" in cost["basis"]
                assert "the repository names the GPU, not the machine" in cost["basis"]
            elif f["code"] == "AMP001":
                # no instance anywhere in these repos: no price invented, the basis says why
                assert cost["usd_per_hour"] is None
                assert "instance" in cost["basis"].lower()


def test_summary_counts_match_findings():
    _, data = scan_json("pytorch-fp32-loop")
    assert data["summary"]["findings"] == {"error": 0, "warning": 4, "info": 2}
    assert data["summary"]["files"] >= 4
    assert [w["entrypoint"] for w in data["workloads"]] == ["train.py"]


def test_broken_repo_reports_parse_errors_and_still_scans():
    _, data = scan_json("broken")
    by_path = {f["path"]: f for f in data["findings"]}
    assert "YAML" in by_path["configs/train.yaml"]["message"]
    assert by_path["configs/train.yaml"]["severity"] == "error"
    assert "never closed" in by_path["seg/augment.py"]["message"]
    assert by_path["train.py"]["code"] == "AMP001"
    assert data["summary"]["findings"]["error"] == 2


def test_notebook_finding_points_at_cell():
    _, data = scan_json("notebook")
    (f,) = data["findings"]
    assert (f["cell"], f["cell_line"]) == (7, 9)


def test_json_output_is_deterministic():
    a = run_cli("scan", "fixtures/pytorch-fp32-loop", "--format", "json", cwd=ROOT).stdout
    b = run_cli("scan", "fixtures/pytorch-fp32-loop", "--format", "json", cwd=ROOT).stdout
    assert a == b


# -- SARIF --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["pytorch-fp32-loop", "broken", "clean", "notebook", "accelerate-no-mp"])
def test_sarif_validates_against_official_schema(name):
    proc = run_cli("scan", f"fixtures/{name}", "--format", "sarif", cwd=ROOT)
    assert proc.returncode == (1 if EXPECTED[name] else 0)
    sarif = validate_sarif(proc.stdout)
    (run,) = sarif["runs"]
    ids = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert {"AMP001", "IO001", "SYS001"} <= set(ids)
    got = sorted((r["ruleId"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
                  r["locations"][0]["physicalLocation"]["region"]["startLine"]) for r in run["results"])
    # the scanned root is below the working directory: %SRCROOT% is the working
    # directory and URIs carry the root prefix (what GitHub code scanning needs)
    assert got == sorted((c, f"fixtures/{name}/{p}", l) for c, p, l in EXPECTED[name])
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == ROOT.as_uri() + "/"
    for r in run["results"]:
        assert r["level"] in ("error", "warning", "note")
        assert r["locations"][0]["physicalLocation"]["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert r["partialFingerprints"]


def test_sarif_levels_and_related_locations():
    proc = run_cli("scan", "fixtures/accelerate-no-mp", "--format", "sarif", cwd=ROOT)
    run = validate_sarif(proc.stdout)["runs"][0]
    (res,) = run["results"]
    assert res["level"] == "warning"
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for loc in res.get("relatedLocations", [])}
    assert {"fixtures/accelerate-no-mp/train.py", "fixtures/accelerate-no-mp/scripts/train.sh"} <= uris
    proc = run_cli("scan", "fixtures/pytorch-fp32-loop", "--format", "sarif", cwd=ROOT)
    levels = {r["ruleId"]: r["level"] for r in validate_sarif(proc.stdout)["runs"][0]["results"]}
    assert levels["IO002"] == "note" and levels["AMP001"] == "warning"


# -- GitHub and text ------------------------------------------------------------------------
GITHUB_LINE = re.compile(r"^::(error|warning|notice) file=([^,]+),line=(\d+),col=(\d+)(?:,endLine=\d+,endColumn=\d+)?,title=(\w+) ([a-z0-9-]+)::(.+)$")


def test_github_format_lines():
    proc = run_cli("scan", "fixtures/pytorch-fp32-loop", "--format", "github", cwd=ROOT)
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    parsed = [GITHUB_LINE.match(line) for line in lines]
    assert all(parsed), lines
    got = sorted((m.group(5), m.group(2), int(m.group(3))) for m in parsed)
    # paths are relative to the working directory, as GitHub annotations need
    assert got == sorted((c, f"fixtures/pytorch-fp32-loop/{p}", l) for c, p, l in EXPECTED["pytorch-fp32-loop"])
    kinds = {m.group(5): m.group(1) for m in parsed}
    assert kinds["AMP001"] == "warning" and kinds["IO002"] == "notice"


def test_github_format_errors_for_broken_repo():
    proc = run_cli("scan", ".", "--format", "github", cwd=FIXTURES / "broken")
    assert "::error file=configs/train.yaml,line=6," in proc.stdout
    assert "title=SYS001 parse-error::" in proc.stdout


def test_text_format_lines_and_summary():
    proc = run_cli("scan", ".", cwd=FIXTURES / "pytorch-fp32-loop")
    assert proc.returncode == 1
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("train.py:24:5: NET005 [warning] init_process_group uses the gloo backend")
    assert any(l.startswith("train.py:36:13: AMP001 [warning] Training loop runs in fp32") for l in lines)
    assert "\x1b[" not in proc.stdout
    summary = next(l for l in lines if l.startswith("Found "))
    assert "6 findings" in summary and "1 workload" in summary
    # as ruff ends: what --fix would do (IO002 safe; IO001, NET005 and AMP005 unsafe)
    assert lines[-1] == "1 finding fixable with `gpulint scan --fix`; 3 more with `--unsafe-fixes` (`--diff` shows the edits)."


def test_clean_text_says_no_findings():
    proc = run_cli("scan", "fixtures/clean", cwd=ROOT)
    assert proc.returncode == 0
    assert proc.stdout.strip().startswith("No findings")
    assert proc.stderr == ""


# -- exit codes ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args, code",
    [
        (["fixtures/clean"], 0),
        (["fixtures/pytorch-fp32-loop"], 1),
        (["fixtures/pytorch-fp32-loop", "--fail-on", "error"], 0),  # warnings and infos only
        (["fixtures/broken", "--fail-on", "error"], 1),  # SYS001 is an error
        (["fixtures/notebook", "--fail-on", "info"], 1),
        (["fixtures/pytorch-fp32-loop", "--select", "IO002"], 0),  # one info finding, fail-on warning
        (["fixtures/pytorch-fp32-loop", "--select", "IO002", "--fail-on", "info"], 1),
        (["fixtures/pytorch-fp32-loop", "--exit-zero"], 0),
        (["fixtures/broken", "--exit-zero", "--fail-on", "info"], 0),
        (["fixtures/pytorch-fp32-loop", "--ignore", "AMP,IO,NET"], 0),
    ],
)
def test_exit_codes(args, code):
    proc = run_cli("scan", *args, "--quiet", cwd=ROOT)
    assert proc.returncode == code, proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["fixtures/does-not-exist"], "no such file or directory"),
        (["fixtures/clean", "--format", "xml"], "unknown format 'xml'"),
        (["fixtures/clean", "--fail-on", "fatal"], "invalid choice"),
        (["fixtures/clean", "--frobnicate"], "unrecognized arguments"),
        (["fixtures/clean", "--select", "NOPE001"], "unknown rule code or prefix 'NOPE001'"),
        (["fixtures/clean", "--ignore", "AMP999"], "unknown rule code or prefix 'AMP999'"),
        (["fixtures/clean", "--jobs", "-1"], "--jobs"),
        (["fixtures/clean", "--baseline", "fixtures/no-such-baseline.json"], "baseline file not found"),
    ],
)
def test_exit_code_2_with_one_line_message(args, message):
    proc = run_cli("scan", *args, cwd=ROOT)
    assert proc.returncode == 2
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""


def test_no_command_is_usage_error():
    proc = run_cli(cwd=ROOT)
    assert proc.returncode == 2
    assert "scan" in proc.stdout + proc.stderr
