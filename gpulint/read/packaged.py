"""Packaged trainers: training programs installed as a package (pip, the image) and driven by one YAML file.

axolotl (``axolotl train cfg.yml``, ``accelerate launch -m axolotl.cli.train cfg.yml``), LLaMA-Factory
(``llamafactory-cli train cfg.yaml``) and torchtune (``tune run [--nproc_per_node 8] RECIPE --config cfg.yaml``)
run code that is not in the repository, but their behaviour is documented and their config decides it: precision,
checkpoints, the base model. So a job that launches one with a config of the repository is a workload whose code is
the config (gpulint.link.workloads attaches it), not an unknown image script. Two are configured by their launch
line's flags instead: fairseq (``fairseq-train data-bin/wmt --arch transformer --fp16 --save-dir ckpt``), always,
and LLaMA-Factory when no config file is named (``llamafactory-cli train --stage sft --model_name_or_path M
--bf16 True``, its HfArgumentParser reading the command line); ``flag_config`` turns those flags into the same keys
a config file has, so one reading serves both.

This module holds what gpulint knows of each trainer (``TRAINERS``): how its CLI is written (read by
gpulint.read.shell.commands), the module the CLI runs, how its config is recognised (by its keys, never its name)
and what the config's keys mean, with the trainer's own defaults. A key that is absent says only what the trainer's
documented default says: axolotl's ``bf16`` defaults to ``auto`` (bf16 where the GPU supports it: decided at run
time, so no fact says fp32); LLaMA-Factory without ``bf16``/``fp16`` infers the compute dtype from the GPU and the
checkpoint (``infer_optim_dtype``: bf16 > fp16 > fp32), so only ``true`` is read; a torchtune config without
``dtype`` says nothing (recipes read it from the config).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
import re
from typing import Any

from gpulint.core.model import Fact, Location
from gpulint.core.sources import Source
from gpulint.read.yamlnodes import Doc


@dataclass(frozen=True)
class PackagedTrainer:
    name: str  # the id facts carry (config.packaged_trainer, trains via)
    label: str  # how messages name it
    module: str  # the module its CLI runs (what a launch fact's ``module`` holds)
    cli: tuple[tuple[str, str], ...]  # (program, subcommand) that train
    docs: str
    #: for a trainer whose command runs one of several programs (torchtune's recipes), the names of those that train
    trains: "re.Pattern[str] | None" = None
    #: the launch line's flags configure it when no config file is named (fairseq never takes one)
    reads_flags: bool = False
    #: how its launch names the config: "positional" (the first YAML argument), "--config" (torchtune), "hydra"
    #: (``--config-dir D --config-name N`` and ``key=value`` overrides) or "" (no config file: flags only)
    config_arg: str = "positional"


AXOLOTL = PackagedTrainer("axolotl", "axolotl", "axolotl.cli.train", (("axolotl", "train"),),
                          "https://docs.axolotl.ai/docs/config-reference.html")
LLAMA_FACTORY = PackagedTrainer("llama_factory", "LLaMA-Factory", "llamafactory.train.tuner",
                                (("llamafactory-cli", "train"), ("lmf", "train")),
                                "https://llamafactory.readthedocs.io/en/latest/advanced/arguments.html", reads_flags=True)
# torchtune's recipes (`tune ls`): full/lora fine-tunes, DPO, PPO, GRPO, QAT and distillation train; eleuther_eval,
# generate and quantize do not (https://pytorch.org/torchtune/stable/recipes/recipes_overview.html)
TORCHTUNE = PackagedTrainer("torchtune", "torchtune", "torchtune.recipes", (("tune", "run"),),
                            "https://pytorch.org/torchtune/stable/deep_dives/configs.html",
                            re.compile(r"finetune|dpo|ppo|grpo|qat|distillation|train", re.I), config_arg="--config")
# fairseq's console script (no subcommand): every option is a flag of the command line
# (https://fairseq.readthedocs.io/en/latest/command_line_tools.html)
FAIRSEQ = PackagedTrainer("fairseq", "fairseq", "fairseq_cli.train", (("fairseq-train", ""),),
                          "https://fairseq.readthedocs.io/en/latest/command_line_tools.html", reads_flags=True,
                          config_arg="")
# fairseq's Hydra entry point: a YAML of FairseqConfig's groups (common:, checkpoint:, task: ...) chosen by
# --config-dir/--config-name, merged over fairseq's dataclass defaults, with key=value overrides on the line
# (https://fairseq.readthedocs.io/en/latest/hydra_integration.html)
FAIRSEQ_HYDRA = PackagedTrainer("fairseq_hydra", "fairseq", "fairseq_cli.hydra_train",
                                (("fairseq-hydra-train", ""),),
                                "https://fairseq.readthedocs.io/en/latest/hydra_integration.html", config_arg="hydra")
TRAINERS = (AXOLOTL, LLAMA_FACTORY, TORCHTUNE, FAIRSEQ, FAIRSEQ_HYDRA)
BY_NAME = {t.name: t for t in TRAINERS}
#: trainers whose command is a program alone (``fairseq-train``), read as a console-script launch (tool "program")
#: so that a copy of the trainer in the repository resolves the name through its own packaging
PROGRAMS = {p: t for t in TRAINERS for p, sub in t.cli if not sub}


def trainer_of_module(module: str | None) -> PackagedTrainer | None:
    """The packaged trainer a launched module belongs to (``axolotl.cli.train``, ``torchtune.recipes.x``)."""
    if not module:
        return None
    for t in TRAINERS:
        if module == t.module or module.startswith(t.module + "."):
            program = module[len(t.module) + 1:]
            return t if t.trains is None or t.trains.search(program) else None
    return None


def trainer_of_launch(value: dict) -> PackagedTrainer | None:
    """The packaged trainer a launch fact's value runs: by the module it names, or the CLI's own mark (a recipe file
    of the repository run by ``tune run``)."""
    if value.get("tool") == "program":
        return PROGRAMS.get(value.get("program"))
    return trainer_of_module(value.get("module")) or BY_NAME.get(value.get("trainer"))


def trainer_of_cli(program: str, subcommand: str) -> PackagedTrainer | None:
    return next((t for t in TRAINERS if (program, subcommand) in t.cli), None)


_INT = re.compile(r"^-?\d+$")


def flag_config(args: list[str]) -> dict:
    """The keys a launch line's flags set, as a config file would hold them: ``--save-dir ckpt`` -> save_dir: ckpt,
    ``--bf16 True`` / ``--bf16=true`` -> bf16: "True" / "true", a bare ``--fp16`` -> fp16: True, ``--quantization_bit 4``
    -> 4 (argparse and HfArgumentParser spell dashes and underscores alike). Positional words (fairseq's data folder)
    are no keys."""
    out: dict = {}
    for i, a in enumerate(args):
        if not a.startswith("--") or len(a) < 3:
            continue
        name, eq, val = a[2:].partition("=")
        key = name.replace("-", "_")
        if not eq:
            nxt = args[i + 1] if i + 1 < len(args) else None
            if nxt is not None and not nxt.startswith("--"):
                val = nxt
            else:
                out[key] = True
                continue
        out[key] = int(val) if _INT.match(val) else val
    return out


# ----------------------------------------------------------------------------------------------- recognition

#: keys only an axolotl config has (its schema: https://docs.axolotl.ai/docs/config-reference.html)
_AXOLOTL_KEYS = ("micro_batch_size", "sequence_len", "adapter", "lora_r", "load_in_4bit", "load_in_8bit", "sample_packing",
                 "base_model_config", "datasets", "val_set_size", "saves_per_epoch", "evals_per_epoch")
#: LLaMA-Factory's stages (``stage:``) and fine-tuning types
_LMF_STAGES = {"pt", "sft", "rm", "ppo", "dpo", "kto"}
_LMF_KEYS = ("finetuning_type", "template", "dataset_dir", "lora_target", "cutoff_len")


def which(d: Any) -> PackagedTrainer | None:
    """The packaged trainer whose config this document is, by its keys."""
    if not isinstance(d, dict):
        return None
    if isinstance(d.get("base_model"), str) and sum(k in d for k in _AXOLOTL_KEYS) >= 2:
        return AXOLOTL
    if isinstance(d.get("model_name_or_path"), str) and str(d.get("stage")) in _LMF_STAGES \
            and any(k in d for k in _LMF_KEYS):
        return LLAMA_FACTORY
    model, ckpt = d.get("model"), d.get("checkpointer")
    if isinstance(model, dict) and str(model.get("_component_", "")).startswith("torchtune.") \
            and (isinstance(ckpt, dict) or "recipe" in d or "dtype" in d):
        return TORCHTUNE
    if _is_fairseq_training(d):
        return FAIRSEQ_HYDRA
    return None


#: FairseqConfig's groups a training config sets beside its task (fairseq/dataclass/configs.py)
_FAIRSEQ_GROUPS = ("common", "checkpoint", "distributed_training", "dataset")
_FAIRSEQ_TRAINING = ("optimization", "optimizer", "lr_scheduler", "criterion")


def _is_fairseq_training(d: dict) -> bool:
    """A fairseq-hydra-train config: a task chosen by ``_name`` with what trains it (an optimizer, a criterion) and
    fairseq's own groups; a decoding config (``decoding:``, ``common_eval:``) trains nothing and is not one."""
    task = d.get("task")
    return isinstance(task, dict) and "_name" in task \
        and any(isinstance(d.get(k), dict) for k in _FAIRSEQ_TRAINING) \
        and any(isinstance(d.get(k), dict) for k in _FAIRSEQ_GROUPS)


# ----------------------------------------------------------------------------------------------- facts

def _bool(v: Any) -> Any:
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and v.strip().lower() in ("true", "false"):
        return v.strip().lower() == "true"
    return v


def facts(source: Source, doc: Doc, trainer: PackagedTrainer) -> list[Fact]:
    """The facts of a packaged trainer's config file."""

    def loc(*path):
        line, col = doc.at(path)
        return source.loc(line, col)

    return facts_of(doc.data, trainer, loc)


def flag_facts(args: list[str], trainer: PackagedTrainer, at: Location, complete: bool) -> list[Fact]:
    """The facts of a launch line whose flags configure the trainer, each at the launch. ``complete``: the line holds
    every flag the trainer gets (no ``$EXTRA_ARGS`` word that may expand to more), so an absent flag means the
    trainer's default."""
    d = flag_config(args)
    out = facts_of(d, trainer, lambda *path: at)
    if not complete:
        for i, f in enumerate(out):
            if f.kind == "precision" and f.value.get("dtype") in ("fp32", None) and not f.value.get("undecided"):
                # an fp32 default from flags the line may not show: unknown, not fp32
                out[i] = left_open(f, "the launch line passes words that may expand to more flags")
    return out


def left_open(precision: Fact, why: str) -> Fact:
    """A precision fact read from a trainer's defaults, made unknown: the launch line may set it in words gpulint
    cannot read (``$EXTRA_ARGS``, ``"$@"``)."""
    return replace(precision, value={**precision.value, "dtype": None, "enabled": None, "default": False, "undecided": why})


def facts_of(d: dict, trainer: PackagedTrainer, loc) -> list[Fact]:
    """The facts of a trainer's settings ``d`` (a config file's mapping, or ``flag_config`` of a launch line's
    flags); ``loc(*path)`` places each."""
    if trainer is FAIRSEQ:
        # store_true switches: a flag present is on (the word after a bare --fp16 is the data folder, not its value)
        return _fairseq({**d, **{k: True for k in (*_FAIRSEQ_SWITCHES, "cpu", "no_save") if k in d}}, loc,
                        "none of --fp16/--bf16/--amp")
    if trainer is FAIRSEQ_HYDRA:
        flat = fairseq_settings(d)
        # a key the config leaves out is placed at its group (the common: section), else at the config's top
        return _fairseq(flat, lambda *path: loc(_fairseq_group(path[0]), path[0]) if path else loc(),
                        "none of common.fp16/bf16/amp", hydra=True)
    return _settings(d, trainer, loc)


#: fairseq's precision switches (CommonConfig), in the order its trainer tests them
_FAIRSEQ_SWITCHES = ("bf16", "memory_efficient_bf16", "fp16", "memory_efficient_fp16", "amp")
#: the keys of FairseqConfig's groups gpulint reads, by group
_FAIRSEQ_KEYS = {"common": (*_FAIRSEQ_SWITCHES, "cpu"), "checkpoint": ("save_dir", "no_save", "restore_file"),
                 "distributed_training": ("distributed_world_size",)}
FAIRSEQ_READ = frozenset(f"{g}.{k}" for g, keys in _FAIRSEQ_KEYS.items() for k in keys)


def _fairseq_group(key: str) -> str:
    return next(g for g, keys in _FAIRSEQ_KEYS.items() if key in keys)


def fairseq_settings(d: dict) -> dict:
    """The settings of a fairseq-hydra-train config (or of its launch's overrides, nested by group) gpulint reads,
    as flat keys (fp16, save_dir ...)."""
    flat = {}
    for group, keys in _FAIRSEQ_KEYS.items():
        section = d.get(group)
        if isinstance(section, dict):
            flat.update({k: section[k] for k in keys if k in section})
    return flat


def fairseq_overridden(settings: dict, overrides: dict, at: Location) -> tuple[list[Fact], set[str]]:
    """The facts of a fairseq-hydra-train config's ``settings`` with a launch's ``overrides`` (fairseq_settings of
    both) over them, for the concerns the overrides touch (precision, checkpoints), each placed at the launch; and
    those fact kinds, which replace the config's own."""
    if not overrides:
        return [], set()
    facts = _fairseq({**settings, **overrides}, lambda *path: at, "none of common.fp16/bf16/amp", hydra=True)
    kinds = ({"precision", "cpu_only"} if any(k in overrides for k in _FAIRSEQ_KEYS["common"]) else set()) | \
        ({"checkpoint.save", "checkpoint.resume"} if any(k in overrides for k in _FAIRSEQ_KEYS["checkpoint"]) else set()) | \
        ({"uses_gpu"} if "distributed_world_size" in overrides or "cpu" in overrides else set())
    return [f for f in facts if f.kind in kinds], kinds


def _settings(d: dict, trainer: PackagedTrainer, loc) -> list[Fact]:
    model = d.get("base_model") if trainer is AXOLOTL else d.get("model_name_or_path") if trainer is LLAMA_FACTORY \
        else (d.get("model") or {}).get("_component_")
    adapter = _adapter(d, trainer)
    value = {"trainer": trainer.name, "model": model if isinstance(model, str) else None, "adapter": adapter}
    if trainer is TORCHTUNE and _bool(d.get("fsdp_cpu_offload")) is True:
        value["cpu_offload"] = True  # a distributed recipe offloads the sharded state to the CPU
    out = [Fact("config.packaged_trainer", value, loc(), trainer.name)]
    out += _model(d, trainer, model, adapter, loc)
    out += _precision(d, trainer, loc)
    if trainer is not TORCHTUNE and isinstance(_bool(d.get("tf32")), bool):
        # axolotl and LLaMA-Factory pass tf32 to TrainingArguments, which sets torch.backends.cuda.matmul.allow_tf32
        out.append(Fact("tf32", {"enabled": _bool(d["tf32"]), "via": "tf32"}, loc("tf32"), "tf32"))
    out += _checkpoints(d, trainer, loc)
    if trainer is not TORCHTUNE and isinstance(d.get("deepspeed"), str):
        # axolotl and LLaMA-Factory hand it to the HF Trainer: linked like a TrainingArguments file's
        out.append(Fact("config_ref", {"kind": "deepspeed", "path": d["deepspeed"]}, loc("deepspeed"), "deepspeed"))
    return out


def _adapter(d: dict, trainer: PackagedTrainer) -> str | None:
    """lora / qlora / full: what is trained (a LoRA fine-tune needs a fraction of a full one's memory)."""
    if trainer is AXOLOTL:
        a = d.get("adapter")
        return str(a) if a else "full"
    if trainer is LLAMA_FACTORY:
        return str(d.get("finetuning_type") or "lora")  # LLaMA-Factory's default fine-tuning type is LoRA
    return _torchtune_builder((d.get("model") or {}).get("_component_"))[1] or "full"


#: torchtune's model builders (https://pytorch.org/torchtune/stable/api_ref_models.html) and the Hugging Face model
#: each builds (the checkpoints its configs download), without the lora_ / qlora_ prefix of their adapter variants
_TORCHTUNE_MODELS = {
    "llama2_7b": "meta-llama/Llama-2-7b-hf", "llama2_13b": "meta-llama/Llama-2-13b-hf", "llama2_70b": "meta-llama/Llama-2-70b-hf",
    "llama3_8b": "meta-llama/Meta-Llama-3-8B", "llama3_70b": "meta-llama/Meta-Llama-3-70B",
    "llama3_1_8b": "meta-llama/Llama-3.1-8B", "llama3_1_70b": "meta-llama/Llama-3.1-70B",
    "llama3_1_405b": "meta-llama/Llama-3.1-405B", "llama3_2_1b": "meta-llama/Llama-3.2-1B",
    "llama3_2_3b": "meta-llama/Llama-3.2-3B", "llama3_3_70b": "meta-llama/Llama-3.3-70B-Instruct",
    "mistral_7b": "mistralai/Mistral-7B-v0.1", "gemma_2b": "google/gemma-2b", "gemma_7b": "google/gemma-7b",
    "gemma2_2b": "google/gemma-2-2b", "gemma2_9b": "google/gemma-2-9b", "gemma2_27b": "google/gemma-2-27b",
    "qwen2_5_0_5b": "Qwen/Qwen2.5-0.5B", "qwen2_5_1_5b_base": "Qwen/Qwen2.5-1.5B", "qwen2_5_3b": "Qwen/Qwen2.5-3B",
    "qwen2_5_7b_base": "Qwen/Qwen2.5-7B", "qwen2_5_7b_instruct": "Qwen/Qwen2.5-7B", "qwen2_5_14b_base": "Qwen/Qwen2.5-14B",
    "qwen2_5_32b_base": "Qwen/Qwen2.5-32B", "qwen2_5_72b_base": "Qwen/Qwen2.5-72B",
    "phi3_mini": "microsoft/Phi-3-mini-4k-instruct",
}


def _torchtune_builder(component: Any) -> tuple[str | None, str | None]:
    """(builder without its adapter prefix, lora|qlora|None) of a torchtune model component."""
    if not isinstance(component, str) or not component.startswith("torchtune.models."):
        return None, None
    builder = component.rsplit(".", 1)[-1]
    for prefix in ("qlora_", "lora_"):
        if builder.startswith(prefix):
            return builder[len(prefix):], prefix[:-1]
    return builder, None


def _bits(d: dict, trainer: PackagedTrainer) -> int | None:
    """4 or 8 when the base model is loaded quantized (bitsandbytes)."""
    if trainer is AXOLOTL:
        return 4 if _bool(d.get("load_in_4bit")) is True else 8 if _bool(d.get("load_in_8bit")) is True else None
    if trainer is LLAMA_FACTORY:
        q = d.get("quantization_bit")
        return q if q in (4, 8) else None
    return 4 if _torchtune_builder((d.get("model") or {}).get("_component_"))[1] == "qlora" else None


def _model(d: dict, trainer: PackagedTrainer, model: Any, adapter: str | None, loc) -> list[Fact]:
    """The base model (model.name, as a from_pretrained load would give it), LoRA (peft), a quantized load and
    activation checkpointing: what sizes the run's memory and compute."""
    out: list[Fact] = []
    bits = _bits(d, trainer)
    key = "base_model" if trainer is AXOLOTL else "model_name_or_path" if trainer is LLAMA_FACTORY else "model"
    if trainer is TORCHTUNE:
        builder = _torchtune_builder(model)[0]
        model, key = _TORCHTUNE_MODELS.get(builder or ""), ("model", "_component_")
    attrs = {"load_in_4bit": True} if bits == 4 else {"load_in_8bit": True} if bits == 8 else {}
    if isinstance(model, str) and "/" in model and "${" not in model:
        out.append(Fact("model.name", model, loc(*key) if isinstance(key, tuple) else loc(key),
                        ".".join(key) if isinstance(key, tuple) else key, attrs=attrs))
    if adapter in ("lora", "qlora"):
        out.append(Fact("peft", {"method": "qlora" if adapter == "qlora" or bits else "lora", "via": trainer.name},
                        loc("adapter" if trainer is AXOLOTL else "finetuning_type" if trainer is LLAMA_FACTORY else "model"),
                        "adapter"))
    if bits:
        out.append(Fact("quantized_load", {"bits": bits}, loc("load_in_4bit" if bits == 4 else "load_in_8bit")
                        if trainer is AXOLOTL else loc("quantization_bit"), "quantized_load"))
    ckpt_key = "enable_activation_checkpointing" if trainer is TORCHTUNE else "gradient_checkpointing"
    on = _bool(d.get(ckpt_key))
    if trainer is LLAMA_FACTORY and "gradient_checkpointing" not in d:
        # LLaMA-Factory turns it on unless disable_gradient_checkpointing is set
        on = _bool(d.get("disable_gradient_checkpointing")) is not True
        ckpt_key = "disable_gradient_checkpointing" if "disable_gradient_checkpointing" in d else ckpt_key
    if isinstance(on, bool):
        out.append(Fact("grad_checkpointing", {"enabled": on, "via": f"{trainer.name} {ckpt_key}"},
                        loc(ckpt_key) if ckpt_key in d else loc(), ckpt_key))
    return out


def _precision(d: dict, trainer: PackagedTrainer, loc) -> list[Fact]:
    mech = {"mechanism": "packaged_config", "trainer": trainer.name}
    if trainer is TORCHTUNE:
        word = str(d.get("dtype", "")).strip().lower()
        dtype = {"bf16": "bf16", "bfloat16": "bf16", "fp16": "fp16", "float16": "fp16", "fp32": "fp32", "float32": "fp32"}.get(word)
        if dtype is None:  # absent or interpolated: the recipe's default decides, nothing here says which
            return [Fact("precision", {**mech, "dtype": None, "enabled": None,
                                       "undecided": "the torchtune config sets no literal dtype"}, loc(*(("dtype",) if "dtype" in d else ())), "dtype")]
        # torchtune casts the whole model to the dtype (no autocast): bf16 is on, fp32 is off
        return [Fact("precision", {**mech, "dtype": dtype, "enabled": dtype != "fp32"}, loc("dtype"), "dtype")]
    bf16, fp16 = _bool(d.get("bf16")), _bool(d.get("fp16"))
    if trainer is LLAMA_FACTORY and _bool(d.get("pure_bf16")) is True:
        bf16 = True
    if trainer is AXOLOTL:
        # bfloat16 / float16: the whole model cast, without autocast (axolotl's torch_dtype); so is an 8-bit load,
        # which axolotl loads in fp16 whatever bf16 says
        for key, dtype in (("bfloat16", "bf16"), ("float16", "fp16")):
            if _bool(d.get(key)) is True and bf16 is not True and fp16 is not True:
                return [Fact("precision", {**mech, "dtype": dtype, "enabled": True}, loc(key), key)]
        if _bool(d.get("load_in_8bit")) is True and bf16 is not True and fp16 is not True:
            return [Fact("precision", {**mech, "dtype": None, "enabled": None,
                                       "undecided": "axolotl loads an 8-bit model in fp16 whatever bf16 says"},
                         loc("load_in_8bit"), "load_in_8bit")]
    if bf16 is True or fp16 is True:
        key = "bf16" if bf16 is True else "fp16"
        return [Fact("precision", {**mech, "dtype": key, "enabled": True}, loc(key), key)]
    if trainer is AXOLOTL and (bf16 is None or bf16 == "auto"):
        # axolotl's default, bf16: auto, is bf16 wherever the GPU supports it: decided at run time
        at = ("bf16",) if "bf16" in d else ()
        return [Fact("precision", {**mech, "dtype": None, "enabled": None, "auto": True,
                                   "undecided": "bf16: auto (axolotl's default) picks bf16 where the GPU supports it"},
                     loc(*at), "bf16")]
    if trainer is LLAMA_FACTORY:
        # with neither bf16 nor fp16 LLaMA-Factory picks the compute dtype itself (infer_optim_dtype: bf16 > fp16 > fp32,
        # by what the GPU supports and the checkpoint's torch_dtype): decided at run time, never "fp32" from the file
        at = ("bf16",) if "bf16" in d else ("fp16",) if "fp16" in d else ()
        return [Fact("precision", {**mech, "dtype": None, "enabled": None,
                                   "undecided": "LLaMA-Factory infers the compute dtype (bf16 > fp16 > fp32) from the GPU "
                                                "and the checkpoint when neither bf16 nor fp16 is set"},
                     loc(*at), at[0] if at else "bf16")]
    if bf16 in (False, None) and fp16 in (False, None):
        # axolotl trains in fp32 when bf16 is false and fp16 unset or false
        where = ("bf16",) if "bf16" in d else ("fp16",) if "fp16" in d else ()
        return [Fact("precision", {**mech, "dtype": "fp32", "enabled": False, "default": not where},
                     loc(*where), where[0] if where else "bf16")]
    # a value gpulint does not read (an interpolation, fp16 false with bf16 unset ...): said to be unknown
    return [Fact("precision", {**mech, "dtype": None, "enabled": None, "undecided": "bf16/fp16 are not literal booleans"},
                 loc(), "bf16")]


def _checkpoints(d: dict, trainer: PackagedTrainer, loc) -> list[Fact]:
    out: list[Fact] = []
    if trainer is TORCHTUNE:
        if isinstance(d.get("checkpointer"), dict):
            # every recipe saves through its checkpointer at the end of each epoch
            out.append(Fact("checkpoint.save", {"via": "packaged_config", "dir": _str(d["checkpointer"].get("output_dir"))},
                            loc("checkpointer"), "checkpointer"))
        if _bool(d.get("resume_from_checkpoint")) is True:
            out.append(Fact("checkpoint.resume", {"via": "packaged_config", "value": True}, loc("resume_from_checkpoint"),
                            "resume_from_checkpoint"))
        return out
    # HF Trainer underneath: it saves every save_steps (500) unless save_strategy is "no"
    if str(d.get("save_strategy", "")).strip().lower() != "no":
        key = next((k for k in ("save_steps", "saves_per_epoch", "save_strategy", "output_dir") if k in d), None)
        out.append(Fact("checkpoint.save", {"via": "packaged_config", "dir": _str(d.get("output_dir")), "default": key is None},
                        loc(key) if key else loc(), key or "save_strategy"))
    for key in ("resume_from_checkpoint", "auto_resume_from_checkpoints"):
        v = _bool(d.get(key))
        if v not in (None, False, "") and str(v).lower() not in ("none", "null"):
            out.append(Fact("checkpoint.resume", {"via": "packaged_config", "value": v if isinstance(v, (bool, str)) else True},
                            loc(key), key))
    return out


def _fairseq(d: dict, loc, unset: str, hydra: bool = False) -> list[Fact]:
    """fairseq's settings (fairseq/dataclass/configs.py: CommonConfig, CheckpointConfig, DistributedTrainingConfig),
    from fairseq-train's flags or a fairseq-hydra-train config: it trains in fp32 unless fp16, bf16,
    memory_efficient_fp16/bf16 or amp is on (all default off); it saves checkpoint_last.pt and checkpoint_best.pt to
    save_dir (default checkpoints) every epoch unless no_save, and resumes from <save_dir>/checkpoint_last.pt when it
    exists (restore_file's default). A distributed_world_size of 2 or more asks for that many GPUs (its default: all the machine has).
    ``unset`` names the switches when none is set."""
    trainer = FAIRSEQ_HYDRA if hydra else FAIRSEQ
    mech = {"mechanism": "packaged_config", "trainer": trainer.name}
    value = {"trainer": trainer.name, "model": None, "adapter": "full"}
    settings = {k: v for k, v in d.items() if isinstance(v, (str, int, float, bool))}
    if hydra and settings:  # what the linker merges a launch's overrides over (fairseq_overridden)
        value["settings"] = settings
    out = [Fact("config.packaged_trainer", value, loc(), trainer.name)]
    switches = {k: _bool(d[k]) for k in _FAIRSEQ_SWITCHES if k in d}
    # a config's keys by their group (common.fp16, checkpoint.save_dir); flags by their name, as before
    spell = (lambda k: f"{_fairseq_group(k)}.{k}") if hydra else (lambda k: k)
    world = d.get("distributed_world_size")
    world = int(world) if isinstance(world, str) and world.isdigit() else world
    if _bool(d.get("cpu")) is True:
        # fairseq trains on the CPU whatever GPU the machine has (CommonConfig.cpu): no GPU precision to judge
        out.append(Fact("cpu_only", {"via": f"fairseq {spell('cpu')}"}, loc("cpu"), spell("cpu")))
        out.append(Fact("precision", {**mech, "dtype": None, "enabled": None, "undecided": f"{spell('cpu')} trains on the CPU"},
                        loc("cpu"), spell("cpu")))
    else:
        if type(world) is int and world > 1:
            # the trainer is asked for several GPUs (one process each; its default is every GPU the machine has): a
            # multi-GPU job, as a Lightning Trainer's devices=4 is
            out.append(Fact("uses_gpu", {"via": f"fairseq {spell('distributed_world_size')}", "several": True},
                            loc("distributed_world_size"), spell("distributed_world_size")))
        out.append(_fairseq_precision(switches, d, mech, loc, spell, unset))
    if _bool(d.get("no_save")) is not True:
        save_dir = d.get("save_dir")
        out.append(Fact("checkpoint.save", {"via": "packaged_config", "dir": _str(save_dir) if "save_dir" in d else "checkpoints",
                                            "default": "save_dir" not in d}, loc("save_dir"), spell("save_dir")))
        # restore_file defaults to checkpoint_last.pt in the save dir: a restarted job resumes from it
        restore = d.get("restore_file", "checkpoint_last.pt")
        out.append(Fact("checkpoint.resume", {"via": "packaged_config", "value": restore if isinstance(restore, str) else True,
                                              "default": "restore_file" not in d}, loc("restore_file"), spell("restore_file")))
    return out


def _fairseq_precision(switches: dict, d: dict, mech: dict, loc, spell, unset: str) -> Fact:
    """The precision fairseq's switches (their values as read) give: the first one on, else fp32 (a switch written
    false is where it is chosen, else fairseq's default), unknown for a value that is no literal boolean."""
    switch = next((k for k in _FAIRSEQ_SWITCHES if switches.get(k) is True), None)
    if switch is not None:
        dtype = "bf16" if "bf16" in switch else "fp16"  # amp is torch.cuda.amp's fp16 autocast with a scaler
        return Fact("precision", {**mech, "dtype": dtype, "enabled": True}, loc(switch), spell(switch))
    odd = next((k for k, v in switches.items() if not isinstance(v, bool)), None)
    if odd is not None:
        return Fact("precision", {**mech, "dtype": None, "enabled": None,
                                  "undecided": f"{spell(odd)} is {d[odd]!r}, not a literal boolean"}, loc(odd), spell(odd))
    at = next(iter(switches), None)
    return Fact("precision", {**mech, "dtype": "fp32", "enabled": False, "default": at is None},
                loc(at or "fp16"), spell(at) if at else unset)


def _str(v: Any) -> str | None:
    """A literal path: not an interpolation, a shell expansion or OmegaConf's ``???`` (a value the run must pass)."""
    return v if isinstance(v, str) and "$" not in v and v.strip() != "???" else None
