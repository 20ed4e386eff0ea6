"""Config-driven trainers: precision, devices and checkpoints that live in config files (Hydra, LightningCLI,
NeMo), linked to the workload that composes them, with the launch line's overrides winning over the YAML.

Fixture repositories (fixtures/cfg-*) end to end, then inline repositories for the near misses: an interpolated
value, a config that is not in the repository, launchers that choose different configs, a launch whose ``$@``
may hold an override."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from gpulint.testing import scan_files, scan_tree
from helpers import AT, codes

TRAIN_HYDRA = """\
import hydra
import lightning.pytorch as pl

from model import Net


@hydra.main(version_base=None, config_path="conf", config_name="train")
def main(cfg):
    trainer = pl.Trainer(**cfg.trainer)
    trainer.fit(Net(cfg.model))


if __name__ == "__main__":
    main()
"""
MODEL = """\
import torch
import lightning.pytorch as pl


class Net(pl.LightningModule):
    def __init__(self, cfg):
        super().__init__()
        self.layer = torch.nn.Linear(cfg.width, 10)

    def training_step(self, batch, idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.layer(x), y)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)
"""
CONF_FP32 = "model:\n  width: 512\ntrainer:\n  accelerator: gpu\n  devices: 8\n  precision: 32\n"


def hydra_repo(conf: str = CONF_FP32, **extra: str) -> dict[str, str]:
    return {"train.py": TRAIN_HYDRA, "model.py": MODEL, "conf/train.yaml": conf, **extra}


def workload(files: dict[str, str] | Path, entry: str = "train.py") -> dict:
    result = scan_tree(files)[0] if isinstance(files, Path) else scan_files(files)
    return next(w for w in result.workloads if w["entrypoint"] == entry)


def amp(files) -> list:
    return codes(files, "AMP", fields=AT)


# -- fixtures -----------------------------------------------------------------------------------
def test_hydra_fixture_composes_the_defaults_list_and_fires_at_the_group_file():
    root = FIXTURES / "cfg-hydra-lightning"
    assert amp(root) == [("AMP001", "configs/trainer/gpu.yaml", 7)]
    wl = workload(root, "src/train.py")
    assert wl["configs"] == ["configs/train.yaml", "configs/model/deeplab.yaml", "configs/trainer/gpu.yaml",
                             "configs/trainer/default.yaml"]  # never trainer/cpu.yaml, an option nobody picks
    assert wl["resolved"]["precision"]["mixed"] is False
    several = [f for f in wl["facts"] if f["kind"] == "uses_gpu" and f["path"] == "configs/trainer/gpu.yaml"]
    assert several and several[0]["value"].get("several") is True
    assert "spend_unsized" not in wl["resolved"]  # 4 GPUs with DDP: a multi-GPU job, sized


def test_override_fixture_links_the_chosen_config_and_the_launch_line_wins():
    root = FIXTURES / "cfg-hydra-override"
    assert amp(root) == []
    wl = workload(root)
    assert wl["configs"] == ["conf/big.yaml"]  # --config-name big, not the decorator's base
    assert wl["resolved"]["precision"]["mixed"] is True
    assert wl["resolved"]["precision"]["dtypes"] == ["bf16"]


def test_nemo_fixture():
    root = FIXTURES / "cfg-nemo-asr"
    assert amp(root) == [("AMP001", "conf/finetune.yaml", 13)]
    ctc = workload(root, "train_ctc.py")
    assert ctc["configs"] == ["conf/conformer_ctc_bpe.yaml"]
    assert ctc["resolved"]["precision"]["mixed"] is None
    assert any("${oc.env:ASR_PRECISION,32}" in u and u.startswith("precision:") for u in ctc["unknown"])
    saves, resumes = ctc["resolved"]["checkpoint"]["saves"], ctc["resolved"]["checkpoint"]["resumes"]
    assert any(s.startswith("nemo_exp_manager at conf/conformer_ctc_bpe.yaml") for s in saves)
    assert any(r.startswith("nemo_exp_manager at conf/conformer_ctc_bpe.yaml") for r in resumes)
    fine = workload(root, "finetune.py")
    assert fine["configs"] == ["conf/finetune.yaml"]
    assert fine["resolved"]["checkpoint"]["resumes"] == []  # resume_if_exists: false


# -- Hydra: must fire ---------------------------------------------------------------------------
def test_a_trainer_section_without_precision_is_lightnings_fp32_default_for_a_trainer_built_from_it():
    conf = "trainer:\n  accelerator: gpu\n  devices: 2\n  max_epochs: 3\nmodel:\n  width: 8\n"
    assert [c for c, _, _ in amp(hydra_repo(conf))] == ["AMP001"]


def test_an_override_to_fp32_on_the_launch_line_is_reported_there():
    conf = CONF_FP32.replace("precision: 32", "precision: bf16-mixed")
    files = hydra_repo(conf, **{"run.sh": "python train.py trainer.precision=32\n"})
    assert amp(files) == [("AMP001", "run.sh", 1)]


# -- Hydra: must stay silent --------------------------------------------------------------------
@pytest.mark.parametrize("launch", [
    "python train.py trainer.precision=bf16-mixed\n",
    "python train.py ++trainer.precision=16-mixed\n",
])
def test_a_launch_line_override_wins_over_the_yaml(launch):
    files = hydra_repo(**{"scripts/run.sh": launch})
    assert amp(files) == []
    assert workload(files)["resolved"]["precision"]["mixed"] is True


@pytest.mark.parametrize("value", ["${oc.env:PRECISION}", "${oc.env:PRECISION,32}", "${precision}"])
def test_an_interpolated_precision_is_unknown(value):
    files = hydra_repo(CONF_FP32.replace("precision: 32", f"precision: '{value}'"))
    assert amp(files) == []
    wl = workload(files)
    assert wl["resolved"]["precision"]["mixed"] is None
    assert any(u.startswith("precision: trainer.precision is ${") for u in wl["unknown"])


def test_a_config_that_is_not_in_the_repository_is_unknown():
    files = {"train.py": TRAIN_HYDRA.replace('config_path="conf"', 'config_path="experimental/conf"'), "model.py": MODEL,
             "conf/train.yaml": CONF_FP32}
    assert amp(files) == []
    wl = workload(files)
    assert wl["configs"] == []
    assert any(u.startswith("config: the Hydra config experimental/conf/train.yaml is not a file") for u in wl["unknown"])


def test_launchers_that_choose_different_configs_link_none():
    files = hydra_repo(**{"conf/big.yaml": CONF_FP32, "a.sh": "python train.py --config-name big\n",
                          "b.sh": "python train.py -cn train\n"})
    assert amp(files) == []
    wl = workload(files)
    assert wl["configs"] == []
    assert any("compose different Hydra configs" in u for u in wl["unknown"])


def test_a_config_dir_on_the_launch_line_is_searched_too():
    """``--config-dir experiments`` adds a folder to Hydra's search path: a name only it holds is composed from it."""
    files = hydra_repo(CONF_FP32.replace("precision: 32", "precision: bf16-mixed"),
                       **{"experiments/big.yaml": CONF_FP32, "run.sh": "python train.py --config-dir experiments -cn big\n"})
    assert amp(files) == [("AMP001", "experiments/big.yaml", CONF_FP32.splitlines().index("  precision: 32") + 1)]
    assert workload(files)["configs"] == ["experiments/big.yaml"]


@pytest.mark.parametrize("launch,why", [
    ("python train.py --config-dir experiments\n", "which both conf/train.yaml and experiments/train.yaml hold"),
    ("python train.py --config-dir $EXP_DIR\n", "adds a Hydra config folder read at run time"),
])
def test_a_config_dir_that_leaves_the_choice_to_hydra_or_the_run_links_none(launch, why):
    files = hydra_repo(**{"experiments/train.yaml": CONF_FP32, "run.sh": launch})
    assert amp(files) == []
    wl = workload(files)
    assert wl["configs"] == []
    assert any(why in u for u in wl["unknown"])


def test_a_launch_whose_arguments_may_hold_an_override_leaves_it_undecided():
    files = hydra_repo(**{"run.sh": 'python train.py "$@"\n'})
    assert amp(files) == []
    assert workload(files)["resolved"]["precision"]["mixed"] is None


def test_configs_composed_together_that_disagree_leave_it_undecided():
    conf = "defaults:\n  - trainer: fast\n  - _self_\nmodel:\n  width: 8\ntrainer:\n  accelerator: gpu\n  precision: 32\n"
    files = hydra_repo(conf, **{"conf/trainer/fast.yaml": "precision: bf16-mixed\ndevices: 4\n"})
    assert amp(files) == []
    wl = workload(files)
    assert wl["configs"] == ["conf/train.yaml", "conf/trainer/fast.yaml"]
    assert wl["resolved"]["precision"]["mixed"] is None


def test_a_group_option_the_launch_line_picks_replaces_the_default():
    conf = "defaults:\n  - trainer: debug\nmodel:\n  width: 8\n"
    files = hydra_repo(conf, **{"conf/trainer/debug.yaml": "accelerator: gpu\nprecision: 32\n",
                                "conf/trainer/cluster.yaml": "accelerator: gpu\ndevices: 8\nprecision: bf16-mixed\n",
                                "run.sh": "python train.py trainer=cluster\n"})
    assert amp(files) == []
    assert workload(files)["configs"] == ["conf/train.yaml", "conf/trainer/cluster.yaml"]


def test_a_trainer_section_without_precision_says_nothing_for_a_trainer_that_sets_its_own():
    code = TRAIN_HYDRA.replace("pl.Trainer(**cfg.trainer)", 'pl.Trainer(precision="bf16-mixed", max_epochs=cfg.trainer.max_epochs)')
    files = {"train.py": code, "model.py": MODEL, "conf/train.yaml": "trainer:\n  accelerator: gpu\n  max_epochs: 3\n"}
    assert amp(files) == []
    assert workload(files)["resolved"]["precision"]["mixed"] is True


def test_a_trainer_rebuilt_to_test_after_fit_is_not_the_training_precision():
    """NeMo's examples fit with the config's Trainer, then build a one-GPU Trainer for the test set: the finding
    names the config (what decides the training run), never the test Trainer."""
    code = TRAIN_HYDRA.replace(
        "    trainer.fit(Net(cfg.model))\n",
        "    model = Net(cfg.model)\n    trainer.fit(model)\n    if cfg.get('test'):\n"
        "        trainer = pl.Trainer(devices=1, accelerator=cfg.trainer.accelerator)\n        trainer.test(model)\n")
    conf = "trainer:\n  accelerator: gpu\n  devices: 2\nmodel:\n  width: 8\n"
    found = codes(hydra_repo(conf, **{"train.py": code}), "AMP", fields=("code", "path", "line", "message"))
    assert [(c, p) for c, p, _, _ in found] == [("AMP001", "train.py")]
    assert found[0][2] != 13 and "train.py:13" not in found[0][3]  # line 13 builds the test Trainer
    conf = "trainer:\n  accelerator: gpu\n  devices: 2\n  precision: bf16-mixed\nmodel:\n  width: 8\n"
    assert amp(hydra_repo(conf, **{"train.py": code})) == []


def test_a_trainer_that_fits_after_testing_still_sets_the_precision():
    code = TRAIN_HYDRA.replace("pl.Trainer(**cfg.trainer)", "pl.Trainer(accelerator='gpu', devices=2)").replace(
        "    trainer.fit(Net(cfg.model))\n", "    model = Net(cfg.model)\n    trainer.validate(model)\n    trainer.fit(model)\n")
    assert [c for c, _, _ in amp(hydra_repo("model:\n  width: 8\n", **{"train.py": code}))] == ["AMP001"]


def test_a_cpu_trainer_config_is_no_gpu_run():
    files = hydra_repo(CONF_FP32.replace("accelerator: gpu", "accelerator: cpu"))
    assert amp(files) == []


def test_a_structured_config_without_a_path_links_nothing():
    code = TRAIN_HYDRA.replace('config_path="conf", config_name="train"', 'config_name="TrainConfig"')
    files = {"train.py": code, "model.py": MODEL, "conf/train.yaml": CONF_FP32}
    assert workload(files)["configs"] == []


# -- LightningCLI -------------------------------------------------------------------------------
CLI_MAIN = """\
import torch
import lightning.pytorch as pl
from lightning.pytorch.cli import LightningCLI


class Model(pl.LightningModule):
    def __init__(self, width: int = 256):
        super().__init__()
        self.net = torch.nn.Linear(width, 2)

    def training_step(self, batch, idx):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)


if __name__ == "__main__":
    LightningCLI(Model)
"""
FIT_YAML = "trainer:\n  accelerator: gpu\n  devices: 2\n  precision: 32\nmodel:\n  width: 512\n"


def test_lightning_cli_config_fires_at_its_precision():
    files = {"main.py": CLI_MAIN, "configs/fit.yaml": FIT_YAML, "fit.sh": "python main.py fit --config configs/fit.yaml\n"}
    assert amp(files) == [("AMP001", "configs/fit.yaml", 4)]


@pytest.mark.parametrize("flag", ["--trainer.precision bf16-mixed", "--trainer.precision=16-mixed"])
def test_lightning_cli_flag_wins_over_its_config(flag):
    files = {"main.py": CLI_MAIN, "configs/fit.yaml": FIT_YAML,
             "fit.sh": f"python main.py fit --config configs/fit.yaml {flag}\n"}
    assert amp(files) == []


def test_lightning_cli_without_a_config_is_unknown():
    files = {"main.py": CLI_MAIN, "fit.sh": "python main.py fit --model.width 512\n"}
    assert amp(files) == []
    assert workload(files, "main.py")["resolved"]["precision"]["mixed"] is None


# -- torchtitan job TOML (gpulint/read/trainer_toml.py) ------------------------------------------
TITAN_TRAIN = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def main():
    job_config = load_job_config()  # the --job.config_file TOML
    dist.init_process_group("nccl")
    model = DDP(torch.nn.Linear(4096, 4096).cuda())
    opt = torch.optim.AdamW(model.parameters())
    for x in loader():
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()
"""
#: the same step under an autocast whose dtype the job config names: the code alone leaves the precision undecided
TITAN_AUTOCAST = TITAN_TRAIN.replace(
    "    for x in loader():\n        loss = model(x.cuda()).sum()\n",
    "    dtype = getattr(torch, job_config.training.mixed_precision_param)\n    for x in loader():\n"
    "        with torch.autocast(\"cuda\", dtype=dtype):\n            loss = model(x.cuda()).sum()\n")
TITAN_TOML = """\
[job]
dump_folder = "./outputs"

[training]
local_batch_size = 8
mixed_precision_param = "{dtype}"
steps = 10000

[checkpoint]
enable_checkpoint = true
folder = "checkpoint"
interval = 500
"""
P4D = 'resource "aws_instance" "t" {\n  ami           = "ami-1"\n  instance_type = "p4d.24xlarge"\n}\n'


def titan_repo(toml: str, flag: str = "--job.config_file configs/llama.toml", train: str = TITAN_TRAIN) -> dict[str, str]:
    return {"train.py": train, "run_train.sh": f"#!/bin/bash\ntorchrun --nproc_per_node=8 train.py {flag}\n",
            "configs/llama.toml": toml, "infra/main.tf": P4D}


def test_a_torchtitan_job_toml_in_fp32_fires_at_its_dtype_with_torchtitans_remedy():
    files = titan_repo(TITAN_TOML.format(dtype="float32"))
    found = codes(files, "AMP001", fields=("code", "path", "line", "guidance"))
    assert [(c, p, line) for c, p, line, _ in found] == [("AMP001", "configs/llama.toml", 6)]
    assert 'mixed_precision_param = "bfloat16"' in found[0][3]
    wl = workload(files)
    assert wl["configs"] == ["configs/llama.toml"]
    assert wl["resolved"]["checkpoint"]["saves"] and wl["resolved"]["checkpoint"]["resumes"]  # enable_checkpoint, load_step -1


def test_a_torchtitan_job_toml_in_bf16_decides_the_run():
    assert amp(titan_repo(TITAN_TOML.format(dtype="bfloat16"))) == []
    assert workload(titan_repo(TITAN_TOML.format(dtype="bfloat16")))["resolved"]["precision"]["mixed"] is True


def test_a_dtype_the_code_reads_at_run_time_stays_undecided():
    """The autocast's dtype comes from the job config at run time: gpulint does not tie the expression to the TOML key,
    so the run stays undecided (silent), whatever the TOML or its absence says."""
    no_key = TITAN_TOML.replace('mixed_precision_param = "{dtype}"\n', "")
    assert amp(titan_repo(no_key, train=TITAN_AUTOCAST)) == []
    assert amp(titan_repo(TITAN_TOML.format(dtype="float32"), train=TITAN_AUTOCAST)) == []


def test_a_toml_that_is_no_torchtitan_job_or_is_not_passed_links_nothing():
    other = "[tool.black]\nline-length = 100\n[training]\nmixed_precision_param = \"bfloat16\"\n"  # no [job]
    assert [(c, p) for c, p, _ in codes(titan_repo(other), "AMP001", fields=AT)] == [("AMP001", "train.py")]  # the code's fp32
    unlinked = workload(titan_repo(TITAN_TOML.format(dtype="bfloat16"), flag=""))
    assert unlinked["configs"] == [] and unlinked["resolved"]["precision"]["mixed"] is False
