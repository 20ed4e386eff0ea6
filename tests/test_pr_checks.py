"""Pull-request checks end to end, through the command line, on a temporary git repository
with two commits: the cost gate (--fail-on-cost) and new-findings-only (--diff-base)."""
from __future__ import annotations

import json
import os
import subprocess

import pytest

from conftest import run_cli

# a known model (GPT-2, 124M parameters): AMP001 prices an fp32 loop only where matmuls bound the step
TRAIN = """\
import torch
from transformers import AutoModelForCausalLM
model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    loss = model(x.cuda()).loss
    loss.backward()
    opt.step()
"""
EVAL = """\
import torch
from torch.utils.data import DataLoader
from transformers import AutoModelForCausalLM
loader = DataLoader(ds, num_workers=4)
model = AutoModelForCausalLM.from_pretrained("gpt2").cuda()
for x in loader:
    model(x.cuda()).loss.backward()
    opt.step()
from torchvision.datasets import ImageFolder  # decoded on the host: IO002 applies
ds = ImageFolder("/data/captions")
"""
TF = 'resource "aws_instance" "trainer" {{\n  ami           = "ami-0abc"\n  instance_type = "{instance}"\n}}\n'
# two training scripts and one instance: linking cannot pair them by itself, the config pins both
PINS = """\
[[workloads]]
entrypoint = "train.py"
compute = "infra/main.tf#aws_instance.trainer"

[[workloads]]
entrypoint = "pretrain.py"
compute = "infra/main.tf#aws_instance.trainer"
"""
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")} | GIT_ENV
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True, env=env).stdout


def _make_repo(r):
    """main: an fp32 loop on a g5.xlarge. HEAD: the same loop moved to a p4d.24xlarge, and a new script."""
    (r / "infra").mkdir(parents=True)
    (r / "train.py").write_text(TRAIN)
    (r / "infra" / "main.tf").write_text(TF.format(instance="g5.xlarge"))
    (r / ".gpulint.toml").write_text(PINS)
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "base")
    git(r, "checkout", "-qb", "feature")
    (r / "infra" / "main.tf").write_text(TF.format(instance="p4d.24xlarge"))
    (r / "pretrain.py").write_text(EVAL)
    git(r, "add", "-A")
    git(r, "commit", "-qm", "bigger instance, new script")
    return r


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """Shared by the tests that only read the repository."""
    return _make_repo(tmp_path_factory.mktemp("pr") / "proj")


@pytest.fixture
def own_repo(tmp_path):
    """For the tests that change the work tree or the branches."""
    return _make_repo(tmp_path / "proj")


def scan(repo, *args, **kw):
    return run_cli("scan", *args, cwd=repo, **kw)


def doc(proc) -> dict:
    return json.loads(proc.stdout)


# -- the cost gate --------------------------------------------------------------------------------
def test_cost_gate_fails_above_the_limit_whatever_fail_on_says(repo):
    full = doc(scan(repo, ".", "--format", "json"))
    total = full["summary"]["usd_per_hour_avoidable"]
    assert total > 5
    over = scan(repo, ".", "--fail-on", "error", "--fail-on-cost", "5")
    assert over.returncode == 1
    assert f"Cost gate failed: ${total:,.2f}/h avoidable is more than the $5.00/h limit." in over.stdout
    made_of = over.stdout.split("Cost gate failed")[1]  # which findings made up the sum
    assert "$7.32/h  AMP001 train.py:7:5  (train.py)" in made_of and "AMP001 pretrain.py:7:5" in made_of
    under = scan(repo, ".", "--fail-on", "error", "--fail-on-cost", str(total + 1))
    assert under.returncode == 0 and "Cost gate passed" in under.stdout
    # --exit-zero turns off the severity gate, not a cost gate asked for explicitly
    assert scan(repo, ".", "--exit-zero").returncode == 0
    assert scan(repo, ".", "--exit-zero", "--fail-on-cost", "5").returncode == 1


def test_cost_gate_in_machine_formats_says_so_on_stderr(repo):
    proc = scan(repo, ".", "--format", "json", "--fail-on", "error", "--fail-on-cost", "1")
    assert proc.returncode == 1 and "gpulint: cost gate failed:" in proc.stderr
    gate = doc(proc)["summary"]["cost_gate"]
    assert gate["failed"] is True and gate["limit_usd_per_hour"] == 1.0
    priced = [f["fingerprint"] for f in doc(proc)["findings"] if f["cost_impact"]["usd_per_hour"]]
    assert sorted(gate["findings"]) == sorted(priced) and len(priced) == 3  # the two AMP001, MEM002 (GPT-2 on 8 A100s)


def test_cost_gate_failing_under_quiet_still_says_why(repo):
    """Issue 50: `--quiet --exit-zero --fail-on-cost 5` exited 1 with nothing on either stream to say why."""
    total = doc(scan(repo, ".", "--format", "json"))["summary"]["usd_per_hour_avoidable"]
    proc = scan(repo, ".", "--quiet", "--exit-zero", "--fail-on-cost", "5")
    assert proc.returncode == 1
    reason = [line for line in proc.stderr.splitlines() if "cost gate failed" in line]
    assert len(reason) == 1, proc.stderr
    assert "--fail-on-cost" in reason[0] and f"{total:.2f} USD/h" in reason[0] and "5 USD/h" in reason[0]
    assert "Cost gate" not in proc.stdout  # --quiet: findings only
    # with the summary on standard output the reason is said there, once
    assert "cost gate failed" not in scan(repo, ".", "--exit-zero", "--fail-on-cost", "5").stderr


@pytest.mark.parametrize("value", ["-1", "lots", "inf", "nan"])
def test_cost_gate_rejects_a_bad_limit(repo, value):
    proc = scan(repo, ".", "--fail-on-cost", value)
    assert proc.returncode == 2 and "--fail-on-cost" in proc.stderr and "Traceback" not in proc.stderr


# -- new findings only ----------------------------------------------------------------------------
def test_diff_base_reports_new_and_costlier_findings_only(repo):
    head = doc(scan(repo, ".", "--format", "json"))
    base_tf = TF.format(instance="g5.xlarge")
    proc = scan(repo, ".", "--diff-base", "main", "--format", "json")
    data = doc(proc)
    got = sorted((f["code"], f["path"]) for f in data["findings"])
    # pretrain.py is new; AMP001 of train.py is the same finding, but costs more on the p4d now;
    # AMP005 (TF32) fires on both A10G and A100 and costs nothing: not new
    assert ("IO001", "pretrain.py") not in got  # num_workers=4 is set
    assert ("IO002", "pretrain.py") in got and ("AMP001", "train.py") in got and ("AMP001", "pretrain.py") in got
    assert ("AMP005", "train.py") not in got
    assert len(got) < len(head["findings"])
    d = data["summary"]["diff_base"]
    assert d["ref"] == "main" and d["commit"] == git(repo, "merge-base", "main", "HEAD").strip()
    assert d["costlier_findings"] == 1 and d["new_findings"] == len(got) - 1
    # new spend: pretrain.py's AMP001 and the increase of train.py's; less than the whole tree's
    assert 0 < d["usd_per_hour_avoidable_new"] < d["usd_per_hour_avoidable_head"]
    assert d["usd_per_hour_avoidable_head"] == head["summary"]["usd_per_hour_avoidable"]
    assert (repo / "infra" / "main.tf").read_text() != base_tf  # the work tree is untouched
    assert git(repo, "worktree", "list").count("\n") == 1  # the temporary worktree is gone


def test_diff_base_composes_with_the_cost_gate_and_markdown(repo):
    proc = scan(repo, "--diff-base", "main", "--fail-on-cost", "5", "--format", "markdown")
    assert proc.returncode == 1
    assert proc.stdout.startswith("## gpulint: ")
    assert "new finding" in proc.stdout.splitlines()[0]
    assert "Compared with `main` (merge base `" in proc.stdout and "**New avoidable spend: $" in proc.stdout
    assert "**Cost gate failed**" in proc.stdout
    ok = scan(repo, "--diff-base", "main", "--fail-on", "error", "--fail-on-cost", "1000", "--format", "markdown")
    assert ok.returncode == 0 and "Cost gate passed" in ok.stdout


def test_diff_base_composes_with_every_format(repo):
    new = {f["fingerprint"] for f in doc(scan(repo, "--diff-base", "main", "--format", "json"))["findings"]}
    sarif = doc(scan(repo, "--diff-base", "main", "--format", "sarif"))
    assert {r["partialFingerprints"]["gpulintFingerprint/v1"] for r in sarif["runs"][0]["results"]} == new
    gitlab = doc(scan(repo, "--diff-base", "main", "--format", "gitlab"))
    assert {i["fingerprint"] for i in gitlab} == new
    gh = scan(repo, "--diff-base", "main", "--format", "github").stdout.splitlines()
    assert len(gh) == len(new)


def test_diff_base_against_head_has_nothing_new(repo):
    proc = scan(repo, ".", "--diff-base", "HEAD", "--format", "json")
    assert proc.returncode == 0 and doc(proc)["findings"] == []
    assert doc(proc)["summary"]["diff_base"]["usd_per_hour_avoidable_new"] == 0


def test_diff_base_composes_with_a_baseline(repo, tmp_path):
    bl = tmp_path / "baseline.json"
    scan(repo, "pretrain.py", "--write-baseline", bl)
    proc = scan(repo, ".", "--diff-base", "main", "--baseline", bl, "--format", "json")
    # pretrain.py's are in the baseline; the oversized instance and the costlier AMP001 are left
    assert [(f["code"], f["path"]) for f in doc(proc)["findings"]] == [("MEM002", "infra/main.tf"), ("AMP001", "train.py")]


def test_diff_base_with_files_given_as_pre_commit_does(repo):
    proc = scan(repo, "infra/main.tf", "--diff-base", "main", "--format", "json")
    # only the Terraform is given: the findings whose evidence it holds (the instance) are reported,
    # and of those the new (pretrain.py's) and the costlier (train.py's AMP001 on the p4d)
    got = sorted((f["code"], f["path"]) for f in doc(proc)["findings"])
    assert got == [("AMP001", "pretrain.py"), ("AMP001", "train.py"), ("AMP005", "pretrain.py"), ("MEM002", "infra/main.tf")]


def test_diff_base_uncommitted_changes_count_as_now(own_repo):
    repo = own_repo
    (repo / "pretrain.py").unlink()
    proc = scan(repo, ".", "--diff-base", "main", "--format", "json")
    assert [f["path"] for f in doc(proc)["findings"]] == ["infra/main.tf", "train.py"]


def test_diff_base_errors_are_exit_2_with_a_message(own_repo, tmp_path):
    repo = own_repo
    bad = scan(repo, ".", "--diff-base", "no-such-branch")
    assert bad.returncode == 2 and "no such commit, branch or tag" in bad.stderr and "fetch-depth: 0" in bad.stderr
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "train.py").write_text(TRAIN)
    env = {"GIT_CEILING_DIRECTORIES": str(tmp_path)}
    nogit = run_cli("scan", ".", "--diff-base", "main", cwd=plain, env=env)
    assert nogit.returncode == 2 and "needs a git repository" in nogit.stderr and "Traceback" not in nogit.stderr
    both = scan(repo, ".", "--diff-base", "main", "--fix")
    assert both.returncode == 2 and "cannot be combined" in both.stderr
    git(repo, "checkout", "-q", "--orphan", "other")
    git(repo, "commit", "-qm", "unrelated")
    unrelated = scan(repo, ".", "--diff-base", "main")
    assert unrelated.returncode == 2 and "no merge base" in unrelated.stderr
