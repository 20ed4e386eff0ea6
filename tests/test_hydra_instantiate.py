"""A Lightning Trainer Hydra builds from the config: ``trainer = hydra.utils.instantiate(cfg.trainer)`` then
``trainer.fit(model, ...)`` (the lightning-hydra-template layout). The fit is training; the composed config's
trainer section says its precision and accelerator; with no config linked nothing is said. End to end."""
from __future__ import annotations

import pytest

from helpers import AT, codes, only_workload
from gpulint.testing import scan_files

_TRAIN = """\
import hydra
{imp}

@hydra.main(version_base=None, config_path={path}, config_name="train")
def main(cfg):
    model = hydra.utils.instantiate(cfg.model)
    datamodule = hydra.utils.instantiate(cfg.data)
    trainer = {call}(cfg.{node}, callbacks=[], logger=None)
    trainer.fit(model=model, datamodule=datamodule, ckpt_path=cfg.get("ckpt_path"))


if __name__ == "__main__":
    main()
"""
_CONFIG = "defaults:\n  - _self_\n  - trainer: gpu\nseed: 12345\n"
_TRAINER = "_target_: lightning.pytorch.trainer.Trainer\naccelerator: {acc}\ndevices: 4\nmax_epochs: 100\n{precision}"
_JOB = "#!/bin/bash\n#SBATCH --gres=gpu:a100:4\n#SBATCH --time=48:00:00\nsrun python src/train.py\n"


def _repo(precision="precision: 32\n", acc="gpu", node="trainer", path='"../configs"',
          call="hydra.utils.instantiate", imp=""):
    return {"src/train.py": _TRAIN.format(path=path, node=node, call=call, imp=imp),
            "configs/train.yaml": _CONFIG,
            "configs/trainer/gpu.yaml": _TRAINER.format(acc=acc, precision=precision),
            "scripts/train.sbatch": _JOB}


def test_fp32_in_the_trainer_config_is_amp001_at_that_key():
    assert codes(_repo(), "AMP001", fields=AT) == [("AMP001", "configs/trainer/gpu.yaml", 5)]
    wl = only_workload(scan_files(_repo()))
    assert {f["value"]["via"] for f in wl["facts"] if f["kind"] == "trains"} == {"lightning"}


def test_the_imported_name_is_the_same_builder():
    files = _repo(call="instantiate", imp="from hydra.utils import instantiate")
    assert codes(files, "AMP001", fields=AT) == [("AMP001", "configs/trainer/gpu.yaml", 5)]


@pytest.mark.parametrize("precision", ["precision: bf16-mixed\n", "precision: 16-mixed\n"])
def test_mixed_precision_in_the_trainer_config_is_silent(precision):
    assert codes(_repo(precision=precision), "AMP001") == []


def test_no_precision_key_is_lightning_s_fp32_default():
    assert codes(_repo(precision=""), "AMP001") == ["AMP001"]


def test_a_cpu_trainer_config_is_not_told_to_use_mixed_precision():
    assert codes(_repo(acc="cpu"), "AMP") == []


def test_a_node_other_than_the_trainer_is_no_lightning_fit():
    wl = only_workload(scan_files(_repo(node="model_fitter")))
    assert not [f for f in wl["facts"] if f["kind"] == "trains" and f["value"]["via"] == "lightning"]


def test_with_no_config_linked_the_precision_is_undecided():
    files = _repo(path="CONFIG_DIR")  # config_path not a literal: no file composes
    assert codes(files, "AMP") == []
    assert only_workload(scan_files(files))["resolved"]["precision"]["mixed"] is None
