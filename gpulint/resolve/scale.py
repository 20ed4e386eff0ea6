"""Is a workload tutorial-sized? Decided once per workload by the resolver (``WorkloadResolution.tutorial``)
and read by every rule that costs GPU efficiency, so they agree, and ``gpulint workloads`` says why.

A step is bound by data loading and kernel launches rather than GPU math when the model is small: the
benchmark dataset it trains on (MNIST, CIFAR ...) with a model not known to be large, or a model of fewer
than SMALL_MODEL_PARAMS parameters on any data. A run whose launcher trains it on fewer than SHORT_RUN_SAMPLES
samples in all (a model under LARGE_MODEL_PARAMS) takes minutes, whatever its step is bound by. Advice about GPU
efficiency is informational there, and no dollar figure that assumes Tensor-Core-bound throughput is attached.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gpulint.resolve.results import ModelInfo, ResolvedCompute
    from gpulint.link.workloads import Workload

#: a model this small on a tutorial dataset is bound by data loading and kernel launches, not GPU math
TOY_MODEL_PARAMS = 20_000_000
#: below this a model is tutorial-sized on any data (an MNIST MLP has 0.1-1.6M, LeNet 60k): ResNet-18 (11.7M) and
#: larger convolution nets on ImageNet-sized images do gain from Tensor Cores, so the bar stays well under them
SMALL_MODEL_PARAMS = 5_000_000

#: a run that trains on fewer samples than this (all epochs together) takes minutes on one GPU for models under 1B
#: parameters: fp32 there costs little whatever the data (a BERT-base on MRPC for 400 batches, a detector fine-tuned
#: on 170 images)
SHORT_RUN_SAMPLES = 20_000
#: a model this large turns even a short run into GPU-hours
LARGE_MODEL_PARAMS = 1_000_000_000

#: the small benchmark datasets a file or data folder is named after
_TOY_NAMES = r"fashion_?mnist|mnist|cifar-?100|cifar-?10|svhn"
#: a data path or name in a launcher's arguments that names a small benchmark dataset
_TOY_DATA_ARG = re.compile(rf"(^|[/=_\-])(tiny-imagenet(?:-200)?|tiny_imagenet|{_TOY_NAMES})([/_\-.]|$)")
_TOY_FILE = re.compile(rf"(^|[^a-z])({_TOY_NAMES})([^a-z0-9]|$)")


def tutorial_size(wl: Workload, model: ModelInfo | None) -> str | None:
    """What makes the workload tutorial-sized, in words (``"MNIST"``, ``"a 1.2M-parameter model, counted ..."``),
    or None."""
    toys = [str(f.value.get("name")) for f in wl.code_facts("dataset") if f.value.get("toy")]
    # data read from files (a SageMaker channel of .npy arrays) names no dataset; an example script named
    # after its benchmark (mnist.py, keras_cifar10.py) says what it trains on
    m = _TOY_FILE.search(wl.entrypoint.rsplit("/", 1)[-1].lower())
    if m:
        toys.append(f"{m.group(2).upper()} (by its file name)")
    # the data folder a launcher hands the script (``imagenet.py ... /workspace/data/tiny-imagenet-200``)
    for l in wl.launchers:
        words = [a for a in l.value.get("args") or [] if isinstance(a, str)]
        hit = next(filter(None, (_TOY_DATA_ARG.search(a.lower()) for a in words)), None)
        if hit:
            toys.append(f"{hit.group(2)} (the data its launcher passes at {l.loc.short()})")
            break
    # the run's length its launcher decides (a Determined searcher.max_length): every launcher's run is short
    budgets = [((l.attrs or {}).get("run_samples"), (l.attrs or {}).get("run_samples_at")) for l in wl.launchers]
    if budgets and all(isinstance(n, int) and n < SHORT_RUN_SAMPLES for n, _ in budgets) and not (
            model is not None and isinstance(model.params, int) and model.params >= LARGE_MODEL_PARAMS):
        n, at = max(budgets, key=lambda b: b[0])
        return f"a run of {n:,} samples ({at})"
    named = wl.code_facts("model.name")  # a named (pretrained) model is a real network, known size or not
    # embedding tables are looked up, not multiplied: the math of an IMDB CNN with a 6M-entry embedding is its 0.3M rest
    counted = model is not None and type(model.params) is int and type(model.embedding_params) is int
    math = model.params - model.embedding_params if counted else None
    if toys and (math < TOY_MODEL_PARAMS if math is not None else not named):
        return toys[0]
    if model is not None and math is not None and math < SMALL_MODEL_PARAMS:
        # whatever the data, a model this small keeps no GPU busy: the step is launch- and input-bound
        tables = f" beside {model.embedding_params / 1e6:.1f}M of embedding tables" if model.embedding_params else ""
        return f"a {math / 1e6:.1f}M-parameter model{tables}, {model.evidence}"
    return None


#: data-parallel and sharding facts of code written for several GPUs (DistributedDataParallel, DataParallel, FSDP, ZeRO)
_MULTI_GPU_CODE = ("ddp", "sharding", "dataparallel")


def unsized_spend(wl: Workload, model: ModelInfo | None, rc: ResolvedCompute | None, launch_nodes: int | None) -> str | None:
    """Why nothing sizes the GPU time a workload spends, in words, or None where something does: the
    instance is named (a catalogue type, with its price) or the GPU model is (a Slurm ``--gres=gpu:a100:1``),
    the model's size is known (one that is not tutorial-sized: ResNet-18 on ImageNet, GPT-2), or the job is a
    multi-GPU one (its compute or launcher asks for 2+ GPUs or nodes, a trainer asks for several devices, or
    its code is written for several: DistributedDataParallel, DataParallel, FSDP, ZeRO sharding). Left
    unsized, a run is one GPU of a kind nothing names, for a model of unknown size: a laptop, a shared
    workstation or a demo's hundred steps as likely as a rented node, so advice about its GPU efficiency
    is informational."""
    if rc is not None and (rc.instance is not None or rc.gpu_model or rc.accelerator):
        return None  # an instance type, or the GPU model a scheduler request names (--gres=gpu:a100:1)
    if model is not None and type(model.params) is int:
        return None  # a model of known size that is not tutorial-sized (ResNet-18 on ImageNet, a 124M GPT-2)
    gpus = [rc.gpus_per_node, rc.nodes] if rc is not None else []
    gpus.append(launch_nodes)
    # a process count read at run time (--nproc_per_node=${12}) sizes nothing: the caller may well pass 1
    for l in wl.launchers:
        gpus += [l.value.get("nproc_per_node"), l.value.get("num_processes")]
    if any(type(n) is int and n > 1 for n in gpus):
        return None
    # DeepSpeed at ZeRO stage 0 shards nothing: the engine runs on one GPU as well
    multi = [f for kind in _MULTI_GPU_CODE for f in wl.code_facts(kind)
             if not (f.kind == "sharding" and f.value.get("via") == "deepspeed" and not f.value.get("stage"))]
    if multi or any(f.value.get("several") for f in wl.device_facts("uses_gpu")):
        return None  # code written for several GPUs, or a trainer that asks for them (Lightning devices=4)
    return "a model of unknown size on one GPU of a kind nothing names, and no multi-GPU launch or data-parallel code"
