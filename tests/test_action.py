"""The composite GitHub Action (action.yml), run step by step as the runner would, offline.

Each `run:` step is executed with bash as GitHub runs composite steps
(`bash --noprofile --norc -eo pipefail`), with the runner's files
(GITHUB_OUTPUT, GITHUB_STEP_SUMMARY, RUNNER_TEMP) and the `${{ }}` expressions
of the action evaluated from a pull-request event. The install step builds and
installs gpulint from a copy of this checkout into a fresh virtualenv, with no
package index (its dependencies come from the test environment); `uses:` steps
(the SARIF upload) are not run, their inputs are checked instead; `gh` is a
stand-in that records the API calls the comment step makes.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import site
import stat
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import ROOT

pytestmark = pytest.mark.slow

ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
SARIF_SCHEMA = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")

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
TF = 'resource "aws_instance" "trainer" {{\n  ami           = "ami-0abc"\n  instance_type = "{instance}"\n}}\n'
GH = """#!/bin/sh
# a stand-in for the GitHub CLI: records its arguments, answers the comment listing
printf '%s\\n' "$*" >> "$GH_LOG"
case "$*" in
  *--paginate*) [ -n "$FAKE_EXISTING_COMMENT" ] && echo "$FAKE_EXISTING_COMMENT" ;;
esac
exit 0
"""


class Expressions:
    """The few expression forms the action uses; anything else fails the test (and so tracks the action)."""

    def __init__(self, ctx: dict):
        self.ctx = ctx

    def value(self, text: str):
        text = text.strip()
        if text == "always()":
            return True
        if "&&" in text:
            return all(self.truthy(self.value(t)) for t in text.split("&&"))
        m = re.fullmatch(r"(.+?)\s*(==|!=)\s*'([^']*)'", text)
        if m:
            left = str(self.value(m.group(1)) or "")
            return (left == m.group(3)) if m.group(2) == "==" else (left != m.group(3))
        if re.fullmatch(r"[A-Za-z_][\w.-]*", text):
            node = self.ctx
            for part in text.split("."):
                if not isinstance(node, dict) or part not in node:
                    raise AssertionError(f"the action uses ${{{{ {text} }}}}, which the test does not provide")
                node = node[part]
            return node
        raise AssertionError(f"unsupported expression in action.yml: {text}")

    @staticmethod
    def truthy(v) -> bool:
        return v not in (False, None, "", 0)

    def render(self, text: str) -> str:
        return EXPR.sub(lambda m: "" if self.value(m.group(1)) is None else str(self.value(m.group(1))), str(text))

    def condition(self, text: str | None) -> bool:
        if text is None:
            return True
        m = EXPR.fullmatch(str(text).strip())
        return self.truthy(self.value(m.group(1) if m else str(text)))


def git(repo, *args):
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout


@pytest.fixture(scope="module")
def action_copy(tmp_path_factory) -> Path:
    """The action as a runner checks it out (github.action_path)."""
    dst = tmp_path_factory.mktemp("action") / "gpulint-action"
    shutil.copytree(ROOT, dst, ignore=shutil.ignore_patterns(".git", "*.egg-info", "__pycache__", ".ci-venv", "build", ".pytest_cache"))
    return dst


def _pull_request_repo(path: Path) -> Path:
    """main: fp32 on a g5.xlarge; the pull request moves it to a p4d.24xlarge."""
    (path / "infra").mkdir(parents=True)
    (path / "train.py").write_text(TRAIN)
    (path / "infra" / "main.tf").write_text(TF.format(instance="g5.xlarge"))
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "base")
    git(path, "update-ref", "refs/remotes/origin/main", "HEAD")  # as actions/checkout with fetch-depth: 0 leaves it
    git(path, "checkout", "-qb", "pr")
    (path / "infra" / "main.tf").write_text(TF.format(instance="p4d.24xlarge"))
    git(path, "commit", "-qam", "bigger GPUs")
    return path


def run_action(tmp_path: Path, action_path: Path, inputs: dict, existing_comment: str = "") -> dict:
    repo = _pull_request_repo(tmp_path / "repo")
    runner = tmp_path / "runner"
    (runner / "temp").mkdir(parents=True)
    fakebin = runner / "bin"
    fakebin.mkdir()
    (fakebin / "gh").write_text(GH)
    (fakebin / "gh").chmod(stat.S_IRWXU)
    summary = runner / "step_summary.md"
    summary.write_text("")
    gh_log = runner / "gh.log"
    defaults = {k: str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    ctx = {
        "inputs": {**defaults, **inputs},
        "github": {"action_path": str(action_path), "token": "ghs_test", "base_ref": "main", "event_name": "pull_request",
                   "event": {"pull_request": {"number": 7}}},
        "steps": {},
    }
    # an input default may itself be an expression (github-token: ${{ github.token }})
    ex = Expressions(ctx)
    ctx["inputs"] = {k: ex.render(v) for k, v in ctx["inputs"].items()}
    base_env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_", "GIT_"))}
    base_env.update({
        "PATH": f"{fakebin}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "RUNNER_TEMP": str(runner / "temp"), "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_REPOSITORY": "acme/train",
        "GITHUB_WORKSPACE": str(repo), "GITHUB_ACTION_PATH": str(action_path), "GH_LOG": str(gh_log),
        "FAKE_EXISTING_COMMENT": existing_comment, "NO_COLOR": "1",
        # offline: gpulint's dependencies come from this test environment instead of a package index
        "PYTHONPATH": os.pathsep.join(site.getsitepackages()),
    })
    ran, used = [], []
    for i, step in enumerate(ACTION["runs"]["steps"]):
        if not ex.condition(step.get("if")):
            continue
        if "uses" in step:
            used.append((step["uses"], {k: ex.render(v) for k, v in (step.get("with") or {}).items()}))
            continue
        assert step.get("shell") == "bash", f"step {step.get('name')} must say shell: bash"
        output = runner / f"output-{i}"
        output.write_text("")
        env = {**base_env, **{k: ex.render(v) for k, v in (step.get("env") or {}).items()}, "GITHUB_OUTPUT": str(output)}
        assert "${{" not in step["run"], f"step {step.get('name')}: expressions belong in env:, not in the script"
        script = runner / f"step-{i}.sh"
        script.write_text(step["run"])
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=repo, env=env,
                              capture_output=True, text=True, timeout=600)
        ran.append((step.get("name"), proc))
        outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
        if step.get("id"):
            ctx["steps"][step["id"]] = {"outputs": outputs}
        if proc.returncode != 0:
            break
    return {"ran": ran, "used": used, "summary": summary.read_text(), "gh": gh_log.read_text() if gh_log.exists() else "",
            "steps": ctx["steps"], "repo": repo}


def test_action_runs_its_steps_and_fails_on_the_cost_gate(tmp_path, action_copy):
    out = run_action(tmp_path, action_copy, {"fail-on-cost": "1", "comment": "true",
                                             "pip-args": "--no-index --no-build-isolation --no-deps"})
    names = [n for n, _ in out["ran"]]
    assert names == ["Install gpulint", "Scan", "Comment on the pull request", "Gate"], [(n, p.stderr[-2000:]) for n, p in out["ran"]]
    install, scan, comment, gate = (p for _, p in out["ran"])
    assert install.returncode == 0 and "gpulint " in install.stdout
    assert scan.returncode == 0, scan.stderr
    # SARIF of the whole tree, uploaded by the codeql action
    ((uses, with_),) = out["used"]
    assert uses.startswith("github/codeql-action/upload-sarif@") and with_["category"] == "gpulint"
    sarif = json.loads(Path(with_["sarif_file"]).read_text())
    jsonschema.validate(sarif, SARIF_SCHEMA)
    assert {r["ruleId"] for r in sarif["runs"][0]["results"]} >= {"AMP001", "AMP005"}
    # the job summary: new findings against the base branch, the new spend, the gate
    s = out["summary"]
    assert s.startswith("## gpulint: 2 new findings")  # MEM002 (GPT-2 on 8 A100s), and AMP001 costlier
    assert "Compared with `origin/main`" in s and "1 costlier than there" in s and "**Cost gate failed**" in s
    # the pull-request comment, created (no earlier one) with the marker the next run finds it by
    (listing, post) = out["gh"].splitlines()[:2]
    assert listing.startswith("api repos/acme/train/issues/7/comments --paginate")
    assert post.startswith("api --method POST repos/acme/train/issues/7/comments -f body=<!-- gpulint: pull-request summary -->")
    assert out["steps"]["scan"]["outputs"]["exit-code"] == "1"
    assert gate.returncode == 1  # the job fails: the new avoidable spend is over $1/h


def test_action_updates_its_comment_and_passes_under_the_limit(tmp_path, action_copy):
    out = run_action(tmp_path, action_copy, {"fail-on": "error", "fail-on-cost": "1000", "comment": "true", "sarif": "false",
                                             "pip-args": "--no-index --no-build-isolation --no-deps"},
                     existing_comment="4242")
    assert [n for n, _ in out["ran"]][-1] == "Gate" and out["ran"][-1][1].returncode == 0
    assert out["used"] == []  # SARIF upload off
    assert "api --method PATCH repos/acme/train/issues/comments/4242 -f body=" in out["gh"]
    assert "Cost gate passed" in out["summary"]


def test_action_inputs_are_documented():
    for name, spec in ACTION["inputs"].items():
        assert spec.get("description"), name
    assert ACTION["runs"]["using"] == "composite"
    readme = (ROOT / "README.md").read_text()
    assert "uses: " in readme and "fetch-depth: 0" in readme and "security-events: write" in readme
