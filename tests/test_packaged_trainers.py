"""Packaged trainers (gpulint.read.packaged): axolotl, LLaMA-Factory and torchtune launched from the repository's
infrastructure with a config of the repository are workloads whose code is that config; their documented defaults
decide what an absent key means. The fixture repositories pk-* are checked end to end through the CLI."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from helpers import AT, cli_scan, codes, only_workload
from gpulint.read.packaged import AXOLOTL, LLAMA_FACTORY, TORCHTUNE, which
from gpulint.read.yamlnodes import load_documents
from gpulint.testing import scan_files

AXOLOTL_CFG = """\
base_model: meta-llama/Meta-Llama-3-8B
adapter: lora
lora_r: 16
datasets:
  - path: data/train.jsonl
    type: alpaca
sequence_len: 2048
micro_batch_size: 2
num_epochs: 1
{precision}output_dir: /checkpoints/run
"""

JOB = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: ft
spec:
  template:
    spec:
      restartPolicy: OnFailure
      nodeSelector:
        node.kubernetes.io/instance-type: g6e.xlarge
      containers:
        - name: train
          image: axolotlai/axolotl:main-latest
          command: {command}
          resources:
            limits:
              nvidia.com/gpu: 1
"""


def _job(command: str) -> str:
    return JOB.format(command=command)


@pytest.mark.parametrize("command", [
    '["axolotl", "train", "configs/ft.yml"]',
    '["accelerate", "launch", "-m", "axolotl.cli.train", "configs/ft.yml"]',
    '["python", "-m", "axolotl.cli.train", "configs/ft.yml"]',
    '["bash", "-c", "axolotl train configs/ft.yml --wandb-project ft"]',
])
def test_an_axolotl_job_reads_its_config_as_its_code(command):
    files = {"configs/ft.yml": AXOLOTL_CFG.format(precision="bf16: false\nfp16: false\n"), "k8s/job.yaml": _job(command)}
    result = scan_files(files)
    wl = only_workload(result)
    assert wl["configs"] == ["configs/ft.yml"] and wl.get("code_known", True)
    assert any(r.startswith("code: axolotl's trainer") for r in wl["links"])
    assert not any(u.startswith("code:") for u in wl["unknown"])
    assert codes(files, "AMP001", fields=AT) == [("AMP001", "configs/ft.yml", 10)]  # at bf16: false


def test_axolotl_bf16_auto_is_decided_at_run_time_not_fp32():
    """axolotl's bf16 defaults to auto (bf16 where the GPU has it): an absent key or auto is no fp32 evidence."""
    for precision in ("", "bf16: auto\n"):
        files = {"configs/ft.yml": AXOLOTL_CFG.format(precision=precision),
                 "k8s/job.yaml": _job('["axolotl", "train", "configs/ft.yml"]')}
        assert not codes(files, "AMP"), precision
        wl = only_workload(scan_files(files))
        assert wl["resolved"]["precision"]["mixed"] is None


def test_an_axolotl_8bit_load_is_not_fp32_training():
    """axolotl loads the model in fp16 for load_in_8bit whatever bf16 says (its torch_dtype): no fp32 claim."""
    cfg = AXOLOTL_CFG.format(precision="bf16: false\nload_in_8bit: true\n")
    files = {"configs/ft.yml": cfg, "k8s/job.yaml": _job('["axolotl", "train", "configs/ft.yml"]')}
    assert not codes(files, "AMP001")


def test_a_launch_line_that_overrides_precision_leaves_it_unknown():
    files = {"configs/ft.yml": AXOLOTL_CFG.format(precision="bf16: false\n"),
             "k8s/job.yaml": _job('["axolotl", "train", "configs/ft.yml", "--bf16=True"]')}
    assert not codes(files, "AMP001")
    wl = only_workload(scan_files(files))
    assert any(u.startswith("precision: ") and "--bf16=True" in u for u in wl["unknown"])


def test_a_config_outside_the_repository_leaves_the_code_unknown():
    files = {"k8s/job.yaml": _job('["axolotl", "train", "/workspace/configs/ft.yml"]')}
    wl = only_workload(scan_files(files))
    assert "config: axolotl runs with its config /workspace/configs/ft.yml, which is not an axolotl config of the " \
        "repository: what it sets (precision, checkpoints) is unknown" in wl["unknown"]
    assert any(u.startswith("code: module axolotl.cli.train is not a file of the repository") for u in wl["unknown"])
    assert not codes(files, "AMP")


def test_a_config_named_at_run_time_says_so():
    files = {"k8s/job.yaml": _job('["axolotl", "train", "$(CONFIG).yaml"]')}
    wl = only_workload(scan_files(files))
    assert any(u.startswith("config: axolotl runs with its config $(CONFIG).yaml, a name decided at run time")
               for u in wl["unknown"]), wl["unknown"]


def test_other_subcommands_of_a_trainer_cli_are_not_training():
    files = {"configs/ft.yml": AXOLOTL_CFG.format(precision="bf16: false\n"),
             "k8s/job.yaml": _job('["axolotl", "preprocess", "configs/ft.yml"]')}
    assert scan_files(files).workloads == []


LMF_CFG = """\
model_name_or_path: Qwen/Qwen2.5-7B
stage: sft
do_train: true
finetuning_type: lora
dataset: alpaca_en_demo
template: qwen
cutoff_len: 2048
output_dir: saves/qwen-lora
per_device_train_batch_size: 2
learning_rate: 1.0e-4
{precision}"""

SBATCH = """\
#!/bin/bash
#SBATCH --nodes=1
#SBATCH --gres=gpu:a100:8
llamafactory-cli train examples/sft.yaml
"""


@pytest.mark.parametrize("precision", ["", "bf16: false\nfp16: false\n"])
def test_llama_factory_without_bf16_or_fp16_infers_its_dtype_so_no_fp32_finding(precision):
    """LLaMA-Factory picks bf16 > fp16 > fp32 itself (infer_optim_dtype) when neither flag is set: never fp32 by the
    file, although its arguments are HF TrainingArguments (whose reader would have said fp32)."""
    files = {"examples/sft.yaml": LMF_CFG.format(precision=precision), "slurm/sft.sbatch": SBATCH}
    assert not codes(files, "AMP001")
    wl = only_workload(scan_files(files))
    assert wl["resolved"]["precision"]["mixed"] is None and wl["configs"] == ["examples/sft.yaml"]


def test_llama_factory_fp16_is_mixed_fp16_and_names_the_model():
    """(AMP003 on it, once the machine is known, is the pk-llamafactory-slurm fixture's.)"""
    files = {"examples/sft.yaml": LMF_CFG.format(precision="fp16: true\n"), "slurm/sft.sbatch": SBATCH}
    wl = only_workload(scan_files(files))
    assert wl["resolved"]["precision"]["mixed"] is True and wl["resolved"]["precision"]["dtypes"] == ["fp16"]
    assert wl["resolved"]["model"]["name"] == "Qwen/Qwen2.5-7B"
    assert any(f["kind"] == "peft" for f in wl["facts"])  # finetuning_type: lora


TUNE_CFG = """\
model:
  _component_: torchtune.models.llama3_1.{builder}
checkpointer:
  _component_: torchtune.training.FullModelHFCheckpointer
  checkpoint_dir: /ckpt/base
  output_dir: /ckpt/out
resume_from_checkpoint: {resume}
batch_size: 2
{dtype}"""

SKY = """\
resources:
  cloud: aws
  accelerators: A100:8
  use_spot: {spot}
file_mounts:
  /ckpt:
    name: ckpt-bucket
    store: s3
    mode: MOUNT
run: |
  tune run --nproc_per_node 8 {recipe} --config configs/tune.yaml{extra}
"""


def _tune(builder="llama3_1_8b", resume="false", dtype="dtype: fp32\n", spot="false", recipe="full_finetune_distributed",
          extra=""):
    return {"configs/tune.yaml": TUNE_CFG.format(builder=builder, resume=resume, dtype=dtype),
            "sky/task.yaml": SKY.format(spot=spot, recipe=recipe, extra=extra)}


def test_torchtune_dtype_fp32_is_amp001_with_a_dollar_figure_from_its_model():
    files = _tune()
    found = [f for f in scan_files(files).findings if f.code == "AMP001"]
    assert [(f.loc.path, f.loc.line) for f in found] == [("configs/tune.yaml", 9)]
    assert found[0].message.startswith("torchtune training runs in fp32 on p4d.24xlarge")
    assert "set `dtype: bf16` in the torchtune config" in found[0].guidance
    assert found[0].cost_impact.usd_per_hour and "Llama-3.1-8B" in found[0].cost_impact.basis  # the builder names the model


def test_a_torchtune_distributed_recipe_shards_its_state_so_an_8b_full_fine_tune_fits():
    assert not codes(_tune(), "MEM001")
    # the single-device recipe does not shard: fp32 Adam states of 8B do not fit one 40 GB A100
    single = _tune(recipe="full_finetune_single_device")
    wl = only_workload(scan_files(single))
    assert not any(f["kind"] == "sharding" for f in wl["facts"])


@pytest.mark.parametrize("resume, fires", [("false", True), ("true", False)])
def test_torchtune_on_spot_needs_resume_from_checkpoint(resume, fires):
    files = _tune(resume=resume, dtype="dtype: bf16\n", spot="true")
    assert (codes(files, "SPOT", fields=AT) == [("SPOT002", "configs/tune.yaml", 3)]) is fires
    assert not codes(files, "SPOT001")  # the checkpointer saves every epoch


def test_a_torchtune_dtype_override_on_the_launch_line_decides():
    files = _tune(extra=" dtype=bf16")
    assert not codes(files, "AMP001")


# Shaped after repositories that carry a copy of torchtune (its recipes/ and recipes/configs/ folders) and launch
# its recipes from sbatch scripts by their built-in names, asking for GPUs per task.
COPY_SBATCH = """\
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gpus-per-task=8
srun tune run --nnodes 2 --nproc_per_node 8 {recipe} --config {config}
"""
RECIPE = "import torch\n\n\ndef recipe_main(cfg):\n    model = torch.nn.Linear(8, 8).cuda()\n    return model\n"


def _torchtune_copy(recipe="full_finetune_distributed", config="llama3_1/8B_full", configs=True):
    files = {f"recipes/{recipe}.py": RECIPE, "torchtune/__init__.py": "",
             "slurm/full_finetune_multinode.slurm": COPY_SBATCH.format(recipe=recipe, config=config)}
    if configs:
        files["recipes/configs/llama3_1/8B_full.yaml"] = TUNE_CFG.format(builder="llama3_1_8b", resume="false",
                                                                         dtype="dtype: fp32\n")
    return files


@pytest.mark.parametrize("recipe", ["eleuther_eval", "generate", "quantize"])
def test_torchtune_recipes_that_do_not_train_are_no_training_workloads(recipe):
    files = _tune(recipe=recipe)
    assert not [w for w in scan_files(files).workloads if w["role"] == "training"]
    assert not codes(files, "AMP001")


def test_a_launched_copy_of_llama_factory_trains_by_its_command(tmp_path):
    # a LLaMA-Factory copy (src/llamafactory) whose tuner trains through a Trainer subclass gpulint does not follow:
    # `llamafactory-cli train` is its training command, so the workload's role is training, by its launcher
    files = {"src/llamafactory/__init__.py": "", "src/llamafactory/train/__init__.py": "",
             "src/llamafactory/train/tuner.py": "import torch\n\n\ndef run_exp(args=None):\n"
                                                 "    with torch.no_grad():\n        torch.zeros(1).cuda()\n",
             "pyproject.toml": '[project]\nname = "llamafactory"\n[project.scripts]\n'
                               'llamafactory-cli = "llamafactory.train.tuner:run_exp"\n',
             "jobs/sft.sh": "#!/bin/bash\n#SBATCH --gpus=1\nllamafactory-cli train $1\n"}
    wl = next((w for w in scan_files(files).workloads if w["name"].startswith("src/llamafactory/train/tuner.py")), None)
    assert wl is not None and wl["role"] == "training", wl


def test_a_copy_of_llama_factory_vendored_in_a_subfolder_runs_as_llama_factory_documents_it():
    """llama_factory/src/llamafactory/... (installed with pip install -e llama_factory): llamafactory-cli runs that
    trainer, so its config is read as an installed LLaMA-Factory's; before, the launch linked to nothing at all."""
    files = {"llama_factory/src/llamafactory/__init__.py": "", "llama_factory/src/llamafactory/train/__init__.py": "",
             "llama_factory/src/llamafactory/train/tuner.py": "def run_exp(args=None):\n    pass\n",
             "llama_factory/pyproject.toml": '[project]\nname = "llamafactory"\n[project.scripts]\n'
                                             'llamafactory-cli = "llamafactory.cli:main"\n',
             "exp/sft.yaml": LMF_CFG.format(precision="fp16: true\n"),
             "exp/run.sh": "#!/bin/bash\n#SBATCH --gres=gpu:a100:8\nllamafactory-cli train exp/sft.yaml\n"}
    wl = only_workload(scan_files(files))
    assert wl["configs"] == ["exp/sft.yaml"] and wl["resolved"]["precision"]["dtypes"] == ["fp16"]
    assert any("runs the copy of LLaMA-Factory the repository vendors (llama_factory/src/llamafactory/train/tuner.py)"
               in r for r in wl["links"])


def test_a_torchtune_copy_links_its_launch_to_the_built_in_config_it_names():
    result = scan_files(_torchtune_copy())
    [wl] = [w for w in result.workloads if w["name"].startswith("slurm/")]
    assert wl["code_files"] == ["recipes/configs/llama3_1/8B_full.yaml"]
    assert (wl["compute"]["gpus_per_node"], wl["compute"]["nodes"]) == (8, 2)
    # the recipe file of the copy is not torchtune.recipes.full_finetune_distributed's path: still a packaged launch
    assert [(f.code, f.loc.path) for f in result.findings if f.code == "AMP001"] == \
        [("AMP001", "recipes/configs/llama3_1/8B_full.yaml")]


def test_a_built_in_torchtune_config_name_outside_a_copy_stays_unknown():
    result = scan_files(_torchtune_copy(configs=False))
    [wl] = [w for w in result.workloads if w["name"].startswith("slurm/")]
    assert wl["code_files"] == []
    assert any("llama3_1/8B_full, which is not a torchtune config of the repository" in u for u in wl["unknown"])
    assert not [f for f in result.findings if f.code.startswith(("AMP", "MEM", "SPOT"))]


@pytest.mark.parametrize("text, trainer", [
    (AXOLOTL_CFG.format(precision=""), AXOLOTL),
    (LMF_CFG.format(precision=""), LLAMA_FACTORY),
    (TUNE_CFG.format(builder="lora_llama3_1_8b", resume="false", dtype=""), TORCHTUNE),
    # HF TrainingArguments YAML, a Lightning config, a DeepSpeed-less HF file: none of them
    ("output_dir: out\nper_device_train_batch_size: 8\nbf16: true\n", None),
    ("trainer:\n  precision: bf16-mixed\nmodel:\n  lr: 0.1\n", None),
    ("base_model: resnet50\nepochs: 90\n", None),  # one axolotl-looking key is not an axolotl config
])
def test_configs_are_recognised_by_their_keys(text, trainer):
    doc = load_documents(text)[0]
    assert which(doc.data) is trainer


# -- the fixture repositories, through the CLI ---------------------------------------------------------------
PK_EXPECTED = {
    # fp32 QLoRA (bf16: false) on an L40S, TF32 off by its key; the LoRA twin with axolotl's bf16: auto is silent
    "pk-axolotl-k8s": [("AMP001", "configs/llama3-8b-qlora.yml", 27), ("AMP005", "configs/llama3-8b-qlora.yml", 29)],
    # two nodes of p4d on a queue without EFA (placed by --partition), fp16 where bf16 runs as fast; the bf16 full
    # fine-tune with ZeRO-3 is otherwise right
    "pk-llamafactory-slurm": [("AMP003", "examples/qwen2.5-7b-lora-sft.yaml", 24), ("NET001", "cluster/config.yaml", 21)],
    # fp32 full fine-tune on spot that never resumes; the LoRA twin resumes in bf16
    "pk-torchtune-skypilot": [("AMP001", "configs/llama3_1_8b_full.yaml", 43), ("AMP005", "configs/llama3_1_8b_full.yaml", 2),
                              ("SPOT002", "configs/llama3_1_8b_full.yaml", 20)],
}


@pytest.mark.parametrize("name", sorted(PK_EXPECTED))
def test_packaged_trainer_fixtures_are_exact(name):
    rc, found, _ = cli_scan(FIXTURES / name)
    assert found == sorted(PK_EXPECTED[name])
    assert rc == 1


def test_the_axolotl_fixture_fix_turns_bf16_on(tmp_path):
    import shutil

    from conftest import run_cli

    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "pk-axolotl-k8s", repo)
    proc = run_cli("scan", ".", "--fix", "--unsafe-fixes", "--select", "AMP001", "--exit-zero", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    text = (repo / "configs" / "llama3-8b-qlora.yml").read_text(encoding="utf-8")
    assert "\nbf16: true\n" in text and "\nfp16: false\n" in text
    assert (repo / "configs" / "llama3-8b-lora.yml").read_text(encoding="utf-8") == \
        (Path(FIXTURES) / "pk-axolotl-k8s" / "configs" / "llama3-8b-lora.yml").read_text(encoding="utf-8")


def test_a_packaged_config_run_by_hand_is_a_gpu_workload_and_fp32_is_advice():
    """`axolotl train cfg.yml` in a script with no compute target: the trainer takes the GPU there is (its word, placed
    with its config), so fp32 is AMP001 at the config, at info (nothing sizes the spend)."""
    files = {"cfg/lora.yml": "base_model: NousResearch/Llama-2-7b-hf\nadapter: lora\nlora_r: 16\nmicro_batch_size: 2\n"
                             "sequence_len: 4096\nbf16: false\nfp16: false\noutput_dir: ./out\n",
             "run.sh": "axolotl train cfg/lora.yml\n"}
    found = scan_files(files).findings
    assert [(f.code, f.severity.value, f.loc.path, f.loc.line) for f in found] == [("AMP001", "info", "cfg/lora.yml", 6)]
