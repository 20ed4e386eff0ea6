"""Facts about training code, read from the shared Python index.

Matching is by resolved qualified name (``import torch as t`` does not fool
it), never by substring. Values are followed through simple assignments,
argparse defaults and dataclass defaults of the same file; what cannot be
decided is recorded as unknown (None) so rules stay silent on it.

This module is the entry point: it builds the file's `Facts` context (common.py) and runs the subject
passes, each in its own module, in the fixed order of PASSES. The order is part of the output (facts are
listed, fingerprinted and reported in it, and a pass may look at what earlier ones found), so a new pass
goes where its facts should appear, never in between by accident.
"""
from __future__ import annotations

from gpulint.core.model import Fact
from gpulint.core.sources import Source
from gpulint.read.python import (checkpoints, datasets, devices, distributed, imports, loaders, modal, models, nemo_run, precision,
                                 sagemaker, serving, subprocesses, training)
from gpulint.read.python.common import Facts
from gpulint.read.python.index import build_index

#: cheap text gate: a Python file mentioning none of these cannot hold a fact
ML_WORDS = (
    "torch", "transformers", "accelerate", "lightning", "deepspeed", "keras", "tensorflow",
    "jax", "flax", "ray.train", "ray.air", "sagemaker", "trl", "peft", "DataLoader", "vllm", "sglang", "litserve",
    "nemo", "import modal", "from modal",
)


#: the subject passes, in the order their facts come out
PASSES = (
    training.training_steps,   # trainer_class, trains, trainer_call, benchmark (training.py, benchmark.py)
    devices.devices,           # uses_gpu, cpu_only, other_accelerator, custom_kernel, a notebook kernel's compute
    training.inference,        # inference
    precision.precision,       # precision, grad_scaler, config_ref, config.hf_args (and TrainingArguments' others)
    precision.tf32,            # tf32
    loaders.dataloaders,       # dataloader
    datasets.media,            # decodes_media
    distributed.distributed,   # process_group, dataparallel, ddp, sharding
    checkpoints.checkpoints,   # checkpoint.save, checkpoint.resume
    models.models,             # model.*, grad_checkpointing, peft, quantized_load, optimizer
    sagemaker.estimators,      # compute.*, launch, env of SageMaker estimators
    sagemaker.model_trainers,  # ... and of SageMaker ModelTrainers
    nemo_run.nemo_run,         # trains, uses_gpu, precision, checkpoint.* of the NeMo 2 recipes and tasks a NeMo-Run
                               # script runs; then compute.*, launch, env of its executors
    modal.modal_apps,          # compute.*, storage.mount, launch of Modal GPU functions
    subprocesses.subprocess_launches,  # launch of the launcher commands the file runs (subprocess.run, os.system)
    serving.serving,           # serves
    datasets.toy_datasets,     # dataset
    datasets.dataset_classes,  # dataset_class
    imports.invokes,           # invokes
    imports.local_imports,     # import
    training.script,           # script
)


def python_facts(source: Source) -> list[Fact]:
    syntax = getattr(source, "syntax", None)
    if syntax is None:
        return []
    ix = source._index or build_index(syntax, source.source_text())
    source._index = ix
    f = Facts(source, ix)
    for read in PASSES:
        read(f)
    return f.out
