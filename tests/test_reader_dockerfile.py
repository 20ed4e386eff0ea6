"""read_dockerfile: ENV of the final stage and the launch ENTRYPOINT/CMD runs."""
import textwrap

import pytest

from gpulint.read.dockerfile import read_dockerfile
from gpulint.read.errors import ReadError


def read(text):
    return read_dockerfile(textwrap.dedent(text).lstrip("\n"), "Dockerfile")


def env(text):
    return {f.key: f.value["value"] for f in read(text) if f.kind == "env"}


def launches(text):
    return [f for f in read(text) if f.kind == "launch"]


EFA_IMAGE = """
ARG CUDA_VERSION=12.4.1
FROM nvcr.io/nvidia/pytorch:24.05-py3
ARG EFA_INSTALLER_VERSION=1.33.0
ARG NPROC=8
ENV LD_LIBRARY_PATH=/opt/amazon/efa/lib:$LD_LIBRARY_PATH \\
    PATH=/opt/amazon/efa/bin:$PATH
ENV FI_PROVIDER=efa \\
    FI_EFA_USE_DEVICE_RDMA=1 \\
    NCCL_DEBUG=INFO
ENV NCCL_SOCKET_IFNAME ^docker,lo
ENV GPUS=$NPROC EFA_VERSION=${EFA_INSTALLER_VERSION} CUDA=${CUDA_VERSION}
RUN pip install -r requirements.txt && python setup.py install
RUN torchrun --nproc_per_node 1 smoke_test.py
WORKDIR /workspace
COPY train.py ds_config.json ./
ENTRYPOINT ["torchrun", "--nproc_per_node=8", "--nnodes", "2"]
CMD ["train.py", "--deepspeed", "ds_config.json"]
"""


def test_env_both_syntaxes_and_arg_defaults():
    values = env(EFA_IMAGE)
    assert values["FI_PROVIDER"] == "efa" and values["FI_EFA_USE_DEVICE_RDMA"] == "1"
    assert values["NCCL_DEBUG"] == "INFO"
    assert values["NCCL_SOCKET_IFNAME"] == "^docker,lo"  # legacy `ENV NAME value`
    assert values["GPUS"] == "8" and values["EFA_VERSION"] == "1.33.0"
    assert values["CUDA"] is None  # a global ARG is not visible after FROM unless re-declared
    assert values["LD_LIBRARY_PATH"] is None  # extends the base image's value, unknown here


def test_env_locations_point_at_the_name():
    facts = {f.key: f for f in read(EFA_IMAGE) if f.kind == "env"}
    assert (facts["FI_PROVIDER"].loc.line, facts["FI_PROVIDER"].loc.column) == (7, 5)
    assert (facts["NCCL_DEBUG"].loc.line, facts["NCCL_DEBUG"].loc.column) == (9, 5)
    assert facts["NCCL_SOCKET_IFNAME"].loc.line == 10


def test_entrypoint_and_cmd_are_combined():
    [launch] = launches(EFA_IMAGE)
    v = launch.value
    assert v["tool"] == "torchrun" and v["script"] == "train.py"
    assert v["nproc_per_node"] == 8 and v["nnodes"] == 2 and v["deepspeed_config"] == "ds_config.json"
    assert launch.loc.line == 16
    assert launch.attrs["flags"]["--nnodes"][0] == 16


def test_run_lines_are_build_steps_not_launches():
    assert len(launches(EFA_IMAGE)) == 1


def test_shell_form_cmd_uses_env_values():
    [launch] = launches("""
        FROM pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime
        ENV NUM_GPUS=4
        CMD torchrun --nproc_per_node $NUM_GPUS \\
            --nnodes 1 train.py --bf16
        """)
    assert launch.value["nproc_per_node"] == 4 and launch.value["nnodes"] == 1
    assert launch.value["args"] == ["--bf16"] and launch.loc.line == 3 and launch.loc.column == 5


def test_shell_form_entrypoint_ignores_cmd():
    [launch] = launches("""
        FROM python:3.11
        ENTRYPOINT accelerate launch --mixed_precision bf16 train.py
        CMD ["--epochs", "3"]
        """)
    assert launch.value["tool"] == "accelerate" and launch.value["args"] == []


def test_exec_form_entrypoint_with_shell_form_cmd_runs_sh_c():
    [launch] = launches("""
        FROM python:3.11
        ENTRYPOINT ["/bin/bash", "-c"]
        CMD ["python -u train.py --fp16"]
        """)
    assert launch.value["tool"] == "python" and launch.value["script"] == "train.py"


def test_exec_form_is_not_expanded():
    [launch] = launches("""
        FROM python:3.11
        ENV NPROC=8
        ENTRYPOINT ["torchrun", "--nproc_per_node", "$NPROC", "train.py"]
        """)
    assert launch.value["nproc_per_node"] is None  # no shell: Docker passes "$NPROC" literally


def test_multi_stage_only_final_stage_counts():
    text = """
        FROM nvcr.io/nvidia/pytorch:24.05-py3 AS builder
        ENV NCCL_P2P_DISABLE=1
        CMD ["python", "build_ext.py"]

        FROM nvcr.io/nvidia/pytorch:24.05-py3 AS runtime
        ENV NCCL_DEBUG=WARN
        CMD ["python", "serve.py"]
        """
    assert env(text) == {"NCCL_DEBUG": "WARN"}
    assert [f.value["script"] for f in launches(text)] == ["serve.py"]


def test_stage_built_from_earlier_stage_inherits_env_and_command():
    text = """
        FROM nvcr.io/nvidia/pytorch:24.05-py3 AS base
        ENV FI_PROVIDER=efa
        ENTRYPOINT ["deepspeed", "--num_gpus", "8"]
        CMD ["train.py"]

        FROM base AS train
        ENV NCCL_DEBUG=INFO
        """
    assert env(text) == {"FI_PROVIDER": "efa", "NCCL_DEBUG": "INFO"}
    [launch] = launches(text)
    assert launch.value["tool"] == "deepspeed" and launch.value["script"] == "train.py"


def test_new_entrypoint_resets_inherited_cmd():
    text = """
        FROM python:3.11 AS base
        CMD ["train.py"]
        FROM base
        ENTRYPOINT ["python"]
        """
    assert launches(text) == []  # bare `python`: interactive interpreter


@pytest.mark.parametrize("text", [
    'FROM python:3.11\nCMD ["python", "-c", "print(1)"]\n',
    'FROM python:3.11\nCMD ["bash"]\n',
    'FROM python:3.11\nCMD echo "python train.py"\n',
    'FROM python:3.11\nRUN python train.py\n',
    'FROM python:3.11\n# CMD ["python", "train.py"]\n',
    'FROM python:3.11\nCMD ["jupyter", "lab", "--ip=0.0.0.0"]\n',
    'FROM python:3.11\nCMD ["bash", "-l"]\n',
])
def test_not_launches(text):
    assert launches(text) == []


@pytest.mark.parametrize("text,script,args", [
    ('FROM python:3.11\nENTRYPOINT ["./entrypoint.sh"]\n', "./entrypoint.sh", []),
    ('FROM python:3.11\nCMD ["bash", "train.sh"]\n', "train.sh", []),
    ('FROM python:3.11\nCMD ["/bin/bash", "-e", "scripts/train.sh", "--nodes", "2"]\n', "scripts/train.sh",
     ["--nodes", "2"]),
    ('FROM python:3.11\nENTRYPOINT ["sh"]\nCMD ["run.sh"]\n', "run.sh", []),
    ("FROM python:3.11\nCMD bash run_train.sh\n", "run_train.sh", []),
])
def test_shell_file_commands_are_launches_of_that_file(text, script, args):
    [launch] = launches(text)
    assert launch.value["tool"] == "shell" and launch.value["script"] == script and launch.value["args"] == args


def test_escape_directive():
    text = "# escape=`\nFROM mcr.microsoft.com/windows\nENV NCCL_DEBUG=INFO `\n    FI_PROVIDER=efa\n"
    assert env(text) == {"NCCL_DEBUG": "INFO", "FI_PROVIDER": "efa"}


@pytest.mark.parametrize("text", [
    "", "FROM", "ENV", "ENV =", "CMD [", 'CMD ["unterminated', "ENTRYPOINT [1, 2]", "ARG", "FROM x\nENV A=\"b\n",
    "FROM x\nCMD \\\n", "FROM x AS\nCMD []", "FROM x\nENV ${A}=1\n", "garbage line\n\tmore",
])
def test_malformed_never_raises(text):
    read_dockerfile(text, "Dockerfile")


def test_binary_raises_read_error():
    with pytest.raises(ReadError):
        read_dockerfile("FROM x\x00", "Dockerfile")


def test_shell_instruction_is_read_not_dispatched_to_a_helper():
    text = 'FROM ubuntu\nSHELL ["/bin/bash", "-c"]\nENV NCCL_DEBUG=INFO\nCMD torchrun --nproc_per_node 8 train.py\n'
    [launch] = launches(text)
    assert launch.value["tool"] == "torchrun" and env(text) == {"NCCL_DEBUG": "INFO"}
