"""Configuration end to end: where it is found, what each key does, and how a
bad configuration is reported (exit 2, file + key + problem, no traceback)."""
from __future__ import annotations

import shutil

import pytest

from conftest import FIXTURES, run_cli
from helpers import cli_scan, rows

ALL_FP32 = [("AMP001", "train.py", 36), ("IO001", "train.py", 30), ("IO002", "train.py", 30),
            ("NET005", "train.py", 24), ("NET006", "train.py", 27)]


@pytest.fixture
def repo(tmp_path):
    dst = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pytorch-fp32-loop", dst)
    return dst


# -- where configuration comes from -------------------------------------------------------------
def test_pyproject_tool_table(repo):
    (repo / "pyproject.toml").write_text('[project]\nname = "imgcls"\n\n[tool.gpulint]\nselect = ["AMP", "NET006"]\n')
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["AMP001", "AMP005", "NET006"]


def test_pyproject_without_tool_table_is_not_a_config(repo):
    (repo / "pyproject.toml").write_text('[project]\nname = "imgcls"\n[tool.ruff]\nline-length = 100\n')
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["AMP001", "AMP005", "IO001", "IO002", "NET005", "NET006"]


def test_dot_gpulint_toml(repo):
    (repo / ".gpulint.toml").write_text('ignore = ["IO"]\n')
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["AMP001", "AMP005", "NET005", "NET006"]


def test_dot_gpulint_yaml_plain_and_nested(repo):
    (repo / ".gpulint.yaml").write_text("select: [IO001]\n")
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["IO001"]
    (repo / ".gpulint.yaml").write_text("gpulint:\n  select: [NET]\n")
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["NET005", "NET006"]


def test_dedicated_file_wins_over_pyproject_in_the_same_directory(repo):
    (repo / "pyproject.toml").write_text('[tool.gpulint]\nselect = ["NET"]\n')
    (repo / ".gpulint.toml").write_text('select = ["IO"]\n')
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["IO001", "IO002"]


def test_discovered_upward_from_the_scanned_path(tmp_path):
    top = tmp_path / "mono"
    shutil.copytree(FIXTURES / "pytorch-fp32-loop", top / "vision")
    (top / "pyproject.toml").write_text('[tool.gpulint]\nselect = ["AMP"]\n')
    assert rows(cli_scan(top / "vision")[2]["findings"], unique=True) == ["AMP001", "AMP005"]
    # a nearer config wins over the one further up
    (top / "vision" / ".gpulint.yaml").write_text("select: [NET]\n")
    assert rows(cli_scan(top / "vision")[2]["findings"], unique=True) == ["NET005", "NET006"]


def test_explicit_config_option(repo, tmp_path):
    cfg = tmp_path / "ci-gpulint.toml"
    cfg.write_text('select = ["NET006"]\n')
    (repo / ".gpulint.toml").write_text('select = ["IO"]\n')
    assert rows(cli_scan(repo, "--config", cfg)[2]["findings"], unique=True) == ["NET006"]


def test_explicit_config_that_does_not_exist(repo):
    proc = run_cli("scan", repo, "--config", repo / "nope.toml")
    assert proc.returncode == 2
    assert "nope.toml: configuration file not found" in proc.stderr


# -- select / ignore ----------------------------------------------------------------------------
@pytest.mark.parametrize("config, expected", [
    ('select = ["AMP"]\n', ["AMP001", "AMP005"]),
    ('select = ["IO", "NET005"]\n', ["IO001", "IO002", "NET005"]),
    ('ignore = ["NET", "IO002"]\n', ["AMP001", "AMP005", "IO001"]),
    ('select = ["ALL"]\nignore = ["IO"]\n', ["AMP001", "AMP005", "NET005", "NET006"]),
    # the more specific pattern wins, whichever list it is in
    ('select = ["NET"]\nignore = ["NET006"]\n', ["NET005"]),
    ('select = ["NET006"]\nignore = ["NET"]\n', ["NET006"]),
    # a tie goes to ignore
    ('select = ["IO001"]\nignore = ["IO001"]\n', []),
    ('extend-select = ["IO"]\nignore = ["AMP", "NET"]\n', ["IO001", "IO002"]),
])
def test_select_ignore_prefixes(repo, config, expected):
    (repo / ".gpulint.toml").write_text(config)
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == expected


def test_cli_select_replaces_config_select_and_cli_ignore_adds(repo):
    (repo / ".gpulint.toml").write_text('select = ["AMP"]\nignore = ["NET005"]\n')
    assert rows(cli_scan(repo, "--select", "NET")[2]["findings"], unique=True) == ["NET006"]  # config ignore still applies
    assert rows(cli_scan(repo, "--ignore", "AMP")[2]["findings"], unique=True) == []


def test_extend_select_enables_a_rule_that_is_off_by_default(repo, host):
    # every built-in rule is on by default; extend-select keeps the defaults and adds to them
    (repo / ".gpulint.toml").write_text('extend-select = ["SYS"]\n')
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["AMP001", "AMP005", "IO001", "IO002", "NET005", "NET006"]


def test_parse_errors_are_reported_even_when_not_selected(tmp_path):
    repo = tmp_path / "b"
    shutil.copytree(FIXTURES / "broken", repo)
    (repo / ".gpulint.toml").write_text('select = ["NET"]\n')
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["SYS001"]


@pytest.mark.parametrize("how", ["config", "cli"])
def test_parse_errors_can_be_ignored_explicitly(tmp_path, how):
    repo = tmp_path / "b"
    shutil.copytree(FIXTURES / "broken", repo)
    if how == "config":
        (repo / ".gpulint.toml").write_text('ignore = ["SYS001"]\n')
        assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["AMP001"]
    else:
        assert rows(cli_scan(repo, "--ignore", "SYS001")[2]["findings"], unique=True) == ["AMP001"]


# -- fail-on, severity -----------------------------------------------------------------------------
def test_fail_on_from_config_and_cli_override(repo):
    (repo / ".gpulint.toml").write_text('fail-on = "error"\n')
    assert cli_scan(repo)[0] == 0
    assert cli_scan(repo, "--fail-on", "warning")[0] == 1
    (repo / ".gpulint.toml").write_text('fail-on = "info"\nselect = ["IO002"]\n')
    assert cli_scan(repo)[0] == 1


def test_severity_override(repo):
    (repo / ".gpulint.toml").write_text('fail-on = "error"\n[severity]\nAMP001 = "error"\nIO001 = "info"\n')
    rc, _, data = cli_scan(repo)
    sev = {f["code"]: f["severity"] for f in data["findings"]}
    assert sev["AMP001"] == "error" and sev["IO001"] == "info" and sev["NET006"] == "warning"
    assert data["summary"]["findings"] == {"error": 1, "warning": 2, "info": 3}
    assert rc == 1  # the raised AMP001 now fails an error-only gate


# -- exclude, per-file-ignores -----------------------------------------------------------------------
def test_exclude_globs(tmp_path):
    repo = tmp_path / "b"
    shutil.copytree(FIXTURES / "broken", repo)
    (repo / ".gpulint.toml").write_text('exclude = ["configs/*.yaml", "seg/**"]\n')
    assert cli_scan(repo)[1] == [("AMP001", "train.py", 19)]


def test_exclude_is_relative_to_the_config_directory(tmp_path):
    top = tmp_path / "mono"
    shutil.copytree(FIXTURES / "broken", top / "seg-project")
    (top / ".gpulint.toml").write_text('exclude = ["seg-project/configs/**"]\n')
    assert cli_scan(top / "seg-project")[1] == [("AMP001", "train.py", 19), ("SYS001", "seg/augment.py", 11)]


def test_per_file_ignores(repo):
    (repo / ".gpulint.toml").write_text('[per-file-ignores]\n"train.py" = ["IO", "NET006"]\n"scripts/*" = ["ALL"]\n')
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == ["AMP001", "AMP005", "NET005"]
    (repo / ".gpulint.toml").write_text('[per-file-ignores]\n"*.py" = ["ALL"]\n')
    assert rows(cli_scan(repo)[2]["findings"], unique=True) == []
    (repo / ".gpulint.toml").write_text('[per-file-ignores]\n"imgcls/**" = ["ALL"]\n')
    assert len(rows(cli_scan(repo)[2]["findings"], unique=True)) == 6


def test_per_file_ignores_are_relative_to_the_config_directory(tmp_path):
    top = tmp_path / "mono"
    shutil.copytree(FIXTURES / "pytorch-fp32-loop", top / "vision")
    (top / "pyproject.toml").write_text('[tool.gpulint.per-file-ignores]\n"vision/train.py" = ["IO"]\n')
    assert rows(cli_scan(top / "vision")[2]["findings"], unique=True) == ["AMP001", "AMP005", "NET005", "NET006"]


# -- bad configuration: exit 2, file + key + problem, never a traceback ---------------------------------
@pytest.mark.parametrize("name, text, needles", [
    (".gpulint.toml", 'selec = ["AMP"]\n', ["unknown key 'selec'", "known keys:"]),
    (".gpulint.toml", 'fail-on = "fatal"\n', ["key 'fail-on'", "'fatal' is not one of"]),
    (".gpulint.toml", 'select = "AMP"\n', ["key 'select'", "not of type 'array'"]),
    (".gpulint.toml", 'select = ["amp"]\n', ["key 'select.0'", "not a rule code or family prefix"]),
    (".gpulint.toml", '[severity]\nAMP009 = "error"\n', ["key 'severity.AMP009'", "no such rule"]),
    (".gpulint.toml", '[severity]\nAMP001 = "fatal"\n', ["key 'severity.AMP001'", "'fatal' is not one of"]),
    (".gpulint.toml", '[rules.NOPE001]\nx = 1\n', ["key 'rules.NOPE001'", "no such rule"]),
    (".gpulint.toml", 'max-file-size-kb = 0\n', ["key 'max-file-size-kb'", "minimum"]),
    (".gpulint.toml", '[pricing]\nregion = 5\n', ["key 'pricing.region'", "not of type 'string'"]),
    (".gpulint.toml", '[pricing]\ncurrency = "EUR"\n', ["unknown key 'pricing.currency'"]),
    (".gpulint.toml", '[pricing]\nhours-per-month = 1000\n', ["key 'pricing.hours-per-month'", "maximum"]),
    (".gpulint.toml", '[pricing]\ncommitments = "p4d.24xlarge"\n', ["key 'pricing.commitments'", "not of type 'array'"]),
    (".gpulint.toml", '[pricing]\nmax-age-days = 0\n', ["key 'pricing.max-age-days'", "minimum"]),
    (".gpulint.toml", '[pricing]\noverlay = "missing.json"\n', ["key 'pricing.overlay'", "does not exist", "gpulint catalogue import"]),
    (".gpulint.toml", 'select = [\n', ["invalid TOML"]),
    (".gpulint.yaml", "gpulint:\n  select: [AMP]\n  bogus: 1\n", ["unknown key 'bogus'"]),
    (".gpulint.yaml", "select: [AMP\n", ["invalid YAML"]),
    (".gpulint.yaml", "- AMP001\n", ["must be a table/mapping"]),
    ("pyproject.toml", '[tool.gpulint]\nignore = ["NET"]\nfoo = 1\n', ["[tool.gpulint]", "unknown key 'foo'"]),
    ("pyproject.toml", '[tool.gpulint]\n[[tool.gpulint.workloads]]\nname = "x"\n', ["key 'workloads.0'", "'entrypoint' is a required property"]),
])
def test_bad_config_exit_2_names_file_key_and_problem(repo, name, text, needles):
    (repo / name).write_text(text)
    proc = run_cli("scan", repo)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr and proc.stdout == ""
    assert str(repo / name) in proc.stderr
    for needle in needles:
        assert needle in proc.stderr


def test_bad_config_also_stops_rules_and_workloads(repo):
    (repo / ".gpulint.toml").write_text("selec = []\n")
    for args in (["rules"], ["workloads", "."]):
        proc = run_cli(*args, cwd=repo)
        assert proc.returncode == 2 and "unknown key 'selec'" in proc.stderr


def test_unknown_code_in_config_select_names_file_and_key(repo):
    (repo / ".gpulint.toml").write_text('select = ["XYZ"]\n')
    proc = run_cli("scan", repo)
    assert proc.returncode == 2
    assert str(repo / ".gpulint.toml") in proc.stderr and "select" in proc.stderr


@pytest.mark.parametrize("text", ['extend-select = ["NOPE"]\n', '[per-file-ignores]\n"train.py" = ["AMP999"]\n'])
def test_unknown_code_anywhere_in_config_is_exit_2(repo, text):
    (repo / ".gpulint.toml").write_text(text)
    proc = run_cli("scan", repo)
    assert proc.returncode == 2
    assert str(repo / ".gpulint.toml") in proc.stderr


def test_models_table_as_the_readme_shows_it_sizes_the_model(tmp_path):
    """`[tool.gpulint.models]` as the README documents it: a name -> parameter count. This crashed every scan with
    KeyError 'id' (the config entries were built with another key than the bundled table's)."""
    (tmp_path / "pyproject.toml").write_text('[tool.gpulint.models]\n"my-org/chat-large" = 13e9\n')
    (tmp_path / "train.py").write_text(
        "from transformers import AutoModelForCausalLM, Trainer, TrainingArguments\n"
        'model = AutoModelForCausalLM.from_pretrained("my-org/chat-large")\n'
        'Trainer(model=model, args=TrainingArguments(output_dir="out")).train()\n')
    scan = run_cli("scan", tmp_path, "--no-cache")
    assert scan.returncode in (0, 1) and "internal error" not in scan.stderr + scan.stdout, scan.stderr
    import json
    out = run_cli("workloads", tmp_path, "--format", "json")
    assert out.returncode == 0, out.stderr
    model = json.loads(out.stdout)["workloads"][0]["resolved"]["model"]
    assert model["params"] == 13_000_000_000
    assert "[tool.gpulint.models]" in model["evidence"] and "my-org/chat-large" in model["evidence"]


def _readme_configuration_block() -> str:
    """The TOML block under the README's `## Configuration` heading, as a user would paste it."""
    import re

    readme = (FIXTURES.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("\n## Configuration\n"):]
    block = re.search(r"```toml\n(.*?)```", section, re.S)
    assert block, "README.md's Configuration section has no ```toml block"
    return block.group(1)


def test_readme_configuration_block_pasted_as_written_scans(repo):
    """Issue 50: the README's block names the default overlay path; pasted into a project without that file, the
    scan stopped with "key 'pricing.overlay': ... does not exist" although the comment calls the value the default."""
    text = _readme_configuration_block()
    assert 'overlay = ".gpulint-prices.json"' in text and "[[tool.gpulint.instances]]" in text
    assert not (repo / ".gpulint-prices.json").exists()
    (repo / "pyproject.toml").write_text(text)
    proc = run_cli("scan", repo, "--no-cache")
    assert proc.returncode in (0, 1), proc.stderr
    assert "does not exist" not in proc.stderr and "Traceback" not in proc.stderr
    assert "AMP001" in proc.stdout  # the scan really ran, with the README's select


@pytest.mark.parametrize("value", [".gpulint-prices.json", "./.gpulint-prices.json"])
def test_default_overlay_path_named_explicitly_is_as_if_unset(repo, value):
    (repo / ".gpulint.toml").write_text(f'[pricing]\noverlay = "{value}"\n')
    proc = run_cli("scan", repo, "--no-cache")
    assert proc.returncode in (0, 1) and "does not exist" not in proc.stderr, proc.stderr


def test_missing_non_default_overlay_names_file_and_key(repo):
    (repo / ".gpulint.toml").write_text('[pricing]\noverlay = "prices/team.json"\n')
    proc = run_cli("scan", repo)
    assert proc.returncode == 2
    assert str(repo / ".gpulint.toml") in proc.stderr and "key 'pricing.overlay'" in proc.stderr
    assert str(repo / "prices" / "team.json") in proc.stderr and "does not exist" in proc.stderr


_OWN_INSTANCE = """\
[[{prefix}instances]]
provider = "modal"
name = "modal-h100x8"
gpu_model = "H100-SXM5-80GB"
gpu_count = 8
gpu_memory_gib = 80
on_demand_usd_per_hour = 30.0

[[{prefix}workloads]]
entrypoint = "train.py"
instance = "modal-h100x8"
"""


@pytest.mark.parametrize("name, prefix, origin", [
    ("pyproject.toml", "tool.gpulint.", "your rate from pyproject.toml [[tool.gpulint.instances]]"),
    (".gpulint.toml", "", "your rate from .gpulint.toml [[instances]]"),
])
def test_a_user_added_instance_s_price_note_says_it_is_the_user_s_rate(repo, name, prefix, origin):
    """Issue 50: a [[tool.gpulint.instances]] machine's price note read "(None, price as of None; ...)"."""
    (repo / name).write_text(_OWN_INSTANCE.format(prefix=prefix))
    _, _, report = cli_scan(repo, "--no-cache")
    [amp] = [f for f in report["findings"] if f["code"] == "AMP001"]
    basis = amp["cost_impact"]["basis"]
    assert f"modal-h100x8 at $30.00/h on-demand ({origin})" in basis, basis
    assert "None" not in basis
    text = run_cli("workloads", repo).stdout
    [price] = [line for line in text.splitlines() if line.strip().startswith("price:")]
    assert origin in price and "None" not in price, price
