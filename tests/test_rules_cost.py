"""COST and INF rules end to end on fixture repositories: what must fire, what must stay silent."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, run_cli


def scan(repo, *extra):
    proc = run_cli("scan", str(repo), "--format", "json", "--exit-zero", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def found(doc, prefix=("COST", "INF")):
    return sorted((f["code"], f["path"], f["line"]) for f in doc["findings"] if f["code"].startswith(prefix))


def test_an_always_on_gpu_training_pool_without_budget_or_metrics():
    doc = scan(FIXTURES / "cost-eks-always-on")
    assert found(doc) == [("COST001", "infra/eks.tf", 20), ("COST002", "infra/eks.tf", 10), ("COST007", "infra/eks.tf", 10)]
    cost001 = next(f for f in doc["findings"] if f["code"] == "COST001")
    assert cost001["severity"] == "warning" and "min 2 nodes" in cost001["message"] and "/month" in cost001["message"]
    assert cost001["cost_impact"]["usd_per_hour"] > 0 and "730 h" in cost001["cost_impact"]["basis"]
    assert {f["severity"] for f in doc["findings"] if f["code"] in ("COST002", "COST007")} == {"info"}


def test_scaling_to_zero_with_a_budget_and_dcgm_is_silent():
    assert found(scan(FIXTURES / "cost-eks-scales-to-zero")) == []


def test_hours_per_month_is_the_configured_month(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "cost-eks-always-on", repo)
    (repo / ".gpulint.toml").write_text("[pricing]\nhours-per-month = 200\n")
    cost001 = next(f for f in scan(repo)["findings"] if f["code"] == "COST001")
    per_hour = cost001["cost_impact"]["usd_per_hour"]
    assert f"${per_hour * 200:,.0f}/month" in cost001["message"]


def test_serving_rules():
    doc = scan(FIXTURES / "cost-serving")
    got = found(doc)
    assert ("COST003", "k8s/chat-p4d.yaml", 16) in got
    assert ("COST004", "k8s/chat-spot.yaml", 17) in got
    assert ("COST006", "infra/endpoint.tf", 7) in got
    assert not [f for f in got if f[1] == "k8s/chat-g5.yaml"]  # a 7B model on one A10G is right-sized
    cost003 = next(f for f in doc["findings"] if f["code"] == "COST003")
    assert "Llama-2-7b" in cost003["message"] and "/month less" in cost003["message"]
    monthly = cost003["cost_impact"]["usd_per_hour"] * 730
    assert f"${monthly:,.0f}/month" in cost003["message"]


def test_a_commitment_already_held_silences_cost006(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "cost-serving", repo)
    (repo / ".gpulint.toml").write_text('[pricing]\ncommitments = ["g5.*"]\n')
    assert not [f for f in scan(repo)["findings"] if f["code"] == "COST006"]


def test_notebooks_without_autostop():
    assert found(scan(FIXTURES / "cost-notebooks"), ("COST005",)) == [("COST005", "infra/notebooks.tf", 6)]


def test_fp32_serving_and_autograd_left_on():
    doc = scan(FIXTURES / "inf-fp32-server")
    assert found(doc) == [("INF001", "serve/app.py", 6), ("INF002", "serve/app.py", 6)]
    assert not [f for f in doc["findings"] if f["code"].startswith(("AMP", "IO", "SPOT", "NET"))]
    # the Deployment's `uvicorn serve.app:app` is the launcher: the server is linked to its compute by it
    (wl,) = doc["workloads"]
    assert "launcher: k8s/scorer.yaml:20 runs serve/app.py" in wl["links"]


def test_inference_in_bf16_under_inference_mode_is_silent(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "inf-fp32-server", repo)
    app = repo / "serve" / "app.py"
    app.write_text(app.read_text()
                   .replace('from_pretrained("roberta-large")', 'from_pretrained("roberta-large", torch_dtype=torch.bfloat16)')
                   .replace("    logits = model(**batch).logits\n", "    with torch.inference_mode():\n        logits = model(**batch).logits\n"))
    assert found(scan(repo)) == []


@pytest.mark.parametrize("code", ["COST001", "COST002", "COST003", "COST004", "COST005", "COST006", "COST007", "INF001", "INF002"])
def test_explain_covers_the_rule_with_its_cost_model(code):
    proc = run_cli("explain", code)
    assert proc.returncode == 0
    assert "Cost model" in proc.stdout and "How to fix" in proc.stdout
