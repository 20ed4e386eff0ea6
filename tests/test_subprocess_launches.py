"""Launcher commands a Python file runs (gpulint.read.python.subprocesses): ``subprocess.run([...])`` and
``os.system("...")`` are read as command lines; a Python file that only launches is followed like a shell launcher,
so a SageMaker entry script that starts torchrun puts the training script it starts on the job's machines."""
from __future__ import annotations

from helpers import AT, codes, facts_of_kind, only_workload
from gpulint.read.parsers import parse_python
from gpulint.read.python.facts import python_facts
from gpulint.testing import scan_files

TRAIN = """\
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader

dist.init_process_group("nccl")
model = DDP(torch.nn.Linear(4096, 4096).cuda())
opt = torch.optim.AdamW(model.parameters())
loader = DataLoader(torch.load("/opt/ml/input/data/train/x.pt"), batch_size=8, num_workers=4, pin_memory=True)
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
"""

ENTRY = """\
import json
import os
import subprocess

hosts = json.loads(os.environ["SM_HOSTS"])
cmd = ["torchrun", "--nnodes", str(len(hosts)), "--nproc_per_node", "{procs}", "train.py"]
subprocess.run(cmd, check=True)
"""

SUBMIT = """\
from sagemaker.pytorch import PyTorch

est = PyTorch(entry_point="launch_ddp.py", source_dir=".", role="r", instance_type="ml.p4d.24xlarge", instance_count=1,
              framework_version="2.1", py_version="py310")
est.fit()
"""


def _job(procs: int = 8) -> dict[str, str]:
    return {"train.py": TRAIN, "launch_ddp.py": ENTRY.format(procs=procs), "submit.py": SUBMIT}


def _launches(text: str, path: str = "run.py") -> list[tuple]:
    return [(f.value["tool"], f.value["script"], f.value["nproc_per_node"])
            for f in facts_of_kind(python_facts(parse_python(text, path)), "launch")]


def test_an_entry_script_that_starts_torchrun_runs_the_training_script_on_the_job_s_machines():
    wl = only_workload(scan_files(_job()))
    assert wl["entrypoint"] == "train.py" and wl["compute"]["instance"] == "p4d.24xlarge"
    assert [(l["value"]["tool"], l["value"]["nproc_per_node"]) for l in wl["launchers"]] == [("torchrun", 8)]
    assert codes(_job(), fields=AT, sort=True) == [("AMP001", "train.py", 12), ("AMP005", "train.py", 12)]


def test_fewer_processes_than_the_instance_s_gpus_through_the_entry_script_is_mem004():
    assert codes(_job(procs=2), "MEM004", fields=AT) == [("MEM004", "launch_ddp.py", 7)]


def test_command_forms():
    assert _launches('import subprocess\nsubprocess.check_call(["accelerate", "launch", "--num_processes", "4", "train.py"])\n') \
        == [("accelerate", "train.py", None)]
    assert _launches('import os\nos.system("deepspeed --num_gpus 8 train.py --deepspeed ds.json")\n') == [("deepspeed", "train.py", 8)]
    assert _launches('import subprocess\nsubprocess.run("torchrun --nproc_per_node 4 train.py", shell=True)\n') == [("torchrun", "train.py", 4)]
    # an f-string part not known here is a word decided at run time, the rest is read as written
    assert _launches('import subprocess\ndef go(n):\n    subprocess.run(f"torchrun --nproc_per_node {n} train.py", shell=True)\n') \
        == [("torchrun", "train.py", None)]


def test_commands_that_launch_nothing_are_no_launch():
    assert _launches('import subprocess\nsubprocess.run(["pip", "install", "-r", "requirements.txt"])\n'
                     'subprocess.run(["nvidia-smi"])\nsubprocess.run("ls -l", shell=True)\n') == []
    # a string without shell=True is one program name, not a command line
    assert _launches('import subprocess\nsubprocess.run("torchrun train.py")\n') == []


def test_a_script_that_trains_and_then_runs_an_evaluation_is_not_a_launcher():
    files = {"train.py": TRAIN + 'import subprocess\nsubprocess.run(["python", "evaluate.py"])\n',
             "evaluate.py": "import torch\nprint(torch.load('m.pt'))\n",
             "submit.py": SUBMIT.replace("launch_ddp.py", "train.py")}
    by_name = {w["name"]: w for w in scan_files(files).workloads}
    assert by_name["train.py"]["compute"]["instance"] == "p4d.24xlarge"
