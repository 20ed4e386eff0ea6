"""fairseq's Hydra entry point, fairseq-hydra-train (gpulint.read.packaged FAIRSEQ_HYDRA, gpulint.link.hydra
program_config): a config file of fairseq's groups chosen with --config-dir/--config-name, merged over fairseq's
dataclass defaults (fp32 unless common.fp16/bf16/amp; saves to checkpoint.save_dir and resumes from its
checkpoint_last.pt), with key=value overrides on the launch line. Cases that must fire and must not, end to end
through the scan; the fixture repository pk-fairseq-hydra through the CLI."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from helpers import AT, cli_scan, codes, only_workload, p4d_job
from gpulint.link.hydra import overrides, program_config
from gpulint.read.packaged import FAIRSEQ_HYDRA, fairseq_settings, trainer_of_launch, which
from gpulint.testing import scan_files

CONFIG = """\
# @package _group_

common:
  log_format: json
{common}
checkpoint:
  save_interval_updates: 25000
{checkpoint}
task:
  _name: audio_pretraining
  data: ???

dataset:
  max_tokens: 1400000

distributed_training:
  distributed_world_size: 16

criterion:
  _name: wav2vec

optimization:
  max_update: 400000
  lr: [0.0005]
"""

SBATCH = """\
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gres=gpu:{gpu}:8
srun fairseq-hydra-train task.data=/data/manifests {extra} \\
    --config-dir conf/pretrain --config-name base
"""


def _repo(common: str = "", checkpoint: str = "", extra: str = "", gpu: str = "a100") -> dict[str, str]:
    return {"conf/pretrain/base.yaml": CONFIG.format(common=common, checkpoint=checkpoint),
            "slurm/pretrain.sbatch": SBATCH.format(extra=extra, gpu=gpu)}


# ---------------------------------------------------------------- reading configs and launch lines

def test_a_fairseq_training_config_is_recognised_by_its_groups_and_a_decoding_config_is_not():
    import yaml
    assert which(yaml.safe_load(CONFIG.format(common="", checkpoint=""))) is FAIRSEQ_HYDRA
    decode = {"task": {"_name": "audio_finetuning"}, "decoding": {"type": "viterbi"}, "common_eval": {"path": "x"},
              "dataset": {"max_tokens": 1}}
    assert which(decode) is None
    # a task section alone (a Hydra app of another kind) is not fairseq's
    assert which({"task": {"_name": "x"}, "trainer": {"devices": 8}}) is None


def test_settings_are_read_from_the_groups_and_from_overrides():
    assert fairseq_settings({"common": {"fp16": True, "seed": 1}, "checkpoint": {"save_dir": "ck"}}) == \
        {"fp16": True, "save_dir": "ck"}
    given = overrides(["task.data=/d", "+common.bf16=true", "++checkpoint.no_save=true", "--config-name", "x",
                       "~common.fp16", "model.w2v_args.x=1"])
    assert given == {"task": {"data": "/d"}, "common": {"bf16": "true"}, "checkpoint": {"no_save": "true"}}
    assert fairseq_settings(given) == {"bf16": "true", "no_save": "true"}


@pytest.mark.parametrize("args,bases,want", [
    (["--config-dir", "conf/pretrain", "--config-name", "base"], ["slurm", ""], "conf/pretrain/base.yaml"),
    (["--config-dir=conf/pretrain", "--config-name=base.yaml"], ["slurm", ""], "conf/pretrain/base.yaml"),
    (["-cd", "../conf/pretrain", "-cn", "base"], ["slurm", ""], "conf/pretrain/base.yaml"),  # beside the launcher
    (["--config-dir", "/fsx/me/proj/conf/pretrain", "--config-name", "base"], [""], "conf/pretrain/base.yaml"),
    (["--config-dir", "$ROOT/conf/pretrain", "--config-name", "base"], [""], "conf/pretrain/base.yaml"),
    (["--config-dir", "`pwd`/conf/pretrain", "--config-name", "base"], [""], "conf/pretrain/base.yaml"),
    (["--config-dir", "$(pwd)/conf/pretrain", "--config-name", "base"], [""], "conf/pretrain/base.yaml"),
    # run from a folder nothing names (a README's cd): the one folder of the repository ending in it
    (["--config-dir", "pretrain", "--config-name", "base"], ["slurm", ""], "conf/pretrain/base.yaml"),
])
def test_the_config_is_found_where_the_launch_runs_or_by_its_folder_s_literal_tail(args, bases, want):
    path, why = program_config(args, bases, ["conf/pretrain/base.yaml", "conf/finetune/base.yaml"])
    assert path == want, why


@pytest.mark.parametrize("args,why", [
    (["--config-dir", "conf"], "no --config-name"),
    (["--config-name", "base"], "no --config-dir"),
    (["--config-dir", "conf/pretrain", "--config-name", "$CFG"], "decided at run time"),
    (["--config-dir", "$ROOT", "--config-name", "base"], "decided at run time"),
    (["--config-dir", "/fsx/base", "--config-name", "base"], "not a folder of the repository"),
    (["--config-dir", "/x/conf", "--config-name", "base"], "may be any of 2 folders"),
])
def test_a_config_that_is_not_decided_statically_is_none_with_the_reason(args, why):
    files = ["a/conf/base.yaml", "b/conf/base.yaml"]
    path, reason = program_config(args, [""], files)
    assert path is None and why in reason


def test_fairseq_hydra_train_is_its_own_trainer():
    assert trainer_of_launch({"tool": "program", "program": "fairseq-hydra-train"}) is FAIRSEQ_HYDRA


# ---------------------------------------------------------------- end to end

def test_a_config_without_a_precision_switch_is_amp001_at_its_common_section():
    found = [f for f in scan_files(_repo()).findings if f.code == "AMP001"]
    assert [(f.loc.path, f.loc.line) for f in found] == [("conf/pretrain/base.yaml", 3)]
    assert found[0].message.startswith("fairseq training runs in fp32")
    assert "sets common.fp16, common.bf16 or common.amp (default fp32)" in found[0].message
    assert found[0].guidance.startswith("Train in bf16: set `common.bf16: true` in the common: section of "
                                        "conf/pretrain/base.yaml (or pass common.bf16=true to fairseq-hydra-train)")


def test_on_v100_the_advice_is_fp16():
    [f] = [f for f in scan_files(_repo(gpu="v100")).findings if f.code == "AMP001"]
    assert "`common.fp16: true`" in f.guidance and "common.bf16" not in f.guidance


@pytest.mark.parametrize("common", ["  fp16: true\n", "  bf16: true\n", "  amp: true\n", "  memory_efficient_fp16: true\n"])
def test_a_switch_in_the_config_is_mixed_precision(common):
    files = _repo(common=common)
    # fp16 (amp is fp16 autocast) on the A100s the job asks for is AMP003's info, never AMP001
    assert codes(files, "AMP") == ([] if "bf16" in common else ["AMP003"])
    assert only_workload(scan_files(files))["resolved"]["precision"]["mixed"] is True


def test_a_switch_written_false_is_fp32_at_that_key():
    assert codes(_repo(common="  fp16: false\n"), "AMP001", fields=AT) == [("AMP001", "conf/pretrain/base.yaml", 5)]


def test_an_interpolated_switch_is_undecided():
    files = _repo(common="  fp16: ${oc.env:USE_FP16}\n")
    assert not codes(files, "AMP")
    assert only_workload(scan_files(files))["resolved"]["precision"]["mixed"] is None


def test_a_cpu_run_is_not_told_to_use_mixed_precision():
    assert not codes(_repo(common="  cpu: true\n"), "AMP")


def test_a_cpu_run_by_hand_is_not_on_a_gpu():
    """common.cpu: fairseq trains on the CPU whatever the machine has: the trainer's GPU default does not apply."""
    files = {"conf/pretrain/base.yaml": CONFIG.format(common="  cpu: true\n", checkpoint=""),
             "run.sh": "fairseq-hydra-train task.data=/d --config-dir conf/pretrain --config-name base\n"}
    result = scan_files(files)
    assert not result.findings
    assert any(f["kind"] == "cpu_only" for f in only_workload(result)["facts"])


def test_a_mandatory_save_dir_is_no_literal_folder():
    wl = only_workload(scan_files(_repo(common="  bf16: true\n", checkpoint="  save_dir: ???\n")))
    assert [f["value"]["dir"] for f in wl["facts"] if f["kind"] == "checkpoint.save"] == [None]


@pytest.mark.parametrize("extra", ["common.fp16=true", "+common.bf16=True", "++common.amp=true"])
def test_an_override_that_turns_a_switch_on_is_mixed_precision(extra):
    files = _repo(extra=extra)
    assert codes(files, "AMP") == ([] if "bf16" in extra else ["AMP003"])  # fp16 on the A100s the job asks for
    wl = only_workload(scan_files(files))
    assert wl["resolved"]["precision"]["mixed"] is True
    assert any(r.startswith("overrides: slurm/pretrain.sbatch:4 sets common.") for r in wl["links"])


def test_an_override_that_turns_the_config_s_switch_off_is_amp001_at_the_launch_line():
    found = [f for f in scan_files(_repo(common="  fp16: true\n", extra="common.fp16=false")).findings
             if f.code == "AMP001"]
    assert [(f.loc.path, f.loc.line) for f in found] == [("slurm/pretrain.sbatch", 4)]
    assert "pass `common.bf16=true` to fairseq-hydra-train (slurm/pretrain.sbatch:4)" in found[0].guidance


def test_words_that_may_add_overrides_leave_a_default_precision_undecided():
    files = _repo(extra='"$@"')
    assert not codes(files, "AMP")
    wl = only_workload(scan_files(files))
    assert wl["resolved"]["precision"]["mixed"] is None
    assert any("may expand to more overrides" in u for u in wl["unknown"])


def test_an_unresolved_config_is_said_to_be_unknown_and_nothing_fires():
    files = {"slurm/pretrain.sbatch": SBATCH.format(extra="", gpu="a100").replace("conf/pretrain", "$CONF_DIR")}
    assert not codes(files, "AMP")
    wl = only_workload(scan_files(files))
    assert any(u.startswith("config: fairseq at slurm/pretrain.sbatch:4: --config-dir $CONF_DIR is decided at run time")
               for u in wl["unknown"])


def test_a_yaml_of_another_kind_chosen_by_the_launch_is_not_read_as_fairseq_s():
    files = _repo()
    files["conf/pretrain/base.yaml"] = "trainer:\n  precision: 32\nmodel:\n  lr: 0.1\n"
    assert not codes(files, "AMP")
    wl = only_workload(scan_files(files))
    assert any("is not a fairseq config" in u for u in wl["unknown"])


SKY = """\
resources:
  accelerators: A100:8
  use_spot: true
file_mounts:
  /ckpt:
    name: w2v-checkpoints
    store: s3
    mode: MOUNT
run: |
  fairseq-hydra-train task.data=/data --config-dir conf/pretrain --config-name base {extra}
"""


def test_on_spot_the_default_checkpoints_are_saves_and_resumes():
    files = {"conf/pretrain/base.yaml": CONFIG.format(common="  bf16: true\n", checkpoint="  save_dir: /ckpt/w2v\n"),
             "sky/pretrain.yaml": SKY.format(extra="")}
    assert not codes(files, "SPOT")


def test_on_spot_no_save_on_the_launch_line_is_spot001():
    """At the config the trainer runs as (where its training is), the message naming the spot capacity."""
    files = {"conf/pretrain/base.yaml": CONFIG.format(common="  bf16: true\n", checkpoint="  save_dir: /ckpt/w2v\n"),
             "sky/pretrain.yaml": SKY.format(extra="checkpoint.no_save=true")}
    assert codes(files, "SPOT00", fields=AT) == [("SPOT001", "conf/pretrain/base.yaml", 3)]


# ---------------------------------------------------------------- the fixture repository, through the CLI

def test_fairseq_hydra_fixture_repository_end_to_end():
    status, rows, report = cli_scan(FIXTURES / "pk-fairseq-hydra")
    assert status == 1  # the AMP001 warnings fail the scan at the default threshold
    # fp16 on the A100s the fine-tuning jobs ask for: AMP003 at the config's fp16 key
    assert rows == [("AMP001", "conf/pretrain/base.yaml", 4), ("AMP001", "scripts/finetune_ablation.sbatch", 8),
                    ("AMP003", "conf/finetune/base_10h.yaml", 4)]
    names = sorted(w["name"] for w in report["workloads"])
    assert names == ["scripts/finetune.sbatch#slurm (fairseq-hydra-train)",
                     "scripts/finetune_ablation.sbatch#slurm (fairseq-hydra-train)",
                     "scripts/pretrain.sbatch#slurm (fairseq-hydra-train)",
                     "scripts/pretrain_large.sh:4 (fairseq-hydra-train)"]
    by_name = {w["name"]: w for w in report["workloads"]}
    assert by_name["scripts/finetune.sbatch#slurm (fairseq-hydra-train)"]["configs"] == ["conf/finetune/base_10h.yaml"]


KUBE = p4d_job("w2v", ["fairseq-hydra-train", "task.data=/data", "--config-dir", "/workspace/conf/pretrain",
                           "--config-name", "base"])


def test_in_a_container_command_the_image_path_is_the_checkout_s_folder_and_amp001_alone_fires():
    """AMP005's fix (a torch.backends switch in the code) is not the repository's to make: fairseq has no TF32 key."""
    files = {"conf/pretrain/base.yaml": CONFIG.format(common="", checkpoint=""), "k8s/job.yaml": KUBE}
    found = [f for f in scan_files(files).findings if f.code.startswith("AMP")]
    assert [(f.code, f.loc.path, f.loc.line) for f in found] == [("AMP001", "conf/pretrain/base.yaml", 3)]
    assert found[0].message.startswith("fairseq training runs in fp32 on p4d.24xlarge")


SETUP = """\
from setuptools import setup

setup(
    name="fairseq",
    entry_points={
        "console_scripts": [
            "fairseq-hydra-train = fairseq_cli.hydra_train:cli_main",
            "fairseq-train = fairseq_cli.train:cli_main",
        ],
    },
)
"""
HYDRA_TRAIN = "from fairseq_cli.train import main\n\n\ndef cli_main():\n    main()\n"


def test_a_vendored_copy_of_fairseq_runs_as_fairseq_documents_it():
    """fairseq/ vendored in a subfolder with its setup.py: its console script is fairseq's own, read by its config."""
    files = {**_repo(), "fairseq/setup.py": SETUP, "fairseq/fairseq_cli/hydra_train.py": HYDRA_TRAIN,
             "fairseq/fairseq_cli/train.py": "def main():\n    pass\n"}
    assert codes(files, "AMP001", fields=AT) == [("AMP001", "conf/pretrain/base.yaml", 3)]
    wl = only_workload(scan_files(files))
    assert wl["name"] == "slurm/pretrain.sbatch#slurm (fairseq-hydra-train)"
    assert any("runs the copy of fairseq the repository vendors (fairseq/setup.py declares it)" in r for r in wl["links"])


def test_fairseq_s_own_repository_keeps_its_code():
    """setup.py at the root: the repository is fairseq (or a fork of it), and the command runs its own module."""
    files = {**_repo(), "setup.py": SETUP, "fairseq_cli/hydra_train.py": HYDRA_TRAIN,
             "fairseq_cli/train.py": "def main():\n    pass\n"}
    assert not codes(files, "AMP")
    assert not any("fairseq_hydra" in str(w["facts"]) for w in scan_files(files).workloads)


def test_the_module_form_under_torchrun_is_the_same_trainer_and_eight_processes_size_the_spend():
    files = {"conf/pretrain/base.yaml": CONFIG.format(common="", checkpoint=""),
             "run.sh": "torchrun --nproc_per_node 8 -m fairseq_cli.hydra_train task.data=/d "
                       "--config-dir conf/pretrain --config-name base\n"}
    assert codes(files, "AMP", fields=("code", "severity", "path", "line")) == [
        ("AMP001", "warning", "conf/pretrain/base.yaml", 3)]
    assert only_workload(scan_files(files))["configs"] == ["conf/pretrain/base.yaml"]


RUN_BY_HAND = "fairseq-hydra-train task.data=/d --config-dir conf/pretrain --config-name base {extra}\n"


@pytest.mark.parametrize("extra,severity", [("", "warning"), ("distributed_training.distributed_world_size=1", "info")])
def test_a_world_size_of_several_gpus_sizes_the_spend_and_an_override_to_one_does_not(extra, severity):
    """CONFIG asks for 16 GPUs (distributed_world_size: 16): a multi-GPU job whatever machine runs it, so fp32 is a
    warning even with no compute target; the line's override to one GPU leaves one GPU of a kind nothing names."""
    files = {"conf/pretrain/base.yaml": CONFIG.format(common="", checkpoint=""), "run.sh": RUN_BY_HAND.format(extra=extra)}
    assert codes(files, "AMP", fields=("code", "severity", "path", "line")) == [
        ("AMP001", severity, "conf/pretrain/base.yaml", 3)]


def test_fairseq_train_s_world_size_flag_sizes_the_spend_too():
    files = {"run.sh": "fairseq-train data-bin/wmt --arch transformer --distributed-world-size 4\n"}
    assert codes(files, "AMP", fields=("code", "severity")) == [("AMP001", "warning")]
