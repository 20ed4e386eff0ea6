"""COST and INF rules end to end on fixture repositories: what must fire, what must stay silent."""
from __future__ import annotations

import json
import shutil

import pytest

from conftest import FIXTURES, run_cli
from gpulint.testing import scan_files
from helpers import AT, SEVERITY_AT, codes, findings, rows
from samples import EKS_GROUP, HPA, NB_JOB, TGI


def scan(repo, *extra):
    proc = run_cli("scan", str(repo), "--format", "json", "--exit-zero", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_an_always_on_gpu_training_pool_without_budget_or_metrics():
    doc = scan(FIXTURES / "cost-eks-always-on")
    assert rows(doc["findings"], AT, prefix=("COST", "INF"), sort=True) == [("COST001", "infra/eks.tf", 20), ("COST002", "infra/eks.tf", 10), ("COST007", "infra/eks.tf", 10)]
    cost001 = next(f for f in doc["findings"] if f["code"] == "COST001")
    assert cost001["severity"] == "warning" and "min 2 nodes" in cost001["message"] and "/month" in cost001["message"]
    assert cost001["cost_impact"]["usd_per_hour"] > 0 and "730 h" in cost001["cost_impact"]["basis"]
    assert {f["severity"] for f in doc["findings"] if f["code"] in ("COST002", "COST007")} == {"info"}


def test_scaling_to_zero_with_a_budget_and_dcgm_is_silent():
    assert rows(scan(FIXTURES / "cost-eks-scales-to-zero")["findings"], AT, prefix=("COST", "INF"), sort=True) == []


def test_hours_per_month_is_the_configured_month(tmp_path):
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "cost-eks-always-on", repo)
    (repo / ".gpulint.toml").write_text("[pricing]\nhours-per-month = 200\n")
    cost001 = next(f for f in scan(repo)["findings"] if f["code"] == "COST001")
    per_hour = cost001["cost_impact"]["usd_per_hour"]
    assert f"${per_hour * 200:,.0f}/month" in cost001["message"]


def test_serving_rules():
    doc = scan(FIXTURES / "cost-serving")
    got = rows(doc["findings"], AT, prefix=("COST", "INF"), sort=True)
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
    assert rows(scan(FIXTURES / "cost-notebooks")["findings"], AT, prefix="COST005", sort=True) == [("COST005", "infra/notebooks.tf", 6)]


def test_fp32_serving_and_autograd_left_on():
    doc = scan(FIXTURES / "inf-fp32-server")
    assert rows(doc["findings"], AT, prefix=("COST", "INF"), sort=True) == [("INF001", "serve/app.py", 6), ("INF002", "serve/app.py", 6)]
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
    assert rows(scan(repo)["findings"], AT, prefix=("COST", "INF"), sort=True) == []


@pytest.mark.parametrize("code", ["COST001", "COST002", "COST003", "COST004", "COST005", "COST006", "COST007", "INF001", "INF002"])
def test_explain_covers_the_rule_with_its_cost_model(code):
    proc = run_cli("explain", code)
    assert proc.returncode == 0
    assert "Cost model" in proc.stdout and "How to fix" in proc.stdout


SKYSERVE = ("service:\n  readiness_probe: /v1/models\n  replicas: 2\n%s"
            "resources:\n  accelerators: L4:1\n%s  ports: 8000\nrun: |\n  python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B-Instruct\n")


RAYCLUSTER = '''\
apiVersion: ray.io/v1
kind: RayCluster
metadata: {name: train}
spec:
%s  headGroupSpec:
    template:
      spec:
        containers: [{name: head, image: rayproject/ray:2.9.0}]
  workerGroupSpecs:
    - groupName: gpu
      replicas: 2
      minReplicas: %d
      maxReplicas: 4
      template:
        spec:
          nodeSelector: {node.kubernetes.io/instance-type: g5.12xlarge}
          containers:
            - name: w
              image: rayproject/ray:2.9.0-gpu
              resources: {limits: {nvidia.com/gpu: 4}}
'''


GKE_POOL = """\
resource "google_container_node_pool" "trainers" {
  name    = "a3-trainers"
  cluster = "ml"
  autoscaling {
    min_node_count = 2
    max_node_count = 4
  }
  node_config {
    machine_type = "a3-highgpu-8g"
EXTRA
  }
}
"""


AKS_POOL = """\
resource "azurerm_kubernetes_cluster_node_pool" "train" {
  name                  = "gputrain"
  kubernetes_cluster_id = "x"
  vm_size               = "Standard_ND96asr_v4"
  enable_auto_scaling   = true
  min_count             = 2
  max_count             = 4
EXTRA
}
"""


# -- a script with a model_fn that a training job runs (to compile or export) does not serve around the clock --
COMPILE = """\
import torch
from transformers import AutoModelForSequenceClassification


def model_fn(model_dir):
    return AutoModelForSequenceClassification.from_pretrained(model_dir).cuda().eval()


if __name__ == "__main__":
    model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased")
    model.save_pretrained("/opt/ml/model")
"""


# -- COST001 ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("autoscale, minimum, expect", [
    ("", 0, "keeps min 2 pods"),                                  # no autoscaler: replicas stand
    ("  enableInTreeAutoscaling: true\n", 1, "keeps min 1 pod "),
    ("  enableInTreeAutoscaling: true\n", 0, None),
])
def test_a_raycluster_without_the_autoscaler_keeps_its_replicas(autoscale, minimum, expect):
    found = findings({"k8s/ray.yaml": RAYCLUSTER % (autoscale, minimum)}, "COST001")
    if expect is None:
        assert found == []
    else:
        assert len(found) == 1 and expect in found[0].message, [f.message for f in found]
        assert ("no autoscaler" in found[0].message) is (not autoscale)


@pytest.mark.parametrize("tf, extra, floor_reported", [
    (EKS_GROUP, "", True),
    (EKS_GROUP, '      capacity_type = "CAPACITY_BLOCK"', False),
    (EKS_GROUP, "      capacity_reservation_specification = {\n        capacity_reservation_target = {\n"
                "          capacity_reservation_resource_group_arn = aws_resourcegroups_group.odcr.arn\n        }\n      }", False),
    (EKS_GROUP, '      capacity_reservation_specification = {\n        capacity_reservation_preference = "open"\n      }', True),
    (GKE_POOL, "", True),
    (GKE_POOL, '    reservation_affinity {\n      consume_reservation_type = "SPECIFIC_RESERVATION"\n'
               '      key = "compute.googleapis.com/reservation-name"\n      values = ["a3-res"]\n    }', False),
    (GKE_POOL, '    reservation_affinity {\n      consume_reservation_type = "ANY_RESERVATION"\n    }', True),
    (AKS_POOL, "", True),
    (AKS_POOL, "  capacity_reservation_group_id = azurerm_capacity_reservation_group.gpu.id", False),
])
def test_a_floor_of_reserved_capacity_is_not_idle_spend_that_scaling_to_zero_returns(tf, extra, floor_reported):
    got = findings({"infra/main.tf": tf.replace("EXTRA", extra)}, "COST001")
    assert bool(got) == floor_reported, [f.message for f in got]


# -- COST002 ---------------------------------------------------------------------------------------------


# -- COST002's guidance names the provider's own budget ----------------------------------------------
@pytest.mark.parametrize("tf, provider_word, other_word", [
    ('resource "google_container_node_pool" "gpu" {\n  node_config {\n    machine_type = "g2-standard-4"\n  }\n}\n',
     "google_billing_budget", "aws_budgets_budget"),
    ('resource "aws_instance" "gpu" {\n  instance_type = "g5.xlarge"\n}\n', "aws_budgets_budget", "google_billing_budget"),
])
def test_the_budget_guidance_is_the_providers_own(tf, provider_word, other_word):
    (f,) = [f for f in scan_files({"main.tf": tf}, select=["COST002"]).findings if f.code == "COST002"]
    assert provider_word in f.guidance and other_word not in f.guidance


# -- COST003 ---------------------------------------------------------------------------------------------


def test_a_skyserve_service_is_priced_for_all_its_replicas():
    yaml_text = SKYSERVE.replace("accelerators: L4:1", "accelerators: A100:1") % ("", "")
    (f,) = [f for f in scan_files({"serve.yaml": yaml_text}).findings if f.code == "COST003"]
    assert "for 2 replicas" in f.message


# -- COST004 ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("service, resources", [
    ("", "  any_of:\n    - use_spot: true\n    - use_spot: false\n"),
    ("  replica_policy:\n    min_replicas: 2\n    dynamic_ondemand_fallback: true\n", "  use_spot: true\n"),
    ("  replica_policy:\n    min_replicas: 2\n    base_ondemand_fallback_replicas: 1\n", "  use_spot: true\n"),
])
def test_skypilot_spot_serving_with_an_on_demand_fallback_is_fine(service, resources):
    assert codes({"serve.yaml": SKYSERVE % (service, resources)}, "COST004", sort=True) == []


def test_skypilot_spot_only_serving_is_told_the_skyserve_fallback():
    (f,) = [f for f in scan_files({"serve.yaml": SKYSERVE % ("", "  use_spot: true\n")}).findings if f.code == "COST004"]
    assert "dynamic_ondemand_fallback" in f.guidance


def test_an_image_tag_naming_a_bundled_server_does_not_make_a_cluster_a_server():
    ray = """apiVersion: ray.io/v1
kind: RayCluster
metadata:
  name: rl
spec:
  workerGroupSpecs:
  - groupName: gpu-group
    replicas: 2
    template:
      spec:
        containers:
        - name: worker
          image: example/rl-trainer:app-v0.5-vllm0.9.1-cu124
          resources:
            limits:
              nvidia.com/gpu: 8
        nodeSelector:
          cloud.google.com/gke-accelerator: nvidia-h100-80gb
          cloud.google.com/gke-spot: "true"
"""
    assert codes({"k8s/ray.yaml": ray}, "COST004", sort=True) == []
    server = ray.replace("example/rl-trainer:app-v0.5-vllm0.9.1-cu124", "vllm/vllm-openai:v0.9.1")
    assert codes({"k8s/ray.yaml": server}, "COST004", sort=True) == ["COST004"]


@pytest.mark.parametrize("replicas, hpa, severity", [
    ("1", "", "info"),
    ("2", "", "warning"),
    ("1", HPA.replace("TARGET", "llm"), "warning"),
    ("1", HPA.replace("TARGET", "other"), "info"),  # an autoscaler of something else
])
def test_one_spot_replica_that_nothing_scales_is_info_and_an_autoscaled_or_replicated_endpoint_a_warning(replicas, hpa, severity):
    (f,) = findings({"k8s/tgi.yaml": TGI.replace("REPLICAS", replicas) + hpa}, "COST004")
    assert f.severity.value == severity, f.message
    assert ("not evidently a production endpoint" in f.message) == (severity == "info")


# -- COST005 ---------------------------------------------------------------------------------------------


def test_a_notebook_image_named_by_its_tag_is_a_notebook():
    sts = ("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: lab\nspec:\n  replicas: 1\n  template:\n    spec:\n"
           "      containers:\n      - name: lab\n        image: tensorflow/tensorflow:latest-gpu-jupyter\n"
           "        resources:\n          limits:\n            nvidia.com/gpu: 1\n"
           "      nodeSelector:\n        cloud.google.com/gke-accelerator: nvidia-l4\n")
    assert codes({"k8s/lab.yaml": sts}, "COST005", sort=True) == ["COST005"]


def test_an_idle_notebook_pod_without_a_machine_type_is_not_named_none():
    pod = ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: tensorflow-jupyter\nspec:\n  replicas: 1\n"
           "  selector: {matchLabels: {app: nb}}\n  template:\n    metadata: {labels: {app: nb}}\n    spec:\n"
           "      containers:\n        - name: jupyter\n          image: tensorflow/tensorflow:latest-gpu-jupyter\n"
           "          resources:\n            limits:\n              nvidia.com/gpu: 1\n")
    msgs = [f.message for f in findings({"nb.yaml": pod}, "COST005")]
    assert msgs and all("(None)" not in m for m in msgs), msgs


# -- COST006 ---------------------------------------------------------------------------------------------


def test_cost006_is_silent_for_a_serving_script_whose_compute_is_a_training_job():
    cost = [c for c in codes({"src/compile.py": COMPILE, "run.py": NB_JOB.format(kind="ml.g5.xlarge")}, fields=SEVERITY_AT) if c[0] == "COST006"]
    assert cost == []
