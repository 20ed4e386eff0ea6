"""Outside plugins: the rule pack in fixtures/plugin-example, installed the way a
user installs one (a real distribution with an entry point in the ``gpulint``
group), plus the broken one in fixtures/plugin-broken.

The subprocess tests ``pip install --no-deps --target DIR`` both fixtures
(pip builds them with setuptools from the package index) and run gpulint
with ``PYTHONPATH=DIR``, so ``importlib.metadata`` sees their ``.dist-info``
entry points exactly as after a normal install, without touching the test
interpreter's environment. The in-process tests register the module with
``PluginHost(extra_modules=...)``.
"""
from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import types

import jsonschema
import pytest

from conftest import FIXTURES, ROOT, run_cli
from helpers import AT, reported, rows

from gpulint.hookspecs import hookimpl
from gpulint.core.model import Severity
from gpulint.run.plugins import PluginHost
from gpulint.rule import Rule
from gpulint.testing import check_example, scan_files

TRAIN = """\
import torch
model = Net(width=1024).cuda()
opt = torch.optim.AdamW(model.parameters())
for step, x in enumerate(loader):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x.cuda(non_blocking=True)).sum()
    loss.backward()
    opt.step()
    print(step, loss)
print("done")
"""


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """Both fixture plugins installed into a private directory."""
    work = tmp_path_factory.mktemp("plugins")
    target = work / "site"
    srcs = []
    for name in ("plugin-example", "plugin-broken"):
        shutil.copytree(FIXTURES / name, work / name)  # builds leave egg-info/build dirs: not in fixtures/
        srcs.append(str(work / name))
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--disable-pip-version-check",
                           "--target", str(target), *srcs], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"pip could not install the fixture plugins:\n{proc.stdout}\n{proc.stderr}")
    assert (target / "gpulint_xyz-0.1.0.dist-info" / "entry_points.txt").is_file()
    return target


def cli(site, *args, cwd=None):
    return run_cli(*args, cwd=cwd, env={"PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))})


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "run.sh").write_text("#!/bin/bash\ntorchrun --nproc_per_node 4 train.py\n")
    return tmp_path


# -- installed through the entry point (subprocess) -----------------------------------------------
def test_plugins_lists_loaded_and_failed(site):
    proc = cli(site, "plugins")
    assert proc.returncode == 0
    out = proc.stdout
    assert "xyz          loaded  gpulint_xyz.plugin (gpulint-xyz) rules: XYZ001" in out
    assert "broken       FAILED  gpulint_broken.plugin (gpulint-broken)" in out
    assert "reason: ModuleNotFoundError: No module named 'gpulint_missing_dependency'" in out
    rows = {r["name"]: r for r in json.loads(cli(site, "plugins", "--format", "json").stdout)}
    assert rows["xyz"]["ok"] and rows["xyz"]["rules"] == ["XYZ001"] and rows["xyz"]["distribution"] == "gpulint-xyz"
    assert not rows["broken"]["ok"] and "gpulint_missing_dependency" in rows["broken"]["error"]
    assert all(rows[n]["ok"] for n in ("amp", "io", "net", "sys", "kinds", "formats"))


def test_plugin_rule_in_rules_table_and_explain(site):
    proc = cli(site, "rules")
    assert proc.returncode == 0
    (row,) = [l for l in proc.stdout.splitlines() if l.startswith("XYZ001")]
    assert row.split()[1:4] == ["on", "warning", "print-in-training-loop"]
    assert "AMP001" in proc.stdout  # built-in packs still there
    assert "1 plugin(s) failed to load" in proc.stderr
    rows = {r["code"]: r for r in json.loads(cli(site, "rules", "--format", "json").stdout)}
    assert rows["XYZ001"]["plugin"] == "xyz" and rows["XYZ001"]["family"] == "XYZ"
    exp = cli(site, "explain", "XYZ001")
    assert exp.returncode == 0 and "print-in-training-loop" in exp.stdout and "How to fix" in exp.stdout


def test_plugin_rule_runs_beside_builtin_rules(site, repo):
    proc = cli(site, "scan", repo, "--format", "json")
    assert rows(reported(proc), AT, sort=True) == [("XYZ001", "train.py", 9)]
    assert proc.returncode == 1
    # a plugin that failed to load is named on every scan: its rules silently missing would look like "clean"
    assert "plugin" in proc.stderr and "failed to load, its rules did not run" in proc.stderr
    # the built-in rules still run although one plugin failed to load
    (repo / "train.py").write_text(TRAIN.replace('    with torch.autocast("cuda", dtype=torch.bfloat16):\n        loss',
                                                 "    if True:\n        loss"))
    assert rows(reported(cli(site, "scan", repo, "--format", "json")), AT, sort=True) == [("AMP001", "train.py", 7), ("XYZ001", "train.py", 9)]


@pytest.mark.parametrize("args, expected", [
    (["--select", "AMP"], []),
    (["--select", "XYZ"], [("XYZ001", "train.py", 9)]),
    (["--select", "XYZ001"], [("XYZ001", "train.py", 9)]),
    (["--ignore", "XYZ"], []),
    (["--ignore", "XYZ001"], []),
    (["--select", "ALL", "--ignore", "XYZ"], []),
])
def test_plugin_rule_obeys_select_and_ignore(site, repo, args, expected):
    assert rows(reported(cli(site, "scan", repo, "--format", "json", *args)), AT, sort=True) == expected


def test_plugin_rule_obeys_config_and_severity(site, repo):
    (repo / ".gpulint.toml").write_text('ignore = ["XYZ"]\n')
    assert rows(reported(cli(site, "scan", repo, "--format", "json")), AT, sort=True) == []
    (repo / ".gpulint.toml").write_text('fail-on = "error"\n[severity]\nXYZ001 = "error"\n')
    proc = cli(site, "scan", repo, "--format", "json")
    assert [f["severity"] for f in json.loads(proc.stdout)["findings"]] == ["error"]
    assert proc.returncode == 1


def test_plugin_rule_obeys_inline_suppression(site, repo):
    (repo / "train.py").write_text(TRAIN.replace("    print(step, loss)\n", "    print(step, loss)  # gpulint: ignore[XYZ001]\n"))
    assert rows(reported(cli(site, "scan", repo, "--format", "json")), AT, sort=True) == []
    (repo / "train.py").write_text(TRAIN.replace('print("done")', 'print("done")  # gpulint: ignore[XYZ001]'))
    assert rows(reported(cli(site, "scan", repo, "--format", "json")), AT, sort=True) == [("SYS004", "train.py", 10), ("XYZ001", "train.py", 9)]


def test_plugin_codes_are_unknown_without_the_plugin(repo):
    proc = run_cli("scan", repo, "--select", "XYZ001")
    assert proc.returncode == 2 and "unknown rule code or prefix 'XYZ001'" in proc.stderr


def test_plugin_rule_in_sarif(site, repo):
    proc = cli(site, "scan", repo, "--format", "sarif")
    sarif = json.loads(proc.stdout)
    jsonschema.Draft4Validator(json.loads((ROOT / "tests/data/sarif-schema-2.1.0.json").read_text())).validate(sarif)
    run = sarif["runs"][0]
    assert "XYZ001" in [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert [r["ruleId"] for r in run["results"]] == ["XYZ001"]


# -- registered in process ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def xyz_module():
    sys.path.insert(0, str(FIXTURES / "plugin-example"))
    try:
        yield importlib.import_module("gpulint_xyz.plugin")
    finally:
        sys.path.remove(str(FIXTURES / "plugin-example"))


def test_extra_module_registers_rule(xyz_module):
    host = PluginHost(extra_modules=[xyz_module])
    assert "XYZ001" in host.registry.rules
    assert host.registry.rule_plugin["XYZ001"] == "gpulint_xyz.plugin"
    result = scan_files({"train.py": TRAIN}, host=host)
    assert [(f.code, f.loc.line) for f in result.findings] == [("XYZ001", 9)]


def test_plugin_examples_hold(xyz_module):
    host = PluginHost(extra_modules=[xyz_module])
    rule = host.registry.rules["XYZ001"]
    for ex in rule.VALID:
        assert check_example(rule, ex, valid=True, host=host) == []
    for ex in rule.INVALID:
        assert check_example(rule, ex, valid=False, host=host) == []


def test_extra_module_by_name_that_fails_to_import_is_reported():
    host = PluginHost(extra_modules=["gpulint_no_such_plugin_module"])
    assert "AMP001" in host.registry.rules
    (st,) = [s for s in host.statuses if s.name == "gpulint_no_such_plugin_module"]
    assert not st.ok and "ModuleNotFoundError" in st.error


def test_plugin_whose_hook_raises_is_failed_and_others_run():
    plugin = types.SimpleNamespace(__name__="explodes")

    @hookimpl
    def gpulint_rules():
        raise RuntimeError("rule table not ready")

    plugin.gpulint_rules = gpulint_rules
    host = PluginHost(extra_modules=[plugin])
    assert "AMP001" in host.registry.rules
    (st,) = [s for s in host.statuses if s.name == "explodes"]
    assert not st.ok and "gpulint_rules raised RuntimeError: rule table not ready" in st.error


class _Crashes(Rule):
    """Crashes on every Python file.

    What it does:
        Raises.
    Why it costs money:
        It does not.
    How to fix:
        Nothing.
    Cost model:
        None.
    """

    code = "CRASH001"
    name = "crashes"
    severity = Severity.WARNING
    family = "CRASH"
    kinds = ("python",)

    def check_file(self, source, ctx):
        raise ZeroDivisionError("boom")


def test_a_rule_that_raises_yields_sys002_and_the_others_still_run():
    plugin = types.SimpleNamespace(__name__="crashy")

    @hookimpl
    def gpulint_rules():
        return [_Crashes]

    plugin.gpulint_rules = gpulint_rules
    host = PluginHost(extra_modules=[plugin])
    result = scan_files({"train.py": TRAIN.replace('    with torch.autocast("cuda", dtype=torch.bfloat16):\n        loss',
                                                   "    if True:\n        loss")}, host=host)
    by_code = {f.code: f for f in result.findings}
    assert set(by_code) == {"SYS002", "AMP001"}
    assert "rule CRASH001 failed on train.py: ZeroDivisionError: boom" in by_code["SYS002"].message
    assert any("ZeroDivisionError" in tb for tb in result.errors)


def test_duplicate_code_from_a_plugin_is_refused(xyz_module):
    clone = types.SimpleNamespace(__name__="clone")

    @hookimpl
    def gpulint_rules():
        return [xyz_module.PrintInTrainingLoop]

    clone.gpulint_rules = gpulint_rules
    host = PluginHost(extra_modules=[xyz_module, clone])
    assert host.registry.rule_plugin["XYZ001"] == "gpulint_xyz.plugin"
    (st,) = [s for s in host.statuses if s.name == "clone"]
    assert not st.ok and "already registered" in st.error
