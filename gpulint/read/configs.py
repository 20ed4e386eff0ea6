"""Facts from training configuration files: accelerate YAML, DeepSpeed JSON,
HF ``TrainingArguments`` JSON/YAML and model ``config.json``; the configs of
config-driven trainers (Lightning/Hydra/NeMo) are read by trainer_configs, those of packaged trainers
(axolotl, LLaMA-Factory, torchtune) by packaged.
Each file is recognised by its keys, not its name."""
from __future__ import annotations

from typing import Any

from gpulint.core.model import Fact
from gpulint.core.sources import Source
from gpulint.read import packaged
from gpulint.read.trainer_configs import hydra_defaults, trainer_facts
from gpulint.read.yamlnodes import Doc

_PRECISION_WORDS = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "no": "no", "none": "no", "fp32": "fp32"}


def is_accelerate_config(d: Any) -> bool:
    return isinstance(d, dict) and ("compute_environment" in d or ("distributed_type" in d and "mixed_precision" in d))


def is_deepspeed_config(d: Any) -> bool:
    # TrainingArguments files share keys such as gradient_accumulation_steps; they have output_dir
    return isinstance(d, dict) and "output_dir" not in d and any(
        k in d for k in ("zero_optimization", "train_micro_batch_size_per_gpu", "train_batch_size", "gradient_accumulation_steps")
    ) and any(k in d for k in ("zero_optimization", "fp16", "bf16", "optimizer", "train_micro_batch_size_per_gpu"))


def is_hf_args(d: Any) -> bool:
    return isinstance(d, dict) and "output_dir" in d and any(
        k in d for k in ("per_device_train_batch_size", "learning_rate", "num_train_epochs", "max_steps", "bf16", "fp16")
    )


def is_model_config(d: Any) -> bool:
    return isinstance(d, dict) and ("model_type" in d or "architectures" in d) and any(
        k in d for k in ("hidden_size", "n_embd", "d_model")
    )


def _bool(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.lower() in ("true", "false"):
        return v.lower() == "true"
    if v == "auto":
        return "auto"
    return None


def config_facts(source: Source) -> list[Fact]:
    out: list[Fact] = []
    for doc in source.tree or []:
        if getattr(doc, "template", False):  # read with placeholders: nothing in it is known until rendered
            continue
        d = doc.data
        trainer = packaged.which(d)
        if trainer is not None:  # before the HF-arguments test: these configs have output_dir and bf16 keys too
            out += packaged.facts(source, doc, trainer)
            if trainer.config_arg == "hydra":  # a Hydra config: its defaults list composes group files
                out += hydra_defaults(source, doc)
        elif is_accelerate_config(d):
            out += _accelerate(source, doc)
        elif is_hf_args(d):
            out += _hf_args(source, doc)
        elif is_deepspeed_config(d):
            out += _deepspeed(source, doc, d, ())
        elif is_model_config(d):
            out.append(Fact("model.config", {k: v for k, v in d.items() if isinstance(v, (int, float, str, bool, list))},
                            _loc(source, doc, ()), "config.json"))
        else:  # Lightning / Hydra / NeMo trainer configs (gpulint.read.trainer_configs)
            out += trainer_facts(source, doc)
    return out


def _loc(source: Source, doc: Doc, path: tuple):
    line, col = doc.at(path)
    return source.loc(line, col)


def _accelerate(source: Source, doc: Doc) -> list[Fact]:
    d = doc.data
    mp = d.get("mixed_precision")
    mp_s = _PRECISION_WORDS.get(str(mp).lower()) if mp is not None else None
    ds = d.get("deepspeed_config") if isinstance(d.get("deepspeed_config"), dict) else {}
    values = {
        "mixed_precision": mp_s,
        "num_machines": d.get("num_machines") if isinstance(d.get("num_machines"), int) else None,
        "num_processes": d.get("num_processes") if isinstance(d.get("num_processes"), int) else None,
        "distributed_type": d.get("distributed_type"),
        "deepspeed_config_file": ds.get("deepspeed_config_file"),
        "zero_stage": ds.get("zero_stage") if isinstance(ds.get("zero_stage"), int) else None,
        "offload_optimizer": str(ds.get("offload_optimizer_device", "none")).lower() not in ("none", ""),
        "offload_param": str(ds.get("offload_param_device", "none")).lower() not in ("none", ""),
        "fsdp": isinstance(d.get("fsdp_config"), dict) and bool(d.get("fsdp_config")),
    }
    out = [Fact("config.accelerate", values, _loc(source, doc, ()), "accelerate")]
    if "mixed_precision" in d:
        enabled = None if mp_s is None else mp_s not in ("no", "fp32")
        out.append(Fact("precision", {"mechanism": "accelerate_config", "dtype": mp_s, "enabled": enabled},
                        _loc(source, doc, ("mixed_precision",)), "mixed_precision"))
    if values["zero_stage"] is not None:
        out.append(Fact("sharding", {"via": "deepspeed", "stage": values["zero_stage"], "offload": values["offload_optimizer"] or values["offload_param"]},
                        _loc(source, doc, ("deepspeed_config", "zero_stage")), "deepspeed_config.zero_stage"))
    if isinstance(values["deepspeed_config_file"], str):
        out.append(Fact("config_ref", {"kind": "deepspeed", "path": values["deepspeed_config_file"]},
                        _loc(source, doc, ("deepspeed_config", "deepspeed_config_file")), "deepspeed_config_file"))
    return out


def _deepspeed(source: Source, doc: Doc, d: dict, base: tuple) -> list[Fact]:
    def enabled(key: str) -> Any:
        sect = d.get(key)
        return _bool(sect.get("enabled", True if key == "bf16" else False)) if isinstance(sect, dict) else None

    fp16, bf16 = enabled("fp16"), enabled("bf16") if "bf16" in d else enabled("bfloat16")
    amp = enabled("amp")
    zero = d.get("zero_optimization") if isinstance(d.get("zero_optimization"), dict) else {}
    stage = zero.get("stage") if isinstance(zero.get("stage"), int) else None
    off_opt = isinstance(zero.get("offload_optimizer"), dict) and str(zero["offload_optimizer"].get("device", "none")).lower() not in ("none", "")
    off_par = isinstance(zero.get("offload_param"), dict) and str(zero["offload_param"].get("device", "none")).lower() not in ("none", "")
    opt = d.get("optimizer", {}).get("type") if isinstance(d.get("optimizer"), dict) else None
    values = {"fp16": fp16, "bf16": bf16, "zero_stage": stage, "offload_optimizer": off_opt, "offload_param": off_par, "optimizer": opt,
              "activation_checkpointing": isinstance(d.get("activation_checkpointing"), dict)}
    out = [Fact("config.deepspeed", values, _loc(source, doc, base), "deepspeed")]
    if fp16 is True or bf16 is True:
        key = "bf16" if bf16 is True else "fp16"
        out.append(Fact("precision", {"mechanism": "deepspeed", "dtype": key, "enabled": True}, _loc(source, doc, base + (key,)), f"{key}.enabled"))
    elif fp16 == "auto" or bf16 == "auto":
        # HF integration: "auto" takes TrainingArguments' fp16/bf16
        out.append(Fact("precision", {"mechanism": "deepspeed", "dtype": None, "enabled": None, "auto": True},
                        _loc(source, doc, base + ("bf16" if bf16 == "auto" else "fp16",)), "auto"))
    elif amp is True:
        out.append(Fact("precision", {"mechanism": "deepspeed", "dtype": "fp16", "enabled": True}, _loc(source, doc, base + ("amp",)), "amp.enabled"))
    else:
        where = base + ("fp16",) if "fp16" in d else base + ("bf16",) if "bf16" in d else base
        out.append(Fact("precision", {"mechanism": "deepspeed", "dtype": "fp32", "enabled": False}, _loc(source, doc, where),
                        "fp16.enabled" if "fp16" in d else "bf16.enabled" if "bf16" in d else "deepspeed"))
    if stage is not None:
        out.append(Fact("sharding", {"via": "deepspeed", "stage": stage, "offload": off_opt or off_par, "offload_optimizer": off_opt,
                                     "offload_param": off_par}, _loc(source, doc, base + ("zero_optimization", "stage")), "zero_optimization.stage"))
    if values["activation_checkpointing"]:
        out.append(Fact("grad_checkpointing", {"enabled": True, "via": "deepspeed activation_checkpointing"},
                        _loc(source, doc, base + ("activation_checkpointing",)), "activation_checkpointing"))
    return out


def _hf_args(source: Source, doc: Doc) -> list[Fact]:
    d = doc.data
    fp16, bf16 = _bool(d.get("fp16", False)), _bool(d.get("bf16", False))
    values = {k: d[k] for k in ("fp16", "bf16", "tf32", "gradient_checkpointing", "save_strategy", "save_steps", "deepspeed",
                                "dataloader_num_workers", "dataloader_pin_memory", "resume_from_checkpoint", "output_dir", "optim")
              if k in d}
    out = [Fact("config.hf_args", values, _loc(source, doc, ()), "TrainingArguments")]
    if fp16 is True or bf16 is True:
        key = "bf16" if bf16 is True else "fp16"
        out.append(Fact("precision", {"mechanism": "hf_args_file", "dtype": key, "enabled": True}, _loc(source, doc, (key,)), key))
    elif fp16 is False and bf16 is False:
        where = ("bf16",) if "bf16" in d else ("fp16",) if "fp16" in d else ()
        out.append(Fact("precision", {"mechanism": "hf_args_file", "dtype": "fp32", "enabled": False}, _loc(source, doc, where), "bf16"))
    if isinstance(d.get("deepspeed"), str):
        out.append(Fact("config_ref", {"kind": "deepspeed", "path": d["deepspeed"]}, _loc(source, doc, ("deepspeed",)), "deepspeed"))
    if "tf32" in d:
        out.append(Fact("tf32", {"enabled": _bool(d["tf32"]), "via": "tf32"}, _loc(source, doc, ("tf32",)), "tf32"))
    return out
