"""read_shell (shell and Slurm batch scripts) and read_makefile on realistic launcher files."""
import textwrap

import pytest

from gpulint.read.errors import ReadError
from gpulint.read.makefile import read_makefile
from gpulint.read.shell.scanner import read_shell


def facts(text, kind=None, reader=read_shell, path="run.sh"):
    out = reader(textwrap.dedent(text).lstrip("\n"), path)
    return [f for f in out if kind is None or f.kind == kind]


def env(text, reader=read_shell):
    return {f.key: f.value["value"] for f in facts(text, "env", reader)}


# Shaped after aws-samples/awsome-distributed-training 3.test_cases/pytorch/FSDP/slurm/*.sbatch
AWS_FSDP = """
#!/bin/bash

# Copyright Amazon.com, Inc. or its affiliates. All Rights Reserved.

#SBATCH --nodes=4 # number of nodes to use
#SBATCH --job-name=llama2_7b-FSDP # name of your job
#SBATCH --exclusive # job has exclusive use of the resource, no sharing

set -ex;

GPUS_PER_NODE=8 # 4 for G5.12x, 8 for P4/P5

#export CONTAINER_IMAGE=$(pwd)/pytorch-fsdp.sqsh
export DATA_PATH=/fsx
export FSX_MOUNT=$(pwd):$DATA_PATH

## For G4dn and other G5, comment out all
#export FI_LOG_LEVEL=warn
export NCCL_DEBUG=INFO
export FI_PROVIDER=efa
export FI_EFA_USE_HUGE_PAGE=0    # Set to 0 when you see os.fork() causes OSError
export FI_EFA_SET_CUDA_SYNC_MEMOPS=0
export NCCL_SOCKET_IFNAME=^docker,lo,veth,eth

if [ ! -z $CONTAINER_IMAGE ];
then
    declare -a ARGS=(
        --container-image $CONTAINER_IMAGE
        --container-mounts $FSX_MOUNT
    )
fi

declare -a TORCHRUN_ARGS=(
    --nproc_per_node=$GPUS_PER_NODE
    --nnodes=$SLURM_JOB_NUM_NODES
    --rdzv_id=$SLURM_JOB_ID
    --rdzv_backend=c10d
    --rdzv_endpoint=$(hostname)
)

export TORCHRUN=torchrun
export TRAIN_SCRIPT=./train.py

declare -a TRAINING_ARGS=(
    --max_context_width=4096
    --checkpoint_dir=./checkpoints
    --resume_from_checkpoint=./checkpoints
    --sharding_strategy=full # https://pytorch.org/docs/stable/fsdp.html
)

AUTO_RESUME=""
if [ -d "/opt/sagemaker_cluster" ]; then
    echo "Detected Hyperpod cluster.. enabling --auto-resume=1"
    AUTO_RESUME="--auto-resume=1"
fi
srun ${AUTO_RESUME} -l "${ARGS[@]}" ${TORCHRUN} "${TORCHRUN_ARGS[@]}" $TRAIN_SCRIPT "${TRAINING_ARGS[@]}"
"""


def test_aws_fsdp_sbatch_slurm_compute_facts():
    out = facts(AWS_FSDP, path="llama2_7b-training.sbatch")
    target = [f for f in out if f.kind == "compute.target"]
    assert len(target) == 1 and target[0].value["source"] == "slurm" and target[0].value["resource"] == "sbatch"
    assert target[0].target == "slurm" and target[0].loc.line == 5
    nodes = [f for f in out if f.kind == "compute.node_count"]
    assert [(n.value, n.key, n.loc.line, n.target) for n in nodes] == [(4, "--nodes", 5, "slurm")]


def test_aws_fsdp_sbatch_env():
    values = env(AWS_FSDP)
    assert values["FI_PROVIDER"] == "efa"
    assert values["NCCL_DEBUG"] == "INFO"
    assert values["FI_EFA_USE_HUGE_PAGE"] == "0"
    assert values["NCCL_SOCKET_IFNAME"] == "^docker,lo,veth,eth"
    assert values["FSX_MOUNT"] is None  # built from $(pwd): never executed
    assert "FI_LOG_LEVEL" not in values and "CONTAINER_IMAGE" not in values  # commented out
    fi = next(f for f in facts(AWS_FSDP, "env") if f.key == "FI_PROVIDER")
    assert (fi.loc.line, fi.loc.column) == (20, 8)


def test_aws_fsdp_sbatch_launch_resolves_arrays_and_slurm_variables():
    [launch] = facts(AWS_FSDP, "launch")
    v = launch.value
    assert v["tool"] == "torchrun" and v["script"] == "./train.py"
    assert v["nproc_per_node"] == 8  # GPUS_PER_NODE=8
    assert v["nnodes"] == 4  # $SLURM_JOB_NUM_NODES from #SBATCH --nodes=4
    assert v["wrapper"]["tool"] == "srun"
    assert "--resume_from_checkpoint=./checkpoints" in v["args"]
    assert launch.loc.line == 56 and launch.loc.column == 1
    assert launch.attrs["flags"]["--nproc_per_node"][0] == 34  # the line inside the array
    assert launch.target == "slurm"  # runs on the batch allocation: same target as the #SBATCH facts


def test_sbatch_short_options_gres_and_partition():
    out = facts("""
        #!/bin/bash
        #SBATCH -N 2
        #SBATCH --ntasks-per-node=4
        #SBATCH -p gpu
        #SBATCH --gres=gpu:a100:4
        #SBATCH --no-requeue

        source ~/env.bash
        srun hostname -s > hostfile.txt
        deepspeed --hostfile hostfile.txt deepspeed_DP.py --deepspeed --deepspeed_config ds_config.json
        """)
    kinds = {f.kind: f for f in out}
    assert kinds["compute.node_count"].value == 2 and kinds["compute.node_count"].key == "-N"
    assert kinds["compute.gpus_per_node"].value == 4
    assert kinds["compute.accelerator"].value == {"type": "a100", "count": 4}
    assert kinds["compute.target"].value["partition"] == "gpu"
    [launch] = [f for f in out if f.kind == "launch"]
    assert launch.value["tool"] == "deepspeed" and launch.value["deepspeed_config"] == "ds_config.json"


def test_sbatch_directives_after_first_command_are_ignored():
    out = facts("""
        #!/bin/bash
        #SBATCH --nodes=2
        set -e
        #SBATCH --nodes=16
        #SBATCH --gpus-per-node=8
        """)
    assert [f.value for f in out if f.kind == "compute.node_count"] == [2]
    assert not [f for f in out if f.kind == "compute.gpus_per_node"]


def test_sbatch_node_range_is_not_a_count():
    out = facts("#!/bin/bash\n#SBATCH --nodes=2-4\n#SBATCH --gpus-per-node=h100:8\npython train.py\n")
    assert [f.value for f in out if f.kind == "compute.node_count"] == [None]
    assert [f.value for f in out if f.kind == "compute.min_nodes"] == [2]
    assert [f.value for f in out if f.kind == "compute.gpus_per_node"] == [8]


# Shaped after sbatch scripts that ask for GPUs as a job total or per task (torchtune benchmarks, NERSC
# templates): sbatch(1) --gpus/-G is the job's total, --gpus-per-task multiplies by the tasks on a node.
@pytest.mark.parametrize("directives, per_node, accel", [
    (["--nodes=1", "--gpus=4"], 4, None),
    (["-G 4"], 4, None),
    (["--gpus=h100:8"], 8, {"type": "h100", "count": 8}),
    (["--nodes=2", "--gpus=h100:16"], 8, {"type": "h100", "count": 8}),
    (["-N 2", "--gpus-per-task=1", "--ntasks-per-node=4"], 4, None),
    (["--nodes=2", "--ntasks=16", "--gpus-per-task=a100:1"], 8, {"type": "a100", "count": 8}),
    (["--gpus-per-task=2"], 2, None),  # one task by default
    (["--gpus=2", "--gpus-per-node=8"], 8, None),  # the per-node form wins
    (["--nodes=1", "--gpus-per-task=nvidia.com/gpu:8"], 8, None),  # a resource name, not a GPU model
])
def test_sbatch_gpus_as_a_job_total_or_per_task(directives, per_node, accel):
    text = "#!/bin/bash\n" + "".join(f"#SBATCH {d}\n" for d in directives) + "srun python train.py\n"
    out = facts(text)
    assert [f.value for f in out if f.kind == "compute.gpus_per_node"] == [per_node]
    assert [f.value for f in out if f.kind == "compute.accelerator"] == ([accel] if accel else [])


@pytest.mark.parametrize("directives", [
    ["--nodes=3", "--gpus=8"],  # not an even split over the nodes
    ["--gpus=16"],  # more than a node holds, with no --nodes: the split is Slurm's choice
    ["--nodes=2", "--ntasks=3", "--gpus-per-task=1"],  # tasks not even over the nodes
    ["--gpus=$NGPUS"],
])
def test_sbatch_gpu_total_that_does_not_decide_a_node_is_unknown(directives):
    text = "#!/bin/bash\n" + "".join(f"#SBATCH {d}\n" for d in directives) + "srun python train.py\n"
    out = facts(text)
    assert [f.value for f in out if f.kind == "compute.gpus_per_node"] == [None]


def test_sbatch_gpus_seed_slurm_gpus_on_node():
    out = facts("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --gpus=16
        torchrun --nnodes $SLURM_NNODES --nproc_per_node $SLURM_GPUS_ON_NODE train.py
        """)
    [launch] = [f for f in out if f.kind == "launch"]
    assert launch.value["nproc_per_node"] == 8 and launch.value["nnodes"] == 2


def test_srun_gpus_options():
    out = facts("#!/bin/bash\nsrun -N 2 --ntasks-per-node=4 --gpus-per-task=1 python train.py\n")
    [launch] = [f for f in out if f.kind == "launch"]
    assert launch.value["wrapper"]["gpus_per_node"] == 4
    out = facts("#!/bin/bash\nsrun -N 2 -G 16 python train.py\n")
    [launch] = [f for f in out if f.kind == "launch"]
    assert launch.value["wrapper"]["gpus_per_node"] == 8


def test_no_slurm_facts_without_sbatch_lines():
    out = facts("#!/bin/bash\n# nodes=4\ntorchrun --nproc_per_node 8 train.py\n")
    assert not [f for f in out if f.kind.startswith("compute.")]


def test_continuation_lines_and_variables():
    out = facts("""
        #!/bin/bash
        export MASTER_ADDR='localhost'
        export MASTER_PORT='29400'
        NUM_NODES=2
        NUM_TRAINERS=8
        export NCCL_DEBUG=WARN
        torchrun \\
            --nproc_per_node=$NUM_TRAINERS \\
            --nnodes=$NUM_NODES \\
            --node_rank=$NODE_RANK \\
            --master_addr=$MASTER_ADDR \\
            --master_port=$MASTER_PORT \\
            ./main.py --epochs 10
        """)
    [launch] = [f for f in out if f.kind == "launch"]
    assert launch.loc.line == 7 and launch.value["script"] == "./main.py"
    assert launch.value["nnodes"] == 2 and launch.value["nproc_per_node"] == 8
    assert launch.attrs["flags"]["--nnodes"] == [9, 5]
    assert {f.key: f.value["value"] for f in out if f.kind == "env"}["NCCL_DEBUG"] == "WARN"


def test_environment_defaults_are_used_and_marked_overridable():
    out = facts("""
        NNODES=${NNODES:-2}
        NPROC_PER_NODE="${NPROC_PER_NODE:-8}"
        torchrun --nnodes=$NNODES --nproc-per-node=$NPROC_PER_NODE train.py "$@"
        """)
    [launch] = [f for f in out if f.kind == "launch"]
    # the literal default applies unless the caller's environment sets the variable
    assert launch.value["nnodes"] == 2 and launch.value["nproc_per_node"] == 8
    assert launch.attrs["overridable"] == {"--nnodes": "NNODES", "--nproc-per-node": "NPROC_PER_NODE"}
    assert launch.value["script"] == "train.py" and "script" not in launch.attrs["overridable"]
    envs = {f.key: f for f in out if f.kind == "env"}
    assert envs["NNODES"].value["value"] == "2" and envs["NNODES"].attrs["overridable"] == "NNODES"


def test_defaults_of_variables_the_script_sets_stay_unknown():
    [launch] = facts("""
        NNODES=$(scontrol show hostnames | wc -l)
        torchrun --nnodes=${NNODES:-1} train.py
        """, "launch")
    assert launch.value["nnodes"] is None and "overridable" not in launch.attrs


def test_unquoted_variable_is_word_split():
    [launch] = facts("""
        DIST="--nnodes 2 --nproc_per_node 4"
        torchrun $DIST train.py
        """, "launch")
    assert launch.value["nnodes"] == 2 and launch.value["nproc_per_node"] == 4


def test_assignments_in_branches_become_unknown_after_the_block():
    out = facts("""
        GPUS=8
        if [ "$SIZE" = small ]; then
            GPUS=1
            torchrun --nproc_per_node $GPUS small.py
        else
            torchrun --nproc_per_node $GPUS big.py
        fi
        torchrun --nproc_per_node $GPUS train.py
        """, "launch")
    got = {f.value["script"]: f.value["nproc_per_node"] for f in out}
    assert got == {"small.py": 1, "big.py": 8, "train.py": None}


def test_assignment_redefined_at_top_level_uses_latest():
    out = facts("N=2\ntorchrun --nnodes $N a.py\nN=4\ntorchrun --nnodes $N b.py\n", "launch")
    assert [f.value["nnodes"] for f in out] == [2, 4]


def test_chains_pipes_and_background():
    out = facts("""
        cd /workspace && NCCL_P2P_DISABLE=1 torchrun --nproc_per_node 4 train.py 2>&1 | tee logs/train.log
        python prepare_data.py --out data/ ; deepspeed --num_gpus 2 ds_train.py &
        wait
        """)
    launches = [f for f in out if f.kind == "launch"]
    assert [l.value["script"] for l in launches] == ["train.py", "prepare_data.py", "ds_train.py"]
    assert launches[0].value["args"] == []  # the redirection and the pipe are not arguments
    p2p = next(f for f in out if f.kind == "env" and f.key == "NCCL_P2P_DISABLE")
    assert p2p.value == {"name": "NCCL_P2P_DISABLE", "value": "1"} and p2p.target == launches[0].target
    assert (p2p.loc.line, p2p.loc.column) == (1, 18)
    assert len({l.target for l in launches}) == 3 and "slurm" not in {l.target for l in launches}


def test_exec_and_command_substitution():
    out = facts("""
        HOST=$(hostname)
        exec accelerate launch --config_file configs/accel.yaml --mixed_precision bf16 train.py
        RESULT=$(python eval.py --ckpt out/)
        """)
    [launch] = [f for f in out if f.kind == "launch"]
    assert launch.value["tool"] == "accelerate" and launch.value["mixed_precision"] == "bf16"
    [prec] = [f for f in out if f.kind == "precision"]
    assert prec.value == {"mechanism": "launcher", "dtype": "bf16", "enabled": True}
    assert prec.key == "--mixed_precision" and (prec.loc.line, prec.loc.column) == (2, 57)


def test_accelerate_mixed_precision_no_is_recorded_as_disabled():
    [prec] = facts("accelerate launch --mixed_precision=no train.py\n", "precision")
    assert prec.value["enabled"] is False and prec.value["dtype"] == "no"


@pytest.mark.parametrize("script", [
    '# torchrun --nproc_per_node 8 train.py\n',
    'echo "python train.py"\n',
    "echo python train.py --bf16\n",
    "printf 'torchrun train.py\\n'\n",
    "pip install -r requirements.txt\n",
    'python -c "import torch; print(torch.__version__)"\n',
    "python setup.py develop\n",
    "python -m pip install flash-attn --no-build-isolation\n",
    "cat > job.sh <<EOF\ntorchrun --nproc_per_node 8 train.py\nEOF\n",
    "cat <<-'EOF' > run.sh\n\tpython train.py\n\tEOF\n",
    "git clone https://github.com/pytorch/torchtitan && cd torchtitan\n",
    "nvidia-smi --query-gpu=name --format=csv\n",
])
def test_not_launches(script):
    assert facts(script, "launch") == []


def test_heredoc_body_is_skipped_but_following_lines_are_read():
    out = facts("cat > hostfile <<EOF\nnode1 slots=8\nEOF\ndeepspeed --hostfile hostfile train.py\n", "launch")
    assert [f.value["tool"] for f in out] == ["deepspeed"] and out[0].loc.line == 4


def test_functions_loops_and_case():
    out = facts("""
        run() {
            NPROC=2
            torchrun --nproc_per_node $NPROC "$@"
        }
        for seed in 1 2 3; do
            python train.py --seed $seed
        done
        case "$1" in
            big) NODES=4 ;;
            *) NODES=1 ;;
        esac
        torchrun --nnodes $NODES --nproc_per_node $NPROC train.py
        """, "launch")
    assert [f.value["script"] for f in out] == [None, "train.py", "train.py"]
    assert out[0].value["nproc_per_node"] == 2
    assert out[-1].value["nnodes"] is None and out[-1].value["nproc_per_node"] is None


def test_env_variable_expansion_from_earlier_literals():
    values = env("""
        EFA_DIR=/opt/amazon/efa
        export LD_LIBRARY_PATH=$EFA_DIR/lib:$LD_LIBRARY_PATH
        export FI_EFA_DIR="${EFA_DIR}/lib"
        export NCCL_NET_PLUGIN=ofi NCCL_PROTO=simple
        export OMP_NUM_THREADS
        HF_HOME=/fsx/hf
        lower_case=1
        """)
    assert values["LD_LIBRARY_PATH"] is None
    assert values["FI_EFA_DIR"] == "/opt/amazon/efa/lib"
    assert values["NCCL_NET_PLUGIN"] == "ofi" and values["NCCL_PROTO"] == "simple"
    assert values["HF_HOME"] == "/fsx/hf"
    assert "OMP_NUM_THREADS" not in values and "lower_case" not in values


def test_conditional_env_is_marked():
    out = facts('if [ "$INSTANCE" = p4d ]; then\n  export FI_EFA_USE_DEVICE_RDMA=1\nfi\n', "env")
    assert out[0].attrs.get("conditional") is True and out[0].value["value"] == "1"


def test_srun_python_in_batch_script():
    out = facts("""
        #!/bin/bash
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=8
        #SBATCH --gpus-per-node=8
        srun --ntasks-per-node=$SLURM_NTASKS_PER_NODE python train.py --bf16
        """)
    [launch] = [f for f in out if f.kind == "launch"]
    assert launch.value["tool"] == "python" and launch.value["nproc_per_node"] == 8
    assert launch.value["wrapper"]["tool"] == "srun"


@pytest.mark.parametrize("text", [
    "", "\n\n", "'unterminated", 'echo "unterminated', "$(", "${", "if then fi fi done }", "a=(", "cat <<",
    "torchrun --nnodes", "))))((((", "#SBATCH --nodes\n", "#SBATCH\n", "`", "\\", "x=$((1+2)); python $x",
    "for", "case", "function", "f() { f() { :; }", "declare -a A=(\"${B[@]}\" $(", "exec", "env",
])
def test_malformed_input_never_raises(text):
    read_shell(text, "odd.sh")


def test_binary_input_raises_read_error():
    with pytest.raises(ReadError):
        read_shell("\x00\x01ELF", "a.sh")


# ------------------------------------------------------------------ Makefile

MAKEFILE = """
NNODES := 2
NPROC ?= 8
export NCCL_DEBUG=INFO
MODEL = llama
CONFIG := configs/$(MODEL).yaml
NCCL_IB_DISABLE = 1 # keep off in CI

.PHONY: train finetune lint
train: ## train the model
\t@echo "torchrun train.py"
\t@torchrun --nnodes $(NNODES) --nproc_per_node $(NPROC) \\
\t\ttrain.py --config $(CONFIG)

finetune:
\tNCCL_P2P_DISABLE=1 accelerate launch --num_machines $(NNODES) --num_processes 16 --mixed_precision fp16 ft.py

lint:
\tpip install ruff && ruff check .
\tpython -m pytest -q
# python commented.py
"""


def test_makefile_env_assignments():
    values = env(MAKEFILE, read_makefile)
    assert values["NCCL_DEBUG"] == "INFO" and values["NNODES"] == "2"
    assert values["NPROC"] is None  # ?= depends on the caller's environment
    assert values["CONFIG"] == "configs/llama.yaml" and values["NCCL_IB_DISABLE"] == "1"
    nccl = next(f for f in facts(MAKEFILE, "env", read_makefile) if f.key == "NCCL_DEBUG")
    assert (nccl.loc.line, nccl.loc.column) == (3, 8) and nccl.attrs["exported"] is True


def test_makefile_recipe_launches():
    out = facts(MAKEFILE, "launch", read_makefile, "Makefile")
    assert [f.value["tool"] for f in out] == ["torchrun", "accelerate"]
    tr, acc = out
    assert tr.value["nnodes"] == 2 and tr.value["nproc_per_node"] is None
    assert tr.value["args"] == ["--config", "configs/llama.yaml"]
    assert (tr.loc.line, tr.loc.column) == (11, 3)
    assert acc.value["nproc_per_node"] == 8 and acc.value["mixed_precision"] == "fp16"
    p2p = [f for f in facts(MAKEFILE, "env", read_makefile) if f.key == "NCCL_P2P_DISABLE"]
    assert p2p and p2p[0].target == acc.target


def test_makefile_without_launches():
    assert facts("all:\n\tpython -m build\n\tpip install dist/*.whl\n", "launch", read_makefile) == []
    assert facts("CFLAGS := -O2\nall: main.o\n\t$(CC) -o main main.o\n", None, read_makefile) == [
        f for f in facts("CFLAGS := -O2\nall: main.o\n\t$(CC) -o main main.o\n", None, read_makefile)
        if f.kind == "env"]


@pytest.mark.parametrize("word,is_open", [
    ("$EXTRA_ARGS", True), ("${EXTRA_ARGS}", True), ('"${ARGS[@]}"', True), ("$@", True), ("$(cat flags.txt)", True),
    ("data/en-$tgt", False), ("${data}/bin", False), ("$DATA_DIR/train.json", False),
])
def test_only_a_word_that_is_one_expansion_may_add_flags(word, is_open):
    """`torchrun train.py $EXTRA` may pass any flag; `torchrun train.py ${data}/bin` passes a path: a word with
    literal text around its expansion is a value, and the line's flags are read as complete."""
    [launch] = [f for f in read_shell(f"torchrun train.py {word} --epochs 2\n", "run.sh") if f.kind == "launch"]
    assert bool(launch.value.get("args_open")) is is_open


# -- a command held in a variable and run by `bash -c "$CMD"`, its run-time words unknown -------------------------
_RUN_CMD = '''
#!/bin/bash
#SBATCH --nodes=2
NUM_PROCESSES=$(expr $SLURM_NNODES \\* 4)
RUN_CMD="accelerate launch \\
        --config_file=$1 \\
        --num_processes=$NUM_PROCESSES \\
        --machine_rank=\\$SLURM_NODEID \\
        finetune.py $* \\
        --num-workers 10
"
srun bash -c "$RUN_CMD"
'''


def test_bash_c_of_a_variable_runs_the_command_assigned_to_it():
    [launch] = facts(_RUN_CMD, "launch")
    assert launch.value["tool"] == "accelerate" and launch.value["script"] == "finetune.py"
    assert launch.loc.line == 11  # the line that runs it, not the assignment
    assert launch.value["num_processes"] != 8 and not isinstance(launch.value["num_processes"], int)  # from $(expr ...)


def test_a_reassigned_command_variable_runs_its_last_value():
    text = 'CMD="torchrun --nproc_per_node $N old.py"\nCMD="python new.py"\nbash -c "$CMD"\n'
    assert [f.value["script"] for f in facts(text, "launch")] == ["new.py"]


def test_a_command_variable_whose_value_is_unknown_runs_nothing_known():
    assert facts('CMD=$(cat cmd.txt)\nbash -c "$CMD"\n', "launch") == []
    assert facts('bash -c "$NEVER_SET"\n', "launch") == []
