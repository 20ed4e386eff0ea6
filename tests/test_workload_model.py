"""The workload model end to end (issue: resolve each compute target once, typed; link the
launchers real repositories use). Each case scans a fixture repository (or a copy changed in
one place) through the CLI and reads the JSON it prints, as CI and editors do."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES, ROOT, run_cli
from helpers import AT, rows


def scan(repo: Path, *extra: str) -> dict:
    proc = run_cli("scan", str(repo), "--format", "json", "--exit-zero", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def workloads(repo: Path) -> dict[str, dict]:
    proc = run_cli("workloads", str(repo), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    return {w["name"]: w for w in json.loads(proc.stdout)["workloads"]}


def copy(name: str, tmp_path: Path) -> Path:
    dst = tmp_path / name
    shutil.copytree(FIXTURES / name, dst)
    return dst


# -- Terraform references across files ------------------------------------------------------------
def test_local_to_variable_in_another_file_is_resolved_and_priced():
    wl = workloads(FIXTURES / "wm-tf-locals-across-files")["train.py"]
    c = wl["compute"]
    assert (c["instance"], c["capacity"], c["device"]) == ("p4d.24xlarge", "spot", "gpu")
    assert c["instance_fact"] == "infra/main.tf:8" and c["usd_per_hour"] > 0
    assert not any("no literal default" in u or u.startswith("instance:") for u in wl["unknown"])
    doc = scan(FIXTURES / "wm-tf-locals-across-files")
    amp = [f for f in doc["findings"] if f["code"] == "AMP001"]
    assert len(amp) == 1 and amp[0]["cost_impact"]["usd_per_hour"] > 0
    assert ("SPOT001", "train.py", 15) in rows(doc["findings"], AT, sort=True)


def test_auto_tfvars_override_the_default(tmp_path):
    repo = copy("wm-tf-locals-across-files", tmp_path)
    (repo / "infra" / "terraform.tfvars").write_text('trainer_instance_type = "g5.48xlarge"\nregion = "us-east-1"\n')
    c = workloads(repo)["train.py"]["compute"]
    assert c["instance"] == "g5.48xlarge"


def test_a_named_tfvars_with_another_value_leaves_it_undecided(tmp_path):
    repo = copy("wm-tf-locals-across-files", tmp_path)
    (repo / "infra" / "prod.tfvars").write_text('trainer_instance_type = "p5.48xlarge"\n')
    wl = workloads(repo)["train.py"]
    assert wl["compute"]["instance"] is None
    assert any("prod.tfvars" in u and "-var-file" in u for u in wl["unknown"]), wl["unknown"]
    assert not [f for f in scan(repo)["findings"] if f["code"] == "AMP001" and f["cost_impact"]["usd_per_hour"]]


def test_a_module_block_passes_the_variable_one_level_down(tmp_path):
    repo = copy("wm-tf-locals-across-files", tmp_path)
    module = repo / "infra" / "modules" / "trainer"
    module.mkdir(parents=True)
    (repo / "infra" / "main.tf").rename(module / "main.tf")
    (module / "variables.tf").write_text('variable "trainer_instance_type" {\n  type = string\n}\n')
    (repo / "infra" / "variables.tf").unlink()
    (repo / "infra" / "main.tf").write_text('module "trainer" {\n  source                = "./modules/trainer"\n'
                                            '  trainer_instance_type = var.gpu\n}\n\nvariable "gpu" {\n  default = "g6e.12xlarge"\n}\n')
    c = workloads(repo)["train.py"]["compute"]
    assert c["instance"] == "g6e.12xlarge" and c["id"] == "infra/modules/trainer/main.tf#aws_instance.trainer"


def test_a_tf_json_module_file_joins_the_module(tmp_path):
    repo = copy("wm-tf-locals-across-files", tmp_path)
    (repo / "infra" / "variables.tf").unlink()
    (repo / "infra" / "variables.tf.json").write_text(json.dumps(
        {"variable": {"trainer_instance_type": {"type": "string", "default": "g6.12xlarge"}}}, indent=2))
    assert workloads(repo)["train.py"]["compute"]["instance"] == "g6.12xlarge"


# -- vendored and test code do not hide the link ----------------------------------------------------
def test_a_vendored_training_script_is_not_a_workload_and_spot001_stays():
    doc = scan(FIXTURES / "wm-vendored-script")
    assert ("SPOT001", "train.py", 9) in rows(doc["findings"], AT, sort=True)
    assert not [f for f in doc["findings"] if f["path"].startswith("third_party/")]
    assert [w["name"] for w in doc["workloads"]] == ["train.py"]
    assert not [f for f in doc["findings"] if f["code"] == "SYS005"]


def test_include_vendored_brings_it_back_and_then_the_pairing_is_ambiguous(tmp_path):
    repo = copy("wm-vendored-script", tmp_path)
    (repo / ".gpulint.toml").write_text("include-vendored = true\n")
    doc = scan(repo)
    assert sorted(w["name"] for w in doc["workloads"]) == ["third_party/mnist/main.py", "train.py"]
    sys005 = [f for f in doc["findings"] if f["code"] == "SYS005"]
    assert len(sys005) == 1 and sys005[0]["path"] == "infra/main.tf" and sys005[0]["severity"] == "info"
    assert "train.py" in sys005[0]["message"] and "third_party/mnist/main.py" in sys005[0]["message"]
    assert "[[tool.gpulint.workloads]]" in sys005[0]["message"]


def test_a_launcher_named_script_is_preferred_over_one_nothing_starts(tmp_path):
    repo = copy("wm-vendored-script", tmp_path)
    (repo / ".gpulint.toml").write_text("include-vendored = true\n")
    (repo / "run.sh").write_text("#!/bin/bash\npython train.py\n")
    wls = workloads(repo)
    assert wls["train.py"]["compute"]["id"] == "infra/main.tf#aws_instance.finetune"
    assert any("the only training workload a launcher starts" in r for r in wls["train.py"]["links"])
    assert wls["third_party/mnist/main.py"]["compute"] is None


def test_test_code_is_context_only(tmp_path):
    repo = copy("wm-vendored-script", tmp_path)
    (repo / "tests").mkdir()
    (repo / "tests" / "test_train.py").write_text((repo / "third_party" / "mnist" / "main.py").read_text())
    doc = scan(repo)
    assert [w["name"] for w in doc["workloads"]] == ["train.py"]
    assert not [f for f in doc["findings"] if f["path"].startswith("tests/")]
    (repo / ".gpulint.toml").write_text("include-tests = true\ninclude-vendored = false\n")
    doc = scan(repo)
    assert "tests/test_train.py" in [w["name"] for w in doc["workloads"]]
    assert [f for f in doc["findings"] if f["path"] == "tests/test_train.py" and f["code"] == "NET006"]


# -- CPU compute is known, not unknown GPU ---------------------------------------------------------
def test_cpu_compute_gets_no_gpu_findings():
    doc = scan(FIXTURES / "wm-cpu-compute")
    assert rows(doc["findings"], AT, sort=True) == []
    wls = {w["name"]: w for w in doc["workloads"]}
    assert wls["src/train.py"]["compute"]["device"] == "cpu"
    assert "AWS family 'c' has no GPU" in wls["src/train.py"]["compute"]["device_reason"]
    assert wls["src/evaluate.py"]["compute"]["device"] == "cpu"  # SageMaker local mode
    assert not any(u.startswith("instance:") for w in wls.values() for u in w["unknown"])


def test_the_same_code_on_a_gpu_instance_is_judged(tmp_path):
    repo = copy("wm-cpu-compute", tmp_path)
    launch = repo / "launch_job.py"
    launch.write_text(launch.read_text().replace("ml.c5.2xlarge", "ml.g5.12xlarge"))
    got = {c for c, p, _ in rows(scan(repo)["findings"], AT, sort=True) if p == "src/train.py"}
    assert {"AMP001", "NET006"} <= got
    assert not got & {"IO001", "IO002"}  # its loader indexes a TensorDataset in memory: workers add nothing


def test_pods_without_a_gpu_request_and_cpu_vms_are_cpu_targets():
    proc = run_cli("workloads", str(FIXTURES / "wm-cpu-compute"), "--format", "json")
    data = json.loads(proc.stdout)
    devices = {c["id"]: c["device"] for c in data["computes"]}
    assert devices["k8s/etcd.yaml#StatefulSet/etcd"] == "cpu"
    assert devices["infra/main.tf#google_compute_instance.etl"] == "cpu"
    assert devices["launch_job.py#PyTorch@train"] == "cpu"


def test_xla_and_hpu_devices_outrank_the_launchers_gpu_evidence():
    doc = scan(FIXTURES / "wm-other-accelerators")
    assert rows(doc["findings"], AT, sort=True) == []
    wls = {w["name"]: w for w in doc["workloads"]}
    devices = {name: [f["value"]["device"] for f in w["facts"] if f["kind"] == "other_accelerator"] for name, w in wls.items()}
    assert devices == {"trainium/pretrain.py": ["xla"], "gaudi/finetune.py": ["hpu"]}
    assert all(any(l["value"]["tool"] == "torchrun" for l in w["launchers"]) for w in wls.values())


def test_the_gaudi_script_moved_to_cuda_is_judged(tmp_path):
    repo = copy("wm-other-accelerators", tmp_path)
    script = repo / "gaudi" / "finetune.py"
    script.write_text(script.read_text().replace('torch.device("hpu")', 'torch.device("cuda")').replace(
        'device_type="hpu"', 'device_type="cuda"').replace("import habana_frameworks.torch.core as htcore\n", "").replace(
        "    htcore.mark_step()\n", ""))
    got = {c for c, p, _ in rows(scan(repo)["findings"], AT, sort=True) if p == "gaudi/finetune.py"}
    assert "IO001" in got and "AMP001" not in got  # bf16 autocast on CUDA is mixed precision


# -- each job on its own compute -----------------------------------------------------------------------
def test_two_estimators_are_two_workloads_each_on_its_instance():
    wls = workloads(FIXTURES / "wm-two-jobs")
    sweep = wls["src/train.py [launch.py#HuggingFace@sweep]"]["compute"]
    full = wls["src/train.py [launch.py#HuggingFace@full]"]["compute"]
    assert (sweep["instance"], sweep["capacity"], sweep["nodes"]) == ("g5.2xlarge", "spot", 1)
    assert (full["instance"], full["capacity"], full["nodes"]) == ("p4d.24xlarge", "on-demand", 2)


def test_each_job_is_judged_on_its_own_capacity_and_repeats_are_one_finding():
    doc = scan(FIXTURES / "wm-two-jobs")
    spot002 = [f for f in doc["findings"] if f["code"] == "SPOT002"]
    assert [f["workloads"] for f in spot002] == [["src/train.py [launch.py#HuggingFace@sweep]"]]
    amp003 = {f["path"]: f["workloads"] for f in doc["findings"] if f["code"] == "AMP003"}
    assert len(amp003["src/train.py"]) == 2 and len(amp003["src/eval_probe.py"]) == 2
    keys = [(f["code"], f["path"], f["line"]) for f in doc["findings"]]
    assert len(keys) == len(set(keys))  # one finding per code, file and line


def test_a_pytorchjob_master_and_worker_stay_one_workload():
    wls = workloads(FIXTURES / "wm-two-jobs")
    h100 = wls["src/eval_probe.py [k8s/jobs.yaml#PyTorchJob/probe-h100]"]
    assert h100["compute"]["nodes"] == 2 and len(h100["launchers"]) == 2
    assert [j["id"] for j in h100["job_computes"]] == ["k8s/jobs.yaml#PyTorchJob/probe-h100/Worker"]


# -- roles ---------------------------------------------------------------------------------------------
def test_serving_code_and_serving_targets_are_inference_workloads():
    wls = workloads(FIXTURES / "wm-serving")
    assert wls["serve/app.py"]["role"] == "inference"
    assert wls["serve/app.py"]["compute"]["instance"] == "g5.xlarge"
    vllm = wls["k8s/vllm.yaml#Deployment/llama-chat"]
    assert vllm["role"] == "inference" and vllm["code_files"] == [] and vllm["compute"]["instance"] == "p4d.24xlarge"
    assert wls["training/finetune.py"]["role"] == "training"


def test_training_rules_never_judge_an_inference_workload(tmp_path):
    repo = copy("wm-serving", tmp_path)
    app = repo / "serve" / "app.py"
    # a loader without workers and DataParallel in the server: training rules must still stay away
    app.write_text(app.read_text().replace(
        "app = FastAPI()\n",
        "app = FastAPI()\nfrom torch.utils.data import DataLoader\nloader = DataLoader(range(10))\n"))
    got = {c for c, p, _ in rows(scan(repo)["findings"], AT, sort=True) if p == "serve/app.py"}
    assert not got & {"AMP001", "IO001", "IO002", "SPOT001", "NET006"}, got


# -- one resolution, read by every rule -------------------------------------------------------------
def test_rules_read_only_the_typed_resolution():
    """No rule re-links or re-resolves: no hidden context attributes, no resolver calls."""
    banned = re.compile(r"\bctx\._computes|getattr\(ctx|compute_targets\(|resolve_compute\(|precision_view\(|\.resolved\b")
    for path in sorted((ROOT / "rules").glob("*.py")):
        hits = [f"{path.name}:{i}" for i, line in enumerate(path.read_text().splitlines(), 1) if banned.search(line)]
        assert not hits, hits


def test_each_compute_target_is_resolved_once_per_scan(monkeypatch, tmp_path):
    from gpulint.resolve import resolver as resolve
    from gpulint.testing import scan_tree

    calls: list[str] = []
    original = resolve.Resolver._compute

    def counting(self, compute):
        calls.append(compute.id)
        return original(self, compute)

    monkeypatch.setattr(resolve.Resolver, "_compute", counting)
    shutil.copytree(FIXTURES / "wm-two-jobs", tmp_path / "repo")
    scan_tree(tmp_path / "repo")
    assert calls and len(calls) == len(set(calls))


def test_workloads_text_shows_role_device_and_the_job(tmp_path):
    proc = run_cli("workloads", str(FIXTURES / "wm-two-jobs"))
    assert "role: training (" in proc.stdout
    assert "device: gpu (the pod requests 8 GPU(s)" in proc.stdout
    assert "also in the job: p5.48xlarge [k8s/jobs.yaml#PyTorchJob/probe-h100/Worker]" in proc.stdout


# -- precision set where gpulint did not look before (issue: precision on real repositories) -----------
def test_precision_set_elsewhere_is_found_and_only_decided_off_fires():
    doc = scan(FIXTURES / "pr-precision-elsewhere")
    amp001 = sorted(f["path"] for f in doc["findings"] if f["code"] == "AMP001")
    assert amp001 == ["src/flag_dtype.py", "src/fp32_loop.py"]
    flag = next(f for f in doc["findings"] if f["code"] == "AMP001" and f["path"] == "src/flag_dtype.py")
    assert "--dtype disables it" in flag["message"]
    wls = {w["name"]: w for w in doc["workloads"]}
    assert wls["src/gpt_expr.py"]["resolved"]["precision"]["mixed"] is True
    assert wls["src/qlora.py"]["resolved"]["precision"]["dtypes"] == ["bf16"]
    assert wls["src/trl_sft.py"]["resolved"]["precision"]["mixed"] is None
    assert any("TRL >= 0.19" in u for u in wls["src/trl_sft.py"]["unknown"])


def test_the_flag_default_decides_when_the_launcher_passes_none(tmp_path):
    repo = copy("pr-precision-elsewhere", tmp_path)
    job = repo / "jobs" / "flag_dtype.yaml"
    job.write_text(job.read_text().replace(" --dtype float32", ""))
    assert not [f for f in scan(repo)["findings"] if f["code"] == "AMP001" and f["path"] == "src/flag_dtype.py"]
