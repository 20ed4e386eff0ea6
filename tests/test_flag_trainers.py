"""Packaged trainers configured by their launch line's flags (gpulint.read.packaged.flag_facts): fairseq-train always,
LLaMA-Factory when no config file is named. The trainer's code is not in the repository; the line is what configures
it, read by the trainer's documented defaults (fairseq: fp32 unless --fp16/--bf16/--amp, saves every epoch to
--save-dir and resumes from its checkpoint_last.pt). Cases that must fire and must not, end to end through the scan;
the fixture repository pk-fairseq-slurm through the CLI."""
from __future__ import annotations

import pytest

from conftest import FIXTURES
from helpers import AT, cli_scan, codes, only_workload, p4d_job
from gpulint.read.packaged import FAIRSEQ, LLAMA_FACTORY, flag_config, flag_facts, trainer_of_launch
from gpulint.core.model import Location
from gpulint.testing import scan_files

SBATCH = """\
#!/bin/bash
#SBATCH --job-name=wmt
#SBATCH --nodes=1
#SBATCH --gres=gpu:{gpu}:8
#SBATCH --time=48:00:00

fairseq-train data-bin/wmt16_en_de \\
    --arch transformer_vaswani_wmt_en_de_big --share-all-embeddings \\
    --optimizer adam --lr 0.0005 --max-tokens 4096 {extra}\\
    --save-dir checkpoints/wmt16
"""


def _sbatch(extra: str = "", gpu: str = "a100") -> dict[str, str]:
    return {"slurm/train_wmt.sbatch": SBATCH.format(extra=extra, gpu=gpu)}


# ---------------------------------------------------------------- reading the flags

def test_flag_config_spells_flags_as_config_keys():
    got = flag_config(["data-bin/x", "--arch", "t", "--fp16", "--save-dir", "ck", "--lr=5e-4", "--max-tokens", "4096",
                       "--bf16", "True"])
    assert got == {"arch": "t", "fp16": True, "save_dir": "ck", "lr": "5e-4", "max_tokens": 4096, "bf16": "True"}


@pytest.mark.parametrize("flag,dtype", [("--fp16", "fp16"), ("--bf16", "bf16"), ("--memory-efficient-fp16", "fp16"),
                                        ("--memory-efficient-bf16", "bf16"), ("--amp", "fp16")])
def test_fairseq_precision_switches(flag, dtype):
    at = Location("run.sh", 3, 1)
    [p] = [f for f in flag_facts(["data", flag], FAIRSEQ, at, complete=True) if f.kind == "precision"]
    assert p.value["enabled"] is True and p.value["dtype"] == dtype and p.loc == at


def test_fairseq_without_a_switch_is_fp32_by_default_and_unknown_when_the_line_is_open():
    at = Location("run.sh", 3, 1)
    [p] = [f for f in flag_facts(["data", "--arch", "lstm"], FAIRSEQ, at, complete=True) if f.kind == "precision"]
    assert p.value["dtype"] == "fp32" and p.value["enabled"] is False and p.value["default"] is True
    [p] = [f for f in flag_facts(["data", "--arch", "lstm"], FAIRSEQ, at, complete=False) if f.kind == "precision"]
    assert p.value["enabled"] is None and "expand to more flags" in p.value["undecided"]


def test_fairseq_saves_and_resumes_by_default_and_no_save_turns_both_off():
    at = Location("run.sh", 3, 1)
    kinds = {f.kind: f.value for f in flag_facts(["data"], FAIRSEQ, at, complete=True)}
    assert kinds["checkpoint.save"]["dir"] == "checkpoints" and kinds["checkpoint.save"]["default"] is True
    assert kinds["checkpoint.resume"]["value"] == "checkpoint_last.pt"
    kinds = {f.kind for f in flag_facts(["data", "--no-save"], FAIRSEQ, at, complete=True)}
    assert "checkpoint.save" not in kinds and "checkpoint.resume" not in kinds


def test_fairseq_train_is_its_trainer_and_other_fairseq_commands_are_not():
    assert trainer_of_launch({"tool": "program", "program": "fairseq-train"}) is FAIRSEQ
    for program in ("fairseq-generate", "fairseq-preprocess", "fairseq-interactive", "mt-train"):
        assert trainer_of_launch({"tool": "program", "program": program}) is None


# ---------------------------------------------------------------- fairseq end to end

def test_fairseq_in_fp32_on_a100_is_amp001_at_the_launch_line_with_bf16_guidance():
    files = _sbatch()
    found = [f for f in scan_files(files).findings if f.code == "AMP001"]
    assert [(f.loc.path, f.loc.line) for f in found] == [("slurm/train_wmt.sbatch", 7)]
    assert found[0].message.startswith("fairseq training runs in fp32")
    assert "none of --fp16, --bf16, --amp" in found[0].message
    # the GPU model is named (gres a100), so the advice is bf16 alone, as a fairseq flag
    assert found[0].guidance.startswith("Train in bf16: pass `--bf16` to fairseq-train (slurm/train_wmt.sbatch:7)")


def test_fairseq_on_v100_is_told_fp16():
    [f] = [f for f in scan_files(_sbatch(gpu="v100")).findings if f.code == "AMP001"]
    assert "pass `--fp16` to fairseq-train" in f.guidance and "--bf16" not in f.guidance


@pytest.mark.parametrize("extra", ["--fp16 ", "--bf16 ", "--amp ", "--memory-efficient-fp16 "])
def test_fairseq_with_a_precision_switch_is_no_amp001(extra):
    files = _sbatch(extra)
    assert not codes(files, "AMP001")
    wl = only_workload(scan_files(files))
    assert wl["resolved"]["precision"]["mixed"] is True


def test_fairseq_with_words_that_may_expand_to_flags_is_undecided():
    files = _sbatch("$EXTRA_ARGS ")
    assert not codes(files, "AMP")
    wl = only_workload(scan_files(files))
    assert wl["resolved"]["precision"]["mixed"] is None
    assert any(u.startswith("flags: slurm/train_wmt.sbatch:7 passes words that may expand") for u in wl["unknown"])


def test_a_value_with_an_expansion_in_it_is_a_path_not_more_flags():
    """`data/en-$tgt` or `${data}/bin` is a folder, never a word that adds flags: the line is still read whole."""
    files = {"slurm/train_wmt.sbatch": SBATCH.format(extra="", gpu="a100").replace("data-bin/wmt16_en_de", "${data}/bin")}
    assert codes(files, "AMP001") == ["AMP001"]


def test_fairseq_workload_names_its_trainer_and_its_checkpoints():
    wl = only_workload(scan_files(_sbatch("--fp16 ")))
    assert wl["name"] == "slurm/train_wmt.sbatch#slurm (fairseq-train)" and wl["role"] == "training"
    assert wl["code_files"] == ["slurm/train_wmt.sbatch"]
    assert any(r.startswith("code: fairseq's trainer (a package, not a file of the repository) runs as the flags of "
                            "slurm/train_wmt.sbatch:7 configure it") for r in wl["links"])
    assert not any(u.startswith("code:") for u in wl["unknown"])
    saves = [f for f in wl["facts"] if f["kind"] == "checkpoint.save"]
    assert [f["value"]["dir"] for f in saves] == ["checkpoints/wmt16"]  # the trainer's reading, not the flag twice


SKY = """\
resources:
  cloud: aws
  accelerators: A100:8
  use_spot: true
file_mounts:
  /ckpt:
    name: mt-checkpoints
    store: s3
    mode: MOUNT
run: |
  fairseq-train data-bin/wmt --arch transformer --bf16 {extra}
"""


def test_fairseq_on_spot_checkpoints_by_default_so_no_spot_finding():
    assert not codes({"sky/task.yaml": SKY.format(extra="--save-dir /ckpt/wmt")}, "SPOT00")


def test_fairseq_no_save_on_spot_is_spot001():
    assert codes({"sky/task.yaml": SKY.format(extra="--no-save")}, "SPOT00", fields=AT) == [("SPOT001", "sky/task.yaml", 11)]


def test_fairseq_default_save_dir_is_on_the_spot_node_s_own_disk():
    """No --save-dir: fairseq writes ./checkpoints, on the node that is reclaimed (SPOT004 reads the trainer's default)."""
    assert codes({"sky/task.yaml": SKY.format(extra="")}, "SPOT00") == ["SPOT004"]


KUBE = p4d_job("wmt", ["fairseq-train", "/data/wmt", "--arch", "transformer", "--save-dir", "/ckpt"])


def test_fairseq_in_a_container_command_is_read_too():
    found = [f for f in scan_files({"k8s/job.yaml": KUBE}).findings if f.code.startswith("AMP")]
    # AMP001 alone: AMP005's fix (torch.backends in the code) is not the repository's to make, whatever file the line is in
    assert [(f.code, f.loc.path, f.loc.line) for f in found] == [("AMP001", "k8s/job.yaml", 14)]
    assert found[0].message.startswith("fairseq training runs in fp32 on p4d.24xlarge")


def test_a_local_script_is_a_workload_without_compute_and_amp001_is_advice():
    """`CUDA_VISIBLE_DEVICES=0 fairseq-train ...` run by hand: no compute target, so the GPU is the trainer's word
    (it takes the GPU there is) and nothing sizes the spend: info, never a warning."""
    files = {"scripts/train.sh": "CUDA_VISIBLE_DEVICES=0 fairseq-train data-bin/iwslt --arch lstm --save-dir ck\n"}
    result = scan_files(files)
    wl = only_workload(result)
    assert wl["name"] == "scripts/train.sh:1 (fairseq-train)" and wl["compute"] is None
    assert [(f.code, f.severity.value) for f in result.findings] == [("AMP001", "info")]


def test_usage_text_is_no_training_and_an_image_command_is():
    files = {"scripts/check.sh": "fairseq-train --help\nllamafactory-cli train -h\n",
             "Dockerfile": 'FROM pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime\nRUN pip install fairseq && fairseq-train --help\n'
                           'CMD ["fairseq-train", "/data", "--arch", "lstm", "--fp16"]\n'}
    assert [w["name"] for w in scan_files(files).workloads] == ["Dockerfile:3 (fairseq-train)"]


def test_a_script_run_by_a_batch_job_is_one_workload_on_that_job():
    files = {"scripts/train.sh": "fairseq-train data-bin/iwslt --arch lstm --save-dir ck\n",
             "slurm/job.sbatch": "#!/bin/bash\n#SBATCH --gres=gpu:a100:4\nsrun bash scripts/train.sh\n"}
    wl = only_workload(scan_files(files))
    assert wl["name"] == "slurm/job.sbatch#slurm (fairseq-train)"


SETUP = """\
from setuptools import setup, find_packages
setup(name="fairseq", packages=find_packages(),
      entry_points={"console_scripts": ["fairseq-train = fairseq_cli.train:cli_main"]})
"""


def test_a_copy_of_fairseq_runs_its_own_train_module_not_the_flags():
    """In a copy of fairseq, fairseq-train is the repository's own console script: its code is read, as before."""
    files = {"setup.py": SETUP, "fairseq_cli/__init__.py": "",
             "fairseq_cli/train.py": "import torch\n\ndef cli_main():\n    model = torch.nn.Linear(8, 8).cuda()\n",
             **_sbatch()}
    wl = only_workload(scan_files(files))
    assert wl["entrypoint"] == "fairseq_cli/train.py"
    assert not any(f["kind"] == "config.packaged_trainer" for f in wl["facts"])


# ---------------------------------------------------------------- LLaMA-Factory with flags

LMF_JOB = """\
#!/bin/bash
#SBATCH --nodes=1
#SBATCH --gres=gpu:a100:8
llamafactory-cli train \\
    --stage sft --do_train True \\
    --model_name_or_path meta-llama/Meta-Llama-3-8B \\
    --finetuning_type {ft} \\
    --template llama3 --dataset alpaca_en_demo --cutoff_len 2048 \\
    --output_dir saves/llama3-sft \\
    {precision}--num_train_epochs 3
"""


def _lmf(precision: str = "", ft: str = "lora") -> dict[str, str]:
    return {"slurm/sft.sbatch": LMF_JOB.format(precision=precision, ft=ft)}


def test_llama_factory_flags_are_its_config():
    wl = only_workload(scan_files(_lmf("--bf16 True ")))
    assert wl["resolved"]["precision"]["mixed"] is True and wl["resolved"]["precision"]["dtypes"] == ["bf16"]
    assert wl["resolved"]["model"]["name"] == "meta-llama/Meta-Llama-3-8B"
    assert any(f["kind"] == "peft" for f in wl["facts"])
    assert any(r.startswith("code: LLaMA-Factory's trainer (a package, not a file of the repository) runs as the flags")
               for r in wl["links"])
    assert not any(u.startswith(("code:", "config:")) for u in wl["unknown"])


def test_llama_factory_flags_without_bf16_or_fp16_infer_the_dtype_so_no_amp001():
    assert not codes(_lmf(), "AMP")
    assert only_workload(scan_files(_lmf()))["resolved"]["precision"]["mixed"] is None


def test_llama_factory_fp16_flag_on_an_a100_instance_is_amp003_at_the_launch_line():
    job = p4d_job("sft", ["llamafactory-cli", "train", "--stage", "sft", "--model_name_or_path", "Qwen/Qwen2.5-7B",
                          "--finetuning_type", "lora", "--output_dir", "/ckpt/qwen", "--fp16", "True"])
    assert codes({"k8s/job.yaml": job}, "AMP", fields=AT) == [("AMP003", "k8s/job.yaml", 14)]
    assert not codes({"k8s/job.yaml": job.replace('"--fp16", "True"', '"--bf16", "True"')}, "AMP")


def test_llama_factory_config_is_only_its_first_argument():
    """`llamafactory-cli train --deepspeed ds.yaml ...`: a flag's value is no config file; the flags configure it."""
    files = {"slurm/sft.sbatch": LMF_JOB.format(precision="--deepspeed configs/ds.yaml ", ft="lora")}
    wl = only_workload(scan_files(files))
    assert any(r.startswith("code: LLaMA-Factory's trainer") and "the flags of" in r for r in wl["links"])


def test_llama_factory_with_no_arguments_says_its_config_is_unknown():
    files = {"slurm/sft.sbatch": "#!/bin/bash\n#SBATCH --gres=gpu:a100:8\nllamafactory-cli train\n"}
    wl = only_workload(scan_files(files))
    assert "config: LLaMA-Factory runs with no config file named on its launch line: what it sets (precision, " \
        "checkpoints) is unknown" in wl["unknown"]


# ---------------------------------------------------------------- the fixture repository, through the CLI

def test_fairseq_fixture_repository_end_to_end():
    status, rows, report = cli_scan(FIXTURES / "pk-fairseq-slurm")
    assert status == 1  # the AMP001 warning fails the scan at the default threshold
    assert rows == [("AMP001", "scripts/train_big.sbatch", 9)]
    names = sorted(w["name"] for w in report["workloads"])
    assert names == ["scripts/train_base.sbatch#slurm (fairseq-train)", "scripts/train_big.sbatch#slurm (fairseq-train)"]
