"""A dollar figure wherever the spend can be sized: jobs that name only their GPU model are priced per GPU-hour,
every unpriced workload says the one fact that would price it, and a job's stated time limit sizes its period figure."""
from __future__ import annotations

import json

import pytest
from conftest import run_cli

from gpulint.read.shell.slurm import slurm_hours

LOOP = '''import torch
from transformers import AutoModelForCausalLM


def main():
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5)
    for step in range(20000):
        batch = torch.randint(0, 32000, (8, 2048), device="cuda")
        loss = model(input_ids=batch, labels=batch).loss
        loss.backward()
        opt.step()
        opt.zero_grad()


if __name__ == "__main__":
    main()
'''


def sbatch(gres: str, nodes: int = 2, time: str | None = "2-00:00:00") -> str:
    lines = ["#!/bin/bash", "#SBATCH --job-name=sft", f"#SBATCH --nodes={nodes}", f"#SBATCH --gres={gres}"]
    if time:
        lines.append(f"#SBATCH --time={time}")
    lines.append(f"srun torchrun --nnodes {nodes} --nproc_per_node 4 train.py")
    return "\n".join(lines) + "\n"


POD = '''apiVersion: batch/v1
kind: Job
metadata:
  name: sft
spec:
  template:
    spec:
      nodeSelector:
        nvidia.com/gpu.product: {product}
      containers:
      - name: trainer
        image: ghcr.io/acme/trainer:1.0
        command: ["torchrun", "--nproc_per_node", "{gpus}", "train.py"]
        resources:
          limits:
            nvidia.com/gpu: {gpus}
      restartPolicy: Never
'''


def project(tmp_path, files: dict[str, str]):
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return tmp_path


def workloads(root) -> list[dict]:
    proc = run_cli("workloads", ".", "--format", "json", cwd=root, env={"GPULINT_CACHE_DIR": str(root / ".cache")})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["workloads"]


@pytest.mark.parametrize("text, hours", [
    ("30", 0.5), ("90:00", 1.5), ("12:00:00", 12.0), ("2-00", 48.0), ("1-12:30", 36.5), ("3-00:00:00", 72.0),
    ("UNLIMITED", None), ("infinite", None), ("0", None), ("", None), ("12h", None),
])
def test_slurm_time_limits_in_every_documented_form(text, hours):
    assert slurm_hours(text) == hours


def test_a_slurm_job_naming_its_gpu_model_is_priced_per_gpu_hour(tmp_path):
    root = project(tmp_path, {"train.py": LOOP, "job.sbatch": sbatch("gpu:a100:4")})
    (wl,) = workloads(root)
    c = wl["compute"]
    assert c["instance"] is None and c["priced_per_gpu_hour"]["gpu_model"] == "A100-SXM4-40GB"
    rate = c["priced_per_gpu_hour"]
    # the lowest per-GPU rate among the catalogue's A100-40GB machines, times the 4 GPUs a node holds, times 2 nodes
    assert rate["from_instance"] == "p4d.24xlarge" and rate["from_gpus"] == 8
    assert c["unit_usd_per_hour"] == pytest.approx(21.957642 / 8 * 4, abs=1e-3) and c["usd_per_hour"] == pytest.approx(21.9576, abs=1e-3)
    assert "an assumption: the repository names the GPU, not the machine" in c["price_source"]
    assert c["run_hours"] == 48.0 and c["run_hours_fact"] == "job.sbatch:5"
    assert "to_price" not in wl["resolved"]
    assert any("priced per GPU-hour of A100-SXM4-40GB" in u for u in wl["unknown"])


def test_a_slurm_job_with_a_gpu_count_only_says_what_would_price_it(tmp_path):
    root = project(tmp_path, {"train.py": LOOP, "job.sbatch": sbatch("gpu:4")})
    (wl,) = workloads(root)
    assert wl["compute"].get("usd_per_hour") is None
    hint = wl["resolved"]["to_price"]
    assert "--gres=gpu:<model>:4" in hint and 'entrypoint = "train.py"' in hint and "[[tool.gpulint.workloads]]" in hint
    text = run_cli("workloads", ".", cwd=root, env={"GPULINT_CACHE_DIR": str(root / ".cache")}).stdout
    assert f"  to_price: {hint}\n" in text  # in full, never cut short


def test_no_compute_at_all_asks_for_the_machine_and_a_pinned_machine_prices_it(tmp_path):
    root = project(tmp_path, {"train.py": LOOP})
    (wl,) = workloads(root)
    assert wl["resolved"]["to_price"].startswith("the machine it runs on")
    (root / "pyproject.toml").write_text('[[tool.gpulint.workloads]]\nentrypoint = "train.py"\ninstance = "p4d.24xlarge"\n')
    (pinned,) = workloads(root)
    assert pinned["compute"]["usd_per_hour"] and "to_price" not in pinned["resolved"]


def test_a_pod_on_a_gpu_product_label_is_priced_from_the_matching_machine(tmp_path):
    root = project(tmp_path, {"train.py": LOOP, "k8s/job.yaml": POD.format(product="NVIDIA-H100-80GB-HBM3", gpus=8)})
    (wl,) = workloads(root)
    c = wl["compute"]
    assert c["accelerator"]["type"] == "NVIDIA-H100-80GB-HBM3" and c["gpu_model"] == "H100-SXM5-80GB"
    assert c["usd_per_hour"] and "cheapest matching catalogue instance" in c["assumed"]


def test_a_pod_whose_gpu_count_no_machine_has_is_priced_per_gpu_hour(tmp_path):
    root = project(tmp_path, {"train.py": LOOP, "k8s/job.yaml": POD.format(product="NVIDIA-A100-SXM4-80GB", gpus=3)})
    (wl,) = workloads(root)
    c = wl["compute"]
    assert c["instance"] is None and c["priced_per_gpu_hour"]["gpu_model"] == "A100-SXM4-80GB"
    per_gpu = c["unit_usd_per_hour"] / 3
    assert per_gpu == pytest.approx(c["unit_usd_per_hour"] / c["gpus_per_node"])


def test_an_unknown_gpu_product_stays_unpriced(tmp_path):
    root = project(tmp_path, {"train.py": LOOP, "k8s/job.yaml": POD.format(product="NVIDIA-RTX-PRO-6000", gpus=2)})
    (wl,) = workloads(root)
    assert wl["compute"].get("usd_per_hour") is None and "to_price" in wl["resolved"]


def test_summary_shows_one_run_at_the_stated_time_limit_not_a_month(tmp_path):
    root = project(tmp_path, {"train.py": LOOP.replace(".cuda()", ".cuda()  # fp32"), "job.sbatch": sbatch("gpu:a100:4")})
    env = {"GPULINT_CACHE_DIR": str(root / ".cache")}
    text = run_cli("scan", ".", "--exit-zero", cwd=root, env=env).stdout
    row = next(line for line in text.splitlines() if line.strip().startswith("train.py "))
    assert "2x (4x A100-SXM4-40GB)" not in row and "4x A100-SXM4-40GB" in row and "per run (48 h)" in row, text
    assert "or per run" in text and "shows one run at that limit" in " ".join(text.split())
    md = run_cli("scan", ".", "--exit-zero", "--format", "markdown", cwd=root, env=env).stdout
    assert "per run (48 h)" in md and "Avoidable/month or per run" in md
    no_limit = project(tmp_path / "b", {"train.py": LOOP, "job.sbatch": sbatch("gpu:a100:4", time=None)})
    text = run_cli("scan", ".", "--exit-zero", cwd=no_limit, env={"GPULINT_CACHE_DIR": str(no_limit / ".cache")}).stdout
    assert "per run" not in text and "per month (730 h)" in text


CRONJOB = '''apiVersion: batch/v1
kind: CronJob
metadata:
  name: nightly-sft
spec:
  schedule: "{schedule}"
  suspend: {suspend}
  jobTemplate:
    spec:
      activeDeadlineSeconds: 7200
      template:
        spec:
          nodeSelector:
            nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
          containers:
          - name: trainer
            image: ghcr.io/acme/trainer:1.0
            command: ["torchrun", "--nproc_per_node", "8", "train.py"]
            resources:
              limits:
                nvidia.com/gpu: 8
          restartPolicy: Never
'''


@pytest.mark.parametrize("schedule, runs", [
    ("0 2 * * *", 30.42), ("@weekly", 4.33), ("0 3 1 * *", 1.0), ("*/30 * * * *", 1460.0), ("0 9-17 * * 1-5", 195.75),
    ("0 0 1,15 * 1", 6.0), ("CRON_TZ=Europe/Paris 0 2 * * *", 30.42), ("0 0 31 2 *", None), ("@reboot", None),
    ("61 * * * *", None), ("0 0 * *", None),
])
def test_cron_schedules_become_runs_per_month(schedule, runs):
    from gpulint.read.cron import runs_per_month
    assert runs_per_month(schedule) == runs


def test_a_scheduled_job_with_a_deadline_is_a_month_of_its_runs(tmp_path):
    root = project(tmp_path, {"train.py": LOOP, "k8s/cron.yaml": CRONJOB.format(schedule="0 2 * * *", suspend="false")})
    (wl,) = workloads(root)
    c = wl["compute"]
    assert (c["run_hours"], c["runs_per_month"]) == (2.0, 30.42)
    assert c["run_hours_fact"].startswith("k8s/cron.yaml:") and c["runs_per_month_fact"] == "k8s/cron.yaml:6"
    text = run_cli("scan", ".", "--exit-zero", cwd=root, env={"GPULINT_CACHE_DIR": str(root / ".cache")}).stdout
    assert "per month (30.42 runs x 2 h)" in text, text


def test_a_suspended_cronjob_runs_never_and_a_plain_job_once(tmp_path):
    root = project(tmp_path / "a", {"train.py": LOOP, "k8s/cron.yaml": CRONJOB.format(schedule="0 2 * * *", suspend="true")})
    (wl,) = workloads(root)
    assert "runs_per_month" not in wl["compute"] and wl["compute"]["run_hours"] == 2.0
    job = POD.format(product="NVIDIA-A100-SXM4-80GB", gpus=8).replace("spec:\n  template:", "spec:\n  activeDeadlineSeconds: 5400\n  template:")
    root = project(tmp_path / "b", {"train.py": LOOP, "k8s/job.yaml": job})
    (wl,) = workloads(root)
    assert wl["compute"]["run_hours"] == 1.5 and "runs_per_month" not in wl["compute"]


def test_the_nightly_cronjob_fixture_prices_a_month_of_its_runs():
    from conftest import FIXTURES
    proc = run_cli("scan", FIXTURES / "cost-nightly-cronjob", "--format", "json", "--no-cache")
    assert proc.returncode == 1, proc.stderr
    found = sorted((f["code"], f["path"].split("cost-nightly-cronjob/")[-1], f["line"]) for f in json.loads(proc.stdout)["findings"])
    assert found == [("AMP001", "refresh/train.py", 32), ("AMP005", "refresh/train.py", 32),
                     ("MEM002", "k8s/nightly-refresh.yaml", 5)]
    text = run_cli("scan", FIXTURES / "cost-nightly-cronjob", "--no-cache").stdout
    assert "per month (30.42 runs x 4 h)" in text and "a month of its runs when a schedule says" in " ".join(text.split())
