"""The fact vocabulary: what extractors may say about a file, and what rules read.

Every fact is a `gpulint.model.Fact`: ``kind``, JSON-compatible ``value``, a
``Location``, the judged ``key`` and, for facts that describe one compute target
or one launcher invocation, a ``target`` id (unique within the file, e.g.
``aws_instance.trainer`` or ``PyTorchJob/llama/Worker``).

A value that cannot be decided statically is ``None`` (unknown); a value that
comes from a command-line flag of the script is ``{"cli_arg": "--bf16",
"default": False}`` and is resolved against the launchers of the workload.

Code facts (Python scripts and notebooks)
----------------------------------------
trains            {"via": "loop"|"hf_trainer"|"lightning"|"accelerate"|"keras"|"deepspeed"|"sft_trainer"}
uses_gpu          {"via": ".cuda()"|"device"|"accelerate"|"hf_trainer"|"lightning"|...}
inference         {"via": "no_grad"|"inference_mode"|"eval"|"pipeline"|"generate"}
precision         {"mechanism": M, "dtype": "bf16"|"fp16"|"fp8"|"fp32"|"no"|None, "enabled": bool|None|cli}
                  M in autocast, hf_args, accelerate, lightning, deepspeed, fsdp, keras, model_cast, launcher
grad_scaler       {}
tf32              {"enabled": bool|None}
dataloader        {"num_workers": int|None|cli, "pin_memory": bool|None|cli, "num_workers_set": bool, "pin_memory_set": bool}
process_group     {"backend": "nccl"|"gloo"|"mpi"|None}
dataparallel      {}
ddp               {"via": "DistributedDataParallel"|"FSDP"|"accelerate"|...}
checkpoint.save   {"via": "torch.save"|"save_pretrained"|"save_state"|"save_checkpoint"|"hf_trainer"|"lightning"|"dcp", "dir": str|None}
checkpoint.resume {"via": "load_state_dict"|"resume_from_checkpoint"|"ckpt_path"|"load_state"|"load_checkpoint"|"dcp"}
model.name        "meta-llama/Llama-2-70b-hf" (attrs: load_in_4bit, load_in_8bit, quantization_config)
model.config      {hidden_size, num_hidden_layers, ...} from a config.json or a literal transformers *Config(...) call
quantized_load    {"bits": 4|8|None} (BitsAndBytesConfig)
cpu_only          {"via": ...} (e.g. Lightning accelerator="cpu")
config_ref        {"kind": "deepspeed", "path": "ds.json"} (a config file named by code or another config)
optimizer         {"name": "adamw"|"adam"|"sgd"|"adam8bit"|..., "qualname": str}
sharding          {"via": "fsdp"|"deepspeed", "stage": 0-3|None, "offload": bool|None}
grad_checkpointing {"enabled": bool|None, "via": str}
peft              {"method": "lora"|"qlora", "load_in_4bit": bool, "load_in_8bit": bool}
local_import      "pkg/module.py" (a module of this repository imported by the file)
argfile           "configs/args.json" (a JSON/YAML argument file the script reads)

Launcher and configuration facts (shell, Slurm, Dockerfile, YAML, JSON, Makefile)
--------------------------------------------------------------------------------
launch            {"tool": "python"|"torchrun"|"accelerate"|"deepspeed"|"srun"|"mpirun"|"sagemaker"|"skypilot"|"k8s",
                   "script": "train.py"|None, "module": "pkg.train"|None, "args": [str],
                   "nnodes": int|"min:max"|None, "nproc_per_node": int|None, "mixed_precision": str|None,
                   "config_file": str|None, "deepspeed_config": str|None, "num_machines", "num_processes",
                   "wrapper": {"tool": "srun"|"mpirun"|"mpiexec", "nodes", "ntasks", "ntasks_per_node", "gpus_per_node"}|None}
                  plus per tool: accelerate multi_gpu/use_deepspeed/use_fsdp; deepspeed hostfile;
                  skypilot managed/use_spot/accelerators/instance_type
env               {"name": "NCCL_P2P_DISABLE", "value": "1"}
config.accelerate {"mixed_precision": str|None, "num_machines": int|None, "num_processes": int|None,
                   "distributed_type": str|None, "deepspeed_config_file": str|None, "zero_stage": int|None, ...}
config.deepspeed  {"fp16": bool|None, "bf16": bool|None, "zero_stage": int|None, "offload_optimizer": bool, "offload_param": bool}
config.hf_args    {"fp16": ..., "bf16": ..., "tf32": ..., "gradient_checkpointing": ..., "save_strategy": ...}
config.lightning  {"precision": ...}

Compute facts (Terraform, Kubernetes, SkyPilot, SageMaker, Slurm); all carry `target`
------------------------------------------------------------------------------------
compute.target        {"source": "terraform"|"kubernetes"|"skypilot"|"sagemaker"|"slurm"|..., "provider": "aws"|"gcp"|"azure"|None,
                       "resource": "aws_instance.trainer", "role": "training"|"serving"|"notebook"|None}
compute.instance_type "p4d.24xlarge" (as written; SageMaker ``ml.`` names included)
compute.accelerator   {"type": "A100"|"nvidia-tesla-a100"|..., "count": int|None}
compute.capacity      "spot"|"on-demand"
compute.node_count    int|None
compute.min_nodes     int|None
compute.gpus_per_node int|None
compute.efa           int (EFA interfaces or vpc.amazonaws.com/efa resources requested; 0 = explicitly none)
compute.checkpoint    {"s3_uri": str|None, "local_path": str|None, "max_wait": int|None, "max_run": int|None}
storage.mount         {"path": "/checkpoint", "bucket": str|None, "mode": "MOUNT"|"COPY"} (SkyPilot file_mounts)

compute.target sources: terraform, kubernetes, skypilot, sagemaker, slurm, azureml, vertex. Terraform values
may be {"ref": "var.x"} (optionally with "map": {raw value: normalised value}), resolved by gpulint.resolve
from the module folder's variables and locals.

Infrastructure facts without a target (Terraform)
------------------------------------------------
tf.variable           {"name": "itype", "default": literal}
tf.local              {"name": "x", "value": literal}
infra.budget          {"resource": "aws_budgets_budget.gpu"} (budgets and spend alarms)
infra.placement_group {"resource": ...}
"""
from __future__ import annotations

from typing import Any


def cli_arg(flag: str, default: Any) -> dict:
    """A value decided by a command-line flag of the script (resolved per workload)."""
    return {"cli_arg": flag, "default": default}


def is_cli(value: Any) -> bool:
    return isinstance(value, dict) and "cli_arg" in value


def flag_names(flag: str) -> tuple[str, ...]:
    """Spellings of a flag a launcher may use: --bf16 and --bf16=..., -/_ variants."""
    bare = flag.lstrip("-")
    return tuple({bare, bare.replace("_", "-"), bare.replace("-", "_")})
