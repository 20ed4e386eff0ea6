"""parse_command / split_command_line on launcher lines as written in real repositories."""
import shlex

import pytest

from gpulint.read.shell.commands import split_command_line
from gpulint.read.shell.scanner import parse_command


def launch(line):
    env, argv = split_command_line(line)
    return parse_command(argv)


KEYS = {"tool", "script", "args", "nnodes", "nproc_per_node", "mixed_precision", "config_file",
        "deepspeed_config", "num_machines", "num_processes", "module", "wrapper"}


# ------------------------------------------------------------------ split_command_line

def test_split_strips_leading_env_assignments():
    env, argv = split_command_line("NCCL_DEBUG=INFO CUDA_VISIBLE_DEVICES=0,1 python train.py --lr 3e-4")
    assert env == {"NCCL_DEBUG": "INFO", "CUDA_VISIBLE_DEVICES": "0,1"}
    assert argv == ["python", "train.py", "--lr", "3e-4"]


def test_split_tolerates_unbalanced_quotes_and_comments():
    env, argv = split_command_line('torchrun --nproc_per_node 8 train.py --name "unterminated')
    assert argv[:4] == ["torchrun", "--nproc_per_node", "8", "train.py"]
    assert split_command_line("python train.py  # run it") == ({}, ["python", "train.py"])
    assert split_command_line("") == ({}, [])


def test_split_does_not_treat_later_assignments_as_env():
    env, argv = split_command_line("python train.py LR=1")
    assert env == {} and argv == ["python", "train.py", "LR=1"]


# ------------------------------------------------------------------ python

@pytest.mark.parametrize("line,script", [
    ("python train.py", "train.py"),
    ("python3 -u scripts/finetune.py --bf16", "scripts/finetune.py"),
    ("python3.10 -O -W ignore train.py", "train.py"),
    ("/opt/conda/bin/python -B src/train.py", "src/train.py"),
])
def test_plain_python(line, script):
    v = launch(line)
    assert v["tool"] == "python" and v["script"] == script
    assert set(v) >= KEYS
    assert v["nproc_per_node"] is None and v["nnodes"] is None and v["wrapper"] is None


def test_python_script_args_and_deepspeed_config():
    v = launch("python train.py --model_name_or_path meta-llama/Llama-2-7b-hf --deepspeed configs/ds_z3.json --bf16 True")
    assert v["args"] == ["--model_name_or_path", "meta-llama/Llama-2-7b-hf", "--deepspeed", "configs/ds_z3.json",
                         "--bf16", "True"]
    assert v["deepspeed_config"] == "configs/ds_z3.json"


def test_python_module_is_recorded():
    v = launch("python -m llava.train.train_mem --lora_enable True")
    assert v["tool"] == "python" and v["module"] == "llava.train.train_mem" and v["script"] is None
    assert v["args"] == ["--lora_enable", "True"]


@pytest.mark.parametrize("line", [
    'python -c "import torch; print(torch.cuda.device_count())"',
    "python setup.py install",
    "python3 -m pip install -r requirements.txt",
    "python -m pytest tests/ -q",
    "python -m venv .venv",
    "python",
    "python - < script.py",
    "pip install deepspeed",
    'echo "python train.py"',
    "nvidia-smi",
    "accelerate config",
    "accelerate env",
    "sky status",
    "srun hostname",
    "mpirun -np 8 /opt/nccl-tests/build/all_reduce_perf -b 8 -e 2G",
    "torchrun --nproc_per_node 8",
])
def test_not_a_launch(line):
    assert launch(line) is None


# ------------------------------------------------------------------ torchrun

def test_torchrun_flag_spellings():
    v = launch("torchrun --nnodes=2 --nproc_per_node 8 --rdzv_id=100 --rdzv_backend=c10d "
               "--rdzv_endpoint=$MASTER_ADDR:29400 llfs_train.py --epochs 3")
    assert (v["tool"], v["script"], v["nnodes"], v["nproc_per_node"]) == ("torchrun", "llfs_train.py", 2, 8)
    assert v["args"] == ["--epochs", "3"]
    v = launch("torchrun --nnodes 1 --nproc-per-node=4 train.py")
    assert v["nnodes"] == 1 and v["nproc_per_node"] == 4


def test_torchrun_elastic_and_symbolic_values():
    v = launch("torchrun --nnodes=1:4 --nproc_per_node=gpu --max_restarts=3 train.py")
    assert v["nnodes"] == "1:4" and v["nproc_per_node"] is None
    v = launch("torchrun --nproc_per_node auto train.py")
    assert v["nproc_per_node"] is None


def test_torchrun_unresolved_variables_stay_unknown():
    v = launch("torchrun --nnodes $NNODES --nproc_per_node=${GPUS} --node_rank=$RANK train.py")
    assert v["nnodes"] is None and v["nproc_per_node"] is None and v["script"] == "train.py"
    v = launch("torchrun --nproc_per_node 8 $TRAIN_SCRIPT --lr 1")
    assert v["script"] is None and v["nproc_per_node"] == 8


def test_torchrun_standalone_means_one_node():
    v = launch("torchrun --standalone --nproc_per_node=4 main.py")
    assert v["nnodes"] == 1 and v["script"] == "main.py"


def test_torchrun_module_mode():
    v = launch("torchrun --nnodes=1 --max_restarts=0 --nproc_per_node=gpu -m examples.train_single_gpu")
    assert v["module"] == "examples.train_single_gpu" and v["script"] is None


def test_torchtitan_style_flags_before_script():
    v = launch("torchrun --nproc_per_node=8 --rdzv_backend c10d --rdzv_endpoint=localhost:0 "
               "--local-ranks-filter 0 --role rank --tee 3 train.py --job.config_file ./train_configs/llama3_8b.toml")
    assert v["script"] == "train.py" and v["nproc_per_node"] == 8
    assert v["args"] == ["--job.config_file", "./train_configs/llama3_8b.toml"]


@pytest.mark.parametrize("mod", ["torch.distributed.run", "torch.distributed.launch"])
def test_python_m_torch_distributed(mod):
    v = launch(f"python -m {mod} --use_env --nnodes 2 --nproc_per_node=8 --master_port 29501 main.py --amp")
    assert v["tool"] == "torchrun" and v["script"] == "main.py"
    assert v["nnodes"] == 2 and v["nproc_per_node"] == 8 and v["args"] == ["--amp"]


# ------------------------------------------------------------------ accelerate

def test_accelerate_launch_flags():
    v = launch("accelerate launch --config_file configs/fsdp.yaml --mixed_precision bf16 --num_processes 16 "
               "--num_machines 2 --multi_gpu train.py --output_dir out")
    assert v["tool"] == "accelerate" and v["script"] == "train.py"
    assert v["config_file"] == "configs/fsdp.yaml" and v["mixed_precision"] == "bf16"
    assert v["num_processes"] == 16 and v["num_machines"] == 2
    assert v["nnodes"] == 2 and v["nproc_per_node"] == 8 and v["multi_gpu"] is True
    assert v["args"] == ["--output_dir", "out"]


def test_accelerate_deepspeed_and_fsdp_switches():
    v = launch("accelerate launch --use_deepspeed --deepspeed_config_file ds_zero3.json --zero_stage 3 "
               "--mixed_precision=fp16 run_clm_no_trainer.py")
    assert v["use_deepspeed"] is True and v["deepspeed_config"] == "ds_zero3.json"
    assert v["mixed_precision"] == "fp16" and v["script"] == "run_clm_no_trainer.py"
    v = launch("accelerate launch --use_fsdp --mixed_precision no nlp_example.py")
    assert v["use_fsdp"] is True and v["mixed_precision"] == "no"


def test_accelerate_num_processes_alone_does_not_guess_nodes():
    v = launch("accelerate launch --num_processes 8 train.py")
    assert v["num_processes"] == 8 and v["nproc_per_node"] is None and v["nnodes"] is None


def test_python_m_accelerate_commands_launch():
    v = launch("python -m accelerate.commands.launch --num_processes=2 --mixed_precision bf16 examples/nlp_example.py")
    assert v["tool"] == "accelerate" and v["script"] == "examples/nlp_example.py" and v["mixed_precision"] == "bf16"


# ------------------------------------------------------------------ deepspeed

def test_deepspeed_launcher():
    v = launch("deepspeed --num_gpus 8 --num_nodes 2 --hostfile hostfile --master_addr 10.252.32.12 "
               "randy/train.py --deepspeed ds_config.json")
    assert v["tool"] == "deepspeed" and v["script"] == "randy/train.py"
    assert v["nproc_per_node"] == 8 and v["nnodes"] == 2 and v["hostfile"] == "hostfile"
    assert v["deepspeed_config"] == "ds_config.json"


def test_deepspeed_boolean_switch_then_config():
    v = launch("deepspeed --hostfile=hostfile main_deepspeed.py --cuda --epochs 6 --deepspeed --deepspeed_config ds_config.json")
    assert v["script"] == "main_deepspeed.py" and v["deepspeed_config"] == "ds_config.json"
    assert v["nproc_per_node"] is None and v["hostfile"] == "hostfile"


def test_deepspeed_equals_spelling():
    v = launch("deepspeed --hostfile=hostfile --num_nodes=4 --num_gpus=8 finetune_new.py --deepspeed=ds.json")
    assert v["nnodes"] == 4 and v["nproc_per_node"] == 8 and v["deepspeed_config"] == "ds.json"


# ------------------------------------------------------------------ wrappers

def test_srun_wrapping_torchrun():
    v = launch("srun -p llm_s -n 8 -N 8 --ntasks-per-node=1 --gpus-per-task=8 -w HOST-[1-8] "
               "torchrun --nproc_per_node 8 --rdzv_backend c10d train.py --job.config_file a.toml")
    assert v["tool"] == "torchrun" and v["script"] == "train.py" and v["nproc_per_node"] == 8
    assert v["wrapper"]["tool"] == "srun" and v["wrapper"]["nodes"] == 8 and v["wrapper"]["ntasks_per_node"] == 1


def test_srun_wrapping_python_takes_process_layout_from_srun():
    v = launch("srun -p llm_s -N 2 -n 16 --ntasks-per-node=8 --gpus-per-task=1 python ./train.py --config c.py")
    assert v["tool"] == "python" and v["script"] == "./train.py"
    assert v["nproc_per_node"] == 8 and v["nnodes"] == 2


def test_srun_attached_short_values_and_gres():
    v = launch("srun -N4 --gres=gpu:a100:8 --container-image=nvcr.io#nvidia/pytorch:24.01-py3 python train.py")
    assert v["wrapper"]["nodes"] == 4 and v["wrapper"]["gpus_per_node"] == 8


def test_srun_skips_unresolved_option_expansions():
    v = launch('srun ${AUTO_RESUME} -l "${ARGS[@]}" torchrun --nproc_per_node=8 ./train.py')
    assert v["tool"] == "torchrun" and v["script"] == "./train.py" and v["wrapper"]["tool"] == "srun"


def test_mpirun_wrapping_python():
    v = launch("mpirun -np 16 -N 8 -x FI_PROVIDER=efa -x NCCL_DEBUG=INFO --mca pml ^cm --bind-to none python train.py")
    assert v["tool"] == "python" and v["nproc_per_node"] == 8 and v["nnodes"] == 2
    assert v["wrapper"]["tool"] == "mpirun" and v["wrapper"]["ntasks"] == 16


def test_mpirun_map_by_ppr():
    v = launch("mpiexec -n 32 --map-by ppr:8:node --hostfile hosts python3 train.py")
    assert v["wrapper"]["tool"] == "mpiexec" and v["wrapper"]["ntasks_per_node"] == 8 and v["nnodes"] == 4


def test_bash_c_inner_command():
    v = launch('srun -l bash -c "cd /workspace && torchrun --nnodes 4 --nproc_per_node 8 train.py"')
    assert v["tool"] == "torchrun" and v["nnodes"] == 4 and v["wrapper"]["tool"] == "srun"


@pytest.mark.parametrize("line", [
    "nohup python train.py",
    "exec torchrun --nproc_per_node 2 train.py",
    "env NCCL_DEBUG=INFO python train.py",
    "uv run python train.py",
    "poetry run python train.py",
    "conda run -n train python train.py",
    "time python train.py",
])
def test_prefix_commands_are_unwrapped(line):
    v = launch(line)
    assert v is not None and v["script"] == "train.py"


# ------------------------------------------------------------------ skypilot

def test_sky_launch_and_managed_jobs():
    v = launch("sky launch -c mycluster --gpus A100:8 --num-nodes 2 task.yaml")
    assert v["tool"] == "skypilot" and v["config_file"] == "task.yaml" and v["managed"] is False
    assert v["nnodes"] == 2 and v["accelerators"] == "A100:8"
    v = launch("sky jobs launch --use-spot -n train train.yaml")
    assert v["managed"] is True and v["use_spot"] is True and v["config_file"] == "train.yaml"


def test_parse_command_never_raises_on_odd_input():
    for argv in ([], [""], ["--"], ["torchrun", "--nnodes"], ["srun", "-N"], ["deepspeed"], ["accelerate"],
                 ["python", "-m"], ["mpirun", "-x"], ["sky", "jobs"], ["bash", "-c"], ["env"], ["$PYTHON", "x.py"]):
        parse_command(argv)


# ------------------------------------------------------------------ ASGI/WSGI application servers

@pytest.mark.parametrize("line,tool,module", [
    ("uvicorn serve.app:app --host 0.0.0.0 --port 8080", "uvicorn", "serve.app"),
    ("gunicorn -k uvicorn.workers.UvicornWorker -b 0.0.0.0:80 app:api", "gunicorn", "app"),
    ("gunicorn --bind=0.0.0.0:8000 --workers 2 wsgi:application", "gunicorn", "wsgi"),
    ("python -m uvicorn --app-dir src main:app", "uvicorn", "src.main"),
    ("uvicorn --factory pkg.server:create_app()", "uvicorn", "pkg.server"),
    ("hypercorn asgi:app --bind 0.0.0.0:9000", "hypercorn", "asgi"),
])
def test_app_server_runs_its_application_module(line, tool, module):
    v = launch(line)
    assert (v["tool"], v["module"], v["script"]) == (tool, module, None)


@pytest.mark.parametrize("line", [
    "gunicorn --bind localhost:8000",  # no application named
    "uvicorn $APP --port 80",  # decided at run time
    "gunicorn -b 127.0.0.1:8000 -k gevent",
])
def test_app_server_without_an_application_is_not_a_launch(line):
    assert launch(line) is None


@pytest.mark.parametrize("line, script, module, nnodes, nproc, args", [
    ("torchx run -s kubernetes -c queue=default ./dist_ddp.py:ddp --debug False -j 1:2x1 --gpu 1 --script /workspace/train.py "
     "-- --arch resnet18 /data/tiny-imagenet-200", "/workspace/train.py", None, "1:2", 1, ["--arch", "resnet18", "/data/tiny-imagenet-200"]),
    ("torchx run --scheduler local_cwd dist.ddp -j 2x8 --script=train.py -- --lr 0.1", "train.py", None, 2, 8, ["--lr", "0.1"]),
    ("torchx run utils.python -m trainer.main", None, "trainer.main", None, None, []),
])
def test_torchx_run_names_the_script_its_component_starts(line, script, module, nnodes, nproc, args):
    v = parse_command(shlex.split(line))
    assert (v["tool"], v["script"], v["module"], v["nnodes"], v["nproc_per_node"], v["args"]) == \
        ("torchx", script, module, nnodes, nproc, args)


@pytest.mark.parametrize("line", ["torchx status local_cwd://torchx/app", "torchx run dist.ddp -j 2x8"])
def test_torchx_commands_that_start_no_script_are_not_launches(line):
    assert parse_command(shlex.split(line)) is None
