"""Readers of one framework's own settings objects, called by the subject passes of the Python reader.

A subject module (training.py, devices.py, precision.py, ...) decides which calls to look at and in what
order the facts come out; a module here turns one framework's arguments into a fact's value:

- ``hf``: transformers / TRL ``TrainingArguments`` (precision, DeepSpeed, tf32, loader, checkpoint facts of
  one call) and ``HfArgumentParser`` / ``TrlParser``;
- ``lightning``: a Lightning Trainer's ``precision=`` string, its device count, its step budget, LightningCLI runs;
- ``hydra``: the config file ``@hydra.main`` / NeMo's ``@hydra_runner`` composes (a ``config_ref``);
- ``deepspeed``: a DeepSpeed config dict (given inline, or in TrainingArguments);
- ``megatron``: Megatron's ``--bf16`` / ``--fp16`` defaults;
- ``keras``: TensorFlow / Keras: ``fit`` / ``fit_generator`` / ``train_on_batch`` and GradientTape loops (training),
  GPU pinning and a Keras trainer's GPU use (devices), dtype policies and loss scaling (precision), tf.distribute
  strategies and Horovod (distributed), ModelCheckpoint / BackupAndRestore / tf.train.Checkpoint / model saves and
  loads (checkpoints). Its input pipelines (tf.data) are not read: the IO rules' measure is a torch DataLoader's.

Framework branches that still sit inside a subject pass, because they are one ``elif`` of a chain over the
file's calls (moving them would reorder the facts) or only a few lines: HF Trainer / Lightning / accelerate /
Fabric detection (training._trainer_calls, whose Keras branch asks ``keras.fits``), the Determined, Megatron
and DeepSpeed loops (training._platform_loops), Lightning's accelerator and HF/accelerate/DeepSpeed GPU use
(devices), Ray and BentoML GPU requests (devices._declared_gpus), Ray Train (distributed), accelerate's
``mixed_precision`` (precision._accelerate), Lightning checkpoints (checkpoints). New per-framework readers
(torch, jax, ray, ...) belong here, one module each, importing common.py, names.py and index.py only; the subject
passes call them.
"""
