"""In what precision the workload computes: the ``precision``, ``grad_scaler``, ``config_ref`` (a DeepSpeed
config file) and ``tf32`` facts.

Each mechanism is its own reader, run in a fixed order: torch autocast (and a ``partial`` of it),
TransformerEngine, apex, grad scalers, HF TrainingArguments and argument parsers, Megatron, accelerate,
Lightning, FSDP's MixedPrecision, Keras policies, DeepSpeed configs, model casts (``.half()``,
``.to(torch.bfloat16)``, ``from_pretrained(torch_dtype=...)``), notebook cells gpulint could not parse, and
quantized loads. A fact inside ``if args.amp:`` is conditioned by ``Facts.add`` (common.py). The readers of
one framework's own settings (TrainingArguments, a Lightning precision string, a DeepSpeed config dict,
Megatron's defaults, Keras dtype policies and loss scaling) are in frameworks/; the accelerate reader is a few
lines and stays here, next to the others.
"""
from __future__ import annotations

import ast
import re
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.python.common import Facts, autocast_device, norm, qualified, read_again
from gpulint.read.python.frameworks import deepspeed, hf, hydra, jax, keras, lightning, megatron
from gpulint.read.python.index import DTYPE_STRINGS, UNKNOWN, Call, OneOf, PyIndex, dotted
from gpulint.read.python.names import (ACCELERATOR, AUTOCAST, DS_INIT, HF_ARGS, LIGHTNING_TRAINERS, MEGATRON_PRETRAIN,
                                       TRAINER_BUILDERS, framework_class)

#: TransformerEngine's FP8 contexts (``te.autocast`` is the newer name of ``te.fp8_autocast``)
TE_AUTOCAST = ("transformer_engine.pytorch.fp8_autocast", "transformer_engine.pytorch.autocast")
GRAD_SCALER = {"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
               "torch.amp.grad_scaler.GradScaler"}
QUANT_CONFIGS = {"transformers.BitsAndBytesConfig", "transformers.GPTQConfig", "transformers.AwqConfig",
                 "transformers.utils.quantization_config.BitsAndBytesConfig", "auto_gptq.BaseQuantizeConfig",
                 "transformers.HqqConfig", "transformers.TorchAoConfig", "transformers.FbgemmFp8Config"}
FSDP_MP = {"torch.distributed.fsdp.MixedPrecision", "torch.distributed.fsdp.MixedPrecisionPolicy",
           "torch.distributed._composable.fsdp.MixedPrecisionPolicy", "torch.distributed.fsdp.fully_sharded_data_parallel.MixedPrecision"}
ZERO_INIT = {"deepspeed.zero.Init", "deepspeed.runtime.zero.partition_parameters.Init"}

TF32_FLAGS = {"torch.backends.cuda.matmul.allow_tf32": "matmul", "torch.backends.cudnn.allow_tf32": "cudnn"}
#: a tuple, not a set: the facts come out in its order, and a set's order of strings changes with every process
TF32_PRECISION = ("torch.backends.cuda.matmul.fp32_precision", "torch.backends.cudnn.conv.fp32_precision",
                  "torch.backends.fp32_precision")


HALF = ("bf16", "fp16", "fp8")


def half_precision(v: Any) -> tuple[Any, Any]:
    """(enabled, dtype) for a dtype as the code chose it: a half dtype is on; fp32 is off; a run-time
    choice among half dtypes is on (dtype undecided); a flag is left to the launcher; anything else
    is undecided (None, None)."""
    v = _dtype(v) if isinstance(v, str) else v
    if v in HALF:
        return True, v
    if v == "fp32":
        return False, "fp32"
    if isinstance(v, OneOf):
        choices = {_dtype(c) if isinstance(c, str) else c for c in v.choices}
        if choices <= set(HALF):
            return True, next(iter(choices)) if len(choices) == 1 else None
        return None, None
    if isinstance(v, dict) and "cli_arg" in v:
        return "by_dtype", v
    return None, None


def _dtype(v: Any) -> Any:
    """A dtype word as gpulint names it (``"bfloat16"`` -> ``"bf16"``, see index.DTYPE_STRINGS); anything else as given."""
    if isinstance(v, str):
        return DTYPE_STRINGS.get(v.lower(), v.lower())
    return v


def precision(f: Facts) -> None:
    """Every mechanism that sets the precision, in the order the facts have always come out."""
    ix = f.ix
    _autocast(f)
    _transformer_engine(f)
    _partial_autocast(f)
    _apex(f)
    _grad_scalers(f)
    for c in ix.calls_to(*HF_ARGS):
        hf.training_arguments(f, c)
    for c in ix.calls_to("transformers.HfArgumentParser", "trl.TrlParser"):
        hf.parsed_arguments(f, c)
    for c in ix.calls_to(*MEGATRON_PRETRAIN):
        megatron.precision(f, c)
        break
    _accelerate(f)
    _lightning(f)
    hydra.config_refs(f)
    _fsdp(f)
    keras.precision(f)
    _deepspeed(f)
    _model_casts(f)
    _unread_cells(f)
    _quantized(f)
    jax.precision(f)  # flax dtypes, jmp policies, JAX's fp32 default (frameworks/jax.py)


def _autocast(f: Facts) -> None:
    """``torch.autocast`` / ``torch.cuda.amp.autocast`` contexts and decorators on a GPU device."""
    ix = f.ix
    for c in ix.calls_to(*AUTOCAST):
        if c.qualname == "torch.cpu.amp.autocast":
            continue
        if f.opaque_kwargs(c) or any(a.__class__ is ast.Starred for a in c.node.args):
            # ``torch.autocast(**ctx.autocast_kwargs)``: device, dtype and enabled are the caller's, unknown here
            f.add("precision", {"mechanism": "autocast", "dtype": None, "enabled": None}, c.node, c.qualname,
                  in_with=c.in_with, scope=c.scope)
            continue
        device = autocast_device(f, c)
        dtype = f.val(c, "dtype", 1)
        enabled = f.val(c, "enabled", 0 if c.qualname == "torch.cuda.amp.autocast" else 2)
        gpu_devices = {"cuda", "xpu", "mps"}
        if isinstance(device, OneOf):
            if not device.choices & gpu_devices:
                continue
        elif device is not UNKNOWN and device not in gpu_devices:
            continue  # CPU autocast says nothing about the GPU
        if not f.present(c, "dtype") and c.positional(1) is None:
            dtype = "fp16"  # torch default for cuda autocast
        on, half = half_precision(dtype)
        if enabled is UNKNOWN and not _has_enabled(c):
            enabled = True if on is not None or dtype is UNKNOWN else None
        if on is None and dtype is not UNKNOWN:
            enabled = None  # a choice that includes fp32: undecided
        value = {"mechanism": "autocast", "dtype": half if on is True else norm(_dtype(dtype)),
                 "enabled": norm(enabled) if not isinstance(enabled, OneOf) else None}
        if _local_fp32_region(c):
            value["local"] = True
        f.add("precision", value, c.node, c.qualname, in_with=c.in_with, scope=c.scope)


def _transformer_engine(f: Facts) -> None:
    ix = f.ix
    for c in ix.calls_to(*TE_AUTOCAST):
        # NVIDIA TransformerEngine runs its layers in FP8 inside this context (``enabled`` defaults to True)
        enabled = norm(f.val(c, "enabled", 0)) if f.present(c, "enabled") or c.positional(0) is not None else True
        f.add("precision", {"mechanism": "transformer_engine", "dtype": "fp8",
                            "enabled": None if isinstance(enabled, OneOf) else enabled},
              c.node, c.qualname, in_with=c.in_with, scope=c.scope)


def _partial_autocast(f: Facts) -> None:
    ix = f.ix
    for c in ix.calls_to("functools.partial"):
        # ``self.autocast_ctx = partial(torch.cuda.amp.autocast, enabled=True, dtype=torch.float16)``, entered later
        # as ``with self.autocast_ctx():``: the autocast it binds is the workload's
        inner = qualified(f, c.positional(0)) if c.positional(0) is not None else ""
        if inner not in AUTOCAST or inner == "torch.cpu.amp.autocast":
            continue
        device = "cuda" if inner == "torch.cuda.amp.autocast" else f.val(c, "device_type")
        if device is not UNKNOWN and device not in ("cuda", "xpu", "mps"):
            continue
        on, half = half_precision(f.val(c, "dtype") if f.present(c, "dtype") else "fp16")
        enabled = norm(f.val(c, "enabled")) if f.present(c, "enabled") else True
        f.add("precision", {"mechanism": "autocast", "dtype": half if on is True else None,
                            "enabled": (enabled if enabled in (True, False) else None) if on is True else None},
              c.node, "functools.partial", in_with=False, scope=c.scope)


def _apex(f: Facts) -> None:
    """NVIDIA apex AMP at its opt_level (O0 is fp32), directly or through a Determined trial's context."""
    ix = f.ix
    for c in ix.method_calls("configure_apex_amp"):
        # a Determined trial's ``self.context.configure_apex_amp(models, optimizers, opt_level="O1")``: apex AMP
        level = f.val(c, "opt_level") if f.present(c, "opt_level") else "O1"
        on = None if level is UNKNOWN or isinstance(level, (dict, OneOf)) else (str(level).upper() != "O0")
        f.add("precision", {"mechanism": "apex", "dtype": "fp16" if on else None, "enabled": on}, c.node, "configure_apex_amp")
    for c in ix.calls_to("apex.amp.initialize"):
        level = f.val(c, "opt_level")
        on = None if level is UNKNOWN or isinstance(level, (dict, OneOf)) else (str(level).upper() != "O0")
        f.add("precision", {"mechanism": "apex", "dtype": "fp16" if on else None, "enabled": on}, c.node, c.qualname)


def _grad_scalers(f: Facts) -> None:
    """Loss scaling: apex's ``scale_loss`` (once), torch's GradScaler (each)."""
    ix = f.ix
    for c in ix.calls_to("apex.amp.scale_loss"):
        f.add("grad_scaler", {"enabled": True}, c.node, c.qualname)  # apex scales the loss itself
        break
    for c in ix.calls_to(*GRAD_SCALER):
        f.add("grad_scaler", {"enabled": norm(f.val(c, "enabled")) if f.present(c, "enabled") else True}, c.node, c.qualname)


def _accelerate(f: Facts) -> None:
    ix = f.ix
    for c in ix.calls_to(*ACCELERATOR):
        if f.present(c, "mixed_precision"):
            mp = f.val(c, "mixed_precision")
            f.add("precision", {"mechanism": "accelerate", "dtype": norm(_dtype(mp)) if not isinstance(mp, dict) else mp,
                                "enabled": None if mp is UNKNOWN or isinstance(mp, dict) else (mp not in ("no", None))},
                  c.node, "mixed_precision")
        else:
            # Accelerator() without the argument takes the accelerate config / launch flag
            f.add("precision", {"mechanism": "accelerate", "dtype": None, "enabled": None, "from_launcher": True}, c.node, "mixed_precision")


def _lightning(f: Facts) -> None:
    """A Lightning Trainer or Fabric: its ``precision=``, or where the precision comes from without one."""
    ix = f.ix
    for c in ix.calls:
        q = c.qualname or ""
        built = q.endswith(TRAINER_BUILDERS) and framework_class(q, {}) in LIGHTNING_TRAINERS
        if q in LIGHTNING_TRAINERS or built:
            if _evaluates_only(ix, c):
                continue  # a Trainer built to test/validate/predict after training does not set the training's precision
            if f.present(c, "precision"):
                p = f.val(c, "precision")
                f.add("precision", lightning.precision_value(p), c.node, "precision")
            elif built:
                # ``Trainer.from_argparse_args(opt)`` reads --precision from the command line: decided at run time
                f.add("precision", {"mechanism": "lightning", "dtype": None, "enabled": None}, c.node, "precision")
            elif f.opaque_kwargs(c):
                # ``Trainer(**cfg.trainer)`` takes it from a config: the linked config's trainer.precision decides
                f.add("precision", {"mechanism": "lightning", "dtype": None, "enabled": None, "from_config": True}, c.node, "precision")
            else:
                # Fabric() takes --precision from ``fabric run`` (its launcher) through the environment: fp32 by default
                fabric = {"fabric": True} if q.endswith("Fabric") else {}
                f.add("precision", {"mechanism": "lightning", "dtype": "fp32", "enabled": False, "default": True, **fabric},
                      c.node, "precision")
    for c in lightning.cli_runs(f):  # the --config file's trainer.precision (or --trainer.precision) decides
        f.add("precision", {"mechanism": "lightning", "dtype": None, "enabled": None, "from_config": True}, c.node, "precision")
    for c, _ in hydra.instantiated_trainers(f):  # ``hydra.utils.instantiate(cfg.trainer)``: as ``Trainer(**cfg.trainer)``
        f.add("precision", {"mechanism": "lightning", "dtype": None, "enabled": None, "from_config": True}, c.node, "precision")


_EVALUATIONS = frozenset({"test", "validate", "predict"})


def _evaluates_only(ix: PyIndex, c: Call) -> bool:
    """Is the Trainer `c` builds used only to test, validate or predict: ``trainer = pl.Trainer(devices=1)`` then
    ``trainer.test(model)``, with no ``fit`` on that name before the name is bound again (NeMo's examples rebuild a
    one-GPU Trainer for the test set after ``trainer.fit``)."""
    name = c.assigned_to
    if not name:
        return False
    used: set[str] = set()
    for o in ix.calls:
        if o.order <= c.order or o.scope != c.scope:
            continue
        if o.assigned_to == name and o.qualname == c.qualname:
            break  # the name is bound to a new Trainer
        if o.receiver == name:
            used.add(o.attr)
    return bool(used & _EVALUATIONS) and "fit" not in used


def _fsdp(f: Facts) -> None:
    ix = f.ix
    for c in ix.calls_to(*FSDP_MP):
        dt = f.val(c, "param_dtype")
        f.add("precision", {"mechanism": "fsdp", "dtype": norm(_dtype(dt)), "enabled": True if dt not in (UNKNOWN, "fp32") else norm(dt != "fp32" if dt is not UNKNOWN else UNKNOWN)},
              c.node, c.qualname)


def _deepspeed(f: Facts) -> None:
    """``deepspeed.initialize(config=...)``: a dict read here, a file path left to the config reader."""
    ix = f.ix
    for c in ix.calls_to(*DS_INIT):
        cfg = c.kwarg("config") or c.kwarg("config_params")
        val = f.ev.value(cfg, c.scope) if cfg is not None else UNKNOWN
        if isinstance(val, dict):
            deepspeed.config_precision(f, val, c.node)
        elif isinstance(val, str):
            f.add("config_ref", {"kind": "deepspeed", "path": val}, c.node, "config")
        else:
            f.add("precision", {"mechanism": "deepspeed", "dtype": None, "enabled": None, "from_config": True}, c.node, "deepspeed.initialize")


def _model_casts(f: Facts) -> None:
    """The model itself in 16 bit: cast, built in a default dtype, or loaded in one."""
    ix = f.ix
    # model cast: model.half() / model.to(torch.bfloat16) / model.to(dtype) / from_pretrained(torch_dtype=...)
    saved = _saved_copies(ix)
    for c in ix.calls:
        if c.attr in ("half", "bfloat16") and id(c.node) in saved:
            continue  # ``torch.save({"model": deepcopy(model).half()})``: a 16-bit copy written to disk, not what trains
        if c.attr == "half" and c.receiver and not c.has_args:
            f.add("precision", {"mechanism": "model_cast", "dtype": "fp16", "enabled": True}, c.node, "half")
        elif c.attr in ("bfloat16",) and c.receiver and not c.has_args and (
                not (c.qualname or "").startswith("torch") or _module_built(c.qualname)):
            f.add("precision", {"mechanism": "model_cast", "dtype": "bf16", "enabled": True}, c.node, "bfloat16")
        elif c.attr == "to" and c.receiver:
            _cast_by_to(f, c)
        elif c.attr == "set_default_tensor_type" and c.positional(0) is not None and \
                re.search(r"(Half|BFloat16)Tensor|float16|bfloat16", tensor_type := ast.unparse(c.positional(0))):
            # ``torch.set_default_tensor_type(torch.cuda.HalfTensor)``: every tensor (and layer) built after it is 16 bit
            half = "bf16" if "bfloat16" in tensor_type.lower() else "fp16"
            f.add("precision", {"mechanism": "model_cast", "dtype": half, "enabled": True}, c.node, "set_default_tensor_type")
        elif c.attr == "set_default_dtype" and c.positional(0) is not None:
            # torch.set_default_dtype(torch.bfloat16), or a project's context manager of the same name around it
            # (``with training.set_default_dtype(self._dtype):``): the model is built in that dtype
            enabled, dtype = half_precision(f.ev.value(c.positional(0), c.scope))
            if enabled is not False:
                f.add("precision", {"mechanism": "model_cast", "dtype": dtype, "enabled": enabled}, c.node, "set_default_dtype")
        elif (c.qualname or "").startswith("torch.nn.") and (c.qualname or "").count(".") == 2 and \
                c.attr[:1].isupper() and f.kwarg(c, "dtype") is not None:
            # ``nn.Linear(d, d, dtype=cfg["dtype"])`` with a bf16 config: the layers are built in 16 bit (a pure-bf16
            # model, as a cast after building would make it)
            value = f.ev.value(f.kwarg(c, "dtype"), c.scope)
            enabled, dtype = half_precision(value)
            if enabled is True:
                f.add("precision", {"mechanism": "model_cast", "dtype": dtype, "enabled": True}, c.node, "dtype")
            elif enabled is None and (value is UNKNOWN or isinstance(value, (OneOf, dict))):
                # ``dtype=cfg["dtype"]`` with the config handed in by the caller: 16 bit perhaps, decided where it is built
                f.add("precision", {"mechanism": "model_cast", "dtype": None, "enabled": None}, c.node, "dtype")
        elif c.qualname in ZERO_INIT and f.kwarg(c, "dtype") is not None:
            # ZeRO-3 builds the parameters in this dtype: a 16-bit model, whatever the config file says
            enabled, dtype = half_precision(f.ev.value(f.kwarg(c, "dtype"), c.scope))
            if enabled is not False:
                f.add("precision", {"mechanism": "model_cast", "dtype": dtype, "enabled": enabled}, c.node, "dtype")
        elif _builds_model(c) and (given := next(((k, v) for k, v in c.keywords() if k and "dtype" in k.lower()), None)):
            # ``model = load_model(folder, param_dtype=torch.bfloat16)``: the repository's own loader builds the model in
            # the dtype it is handed (a hand-written bf16 recipe keeping fp32 master weights beside it)
            enabled, dtype = half_precision(f.ev.value(given[1], c.scope))
            if enabled is True or (enabled == "by_dtype" and _dtype_flag(dtype)):
                f.add("precision", {"mechanism": "model_cast", "dtype": dtype, "enabled": enabled, "load_dtype": True},
                      c.node, given[0] if enabled is True else dtype["cli_arg"])
        elif c.attr in ("from_pretrained", "from_config") and (f.kwarg(c, "torch_dtype") is not None
                                                             or f.kwarg(c, "dtype") is not None):
            # (transformers >= 4.56 names it dtype=; from_config builds an untrained model in it, as a load does)
            v = f.ev.value(f.kwarg(c, "torch_dtype") or f.kwarg(c, "dtype"), c.scope)
            enabled, dtype = half_precision(v)
            if enabled is False:
                continue  # an fp32 load: nothing turns mixed precision on here
            # "auto" loads the checkpoint's own dtype, which the repository does not say: undecided
            f.add("precision", {"mechanism": "model_cast", "dtype": dtype, "enabled": enabled, "load_dtype": True},
                  c.node, "torch_dtype")
        elif c.attr == "from_pretrained" and norm(f.val(c, "trust_remote_code")) is True and \
                not re.search(r"Tokenizer|Processor|Config|FeatureExtractor", c.qualname or c.receiver) and \
                _may_run_remote_code(f.val(c, "pretrained_model_name_or_path", 0)):
            # the model repository's own modelling code runs (Qwen switches itself to bf16, ChatGLM builds its layers
            # in the config's fp16): without a torch_dtype the dtype is that code's choice, not fp32 for sure
            f.add("precision", {"mechanism": "model_cast", "dtype": None, "enabled": None, "load_dtype": True},
                  c.node, "trust_remote_code")


def _cast_by_to(f: Facts, c: Call) -> None:
    """``model.to(torch.bfloat16)`` / ``.to(dtype)`` / ``.to(dtype=args.dtype)``: the first argument that is a dtype."""
    args = [a.value if isinstance(a, ast.Starred) else a for a in c.node.args] + \
           [v for k, v in c.keywords() if k == "dtype"]
    for arg in args:
        value = f.ev.value(arg, c.scope)
        enabled, dtype = half_precision(value)
        if enabled == "by_dtype" and not _dtype_flag(value):
            continue  # ``.to(args.gpu)``: a flag naming a device, not a dtype
        if enabled is True or enabled == "by_dtype":
            key = dtype["cli_arg"] if isinstance(dtype, dict) else "to"  # the flag that decides it
            f.add("precision", {"mechanism": "model_cast", "dtype": dtype, "enabled": enabled}, c.node, key)
            break
        if isinstance(value, OneOf) and any(half_precision(ch)[0] is True for ch in value.choices) or \
                value is UNKNOWN and _names_a_dtype(arg, c):
            # ``bfloat16 if cuda and bf16 supported else float32``, or ``.to(dtype=self._dtype)`` read from a
            # config: 16 bit perhaps, decided at run time
            f.add("precision", {"mechanism": "model_cast", "dtype": None, "enabled": None}, c.node, "to")
            break


def _unread_cells(f: Facts) -> None:
    # a notebook cell that did not parse and mentions a dtype or a model load may have set the precision: the
    # notebook's fp32 is then not decided (the cell runs in Jupyter; gpulint read the notebook without it)
    for line, text in getattr(f.src, "unread_cells", ()):
        m = _PRECISION_WORDS.search(text)
        if m:
            f.out.append(Fact("precision", {"mechanism": "unread_cell", "dtype": None, "enabled": None,
                                            "undecided": f"a notebook cell gpulint could not parse mentions {m.group(0)!r}, "
                                                         f"which may set it"}, f.src.loc(line, 1, line, 1), "cell", "", {}))
            break


def _quantized(f: Facts) -> None:
    ix = f.ix
    # quantized loads compute in the dtype their config names (bitsandbytes' compute dtype, GPTQ/AWQ kernels)
    for c in ix.calls:
        q = c.qualname or ""
        if q in QUANT_CONFIGS:
            if c.assigned_to and not read_again(f, c.assigned_to):
                continue  # ``bnb_config = BitsAndBytesConfig(...)`` that no load is given: the model loads unquantised
            compute = f.val(c, "bnb_4bit_compute_dtype") if q.endswith("BitsAndBytesConfig") else UNKNOWN
            enabled, dtype = half_precision(compute)
            f.add("precision", {"mechanism": "quantized", "dtype": dtype if enabled is True else None,
                                "enabled": True if enabled is True else None}, c.node, q)
        elif c.attr == "from_pretrained" and any(norm(f.val(c, k)) is True for k in ("load_in_4bit", "load_in_8bit")):
            f.add("precision", {"mechanism": "quantized", "dtype": None, "enabled": None}, c.node, "load_in_kbit")
        elif c.attr == "from_pretrained" and _PREQUANTIZED.search(str(_model_id(f, c) or "")):
            # a checkpoint published quantized (``unsloth/llama-2-7b-bnb-4bit``, ``TheBloke/...-GPTQ``): its config's
            # quantization_config loads it quantized, computing in the 16-bit dtype that config names
            f.add("precision", {"mechanism": "quantized", "dtype": None, "enabled": None}, c.node, "prequantized")


#: model ids of checkpoints published quantized (bitsandbytes, GPTQ, AWQ, EXL2, AQLM, HQQ exports)
_PREQUANTIZED = re.compile(r"bnb-?[48]bit|[-_.](?:gptq|awq|exl2|aqlm|hqq)\b|[-_](?:int4|int8|4bit|8bit)\b", re.I)


def _model_id(f: Facts, c: Call) -> Any:
    """The model id a ``from_pretrained`` call loads (its first argument or the keyword naming it), or UNKNOWN."""
    for key in ("pretrained_model_name_or_path", "model_name", "model_id"):
        if f.present(c, key):
            return f.val(c, key)
    return f.val(c, "pretrained_model_name_or_path", 0)


#: words of a notebook cell that may set the precision (a dtype, autocast, a model load or cast)
_PRECISION_WORDS = re.compile(r"dtype|autocast|bfloat16|float16|\bbf16\b|\bfp16\b|\.half\(|precision|from_pretrained|"
                              r"from_config|load_in_[48]bit|quantiz", re.I)


def _builds_model(c: Call) -> bool:
    """A call of the repository's (or an unknown library's) code that builds or loads the model: its name or the
    name it is bound to says model (``load_model(...)``, ``net = build_model(cfg)``, ``model = get_network(...)``).
    torch's and transformers' calls are read for what they are."""
    if (c.qualname or "").startswith(("torch.", "transformers.", "numpy.", "jax.")) or c.attr == "from_pretrained":
        return False
    return "model" in c.attr.lower() or c.assigned_to.lower() in ("model", "net", "network") or "model" in c.assigned_to.lower()


_DTYPE_FLAG = re.compile(r"dtype|precision|half|bf16|fp16|float|amp", re.I)


def _dtype_flag(marker: dict) -> bool:
    """Does a command-line flag choose a dtype: its default names one (``"bfloat16"``, ``torch.float16``) or its
    name says so (``--dtype``, ``--precision``)? ``--gpu`` or ``--device`` do not."""
    default = marker.get("default")
    if isinstance(default, str) and default.lower().removeprefix("torch.") in (*DTYPE_STRINGS, "float"):
        return True
    return bool(_DTYPE_FLAG.search(marker.get("cli_arg", "")))


#: model repositories that ship their own modelling code (loaded only with trust_remote_code=True), which picks
#: the dtype itself: Qwen (v1) turns bf16/fp16 on by itself, ChatGLM, Baichuan and InternLM build their layers in
#: the config's dtype. A literal name of any other model runs transformers' own code (trust_remote_code is inert).
_REMOTE_CODE_MODELS = re.compile(r"(^|/)(qwen-|chatglm|baichuan|internlm|minicpm|telechat|xverse)", re.I)


def _may_run_remote_code(name: Any) -> bool:
    return not isinstance(name, str) or _REMOTE_CODE_MODELS.search(name) is not None


def _saved_copies(ix: PyIndex) -> set[int]:
    """Nodes inside the arguments of ``torch.save`` (directly, or in the dict literal a name given to it is bound
    to): casts there make the checkpoint's copy, not the training model."""
    out: set[int] = set()
    for c in ix.calls_to("torch.save"):
        for arg in c.node.args[:1]:
            nodes = [arg]
            if arg.__class__ is ast.Name:
                nodes += [a.value for a in ix.assigns if a.target == arg.id and a.scope == c.scope and isinstance(a.value, ast.Dict)]
            for n in nodes:
                out.update(id(x) for x in ast.walk(n))
    return out


def _module_built(qualname: str) -> bool:
    """``torch.nn.Embedding().bfloat16``: a layer built and cast (its activations, and the weights a hand-written
    ``forward`` casts with ``type_as``, compute in bf16), unlike a tensor function's result (``torch.randn().bfloat16``)."""
    head = qualname.rsplit(".", 1)[0]
    return head.startswith("torch.nn.") and head.endswith("()") and head[:-2].rsplit(".", 1)[-1][:1].isupper()


def _names_a_dtype(arg: ast.expr, c: Call) -> bool:
    """Is ``.to()`` a model cast to a configured dtype: the receiver is the model (``model.to``,
    ``build(cfg).cuda().to``), and the argument a dtype by its keyword or its name (``dtype=x``,
    ``self._dtype``, ``cfg.torch_dtype``), not a device, and not another tensor's own ``x.dtype``
    (``mask.to(dtype=model.dtype)`` follows the model, it decides nothing)?"""
    receiver = c.receiver.rsplit(".", 1)[-1].lower()
    if not (_MODELISH.search(receiver) or c.receiver.endswith(")")):
        return False
    text = dotted(arg) or ""
    head, _, last = text.rpartition(".")
    if last == "dtype" and head and not _CONFIGISH.search(head.rsplit(".", 1)[-1].lower()):
        return False
    if any(k == "dtype" and v is arg for k, v in c.keywords()):
        return True
    return last.lower().lstrip("_").endswith("dtype")


_MODELISH = re.compile(r"(model|net|module|network|encoder|decoder|backbone|transformer)")

_CONFIGISH = re.compile(r"(cfg|config|conf|args|opt|hparams|params|settings|training)")


def _has_enabled(c: Call) -> bool:
    return c.kwarg("enabled") is not None


def _local_fp32_region(c: Call) -> bool:
    """``with torch.autocast("cuda", enabled=False):`` inside a function, or ``@autocast("cuda", enabled=False)``
    on one, written with the literal False: an fp32 island carved out of whatever autocast runs around it (a
    rotary embedding's or a loss's forward), the pattern PyTorch documents as locally disabling autocast. It says
    nothing of the workload's precision; a variable or a flag (``enabled=use_amp``) is a switch of the run and
    stays a workload fact."""
    e = c.kwarg("enabled")
    local = c.decorator or (c.in_with and bool(c.scope))
    return local and e is not None and e.__class__ is ast.Constant and e.value is False


def tf32(f: Facts) -> None:
    ix = f.ix
    jax.matmul_precision(f)
    for qual, what in TF32_FLAGS.items():
        for a in ix.assignments_to(qual):
            v = f.ev.value(a.value, a.scope)
            f.add("tf32", {"enabled": norm(v), "via": qual, "what": what}, a.node, qual)
    for qual in TF32_PRECISION:
        for a in ix.assignments_to(qual):
            v = f.ev.value(a.value, a.scope)
            f.add("tf32", {"enabled": None if v is UNKNOWN else v == "tf32", "via": qual, "what": "matmul"}, a.node, qual)
    for c in ix.calls_to("torch.set_float32_matmul_precision"):
        v = f.val(c, "precision", 0)
        f.add("tf32", {"enabled": None if v is UNKNOWN else v in ("high", "medium"), "via": c.qualname, "what": "matmul"}, c.node, c.qualname)
