"""Ray Train (gpulint/read/python/frameworks/ray.py): ScalingConfig's workers and GPUs, FailureConfig, checkpoints
reported and read back; a KubeRay RayJob running the script gives its workload the worker group's compute."""
from __future__ import annotations

import textwrap

from conftest import FIXTURES

from gpulint.read.parsers import parse_python
from gpulint.read.python.facts import python_facts
from helpers import cli_findings, codes

FIXTURE = FIXTURES / "ray-train-spot-checkpoints"
TRAIN = (FIXTURE / "train.py").read_text()
FILES = {p: (FIXTURE / p).read_text() for p in ("train.py", "data.py", "k8s/rayjob.yaml")}


def values(code: str, kind: str) -> list:
    return [f.value for f in python_facts(parse_python(textwrap.dedent(code), "train.py")) if f.kind == kind]


def scaling(args: str) -> str:
    return f"import torch\nfrom ray.train import ScalingConfig\nfrom ray.train.torch import TorchTrainer\nScalingConfig({args})\n"


def test_scaling_config_workers_and_gpus():
    assert values(scaling("num_workers=8, use_gpu=True"), "ray.scaling") == [{"num_workers": 8, "use_gpu": True, "gpus_per_worker": None}]
    assert values(scaling("num_workers=8, use_gpu=True"), "uses_gpu") == [{"via": "ray.train", "several": True}]
    per = values(scaling('num_workers=2, resources_per_worker={"GPU": 4, "CPU": 16}'), "ray.scaling")
    assert per == [{"num_workers": 2, "use_gpu": True, "gpus_per_worker": 4}]
    assert values(scaling("num_workers=1, use_gpu=True"), "uses_gpu") == [{"via": "ray.train"}]


def test_a_cpu_scaling_config_or_one_decided_at_run_time_uses_no_gpu():
    assert values(scaling("num_workers=4"), "ray.scaling") == [{"num_workers": 4, "use_gpu": False, "gpus_per_worker": 0}]
    assert not values(scaling("num_workers=4"), "uses_gpu")
    run_time = values(scaling("num_workers=args.workers, use_gpu=torch.cuda.is_available()"), "ray.scaling")
    assert run_time == [{"num_workers": None, "use_gpu": None, "gpus_per_worker": None}]
    # (the CUDA query itself is a probe of the device pass, not Ray's)
    assert [v["via"] for v in values(scaling("num_workers=args.workers, use_gpu=torch.cuda.is_available()"), "uses_gpu")] == \
        ["torch.cuda.is_available"]


def test_failure_config_and_ray_train_ddp():
    assert values(TRAIN, "ray.failure") == [{"max_failures": -1}]
    assert values(TRAIN, "ddp") == [{"via": "ray.train"}]


def test_report_with_a_checkpoint_and_checkpoint_config_save_and_get_checkpoint_resumes():
    saves = values(TRAIN, "checkpoint.save")
    assert {"via": "ray.train.report", "dir": None} in saves
    assert {"via": "ray.CheckpointConfig", "dir": "s3://vision-runs/resnet50"} in saves
    assert {"via": "ray.train.get_checkpoint"} in values(TRAIN, "checkpoint.resume")


def test_report_without_a_checkpoint_saves_nothing():
    code = "import ray.train\nfrom ray import train\ntrain.report({'loss': 1.0})\nray.train.report({'loss': 1.0}, checkpoint=None)\n"
    assert not values(code, "checkpoint.save")


def test_the_rayjob_workload_gets_the_worker_group_and_the_scaling_facts():
    from gpulint.testing import scan_files

    result = scan_files(FILES)
    (wl,) = result.workloads
    assert wl["entrypoint"] == "train.py"
    text = repr(wl)
    assert "RayJob/resnet-finetune/a10g-spot" in text and "'capacity': 'spot'" in text.replace('"', "'")
    assert "ray.scaling" in text and "ray.failure" in text


def _without_checkpoints(text: str) -> str:
    text = text.replace(", checkpoint=Checkpoint.from_directory(d))", ")")
    text = text.replace("torch.save(", "print(").replace(", checkpoint_config=CheckpointConfig(num_to_keep=2)", "")
    return text.replace("resumed = ray.train.get_checkpoint()", "resumed = None")


def test_spot001_stays_silent_for_a_ray_train_job_that_reports_checkpoints():
    assert not cli_findings(FIXTURE, "SPOT001,SPOT002,SPOT003,SPOT004")


def test_spot001_fires_when_the_ray_train_job_never_saves():
    files = {**FILES, "train.py": _without_checkpoints(TRAIN)}
    assert codes(files, "SPOT") == ["SPOT001"]
    # the CheckpointConfig alone (its trainer writes checkpoints at its frequency) is a save again
    files["train.py"] = files["train.py"].replace("failure_config=", "checkpoint_config=CheckpointConfig(checkpoint_frequency=1), failure_config=")
    assert "SPOT001" not in codes(files, "SPOT")


RAY_LIGHTNING = """\
import pytorch_lightning as pl
from ray.train.lightning import RayDDPStrategy, RayLightningEnvironment, prepare_trainer


def train_func(config):
    trainer = pl.Trainer(max_epochs=3, accelerator="auto", strategy=RayDDPStrategy(),
                         plugins=[RayLightningEnvironment()])
    trainer = prepare_trainer(trainer)
    trainer.fit(Model(), train_dataloaders=loader)
"""


def test_a_lightning_trainer_handed_through_prepare_trainer_still_trains():
    """Ray Train's prepare_trainer returns the Trainer it configures: its fit is Lightning training."""
    assert values(RAY_LIGHTNING, "trains") and values(RAY_LIGHTNING, "trains")[0]["via"] == "lightning"
    other = RAY_LIGHTNING.replace("trainer = prepare_trainer(trainer)", "trainer = make_trainer(trainer)").replace(
        ", prepare_trainer", "").replace("import pytorch_lightning as pl", "import pytorch_lightning as pl\nfrom tools import make_trainer")
    assert not values(other, "trains")  # any other call's result is of unknown type


RAY_AIR_HF = """\
from transformers import AutoModelForSeq2SeqLM, Trainer, TrainingArguments
from ray.train.huggingface import HuggingFaceTrainer
from ray.air.config import ScalingConfig

use_gpu = {use_gpu}


def trainer_init_per_worker(train_dataset, eval_dataset=None, **config):
    model = AutoModelForSeq2SeqLM.from_pretrained("google/flan-t5-base")
    args = TrainingArguments("out", num_train_epochs=3, per_device_train_batch_size=8)
    return Trainer(model=model, args=args, train_dataset=train_dataset)


trainer = HuggingFaceTrainer(
    trainer_init_per_worker=trainer_init_per_worker,
    scaling_config=ScalingConfig(num_workers=4, use_gpu=use_gpu),
    datasets={{"train": train_ds}},
)
result = trainer.fit()
"""


def test_ray_airs_huggingface_trainer_trains_the_trainer_its_init_function_returns():
    """Ray AIR's HuggingFaceTrainer calls the returned Trainer's train() itself: its fit() is HF Trainer training,
    judged like one (fp32 TrainingArguments on Ray's GPU workers)."""
    code = RAY_AIR_HF.format(use_gpu="True")
    assert [v["via"] for v in values(code, "trains")] == ["hf_trainer"]
    assert codes({"train.py": code}, "AMP001") == ["AMP001"]
    unfit = code.replace("result = trainer.fit()\n", "")
    assert not values(unfit, "trains")  # built but never fitted


def test_a_ray_scaling_config_without_gpus_runs_its_workers_on_cpus():
    code = RAY_AIR_HF.format(use_gpu="False")
    assert values(code, "cpu_only") == [{"via": "ray.train ScalingConfig without GPUs", "declared": True}]
    assert codes({"train.py": code}, "AMP") == []
