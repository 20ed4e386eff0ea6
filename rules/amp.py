"""AMP: mixed precision."""
from __future__ import annotations

import re

from gpulint.rulekit import (
    Example, Expect, NOTEBOOK_MACHINE_UNKNOWN, Related, Rule, Severity, Workload, avoidable, benchmark_of,
    compute_of, compute_related, fixes, flag_value, gpu_phrase, gpu_spend_unknown, hookimpl, pre_tensor_core,
    toy_workload, training_fact, trains_on_gpu, unpriced, unsized_spend,
)

AMP_SPEEDUP = 1.5  # conservative end-to-end speed-up assumed for costs (training-facts §3.1)
#: below this size (or when the size is unknown) no figure is attached: a small model's step is bound by
#: data loading, kernel launches and memory traffic, not by Tensor-Core math (an MNIST MLP gains ~nothing)
AMP_MIN_PARAMS = 20_000_000
_PRE_TENSOR_CORE = ("Kepler", "Maxwell", "Pascal")


def _machine(c) -> str:
    """The machine a finding names: the instance, else (a job that names only its GPU model) what it requests."""
    return c.instance_name or "the GPUs the job asks for"


class MissingMixedPrecision(Rule):
    """Training runs in fp32 on GPU: no mixed-precision mechanism is enabled anywhere.

    What it does:
        Looks at every way a workload can turn on mixed precision: ``torch.autocast`` /
        ``torch.amp`` / ``torch.cuda.amp`` in the code, HF ``TrainingArguments(bf16=/fp16=)``
        (keyword arguments, JSON argument files and ``--bf16``/``--fp16`` launcher flags),
        accelerate (``Accelerator(mixed_precision=...)``, ``accelerate launch --mixed_precision``,
        the accelerate config YAML), Lightning ``Trainer(precision=...)``, DeepSpeed ``fp16``/``bf16``
        sections, FSDP ``MixedPrecision``, Keras ``mixed_precision.set_global_policy`` and model casts.
        It fires when the workload trains on a GPU and none is enabled. It points at an explicit
        disabling (``mixed_precision: "no"``) where there is one, else at the training loop or trainer.
        A tutorial-sized workload on no named GPU instance (a notebook or script a reader runs on whatever
        GPU they have) is not reported: fp32 costs it seconds, and ``gpulint workloads`` says it is
        tutorial-sized (``tutorial_sized: MNIST``). Where a setting depends on something it cannot see
        (a flag with no default, ``**kwargs``, a machine-local accelerate config, a dtype read from a
        config at run time) it stays silent.
        Severity follows the evidence: a warning where the compute, a launcher (torchrun, deepspeed)
        or the code (``.cuda()``, a ``"cuda"`` device) puts the training on a GPU and something sizes the
        spend (a named instance or GPU model, a model of known size, a job of 2+ GPUs or nodes, a trainer
        asking for several devices, data-parallel or sharded code); info for one GPU of a kind nothing names
        running a model of unknown size (``spend_unsized`` in ``gpulint workloads``: a demo's hundred steps as
        likely as a rented node); info where only a
        framework that falls back to the CPU (HF Trainer, accelerate, Lightning ``"auto"``) or a
        ``torch.cuda.is_available()`` check says so, for a notebook whose machine nothing in the
        repository names (no compute target, no job that runs it), for tutorial-sized workloads (a benchmark
        dataset such as MNIST, or a model of under 5M parameters counted from its literal layer
        sizes) on a GPU instance the repository names, for a config file named as the fp32 variant
        (``ds_config_fp32.json``) and for a
        benchmark or demo (a file named for it, a step timed with a clock and ``torch.cuda.synchronize``, or
        a step on random tensors in a file that reads no data).
    Why it costs money:
        Tensor Cores run fp16/bf16 matrix math at many times the fp32 rate (A100: 312 vs 19.5 TFLOPS,
        2x the TF32 rate), and half-precision activations halve memory traffic. PyTorch's AMP recipe
        reports 2-3x end-to-end speed-ups on Volta/Turing/Ampere; an fp32 run pays for those hours.
    How to fix:
        Turn on bf16 autocast on Ampere-or-newer GPUs (fp16 with a GradScaler on V100/T4)::

            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                loss = model(batch).loss

        HF Trainer: ``TrainingArguments(bf16=True)``; accelerate: ``mixed_precision: bf16``;
        Lightning: ``Trainer(precision="bf16-mixed")``; DeepSpeed: ``"bf16": {"enabled": true}``.
    Cost model:
        A conservative 1.5x end-to-end speed-up is assumed (vendor figures are 2-3x, the A100
        compute ceiling 16x over strict fp32), so a third of each training hour is avoidable:
        hourly price of the workload's instances x (1 - 1/1.5). The figure is attached only where
        that assumption plausibly holds: a known instance and a model of at least 20M parameters
        (named in the code, a config.json or the workloads table), whose step is bound by Tensor-Core
        math. For smaller or unknown models the finding stands but carries no figure, and says why;
        likewise where fp32 matmuls already run on TF32 (a switch in the code, or TensorFlow 2.4+ and
        JAX on Ampere and newer GPUs, which use TF32 by default): the 1.5x is measured against plain fp32.
    Sources:
        TensorFlow tf.config.experimental.enable_tensor_float_32_execution (TF32 on by default since 2.4);
        JAX jax.default_matmul_precision and jax-ml/jax#18934 (DEFAULT precision is TF32 on A100/H100);
        PyTorch AMP recipe (pytorch.org/tutorials/recipes/recipes/amp_recipe.html); NVIDIA A100
        datasheet figures; PyTorch blog "What Every User Should Know About Mixed Precision Training".
    """

    code = "AMP001"
    name = "missing-mixed-precision"
    severity = Severity.WARNING
    family = "AMP"
    since = "0.1.0"

    VALID = [
        Example(
            """\
import torch
from torchvision import datasets, transforms
model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10)).cuda()
data = datasets.MNIST("data", train=True, download=True, transform=transforms.ToTensor())
for x, y in torch.utils.data.DataLoader(data, batch_size=64):
    torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda()).backward()
    opt.step()
""",
            title="an MNIST tutorial on whatever GPU its reader has: tutorial-sized, no instance named",
        ),
        Example(
            """\
import torch
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.AdamW(model.parameters())
for x in loader:
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
""",
            title="bf16 autocast in the loop",
        ),
        Example(
            {
                "train.py": """\
from transformers import Trainer, TrainingArguments
args = TrainingArguments(output_dir="out", bf16=True, dataloader_num_workers=4)
Trainer(model=model, args=args, train_dataset=ds).train()
""",
            },
            title="HF Trainer with bf16",
        ),
        Example(
            {
                "train.py": """\
from transformers import HfArgumentParser, Trainer, TrainingArguments
parser = HfArgumentParser(TrainingArguments)
(args,) = parser.parse_args_into_dataclasses()
Trainer(model=model, args=args).train()
""",
                "run.sh": "torchrun --nproc_per_node 8 train.py --output_dir out --bf16 True\n",
            },
            title="--bf16 passed by the launcher",
        ),
        Example(
            """\
import torch
import argparse
p = argparse.ArgumentParser()
p.add_argument("--amp", type=int)
args = p.parse_args()
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
with torch.autocast("cuda", enabled=bool(args.amp)):
    loss = model(x).sum()
loss.backward()
opt.step()
""",
            title="enabled by a flag with no default: undecidable, silent",
        ),
        Example(
            """\
import torch
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x).sum()
    loss.backward()
    opt.step()
""",
            title="CPU training (no device, no GPU compute)",
        ),
        Example(
            """\
import torch
model = torch.load("model.pt").cuda().eval()
with torch.inference_mode():
    print(model(x.cuda()))
""",
            title="inference only",
        ),
        Example(
            {"train.py": """\
import tensorflow as tf
tf.keras.mixed_precision.set_global_policy("mixed_bfloat16")
model = tf.keras.applications.ResNet50(weights=None)
opt = tf.keras.optimizers.Adam()
for images, labels in dataset:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, model(images)))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
""", "infra/main.tf": 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "g5.2xlarge"\n}\n'},
            title="TensorFlow with the Keras mixed_bfloat16 policy",
        ),
        Example(
            {"train.py": """\
import torch
model = torch.nn.Linear(8, 8).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
""", "launch.py": 'from sagemaker.pytorch import PyTorch\nPyTorch(entry_point="train.py", instance_type="ml.p2.xlarge").fit()\n'},
            title="a K80 (ml.p2) has no Tensor Cores",
        ),
    ]
    INVALID = [
        Example(
            {"train.py": """\
import tensorflow as tf
model = tf.keras.applications.ResNet50(weights=None)
opt = tf.keras.optimizers.Adam()
for images, labels in dataset:
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.keras.losses.sparse_categorical_crossentropy(labels, model(images)))
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables))
""", "infra/main.tf": 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "g5.2xlarge"\n}\n'},
            expect=[Expect("train.py", 8, ("TensorFlow training loop", "g5.2xlarge"))],
            title="a TensorFlow GradientTape loop in fp32 on an A10G",
        ),
        Example(
            """\
import torch as t
from models import VisionTransformer
model = VisionTransformer(depth=24, width=1024).cuda()
opt = t.optim.AdamW(model.parameters())
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
""",
            expect=[Expect("train.py", 7, "no mixed precision")],
            title="raw PyTorch loop in fp32",
        ),
        Example(
            {
                "train.py": """\
from accelerate import Accelerator
accelerator = Accelerator()
model, opt, loader = accelerator.prepare(model, opt, loader)
for batch in loader:
    loss = model(**batch).loss
    accelerator.backward(loss)
    opt.step()
""",
                "accelerate_config.yaml": """\
compute_environment: LOCAL_MACHINE
distributed_type: MULTI_GPU
mixed_precision: "no"
num_machines: 1
num_processes: 8
""",
            },
            expect=[Expect("accelerate_config.yaml", 3, "mixed_precision")],
            title="accelerate config disables it",
        ),
        Example(
            {
                "train.py": """\
import lightning as L
trainer = L.Trainer(accelerator="gpu", devices=8)
trainer.fit(model, datamodule=dm)
""",
            },
            expect=[Expect("train.py", 2, "precision is not set (default \"32-true\")")],
            title="Lightning defaults to 32-true: reported at the Trainer that leaves it unset",
        ),
        Example(
            {
                "train.py": """\
from transformers import HfArgumentParser, Trainer, TrainingArguments
parser = HfArgumentParser(TrainingArguments)
(args,) = parser.parse_args_into_dataclasses()
Trainer(model=model, args=args).train()
""",
                "scripts/finetune.sh": "#!/bin/bash\ntorchrun --nproc_per_node 8 train.py --output_dir out\n",
            },
            expect=[Expect("train.py", 4, "no --bf16/--fp16 reaches the HF arguments")],
            title="HF arguments from the command line, launcher passes neither --bf16 nor --fp16",
        ),
    ]

    def check_workload(self, wl: Workload, ctx):
        trains = trains_on_gpu(wl)
        if trains is None or wl.code_facts("inference") and not wl.code_facts("trains"):
            return
        c = compute_of(wl)
        if c is not None and (c.architecture in _PRE_TENSOR_CORE or pre_tensor_core(c.instance_written, c.accelerator)):
            return  # K80/M60/P100-class GPUs have no Tensor Cores: mixed precision buys little there
        view = wl.resolution.precision.view
        if not view.decided_off:
            return
        explicit = sorted(view.off, key=lambda f: f.loc)
        # TrainingArguments that leave bf16/fp16 unset: the place to add them (and where the fix writes)
        # (likewise a Lightning Trainer or Fabric left at its "32-true" default: the call to add precision= to)
        unset = next((f for f in sorted(view.default_off, key=lambda f: f.loc) if f.value.get("mechanism") == "hf_args"
                      or (f.value.get("mechanism") == "lightning" and f.value.get("default"))), None)
        at = explicit[0] if explicit else unset or trains
        if explicit:
            how = f"{at.key or 'precision'} disables it at {at.loc.short()}"
        else:
            how = _left_at_default([unset] if unset is not None else view.default_off, wl)
        related = compute_related(wl) + [Related(f.loc, f"precision off: {f.key}") for f in explicit[1:3]]
        if at is not trains:
            related.insert(0, Related(trains.loc, f"training: {trains.value.get('via')}"))
        toy = toy_workload(wl)
        if toy and (c is None or c.instance is None):
            # an MNIST-sized run on a GPU nobody names (a laptop, Colab, a tutorial reader's machine): nobody rents a GPU
            # for it, and fp32 costs seconds; `gpulint workloads` states the tutorial size
            return
        # a config file named as the fp32 variant (ds_config_fp32.json beside its fp16 twin) is a choice, not an oversight
        deliberate = bool(explicit) and _FP32_NAMED.search(at.loc.path.rsplit("/", 1)[-1].lower()) is not None
        bench = benchmark_of(wl)
        spend_unknown = gpu_spend_unknown(wl)
        unsized = None if toy or deliberate or bench or spend_unknown else unsized_spend(wl)
        tf32 = _tf32_on(wl)
        # why fp32 matmuls already run on TF32 Tensor Cores: a switch in the code, or the framework's default
        tf32_on = f"TF32 is on ({tf32.loc.short()})" if tf32 is not None else _framework_tf32(wl, c)
        yield self.finding(
            at.loc,
            f"{_what(trains)} runs in fp32 {gpu_phrase(wl)}; {how}"
            + (f" (tutorial-sized: {toy}; the gain is small)" if toy else "")
            + (f" ({at.loc.path.rsplit('/', 1)[-1]} is named as the fp32 variant: fp32 looks deliberate)" if deliberate else "")
            + (f" (a benchmark or demo, by its {bench.value.get('via')}: fp32 may be what it measures)" if bench else "")
            + (f" ({NOTEBOOK_MACHINE_UNKNOWN})" if spend_unknown == NOTEBOOK_MACHINE_UNKNOWN else "")
            + (f" (nothing sizes the spend: {unsized})" if unsized else "")
            + (f"; {tf32_on}: matmuls already use Tensor Cores, bf16 would still halve activation memory and double "
               "their peak rate" if tf32_on else ""),
            # code that would train on the CPU as well, a notebook on a machine nobody names, one unnamed GPU for a
            # model of unknown size: advice
            severity=Severity.INFO if toy or deliberate or bench or spend_unknown or unsized else None,
            symbol=f"{wl.entrypoint}:{at.key or 'train'}",
            related=related,
            guidance=_guidance(wl),
            cost=_amp_cost(wl, tf32_on),
            workload=wl.name,
            fix=fixes.enable_bf16(at, wl),
        )


#: a file stem that names fp32 as its point: ``*_fp32.json``, ``fp32-baseline.yaml``, ``float32.yaml``
_FP32_NAMED = re.compile(r"(^|[^a-z0-9])(fp32|float32)([^a-z0-9]|$)")


def _left_at_default(defaults, wl: Workload) -> str:
    """How the precision stays fp32 when nothing sets it: the setting left at its default, in words."""
    for f in sorted(defaults, key=lambda f: f.loc):
        mech = f.value.get("mechanism")
        if mech == "hf_args":
            return f"{(f.key or 'TrainingArguments').rsplit('.', 1)[-1]} sets neither bf16 nor fp16 (default fp32) at {f.loc.short()}"
        if mech == "hf_cli":
            passed = [(l, flag, v) for l in wl.launchers for flag in ("--bf16", "--fp16")
                      if (v := flag_value(l.value.get("args") or [], flag)) is not None]
            if passed:
                words = " ".join(f"{flag} {v}" for _, flag, v in passed[:2])
                return f"the launcher passes {words} ({passed[0][0].loc.short()}) to the HF arguments parsed at {f.loc.short()}"
            return f"no --bf16/--fp16 reaches the HF arguments parsed at {f.loc.short()} (default fp32)"
        if mech == "jax":
            return "no Flax module, jmp policy or cast in the workload sets a 16-bit dtype (JAX computes in fp32 by default)"
        if mech == "lightning":
            return (f"{'Fabric' if f.value.get('fabric') else 'the Trainer'}'s precision is not set (default \"32-true\") "
                    f"at {f.loc.short()}")
        if mech == "packaged_config" and f.value.get("trainer") == "fairseq":
            return f"fairseq-train is passed none of --fp16, --bf16, --amp (default fp32) at {f.loc.short()}"
        if mech == "packaged_config" and f.value.get("trainer") == "fairseq_hydra":
            return (f"neither the config nor the launch line sets common.fp16, common.bf16 or common.amp (default fp32) "
                    f"at {f.loc.short()}")
    return "no mixed precision found"


def _matmul_tf32(wl: Workload) -> list:
    """The workload's TF32 switches for matmuls (``allow_tf32``, ``set_float32_matmul_precision``,
    ``TrainingArguments(tf32=...)``), not cuDNN's."""
    return [f for f in wl.of("tf32") if f.value.get("what", "matmul") == "matmul" or f.key == "tf32"]


def _tf32_on(wl: Workload):
    """The first fact that turns TF32 on for matmuls, or None."""
    return min((f for f in _matmul_tf32(wl) if f.value.get("enabled") is True), key=lambda f: f.loc, default=None)


def _framework_tf32(wl: Workload, c) -> str | None:
    """Why fp32 matmuls already run on TF32 Tensor Cores without a switch, or None: TensorFlow (2.4+) and JAX (XLA's
    DEFAULT precision) use TF32 for fp32 matmuls on Ampere and newer GPUs unless the code turns it off."""
    if c is None or c.architecture not in _AMPERE_PLUS or any(f.value.get("enabled") is not True for f in _matmul_tf32(wl)):
        return None  # an unknown or pre-Ampere GPU, or a switch that turns TF32 off (or is decided at run time)
    trains = training_fact(wl)
    framework, since = _TF32_BY_DEFAULT.get(trains.value.get("via"), (None, None)) if trains is not None else (None, None)
    return f"{framework} runs fp32 matmuls on TF32 by default on {c.gpu_model} ({since})" if framework else None


def _amp_cost(wl: Workload, tf32_on: str | None):
    """AMP001's figure; `tf32_on` says why fp32 matmuls already run on TF32 (a switch, _tf32_on, or the framework's
    default, _framework_tf32), if they do."""
    assumption = f"mixed precision assumed {AMP_SPEEDUP}x faster end to end (vendor figures 2-3x on Tensor-Core GPUs)"
    if tf32_on:
        # the 1.5x is measured against plain fp32; TF32 already runs fp32 matmuls on Tensor Cores, and what bf16 adds
        # over it (half the activation memory and bandwidth, twice TF32's peak matmul rate) depends on the model
        return unpriced(f"No hourly figure: {tf32_on}, so fp32 matmuls already run on Tensor Cores; "
                        f"the {AMP_SPEEDUP}x assumed against plain fp32 does not hold against TF32, and what bf16 adds "
                        "over it depends on the model.")
    c = compute_of(wl)
    if c is None or not c.usd_per_hour:
        return avoidable(wl, 1 - 1 / AMP_SPEEDUP, assumption)  # says why no price is attached
    model = wl.resolution.model
    if model is None:
        return unpriced(f"No hourly figure: the model's size is not known, and the {AMP_SPEEDUP}x assumed here holds only "
                        f"where matmul/convolution throughput bounds the step (models of {AMP_MIN_PARAMS / 1e6:.0f}M+ "
                        f"parameters); name the model in [tool.gpulint.workloads] (model = ...) to get a figure.")
    if model.params < AMP_MIN_PARAMS:
        return unpriced(f"No hourly figure: {model.params / 1e6:.1f}M parameters ({model.evidence}) is below the "
                        f"{AMP_MIN_PARAMS / 1e6:.0f}M where Tensor-Core throughput plausibly bounds the step; data loading "
                        f"and kernel launches dominate small models, so the {AMP_SPEEDUP}x assumed for larger ones does not apply.")
    return avoidable(wl, 1 - 1 / AMP_SPEEDUP, f"{assumption}; model {model.params / 1e9:.2f}B parameters ({model.evidence})", "medium")


def _what(trains) -> str:
    return {"hf_trainer": "HF Trainer training", "lightning": "Lightning training", "fabric": "Lightning Fabric training",
            "accelerate": "accelerate training",
            "deepspeed": "DeepSpeed training", "megatron": "Megatron training", "keras": "Keras training", "tensorflow": "TensorFlow training loop",
            "jax": "JAX training step", "axolotl": "axolotl training", "llama_factory": "LLaMA-Factory training",
            "torchtune": "torchtune training", "fairseq": "fairseq training", "fairseq_hydra": "fairseq training"}.get(trains.value.get("via"), "Training loop")


def _guidance(wl: Workload) -> str:
    c = compute_of(wl)
    bf16 = c.gpu_bf16 if c is not None else None  # None: the GPU is unknown, or the catalogue does not say
    if bf16 is False:
        lead = f"Train in fp16 (with a GradScaler: this GPU has no bf16): {_how(wl, fp16=True)}."
    elif bf16 is True:
        lead = f"Train in bf16: {_how(wl, fp16=False)}."
    else:
        # the advice must fit whichever GPU it runs on: bf16 where the hardware has it, fp16 with loss scaling where not
        lead = (f"Train in bf16 on an Ampere or newer GPU (A100, A10G, L4, H100 ...): {_how(wl, fp16=False)}. "
                f"On a V100 or T4, which have no bf16, train in fp16 with loss scaling instead: {_how(wl, fp16=True)}.")
    kernel = min(wl.code_facts("custom_kernel"), key=lambda f: f.loc, default=None)
    caveat = (f" The workload compiles its own CUDA kernels ({kernel.loc.short()}), which autocast does not reach: keep their "
              "inputs in the dtype their sources take (decorate the autograd Function with "
              "torch.amp.custom_fwd(device_type=\"cuda\", cast_inputs=torch.float32)) or give them 16-bit variants."
              if kernel is not None else "")
    return f"{lead}{caveat} Run `gpulint explain AMP001` for examples."


def _how(wl: Workload, fp16: bool) -> str:
    """How this workload's framework turns mixed precision on, in bf16 or (fp16=True) fp16 with loss scaling."""
    mech = {f.value.get("mechanism") for f in wl.of("precision")}
    trains = training_fact(wl)
    via = trains.value.get("via") if trains is not None else None
    packaged_by = {f.value.get("trainer") for f in wl.of("precision") if f.value.get("mechanism") == "packaged_config"}
    if "torchtune" in packaged_by:
        return "set `dtype: bf16` in the torchtune config (the recipe then holds weights and activations in bf16)" + (
            "; torchtune's recipes do not train in fp16" if fp16 else "")
    if packaged_by:
        set_by = next(f for f in wl.of("precision") if f.value.get("mechanism") == "packaged_config")
        scales = " (fairseq scales the loss itself; {} does the same through torch.autocast)"
        if "fairseq" in packaged_by:
            return (f"pass `--{'fp16' if fp16 else 'bf16'}` to fairseq-train ({set_by.loc.short()})" +
                    (scales.format("--amp") if fp16 else ""))
        if "fairseq_hydra" in packaged_by:
            key = "fp16" if fp16 else "bf16"
            how = (f"set `common.{key}: true` in the common: section of {set_by.loc.path} (or pass common.{key}=true "
                   "to fairseq-hydra-train)") if set_by.loc.path.endswith((".yaml", ".yml")) else \
                f"pass `common.{key}=true` to fairseq-hydra-train ({set_by.loc.short()})"
            return how + (scales.format("common.amp") if fp16 else "")
        cfg = set_by.loc.path
        return (f"set `{'fp16: true' if fp16 else 'bf16: true'}` in {cfg}" +
                (" (axolotl's own default, `bf16: auto`, picks bf16 wherever the GPU has it)" if "axolotl" in packaged_by
                 and not fp16 else ""))
    if "accelerate" in mech or "accelerate_config" in mech:
        return f"set `mixed_precision: {'fp16' if fp16 else 'bf16'}` in the accelerate config or Accelerator(mixed_precision=...)"
    if "hf_args" in mech or "hf_cli" in mech or "hf_args_file" in mech:
        return f"pass `--{'fp16' if fp16 else 'bf16'} True` or set TrainingArguments({'fp16' if fp16 else 'bf16'}=True)"
    if "megatron_cli" in mech:
        return f"pass `--{'fp16' if fp16 else 'bf16'}` to the training script (Megatron trains in fp32 without it)"
    if "torchtitan_config" in mech:
        return (f"set mixed_precision_param = \"{'float16' if fp16 else 'bfloat16'}\" in the job TOML's [training] section "
                f"(torchtitan's default; mixed_precision_reduce stays float32)")
    if "lightning" in mech:
        return f"use Trainer(precision=\"{'16-mixed' if fp16 else 'bf16-mixed'}\")"
    if "deepspeed" in mech:
        return f"enable the \"{'fp16' if fp16 else 'bf16'}\" section of the DeepSpeed config"
    if "keras" in mech or via in ("keras", "tensorflow"):
        return (f"set keras.mixed_precision.set_global_policy(\"{'mixed_float16' if fp16 else 'mixed_bfloat16'}\") before "
                f"building the model (Keras scales the loss itself with mixed_float16 in model.fit; a custom GradientTape loop "
                f"wraps its optimizer in keras.mixed_precision.LossScaleOptimizer)")
    if "jax" in mech or "jmp" in mech or via == "jax":
        return (f"build the Flax modules with dtype=jnp.{'float16' if fp16 else 'bfloat16'} (their computation) and "
                f"param_dtype=jnp.float32 (the weights and optimizer state stay fp32), and feed them "
                f"{'float16' if fp16 else 'bfloat16'} inputs"
                + (" (scale the loss with flax.training.dynamic_scale.DynamicScale: dynamic_scale.value_and_grad(loss_fn))"
                   if fp16 else ""))
    if fp16:
        return ("wrap the forward pass and loss in torch.autocast(device_type=\"cuda\", dtype=torch.float16) and "
                "scale the loss with torch.amp.GradScaler(\"cuda\") (scaler.scale(loss).backward(); scaler.step(opt); scaler.update())")
    return "wrap the forward pass and loss in torch.autocast(device_type=\"cuda\", dtype=torch.bfloat16)"


class Fp16WithoutLossScaling(Rule):
    """fp16 autocast in a raw PyTorch training step without a GradScaler.

    What it does:
        Finds ``torch.autocast``/``torch.amp.autocast``/``torch.cuda.amp.autocast`` with fp16 (the
        CUDA default dtype) in a workload that trains with ``loss.backward()``, where no
        ``GradScaler`` exists in the workload's code. Frameworks that scale the loss themselves
        (accelerate, Lightning, DeepSpeed, HF Trainer) are not raw PyTorch and are not flagged;
        bf16 needs no loss scaling.
    Why it costs money:
        fp16 has a narrow exponent range: small gradients underflow to zero, training stalls or
        diverges, and the GPU hours until someone notices are lost.
    How to fix:
        Scale the loss::

            scaler = torch.amp.GradScaler("cuda")
            with torch.autocast("cuda", dtype=torch.float16):
                loss = model(x).sum()
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()

        or use bf16 on Ampere-or-newer GPUs, which needs no scaler.
    Cost model:
        No hourly figure: the cost is a failed or degraded run, whose length gpulint cannot know.
    Sources:
        PyTorch automatic mixed precision docs (docs.pytorch.org/docs/stable/amp.html), "Gradient Scaling".
    """

    code = "AMP002"
    name = "fp16-without-loss-scaling"
    severity = Severity.WARNING
    family = "AMP"
    since = "0.1.0"

    VALID = [
        Example(
            """\
import torch
scaler = torch.amp.GradScaler("cuda")
for x in loader:
    with torch.autocast("cuda", dtype=torch.float16):
        loss = model(x.cuda()).sum()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
""",
            title="fp16 with GradScaler",
        ),
        Example(
            """\
import torch
for x in loader:
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
""",
            title="bf16 needs no scaler",
        ),
    ]
    INVALID = [
        Example(
            """\
from torch.cuda.amp import autocast
for x in loader:
    with autocast():
        loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
""",
            expect=[Expect("train.py", 3, "GradScaler")],
            title="torch.cuda.amp.autocast (fp16 by default) without a scaler",
        ),
    ]

    def check_workload(self, wl: Workload, ctx):
        loops = [f for f in wl.code_facts("trains") if f.value.get("via") == "loop"]
        if not loops:
            return
        if any(f.value.get("enabled") is not False for f in wl.code_facts("grad_scaler")):
            return
        if any(f.value.get("mechanism") in ("accelerate", "lightning", "deepspeed", "hf_args", "hf_cli") for f in wl.code_facts("precision")):
            return
        for f in wl.code_facts("precision"):
            v = f.value
            if v.get("mechanism") == "autocast" and v.get("dtype") == "fp16" and v.get("enabled") is True:
                yield self.finding(
                    f.loc,
                    f"fp16 autocast ({f.key}) in a training step with no GradScaler: small gradients underflow to zero",
                    symbol=f"{f.key}",
                    workload=wl.name,
                )


_TF_P4D = '''resource "aws_instance" "trainer" {
  ami           = "ami-0abc"
  instance_type = "p4d.24xlarge"
}
'''
_TF_V100 = '''resource "aws_instance" "trainer" {
  ami           = "ami-0abc"
  instance_type = "p3.8xlarge"
}
'''
#: a Slurm job that names its GPU model and no machine (priced per GPU-hour): the GPU's own properties still hold
_SBATCH = "#!/bin/bash\n#SBATCH --nodes=1\n#SBATCH --gres=gpu:{gpu}:4\ntorchrun --nproc_per_node 4 train.py\n"
_HF_ARGS = ("from transformers import Trainer, TrainingArguments\nargs = TrainingArguments(output_dir='o', {flag}=True)\n"
            "Trainer(model=m, args=args).train()\n")
_AMPERE_PLUS = ("Ampere", "Ada", "Hopper", "Blackwell")
#: packaged trainers (gpulint.read.packaged) whose flags and config have no TF32 switch: fairseq's CommonConfig
_NO_TF32_SETTING = frozenset({"fairseq", "fairseq_hydra"})
#: training whose fp32 matmuls run on TF32 on those GPUs without a switch: TensorFlow since 2.4, JAX (XLA's DEFAULT
#: matmul precision)
_TF32_BY_DEFAULT = {"keras": ("TensorFlow", "since 2.4"), "tensorflow": ("TensorFlow", "since 2.4"),
                    "jax": ("JAX", "XLA's DEFAULT matmul precision")}


class Fp16OnBf16CapableGpu(Rule):
    """fp16 is chosen although the workload's GPU supports bf16.

    What it does:
        Fires when every mixed-precision setting of the workload asks for fp16 and the GPU of its
        instance (from the catalogue) has native bf16 (Ampere and newer: A100, A10G, L4, L40S, H100 ...).
        A setting decided at run time (``Accelerator(mixed_precision=args.mixed_precision)``, an
        argument file nothing links) keeps it silent: it may be the bf16 the rule would ask for.
    Why it costs money:
        bf16 runs at the same Tensor-Core rate as fp16 but has fp32's exponent range: no loss scaling,
        no overflow-driven skipped steps, fewer diverged runs to pay for again.
    How to fix:
        Switch the dtype: ``torch.autocast("cuda", dtype=torch.bfloat16)`` and drop the GradScaler;
        ``TrainingArguments(bf16=True)`` instead of ``fp16=True``; accelerate ``mixed_precision: bf16``;
        Lightning ``precision="bf16-mixed"``; DeepSpeed ``"bf16": {"enabled": true}``.
    Cost model:
        No hourly figure: throughput is the same; the saving is the runs that fp16 overflow breaks.
    Sources:
        PyTorch AMP docs; NVIDIA Ampere architecture whitepaper (bf16 Tensor Cores).
    """

    code = "AMP003"
    name = "fp16-on-bf16-capable-gpu"
    severity = Severity.INFO
    family = "AMP"
    since = "0.1.0"
    VALID = [
        Example({"train.py": _HF_ARGS.format(flag="fp16"),
                 "infra/main.tf": _TF_V100}, title="V100 has no bf16: fp16 is right"),
        Example({"train.py": _HF_ARGS.format(flag="bf16"),
                 "infra/main.tf": _TF_P4D}),
        Example({"train.py": _HF_ARGS.format(flag="fp16"), "train.sbatch": _SBATCH.format(gpu="v100")},
                title="a Slurm job on V100s: fp16 is right"),
    ]
    INVALID = [
        Example({"train.py": _HF_ARGS.format(flag="fp16"), "train.sbatch": _SBATCH.format(gpu="a100")},
                expect=[Expect("train.py", 2, ("A100", "the GPUs the job asks for"))],
                title="a Slurm job that names A100s and no machine"),
        Example({"train.py": _HF_ARGS.format(flag="fp16"),
                 "infra/main.tf": _TF_P4D}, expect=[Expect("train.py", 2, "bf16")]),
    ]

    def check_workload(self, wl: Workload, ctx):
        c = compute_of(wl)
        if c is None or c.gpu_bf16 is not True or trains_on_gpu(wl) is None:
            return
        view = wl.resolution.precision.view
        if not view.on or view.dtypes != {"fp16"} or view.unknown:
            return  # a setting decided at run time (accelerate's --mixed_precision from a flag) may well be bf16
        at = sorted(view.on, key=lambda p: p[0].loc)[0][0]
        yield self.finding(at.loc, f"fp16 mixed precision on {c.gpu_model} ({_machine(c)}), which runs bf16 at the same speed without loss scaling",
                           symbol=f"{wl.entrypoint}:fp16", workload=wl.name, related=compute_related(wl),
                           cost=unpriced(f"No hourly figure: bf16 and fp16 run at the same Tensor-Core rate on {c.gpu_model}."))


class Bf16OnUnsupportedGpu(Rule):
    """bf16 is requested on a GPU without native bf16 (V100, T4 and older).

    What it does:
        Fires when the workload enables bf16 (autocast dtype, ``bf16=True``, ``mixed_precision: bf16``,
        DeepSpeed ``bf16``, Lightning ``bf16-mixed``) and its instance's GPU lacks bf16 Tensor Cores
        according to the catalogue (Volta V100, Turing T4).
    Why it costs money:
        HF Trainer and accelerate refuse to start ("bf16 ... requires Ampere or higher"); raw PyTorch
        falls back to slow non-Tensor-Core paths. Either the job dies after the instance is up, or it
        runs slower than fp32-with-fp16-AMP would.
    How to fix:
        Use fp16 with loss scaling on these GPUs::

            scaler = torch.amp.GradScaler("cuda")
            with torch.autocast("cuda", dtype=torch.float16): ...

        or move to an Ampere-or-newer instance (A10G, L4, A100, H100).
    Cost model:
        No hourly figure: the loss is a failed start or an unknown slowdown.
    Sources:
        training-facts §3.1: bf16 requires Ampere or newer; V100/T4 support fp16 only (NVIDIA datasheets).
    """

    code = "AMP004"
    name = "bf16-on-unsupported-gpu"
    severity = Severity.ERROR
    family = "AMP"
    since = "0.1.0"
    VALID = [
        Example({"train.py": _HF_ARGS.format(flag="bf16"),
                 "infra/main.tf": _TF_P4D}),
        Example({"train.py": _HF_ARGS.format(flag="bf16"), "train.sbatch": _SBATCH.format(gpu="a100")},
                title="a Slurm job on A100s"),
    ]
    INVALID = [
        Example({"train.py": _HF_ARGS.format(flag="bf16"), "train.sbatch": _SBATCH.format(gpu="v100")},
                expect=[Expect("train.py", 2, ("the GPUs the job asks for", "V100"))],
                title="a Slurm job that names V100s and no machine"),
        Example({"train.py": _HF_ARGS.format(flag="bf16"),
                 "infra/main.tf": _TF_V100}, expect=[Expect("train.py", 2, "V100")]),
    ]

    def check_workload(self, wl: Workload, ctx):
        c = compute_of(wl)
        if c is None or c.gpu_bf16 is not False or not wl.trains:
            return
        view = wl.resolution.precision.view
        for f, dtype in sorted(view.on, key=lambda p: p[0].loc):
            if dtype == "bf16":
                yield self.finding(f.loc, f"bf16 requested on {_machine(c)} ({c.gpu_model}), which has no bf16 Tensor Cores",
                                   symbol=f"{wl.entrypoint}:bf16", workload=wl.name, related=compute_related(wl),
                                   cost=unpriced(f"No hourly figure: on {_machine(c)} the run fails at start or runs on slow non-Tensor-Core paths."))
                return


class Tf32NotEnabled(Rule):
    """fp32 matmuls on an Ampere-or-newer GPU without TF32 enabled.

    What it does:
        Fires when a PyTorch workload trains in fp32 (no mixed precision) on an Ampere-or-newer GPU and
        nothing enables TF32 for matmuls: ``torch.backends.cuda.matmul.allow_tf32 = True``,
        ``torch.set_float32_matmul_precision("high")``, ``torch.backends.cuda.matmul.fp32_precision = "tf32"``
        or ``TrainingArguments(tf32=True)``. PyTorch has left matmul TF32 off by default since 1.12.
    Why it costs money:
        On A100 fp32 matmuls run at 19.5 TFLOPS, TF32 Tensor-Core matmuls at 156: a one-line change
        for most of the fp32 step time of linear and attention layers. cuDNN convolutions already run
        on TF32 by default (``torch.backends.cudnn.allow_tf32`` is True), so a convolution-only network
        gains less.
    How to fix:
        At start-up::

            torch.backends.cuda.matmul.allow_tf32 = True   # or torch.set_float32_matmul_precision("high")
            torch.backends.cudnn.allow_tf32 = True

        and better still, mixed precision (AMP001).
    Cost model:
        Not added to the total: it overlaps AMP001's saving on the same matmuls.
    Sources:
        PyTorch CUDA semantics, "TensorFloat-32 (TF32) on Ampere (and later) devices"; A100 datasheet.
    """

    code = "AMP005"
    name = "tf32-not-enabled"
    severity = Severity.INFO
    family = "AMP"
    since = "0.1.0"
    _LOOP = "import torch\nmodel = model.cuda()\nfor x in loader:\n    loss = model(x.cuda()).sum()\n    loss.backward()\n    opt.step()\n"
    VALID = [
        Example({"train.py": "import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n" + _LOOP.split("\n", 1)[1], "infra/main.tf": _TF_P4D}),
        Example({"train.py": _LOOP, "infra/main.tf": _TF_V100}, title="V100 has no TF32"),
        Example({"train.py": _LOOP, "train.sbatch": _SBATCH.format(gpu="v100")}, title="a Slurm job on V100s"),
    ]
    INVALID = [
        Example({"train.py": _LOOP, "infra/main.tf": _TF_P4D}, expect=[Expect("train.py", 5, "TF32")]),
        Example({"train.py": _LOOP, "train.sbatch": _SBATCH.format(gpu="a100")},
                expect=[Expect("train.py", 5, ("TF32", "A100"))], title="a Slurm job that names A100s and no machine"),
    ]

    def check_workload(self, wl: Workload, ctx):
        c = compute_of(wl)
        if c is None or c.architecture not in _AMPERE_PLUS:
            return
        trains = trains_on_gpu(wl)
        if trains is None or trains.value.get("via") in _TF32_BY_DEFAULT:
            return  # TensorFlow and JAX run fp32 matmuls on TF32 by default
        if wl.resolution.precision.mixed is not False:
            return
        tf32 = _matmul_tf32(wl)
        if any(f.value.get("enabled") is not False for f in tf32):
            return  # enabled, or set to a value gpulint cannot decide
        at_launch = {l.loc for l in wl.launchers}
        if not tf32 and any(f.loc in at_launch or f.value.get("trainer") in _NO_TF32_SETTING
                            for f in wl.code_facts("config.packaged_trainer")):
            # a packaged trainer configured by its launch line's flags (fairseq-train, its facts placed at the launch,
            # whether a script's line or a container's command), or one with no TF32 setting (fairseq-hydra-train's
            # config), runs code that is not the repository's to edit: AMP001's bf16/fp16 is the change to make
            return
        # a config key that turns it off (a packaged trainer's tf32: false) is where to look and what to change
        off = sorted((f for f in tf32 if f.value.get("enabled") is False and f.loc.path.endswith((".yml", ".yaml"))),
                     key=lambda f: f.loc)
        at = off[0] if off else trains
        why = f"{at.key}: false turns it off at {at.loc.short()}" if off else "matmul TF32 is off by default since PyTorch 1.12"
        extra = {"guidance": f"Set `tf32: true` in {at.loc.path}, and better still train in bf16 (AMP001)."} if off else {}
        yield self.finding(at.loc, f"fp32 matmuls on {c.gpu_model} run without TF32 Tensor Cores ({why}; "
                                   "convolutions use TF32 by default, so the gain is in linear and attention layers)",
                           symbol=f"{wl.entrypoint}:tf32", workload=wl.name, related=compute_related(wl),
                           cost=unpriced("Not added to the total: it overlaps AMP001's saving on the same fp32 matmuls."),
                           fix=None if off else fixes.enable_tf32(trains, tf32), **extra)


@hookimpl
def gpulint_rules():
    return [MissingMixedPrecision, Fp16WithoutLossScaling, Fp16OnBf16CapableGpu, Bf16OnUnsupportedGpu, Tf32NotEnabled]
