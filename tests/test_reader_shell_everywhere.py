"""One shell lexer: a script gives the same launches in a .sh file, a SkyPilot
``run:``, a container's ``bash -c`` and an Azure ML command; parameter
expansion with defaults, arrays and the script's own folder."""
from __future__ import annotations

import textwrap

import pytest

from gpulint.read.cloudml import read_azureml
from gpulint.read.shell.commands import split_command_line
from gpulint.read.shell.scanner import parse_command
from gpulint.read.kubernetes import read_kubernetes
from gpulint.read.shell.scanner import read_shell
from gpulint.read.skypilot import read_skypilot
from gpulint.read.yamlnodes import load_documents

KEYS = ("tool", "script", "module", "nnodes", "nproc_per_node", "args")


def _block(script: str, indent: int) -> str:
    return textwrap.indent(textwrap.dedent(script).strip("\n") + "\n", " " * indent)


def via_shell(script):
    return read_shell(textwrap.dedent(script).lstrip("\n"), "run.sh")


def via_skypilot(script):
    text = "resources:\n  accelerators: A100:8\nrun: |\n" + _block(script, 2)
    return read_skypilot(load_documents(text), "task.yaml")


def via_container(script):
    text = ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\nspec:\n  template:\n    spec:\n"
            "      containers:\n        - name: trainer\n          image: pytorch\n"
            "          command: [\"/bin/bash\", \"-c\"]\n          args:\n            - |\n" + _block(script, 14))
    return read_kubernetes(load_documents(text), "job.yaml")


def via_azureml(script):
    text = ("$schema: https://azuremlschemas.azureedge.net/latest/commandJob.schema.json\n"
            "compute: azureml:gpu\ncommand: |\n" + _block(script, 2))
    return read_azureml(load_documents(text), "job.yaml")


READERS = [via_shell, via_skypilot, via_container, via_azureml]


def launches(facts):
    return [{k: f.value.get(k) for k in KEYS} for f in facts if f.kind == "launch"]


SCRIPTS = {
    # variables assigned earlier in the same script
    "variables": ("""
        NNODES=2
        GPUS=8
        torchrun --nnodes $NNODES --nproc_per_node=$GPUS train.py
        """, [{"tool": "torchrun", "script": "train.py", "module": None, "nnodes": 2, "nproc_per_node": 8,
               "args": []}]),
    # an array of launcher arguments
    "array": ("""
        TORCHRUN_ARGS=(--nproc_per_node 4 --nnodes 2)
        torchrun "${TORCHRUN_ARGS[@]}" src/train.py --bf16
        """, [{"tool": "torchrun", "script": "src/train.py", "module": None, "nnodes": 2, "nproc_per_node": 4,
               "args": ["--bf16"]}]),
    # a heredoc body is data: the torchrun line inside it launches nothing
    "heredoc": ("""
        cat > hosts <<EOF
        torchrun --nnodes 9 not_this.py
        EOF
        deepspeed --hostfile hosts ds_train.py
        """, [{"tool": "deepspeed", "script": "ds_train.py", "module": None, "nnodes": None, "nproc_per_node": None,
               "args": []}]),
    # a quoted $(...) with spaces and quotes inside stays one word
    "substitution": ("""
        torchrun --master_addr "$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)" --nnodes 2 train.py
        """, [{"tool": "torchrun", "script": "train.py", "module": None, "nnodes": 2, "nproc_per_node": None,
               "args": []}]),
    # an assignment inside a branch is unknown after it
    "branches": ("""
        NODES=1
        if [ -n "$BIG" ]; then
          NODES=4
        fi
        torchrun --nnodes $NODES train.py
        """, [{"tool": "torchrun", "script": "train.py", "module": None, "nnodes": None, "nproc_per_node": None,
               "args": []}]),
    # a default for a variable the script does not set
    "default": ("""
        torchrun --nnodes "${NNODES:-2}" train.py
        """, [{"tool": "torchrun", "script": "train.py", "module": None, "nnodes": 2, "nproc_per_node": None,
               "args": []}]),
}


@pytest.mark.parametrize("reader", READERS, ids=lambda r: r.__name__)
@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_same_script_same_launches_in_every_reader(reader, name):
    script, expected = SCRIPTS[name]
    assert launches(reader(script)) == expected


@pytest.mark.parametrize("reader", READERS[1:], ids=lambda r: r.__name__)
def test_line_of_a_launch_inside_a_yaml_block(reader):
    facts = reader("""
        export NCCL_DEBUG=INFO
        # a comment
        torchrun \\
          --nnodes 2 \\
          train.py
        """)
    launch = next(f for f in facts if f.kind == "launch")
    env = next(f for f in facts if f.kind == "env" and f.value["name"] == "NCCL_DEBUG")
    assert launch.loc.line == env.loc.line + 2


def test_bash_c_string_in_a_script_is_scanned_with_the_same_lexer():
    facts = via_shell("""
        srun --nodes=2 bash -c 'export NCCL_DEBUG=WARN; cd /work && torchrun --nnodes 2 train.py && python eval.py'
        """)
    got = [(f.value["tool"], f.value["script"], (f.value["wrapper"] or {}).get("tool")) for f in facts
           if f.kind == "launch"]
    assert got == [("torchrun", "train.py", "srun"), ("python", "eval.py", "srun")]
    nccl = [f for f in facts if f.kind == "env" and f.value["name"] == "NCCL_DEBUG"]
    assert nccl and all(f.value["value"] == "WARN" for f in nccl)


def test_split_command_line_uses_the_shell_lexer():
    env, argv = split_command_line("A=1 torchrun --rdzv_endpoint \"$(hostname):29500\" 'my script.py'")
    assert env == {"A": "1"} and argv == ["torchrun", "--rdzv_endpoint", "$(hostname):29500", "my script.py"]
    assert parse_command(argv)["script"] == "my script.py"


# ---------------------------------------------------------------- parameter expansion

def shell_launch(script, path="scripts/run.sh"):
    facts = read_shell(textwrap.dedent(script).lstrip("\n"), path)
    out = [f for f in facts if f.kind == "launch"]
    assert len(out) == 1, out
    return out[0]


def test_colon_equals_default_names_the_script_and_says_it_is_overridable():
    launch = shell_launch("""
        : "${TRAIN_SCRIPT:=../src/train.py}"
        torchrun --nproc_per_node 8 "$TRAIN_SCRIPT"
        """)
    assert launch.value["script"] == "../src/train.py"
    assert launch.attrs["overridable"] == {"script": "TRAIN_SCRIPT"}


def test_assignment_from_its_own_default():
    launch = shell_launch("""
        TRAIN_SCRIPT=${TRAIN_SCRIPT:-../src/train.py}
        python $TRAIN_SCRIPT --epochs 3
        """)
    assert launch.value["script"] == "../src/train.py" and launch.attrs["overridable"] == {"script": "TRAIN_SCRIPT"}


def test_default_built_from_known_variables():
    launch = shell_launch("""
        SRC=src
        python "${ENTRY:-$SRC/train.py}"
        """)
    assert launch.value["script"] == "src/train.py" and launch.attrs["overridable"] == {"script": "ENTRY"}


def test_default_of_an_unknown_value_stays_unknown():
    launch = shell_launch("""
        torchrun "${ENTRY:-$(ls *.py | head -1)}"
        """)
    assert launch.value["script"] is None and "overridable" not in launch.attrs


def test_value_set_in_the_script_wins_over_the_default():
    launch = shell_launch("""
        NNODES=4
        torchrun --nnodes ${NNODES:-1} train.py
        """)
    assert launch.value["nnodes"] == 4 and "overridable" not in launch.attrs


@pytest.mark.parametrize("line", [
    'python "$(dirname "$0")/train.py"',
    "python $(dirname $0)/train.py",
    'python "$(dirname "${BASH_SOURCE[0]}")/train.py"',
    'python "`dirname $0`/train.py"',
    'SCRIPT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)\npython "$SCRIPT_DIR/train.py"',
    'SCRIPT_DIR="$( cd -- "$( dirname -- "${BASH_SOURCE[0]}" )" &> /dev/null && pwd )"\npython "$SCRIPT_DIR/train.py"',
    'HERE=$(dirname "$(realpath "$0")")\npython "${HERE}/train.py"',
    'HERE=$(dirname "$(readlink -f "$0")")\npython $HERE/train.py',
    'python "${0%/*}/train.py"',
])
def test_script_folder_forms(line):
    launch = shell_launch(line + "\n")
    assert launch.value["script"] == "train.py"
    assert launch.attrs["relative_to"] == "launcher"


def test_script_folder_parent_and_nested_paths():
    launch = shell_launch("""
        ROOT=$(cd "$(dirname "$0")/.." && pwd)
        torchrun --nnodes 1 "$ROOT/src/train.py" --config "$ROOT/configs/a.yaml"
        """)
    assert launch.value["script"] == "../src/train.py" and launch.attrs["relative_to"] == "launcher"
    assert launch.value["args"] == ["--config", "../configs/a.yaml"]


@pytest.mark.parametrize("line", [
    'torchrun "$(pwd)/train.py"',                      # the working directory, not the script's folder
    'torchrun "$(dirname "$CONFIG")/train.py"',        # another file's folder
    'torchrun "$(git rev-parse --show-toplevel)/train.py"',
    'torchrun "$(dirname "$0" | tr a b)/train.py"',
])
def test_other_substitutions_stay_unknown(line):
    launch = shell_launch(line + "\n")
    assert launch.value["script"] is None and "relative_to" not in launch.attrs


def test_dollar_zero_is_not_a_file_in_yaml_strings():
    facts = via_skypilot('torchrun "$(dirname "$0")/train.py"\n')
    [launch] = [f for f in facts if f.kind == "launch"]
    assert launch.value["script"] is None


def test_script_dir_env_value_is_not_a_literal():
    facts = read_shell('export SCRIPT_DIR=$(cd "$(dirname "$0")" && pwd)\n', "run.sh")
    [env] = [f for f in facts if f.kind == "env"]
    assert env.value == {"name": "SCRIPT_DIR", "value": None} and env.attrs["script_dir"] == "."


def test_env_default_is_marked_overridable():
    facts = read_shell('export NCCL_DEBUG=${NCCL_DEBUG:-INFO}\n: "${FI_PROVIDER:=efa}"\n', "run.sh")
    got = {f.value["name"]: (f.value["value"], f.attrs.get("overridable")) for f in facts if f.kind == "env"}
    assert got == {"NCCL_DEBUG": ("INFO", "NCCL_DEBUG"), "FI_PROVIDER": ("efa", "FI_PROVIDER")}


# ---------------------------------------------------------------- launches of shell files

@pytest.mark.parametrize("line,script,args", [
    ("bash train.sh", "train.sh", []),
    ("bash -ex scripts/train.sh --nodes 2", "scripts/train.sh", ["--nodes", "2"]),
    ("sh -o pipefail run.sh", "run.sh", []),
    ("./launch.sh 8", "./launch.sh", ["8"]),
    ("exec /workspace/entry.bash", "/workspace/entry.bash", []),
])
def test_shell_file_launches(line, script, args):
    launch = shell_launch(line + "\n")
    assert launch.value["tool"] == "shell" and launch.value["script"] == script and launch.value["args"] == args


def test_srun_bash_inner_script_is_a_wrapped_shell_launch():
    facts = read_shell("#!/bin/bash\n#SBATCH --nodes=2\nsrun --ntasks-per-node=1 bash inner.sh\n", "job.sbatch")
    [launch] = [f for f in facts if f.kind == "launch"]
    assert launch.value["tool"] == "shell" and launch.value["script"] == "inner.sh"
    assert launch.value["wrapper"]["tool"] == "srun" and launch.target == "slurm"


@pytest.mark.parametrize("line", ["bash", "bash -l", "source env.sh", ". ./env.sh", "bash -c 'echo hi'",
                                  "chmod +x run.sh"])
def test_not_shell_file_launches(line):
    assert [f for f in read_shell(line + "\n", "run.sh") if f.kind == "launch"] == []


def test_skypilot_run_bash_script_and_container_bash_script():
    sky = [f for f in via_skypilot("bash scripts/train.sh\n") if f.kind == "launch"]
    assert [(f.value["tool"], f.value["script"], f.target) for f in sky] == [("shell", "scripts/train.sh", "task")]
    text = ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: t\nspec:\n  template:\n    spec:\n      containers:\n"
            "        - name: c\n          image: x\n          command: [\"bash\", \"run.sh\"]\n"
            "          resources:\n            limits:\n              nvidia.com/gpu: 8\n")
    k8s = [f for f in read_kubernetes(load_documents(text), "job.yaml") if f.kind == "launch"]
    assert [(f.value["tool"], f.value["script"], f.target) for f in k8s] == [("shell", "run.sh", "Job/t")]


def test_launcher_after_a_wrapper_executable_under_srun():
    launch = shell_launch("srun -l /fsx/tools/nsys-exec torchrun --nnodes 2 --nproc_per_node 8 train.py\n")
    assert launch.value["tool"] == "torchrun" and launch.value["wrapper"]["tool"] == "srun"


def test_launcher_after_an_unknown_prefix_word_is_marked():
    launch = shell_launch('$MAYBE_COMPILE torchrun --nnodes 2 train.py\n')
    assert launch.value["script"] == "train.py" and launch.attrs["unknown_prefix"] == "$MAYBE_COMPILE"


@pytest.mark.parametrize("line,expected", [
    ("composer scripts/train/train.py scripts/train/yamls/pretrain/gpt2.yaml max_seq_len=2048",
     {"tool": "composer", "script": "scripts/train/train.py", "nproc_per_node": None, "nnodes": None}),
    ("composer -n 8 --world_size 16 train.py cfg.yaml",
     {"tool": "composer", "script": "train.py", "nproc_per_node": 8, "nnodes": 2}),
])
def test_composer_launcher(line, expected):
    launch = shell_launch(line + "\n")
    assert {k: launch.value[k] for k in expected} == expected


def test_ray_job_submit_entrypoint_in_its_working_dir():
    launch = shell_launch('ray job submit --no-wait --working-dir ./src -- python train.py --epochs 2\n')
    assert launch.value["tool"] == "python" and launch.value["script"] == "src/train.py"
    assert launch.value["wrapper"]["tool"] == "ray"
    remote = shell_launch('ray job submit --working-dir s3://bucket/code.zip -- torchrun train.py\n')
    assert remote.value["script"] is None  # the code is not in this repository
    assert [f for f in read_shell("ray job submit --no-wait train.py\n", "r.sh") if f.kind == "launch"] == []
