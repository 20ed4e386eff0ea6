"""Linking facts into workloads (gpulint.link.workloads.link) and resolving them
(gpulint.resolve.resolver) on small repositories: explicit launchers first, then the
``[[tool.gpulint.workloads]]`` table, then unambiguous repo-level pairing;
module launches, container paths, CPU instances, Terraform variables.

Trees are written with gpulint.testing.write_tree and scanned with scan_tree,
so every case goes through the real readers; a few cases call link() and
tf_value() directly on hand-made facts.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from gpulint.pricing.catalogue import Catalogue
from gpulint.core.model import Fact, Location
from gpulint.resolve.tfvalues import TerraformValues
from gpulint.testing import scan_tree, write_tree
from gpulint.link.workloads import Compute, Repo, link, looks_like_gpu_instance
from conftest import assert_amp_or_tutorial
from gpulint.testing import scan_files
from samples import FP32_TRAIN, IMAGE, MAIN_LOOP, P4D_TORCHRUN, PYTORCHJOB_IMAGENET, SM_RESNET_LOOP, TRIAL

TRAIN = """\
import torch

model = torch.nn.Linear(1024, 1024).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(100):
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(torch.randn(32, 1024).cuda()).pow(2).mean()
    loss.backward()
    opt.step()
    opt.zero_grad()
torch.save(model.state_dict(), "model.pt")
"""

ACCEL_TRAIN = """\
import torch
from accelerate import Accelerator

accelerator = Accelerator()
model = torch.nn.Linear(1024, 1024)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, opt = accelerator.prepare(model, opt)
for _ in range(100):
    loss = model(torch.randn(32, 1024, device=accelerator.device)).pow(2).mean()
    accelerator.backward(loss)
    opt.step()
    opt.zero_grad()
"""

ACCEL_CFG = """\
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
mixed_precision: {mp}
num_machines: 1
num_processes: 8
"""


def tf_instance(label: str, itype: str, extra: str = "") -> str:
    return f'resource "aws_instance" "{label}" {{\n  ami           = "ami-0123456789abcdef0"\n  instance_type = {itype}\n{extra}}}\n'


P4D = tf_instance("gpu", '"p4d.24xlarge"')


def scan(tmp_path: Path, files: dict[str, str], config: str = ""):
    write_tree(tmp_path, files)
    if config:
        (tmp_path / ".gpulint.toml").write_text(config, encoding="utf-8")
    result, wls = scan_tree(tmp_path)
    return result, {w.entrypoint: w for w in wls}


def unit_price(instance: str, capacity: str = "on-demand") -> float:
    cat = Catalogue.load()
    return cat.price(cat.resolve(instance), capacity).usd_per_hour


# -- 1. explicit launchers first -----------------------------------------------------------
def test_launcher_compute_beats_repo_pairing(tmp_path):
    sky = ("name: run\nresources:\n  accelerators: A10G:1\n  cloud: aws\nnum_nodes: 1\n"
           "run: |\n  python train.py\n")
    _, wls = scan(tmp_path, {"train.py": TRAIN, "sky.yaml": sky, "infra/main.tf": P4D})
    wl = wls["train.py"]
    assert wl.compute.id == "sky.yaml#run"
    assert "compute: sky.yaml#run holds the launcher" in wl.reasons
    assert not any(r.startswith("repo:") for r in wl.reasons)  # the Terraform p4d is not paired over it
    assert wl.resolution.compute.to_json()["gpu_model"].startswith("A10G")


def test_repo_pairing_only_for_the_workload_left_without_compute(tmp_path):
    sbatch = "#!/bin/bash\n#SBATCH --nodes=2\n#SBATCH --gres=gpu:8\nsrun torchrun --nnodes=2 --nproc_per_node=8 a.py\n"
    _, wls = scan(tmp_path, {"a.py": TRAIN, "b.py": TRAIN, "job.sbatch": sbatch, "infra/main.tf": P4D})
    assert wls["a.py"].compute.id == "job.sbatch#slurm"
    assert wls["b.py"].compute.id == "infra/main.tf#aws_instance.gpu"
    assert ("repo: infra/main.tf#aws_instance.gpu is the only GPU compute target and b.py the only training "
            "workload without one") in wls["b.py"].reasons


def test_two_scripts_one_target_is_ambiguous(tmp_path):
    _, wls = scan(tmp_path, {"a.py": TRAIN, "b.py": TRAIN, "infra/main.tf": P4D})
    for wl in wls.values():
        assert wl.compute is None
        assert any(u.startswith("compute: ambiguous: 1 GPU compute targets (infra/main.tf#aws_instance.gpu) and 2 training workloads")
                   for u in wl.unknown)


def test_link_on_hand_made_facts():
    loc = Location("train.py", 5)
    tf = Location("infra/main.tf", 1)
    repo = Repo(
        facts={
            "train.py": [Fact("trains", {"via": "loop"}, loc), Fact("script", {"via": "main_guard"}, Location("train.py", 1))],
            "infra/main.tf": [
                Fact("compute.target", {"source": "terraform", "provider": "aws", "resource": "aws_instance.t", "role": None},
                     tf, target="aws_instance.t"),
                Fact("compute.instance_type", "g5.48xlarge", Location("infra/main.tf", 3), key="instance_type", target="aws_instance.t"),
            ],
        },
        kinds={"train.py": "python", "infra/main.tf": "terraform"},
    )
    (wl,) = link(repo)
    assert wl.entrypoint == "train.py" and wl.trains
    # without the 'script' fact the same training code is library code: nothing runs it, no workload
    library = Repo(facts={**repo.facts, "train.py": repo.facts["train.py"][:1]}, kinds=repo.kinds)
    assert link(library).workloads == []
    assert wl.compute.id == "infra/main.tf#aws_instance.t"
    assert wl.unknown == ["launcher: nothing in the repository starts this script"]
    # the same repository pinned by a table row keeps the pin as the reason
    (wl,) = link(repo, [{"entrypoint": "train.py", "compute": "infra/main.tf#aws_instance.t", "name": "exp"}])
    assert wl.name == "exp"
    assert wl.reasons == ["config: workloads table pins compute infra/main.tf#aws_instance.t"]


# -- 2. the [[tool.gpulint.workloads]] table ------------------------------------------------------
def test_table_pins_compute_among_several(tmp_path):
    files = {"train.py": TRAIN, "infra/main.tf": P4D + tf_instance("small", '"g5.xlarge"')}
    cfg = '[[workloads]]\nentrypoint = "train.py"\ncompute = "infra/main.tf#aws_instance.small"\n'
    _, wls = scan(tmp_path, files, cfg)
    wl = wls["train.py"]
    assert wl.compute.id == "infra/main.tf#aws_instance.small"
    assert wl.reasons == ["config: workloads table pins compute infra/main.tf#aws_instance.small"]
    assert wl.resolution.compute.to_json()["instance"] == "g5.xlarge"
    assert not any(u.startswith("compute:") for u in wl.unknown)


def test_table_pins_compute_in_pyproject(tmp_path):
    files = {"train.py": TRAIN, "infra/main.tf": P4D + tf_instance("small", '"g5.xlarge"'),
             "pyproject.toml": ('[project]\nname = "x"\n\n[tool.gpulint]\n\n[[tool.gpulint.workloads]]\n'
                                'entrypoint = "train.py"\ncompute = "infra/main.tf#aws_instance.gpu"\n')}
    _, wls = scan(tmp_path, files)
    assert wls["train.py"].compute.id == "infra/main.tf#aws_instance.gpu"


def test_table_pins_instance_capacity_nodes_and_model(tmp_path):
    cfg = ('[[workloads]]\nentrypoint = "train.py"\nname = "llama-sft"\ninstance = "p5.48xlarge"\n'
           'capacity = "spot"\nnodes = 2\nmodel = "meta-llama/Llama-2-70b-hf"\n')
    _, wls = scan(tmp_path, {"train.py": TRAIN}, cfg)
    wl = wls["train.py"]
    assert wl.name == "llama-sft"
    c = wl.resolution.compute.to_json()
    assert (c["instance"], c["capacity"], c["nodes"], c["gpus_per_node"]) == ("p5.48xlarge", "spot", 2, 8)
    assert c["instance_fact"] == "[tool.gpulint] workloads table"
    assert wl.reasons == ["config: workloads table pins instance p5.48xlarge"]
    assert not any(u.startswith(("compute:", "capacity:", "nodes:")) for u in wl.unknown)
    assert c["unit_usd_per_hour"] == pytest.approx(unit_price("p5.48xlarge", "spot"))
    assert c["usd_per_hour"] == pytest.approx(round(unit_price("p5.48xlarge", "spot") * 2, 4))
    assert c["region"] and c["as_of"]
    m = wl.resolution.model.to_json()
    assert m["name"] == "meta-llama/Llama-2-70b-hf" and m["params"] == 68_976_648_192


def test_table_pins_params(tmp_path):
    cfg = '[[workloads]]\nentrypoint = "train.py"\nmodel = "acme/secret-model"\nparams = 3.5e9\n'
    _, wls = scan(tmp_path, {"train.py": TRAIN}, cfg)
    assert wls["train.py"].resolution.model.to_json() == {"params": 3_500_000_000, "evidence": "[tool.gpulint] workloads table params",
                                                 "name": "acme/secret-model"}


def test_table_makes_a_workload_of_a_script_that_does_not_train(tmp_path):
    serve = "import torch\nmodel = torch.load('model.pt').cuda().eval()\n"
    cfg = '[[workloads]]\nentrypoint = "serve.py"\ninstance = "g5.xlarge"\n'
    _, wls = scan(tmp_path, {"serve.py": serve}, cfg)
    assert list(wls) == ["serve.py"]
    assert wls["serve.py"].resolution.compute.to_json()["instance"] == "g5.xlarge"


def test_table_row_for_a_missing_file_is_ignored(tmp_path):
    cfg = '[[workloads]]\nentrypoint = "nope.py"\ninstance = "g5.xlarge"\n'
    result, wls = scan(tmp_path, {"train.py": TRAIN}, cfg)
    assert list(wls) == ["train.py"] and wls["train.py"].overrides == {}


def test_table_nodes_and_capacity_reprice_linked_compute(tmp_path):
    cfg = '[[workloads]]\nentrypoint = "train.py"\nnodes = 4\ncapacity = "spot"\n'
    _, wls = scan(tmp_path, {"train.py": TRAIN, "infra/main.tf": P4D}, cfg)
    c = wls["train.py"].resolution.compute.to_json()
    assert (c["nodes"], c["capacity"]) == (4, "spot")
    assert c["unit_usd_per_hour"] == pytest.approx(unit_price("p4d.24xlarge", "spot"))
    assert c["usd_per_hour"] == pytest.approx(round(unit_price("p4d.24xlarge", "spot") * 4, 4))


def test_table_capacity_pin_cites_the_table(tmp_path):
    cfg = '[[workloads]]\nentrypoint = "train.py"\ncapacity = "spot"\n'
    _, wls = scan(tmp_path, {"train.py": TRAIN, "infra/main.tf": P4D}, cfg)
    c = wls["train.py"].resolution.compute.to_json()
    assert c["capacity"] == "spot"
    assert c["capacity_fact"] == "[tool.gpulint] workloads table"


def test_table_instance_pin_is_a_link_not_an_unknown(tmp_path):
    _, wls = scan(tmp_path, {"train.py": TRAIN}, '[[workloads]]\nentrypoint = "train.py"\ninstance = "g5.xlarge"\n')
    wl = wls["train.py"]
    assert not any(u.startswith("compute:") for u in wl.unknown)
    assert wl.reasons == ["config: workloads table pins instance g5.xlarge"]
    assert wl.resolution.compute.to_json()["instance_fact"] == "[tool.gpulint] workloads table"


def test_table_model_evidence_cites_the_config(tmp_path):
    cfg = '[[workloads]]\nentrypoint = "train.py"\nmodel = "meta-llama/Llama-2-70b-hf"\n'
    _, wls = scan(tmp_path, {"train.py": TRAIN}, cfg)
    evidence = wls["train.py"].resolution.model.to_json()["evidence"]
    assert "train.py:" not in evidence
    assert evidence.endswith(" ([tool.gpulint] workloads table model)")


# -- 3. repo-level pairing: accelerate config --------------------------------------------------------
def test_only_accelerate_config_is_paired(tmp_path):
    _, wls = scan(tmp_path, {"train.py": ACCEL_TRAIN, "configs/accelerate.yaml": ACCEL_CFG.format(mp="bf16")})
    wl = wls["train.py"]
    assert wl.configs == ["configs/accelerate.yaml"]
    assert "config: configs/accelerate.yaml (repo: configs/accelerate.yaml is the only accelerate config)" in wl.reasons
    assert wl.resolution.precision.to_json()["mixed"] is True and wl.resolution.precision.to_json()["dtypes"] == ["bf16"]


def test_two_accelerate_configs_are_not_guessed(tmp_path):
    _, wls = scan(tmp_path, {"train.py": ACCEL_TRAIN, "configs/a.yaml": ACCEL_CFG.format(mp="bf16"),
                             "configs/b.yaml": ACCEL_CFG.format(mp="'no'")})
    wl = wls["train.py"]
    assert wl.configs == []
    assert wl.resolution.precision.to_json()["mixed"] is None  # undecided, not guessed


def test_launcher_config_file_beats_the_only_config_rule(tmp_path):
    files = {"train.py": ACCEL_TRAIN, "configs/a.yaml": ACCEL_CFG.format(mp="bf16"),
             "configs/b.yaml": ACCEL_CFG.format(mp="fp16"),
             "run.sh": "#!/bin/bash\naccelerate launch --config_file configs/b.yaml train.py\n"}
    _, wls = scan(tmp_path, files)
    wl = wls["train.py"]
    assert wl.configs == ["configs/b.yaml"]
    assert wl.resolution.precision.to_json()["dtypes"] == ["fp16"]


def test_accelerate_config_not_paired_with_plain_torch_code(tmp_path):
    _, wls = scan(tmp_path, {"train.py": TRAIN, "configs/accelerate.yaml": ACCEL_CFG.format(mp="bf16")})
    assert wls["train.py"].configs == []


# -- 4. module launches ----------------------------------------------------------------------------
@pytest.mark.parametrize("cmd", [
    "python -m pkg.train --lr 3e-4",
    "torchrun --nproc_per_node=8 -m pkg.train",
    "python -m torch.distributed.run --nproc_per_node=8 -m pkg.train",
])
def test_module_launch(tmp_path, cmd):
    files = {"pkg/__init__.py": "", "pkg/train.py": TRAIN, "pkg/model.py": "import torch\n", "scripts/run.sh": f"#!/bin/bash\n{cmd}\n"}
    _, wls = scan(tmp_path, files)
    assert list(wls) == ["pkg/train.py"]
    wl = wls["pkg/train.py"]
    assert [l.value.get("module") for l in wl.launchers] == ["pkg.train"]
    assert wl.reasons[0] == "launcher: scripts/run.sh:2 runs pkg/train.py"


def test_module_launch_of_a_package_runs_its_main(tmp_path):
    files = {"trainer/__init__.py": "", "trainer/__main__.py": TRAIN, "run.sh": "#!/bin/bash\npython -m trainer\n"}
    _, wls = scan(tmp_path, files)
    assert list(wls) == ["trainer/__main__.py"]
    assert wls["trainer/__main__.py"].reasons == ["launcher: run.sh:2 runs trainer/__main__.py"]


def test_module_launch_of_a_missing_module_links_nothing(tmp_path):
    _, wls = scan(tmp_path, {"train.py": TRAIN, "run.sh": "#!/bin/bash\npython -m elsewhere.train\n"})
    assert wls["train.py"].launchers == []


# -- 5. container paths ------------------------------------------------------------------------------
DOCKERFILE = 'FROM pytorch/pytorch:2.3.1-cuda12.1-cudnn8-runtime\nWORKDIR /workspace\nCOPY . .\nCMD ["python", "{path}"]\n'


@pytest.mark.parametrize("path", ["/workspace/src/train.py", "/app/src/train.py", "/opt/ml/code/src/train.py", "./src/train.py"])
def test_container_path_resolves_to_repo_file(tmp_path, path):
    _, wls = scan(tmp_path, {"src/train.py": TRAIN, "Dockerfile": DOCKERFILE.format(path=path)})
    wl = wls["src/train.py"]
    assert wl.reasons[0] == "launcher: Dockerfile:4 runs src/train.py"


def test_container_path_in_a_kubernetes_job(tmp_path):
    job = """\
apiVersion: batch/v1
kind: Job
metadata:
  name: train
spec:
  template:
    spec:
      nodeSelector:
        node.kubernetes.io/instance-type: g5.12xlarge
      containers:
        - name: train
          image: acme/train:1
          command: ["torchrun", "--nproc_per_node=4", "/workspace/project/src/train.py"]
          resources:
            limits:
              nvidia.com/gpu: 4
      restartPolicy: Never
"""
    _, wls = scan(tmp_path, {"src/train.py": TRAIN, "k8s/job.yaml": job})
    wl = wls["src/train.py"]
    assert wl.compute.id == "k8s/job.yaml#Job/train"
    assert wl.resolution.compute.to_json()["instance"] == "g5.12xlarge"


def test_container_path_matching_two_files_is_not_guessed(tmp_path):
    files = {"a/train.py": TRAIN, "b/train.py": TRAIN, "Dockerfile": DOCKERFILE.format(path="/opt/project/train.py")}
    _, wls = scan(tmp_path, files)
    assert all(not wl.launchers for wl in wls.values())


# -- 6. CPU instances never pair --------------------------------------------------------------------
def test_cpu_only_terraform_instance_does_not_pair(tmp_path):
    _, wls = scan(tmp_path, {"train.py": TRAIN, "infra/main.tf": tf_instance("web", '"m5.xlarge"')})
    wl = wls["train.py"]
    assert wl.compute is None
    assert "compute: no launcher, infrastructure file or config names the instance this runs on" in wl.unknown
    assert not any("ambiguous" in u for u in wl.unknown)


def test_cpu_instance_next_to_a_gpu_one_is_not_counted(tmp_path):
    tf = tf_instance("web", '"m5.xlarge"') + tf_instance("bastion", '"t3.micro"') + P4D
    _, wls = scan(tmp_path, {"train.py": TRAIN, "infra/main.tf": tf})
    assert wls["train.py"].compute.id == "infra/main.tf#aws_instance.gpu"


@pytest.mark.parametrize("name,gpu", [
    ("p4d.24xlarge", True), ("ml.p4d.24xlarge", True), ("g5.xlarge", True), ("trn1.32xlarge", True),
    ("a3-highgpu-8g", True), ("g2-standard-8", True), ("Standard_ND96asr_v4", True), ("Standard_NC24ads_A100_v4", True),
    ("m5.xlarge", False), ("t3.micro", False), ("c6i.32xlarge", False), ("n2-standard-8", False),
    ("e2-standard-4", False), ("Standard_D4s_v5", False),
])
def test_gpu_instance_families(name, gpu):
    assert looks_like_gpu_instance(name) is gpu


# -- 7. Terraform variable references ---------------------------------------------------------------
def test_var_ref_resolved_from_variables_tf_in_the_same_folder(tmp_path):
    files = {
        "train.py": TRAIN,
        "infra/main.tf": tf_instance("t", "var.itype", "  count = var.n\n\n  instance_market_options {\n    market_type = var.market\n  }\n"),
        "infra/variables.tf": ('variable "itype" {\n  default = "g5.48xlarge"\n}\n\nvariable "n" {\n  default = 3\n}\n\n'
                               'variable "market" {\n  default = "spot"\n}\n'),
    }
    _, wls = scan(tmp_path, files)
    c = wls["train.py"].resolution.compute.to_json()
    assert c["instance"] == "g5.48xlarge" and c["instance_fact"] == "infra/main.tf:3"
    assert c["nodes"] == 3
    assert c["capacity"] == "spot"
    assert c["usd_per_hour"] == pytest.approx(round(unit_price("g5.48xlarge", "spot") * 3, 4))


def test_local_ref_resolved(tmp_path):
    files = {"train.py": TRAIN,
             "infra/main.tf": 'locals {\n  gpu_type = "p5.48xlarge"\n}\n\n' + tf_instance("t", "local.gpu_type")}
    _, wls = scan(tmp_path, files)
    assert wls["train.py"].resolution.compute.to_json()["instance"] == "p5.48xlarge"


@pytest.mark.parametrize("variables_path,variables", [
    ("other/variables.tf", 'variable "itype" {\n  default = "p4d.24xlarge"\n}\n'),  # another module
    ("infra/variables.tf", 'variable "itype" {\n  type = string\n}\n'),  # no default: set in tfvars
])
def test_var_ref_without_a_default_in_its_module_stays_unknown(tmp_path, variables_path, variables):
    files = {"train.py": TRAIN, "infra/main.tf": tf_instance("t", "var.itype"), variables_path: variables}
    _, wls = scan(tmp_path, files)
    wl = wls["train.py"]
    assert wl.compute.id == "infra/main.tf#aws_instance.t"  # a ref may still be a GPU: paired, but unknown
    c = wl.resolution.compute.to_json()
    assert c.get("instance") is None and c.get("usd_per_hour") is None
    assert any(u.startswith("instance:") for u in wl.unknown)


def test_unresolved_var_ref_is_named_in_unknown(tmp_path):
    files = {"train.py": TRAIN, "infra/main.tf": tf_instance("t", "var.itype")}
    _, wls = scan(tmp_path, files)
    assert "instance: the instance type (infra/main.tf:3): var.itype is not declared in the module infra" \
        in wls["train.py"].unknown


def test_tf_value_maps_and_passes_literals():
    tf = TerraformValues({"infra/v.tf": [Fact("tf.variable", {"name": "spot", "default": True, "has_default": True},
                                              Location("infra/v.tf", 1))]})
    mapped = Fact("compute.capacity", {"ref": "var.spot", "map": {"true": "spot", "false": "on-demand"}}, Location("infra/main.tf", 4))
    assert tf.value_of(mapped).value == "spot"
    assert tf.value_of(Fact("compute.instance_type", "p4d.24xlarge", Location("infra/main.tf", 3))).value == "p4d.24xlarge"
    missing = tf.value_of(Fact("compute.instance_type", {"ref": "var.missing"}, Location("infra/main.tf", 3)))
    assert missing.value is None and missing.why == "var.missing is not declared in the module infra"
    assert tf.value_of(None).value is None


# -- linker gaps found by the fixtures (unit-level) ---------------------------------------------------
def test_config_flag_with_equals_is_linked(tmp_path):
    files = {"train.py": TRAIN, "cfg/a.yaml": "lr: 0.001\n", "run.sh": "#!/bin/bash\npython train.py --config=cfg/a.yaml\n"}
    _, wls = scan(tmp_path, files)
    assert wls["train.py"].configs == ["cfg/a.yaml"]


def test_config_flag_with_space_is_linked(tmp_path):
    files = {"train.py": TRAIN, "cfg/a.yaml": "lr: 0.001\n", "run.sh": "#!/bin/bash\npython train.py --config cfg/a.yaml\n"}
    _, wls = scan(tmp_path, files)
    assert wls["train.py"].configs == ["cfg/a.yaml"]


def test_src_layout_import_is_a_code_file(tmp_path):
    files = {"src/pkg/__init__.py": "", "src/pkg/train.py": "from pkg.data import loader\n" + TRAIN, "src/pkg/data.py": "loader = None\n"}
    _, wls = scan(tmp_path, files)
    assert wls["src/pkg/train.py"].code_files == ["src/pkg/train.py", "src/pkg/data.py"]


def test_package_import_from_repo_root_is_a_code_file(tmp_path):
    files = {"pkg/__init__.py": "", "pkg/data.py": "loader = None\n", "train.py": "from pkg.data import loader\n" + TRAIN}
    _, wls = scan(tmp_path, files)
    assert list(wls) == ["train.py"]  # pkg/data.py is part of train.py, not a workload of its own
    assert wls["train.py"].code_files == ["train.py", "pkg/data.py"]


ENGINE = ("import torch\n\n\ndef train_one_epoch(model, loader, opt):\n    for x in loader:\n"
          "        model(x.cuda()).sum().backward()\n        opt.step()\n")


DATABRICKS = '''\
# Databricks notebook source
# MAGIC %md
# MAGIC ## Fine-tune

# COMMAND ----------

# MAGIC %pip install -r requirements.txt

# COMMAND ----------

num_gpus = 8

# COMMAND ----------

!deepspeed --num_gpus={num_gpus} \\
    --module training.trainer \\
    --bf16 {bf16}

# COMMAND ----------

# MAGIC %sh
# MAGIC nvidia-smi
# MAGIC deepspeed --num_gpus 8 --module training.trainer --bf16 {bf16}
'''


DB_TRAINER = '''\
import argparse
from transformers import Trainer, TrainingArguments
p = argparse.ArgumentParser()
p.add_argument("--bf16", default=False, action="store_true")
args = p.parse_args()
if __name__ == "__main__":
    Trainer(model=m, args=TrainingArguments(output_dir="o", bf16=args.bf16)).train()
'''


# -- one script name, two copies: the launcher's own tree decides ----------------------------------
FINETUNE_PY = ("import torch\nfrom transformers import Trainer, TrainingArguments, HfArgumentParser\n"
               "(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"
               "Trainer(model=model, args=args, train_dataset=ds).train()\n")


RUN = "#!/bin/bash\ncd $(dirname $0)/../..\ntorchrun --nproc_per_node 8 internvl/train/finetune.py --bf16 True --output_dir out\n"


# -- a manifest kept as an envsubst template is read like the manifest it becomes ---------------------
MPIJOB = """\
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: imagenet
spec:
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
            - name: launcher
              image: ${REGISTRY}/imagenet:latest
              command: ["mpirun", "-np", "2", "python", "/app/imagenet.py", "--arch=resnet18", "DATA"]
    Worker:
      replicas: 2
      template:
        spec:
          containers:
            - name: worker
              image: ${REGISTRY}/imagenet:latest
              resources:
                limits:
                  nvidia.com/gpu: 1
"""


IMAGENET = """\
import torch
import torchvision
from torchvision import datasets


def main(data):
    model = torchvision.models.resnet18().cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(datasets.ImageFolder(data), batch_size=256, num_workers=8, pin_memory=True)
    for x, y in loader:
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        loss.backward()
        opt.step()


if __name__ == "__main__":
    import sys
    main(sys.argv[-1])
"""


# -- a scheduler's job script named .slrm/.sub/.job is read by its shebang -----------------------------------
SLURM_JOB = """\
#!/bin/bash
#SBATCH --nodes=2
#SBATCH --gpus-per-node=8
#SBATCH --partition=gpu
srun python train.py
"""


EXPERIMENT = """\
name: imagenet-resnet50
hyperparameters:
  global_batch_size: 512
searcher:
  name: single
  metric: validation_loss
  max_length:
    epochs: 90
entrypoint: ENTRY
RESOURCES
"""


SBATCH_JOB = "#!/bin/bash\n#SBATCH --gres=gpu:8\npython job/train.py\n"


# -- imports ---------------------------------------------------------------------------------------------


def test_a_script_that_calls_a_modules_training_function_is_a_workload():
    main = ("import argparse\nimport torch\nfrom engine import train_one_epoch\n\n\ndef main():\n    model = Net().cuda()\n"
            "    for epoch in range(100):\n        train_one_epoch(model, loader, opt)\n\n\nif __name__ == '__main__':\n    main()\n")
    result = scan_files({"main_pretrain.py": main, "engine.py": ENGINE, "infra/main.tf": P4D_TORCHRUN})
    (w,) = [w for w in result.workloads if w["entrypoint"] == "main_pretrain.py"]
    assert w["role"] == "training" and any("calls train_one_epoch" in r for r in w["links"])
    assert [f.code for f in result.findings if f.code == "AMP001"] == ["AMP001"]
    evaluates = main.replace("from engine import train_one_epoch", "from engine import train_one_epoch, evaluate").replace(
        "train_one_epoch(model, loader, opt)", "evaluate(model, loader)")
    assert not [w for w in scan_files({"eval.py": evaluates, "engine.py": ENGINE}).workloads if w["entrypoint"] == "eval.py"]


def test_a_script_that_runs_a_repository_trainer_class_is_a_workload():
    trainer = ("import torch\n\n\nclass Trainer:\n    def __init__(self, model):\n        self.model = model\n\n"
               "    def run(self):\n        for x in self.loader:\n            self.model(x.cuda()).sum().backward()\n            self.opt.step()\n")
    script = ("import torch\nfrom mingpt.trainer import Trainer\n\nif __name__ == '__main__':\n    t = Trainer(Net())\n    t.run()\n")
    result = scan_files({"projects/chargpt/chargpt.py": script, "mingpt/__init__.py": "", "mingpt/trainer.py": trainer})
    assert [w["role"] for w in result.workloads if w["entrypoint"] == "projects/chargpt/chargpt.py"] == ["training"]


def test_a_thin_entry_script_that_names_no_framework_is_read_when_it_imports_training():
    trainer = ("import torch\n\n\nclass Trainer:\n    def run(self):\n        for x in self.loader:\n"
               "            self.model(x.cuda()).sum().backward()\n            self.opt.step()\n")
    thin = "from trainer import task\nfrom pkg.trainer import Trainer\n\nif __name__ == '__main__':\n    Trainer().run()\n"
    result = scan_files({"experiment.py": thin, "pkg/__init__.py": "", "pkg/trainer.py": trainer})
    assert [w["role"] for w in result.workloads if w["entrypoint"] == "experiment.py"] == ["training"]
    unrelated = "import json\n\nif __name__ == '__main__':\n    print(json.dumps({}))\n"
    result = scan_files({"report.py": unrelated, "pkg/__init__.py": "", "pkg/trainer.py": trainer})
    assert not [w for w in result.workloads if w["entrypoint"] == "report.py"]


def test_a_launched_thin_script_is_read_whole_so_its_imports_link_the_training():
    engine = ENGINE.replace("def train_one_epoch(model, loader, opt):", "def train(model=None, loader=None, opt=None):")
    thin = "from mylib.engine import train\n\nif __name__ == '__main__':\n    train()\n"
    result = scan_files({"tools/train_net.py": thin, "mylib/__init__.py": "", "mylib/engine.py": engine,
                         "run.sh": "torchrun --nproc_per_node 8 tools/train_net.py\n"})
    (w,) = [w for w in result.workloads if w["entrypoint"] == "tools/train_net.py"]
    assert w["role"] == "training" and "mylib/engine.py" in w["code_files"]


def test_a_module_between_the_entry_and_its_trainer_is_read_though_it_names_no_framework():
    """pipeline_parallel/utils.py holds one relative import and a factory, no ML word the text gate looks for: the
    chain entry -> utils -> engine (the backward and the step) still makes the entry a training workload."""
    files = {"train.py": "import torch\nfrom pp.utils import get_engine\n\nif __name__ == '__main__':\n"
                         "    engine = get_engine()\n    with torch.no_grad():\n        engine.evaluate()\n    engine.run()\n",
             "pp/__init__.py": "", "run.sh": "#!/bin/bash\npython train.py --steps 1000\n",
             "pp/utils.py": "from .engine import Engine\n\n\ndef get_engine():\n    return Engine()\n",
             "pp/engine.py": "import torch\n\n\nclass Engine:\n    def run(self):\n        for x in self.loader:\n"
                             "            self.model(x.cuda()).sum().backward()\n            self.opt.step()\n"}
    wl = next(w for w in scan_files(files).workloads if w["entrypoint"] == "train.py")
    assert wl["role"] == "training" and "pp/engine.py" in wl["code_files"]


# -- launchers -------------------------------------------------------------------------------------------


def test_a_databricks_notebook_source_is_read_as_cells_and_its_shell_launches():
    files = {"train_nb.py": DATABRICKS.replace("{bf16}", "true"), "training/__init__.py": "",
             "training/trainer.py": DB_TRAINER}
    result = scan_files(files)
    assert [f for f in result.findings if f.code == "SYS001"] == []
    wl = next(w for w in result.workloads if w["entrypoint"] == "training/trainer.py")
    assert sorted(l["where"] for l in wl["launchers"]) == ["train_nb.py:15", "train_nb.py:23"], wl["launchers"]
    assert wl["resolved"]["precision"]["mixed"] is True


@pytest.mark.parametrize("command, linked, mixed", [
    ("deepspeed $GPU_FLAGS --module training.trainer --epochs 2", True, False),
    ("deepspeed --module training.trainer --epochs 2 $PRECISION_FLAGS", True, None),
    ("deepspeed --module training.trainer --epochs 2 --lr $LR", True, False),
])
def test_unresolved_words_in_a_launch_line(command, linked, mixed):
    """An unresolved word before the target is launcher options (the target is still found); one among the
    script's own arguments may hold flags, so a flag not seen there is unknown, not its default."""
    files = {"run.sh": f"#!/bin/bash\n{command}\n", "training/__init__.py": "", "training/trainer.py": DB_TRAINER}
    wl = next(w for w in scan_files(files).workloads if w["entrypoint"] == "training/trainer.py")
    assert bool(wl["launchers"]) is linked
    assert wl["resolved"]["precision"]["mixed"] is mixed


def test_an_ipython_interpolation_in_a_notebook_command_is_an_unresolved_word():
    nb = DATABRICKS.replace("--num_gpus={num_gpus}", "{num_gpus_flag}").replace("--bf16 {bf16}\n\n", "{bf16_flag}\n\n")
    files = {"train_nb.py": nb.replace("{bf16}", "true"), "training/__init__.py": "", "training/trainer.py": DB_TRAINER}
    wl = next(w for w in scan_files(files).workloads if w["entrypoint"] == "training/trainer.py")
    assert "train_nb.py:15" in [l["where"] for l in wl["launchers"]]


@pytest.mark.parametrize("name", ["job.yaml-template", "job.yaml.template", "job.yaml.tpl", "job.yml.tmpl"])
@pytest.mark.parametrize("data, severity", [("/workspace/data/tiny-imagenet-200", None), ("/fsx/imagenet", "warning")])
def test_a_manifest_template_launches_and_its_toy_data_path_makes_a_tutorial_sized_run(name, data, severity):
    files = {"app/imagenet.py": IMAGENET, f"app/{name}": MPIJOB.replace("DATA", data)}
    result = scan_files(files)
    (wl,) = [w for w in result.workloads if w["entrypoint"] == "app/imagenet.py"]
    assert [l["path"] for l in wl["launchers"]] == [f"app/{name}"]
    assert_amp_or_tutorial(result, wl, severity, "tiny-imagenet-200")


@pytest.mark.parametrize("data, severity", [("/workspace/data/tiny-imagenet-200", None), ("/fsx/imagenet", "warning")])
def test_a_torchx_launch_links_its_script_and_its_data_path_counts(data, severity):
    files = {"app/imagenet.py": IMAGENET,
             "app/run.sh": f"#!/bin/bash\ntorchx run -s kubernetes dist.ddp -j 2x1 --gpu 1 --script app/imagenet.py -- {data}\n"}
    result = scan_files(files)
    (wl,) = [w for w in result.workloads if w["entrypoint"] == "app/imagenet.py"]
    assert [l["value"]["tool"] for l in wl["launchers"]] == ["torchx"]
    assert_amp_or_tutorial(result, wl, severity, "tiny-imagenet-200")


@pytest.mark.parametrize("name, read", [("run_train.slrm", True), ("pretrain.sub", True), ("train.job", True),
                                        ("notes.txt", False)])
def test_job_scripts_are_found_by_their_shebang_whatever_their_extension(name, read):
    r = scan_files({"train.py": SM_RESNET_LOOP, f"jobs/{name}": SLURM_JOB})
    (wl,) = r.workloads
    assert bool(wl["compute"]) is read
    if read:
        assert wl["compute"]["source"] == "slurm" and wl["compute"]["nodes"] == 2 and wl["compute"]["gpus_per_node"] == 8


def test_a_job_extension_without_a_shell_shebang_is_not_shell():
    r = scan_files({"train.py": SM_RESNET_LOOP, "jobs/pretrain.sub": SLURM_JOB.replace("#!/bin/bash\n", "universe = vanilla\n")})
    (wl,) = r.workloads
    assert not wl["compute"]


@pytest.mark.parametrize("entry, resources, amp, gpus, nodes, fires", [
    ("model_def:ImageNetTrial", "resources:\n  slots_per_trial: 8", "", 8, 1, True),
    ("model_def:ImageNetTrial", "", "", 1, 1, True),  # one slot by default
    ("model_def:ImageNetTrial", "resources:\n  slots_per_trial: 64", "", None, None, True),
    ("python3 -m determined.launch.torch_distributed --trial model_def:ImageNetTrial",
     "resources:\n  slots_per_trial: 16", "", None, None, True),
    ("model_def:ImageNetTrial", "resources:\n  slots_per_trial: 8",
     "        self.model, self.opt = self.context.configure_apex_amp(self.model, self.opt, opt_level=\"O1\")\n", 8, 1, False),
])
def test_a_determined_experiment_launches_its_trial_on_its_slots(entry, resources, amp, gpus, nodes, fires):
    files = {"exp/model_def.py": TRIAL.replace("AMP\n", amp), "exp/const.yaml": EXPERIMENT.replace("ENTRY", entry).replace(
        "RESOURCES", resources)}
    r = scan_files(files)
    (wl,) = r.workloads
    assert wl["entrypoint"] == "exp/model_def.py" and wl["resolved"]["role"] == "training"
    comp = wl["compute"]
    assert comp["source"] == "determined" and comp["device"] == "gpu"
    assert comp["gpus_per_node"] == gpus and comp["nodes"] == nodes
    amp001 = [f for f in r.findings if f.code == "AMP001"]
    assert bool(amp001) is fires
    if fires:
        assert amp001[0].severity.value == "warning" and amp001[0].loc.path == "exp/model_def.py"


def test_an_experiment_config_that_runs_a_script_links_it():
    exp = EXPERIMENT.replace("ENTRY", "python3 -m determined.launch.torch_distributed python3 train.py --epochs 3").replace(
        "RESOURCES", "resources:\n  slots_per_trial: 2")
    r = scan_files({"exp/train.py": SM_RESNET_LOOP, "exp/const.yaml": exp})
    (wl,) = r.workloads
    assert wl["entrypoint"] == "exp/train.py" and wl["compute"]["source"] == "determined"
    assert wl["compute"]["gpus_per_node"] == 2


# -- which -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fetch, run", [
    ("wget https://raw.githubusercontent.com/pytorch/examples/main/imagenet/main.py -O /workspace/imagenet.py",
     "python -m torch.distributed.run /workspace/imagenet.py --arch resnet18"),
    ("git clone https://github.com/example/resnet-ddp.git", "cd resnet-ddp && torchrun --nproc_per_node 8 imagenet.py"),
])
def test_a_script_the_launcher_downloads_is_not_the_repositorys_file_of_that_name(fetch, run):
    pod = ("apiVersion: v1\nkind: Pod\nmetadata:\n  name: train\nspec:\n  containers:\n  - name: t\n    image: pytorch/pytorch\n"
           f"    command: [sh, -c]\n    args: [\"{fetch}; {run}\"]\n    resources:\n      limits:\n        nvidia.com/gpu: 8\n")
    local = "import torch\nmodel = Net().cuda()\n" + MAIN_LOOP
    result = scan_files({"k8s/pod.yaml": pod, "mpijob/imagenet.py": local})
    (w,) = [w for w in result.workloads if w["entrypoint"] == "mpijob/imagenet.py"]
    assert not w["launchers"]
    plain = pod.replace(f"{fetch}; ", "")
    (w,) = [w for w in scan_files({"k8s/pod.yaml": plain, "imagenet.py": local}).workloads if w["entrypoint"] == "imagenet.py"]
    assert w["launchers"]  # control: the same launch of the repository's own file links


def test_an_absolute_container_path_matching_only_a_file_name_is_the_images_file():
    job = ("apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: imagenet\nspec:\n  pytorchReplicaSpecs:\n    Worker:\n"
           "      replicas: 2\n      template:\n        spec:\n          containers:\n          - name: pytorch\n"
           "            image: kubeflow/pytorch-elastic-example-imagenet:latest\n"
           "            command: [python, -m, torch.distributed.run, /workspace/examples/imagenet.py, --arch=resnet18]\n")
    local = "import torch\nmodel = Net().cuda()\n" + MAIN_LOOP
    (w,) = [w for w in scan_files({"k8s/job.yaml": job, "mpijob/imagenet.py": local}).workloads if w["entrypoint"] == "mpijob/imagenet.py"]
    assert not w["launchers"]
    (w,) = [w for w in scan_files({"k8s/job.yaml": job, "examples/imagenet.py": local}).workloads if w["entrypoint"] == "examples/imagenet.py"]
    assert w["launchers"]  # the folders match: the image holds this file


def test_a_container_path_to_a_file_beside_its_launcher_links_it():
    """SageMaker uploads source_dir (script.sh and train.py) to a channel: /opt/ml/input/data/code/train.py is the
    train.py beside the script.sh that runs it."""
    sh = "#!/bin/bash\ncd /tmp\npython3 /opt/ml/input/data/code/train_lora.py --epochs 1\n"
    local = "import torch\nmodel = Net().cuda()\n" + MAIN_LOOP
    (w,) = [w for w in scan_files({"jobs/flux/scripts/script.sh": sh, "jobs/flux/scripts/train_lora.py": local}).workloads
            if w["entrypoint"] == "jobs/flux/scripts/train_lora.py"]
    assert w["launchers"]


@pytest.mark.parametrize("launcher, linked", [
    ("chat/shell/v2/run.sh", "chat/internvl/train/finetune.py"),
    ("chat_oss/shell/run.sh", "chat_oss/internvl/train/finetune.py"),
    ("scripts/run.sh", None),  # neither copy is under the launcher's folders: ambiguous, no link
])
def test_a_relative_script_with_a_twin_copy_links_to_the_one_in_the_launchers_tree(launcher, linked):
    files = {"chat/internvl/train/finetune.py": FINETUNE_PY, "chat_oss/internvl/train/finetune.py": FINETUNE_PY,
             launcher: RUN}
    result = scan_files(files)
    with_launcher = [w["entrypoint"] for w in result.workloads if w["launchers"]]
    assert with_launcher == ([linked] if linked else [])


@pytest.mark.parametrize("launcher, linked", [
    ("exp/bash_script/run.sh", "exp/train.py"),   # the launcher's parent folder holds the script
    ("exp/run.sh", "exp/train.py"),               # beside it
    ("other/run.sh", None),                       # a namesake deeper in the tree is no link for a bare name
])
def test_a_bare_script_name_with_namesakes_links_only_beside_the_launcher_or_one_folder_up(launcher, linked):
    files = {"exp/train.py": FINETUNE_PY, "other/sub/source/train.py": FINETUNE_PY,
             launcher: "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --bf16 True --output_dir out\n"}
    with_launcher = [w["entrypoint"] for w in scan_files(files).workloads if w["launchers"]]
    assert with_launcher == ([linked] if linked else [])


@pytest.mark.parametrize("copied, linked", [("imagenet.py", True), (".", True), ("other.py", False)])
def test_a_bare_script_name_links_the_copy_an_image_beside_it_holds(copied, linked):
    files = {"k8s/job.yaml": PYTORCHJOB_IMAGENET.replace("DATA", "/data/imagenet"), "k8s/container-imagenet/imagenet.py": SM_RESNET_LOOP,
             "k8s/container-imagenet/Dockerfile": IMAGE.replace("COPIED", copied), "k8s/container-debug/imagenet.py": SM_RESNET_LOOP}
    r = scan_files(files)
    wl = next(w for w in r.workloads if w["entrypoint"] == "k8s/container-imagenet/imagenet.py")
    assert bool(wl["launchers"]) is linked
    assert (wl["compute"] or {}).get("source") == ("kubernetes" if linked else None)


def test_a_stray_identical_copy_of_a_launched_script_is_no_workload():
    r = scan_files({"job/train.py": FP32_TRAIN, "old/train.py": FP32_TRAIN, "job/run.sbatch": SBATCH_JOB})
    assert sorted(w["entrypoint"] for w in r.workloads) == ["job/train.py"]
    (wl,) = r.workloads
    assert any(reason.startswith("copy: old/train.py is a byte-identical copy of job/train.py") for reason in wl["links"])
    assert {f.loc.path for f in r.findings if f.code == "AMP001"} == {"job/train.py"}


@pytest.mark.parametrize("files", [
    # the copy differs by one line: a variant of its own, which may run elsewhere
    {"job/train.py": FP32_TRAIN, "old/train.py": FP32_TRAIN + "print('done')\n", "job/run.sbatch": SBATCH_JOB},
    # neither copy is launched: nothing says which one is the job, both are reported
    {"a/train.py": FP32_TRAIN, "b/train.py": FP32_TRAIN},
])
def test_copies_that_differ_or_that_nothing_launches_stay_workloads(files):
    r = scan_files(files)
    assert len(r.workloads) == 2
    assert len({f.loc.path for f in r.findings if f.code == "AMP001"}) == 2


def test_an_identical_script_of_another_name_is_a_workload_of_its_own():
    r = scan_files({"job/train.py": FP32_TRAIN, "job/train_copy.py": FP32_TRAIN, "job/run.sbatch": SBATCH_JOB})
    assert sorted(w["entrypoint"] for w in r.workloads) == ["job/train.py", "job/train_copy.py"]


def test_a_copy_with_a_launcher_of_the_twin_in_its_own_folder_is_not_called_stray():
    # sala/scripts/run.sh starts the job's copy by a path out of its folder: which namesake it meant is not
    # certain (a relative name run from another working directory links like this), so both stay workloads
    r = scan_files({"job/train.py": FP32_TRAIN, "sala/train.py": FP32_TRAIN,
                    "sala/scripts/run.sh": "python ../../job/train.py\n"})
    assert sorted(w["entrypoint"] for w in r.workloads) == ["job/train.py", "sala/train.py"]
    # a launcher beside the copy it runs links that copy: the other namesake is the stray one
    r = scan_files({"job/train.py": FP32_TRAIN, "sala/train.py": FP32_TRAIN, "sala/scripts/run.sh": "python train.py\n"})
    assert [w["entrypoint"] for w in r.workloads] == ["sala/train.py"]


@pytest.mark.parametrize("folder", ["third_party", "dependencies", "deps", "submodules", "vendor"])
def test_copies_of_other_projects_are_context_not_workloads(folder):
    from gpulint.link.scope import Scope

    assert Scope().outside(f"inference/{folder}/AutoGPTQ/examples/peft_lora.py")
    assert Scope(include_vendored=True).outside(f"inference/{folder}/AutoGPTQ/examples/peft_lora.py") is None
    assert Scope().outside("inference/quantize/peft_lora.py") is None
