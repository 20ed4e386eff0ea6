"""`gpulint workloads` over the fixture repos in fixtures/wl-*: every workload
checked field by field (entrypoint, code, launchers, configs, compute and its
price, EFA, model size, precision, checkpoints, env, links, unknowns), the text
format, and `scan --format json` carrying the same workloads.

Everything runs the CLI in a subprocess, as a user would. Expected prices are
computed from the bundled catalogue (unit price x nodes), so a catalogue price
update does not break these tests but a wrong multiplication does.
"""
from __future__ import annotations

import json
import re
import shutil
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest

from conftest import FIXTURES, ROOT, run_cli

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

WL_FIXTURES = sorted(p.name for p in FIXTURES.glob("wl-*") if p.is_dir())
OUTPUT_SCHEMA = json.loads((ROOT / "gpulint" / "schemas" / "output.schema.json").read_text(encoding="utf-8"))


# -- running the CLI ---------------------------------------------------------------------
def _workloads_json(path: Path | str) -> dict:
    proc = run_cli("workloads", path, "--format", "json", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return json.loads(proc.stdout)


@lru_cache(maxsize=None)
def workloads(name: str) -> tuple[dict, ...]:
    return tuple(_workloads_json(f"fixtures/{name}")["workloads"])


@lru_cache(maxsize=None)
def workloads_text(name: str) -> str:
    proc = run_cli("workloads", f"fixtures/{name}", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@lru_cache(maxsize=None)
def scan_json(name: str) -> tuple[int, dict]:
    proc = run_cli("scan", f"fixtures/{name}", "--format", "json", cwd=ROOT)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def only(name: str) -> dict:
    wls = workloads(name)
    assert len(wls) == 1, [w["entrypoint"] for w in wls]
    return wls[0]


def pinned_copy(tmp_path: Path, name: str, pyproject: str) -> Path:
    dest = tmp_path / name
    shutil.copytree(FIXTURES / name, dest)
    (dest / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    return dest


# -- expectations helpers ----------------------------------------------------------------
@lru_cache(maxsize=1)
def catalogue():
    from gpulint.pricing.catalogue import Catalogue

    return Catalogue.load()


def check_price(comp: dict, instance: str, capacity: str, nodes: int) -> None:
    """usd_per_hour = unit price of the capacity x nodes, with its region and date."""
    cat = catalogue()
    inst = cat.resolve(instance)
    assert inst is not None and inst.name == comp["instance"] == instance
    price = cat.price(inst, capacity)
    assert price.usd_per_hour, f"the catalogue has no {capacity} price for {instance}"
    assert comp["unit_usd_per_hour"] == pytest.approx(price.usd_per_hour)
    assert comp["usd_per_hour"] == pytest.approx(round(price.usd_per_hour * nodes, 4))
    assert comp["region"] == price.region and comp["region"]
    assert comp["as_of"] == price.as_of and comp["as_of"]
    assert comp["price_source"]


def launcher(wl: dict, i: int = 0) -> tuple:
    l = wl["launchers"][i]
    return l["value"]["tool"], l["value"]["nnodes"], l["value"]["nproc_per_node"], l["where"]


def env_of(wl: dict) -> dict:
    return {e["value"]["name"]: (e["value"]["value"], e["where"]) for e in wl["env"]}


def facts_of(facts: list[dict], kind: str) -> list[tuple]:
    return [(f["value"], f["where"]) for f in facts if f["kind"] == kind]


# -- Terraform AWS: launch template + ASG, var defaults in variables.tf, spot, EFA --------------
def test_terraform_aws():
    wl = only("wl-terraform-aws")
    assert wl["entrypoint"] == "llm/train.py"
    assert wl["code_files"] == ["llm/train.py", "llm/data.py"]
    assert [launcher(wl)] == [("torchrun", 2, 8, "scripts/node_entry.sh:10")]
    assert wl["launchers"][0]["value"]["script"] == "llm/train.py"
    assert wl["configs"] == []
    comp = wl["compute"]
    assert comp["id"].startswith("infra/main.tf#aws_")
    assert comp["source"] == "terraform"
    assert comp["provider"] == "aws"
    assert comp["instance_fact"] == "infra/main.tf:13"  # instance_type = var.instance_type
    assert comp["nodes"] == 2
    assert comp["gpus_per_node"] == 8
    assert comp["gpu_model"] == "A100-SXM4-40GB"
    assert comp["capacity"] == "spot"
    assert comp["capacity_fact"] == "infra/main.tf:16"  # market_type = "spot"
    check_price(comp, "p4d.24xlarge", "spot", nodes=2)
    assert comp["efa_requested"] == 4
    assert comp["efa_fact"] == "infra/main.tf:26"
    assert comp["unknown_instance_types"] == []
    # the raw ref stays visible next to the resolved value
    assert ({"ref": "var.instance_type"}, "infra/main.tf:13") in facts_of(comp["facts"], "compute.instance_type")
    res = wl["resolved"]
    assert res["model"]["name"] == "meta-llama/Llama-2-7b-hf"
    assert res["model"]["params"] == 6_738_415_616
    assert "llm/train.py:17" in res["model"]["evidence"]
    assert res["precision"] == {"mixed": True, "dtypes": ["bf16"], "evidence": ["autocast at llm/train.py:23"]}
    assert res["checkpoint"] == {"saves": ["torch.save at llm/train.py:29"], "resumes": []}
    assert env_of(wl) == {
        "FI_PROVIDER": ("efa", "scripts/node_entry.sh:6"),
        "FI_EFA_USE_DEVICE_RDMA": ("1", "scripts/node_entry.sh:7"),
        "NCCL_DEBUG": ("WARN", "scripts/node_entry.sh:8"),
    }
    assert "code: llm/train.py imports llm/data.py" in wl["links"]
    # user_data runs /opt/llm/scripts/node_entry.sh: the repository checked out at /opt/llm, joined by path tail
    assert ("launcher: infra/main.tf:51 runs scripts/node_entry.sh (assumed: joined by path tail, "
            "/opt/llm/scripts/node_entry.sh -> scripts/node_entry.sh); scripts/node_entry.sh:10 runs llm/train.py") in wl["links"]
    assert "compute: infra/main.tf#aws_autoscaling_group.trainer runs the launcher chain" in wl["links"]
    assert wl["unknown"] == []
    # the DataLoader of the imported module is part of the workload
    assert facts_of(wl["facts"], "dataloader")[0][1] == "llm/data.py:21"


def test_terraform_aws_links_the_autoscaling_group():
    wl = only("wl-terraform-aws")
    comp = wl["compute"]
    assert comp["id"] == "infra/main.tf#aws_autoscaling_group.trainer"
    # facts keep the raw ref (like instance_type above); the resolved count is comp["nodes"]
    assert ({"ref": "var.nodes"}, "infra/main.tf:56") in facts_of(comp["facts"], "compute.node_count")
    # the launch template's facts are joined into the group's compute
    assert ({"ref": "var.instance_type"}, "infra/main.tf:13") in facts_of(comp["facts"], "compute.instance_type")
    assert comp["instance"] == "p4d.24xlarge" and comp["capacity"] == "spot" and comp["efa_requested"] == 4
    assert comp["nodes"] == 2
    # the template's user_data runs on the group that starts it: the group is the compute, not a second target
    assert "compute: infra/main.tf#aws_autoscaling_group.trainer runs the launcher chain" in wl["links"]
    assert not any("aws_launch_template" in s for s in wl["links"] + wl["unknown"])


def test_terraform_aws_nodes_come_from_the_autoscaling_group(tmp_path):
    # torchrun says --nnodes=2; the group's desired_capacity (var.nodes) decides the node count and the price
    repo = tmp_path / "wl-terraform-aws"
    shutil.copytree(FIXTURES / "wl-terraform-aws", repo)
    variables = repo / "infra" / "variables.tf"
    text = variables.read_text(encoding="utf-8")
    assert text.count("default = 2\n") == 1
    variables.write_text(text.replace("default = 2\n", "default = 3\n"), encoding="utf-8")
    (wl,) = _workloads_json(repo)["workloads"]
    assert wl["compute"]["id"] == "infra/main.tf#aws_autoscaling_group.trainer"
    check_price(wl["compute"], "p4d.24xlarge", "spot", nodes=3)
    assert wl["compute"]["nodes"] == 3


# -- Terraform GCP: A2 + guest_accelerator + SPOT; a CPU GKE pool that must not pair -----------
def test_terraform_gcp():
    wl = only("wl-terraform-gcp")
    assert wl["entrypoint"] == "train.py"
    assert wl["code_files"] == ["train.py"]
    assert [launcher(wl)] == [("torchrun", 1, 8, "scripts/startup.sh:5")]
    assert wl["launchers"][0]["value"]["args"] == ["--epochs", "90", "--out", "gs://vit-ckpt/run1"]
    assert wl["configs"] == []
    comp = wl["compute"]
    assert comp["id"] == "infra/compute.tf#google_compute_instance.trainer"
    assert comp["provider"] == "gcp"
    assert comp["instance_fact"] == "infra/compute.tf:8"
    assert comp["nodes"] == 1
    assert comp["gpus_per_node"] == 8
    assert comp["gpu_model"] == "A100-SXM4-40GB"
    assert comp["capacity"] == "spot"
    assert comp["capacity_fact"] == "infra/compute.tf:25"  # provisioning_model = "SPOT"
    check_price(comp, "a2-highgpu-8g", "spot", nodes=1)
    assert comp["efa_requested"] is None  # no such thing on GCP: unknown, not 0
    accel = facts_of(comp["facts"], "compute.accelerator")
    assert accel == [({"type": "nvidia-tesla-a100", "count": {"ref": "var.gpu_count"}}, "infra/compute.tf:19")]
    res = wl["resolved"]
    assert res["model"]["params"] == 304_326_632 and res["model"]["name"] == "timm/vit_large_patch16_224"
    assert res["precision"]["mixed"] is True and res["precision"]["dtypes"] == ["bf16"]
    assert res["checkpoint"] == {"saves": ["torch.save at train.py:46"],
                                 "resumes": ["load_state_dict at train.py:35", "load_state_dict at train.py:36"]}
    assert wl["env"] == []
    # the VM's metadata_startup_script = file(...) runs scripts/startup.sh, which runs train.py
    assert wl["links"] == ["launcher: infra/compute.tf:35 runs scripts/startup.sh; scripts/startup.sh:5 runs train.py",
                           "compute: infra/compute.tf#google_compute_instance.trainer runs the launcher chain"]
    assert not any("google_container" in l for l in wl["links"] + wl["unknown"])
    assert wl["unknown"] == []


# -- Terraform Azure: ND96asr_v4 spot scale set + an inference AKS GPU pool ------------------------
AZ_VMSS = "infra/main.tf#azurerm_linux_virtual_machine_scale_set.trainer"
AZ_AKS = "infra/aks.tf#azurerm_kubernetes_cluster_node_pool.inference"


def test_terraform_azure_links_the_training_scale_set_through_its_custom_data():
    # the scale set's custom_data = filebase64(...) runs scripts/node.sh, which runs asr/train.py (the AKS
    # GPU pool serves inference and is not offered to a training workload anyway)
    wl = only("wl-terraform-azure")
    assert wl["entrypoint"] == "asr/train.py"
    assert wl["code_files"] == ["asr/train.py", "asr/data.py"]
    assert [launcher(wl)] == [("torchrun", 2, 8, "scripts/node.sh:8")]
    comp = wl["compute"]
    assert comp["id"] == AZ_VMSS
    assert comp["provider"] == "azure"
    assert comp["instance_fact"] == "infra/main.tf:15"
    assert comp["nodes"] == 2
    assert comp["gpus_per_node"] == 8 and comp["gpu_model"] == "A100-SXM4-40GB"
    assert comp["capacity"] == "spot" and comp["capacity_fact"] == "infra/main.tf:17"
    check_price(comp, "Standard_ND96asr_v4", "spot", nodes=2)
    assert wl["links"] == [
        "code: asr/train.py imports asr/data.py",
        "launcher: infra/main.tf:21 runs scripts/node.sh; scripts/node.sh:8 runs asr/train.py",
        f"compute: {AZ_VMSS} runs the launcher chain",
    ]
    assert wl["unknown"] == ["model size: 'openai/whisper-large-v3' is not a known model and carries no size hint; "
                             "add it under [tool.gpulint.models]"]
    assert env_of(wl) == {"NCCL_IB_HCA": ("mlx5", "scripts/node.sh:4"), "NCCL_SOCKET_IFNAME": ("eth0", "scripts/node.sh:5"),
                          "UCX_TLS": ("rc", "scripts/node.sh:6")}
    res = wl["resolved"]
    assert res["precision"] == {"mixed": True, "dtypes": ["fp16"], "evidence": ["hf_args at asr/train.py:12"]}
    assert res["checkpoint"] == {"saves": ["hf_trainer at asr/train.py:12"], "resumes": ["resume_from_checkpoint at asr/train.py:22"]}


def test_terraform_azure_pinned(tmp_path):
    repo = pinned_copy(tmp_path, "wl-terraform-azure", (
        "[tool.gpulint]\n\n[[tool.gpulint.workloads]]\n"
        f'entrypoint = "asr/train.py"\ncompute = "{AZ_VMSS}"\n'
        'model = "openai/whisper-large-v3"\nparams = 1550000000\n'))
    (wl,) = _workloads_json(repo)["workloads"]
    comp = wl["compute"]
    assert comp["id"] == AZ_VMSS
    assert comp["provider"] == "azure"
    assert comp["instance_fact"] == "infra/main.tf:15"  # sku = var.trainer_size, default in variables.tf
    assert comp["nodes"] == 2  # instances = var.trainer_nodes
    assert comp["gpus_per_node"] == 8 and comp["gpu_model"] == "A100-SXM4-40GB"
    assert comp["capacity"] == "spot" and comp["capacity_fact"] == "infra/main.tf:17"
    check_price(comp, "Standard_ND96asr_v4", "spot", nodes=2)
    assert wl["resolved"]["model"] == {"params": 1550000000, "evidence": "[tool.gpulint] workloads table params",
                                       "name": "openai/whisper-large-v3"}
    assert f"config: workloads table pins compute {AZ_VMSS}" in wl["links"]
    assert wl["unknown"] == []


def test_terraform_azure_skips_the_inference_pool():
    wl = only("wl-terraform-azure")
    assert wl["compute"] is not None and wl["compute"]["id"] == AZ_VMSS
    everything = wl["links"] + wl["unknown"]
    assert not any(AZ_AKS in s or "azurerm_kubernetes_cluster" in s for s in everything)
    assert not any("Standard_D4s_v5" in s or "default_node_pool" in s for s in everything)  # the CPU system pool


# -- Kubernetes PyTorchJob with EFA ------------------------------------------------------------
def test_k8s_pytorchjob_efa():
    wl = only("wl-k8s-efa")
    assert wl["entrypoint"] == "src/pretrain/train.py"  # from /workspace/src/pretrain/train.py
    assert [launcher(wl)] == [("torchrun", 4, 8, "k8s/pytorchjob.yaml:29")]
    comp = wl["compute"]
    assert comp["id"] == "k8s/pytorchjob.yaml#PyTorchJob/gpt-pretrain/Worker"
    assert comp["source"] == "kubernetes"
    assert comp["provider"] == "aws"
    assert comp["instance_fact"] == "k8s/pytorchjob.yaml:20"  # node.kubernetes.io/instance-type
    assert comp["nodes"] == 4
    assert comp["gpus_per_node"] == 8 and comp["gpu_model"] == "A100-SXM4-40GB"
    assert comp["capacity"] == "on-demand" and comp["capacity_fact"] == "k8s/pytorchjob.yaml:21"
    check_price(comp, "p4d.24xlarge", "on-demand", nodes=4)
    assert comp["efa_requested"] == 4 and comp["efa_fact"] == "k8s/pytorchjob.yaml:48"
    assert comp["efa_interfaces"] == 4
    assert (8, "k8s/pytorchjob.yaml:47") in facts_of(comp["facts"], "compute.gpus_per_node")
    assert env_of(wl) == {
        "FI_PROVIDER": ("efa", "k8s/pytorchjob.yaml:37"),
        "FI_EFA_USE_DEVICE_RDMA": ("1", "k8s/pytorchjob.yaml:39"),
        "NCCL_DEBUG": ("INFO", "k8s/pytorchjob.yaml:41"),
        "NCCL_PROTO": ("simple", "k8s/pytorchjob.yaml:43"),
    }
    res = wl["resolved"]
    assert res["model"]["name"] == "gpt2-xl" and res["model"]["params"] == 1_557_611_200
    assert res["precision"] == {"mixed": True, "dtypes": ["bf16"], "evidence": ["fsdp at src/pretrain/train.py:26"]}
    assert res["checkpoint"] == {"saves": ["dcp at src/pretrain/train.py:39"], "resumes": ["dcp at src/pretrain/train.py:32"]}
    assert ({"via": "fsdp", "stage": 3, "hybrid": False}, "src/pretrain/train.py:28") in facts_of(wl["facts"], "sharding")
    assert wl["links"] == ["code: src/pretrain/train.py imports src/pretrain/data.py",
                           "launcher: k8s/pytorchjob.yaml:29 runs src/pretrain/train.py",
                           "compute: k8s/pytorchjob.yaml#PyTorchJob/gpt-pretrain/Worker holds the launcher",
                           "config: configs/gpt2-xl.yaml (launcher: k8s/pytorchjob.yaml:29 passes it)"]
    assert wl["unknown"] == []


def test_k8s_src_layout_imports_are_code_files():
    assert only("wl-k8s-efa")["code_files"] == ["src/pretrain/train.py", "src/pretrain/data.py"]


def test_k8s_config_flag_with_equals_is_linked():
    assert only("wl-k8s-efa")["configs"] == ["configs/gpt2-xl.yaml"]


# -- Kubernetes PyTorchJob without EFA (Master + Worker) --------------------------------------------
def test_k8s_pytorchjob_noefa():
    wl = only("wl-k8s-noefa")
    assert wl["entrypoint"] == "src/pretrain/train.py"
    assert [launcher(wl, 0), launcher(wl, 1)] == [("torchrun", 4, 8, "k8s/pytorchjob.yaml:20"),
                                                   ("torchrun", 4, 8, "k8s/pytorchjob.yaml:39")]
    comp = wl["compute"]
    assert comp["id"] == "k8s/pytorchjob.yaml#PyTorchJob/gpt-pretrain/Master"
    assert comp["instance"] == "p4d.24xlarge" and comp["instance_fact"] == "k8s/pytorchjob.yaml:16"
    assert comp["nodes"] == 4  # master + 3 workers
    assert comp["gpus_per_node"] == 8
    assert comp["capacity"] is None  # not stated: priced on-demand and said so
    check_price(comp, "p4d.24xlarge", "on-demand", nodes=4)
    assert comp["efa_requested"] == 0  # explicitly none, on an instance that has 4 EFA interfaces
    assert comp["efa_interfaces"] == 4 and comp["rdma"] == "efa"
    names = {e["value"]["name"] for e in wl["env"]}
    assert names == {"NCCL_DEBUG", "NCCL_SOCKET_IFNAME"}
    assert not any(n.startswith("FI_") for n in names)
    assert wl["unknown"] == ["capacity: spot or on-demand is not stated; on-demand assumed for prices"]


# -- SkyPilot managed spot ----------------------------------------------------------------------
def test_skypilot_spot():
    wl = only("wl-skypilot-spot")
    assert wl["entrypoint"] == "sft.py"
    assert [launcher(wl)] == [("torchrun", 2, 8, "sky/finetune.yaml:30")]  # from $SKYPILOT_NUM_NODES / _GPUS_PER_NODE
    assert wl["launchers"][0]["value"]["args"] == ["--output_dir", "/checkpoints/run1"]
    comp = wl["compute"]
    assert comp["id"] == "sky/finetune.yaml#mistral-sft"
    assert comp["source"] == "skypilot"
    assert comp["provider"] == "aws"
    assert "A100:8" in comp["assumed"] and "cheapest" in comp["assumed"]
    assert comp["nodes"] == 2 and comp["gpus_per_node"] == 8
    assert comp["gpu_model"].startswith("A100")
    assert comp["capacity"] == "spot" and comp["capacity_fact"] == "sky/finetune.yaml:7"
    check_price(comp, comp["instance"], "spot", nodes=2)
    cheapest = min((i for i in catalogue().by_accelerator("A100", 8, "aws") if catalogue().price(i).usd_per_hour),
                   key=lambda i: catalogue().price(i).usd_per_hour)
    assert comp["instance"] == cheapest.name == "p4d.24xlarge"
    assert ({"path": "/checkpoints", "bucket": "mistral-sft-ckpt", "mode": "MOUNT"}, "sky/finetune.yaml:15") in \
        facts_of(comp["facts"], "storage.mount")
    env = env_of(wl)
    assert env["NCCL_DEBUG"] == ("WARN", "sky/finetune.yaml:22")
    assert env["NCCL_P2P_DISABLE"] == ("0", "sky/finetune.yaml:28")
    assert env["MODEL"] == ("mistralai/Mistral-7B-v0.1", "sky/finetune.yaml:21")
    assert env["MASTER_ADDR"] == (None, "sky/finetune.yaml:29")  # $(...) stays unknown
    res = wl["resolved"]
    assert res["model"]["name"] == "mistralai/Mistral-7B-v0.1" and res["model"]["params"] == 7_241_732_096
    assert res["precision"] == {"mixed": True, "dtypes": ["bf16"], "evidence": ["hf_args at sft.py:17"]}
    assert res["checkpoint"] == {"saves": ["hf_trainer at sft.py:17"], "resumes": ["resume_from_checkpoint at sft.py:28"]}
    assert wl["links"] == ["launcher: sky/finetune.yaml:30 runs sft.py", "compute: sky/finetune.yaml#mistral-sft holds the launcher"]
    assert wl["unknown"] == []


def test_skypilot_text_says_the_instance_is_assumed():
    assert "cheapest matching catalogue instance" in workloads_text("wl-skypilot-spot")


# -- SageMaker spot estimator -------------------------------------------------------------------------
def test_sagemaker_spot():
    wl = only("wl-sagemaker-spot")  # launch_job.py submits, it does not train: not a workload
    assert wl["entrypoint"] == "src/train.py"  # source_dir + entry_point
    assert wl["code_files"] == ["src/train.py"]
    assert [launcher(wl)] == [("sagemaker", 2, None, "launch_job.py:12")]
    assert wl["launchers"][0]["value"]["args"] == ["--epochs", "3", "--lr", "0.0002", "--bf16", "true"]
    comp = wl["compute"]
    assert comp["id"] == "launch_job.py#PyTorch@estimator"
    assert comp["source"] == "sagemaker"
    assert ("ml.p4d.24xlarge", "launch_job.py:17") in facts_of(comp["facts"], "compute.instance_type")
    assert comp["instance_fact"] == "launch_job.py:17"
    assert comp["nodes"] == 2 and comp["gpus_per_node"] == 8
    assert comp["capacity"] == "spot" and comp["capacity_fact"] == "launch_job.py:19"
    check_price(comp, "p4d.24xlarge", "spot", nodes=2)  # ml. name priced as its EC2 twin
    ((ckpt, where),) = facts_of(comp["facts"], "compute.checkpoint")
    assert where == "launch_job.py:22"
    assert ckpt["s3_uri_set"] is True and ckpt["max_wait_set"] is True
    assert ckpt["local_path"] == "/opt/ml/checkpoints"
    assert env_of(wl) == {"NCCL_DEBUG": ("INFO", "launch_job.py:26"), "FI_EFA_USE_DEVICE_RDMA": ("1", "launch_job.py:26")}
    res = wl["resolved"]
    assert res["model"]["name"] == "meta-llama/Llama-2-13b-hf" and res["model"]["params"] == 13_015_864_320
    # bf16=args.bf16 is decided by the estimator's hyperparameters {"bf16": True}
    assert res["precision"] == {"mixed": True, "dtypes": ["bf16"], "evidence": ["hf_args at src/train.py:19"]}
    assert res["checkpoint"] == {"saves": ["hf_trainer at src/train.py:19", "save_model at src/train.py:32"],
                                 "resumes": ["resume_from_checkpoint at src/train.py:31"]}
    assert [f["value"]["method"] for f in wl["facts"] if f["kind"] == "peft"] == ["lora", "lora"]
    assert wl["links"] == ["launcher: launch_job.py:12 runs src/train.py", "compute: launch_job.py#PyTorch@estimator holds the launcher"]
    assert wl["unknown"] == []


def test_sagemaker_max_wait_arithmetic():
    ((ckpt, _),) = facts_of(only("wl-sagemaker-spot")["compute"]["facts"], "compute.checkpoint")
    assert ckpt["max_wait"] == 48 * 3600 and ckpt["max_run"] == 36 * 3600


def test_sagemaker_fstring_checkpoint_uri():
    ((ckpt, _),) = facts_of(only("wl-sagemaker-spot")["compute"]["facts"], "compute.checkpoint")
    assert ckpt["s3_uri"] == "s3://acme-ml/checkpoints/llama2-13b-lora"


# -- Slurm multi-node ------------------------------------------------------------------------------------
def test_slurm():
    wl = only("wl-slurm")
    assert wl["entrypoint"] == "pretrain.py"
    assert wl["code_files"] == ["pretrain.py", "data.py"]
    assert [launcher(wl)] == [("torchrun", 4, 8, "slurm/pretrain.sbatch:22")]
    assert wl["configs"] == ["configs/olmo-1b.json"]
    comp = wl["compute"]
    assert comp["id"] == "slurm/pretrain.sbatch#slurm"
    assert comp["source"] == "slurm"
    assert comp["nodes"] == 4 and comp["gpus_per_node"] == 8
    assert (4, "slurm/pretrain.sbatch:4") in facts_of(comp["facts"], "compute.node_count")
    assert (8, "slurm/pretrain.sbatch:6") in facts_of(comp["facts"], "compute.gpus_per_node")
    assert comp.get("instance") is None and comp.get("usd_per_hour") is None  # Slurm names no instance: no guessed price
    assert comp["capacity"] is None
    assert env_of(wl) == {
        "FI_PROVIDER": ("efa", "slurm/pretrain.sbatch:14"),
        "FI_EFA_USE_DEVICE_RDMA": ("1", "slurm/pretrain.sbatch:15"),
        "NCCL_DEBUG": ("WARN", "slurm/pretrain.sbatch:16"),
        "NCCL_SOCKET_IFNAME": ("^docker,lo", "slurm/pretrain.sbatch:17"),
        "OMP_NUM_THREADS": ("8", "slurm/pretrain.sbatch:18"),
    }
    res = wl["resolved"]
    assert res["precision"] == {"mixed": True, "dtypes": ["bf16"], "evidence": ["autocast at pretrain.py:33"]}
    assert res["checkpoint"] == {"saves": ["torch.save at pretrain.py:40"],
                                 "resumes": ["load_state_dict at pretrain.py:29", "load_state_dict at pretrain.py:30"]}
    assert "compute: slurm/pretrain.sbatch#slurm holds the launcher" in wl["links"]
    assert "config: configs/olmo-1b.json (launcher: slurm/pretrain.sbatch:22 passes it)" in wl["links"]
    assert wl["unknown"] == ["instance: slurm/pretrain.sbatch#slurm names no instance type",
                             "capacity: spot or on-demand is not stated; on-demand assumed for prices"]


def test_slurm_model_size_from_constructor_dims():
    from gpulint.resolve import modelsize
    want = modelsize.from_dims(16, 2048, 50304, n_positions=2048, style="gpt2")
    model = only("wl-slurm")["resolved"].get("model") or {}
    assert model.get("params") == want.params
    assert "pretrain.py:22" in model.get("evidence", "")


# -- accelerate + DeepSpeed ZeRO-3 offload ------------------------------------------------------------------
def test_accelerate_deepspeed():
    wl = only("wl-accelerate-deepspeed")
    assert wl["entrypoint"] == "finetune.py"
    assert [launcher(wl)] == [("accelerate", None, None, "scripts/finetune.sh:5")]
    assert wl["launchers"][0]["value"]["config_file"] == "configs/accelerate_zero3.yaml"
    assert wl["configs"] == ["configs/accelerate_zero3.yaml", "configs/ds_zero3_offload.json"]
    assert wl["compute"] is None
    ((acc, acc_where),) = facts_of(wl["facts"], "config.accelerate")
    assert acc_where == "configs/accelerate_zero3.yaml:1"
    assert (acc["distributed_type"], acc["num_machines"], acc["num_processes"]) == ("DEEPSPEED", 1, 8)
    assert acc["deepspeed_config_file"] == "configs/ds_zero3_offload.json"
    ((ds, ds_where),) = facts_of(wl["facts"], "config.deepspeed")
    assert ds_where == "configs/ds_zero3_offload.json:1"
    assert (ds["bf16"], ds["zero_stage"], ds["offload_optimizer"], ds["offload_param"]) == (True, 3, True, True)
    ((shard, shard_where),) = facts_of(wl["facts"], "sharding")
    assert shard_where == "configs/ds_zero3_offload.json:4"
    assert (shard["via"], shard["stage"], shard["offload"]) == ("deepspeed", 3, True)
    res = wl["resolved"]
    assert res["model"]["name"] == "codellama/CodeLlama-13b-hf" and res["model"]["params"] == 13_000_000_000
    assert "size hint" in res["model"]["evidence"]
    assert res["precision"]["mixed"] is True and res["precision"]["dtypes"] == ["bf16"]
    assert "deepspeed at configs/ds_zero3_offload.json:2" in res["precision"]["evidence"]
    assert res["checkpoint"] == {"saves": ["save_state at finetune.py:33", "save_pretrained at finetune.py:35"], "resumes": []}
    assert env_of(wl) == {"NCCL_ASYNC_ERROR_HANDLING": ("1", "scripts/finetune.sh:4")}
    assert wl["links"] == [
        "launcher: scripts/finetune.sh:5 runs finetune.py",
        "config: configs/accelerate_zero3.yaml (launcher: scripts/finetune.sh:5 passes config_file configs/accelerate_zero3.yaml)",
        "config: configs/ds_zero3_offload.json (named by configs/accelerate_zero3.yaml)",
    ]
    assert wl["unknown"] == ["compute: no launcher, infrastructure file or config names the instance this runs on"]


# -- ambiguous linking ---------------------------------------------------------------------------------------
AMB_BIG = "infra/main.tf#aws_instance.big"
AMB_SMALL = "infra/main.tf#aws_instance.small"


def test_ambiguous_says_so_and_shows_the_pin():
    wls = workloads("wl-ambiguous")
    assert [w["entrypoint"] for w in wls] == ["finetune/run.py", "pretrain/run.py"]
    for wl in wls:
        assert wl["compute"] is None
        assert wl["launchers"] == []
        (amb,) = [u for u in wl["unknown"] if u.startswith("compute: ambiguous")]
        assert AMB_BIG in amb and AMB_SMALL in amb
        assert "bastion" not in amb  # t3.micro is CPU compute
        assert "2 GPU compute targets" in amb and "2 training workloads without one" in amb
        assert "[[tool.gpulint.workloads]]" in amb and f'entrypoint = "{wl["entrypoint"]}"' in amb
        assert "launcher: nothing in the repository starts this script" in wl["unknown"]
    text = workloads_text("wl-ambiguous")
    assert text.count("unknown: compute: ambiguous") == 2
    assert "[[tool.gpulint.workloads]]" in text


def test_ambiguous_pinned(tmp_path):
    repo = pinned_copy(tmp_path, "wl-ambiguous", (
        "[tool.gpulint]\n\n"
        f'[[tool.gpulint.workloads]]\nentrypoint = "pretrain/run.py"\ncompute = "{AMB_BIG}"\n\n'
        f'[[tool.gpulint.workloads]]\nentrypoint = "finetune/run.py"\ncompute = "{AMB_SMALL}"\n'))
    wls = {w["entrypoint"]: w for w in _workloads_json(repo)["workloads"]}
    pre, fine = wls["pretrain/run.py"], wls["finetune/run.py"]
    assert pre["compute"]["id"] == AMB_BIG and fine["compute"]["id"] == AMB_SMALL
    assert pre["compute"]["capacity"] == "spot" and pre["compute"]["instance_fact"] == "infra/main.tf:8"
    check_price(pre["compute"], "p5.48xlarge", "spot", nodes=1)
    assert fine["compute"]["capacity"] == "on-demand"  # aws_instance without market options
    check_price(fine["compute"], "g5.12xlarge", "on-demand", nodes=1)
    for wl in (pre, fine):
        assert f"config: workloads table pins compute {wl['compute']['id']}" in wl["links"]
        assert not any(u.startswith("compute:") for u in wl["unknown"])
    assert fine["resolved"]["model"]["params"] == 335_141_888  # bert-large-uncased


def test_ambiguous_pin_is_pasteable_toml():
    for wl in workloads("wl-ambiguous"):
        (amb,) = [u for u in wl["unknown"] if u.startswith("compute: ambiguous")]
        head, snippet = amb.split(" Pin it in pyproject.toml:\n", 1)
        assert head == (f"compute: ambiguous: 2 GPU compute targets ({AMB_BIG}, {AMB_SMALL}) and "
                        "2 training workloads without one.")
        # the snippet is a TOML table of its own; it names no target for the user (a placeholder, not a guess)
        doc = tomllib.loads(snippet)
        assert doc == {"tool": {"gpulint": {"workloads": [
            {"entrypoint": wl["entrypoint"], "compute": "<one of the targets above>"}]}}}


# -- malformed and partial infrastructure --------------------------------------------------------------------
def test_malformed_scan_does_not_crash():
    rc, data = scan_json("wl-malformed")
    assert rc == 1
    got = sorted((f["code"], f["path"], f["line"]) for f in data["findings"] if f["code"].startswith("SYS"))
    assert got == [  # the Helm template is read with placeholders: no SYS001, and no facts from it
        ("SYS001", "configs/ds.json", 5),
        ("SYS001", "infra/network.tf", 11),
        ("SYS003", "infra/gpu.tf", 4),
    ]
    # none of the broken files feeds the workload: SYS001 at info, CI fails on the SPOT warnings only
    assert {f["severity"] for f in data["findings"] if f["code"] == "SYS001"} == {"info"}
    sys3 = next(f for f in data["findings"] if f["code"] == "SYS003")
    assert "p7.48xlarge" in sys3["message"]
    assert not any(f["code"] == "SYS002" for f in data["findings"])


def test_malformed_workloads_stay_unknown():
    wl = only("wl-malformed")
    assert wl["entrypoint"] == "train.py"
    assert [launcher(wl)] == [("python", None, None, "sky/task.yaml:7")]
    comp = wl["compute"]
    assert comp["id"] == "sky/task.yaml#quantum-run"
    assert ({"type": "QPU9000", "count": 8}, "sky/task.yaml:3") in facts_of(comp["facts"], "compute.accelerator")
    # an unknown accelerator is not turned into some instance or price
    assert comp.get("instance") is None and comp.get("usd_per_hour") is None and comp.get("gpu_model") is None
    assert comp["capacity"] == "spot" and comp["nodes"] == 1 and comp["gpus_per_node"] == 8
    assert [u for u in wl["unknown"] if u.startswith("instance:")]
    # the broken files contribute nothing: no config from ds.json, no compute from the Helm template
    assert wl["configs"] == []
    assert not any("k8s/" in l or "infra/" in l for l in wl["links"])
    res = wl["resolved"]
    assert res["precision"]["dtypes"] == ["fp16"]
    assert res["checkpoint"] == {"saves": ["torch.save at train.py:19"], "resumes": []}


def test_malformed_unknown_accelerator_is_named():
    wl = only("wl-malformed")
    assert "instance: accelerator 'QPU9000' x8 matches no catalogue instance" in wl["unknown"]
    assert wl["compute"]["why_no_price"] == "accelerator 'QPU9000' x8 matches no catalogue instance"


# -- every fixture: text format, scan JSON, schema ------------------------------------------------------------
@pytest.mark.parametrize("name", WL_FIXTURES)
def test_text_shows_every_fact_with_file_line(name):
    text = workloads_text(name)
    for wl in workloads(name):
        assert f"workload {wl['name']}\n  entrypoint: {wl['entrypoint']}\n" in text
        for l in wl["launchers"]:
            assert f"launcher: {l['value']['tool']} at {l['where']}" in text
        for c in wl["configs"]:
            assert f"  config: {c}\n" in text
        for f in wl["facts"]:
            assert re.search(rf"    {re.escape(f['kind'])}: .*  \({re.escape(f['where'])}\)\n", text), (f["kind"], f["where"])
        for e in wl["env"]:
            value = e["value"]["value"] if e["value"]["value"] is not None else "(not a literal value)"
            assert f"env: {e['value']['name']}={value}  ({e['where']})" in text
        if wl["compute"]:
            for f in wl["compute"]["facts"]:
                assert f"    {f['kind']}: " in text and f"({f['where']})" in text
            comp = wl["compute"]
            if comp.get("usd_per_hour") is not None:
                # the price line names the total, the unit price, capacity, region, date and source
                assert (f"    price: ${comp['usd_per_hour']:.2f}/h for all nodes (${comp['unit_usd_per_hour']:.2f}/h each, "
                        f"{comp.get('capacity') or 'on-demand'}, {comp['region']}; as of {comp['as_of']}; {comp['price_source']})\n") in text
        for r in wl["links"]:
            assert f"  linked: {r}\n" in text
        for u in wl["unknown"]:
            assert f"  unknown: {u}\n" in text


@pytest.mark.parametrize("name", WL_FIXTURES)
def test_scan_json_carries_the_same_workloads(name):
    _, data = scan_json(name)
    jsonschema.Draft202012Validator(OUTPUT_SCHEMA).validate(data)
    assert data["workloads"] == list(workloads(name))


@pytest.mark.parametrize("name", WL_FIXTURES)
def test_every_fixture_is_documented_and_parses(name):
    doc = (FIXTURES / name / "FIXTURE.md").read_text(encoding="utf-8")
    assert doc.startswith(f"# {name}\n")
    _, data = scan_json(name)
    sys001 = [f for f in data["findings"] if f["code"] == "SYS001"]
    assert (sys001 != []) == (name == "wl-malformed"), sys001
