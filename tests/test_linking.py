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
