"""Readers of one framework's own settings objects, called by the subject passes of the Python reader.

A subject module (training.py, devices.py, precision.py, ...) decides which calls to look at and in what
order the facts come out; a module here turns one framework's arguments into a fact's value:

- ``hf``: transformers / TRL ``TrainingArguments`` (precision, DeepSpeed, tf32, loader, checkpoint facts of
  one call) and ``HfArgumentParser`` / ``TrlParser``;
- ``lightning``: a Lightning Trainer's ``precision=`` string, its device count, its step budget, LightningCLI runs;
- ``hydra``: the config file ``@hydra.main`` / NeMo's ``@hydra_runner`` composes (a ``config_ref``);
- ``deepspeed``: a DeepSpeed config dict (given inline, or in TrainingArguments);
- ``megatron``: Megatron's ``--bf16`` / ``--fp16`` defaults.

Framework branches that still sit inside a subject pass, because they are one ``elif`` of a chain over the
file's calls (moving them would reorder the facts) or only a few lines: HF Trainer / Lightning / accelerate /
Fabric / Keras ``fit`` detection (training._trainer_calls), the Determined, TensorFlow GradientTape, Megatron
and DeepSpeed loops (training._platform_loops), Lightning's accelerator and HF/accelerate/DeepSpeed GPU use
(devices), Ray and BentoML GPU requests (devices._declared_gpus), Ray Train (distributed), Keras policies and
accelerate's ``mixed_precision`` (precision._keras, precision._accelerate), Lightning checkpoints
(checkpoints). New per-framework readers (torch, keras/tf, jax, ray, ...) belong here, one module each,
importing common.py and names.py only; the subject passes call them.
"""
