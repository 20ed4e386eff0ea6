"""The fact vocabulary: one registry of what extractors may say about a file and what rules read.

Every fact is a ``gpulint.core.model.Fact``: ``kind``, a JSON-compatible ``value``, a
``Location``, the judged ``key`` and, for facts that describe one compute target
or one launcher invocation, a ``target`` id (unique within the file, e.g.
``aws_instance.trainer`` or ``PyTorchJob/llama/Worker``).

``KINDS`` below is the registry: each kind with the JSON Schema of its value, the
family it belongs to and what it means. The test suite validates every fact that
every built-in extractor emits (over the fixture repositories and every rule
example) against it, so the vocabulary cannot drift from the readers, and the
documentation (``gpulint facts``, ``docs/facts.md``) is generated from it.
Plugins that add kinds register them with ``register``.

Two value conventions run through the vocabulary:

* a value that cannot be decided statically is ``null`` (unknown);
* a value decided by a command-line flag of the script is
  ``{"cli_arg": "--bf16", "default": false}`` and is resolved against the
  workload's launchers (``"default_unknown": true`` when the default is not a
  literal: only a launcher that passes the flag decides it; ``"type_bool": true``
  for argparse's ``type=bool``, where any non-empty word is True); a Terraform value that comes from elsewhere in the module
  is ``{"ref": "var.x"}`` (optionally with ``"map"``: raw value -> normalised
  value), resolved by ``gpulint.resolve.tfvalues``.
"""
from __future__ import annotations

from dataclasses import dataclass
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


# -- schema building blocks ----------------------------------------------------------------
CLI = {"type": "object", "required": ["cli_arg"], "properties": {"cli_arg": {"type": "string"}, "default": {}}}
REF = {"type": "object", "required": ["ref"], "properties": {"ref": {"type": "string", "pattern": r"^(var|local)\."},
                                                             "map": {"type": "object"}}}
ANY: dict = {}


def _t(*types: str) -> dict:
    return {"type": list(types) if len(types) > 1 else types[0]}


def _or(*schemas: dict) -> dict:
    return {"anyOf": list(schemas)}


def _obj(required: tuple[str, ...] = (), **props: dict) -> dict:
    return {"type": "object", "required": list(required), "properties": props}


STR, INT, BOOL, NUM = _t("string"), _t("integer"), _t("boolean"), _t("number")
OPT_STR, OPT_INT, OPT_BOOL = _t("string", "null"), _t("integer", "null"), _t("boolean", "null")
TRI = _or(OPT_BOOL, CLI, STR)  # true / false / unknown / a flag / a config string such as "auto"


@dataclass(frozen=True)
class FactKind:
    kind: str
    family: str  # code | launcher | config | compute | infra
    schema: dict
    doc: str
    targeted: bool = False  # carries the `target` of a compute target or launcher invocation


KINDS: dict[str, FactKind] = {}
FAMILIES = {
    "code": "Code facts (Python scripts and notebooks)",
    "launcher": "Launcher facts (shell, Slurm, Dockerfile, Makefile, Kubernetes containers, SkyPilot run:, DVC, Terraform user_data)",
    "config": "Configuration facts (accelerate, DeepSpeed, HF arguments, Lightning, model config.json)",
    "compute": "Compute facts (Terraform, Kubernetes, SkyPilot, SageMaker, Slurm, Azure ML, Vertex); all carry `target`",
    "infra": "Infrastructure facts without a target (Terraform values, budgets, placement groups)",
}


def register(kind: str, family: str, schema: dict, doc: str, targeted: bool = False) -> FactKind:
    """Add a fact kind (plugins call this for the kinds their extractors emit)."""
    if family not in FAMILIES:
        raise ValueError(f"fact family {family!r} is not one of {', '.join(FAMILIES)}")
    fk = KINDS[kind] = FactKind(kind, family, schema, doc, targeted)
    return fk


# -- code -------------------------------------------------------------------------------------
register("trains", "code", _obj(("via",), via=STR),
         "The code trains: via loop (backward + optimizer step), hf_trainer, sft_trainer, lightning, fabric, accelerate, "
         "keras (fit, fit_generator, train_on_batch of a Keras model), tensorflow (GradientTape gradients + apply_gradients), deepspeed, "
         "jax (a jax/nnx gradient applied by optax.apply_updates, a flax TrainState's apply_gradients or an nnx.Optimizer; placed at the "
         "jax.jit/pmap call that wraps the step when nothing calls it by name), "
         "determined (a PyTorchTrial's train_batch stepping through its context) ...; "
         "attrs.function / attrs.cls: the function and class the training call sits in; attrs.reached_from: the functions and classes of "
         "its module that lead to it, where no module-level code does (a script importing the module trains only by calling one).")
register("trainer_class", "code", _obj(("name", "base"), name=STR, base=STR),
         "A class of the file that subclasses a framework trainer (directly or through classes of the file): it trains as base does.")
register("trainer_call", "code", _obj(("module", "name", "method"), module=STR, name=STR, method=STR),
         "``X(...).train()`` / ``.fit()`` of a class imported from a repository module; the linker makes it a trains fact "
         "where that module's trainer_class facts say X is a framework trainer.")
register("invokes", "code", _obj(("module", "name"), module=STR, name=STR),
         "A call of a name imported from another module (from engine import train_one_epoch; Trainer(cfg).run()): a script "
         "that calls the training of a repository module is a workload.")
register("uses_gpu", "code", _obj(("via",), via=STR, auto=BOOL, probe=BOOL, several=BOOL),
         "The code puts work on a GPU (.cuda(), a cuda device, a GPU trainer ...); auto: a framework that takes a GPU when there is "
         "one and runs on the CPU otherwise (HF Trainer, accelerate, Lightning's accelerator=\"auto\"); probe: the device is used "
         "only where a CUDA check found one (\"cuda\" if torch.cuda.is_available() else \"cpu\"; TensorFlow's list_physical_devices(\"GPU\"), "
         "a GPU pinned inside if gpus:, gpu_options.visible_device_list); several: the call asks for "
         "two or more GPUs (Lightning devices=4, gpus=8, devices=-1, a ddp/fsdp/deepspeed strategy).")
register("custom_kernel", "code", _obj(("via",), via=STR),
         "The code compiles a CUDA extension of its own at run time (torch.utils.cpp_extension.load / load_inline): kernels "
         "autocast does not reach, written for the dtypes their sources take.")
register("other_accelerator", "code", _obj(("via", "device"), via=STR, device=STR),
         "The code runs on an accelerator that is not a CUDA GPU: device xla (torch_xla: TPU, AWS Trainium/Inferentia via "
         "torch-neuronx) or hpu (Intel Gaudi, habana_frameworks); GPU rules stay silent unless the code also uses CUDA itself.")
register("cpu_only", "code", _obj(("via",), via=STR, declared=BOOL),
         "The code pins itself to the CPU (e.g. Lightning accelerator=\"cpu\"); declared: it submits itself with resources "
         "that hold no GPU (Kubeflow CustomTrainer resources_per_node), or a notebook whose kernel runs on a CPU instance "
         "(SageMaker Studio metadata.instance_type); a declared CPU wins over GPU use in the code.")
register("inference", "code", _obj(("via",), via=STR), "The code runs a model without training it: no_grad, inference_mode, eval, pipeline, generate.")
register("serves", "code", _obj(("via",), via=STR),
         "The code serves a model: a FastAPI/Flask app, Triton/TorchServe handler, vLLM/TGI engine, SageMaker model_fn ...")
register("precision", "code", _obj(("mechanism",), mechanism=STR, dtype=_or(OPT_STR, _t("object")), enabled=_or(TRI, _t("object")),
                                   from_launcher=BOOL, from_config=BOOL, undecided=STR, auto=BOOL, default=BOOL, load_dtype=BOOL, guarded=BOOL, local=BOOL),
         "A mixed-precision mechanism and whether it is on: mechanism autocast, hf_args, hf_cli, hf_args_file, accelerate, "
         "accelerate_config, lightning, deepspeed, fsdp, keras, jax (a Flax dtype=/param_dtype=, a module field's 16-bit default, "
         "an .astype cast; default: a JAX trainer that sets none computes in fp32), jmp (a jmp policy's compute dtype), torchtitan_config (a torchtitan job TOML's [training] mixed_precision_param), model_cast, launcher, megatron_cli (its --bf16/--fp16 flags; replaced_by: the flag that reads them from a file instead), unread_cell (a notebook cell that did not parse mentions a dtype or a model load: undecided); dtype bf16|fp16|fp8|fp32|no|null; "
         "from_config: set by a config the code passes (Trainer(**cfg.trainer)): a linked config decides; "
         "undecided: why the value is not known (a config value that is an interpolation); "
         "guarded: it sits under an if whose test decides it (enabled is that flag, or null when the test cannot be read); "
         "local: a with autocast(enabled=False) region inside a function, an fp32 island within the run's precision, "
         "not a setting of it.")
register("grad_scaler", "code", _obj(enabled=TRI), "A GradScaler (loss scaling for fp16): torch's, apex's, Keras's LossScaleOptimizer.")
register("tf32", "code", _obj(enabled=TRI, via=STR, what=STR), "TF32 matmul/cuDNN switches.")
register("dataloader", "code", _obj(num_workers=_or(OPT_INT, CLI, STR), pin_memory=TRI, num_workers_set=BOOL, pin_memory_set=BOOL, via=STR),
         "A DataLoader (torch, HF Trainer's dataloader_* arguments, Lightning) and its worker and pinning settings, or via tf.data "
         "a tf.data map whose function decodes media (num_workers: 0 without num_parallel_calls, null for AUTOTUNE); "
         "attrs.purpose: eval for a validation/test/prediction loader (by its name or the function building it), inspect for one only looked into (next(iter(loader)), a loop that breaks at its first batch), no_grad for one only read by loops without autograd and with no step (caching latents once), else train; "
         "attrs.pretokenized: batches of already tokenised rows (a transformers data collator, a datasets .map()/load_from_disk "
         "result); attrs.in_memory: a TensorDataset (true) or class:<Name>, a Dataset class of the repository to look up in "
         "dataset_class facts; attrs.reached_from: as for trains, the functions and classes of its module that lead to the "
         "loader (a workload importing the module uses it only by invoking one of them).")
register("process_group", "code", _obj(backend=OPT_STR, explicit=BOOL),
         "init_process_group and its backend (nccl, gloo, mpi, or null); attrs.guards: the branches it sits in "
         "(cpu/gpu of a CUDA check, multi_gpu, debug, dead, other_os), attrs.rpc: the file also starts torch.distributed.rpc.")
register("dataparallel", "code", _obj(via=STR), "torch.nn.DataParallel or nn.parallel.data_parallel (single-process multi-GPU); "
         "attrs.guards as for process_group, attrs.function: the enclosing function, attrs.ddp_fallback: it sits on the "
         "other side of an if from the file's own DistributedDataParallel/FSDP (the non-distributed fallback).")
register("ddp", "code", _obj(("via",), via=STR), "Data-parallel training, a model replica per GPU: DistributedDataParallel, FSDP, accelerate, "
         "ray.train (Ray Train's workers), jax.pmap (a replica per local device), jax.distributed (one process per host), "
         "tf.distribute (MirroredStrategy, MultiWorkerMirroredStrategy), horovod (TensorFlow) ...")
register("ray.scaling", "code", _obj(num_workers=OPT_INT, use_gpu=OPT_BOOL, gpus_per_worker=_t("number", "null")),
         "A Ray Train ScalingConfig: num_workers (null when not a literal), use_gpu (true when it or resources_per_worker "
         "asks for GPUs; null when not readable), gpus_per_worker (resources_per_worker's GPU, null for use_gpu's one).")
register("ray.failure", "code", _obj(max_failures=OPT_INT),
         "A Ray Train FailureConfig: how many times a failed run is restarted from its latest reported checkpoint (-1: no limit).")
register("checkpoint.save", "code", _obj(("via",), via=STR, dir=_or(OPT_STR, CLI), default=BOOL, weights_only=BOOL),
         "A checkpoint is saved: torch.save, save_pretrained, save_state, save_checkpoint, hf_trainer, lightning, dcp, "
         "keras.ModelCheckpoint, keras.BackupAndRestore, tf.train.Checkpoint, keras.save (model.save/save_weights), flax "
         "(flax.training.checkpoints), orbax (a Checkpointer/CheckpointManager save, ocp.args.*Save), ray.train.report (with a "
         "checkpoint), ray.CheckpointConfig, torchtitan_config (a job TOML's [checkpoint] enable_checkpoint, folder) ...; dir when literal.")
register("checkpoint.resume", "code", _obj(("via",), via=STR, value=ANY),
         "Training restores from a checkpoint: load_state_dict, resume_from_checkpoint, ckpt_path, load_state, load_checkpoint, dcp, "
         "keras.BackupAndRestore, tf.train.Checkpoint (restore/read), keras.load_weights, keras.load_model, "
         "flax (restore_checkpoint), orbax (restore, ocp.args.*Restore), ray.train.get_checkpoint, torchtitan_config (load_step -1: the newest step of its folder).")
register("model.name", "code", _t("string"),
         "A model loaded by name (from_pretrained(\"meta-llama/Llama-2-70b-hf\")); attrs: load_in_4bit, load_in_8bit, quantization_config, "
         "cli_arg (the name is that flag's argparse default: the launchers' value decides).")
register("model.layers", "code", _obj(("name",), name=STR, params=OPT_INT, embedding_params=OPT_INT),
         "A model the file builds out of framework layers (an nn.Module class, nn.Sequential, keras.Sequential or a functional "
         "keras.Model) and its parameter count from literal layer sizes; params null when a layer is not literal, or the file also "
         "loads a pretrained/registry model; embedding_params: how many of them are embedding tables (lookups, not matmuls).")
register("model.config", "config", _t("object"), "Model dimensions from a config.json or a literal transformers *Config(...) call.")
register("quantized_load", "code", _obj(bits=_t("integer", "null")), "A quantized load (BitsAndBytesConfig, load_in_4bit/8bit).")
register("config_ref", "code", _obj(("path",), kind=STR, path=STR), "A configuration file named by code or another config ({kind: deepspeed, path}).")
register("optimizer", "code", _obj(name=OPT_STR, qualname=OPT_STR), "The optimizer: name adamw, adam, sgd, adam8bit, adafactor ...")
register("sharding", "code", _obj(("via",), via=STR, stage=OPT_INT, offload=OPT_BOOL, offload_optimizer=OPT_BOOL,
                                  offload_param=OPT_BOOL, hybrid=OPT_BOOL),
         "Sharded data parallelism: fsdp or deepspeed, its stage (0-3) and offload.")
register("grad_checkpointing", "code", _obj(enabled=TRI, via=STR), "Activation (gradient) checkpointing and whether it is on.")
register("peft", "code", _obj(method=STR, via=STR, load_in_4bit=BOOL, load_in_8bit=BOOL), "Parameter-efficient fine-tuning (lora, qlora).")
register("decodes_media", "code", _obj(("via",), via=STR),
         "The file decodes images, audio or video per sample (PIL Image.open, cv2.imread, torchvision.io, torchaudio.load, "
         "ImageFolder, random-augmentation transforms ...) where samples are produced (a Dataset's __getitem__, what it calls, a "
         "transform hook or collate_fn): host work a DataLoader's worker processes take off the GPU's path.")
register("benchmark", "code", _obj(("via",), via=STR, synthetic=BOOL),
         "The training step is measured, not trained toward a model: the file is named a benchmark, or the step's function "
         "times it (a clock and torch.cuda.synchronize or CUDA events beside the backward).")
register("dataset_class", "code", _obj(("name", "in_memory"), name=STR, in_memory=BOOL, on_gpu=BOOL, iterable=BOOL,
                                      unsharded=BOOL),
         "A Dataset class of the file; in_memory: its __getitem__ only indexes what the object holds (no I/O, no transform); "
         "on_gpu: its __getitem__ moves what it returns to the GPU (.cuda(), .to(device)); iterable: an IterableDataset "
         "with its own __iter__; unsharded: its file never asks get_worker_info() (every worker would replay the stream).")
register("dataset", "code", _obj(("name",), name=STR, toy=BOOL),
         "A well-known dataset the code loads; toy: a tutorial-sized benchmark (MNIST, CIFAR, SVHN, Iris ...).")
register("script", "code", _obj(("via",), via=STR, main_lines={"type": "array", "items": {"type": "array", "items": INT}}),
         "Running the file does work (a __main__ guard, or a module-level call of its own functions or of a "
         "training API): without it, training code is library code, a workload only where something runs it. "
         "main_lines: the [first, last] lines of each __main__ block, which a file importing this one never runs.")
register("import", "code", _t("string"), "A module the file imports (attrs.relative for relative imports); the linker follows repository modules.")

# -- launchers ------------------------------------------------------------------------------------
_WRAPPER = _or(_t("null"), _obj(tool=STR, nodes=_or(OPT_INT, STR), ntasks=_or(OPT_INT, STR), ntasks_per_node=_or(OPT_INT, STR),
                                gpus_per_node=_or(OPT_INT, STR)))
register("launch", "launcher", {**_obj(("tool",), tool=STR, script=OPT_STR, module=OPT_STR, args=_t("array"),
                                       nnodes=_or(OPT_INT, STR), nproc_per_node=_or(OPT_INT, STR), mixed_precision=OPT_STR,
                                       config_file=OPT_STR, deepspeed_config=OPT_STR, num_machines=_or(OPT_INT, STR),
                                       num_processes=_or(OPT_INT, STR), wrapper=_WRAPPER, stage=OPT_STR, args_open=BOOL,
                                       program=OPT_STR, trainer=OPT_STR)},
         "A launch: tool python, torchrun, accelerate, deepspeed, srun, mpirun, sagemaker, skypilot, k8s, shell, dvc, composer, torchx, determined (an experiment config's entrypoint: module:TrialClass), modal (a Modal GPU Function running its own file), nemo_run ...; a Python file's subprocess.run / os.system command lines too (attrs.via); "
         "script is a code file or another launcher file (a shell script, dvc.yaml) that the linker follows; "
         "tool shell: bash train.sh, ./run.sh, srun bash inner.sh, CMD [\"bash\", \"train.sh\"], Terraform "
         "user_data = file(\"train.sh\") (script relative to the .tf folder); tool dvc: dvc repro / dvc exp run, "
         "script the dvc.yaml (\"dvc.yaml\" of the working folder), stage or null for the whole pipeline; "
         "hyperpodrun reads as torchrun; attrs.runs_on_any_of: a RayJob entrypoint whose cluster has several GPU worker groups; tool uvicorn|gunicorn|hypercorn: module is the application's (module:app); "
         "tool program (shell script files only): a named command with flags that may be a console script "
         "(``fairseq-train data --fp16``: program the name), linked only when the repository's packaging declares it "
         "(package.console_script); "
         "wrapper tool srun|mpirun|mpiexec|ray; "
         "tool-specific keys: accelerate multi_gpu/use_deepspeed/use_fsdp, deepspeed hostfile, skypilot managed/use_spot/"
         "accelerators/instance_type, dvc stage, sagemaker distributed (ModelTrainer torchrun|mpi); args_open: an unresolved "
         "word among the script's arguments (``$EXTRA_ARGS``) may hold more flags, so a flag not seen is unknown, not absent. "
         "attrs: flags {flag: [line, column]}; overridable {script|module|flag as written: VAR} (the literal default of "
         "${VAR:-...}/${VAR:=...}, VAR not set in the script: the caller's environment may override it); relative_to "
         "launcher (built from $(dirname \"$0\"): relative to the launcher's folder only) or, for Terraform file(), "
         "module|root|cwd; script_candidates [{script|module, var, line, default_of?, relative_to?}] (the script word "
         "holds a variable the branches of an `if` set to several literals, or one over a ${VAR:-default}; script is "
         "then null) and script_candidates_open [VAR] (some path leaves VAR to the caller's environment); cwd {path, "
         "relative_to?} (the folder a `cd` moved to before the launch: relative to the launcher's folder with "
         "relative_to launcher, else to the caller's working folder); unknown_prefix \"$WRAPPER\" (an unresolved word runs first: a profiler, or echo); background (the shell line ends in &: it runs beside others, a sweep of one run per GPU); attribute "
         "(the Terraform boot-script attribute: user_data, custom_data, metadata.startup-script ...); via file|filebase64|"
         "templatefile|template_file|SourceCode.command; template_vars; cloud_init runcmd; stage/wdir/foreach/matrix "
         "(dvc.yaml); phase (SkyPilot); container (Kubernetes).")
register("package.console_script", "launcher", _obj(("name", "module"), name=STR, module=STR, function=OPT_STR),
         "A console script the repository's own packaging declares (setup.py entry_points console_scripts, read "
         "from the literal; pyproject.toml [project.scripts] / [tool.poetry.scripts]; setup.cfg "
         "[options.entry_points]): the command name, the module it runs and the function (module:function).")
register("image.copy", "launcher", _obj(("src",), src=STR, dest=STR),
         "A file or folder of the build context a Dockerfile's final stage COPYs or ADDs into its image (src as written).")
register("env", "launcher", _obj(("name",), name=STR, value=OPT_STR),
         "An environment variable set by a launcher, container, task or image. attrs: exported, conditional (set inside "
         "if/loop/case), scope command (set by the launching command itself, same target), overridable VAR (the value is "
         "${VAR:-default}'s default), script_dir (a path relative to the script's folder; value null: absolute at run "
         "time), attribute (Terraform boot script), instruction ENV|make.")

# -- configs ------------------------------------------------------------------------------------
register("config.accelerate", "config", _obj(mixed_precision=OPT_STR, num_machines=_or(OPT_INT, STR), num_processes=_or(OPT_INT, STR),
                                             distributed_type=OPT_STR, deepspeed_config_file=OPT_STR, zero_stage=_or(OPT_INT, STR),
                                             fsdp=_or(OPT_BOOL, _t("object")), offload_optimizer=ANY, offload_param=ANY),
         "An accelerate config file (accelerate launch --config_file, or the repository's only one).")
register("config.deepspeed", "config", _obj(fp16=TRI, bf16=TRI, zero_stage=_or(OPT_INT, STR), offload_optimizer=OPT_BOOL,
                                            offload_param=OPT_BOOL, optimizer=OPT_STR, activation_checkpointing=OPT_BOOL),
         "A DeepSpeed JSON config: fp16/bf16 (true/false/\"auto\"), ZeRO stage and offload.")
register("config.hf_args", "config", _t("object"),
         "HF TrainingArguments values from a JSON/YAML argument file or a literal call: fp16, bf16, tf32, gradient_checkpointing, "
         "save_strategy, dataloader_*, per_device_train_batch_size, optim, fsdp, deepspeed, output_dir ...")

register("config.trainer", "config", _obj(("framework",), framework=STR, precision=_or(OPT_STR, INT), devices=ANY, num_nodes=ANY,
                                           accelerator=ANY, strategy=ANY, gpus=ANY),
         "The trainer arguments of a config-driven trainer's file (a Lightning trainer: section of a Hydra, LightningCLI or NeMo "
         "config, or a Hydra trainer/ group file), as written; an interpolation (${...}) is kept as its text.")
register("config.packaged_trainer", "config", _obj(("trainer",), trainer=STR, model=OPT_STR, adapter=OPT_STR, cpu_offload=BOOL,
                                                    settings=_t("object")),
         "The config of a packaged trainer (gpulint.read.packaged: axolotl, llama_factory, torchtune, fairseq): the base "
         "model it names and what it trains (adapter lora|qlora|full|null). Its precision and checkpoint keys are facts "
         "of their own; a fairseq-hydra-train config also keeps the settings they were read from (settings), which a "
         "launch line's key=value overrides are merged over.")
register("config.hydra", "config", _obj(("defaults",), defaults=_t("array")),
         "A Hydra defaults list: each static entry {group, option, package?} (group \"\" for a config of the same folder); "
         "the linker composes these group files with the config.")

# -- compute ---------------------------------------------------------------------------------------
_TF = lambda s: _or(s, REF)  # noqa: E731 - a value or a Terraform reference
register("compute.target", "compute", _obj(("source",), source=STR, provider=OPT_STR, resource=OPT_STR, role=OPT_STR, partition=OPT_STR),
         "A compute target: source terraform, kubernetes, skypilot, sagemaker, slurm, azureml, vertex, determined (an experiment config: attrs.slots_per_trial, resource_pool), modal (a Modal GPU Function: no catalogue machine or price), "
         "or a cluster definition's capacity (gpulint.read.clusters: attrs.capacity_of slurm|kubernetes|ray|batch, labels, taints, default, cluster, head (a Ray head node type), region; partition the Slurm queue it serves); "
         "a job's placement keys: attrs.node_selector, tolerations (pods), constraint (sbatch --constraint); KubeRay worker groups attrs.min_replicas, max_replicas, autoscaling; "
         "attrs.terraform_resource: a Kubernetes object applied by that Terraform resource; provider aws|gcp|azure|null; "
         "role training|serving|notebook|null (what the infrastructure names it for). attrs include runtime_ref {kind, name} "
         "and num_proc_per_node (Kubeflow Trainer TrainJob), replicated_job (TrainingRuntime), nproc_per_node "
         "(HyperPodPyTorchJob), hyperpod (SageMaker HyperPod nodes: ml.* instance types, sagemaker.amazonaws.com/ labels), "
         "sdk ModelTrainer.", targeted=True)
register("compute.instance_type", "compute", _or(_t("string", "null"), REF),
         "An instance type as written (SageMaker ml. names included; local for SageMaker local mode; attrs.default: the "
         "platform's documented default, e.g. ModelTrainer without compute runs on ml.m5.xlarge).", targeted=True)
register("compute.accelerator", "compute", _obj(("type",), type=_t("string"), count=_or(OPT_INT, REF, STR)),
         "An accelerator request ({type: A100|nvidia-tesla-a100|..., count}).", targeted=True)
register("compute.capacity", "compute", _or(_t("string", "null"), REF), "spot | on-demand | reserved (a capacity block, targeted ODCR, GCP specific reservation or Azure capacity reservation group: priced at the on-demand list rate) (attrs: on_demand_fallback, default, via; preemptible: why a platform's own capacity is judged as spot, e.g. a Modal GPU Function).",
         targeted=True)
register("compute.node_count", "compute", _TF(OPT_INT), "Nodes (instances, replicas, instance_count, --nodes).", targeted=True)
register("compute.min_nodes", "compute", _TF(OPT_INT), "The floor of an autoscaling group, node group or pool.", targeted=True)
register("compute.gpu_only", "compute", STR,
         "Capacity that launches only GPU instances without naming one (a Karpenter NodePool requiring "
         "instance-gpu-manufacturer, instance-gpu-count > 0, a GPU instance category or families; a NeMo-Run "
         "SkypilotExecutor whose gpus= is decided at run time): the requirement as written. The device is a GPU; the machine is one of a candidate set, so nothing is priced.", targeted=True)
register("compute.gpus_per_node", "compute", _TF(OPT_INT), "GPUs requested per node (a pod's nvidia.com/gpu, --gres=gpu:N).",
         targeted=True)
register("compute.time_limit", "compute", _t("number"),
         "Hours one run of the job may last, as its launcher states it (Slurm --time, a Kubernetes Job's "
         "activeDeadlineSeconds; a limit of UNLIMITED is no fact).", targeted=True)
register("compute.runs_per_month", "compute", _t("number"),
         "How often a scheduled job runs, on average per month (a Kubernetes CronJob's schedule; a suspended one has none).",
         targeted=True)
register("compute.efa", "compute", _TF(OPT_INT), "EFA interfaces or vpc.amazonaws.com/efa resources requested (0 = explicitly none).",
         targeted=True)
register("compute.checkpoint", "compute", _obj(s3_uri=OPT_STR, local_path=OPT_STR, max_wait=_or(OPT_INT, STR), max_run=_or(OPT_INT, STR),
                                               s3_uri_set=BOOL, max_wait_set=BOOL, star_kwargs=BOOL),
         "SageMaker checkpoint settings of a managed spot job.", targeted=True)
register("storage.mount", "compute", _obj(path=OPT_STR, bucket=OPT_STR, mode=OPT_STR), "A SkyPilot file_mounts entry, or a Modal Function's volumes= mount (mode volume); path null: a mount whose path is not read.", targeted=True)

# -- infrastructure --------------------------------------------------------------------------------
register("tf.variable", "infra", _obj(("name",), name=STR, default=ANY, has_default=BOOL, computed=BOOL),
         "A Terraform variable and its default (has_default false: none; computed: an expression gpulint does not evaluate).")
register("tf.local", "infra", _obj(("name",), name=STR, value=ANY, computed=BOOL), "A Terraform local and its value (literal or reference).")
register("tf.tfvar", "infra", _obj(("name",), name=STR, value=ANY, auto=BOOL),
         "An assignment in a *.tfvars file (auto: loaded without -var-file: terraform.tfvars, *.auto.tfvars).")
register("tf.module_call", "infra", _obj(("name", "source"), name=STR, source=STR, inputs=_t("object")),
         "A module block: its source and the inputs it passes (values or references).")
register("infra.budget", "infra", _obj(("resource",), resource=STR, kind=STR), "A budget or spend alarm (aws_budgets_budget, a billing alarm ...).")
register("infra.gpu_monitoring", "infra", _obj(("via",), via=STR),
         "GPU utilisation metrics are installed: DCGM exporter, the GPU operator, CloudWatch agent nvidia_gpu, GKE managed DCGM.")
register("infra.placement_group", "infra", _obj(("resource",), resource=STR, strategy=OPT_STR), "A placement group or collocation policy.")
register("cluster.partition_map", "infra", _obj(("group",), group=STR, partition=OPT_STR, node_type=OPT_STR),
         "A SageMaker HyperPod Slurm cluster's provisioning_parameters.json: the Slurm partition an instance group "
         "serves (node_type compute; partition null when not named) or the group that is the controller or login "
         "nodes (node_type controller|login, no partition). The group's capacity target is in the cluster's "
         "create-cluster input or template (another file): the linker joins them by group name.")


def document() -> str:
    """The vocabulary as Markdown (``gpulint facts --format markdown`` and docs/facts.md)."""
    out = ["# gpulint's fact vocabulary", "",
           "Generated from `gpulint.core.facts.KINDS` (`gpulint facts --format markdown`); every fact the built-in "
           "readers emit is checked against these shapes by the test suite.", ""]
    for family, title in FAMILIES.items():
        out += [f"## {title}", "", "| kind | value | meaning |", "|---|---|---|"]
        for fk in sorted((k for k in KINDS.values() if k.family == family), key=lambda k: k.kind):
            out.append(f"| `{fk.kind}` | {_shape(fk.schema)} | {fk.doc.replace('|', '/')} |")
        out.append("")
    return "\n".join(out)


def _shape(schema: dict) -> str:
    if "anyOf" in schema:
        return " or ".join(_shape(s) for s in schema["anyOf"])
    t = schema.get("type")
    if t == "object" and schema.get("properties"):
        if set(schema["properties"]) <= {"cli_arg", "default"}:
            return "flag"
        if set(schema["properties"]) <= {"ref", "map"}:
            return "ref"
        req = set(schema.get("required", ()))
        return "{" + ", ".join(k + ("" if k in req else "?") for k in schema["properties"]) + "}"
    if isinstance(t, list):
        return "/".join(t)
    return t or "any"
