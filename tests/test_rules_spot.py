"""SPOT001-SPOT004 (rules/spot.py): fixture repos through the CLI, capacity sources and edge cases through a real scan."""
from __future__ import annotations


import pytest

from conftest import FIXTURES, run_cli

from gpulint.testing import scan_files
from helpers import AT, cli_findings, codes, findings, rows

SPOT = "SPOT001,SPOT002,SPOT003,SPOT004"


# -- fixtures through the CLI ----------------------------------------------------------------
def test_spot_terraform_and_a_script_that_never_saves():
    found = cli_findings(FIXTURES / "spot-tf-no-save", SPOT)
    assert rows(found, AT, sort=True) == [("SPOT001", "train.py", 16)]
    f = found[0]
    assert f["severity"] == "error" and "g5.12xlarge" in f["message"] and "infra/main.tf:15" in f["message"]
    basis = f["cost_impact"]["basis"]
    assert f["cost_impact"]["usd_per_hour"] is None  # interruption rates are unknown: no hourly figure
    assert "g5.12xlarge at $2.42/h spot" in basis and "on-demand would be $5.67/h" in basis
    assert "10 h in that is 10 x $2.42 = $24.20" in basis and "price as of" in basis and "us-east-1" in basis
    assert any(r["path"] == "infra/main.tf" for r in f["related"])


def test_saves_but_never_resumes():
    found = cli_findings(FIXTURES / "spot-save-no-resume", SPOT)
    assert rows(found, AT, sort=True) == [("SPOT002", "train.py", 19)]
    assert "save_state" in found[0]["message"] and "step 0" in found[0]["message"]


def test_sagemaker_spot_estimator_without_checkpoint_s3_uri():
    found = cli_findings(FIXTURES / "spot-sagemaker-no-s3", SPOT)
    assert rows(found, AT, sort=True) == [("SPOT003", "launch.py", 16)]
    assert "checkpoint_s3_uri" in found[0]["message"] and "ml.g5.12xlarge" in found[0]["message"]


def test_checkpoints_on_instance_store_nvme():
    found = cli_findings(FIXTURES / "spot-ephemeral-nvme", SPOT)
    assert rows(found, AT, sort=True) == [("SPOT004", "train.py", 7)]
    assert "/opt/dlami/nvme/checkpoints" in found[0]["message"]


@pytest.mark.parametrize("name", ["spot-resilient", "clean", "net-pytorchjob-efa"])
def test_silent_fixtures(name):
    assert cli_findings(FIXTURES / name, SPOT) == []


def test_explain_renders_each_rule():
    for code in SPOT.split(","):
        proc = run_cli("explain", code)
        assert proc.returncode == 0, proc.stderr
        assert "Cost model" in proc.stdout and "How to fix" in proc.stdout


# -- SPOT001 across capacity sources ---------------------------------------------------------
NO_SAVE = (FIXTURES / "spot-tf-no-save" / "train.py").read_text()

SOURCES = {
    "terraform-gcp": ("infra/main.tf", """\
resource "google_compute_instance" "trainer" {
  name         = "trainer"
  machine_type = "a2-highgpu-1g"
  zone         = "us-central1-a"
  scheduling {
    provisioning_model = "SPOT"
    preemptible        = true
    automatic_restart  = false
  }
}
"""),
    "terraform-azure": ("infra/main.tf", """\
resource "azurerm_linux_virtual_machine" "trainer" {
  name            = "trainer"
  size            = "Standard_NC24ads_A100_v4"
  priority        = "Spot"
  eviction_policy = "Delete"
}
"""),
    "karpenter-selector": ("k8s/job.yaml", """\
apiVersion: batch/v1
kind: Job
metadata:
  name: resnet
spec:
  template:
    spec:
      nodeSelector:
        karpenter.sh/capacity-type: spot
        node.kubernetes.io/instance-type: g5.2xlarge
      containers:
        - name: train
          image: train:1
          command: ["python", "train.py"]
          resources:
            limits:
              nvidia.com/gpu: 1
"""),
    "skypilot": ("sky.yaml", "resources:\n  accelerators: A10G:1\n  use_spot: true\nrun: python train.py\n"),
    "sagemaker": ("launch.py", """\
from sagemaker.pytorch import PyTorch
est = PyTorch(entry_point="train.py", instance_type="ml.g5.2xlarge", use_spot_instances=True,
              max_run=3600, max_wait=7200, checkpoint_s3_uri="s3://b/ckpt")
est.fit()
"""),
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_spot001_fires_for_every_capacity_source(source):
    path, text = SOURCES[source]
    assert codes({"train.py": NO_SAVE, path: text}, fields=AT, select="SPOT001") == [("SPOT001", "train.py", 16)]


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_on_demand_is_silent(source):
    path, text = SOURCES[source]
    text = (text.replace('provisioning_model = "SPOT"', 'provisioning_model = "STANDARD"').replace("preemptible        = true", "preemptible        = false")
            .replace('priority        = "Spot"', 'priority        = "Regular"').replace("capacity-type: spot", "capacity-type: on-demand")
            .replace("use_spot: true", "use_spot: false").replace("use_spot_instances=True", "use_spot_instances=False"))
    assert codes({"train.py": NO_SAVE, path: text}, fields=AT, select=SPOT) == []


def test_hf_trainer_saves_by_default_but_not_with_save_strategy_no():
    hf = """\
from transformers import Trainer, TrainingArguments
args = TrainingArguments(output_dir="/checkpoints/run", bf16=True{extra})
trainer = Trainer(model=model, args=args, train_dataset=ds)
trainer.train(resume_from_checkpoint=True)
"""
    sky = SOURCES["skypilot"]
    assert codes({"train.py": hf.format(extra=""), sky[0]: sky[1]}, fields=AT, select="SPOT001,SPOT002") == []
    assert codes({"train.py": hf.format(extra=', save_strategy="no"'), sky[0]: sky[1]}, fields=AT, select="SPOT001") == [("SPOT001", "train.py", 4)]


def test_unknown_instance_still_fires_without_a_price():
    path, text = SOURCES["karpenter-selector"]
    [f] = findings({"train.py": NO_SAVE, path: text.replace("g5.2xlarge", "g9.mega")}, select="SPOT001")
    assert f.cost_impact.usd_per_hour is None and "No price attached" in f.cost_impact.basis


# -- SPOT002 ---------------------------------------------------------------------------------
@pytest.mark.parametrize("resume", [
    "trainer.fit(model, ckpt_path='last')",
    "accelerator.load_state('/ckpt')",
    "engine.load_checkpoint('/ckpt')",
    "model.load_state_dict(torch.load('/ckpt/last.pt'))",
])
def test_resume_evidence_silences_spot002(resume):
    code = NO_SAVE + "        torch.save(model.state_dict(), '/ckpt/last.pt')\n" + resume + "\n"
    sky = SOURCES["skypilot"]
    assert codes({"train.py": code, sky[0]: sky[1]}, fields=AT, select="SPOT002") == []


def test_copying_weights_between_live_modules_is_not_a_resume():
    code = NO_SAVE + "        torch.save(model.state_dict(), '/ckpt/last.pt')\nema.load_state_dict(model.state_dict())\n"
    sky = SOURCES["skypilot"]
    assert codes({"train.py": code, sky[0]: sky[1]}, fields=AT, select="SPOT002") == [("SPOT002", "train.py", 19)]


# -- SPOT003 ---------------------------------------------------------------------------------
def est(**kw) -> dict:
    args = "".join(f"    {k}={v},\n" for k, v in kw.items())
    return {"launch.py": f"from sagemaker.pytorch import PyTorch\nest = PyTorch(\n    entry_point=\"train.py\",\n"
                         f"    instance_type=\"ml.p4d.24xlarge\",\n{args})\n"}


def test_max_wait_below_max_run():
    found = findings(est(use_spot_instances=True, max_run=86400, max_wait=3600, checkpoint_s3_uri='"s3://b/c"'), select="SPOT003")
    assert [(f.loc.path, f.loc.line) for f in found] == [("launch.py", 5)]
    assert "max_wait=3600 is below max_run=86400" in found[0].message


def test_both_settings_missing_gives_two_findings():
    found = findings(est(use_spot_instances=True), select="SPOT003")
    assert sorted(f.message.split(" without ")[1].split(":")[0] for f in found) == ["checkpoint_s3_uri", "max_wait"]


def test_severity_follows_what_is_at_stake():
    """A rejected submission is an error; lost work a warning; at most an hour of lost work advice."""
    found = {f.message.split(" without ")[1].split(":")[0]: f.severity.value for f in findings(est(use_spot_instances=True), select="SPOT003")}
    assert found == {"checkpoint_s3_uri": "warning", "max_wait": "error"}
    (short,) = findings(est(use_spot_instances=True, max_run=1800, max_wait=3600), select="SPOT003")
    assert short.severity.value == "info" and "max_run=1800 s" in short.message
    (day,) = findings(est(use_spot_instances=True, max_run=86400, max_wait=129600), select="SPOT003")
    assert day.severity.value == "warning"


def test_estimator_from_kwargs_is_undecidable():
    files = {"launch.py": "from sagemaker.pytorch import PyTorch\nest = PyTorch(entry_point='train.py', use_spot_instances=True, **cfg)\n"}
    assert findings(files, select="SPOT003") == []


def test_use_spot_from_a_variable_is_silent():
    assert findings(est(use_spot_instances="use_spot"), select="SPOT003") == []


# -- SPOT004 ---------------------------------------------------------------------------------
HF = """\
import os
from transformers import Trainer, TrainingArguments
args = TrainingArguments(output_dir={dir}, save_steps=500, bf16=True)
trainer = Trainer(model=model, args=args, train_dataset=ds)
trainer.train(resume_from_checkpoint=True)
"""


@pytest.mark.parametrize("d", ['"/tmp/run"', '"/dev/shm/ckpt"', '"/local_disk0/ckpt"', '"/mnt/resource/ckpt"'])
def test_ephemeral_paths_on_spot(d):
    path, text = SOURCES["karpenter-selector"]
    assert codes({"train.py": HF.format(dir=d), path: text}, fields=AT, select="SPOT004") == [("SPOT004", "train.py", 3)]


@pytest.mark.parametrize("d", ['os.environ["CKPT_DIR"]', '"/fsx/ckpt"', '"checkpoints"'])
def test_unknown_or_possibly_durable_paths_are_silent(d):
    path, text = SOURCES["karpenter-selector"]
    assert codes({"train.py": HF.format(dir=d), path: text}, fields=AT, select="SPOT004") == []


def test_ephemeral_path_on_demand_is_silent():
    path, text = SOURCES["karpenter-selector"]
    assert codes({"train.py": HF.format(dir='"/tmp/run"'), path: text.replace("spot", "on-demand")}, fields=AT, select="SPOT004") == []


def test_skypilot_copy_mount_is_not_written_back():
    sky = ("resources:\n  accelerators: A10G:1\n  use_spot: true\nfile_mounts:\n  /checkpoints: s3://my-bucket/ckpt\n"
           "run: python train.py\n")
    found = findings({"train.py": HF.format(dir='"/checkpoints/run"'), "sky.yaml": sky}, select="SPOT004")
    assert [(f.loc.path, f.loc.line) for f in found] == [("train.py", 3)]
    assert "COPY" in found[0].message


def test_one_durable_save_among_ephemeral_ones_is_enough():
    code = HF.format(dir='"/tmp/run"') + "trainer.save_model(\"/fsx/final\")\n"
    path, text = SOURCES["karpenter-selector"]
    assert codes({"train.py": code, path: text}, fields=AT, select="SPOT004") == []


def test_garbled_inputs_never_raise():
    files = {"train.py": NO_SAVE, "launch.py": "from sagemaker.pytorch import PyTorch\nest = PyTorch(use_spot_instances=True, max_wait='x', max_run=[1]\n",
             "sky.yaml": "resources: {use_spot: maybe}\nfile_mounts: [1]\n", "main.tf": 'resource "aws_instance" "x" {\n'}
    assert [f for f in findings(files, select=SPOT) if f.code.startswith("SPOT")] == []


SPOT_SKY = "resources:\n  accelerators: A100:8\n  use_spot: true\nrun: |\n  torchrun --nproc_per_node 8 %s\n"


BENCH = ("import time\nimport torch\n\n\ndef measure(model, opt, n=15):\n    times = []\n    for _ in range(n):\n"
         "        start = time.time()\n        loss = model(torch.randn(64, 3, 224, 224).cuda()).sum()\n        loss.backward()\n"
         "        opt.step()\n        torch.cuda.synchronize()\n        times.append(time.time() - start)\n    return times\n\n\n"
         "if __name__ == '__main__':\n    measure(Net().cuda(), opt)\n")


# -- SPOT001 ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name, body", [("ddp_sweep.py", BENCH), ("benchmark_resnet.py", BENCH.replace("time.time()", "0"))])
def test_a_benchmark_needs_no_checkpoint_and_may_measure_fp32(name, body):
    result = scan_files({name: body, "sky.yaml": SPOT_SKY % name})
    assert not [f for f in result.findings if f.code.startswith("SPOT")]
    (f,) = [f for f in result.findings if f.code == "AMP001"]
    assert f.severity.value == "info" and "a benchmark" in f.message
    untimed = BENCH.replace("time.time()", "0").replace("torch.cuda.synchronize()", "pass")
    reads_data = untimed.replace("import torch\n", "import torch\nfrom torch.utils.data import DataLoader\nloader = DataLoader(ds)\n")
    trains = scan_files({"train.py": reads_data,
                         "sky.yaml": SPOT_SKY % "train.py"})
    assert "SPOT001" in {f.code for f in trains.findings}
