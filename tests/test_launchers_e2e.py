"""Launchers real repositories use, end to end: small repositories scanned with the
real readers and linker (and the CLI for `gpulint workloads`).

Some cases need the linker to follow a launch of a shell file or a DVC pipeline
to the launches inside it (the reader says "this runs that file").
"""
from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli
from gpulint.testing import scan_tree, write_tree

TRAIN = """\
import torch

model = torch.nn.Linear(1024, 1024).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(10):
    loss = model(torch.randn(32, 1024).cuda()).pow(2).mean()
    loss.backward()
    opt.step()
torch.save(model.state_dict(), "/opt/ml/checkpoints/model.pt")
"""

def workloads(tmp_path: Path, files: dict[str, str]) -> dict:
    write_tree(tmp_path, files)
    _, wls = scan_tree(tmp_path)
    return {w.entrypoint: w for w in wls}


def tf_instance(label: str, itype: str, body: str = "") -> str:
    return f'resource "aws_instance" "{label}" {{\n  ami = "ami-0123456789abcdef0"\n  instance_type = "{itype}"\n{body}}}\n'


# a second GPU instance: repo-level pairing cannot decide, only a launcher link can
EVAL_BOX = tf_instance("eval", "g5.xlarge")


def test_terraform_user_data_heredoc_links_its_compute(tmp_path):
    user_data = '  user_data = <<-EOF\n    #!/bin/bash\n    cd /opt/app\n    torchrun --nproc_per_node 8 train.py\n  EOF\n'
    wls = workloads(tmp_path, {"train.py": TRAIN,
                               "infra/main.tf": tf_instance("trainer", "p4d.24xlarge", user_data) + EVAL_BOX})
    wl = wls["train.py"]
    assert wl.compute is not None and wl.compute.id == "infra/main.tf#aws_instance.trainer"
    assert any("holds the launcher" in r for r in wl.reasons)
    assert [l.value["tool"] for l in wl.launchers] == ["torchrun"]


def test_terraform_user_data_file_links_the_only_compute(tmp_path):
    wls = workloads(tmp_path, {
        "train.py": TRAIN,
        "infra/main.tf": tf_instance("trainer", "p4d.24xlarge", '  user_data = file("${path.module}/boot.sh")\n'),
        "infra/boot.sh": "#!/bin/bash\ncd /opt/app\ntorchrun --nproc_per_node 8 train.py\n",
    })
    assert wls["train.py"].compute.id == "infra/main.tf#aws_instance.trainer"


def test_terraform_user_data_file_links_through_the_shell_file(tmp_path):
    wls = workloads(tmp_path, {
        "train.py": TRAIN,
        "infra/main.tf": tf_instance("trainer", "p4d.24xlarge", '  user_data = file("${path.module}/boot.sh")\n')
        + EVAL_BOX,
        "infra/boot.sh": "#!/bin/bash\ncd /opt/app\ntorchrun --nproc_per_node 8 train.py\n",
    })
    assert wls["train.py"].compute.id == "infra/main.tf#aws_instance.trainer"


K8S_BASH = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  template:
    spec:
      containers:
        - name: trainer
          image: acme/trainer
          command: ["bash", "{script}"]
          resources:
            limits:
              nvidia.com/gpu: 8
"""


def test_kubernetes_container_running_a_shell_file(tmp_path):
    wls = workloads(tmp_path, {
        "train.py": TRAIN,
        "run.sh": "torchrun --nproc_per_node 8 train.py\n",
        "k8s/train.yaml": K8S_BASH.format(name="train", script="run.sh"),
        "k8s/other.yaml": K8S_BASH.format(name="other", script="other.sh"),
    })
    assert wls["train.py"].compute.id == "k8s/train.yaml#Job/train"


def test_shell_default_names_the_script_and_sbatch_compute(tmp_path):
    wls = workloads(tmp_path, {
        "src/train.py": TRAIN,
        "scripts/job.sbatch": '#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8\n'
                              ': "${TRAIN_SCRIPT:=../src/train.py}"\n'
                              'srun torchrun --nnodes 2 --nproc_per_node 8 "$TRAIN_SCRIPT"\n',
    })
    wl = wls["src/train.py"]
    assert [l.loc.path for l in wl.launchers] == ["scripts/job.sbatch"]
    assert wl.launchers[0].attrs["overridable"] == {"script": "TRAIN_SCRIPT"}
    assert wl.compute is not None and wl.compute.id == "scripts/job.sbatch#slurm"


def test_script_folder_launcher_links_the_script_next_to_it(tmp_path):
    wls = workloads(tmp_path, {
        "scripts/train.py": TRAIN,
        "scripts/launch.sh": 'HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)\n'
                             'TORCHRUN_ARGS=(--nproc_per_node 8 --nnodes 1)\n'
                             'torchrun "${TORCHRUN_ARGS[@]}" "$HERE/train.py"\n',
    })
    [launch] = wls["scripts/train.py"].launchers
    assert launch.value["nproc_per_node"] == 8 and launch.attrs["relative_to"] == "launcher"


def test_dvc_stage_links_its_script(tmp_path):
    wls = workloads(tmp_path, {
        "src/train.py": TRAIN,
        "dvc.yaml": "stages:\n  train:\n    wdir: src\n    cmd: torchrun --nproc_per_node 4 train.py\n",
    })
    [launch] = wls["src/train.py"].launchers
    assert launch.loc.path == "dvc.yaml" and launch.attrs["stage"] == "train"


def test_skypilot_dvc_exp_run_links_the_task_compute(tmp_path):
    wls = workloads(tmp_path, {
        "src/train.py": TRAIN,
        "dvc.yaml": "stages:\n  train:\n    cmd: python src/train.py\n",
        "sky.yaml": "resources:\n  accelerators: A100:8\n  use_spot: true\nrun: |\n  dvc exp run train\n",
        "infra/main.tf": tf_instance("spare", "p4d.24xlarge"),
    })
    assert wls["src/train.py"].compute.id == "sky.yaml#task"


def test_sagemaker_model_trainer_links_its_entry_script(tmp_path):
    wls = workloads(tmp_path, {
        "src/train.py": TRAIN,
        "launch.py": "from sagemaker.train import ModelTrainer\n"
                     "from sagemaker.train.configs import Compute, SourceCode\n"
                     "trainer = ModelTrainer(training_image='img',\n"
                     "    source_code=SourceCode(source_dir='src', entry_script='train.py'),\n"
                     "    compute=Compute(instance_type='ml.p4d.24xlarge', instance_count=2))\n"
                     "trainer.train()\n",
    })
    wl = wls["src/train.py"]
    assert wl.compute is not None and wl.compute.id == "launch.py#ModelTrainer@trainer"
    assert wl.resolution.compute.nodes == 2


def test_trainjob_links_its_script(tmp_path):
    job = ("apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata:\n  name: ft\nspec:\n  trainer:\n"
           "    numNodes: 2\n    command: [torchrun, --nproc_per_node=8, /workspace/train.py]\n"
           "    resourcesPerNode:\n      limits:\n        nvidia.com/gpu: 8\n")
    wls = workloads(tmp_path, {"train.py": TRAIN, "k8s/trainjob.yaml": job, "infra/main.tf": EVAL_BOX})
    assert wls["train.py"].compute.id == "k8s/trainjob.yaml#TrainJob/ft"


def test_cli_workloads_says_which_values_are_overridable_defaults(tmp_path):
    write_tree(tmp_path, {"train.py": TRAIN,
                          "run.sh": 'torchrun --nnodes "${NNODES:-2}" "${ENTRY:-train.py}"\n'})
    proc = run_cli("workloads", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "defaults the caller's environment may override: script from $ENTRY, --nnodes from $NNODES" in proc.stdout
    proc = run_cli("workloads", tmp_path, "--format", "json")
    [wl] = json.loads(proc.stdout)["workloads"]
    assert wl["launchers"][0]["attrs"]["overridable"] == {"script": "ENTRY", "--nnodes": "NNODES"}


def test_sbatch_gpu_total_prices_the_job_per_gpu_hour(tmp_path):
    # `--gpus=h100:8` (sbatch's job total) on one node: 8 H100s per node, priced at the catalogue's H100 rate.
    wls = workloads(tmp_path, {
        "src/train.py": TRAIN,
        "jobs/train.sbatch": "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gpus=h100:8\n"
                             "torchrun --nproc_per_node $SLURM_GPUS_ON_NODE ../src/train.py\n",
    })
    wl = wls["src/train.py"]
    assert wl.launchers[0].value["nproc_per_node"] == 8
    rc = wl.resolution.compute
    assert rc.gpus_per_node == 8 and rc.gpu_hour is not None and rc.gpu_hour.gpu_model.startswith("H100")
    assert rc.usd_per_hour and rc.usd_per_hour > 8  # eight GPUs at a per-GPU list rate


def test_sbatch_gpu_total_over_nodes_of_unknown_split_stays_unpriced(tmp_path):
    wls = workloads(tmp_path, {
        "src/train.py": TRAIN,
        "jobs/train.sbatch": "#!/bin/bash\n#SBATCH --nodes=3\n#SBATCH --gpus=h100:8\nsrun python ../src/train.py\n",
    })
    rc = wls["src/train.py"].resolution.compute
    assert rc.gpus_per_node is None and rc.usd_per_hour is None
