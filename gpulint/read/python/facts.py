"""Facts about training code, read from the shared Python index.

Matching is by resolved qualified name (``import torch as t`` does not fool
it), never by substring. Values are followed through simple assignments,
argparse defaults and dataclass defaults of the same file; what cannot be
decided is recorded as unknown (None) so rules stay silent on it.
"""
from __future__ import annotations

import re

import posixpath
from typing import Any

import ast

from gpulint.core.model import Fact
from gpulint.read.python.layer_sizes import count_models
from gpulint.core.facts import is_cli
from gpulint.read.python.index import (DTYPE_STRINGS, UNKNOWN, Call, Evaluator, OneOf, PyIndex, SourceText, build_index, dotted, elements,
                             guard_of, literal, string)
from gpulint.core.sources import Source

#: cheap text gate: a Python file mentioning none of these cannot hold a fact
ML_WORDS = (
    "torch", "transformers", "accelerate", "lightning", "deepspeed", "keras", "tensorflow",
    "jax", "flax", "sagemaker", "trl", "peft", "DataLoader", "vllm", "sglang", "litserve",
)

AUTOCAST = {"torch.autocast", "torch.amp.autocast", "torch.cuda.amp.autocast", "torch.cpu.amp.autocast",
            "torch.amp.autocast_mode.autocast"}
#: calls that compile a CUDA extension from source at run time (JIT) for the script's own kernels
CUSTOM_KERNEL_BUILDS = ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")
#: TransformerEngine's FP8 contexts (``te.autocast`` is the newer name of ``te.fp8_autocast``)
TE_AUTOCAST = ("transformer_engine.pytorch.fp8_autocast", "transformer_engine.pytorch.autocast")
GRAD_SCALER = {"torch.cuda.amp.GradScaler", "torch.amp.GradScaler", "torch.GradScaler", "torch.cuda.amp.grad_scaler.GradScaler",
               "torch.amp.grad_scaler.GradScaler"}
HF_ARGS = {"transformers.TrainingArguments", "transformers.Seq2SeqTrainingArguments", "trl.SFTConfig", "trl.DPOConfig",
           "trl.GRPOConfig", "trl.RewardConfig", "trl.ORPOConfig", "trl.KTOConfig", "trl.PPOConfig", "trl.RLOOConfig",
           "trl.CPOConfig", "trl.OnlineDPOConfig", "trl.GKDConfig", "trl.BCOConfig", "trl.PRMConfig", "trl.XPOConfig",
           "trl.NashMDConfig",
           "transformers.training_args.TrainingArguments"}
HF_TRAINERS = {"transformers.Trainer", "transformers.Seq2SeqTrainer", "trl.SFTTrainer", "trl.DPOTrainer", "trl.GRPOTrainer",
               "trl.RewardTrainer", "trl.ORPOTrainer", "trl.KTOTrainer", "trl.PPOTrainer"}
FABRICS = frozenset({"lightning.fabric.Fabric", "lightning.Fabric", "lightning_fabric.Fabric"})
LIGHTNING_TRAINERS = {"lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer", "lightning.fabric.Fabric",
                      "lightning.Fabric", "lightning_fabric.Fabric",
                      # the same classes imported from their submodules (``from pytorch_lightning.trainer import Trainer``)
                      "pytorch_lightning.trainer.Trainer", "pytorch_lightning.trainer.trainer.Trainer",
                      "lightning.pytorch.trainer.Trainer", "lightning.pytorch.trainer.trainer.Trainer",
                      "lightning.fabric.fabric.Fabric", "lightning_fabric.fabric.Fabric"}
ACCELERATOR = {"accelerate.Accelerator"}
QUANT_CONFIGS = {"transformers.BitsAndBytesConfig", "transformers.GPTQConfig", "transformers.AwqConfig",
                 "transformers.utils.quantization_config.BitsAndBytesConfig", "auto_gptq.BaseQuantizeConfig",
                 "transformers.HqqConfig", "transformers.TorchAoConfig", "transformers.FbgemmFp8Config"}
DATALOADER = {"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"}
DATAPARALLEL = {"torch.nn.DataParallel", "torch.nn.parallel.DataParallel", "torch.nn.parallel.data_parallel.DataParallel"}
FUNCTIONAL_DATAPARALLEL = {"torch.nn.parallel.data_parallel", "torch.nn.parallel.data_parallel.data_parallel"}
RPC_INIT = {"torch.distributed.rpc.init_rpc", "torch.distributed.rpc.api.init_rpc"}
DDP = {"torch.nn.parallel.DistributedDataParallel", "torch.nn.parallel.distributed.DistributedDataParallel"}
RAY_TRAIN = {"ray.train.torch.TorchTrainer", "ray.train.ScalingConfig", "ray.air.config.ScalingConfig", "ray.air.ScalingConfig",
             "ray.train.torch.prepare_model", "ray.train.lightning.RayDDPStrategy", "ray.train.huggingface.TransformersTrainer"}
FSDP = {"torch.distributed.fsdp.FullyShardedDataParallel", "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel",
        "torch.distributed.fsdp.fully_shard", "torch.distributed._composable.fsdp.fully_shard"}
FSDP_MP = {"torch.distributed.fsdp.MixedPrecision", "torch.distributed.fsdp.MixedPrecisionPolicy",
           "torch.distributed._composable.fsdp.MixedPrecisionPolicy", "torch.distributed.fsdp.fully_sharded_data_parallel.MixedPrecision"}
INIT_PG = {"torch.distributed.init_process_group", "torch.distributed.distributed_c10d.init_process_group"}
KERAS_POLICY = {"tensorflow.keras.mixed_precision.set_global_policy", "keras.mixed_precision.set_global_policy",
                "tensorflow.keras.mixed_precision.experimental.set_policy", "keras.mixed_precision.experimental.set_policy",
                "tf_keras.mixed_precision.set_global_policy"}
DS_INIT = {"deepspeed.initialize"}
#: Megatron's training driver: its loop lives in the library; precision is its own --bf16 / --fp16 (fp32 without)
MEGATRON_PRETRAIN = {"megatron.training.pretrain", "megatron.training.training.pretrain"}
ZERO_INIT = {"deepspeed.zero.Init", "deepspeed.runtime.zero.partition_parameters.Init"}
TF32_FLAGS = {"torch.backends.cuda.matmul.allow_tf32": "matmul", "torch.backends.cudnn.allow_tf32": "cudnn"}
TF32_PRECISION = {"torch.backends.cuda.matmul.fp32_precision", "torch.backends.fp32_precision",
                  "torch.backends.cudnn.conv.fp32_precision"}
INFERENCE_CTX = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"}
PIPELINE = {"transformers.pipeline"}
SAGEMAKER_ESTIMATORS = {
    "sagemaker.estimator.Estimator", "sagemaker.Estimator", "sagemaker.pytorch.PyTorch", "sagemaker.pytorch.estimator.PyTorch",
    "sagemaker.huggingface.HuggingFace", "sagemaker.huggingface.estimator.HuggingFace", "sagemaker.tensorflow.TensorFlow",
    "sagemaker.estimator.Framework", "sagemaker.jumpstart.estimator.JumpStartEstimator",
}


def _norm(v: Any) -> Any:
    """A value as a fact may hold it: unknown (and a run-time choice among several) is None."""
    return None if v is UNKNOWN or isinstance(v, OneOf) else v


HALF = ("bf16", "fp16", "fp8")


#: Kubeflow Trainer SDK trainers that carry the resources of the nodes they run on
KUBEFLOW_TRAINERS = frozenset({"CustomTrainer", "BuiltinTrainer", "Trainer"})


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


def _main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.ops[0].__class__ is not ast.Eq:
        return False
    sides = [test.left, test.comparators[0]]
    return any(n.__class__ is ast.Name and n.id == "__name__" for n in sides) and \
        any(n.__class__ is ast.Constant and n.value == "__main__" for n in sides)


class _Facts:
    def __init__(self, source: Source, ix: PyIndex):
        self.src = source
        self.ix = ix
        self.ev = Evaluator(ix)
        self.out: list[Fact] = []
        self.getitem_classes: list[tuple[ast.ClassDef, ast.FunctionDef, bool]] | None = None  # see _getitem_classes
        self._reads: dict[str, list[ast.AST]] | None = None  # see reads
        self.peeked: dict[int, str] | None = None  # see _read_without_training

    def reads(self, name: str) -> list[ast.AST]:
        """The nodes that read `name` in the file: ``x`` (a Name loaded), or ``.attr`` for any attribute ``o.attr``
        loaded; indexed once per file."""
        if self._reads is None:
            index: dict[str, list[ast.AST]] = {}
            for node in ast.walk(self.src.syntax) if self.src.syntax is not None else ():
                if node.__class__ is ast.Name and node.ctx.__class__ is ast.Load:
                    index.setdefault(node.id, []).append(node)
                elif node.__class__ is ast.Attribute and node.ctx.__class__ is ast.Load:
                    index.setdefault("." + node.attr, []).append(node)
            self._reads = index
        return self._reads.get(name, [])

    def add(self, kind: str, value: Any, node: ast.AST, key: str = "", **attrs: Any) -> None:
        if kind == "precision" and isinstance(value, dict) and value.get("enabled") is True:
            value = self._conditioned(value, node)
            if value is None:
                return  # in a branch that never runs
        self.out.append(Fact(kind, value, self.src.node_loc(node), key, "", attrs))

    def _conditioned(self, value: dict, node: ast.AST) -> dict | None:
        """A mixed-precision mechanism inside ``if args.amp:`` (or ``if self.use_fp16:``) is on only where that
        test holds: its ``enabled`` becomes the flag (resolved against the launchers) or undecided. Tests that
        are GPU/CPU checks, debug switches or OS branches are the guards' business, not this."""
        c = self.ix.call_at(node)
        if c is None or not c.conditions:
            return value
        decided: list[Any] = []
        for test, side in c.conditions:
            parts = list(test.values) if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And and side else [test]
            # device, OS and debug checks are the guards'; ``if __name__ == "__main__":`` is the script running
            parts = [p for p in parts if not any(guard_of(p, ast.unparse(p))) and not _main_test(p)]
            for part in parts:
                negated = False
                while part.__class__ is ast.UnaryOp and part.op.__class__ is ast.Not:
                    part, negated = part.operand, not negated
                compared = self._flag_compared(part, c.scope)
                if compared is not None:
                    # ``if args.precision == "amp_bf16":`` (or != "fp32", in (...)): on where the flag's value passes
                    decided.append({**compared, "negate": compared["negate"] != (negated or not side)})
                    continue
                v = self.ev.value(part, c.scope) if part.__class__ in (ast.Name, ast.Attribute) else UNKNOWN
                if isinstance(v, bool):
                    if (v != negated) != side:
                        return None  # ``USE_AMP = False`` ... ``if USE_AMP:``: the branch never runs
                    continue
                if is_cli(v) and side and not negated and len(parts) == 1:
                    decided.append(v)
                    continue
                return {**value, "enabled": None, "guarded": True}  # a condition gpulint cannot decide
        if len(decided) == 1:
            return {**value, "enabled": decided[0], "guarded": True}
        return value if not decided else {**value, "enabled": None, "guarded": True}

    def _flag_compared(self, test: ast.expr, scope: str) -> dict | None:
        """``args.precision == "bf16"`` / ``!= "fp32"`` / ``in ("amp", "amp_bf16")``: the flag's marker with the words
        that make the test true (``one_of``; ``negate`` for != / not in), resolved per launcher; else None."""
        if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.left.__class__ not in (ast.Name, ast.Attribute):
            return None
        op, right = test.ops[0], test.comparators[0]
        if op.__class__ in (ast.Eq, ast.NotEq) and right.__class__ is ast.Constant and isinstance(right.value, str):
            words = [right.value]
        elif op.__class__ in (ast.In, ast.NotIn) and right.__class__ in (ast.Tuple, ast.List, ast.Set) and \
                all(e.__class__ is ast.Constant and isinstance(e.value, str) for e in right.elts):
            words = [e.value for e in right.elts]
        else:
            return None
        marker = self.ev.value(test.left, scope)
        if not is_cli(marker):
            return None
        return {**marker, "one_of": words, "negate": op.__class__ in (ast.NotEq, ast.NotIn)}

    def val(self, call: Call, kw: str | None = None, pos: int | None = None) -> Any:
        node = self.kwarg(call, kw) if kw else None
        if node is None and pos is not None:
            node = call.positional(pos)
        if node is None:
            return UNKNOWN
        return self.ev.value(node, call.scope)

    def present(self, call: Call, kw: str) -> bool:
        return self.kwarg(call, kw) is not None

    def kwarg(self, call: Call, kw: str) -> ast.expr | None:
        """A keyword argument, also when it comes in a ``**settings`` dict literal (``settings = dict(...)``
        or ``{...}`` assigned once in the same scope or at module level)."""
        node = call.kwarg(kw)
        if node is not None:
            return node
        for table in self._star_dicts(call) or ():
            if kw in table:
                return table[kw]
        return None

    def opaque_kwargs(self, call: Call) -> bool:
        """``**kwargs`` whose keys cannot be read: any keyword may be set there."""
        return call.has_star_kwargs and self._star_dicts(call) is None

    def _star_dicts(self, call: Call) -> list[dict[str, ast.expr]] | None:
        out = []
        for kw in call.node.keywords:
            if kw.arg is not None:
                continue
            table = _dict_literal(kw.value, self.ix, call.scope)
            if table is None:
                return None
            out.append(table)
        return out


def _dict_literal(node: ast.expr, ix: PyIndex, scope: str, depth: int = 0) -> dict[str, ast.expr] | None:
    """Keys and value nodes of ``{"k": v}`` / ``dict(k=v)`` (possibly through one name), else None."""
    if depth > 3:
        return None
    if isinstance(node, ast.Name):
        # rebound (a notebook's cells): the binding that reaches this use; a parameter: what the caller passes
        assigns = ix.bindings(node.id, scope, node)
        if not assigns or len(assigns) != 1 or not isinstance(assigns[0].value, ast.expr):
            return None
        if (node.id, assigns[0].scope) in ix.mutated or (node.id, scope) in ix.mutated:
            return None  # changed after it was built (hp["bf16"] = 1, hp.update(...)): its keys are not the literal's
        return _dict_literal(assigns[0].value, ix, assigns[0].scope, depth + 1)
    if isinstance(node, ast.Dict):
        out: dict[str, ast.expr] = {}
        for k, v in zip(node.keys, node.values):
            key = string(k)
            if key is None:  # ``**other`` or a key that is not a string literal
                return None
            out[key] = v
        return out
    if isinstance(node, ast.Call) and dotted(node.func) == "dict" and len(node.args) <= 1:
        # dict(k=v), dict(base, k=v), dict(**base, k=v): the readable parts merged in order, else unreadable
        merged: dict[str, ast.expr] = {}
        parts = [(None, a) for a in node.args] + [(k.arg, k.value) for k in node.keywords]
        for key, value in parts:
            if key is not None:
                merged[key] = value
                continue
            inner = _dict_literal(value, ix, scope, depth + 1)
            if inner is None:
                return None
            merged.update(inner)
        return merged
    return None


def python_facts(source: Source) -> list[Fact]:
    syntax = getattr(source, "syntax", None)
    if syntax is None:
        return []
    ix = source._index or build_index(syntax, source.source_text())
    source._index = ix
    f = _Facts(source, ix)
    _training(f)
    _precision(f)
    _tf32(f)
    _dataloaders(f)
    _media(f)
    _distributed(f)
    _checkpoints(f)
    _models(f)
    _sagemaker(f)
    _sagemaker_model_trainer(f)
    _serving(f)
    _datasets(f)
    _dataset_classes(f)
    _invokes(f)
    _local_imports(f)
    if _runs_as_script(ix):
        value = {"via": "main_guard" if ix.main_guard else "module_level"}
        if ix.main_blocks:
            value["main_lines"] = [list(b) for b in ix.main_blocks]
        f.out.append(Fact("script", value, source.loc(1), "script", "", {}))
    return f.out


#: module-level calls that make a file do work when run: a training step or loop, a trainer, a launcher
_SCRIPT_CALLS = frozenset({"train", "fit", "backward", "step", "apply_gradients", "gradient", "run", "launch", "main",
                           "train_model", "spawn", "start"})


def _runs_as_script(ix: PyIndex) -> bool:
    """Does running the file do work? A ``__main__`` guard, or a module-level call of a function the
    file defines or of a training/serving API. A module whose training lives only in functions and
    methods nobody calls at module level is library code (a Trainer class of the package), not a script."""
    if ix.main_guard:
        return True
    for c in ix.calls:
        if c.scope:
            continue
        if c.func in ix.top_functions or c.attr in _SCRIPT_CALLS:
            return True
    return False


# -- does it train, on what --------------------------------------------------------------
#: entry points named for measuring speed, not for producing a model
_BENCH_FILE = re.compile(r"(^|[_\-.])(bench|benchmark|benchmarks|benchmarking|throughput|speedtest|speed_test|measure|profile|profiling)([_\-.]|$)")
_CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "timeit.default_timer"})
#: random tensors made from nothing (randn_like is a diffusion model's noise, not its input)
_RANDOM_INPUTS = frozenset({"torch.randn", "torch.rand", "torch.randint"})
_DATA_SOURCES = ("torchvision.datasets.", "datasets.", "torchtext.", "tensorflow_datasets.", "webdataset.", "numpy.load",
                 "pandas.read_", "torch.load", "h5py.")
_DATA_CALLS = frozenset({"load_dataset", "load_from_disk", "read_csv", "read_parquet", "open"})


def _benchmark(f: _Facts, backward: Call) -> None:
    """A training step that is measured rather than trained toward a model: the file is named a benchmark,
    or the step's own function times it (a clock read and ``torch.cuda.synchronize()`` beside the backward,
    or CUDA events). Nothing of it is worth a checkpoint, and fp32 may be what it measures."""
    stem = posixpath.basename(f.src.path).rsplit(".", 1)[0].lower()
    if _BENCH_FILE.search(stem):
        f.add("benchmark", {"via": "file name"}, backward.node, stem)
        return
    scope = [c for c in f.ix.calls if c.scope == backward.scope]
    clocks = any(c.qualname in _CLOCKS for c in scope)
    syncs = any(c.qualname in ("torch.cuda.synchronize", "torch.cuda.Event") or c.attr == "elapsed_time" for c in scope)
    if backward.scope and clocks and syncs and not _iterates_a_loader(f, backward.scope):
        f.add("benchmark", {"via": "timed steps"}, backward.node, backward.scope)
        return
    # the file says its data is fake or synthetic (``add_fake_labels``, ``s3://.../image-data-synthetic-raw``) or reports
    # a throughput metric it times: a throughput run, whatever the model
    said = _says_synthetic(f)
    if said:
        f.add("benchmark", {"via": said, "synthetic": True}, backward.node, backward.scope or stem)
        return
    # the step's inputs are random tensors (made in its function, or in one it calls: a batch generator), and the
    # file reads no data at all: an API demo or a throughput run
    called = {c.attr for c in scope if c.receiver in ("", "self")} | {backward.scope}
    synthetic = next((c for c in f.ix.calls if c.qualname in _RANDOM_INPUTS and c.scope in called), None)
    reads_data = any(c.qualname in DATALOADER or (c.qualname or "").startswith(_DATA_SOURCES) or c.attr in _DATA_CALLS
                     for c in f.ix.calls)
    if synthetic is not None and not reads_data:
        f.add("benchmark", {"via": f"synthetic inputs ({synthetic.qualname})", "synthetic": True}, backward.node, backward.scope)


#: a module docstring that says the file is a demonstration, not a run anyone keeps
_DEMO_DOC = re.compile(r"\b(?:this (?:script|example|file|notebook|code) (?:demonstrates|shows how)|demonstrates how to|"
                       r"toy example|minimal example|a (?:simple|minimal|small) (?:demo|example) of)\b", re.I)
#: names of a training budget in steps (``training_steps = 10``; ``max_steps=10``)
_BUDGET_NAME = re.compile(r"^(?:max|num|n|total|training|train)_?(?:steps|iters|iterations|train_steps)$", re.I)
#: the text of such a budget's assignment, to skip the tree walk for files that have none
_BUDGET_TEXT = re.compile(r"(?:max|num|n|total|training|train)_?(?:steps|iters|iterations|train_steps)\s*=\s*\d", re.I)
#: a literal budget this short is a demo or smoke test: nothing of it is worth a GPU-efficiency change
DEMO_MAX_STEPS = 100


def _demo(f: _Facts) -> None:
    """A training file that says it is a demonstration (its module docstring), or whose step budget is a literal
    of a few steps (``training_steps = 10`` in a function or the module, ``TrainingArguments(max_steps=10)``): a
    benchmark-like run, judged as such (fp32 may be all it needs, nothing worth a checkpoint)."""
    tree = f.src.syntax
    doc = ast.get_docstring(tree) if isinstance(tree, ast.Module) else None
    m = _DEMO_DOC.search(doc or "")
    if m:
        f.add("benchmark", {"via": f"docstring ('{m.group(0)}')"}, tree.body[0], "docstring")
        return
    for c in f.ix.calls:
        if (c.qualname or "") in HF_ARGS and isinstance(steps := f.val(c, "max_steps"), int) and 0 < steps <= DEMO_MAX_STEPS:
            f.add("benchmark", {"via": f"{steps}-step budget (max_steps={steps})"}, c.node, "max_steps")
            return
        if (c.qualname or "") in LIGHTNING_TRAINERS:
            budget = _lightning_budget(f, c)
            if budget:
                f.add("benchmark", {"via": budget}, c.node, "Trainer")
                return
    if not _BUDGET_TEXT.search(f.src.source_text().text):
        return  # no ``num_steps = 10``-like line to find: the walk below would find nothing
    for node in ast.walk(tree) if tree is not None else ():
        if node.__class__ is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Name and \
                _BUDGET_NAME.match(node.targets[0].id) and node.value.__class__ is ast.Constant and \
                type(node.value.value) is int and 0 < node.value.value <= DEMO_MAX_STEPS:
            name = node.targets[0].id
            if sum(1 for n in ast.walk(tree) if n.__class__ is ast.Name and n.id == name) > 1:  # the loop reads it
                f.add("benchmark", {"via": f"{node.value.value}-step budget ({name} = {node.value.value})"}, node, name)
                return


def _lightning_budget(f: _Facts, c: Call) -> str | None:
    """A Lightning Trainer that runs a few steps at most: ``fast_dev_run=True`` (one batch), ``max_steps`` or
    ``limit_train_batches`` x ``max_epochs`` of DEMO_MAX_STEPS or fewer (a bug-report template, a smoke test)."""
    fast = f.val(c, "fast_dev_run")
    if fast is True or (type(fast) is int and fast > 0):
        return f"fast_dev_run={fast}"
    steps = f.val(c, "max_steps")
    if type(steps) is int and 0 < steps <= DEMO_MAX_STEPS:
        return f"{steps}-step budget (max_steps={steps})"
    batches, epochs = f.val(c, "limit_train_batches"), f.val(c, "max_epochs")
    if type(batches) is int and type(epochs) is int and 0 < batches * epochs <= DEMO_MAX_STEPS:
        return f"{batches * epochs}-step budget (limit_train_batches={batches}, max_epochs={epochs})"
    return None


_LOADER_WORDS = re.compile(r"loader|data_iter|dataiter|batches|prefetcher", re.I)


_FAKE_NAME = re.compile(r"(^|_)(fake|synthetic)(_|$)", re.I)
_SYNTHETIC_PATH = re.compile(r"[/_\-]synthetic([/_\-.]|$)", re.I)


def _says_synthetic(f: _Facts) -> str | None:
    """The benchmark evidence a file states itself: a function named for making fake or synthetic data
    (``add_fake_labels``; not a variable: a GAN's ``fake_images`` are its product), a data path of synthetic data,
    or a "throughput" metric next to a clock read."""
    for name in f.ix.top_functions:
        if _FAKE_NAME.search(name) and re.search(r"label|data|input|batch|image|sample", name, re.I):
            return f"data it names as fake ({name})"
    clocks = any(c.qualname in _CLOCKS for c in f.ix.calls)
    tree = f.src.syntax
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 300:
            v = node.value
            if ("://" in v or v.startswith("/")) and _SYNTHETIC_PATH.search(v):
                return "a synthetic data path"
            if clocks and v.lower() in ("throughput", "samples_per_second", "images_per_sec", "tokens_per_second"):
                return f"the {v!r} metric it times"
    return None


def _iterates_a_loader(f: _Facts, scope: str) -> bool:
    """Does the function loop over a data loader (``for i, (x, y) in enumerate(data_loader):``)? Then its clock
    reads are the epoch loop's ``batch_time`` meter, as in most training scripts, not a benchmark's timing."""
    body = f.ix.bodies.get(scope)
    if not body:
        return False
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.For, ast.AsyncFor)) and _LOADER_WORDS.search(ast.unparse(node.iter)):
                return True
    return False


def _classes_around(ix: PyIndex, c: Call) -> list[tuple[ast.ClassDef, tuple[str, ...]]]:
    """The classes of the module (with their bases' qualified names) whose body holds the call, outermost first."""
    line = c.node.lineno
    return sorted(((node, bases) for node, bases in ix.classes.values() if node.lineno <= line <= (node.end_lineno or node.lineno)),
                  key=lambda nb: nb[0].lineno)


def _owner(ix: PyIndex, c: Call) -> dict:
    """The function and class a training call sits in (``train_one_epoch``, ``Trainer.run``): what a script
    of the repository must call to run this training (see the ``invokes`` facts)."""
    inside = [node for node, _ in _classes_around(ix, c)]
    cls = max(inside, key=lambda n: n.lineno).name if inside else ""
    # what of the module leads to that function or class (``main`` calling ``train`` building ``Trainer``): a script
    # that imports the module runs this training only by calling one of them, unless module-level code does
    names = {n for n in (c.scope, cls) if n}
    if not names:
        return {"function": c.scope, "cls": cls}
    callers, on_import = ix.reached_from(names)
    return {"function": c.scope, "cls": cls, **({} if on_import else {"reached_from": sorted(callers)[:40]})}


def _invokes(f: _Facts) -> None:
    """Calls of names imported from other modules (``from engine import train_one_epoch`` ...
    ``train_one_epoch(model, ...)``; ``Trainer(cfg).run()``): the linker makes a script that calls the
    training of a repository module a workload, though its own file holds no training step."""
    seen = set()
    for c in f.ix.calls:
        head = (c.func or "").split(".", 1)[0]
        q = f.ix.imports.get(head)
        if not q or not c.qualname or "." not in c.qualname or c.qualname in seen:
            continue
        module, _, name = c.qualname.partition("(")[0].rpartition(".")
        if module and name and not module.startswith(_NOT_LOCAL):
            seen.add(c.qualname)
            f.add("invokes", {"module": module, "name": name}, c.node, c.qualname)
    # names imported relatively (``from .engine import Engine`` ... ``Engine()``): the index keeps no qualified name
    relative = f.ix.relative_names
    for c in f.ix.calls if relative else ():
        head = (c.func or "").split(".", 1)[0]
        if head in relative and (c.func or "") not in seen:
            module, name, level = relative[head]
            seen.add(c.func or "")
            parts = (c.func or "").split(".")
            if len(parts) > 1:  # ``from . import engine`` ... ``engine.Engine()``: a name of that module
                module, name = ".".join(p for p in (module, name, *parts[1:-1]) if p), parts[-1]
            f.add("invokes", {"module": module, "name": name}, c.node, c.func, relative=level)
    # a class of the file built on an imported one (``class MyTrainer(BaseTrainer)``) runs that class's methods
    for node, bases in f.ix.classes.values():
        for q in bases:
            module, _, name = (q or "").rpartition(".")
            if module and name and q not in seen and not module.startswith(_NOT_LOCAL):
                seen.add(q)
                f.add("invokes", {"module": module, "name": name}, node, q)


#: imports that are never modules of the repository (the frameworks gpulint knows)
_NOT_LOCAL = ("torch", "transformers", "accelerate", "lightning", "pytorch_lightning", "deepspeed", "tensorflow", "keras",
              "jax", "flax", "numpy", "datasets", "peft", "trl", "sagemaker", "os", "sys", "json", "time", "math",
              "argparse", "logging", "random", "functools", "itertools", "collections", "typing", "pathlib")


_OTHER_FRAMEWORKS = ("mxnet", "paddle", "chainer", "mindspore", "oneflow", "megengine", "cupy")


#: classmethods that build a framework trainer (``pl.Trainer.from_argparse_args(args)``)
_TRAINER_BUILDERS = (".from_argparse_args", ".from_config")


def _trainer_classes(ix: PyIndex) -> dict[str, str]:
    """Classes of the file that subclass a framework trainer, directly or through other classes of the file
    (``class LLaVATrainer(Trainer)``): name -> the framework class. They train as the framework's does."""
    known = HF_TRAINERS | LIGHTNING_TRAINERS
    out: dict[str, str] = {}
    for _ in range(4):  # chains of local subclasses
        for name, (_, bases) in ix.classes.items():
            if name in out:
                continue
            base = next((b if b in known else out[b] for b in bases if b in known or b in out), None)
            if base:
                out[name] = base
    return out


def _framework_class(qualname: str, local: dict[str, str]) -> str:
    """A trainer's qualified name in the frameworks' words: a local subclass is its framework class, a
    builder classmethod is the class it builds."""
    for suffix in _TRAINER_BUILDERS:
        if qualname.endswith(suffix):
            qualname = qualname[: -len(suffix)]
    return local.get(qualname, qualname)


def _printed_and_asserted(tree: ast.AST | None) -> tuple[set[int], set[int]]:
    """Ids of the nodes inside a ``print(...)``/logging call's arguments, and inside an ``assert``'s test."""
    said: set[int] = set()
    asserted: set[int] = set()
    for node in ast.walk(tree) if tree is not None else ():
        if node.__class__ is ast.Assert:
            asserted.update(id(n) for n in ast.walk(node.test))
        elif node.__class__ is ast.Call and (dotted(node.func) or "").rsplit(".", 1)[-1] in ("print", "info", "debug", "log"):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                said.update(id(n) for n in ast.walk(arg))
    return said, asserted


def _read_again(f: _Facts, name: str) -> bool:
    """Is `name` (``device``, or ``self.device``: any ``.device`` attribute) read anywhere in the file?"""
    return bool(f.reads("." + name.split(".", 1)[1] if name.startswith("self.") else name))


def _megatron_precision(f: _Facts, call: Call) -> None:
    """Megatron trains in fp32 unless its command line says --bf16 or --fp16 (megatron/training/arguments.py).
    ``args_defaults={...}`` of the file (given to pretrain or parse_and_validate_args) replaces a flag's default;
    one gpulint cannot read, or a --yaml-cfg launch, leaves the precision undecided."""
    defaults: dict[str, Any] = {"bf16": False, "fp16": False}
    for c in (c for c in f.ix.calls if c.has_kwarg("args_defaults")):
        given = f.val(c, "args_defaults")
        if not isinstance(given, dict):
            defaults = {"bf16": None, "fp16": None}
            break
        for key in defaults:
            if key in given:
                defaults[key] = given[key] if isinstance(given[key], bool) else None
    f.add("precision", {"mechanism": "megatron_cli", "dtype": None, "replaced_by": "--yaml-cfg",
                        "enabled": {k: {"cli_arg": f"--{k}", "default": v} for k, v in defaults.items()}},
          call.node, call.qualname)


def _training(f: _Facts) -> None:
    ix = f.ix
    local_trainers = _trainer_classes(ix)
    for name, base in local_trainers.items():
        node = ix.classes[name][0]
        f.add("trainer_class", {"name": name, "base": base}, node, name)
    # a custom autograd Function's own ``backward`` calls its kernel's backward (``wkv.backward(w, k, v, gy, ...)``):
    # gradient arithmetic, not the training step (a trainer's ``def backward(self, loss)`` helper still is one)
    backward = [c for c in ix.method_calls("backward") if not (c.scope == "backward" and _in_autograd_function(ix, c))]
    steps = [c for c in ix.method_calls("step") if "sched" not in c.receiver.lower()]
    # loss.backward() + trainer.step() is also MXNet Gluon's, Paddle's, Chainer's loop: frameworks whose mixed
    # precision, loaders and launchers gpulint does not read; their loops are not judged as PyTorch's
    other = ix.imports_any(*_OTHER_FRAMEWORKS) and not ix.imports_any("torch", "lightning", "pytorch_lightning", "accelerate",
                                                                       "deepspeed", "transformers")
    if backward and steps and not other:
        f.add("trains", {"via": "loop"}, backward[0].node, "backward", **_owner(ix, backward[0]))
        _benchmark(f, backward[0])
    for c in ix.calls:
        q = c.qualname or ""
        if q.endswith("().train") and _framework_class(q[: -len("().train")], local_trainers) in HF_TRAINERS:
            f.add("trains", {"via": "hf_trainer"}, c.node, q, **_owner(ix, c))
        elif q.endswith("().fit") and _framework_class(q[: -len("().fit")], local_trainers) in LIGHTNING_TRAINERS:
            f.add("trains", {"via": "lightning"}, c.node, q, **_owner(ix, c))
        elif q.endswith(("().train", "().fit")) and "." in q.partition("(")[0] and \
                not q.partition("(")[0].startswith(_NOT_LOCAL + _OTHER_FRAMEWORKS):
            # ``LLaVATrainer(...).train()`` of a class imported from a repository module: the linker decides
            # whether that class is a framework trainer (its module's trainer_class facts)
            module, _, name = q.partition("(")[0].rpartition(".")
            f.add("trainer_call", {"module": module, "name": name, "method": c.attr}, c.node, q, **_owner(ix, c))
        elif q.endswith("().backward") and q[: -len("().backward")] in ACCELERATOR | FABRICS:
            f.add("trains", {"via": "fabric" if q[: -len("().backward")] in FABRICS else "accelerate"}, c.node, q, **_owner(ix, c))
        elif c.attr == "fit" and c.receiver and ix.imports_any("tensorflow", "keras", "tf_keras") and (
                not q or q.startswith(("transformers.TF", "tensorflow.", "keras.", "tf_keras."))):
            f.add("trains", {"via": "keras"}, c.node, "fit", **_owner(ix, c))
    # a Determined trial: the platform runs the loop and calls the trial's train_batch, which steps through its context
    context_backward = any(c.receiver.endswith("context") for c in ix.method_calls("backward"))
    for name, (node, bases) in ix.classes.items():
        if context_backward and any(b.rsplit(".", 1)[-1] == "PyTorchTrial" for b in bases):
            step = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "train_batch"), None)
            if step is not None:
                f.add("trains", {"via": "determined"}, step, f"{name}.train_batch", function="train_batch", cls=name)
    # a custom TensorFlow loop: GradientTape gradients applied by an optimizer
    tape = [c for c in ix.method_calls("gradient") if ix.imports_any("tensorflow")]
    applied = [c for c in ix.method_calls("apply_gradients")]
    if tape and applied:
        f.add("trains", {"via": "tensorflow"}, applied[0].node, "apply_gradients", **_owner(ix, applied[0]))
    for c in ix.calls_to(*MEGATRON_PRETRAIN):
        f.add("trains", {"via": "megatron"}, c.node, c.qualname, **_owner(ix, c))
        f.add("uses_gpu", {"via": "megatron"}, c.node, c.qualname)  # NCCL process groups: no CPU path
        break
    for c in ix.calls_to(*DS_INIT):
        if any(x.attr == "backward" for x in ix.calls):
            f.add("trains", {"via": "deepspeed"}, c.node, "deepspeed.initialize", **_owner(ix, c))
    trains = next((x for x in f.out if x.kind == "trains"), None)
    # the budget or docstring of a demo lives in the script that runs, also where its training step is a library's
    # (``for _ in range(NUM_STEPS): engine.train_step()``, the backward inside the installed package)
    if (trains is not None or _runs_as_script(ix)) and not any(x.kind == "benchmark" for x in f.out):
        _demo(f)
    # GPU use: explicit device strings, .cuda(), or frameworks that take the GPU when one exists
    # a device only where a CUDA check found one (``"cuda" if torch.cuda.is_available() else "cpu"``, ``if
    # torch.cuda.is_available(): model.cuda()``) runs on the CPU as well: a probe, not a GPU the code requires
    for c in sorted(ix.calls, key=lambda c: "gpu" in c.guards):
        q = c.qualname or ""
        if c.attr == "cuda" and c.receiver and not q.startswith("torch.cuda"):
            f.add("uses_gpu", {"via": ".cuda()", "probe": "gpu" in c.guards}, c.node, "cuda")
            break
    for c in sorted(ix.calls, key=lambda c: "gpu" in c.guards):
        pipe = c.qualname in ("transformers.pipeline", "transformers.pipelines.pipeline")
        if c.attr in ("to", "device") or c.qualname == "torch.device" or pipe:
            first = f.val(c, "device") if pipe else f.val(c, None, 0) if c.positional(0) is not None else f.val(c, "device")
            # an ordinal is a CUDA device: ``.to(0)``, ``torch.device(0)``, ``pipeline(..., device=0)`` (-1 is its CPU)
            ordinal = isinstance(first, int) and not isinstance(first, bool) and first >= 0
            if (isinstance(first, str) and first.startswith("cuda")) or ordinal:
                if c.qualname == "torch.device" and c.assigned_to and not _read_again(f, c.assigned_to):
                    continue  # ``device = torch.device("cuda")`` that nothing reads: the model never goes there
                f.add("uses_gpu", {"via": "device", "probe": "gpu" in c.guards}, c.node, "cuda")
                break
    for c in ix.calls_to(*_GPU_RESOURCE_DECLARATIONS):
        # a Ray task/actor or Serve deployment, or a BentoML service, that asks its scheduler for GPUs: it is placed on
        # one or never runs
        gpus = _declared_gpus(f, c)
        if isinstance(gpus, (int, float)) and not isinstance(gpus, bool) and gpus > 0:
            f.add("uses_gpu", {"via": f"{c.qualname} asks for {gpus} GPU(s)"}, c.node, c.qualname)
            break
    said_asserted = None  # the print/assert walk of the file, only once a CUDA query is there to judge
    for c in ix.calls:
        q = c.qualname or ""
        if (q.startswith("torch.cuda.") and c.attr in ("is_available", "device_count", "set_device", "current_device")) or \
                (q.startswith("torch.accelerator.") and c.attr in ("current_accelerator", "is_available", "device_count",
                                                                    "set_device_index", "current_device_index")):
            said, asserted = said_asserted = said_asserted or _printed_and_asserted(f.src.syntax)
            if id(c.node) in said:
                continue  # ``print(torch.cuda.is_available())``: a notebook reporting what it has, not using it
            if id(c.node) in asserted:
                # ``assert torch.cuda.is_available(), "needs a GPU"``: the script refuses to run without one
                f.add("uses_gpu", {"via": f"{q} (asserted)"}, c.node, q)
                break
            # ``if torch.cuda.device_count() > 0: torch.cuda.set_device(0)``: inside a CUDA check it is a probe too
            f.add("uses_gpu", {"via": q, **({"probe": True} if "gpu" in c.guards else {})}, c.node, q)
            break
    gpu_frameworks = HF_TRAINERS | ACCELERATOR | DS_INIT
    for c in ix.calls:
        q = _framework_class(c.qualname or (c.func if c.func in local_trainers else ""), local_trainers)
        if q in gpu_frameworks:
            # HF Trainer and accelerate take a GPU when there is one and train on the CPU otherwise ("auto");
            # DeepSpeed needs one
            f.add("uses_gpu", {"via": q, "auto": q not in DS_INIT}, c.node, q)
            break
    for c in ix.calls:
        if _framework_class(c.qualname or "", local_trainers) in LIGHTNING_TRAINERS:
            acc = f.val(c, "accelerator")
            gpus = f.val(c, "gpus") if f.present(c, "gpus") else UNKNOWN
            if f.present(c, "gpus") and not f.present(c, "accelerator") and (gpus == 0 or gpus is None):
                # Lightning 1.x: ``Trainer(gpus=0)`` (or None) trains on the CPU, whatever the machine has
                f.add("cpu_only", {"via": f"lightning gpus={gpus}"}, c.node, c.qualname)
            elif acc is UNKNOWN and not f.present(c, "accelerator") or acc in ("gpu", "cuda", "auto"):
                asks = acc in ("gpu", "cuda") or (isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 0)
                several = _lightning_several(f, c, gpus)
                f.add("uses_gpu", {"via": "lightning", "auto": not asks, **({"several": True} if several else {})}, c.node, c.qualname)
            elif acc == "cpu":
                f.add("cpu_only", {"via": "lightning accelerator='cpu'"}, c.node, c.qualname)
    # an XLA device (TPU, Trainium and Inferentia through torch-neuronx) or Intel Gaudi's HPU: not a CUDA GPU
    other = _other_accelerator(f)
    if other is not None:
        f.add("other_accelerator", {"via": other[1], "device": other[2]}, other[0].node, other[1])
    # a CUDA extension compiled from the repository's own sources (RWKV's wkv kernels, a fused op): autocast does not
    # reach inside it, so the advice to train in 16 bit has to say how its inputs stay in the dtype it was written for
    kernel = next(iter(ix.calls_to(*CUSTOM_KERNEL_BUILDS)), None)
    if kernel is not None:
        f.add("custom_kernel", {"via": kernel.qualname}, kernel.node, kernel.qualname)
    # Intel's extension tuning the model for Xeon beside CPU autocast: the script trains on the CPU (IPEX on an Intel
    # GPU moves the model to "xpu", which is GPU evidence of its own)
    ipex = next(iter(ix.calls_to("intel_extension_for_pytorch.optimize")), None)
    if ipex is not None and any(_cpu_autocast(f, c) for c in ix.calls_to(*AUTOCAST)):
        f.add("cpu_only", {"via": "intel_extension_for_pytorch.optimize with CPU autocast"}, ipex.node, ipex.qualname)
    # a notebook whose kernel runs on a CPU instance (SageMaker Studio records it in the metadata): what the
    # cells train in the kernel trains on that CPU; jobs the cells submit are other workloads
    kernel = getattr(f.src, "kernel_instance", None)
    if kernel and ix.calls:
        from gpulint.core.families import CPU, device_of

        if device_of(kernel)[0] == CPU:
            f.add("cpu_only", {"via": f"notebook kernel on {kernel}", "declared": True}, ix.calls[0].node, "metadata.instance_type")
        else:
            # the kernel's own machine (a GPU instance): the compute what the cells train runs on
            loc = f.src.node_loc(ix.calls[0].node)
            f.out.append(Fact("compute.target", {"source": "notebook", "provider": "aws", "resource": "kernel", "role": "notebook"},
                              loc, "metadata.instance_type", "kernel", {"kernel": True}))
            f.out.append(Fact("compute.instance_type", kernel, loc, "metadata.instance_type", "kernel", {}))
    # the code submits itself with resources that hold no GPU (Kubeflow Trainer SDK: a CustomTrainer whose
    # resources_per_node asks for CPU and memory only): the function it trains runs on CPU nodes
    for c in ix.calls:
        if c.attr in KUBEFLOW_TRAINERS and (c.qualname or "").startswith("kubeflow."):
            res = f.val(c, "resources_per_node")
            if isinstance(res, dict) and res and not any("gpu" in str(k).lower() for k in res):
                f.add("cpu_only", {"via": "kubeflow resources_per_node without a GPU", "declared": True}, c.node, "resources_per_node")
    for c in ix.calls_to(*INFERENCE_CTX):
        if c.in_with or c.decorator:
            f.add("inference", {"via": c.qualname.split(".")[-1]}, c.node, c.qualname)
    for c in ix.calls_to(*PIPELINE):
        f.add("inference", {"via": "pipeline"}, c.node, c.qualname)
    for c in ix.method_calls("generate"):
        f.add("inference", {"via": "generate"}, c.node, "generate")
        break
    for c in ix.method_calls("eval"):
        if not c.has_args and (c.qualname or "") not in ("eval", "builtins.eval"):
            f.add("inference", {"via": "eval"}, c.node, "eval")
            break
    for c in ix.calls_to("torch.set_grad_enabled", "torch.autograd.set_grad_enabled"):
        if literal(c.positional(0)) is False if c.positional(0) is not None else False:
            f.add("inference", {"via": "set_grad_enabled"}, c.node, c.qualname)
            break


# -- datasets ----------------------------------------------------------------------------
#: benchmark datasets of tutorials and smoke tests: small images, small models, steps bound by anything but math
TOY_DATASETS = {"mnist", "fashionmnist", "fashion_mnist", "kmnist", "emnist", "qmnist", "cifar10", "cifar100", "svhn",
                "stl10", "ylecun/mnist", "uoft-cs/cifar10", "uoft-cs/cifar100", "zalando-datasets/fashion_mnist", "iris",
                # Lightning's demo corpus, the Planetoid citation graphs (a few thousand nodes), HF tutorial sets of a few
                # hundred to a thousand rows (beans: 1k leaf images; RAFT: 50 training rows per task)
                "wikitext2", "cora", "citeseer", "pubmed", "beans", "ought/raft",
                # the few-shot benchmark of 28x28 handwritten characters (32k images; learn2learn's, torchvision's)
                "omniglot"}
#: Gymnasium's classic-control and toy-text environments (the ids without their version)
TOY_ENVIRONMENTS = {"cartpole", "mountaincar", "mountaincarcontinuous", "acrobot", "pendulum", "frozenlake", "taxi",
                    "cliffwalking", "blackjack", "lunarlander", "lunarlandercontinuous"}


def _datasets(f: _Facts) -> None:
    for c in f.ix.calls:
        q = c.qualname or ""
        name = None
        if q.startswith(("torchvision.datasets.", "tensorflow.keras.datasets.", "keras.datasets.")):
            name = q.split(".")[-1] if q.startswith("torchvision") else q.split(".")[-2] if q.endswith(".load_data") else None
        elif q.startswith(("pl_bolts.datamodules.", "lightning.pytorch.demos.", "pytorch_lightning.demos.")) and q.endswith("DataModule"):
            name = q.split(".")[-1][: -len("DataModule")]
        elif q.startswith(("lightning.pytorch.demos.", "pytorch_lightning.demos.")) and q.endswith("WikiText2"):
            name = "WikiText2"
        elif q in ("learn2learn.vision.benchmarks.get_tasksets",):
            v = f.val(c, "name", 0)  # ``get_tasksets("omniglot", train_ways=5, ...)``
            name = v if isinstance(v, str) else None
        elif q in ("torch_geometric.datasets.Planetoid",):
            v = f.val(c, "name", 1)
            name = v if isinstance(v, str) else None
        elif q in ("datasets.load_dataset", "tensorflow_datasets.load"):
            v = f.val(c, "path" if q.startswith("datasets") else "name", 0)
            name = v if isinstance(v, str) else None
        elif q in ("gym.make", "gymnasium.make"):
            # a classic-control environment (CartPole: 4 floats a state) trains a policy of a few thousand weights,
            # bound by stepping the simulator, not by GPU math
            v = f.val(c, "id", 0)
            arg = f.kwarg(c, "id") or c.positional(0)
            if v is UNKNOWN and arg.__class__ is ast.Name:
                v = _parameter_default(f.src.syntax, c.node, arg.id)  # ``def __init__(self, env="CartPole-v0")``
            env = v.split("/")[-1].split("-v")[0].lower() if isinstance(v, str) else ""
            if env in TOY_ENVIRONMENTS:
                f.add("dataset", {"name": v, "toy": True}, c.node, q)
                return
        if name and name.lower().replace("-", "_") in TOY_DATASETS | {d.replace("-", "_") for d in TOY_DATASETS}:
            f.add("dataset", {"name": name, "toy": True}, c.node, q)
            return


def _parameter_default(tree: ast.AST | None, node: ast.AST, name: str) -> Any:
    """The literal default of parameter `name` of the innermost function around `node`, else UNKNOWN: what the
    call uses when nothing passes the parameter (method scopes are not told apart by the index)."""
    best = None
    for fn in ast.walk(tree) if tree is not None else ():
        if fn.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and fn.lineno <= node.lineno <= (fn.end_lineno or 0):
            if best is None or fn.lineno > best.lineno:
                best = fn
    if best is None:
        return UNKNOWN
    a = best.args
    positional = a.posonlyargs + a.args
    defaults = dict(zip([x.arg for x in positional[len(positional) - len(a.defaults):]], a.defaults))
    defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
    return literal(defaults[name]) if name in defaults else UNKNOWN


#: decorators and calls that declare the GPUs a task, actor, deployment or service is scheduled with
_GPU_RESOURCE_DECLARATIONS = ("ray.remote", "ray.serve.deployment", "bentoml.service")


def _declared_gpus(f: _Facts, c: Call) -> Any:
    """GPUs a scheduler gives the decorated code: ``@ray.remote(num_gpus=1)``, ``@serve.deployment(ray_actor_options=
    {"num_gpus": 1})``, ``@bentoml.service(resources={"gpu": 1})``; UNKNOWN where the value is not literal."""
    if c.qualname == "ray.remote":
        return f.val(c, "num_gpus") if f.present(c, "num_gpus") else UNKNOWN
    key, inner = ("ray_actor_options", "num_gpus") if c.qualname == "ray.serve.deployment" else ("resources", "gpu")
    opts = f.val(c, key) if f.present(c, key) else UNKNOWN
    return opts.get(inner, UNKNOWN) if isinstance(opts, dict) else UNKNOWN


# -- serving -----------------------------------------------------------------------------
#: constructors and calls that stand up a model server or an online inference engine
SERVERS = {
    "fastapi.FastAPI": "fastapi", "flask.Flask": "flask", "uvicorn.run": "uvicorn", "litserve.LitServer": "litserve",
    "vllm.LLM": "vllm", "vllm.AsyncLLMEngine.from_engine_args": "vllm", "vllm.engine.async_llm_engine.AsyncLLMEngine.from_engine_args": "vllm",
    "vllm.entrypoints.openai.api_server.run_server": "vllm", "ray.serve.run": "ray-serve", "ray.serve.deployment": "ray-serve",
    "bentoml.Service": "bentoml", "bentoml.service": "bentoml", "kserve.ModelServer": "kserve", "gradio.Interface": "gradio",
    "gradio.ChatInterface": "gradio", "sglang.Engine": "sglang",
}
#: SageMaker's inference-toolkit entry points (a script that defines them is an endpoint handler)
SAGEMAKER_HANDLERS = ("model_fn", "predict_fn", "transform_fn")
#: base classes and class names of serving handlers
SERVING_BASES = {"ts.torch_handler.base_handler.BaseHandler": "torchserve", "kserve.Model": "kserve",
                 "litserve.LitAPI": "litserve", "ls.LitAPI": "litserve"}
SERVING_CLASSES = {"TritonPythonModel": "triton"}


def _serving(f: _Facts) -> None:
    ix = f.ix
    for c in ix.calls:
        via = SERVERS.get(c.qualname or "")
        if via:
            f.add("serves", {"via": via}, c.node, c.qualname)
            return
    for name in SAGEMAKER_HANDLERS:
        node = ix.top_functions.get(name)
        if node is not None:
            f.add("serves", {"via": f"sagemaker {name}"}, node, name)
            return
    for name, (node, bases) in ix.classes.items():
        via = SERVING_CLASSES.get(name) or next((SERVING_BASES[b] for b in bases if b in SERVING_BASES), None)
        if via:
            f.add("serves", {"via": via}, node, name)
            return


# -- precision ---------------------------------------------------------------------------
def _dtype(v: Any) -> Any:
    if isinstance(v, str):
        return DTYPE_STRINGS.get(v.lower(), v.lower())
    return v


#: calls that put a model on an accelerator that is not a CUDA GPU, by the device they give
_OTHER_ACCELERATOR_CALLS = {"torch_xla.core.xla_model.xla_device": "xla", "torch_xla.device": "xla",
                            "torch_xla.distributed.parallel_loader.MpDeviceLoader": "xla", "torch_neuronx.trace": "xla",
                            "habana_frameworks.torch.core.mark_step": "hpu", "habana_frameworks.torch.hpu.is_available": "hpu"}


def _other_accelerator(f: _Facts) -> tuple[Call, str, str] | None:
    """(call, what, device) of the first sign the code runs on an XLA device or a Gaudi HPU: torch_xla's device or
    loader, torch-neuronx, habana_frameworks, a ``"xla"``/``"hpu"`` device string or process-group backend."""
    for c in f.ix.calls:
        q = c.qualname or ""
        if q in _OTHER_ACCELERATOR_CALLS:
            return c, q, _OTHER_ACCELERATOR_CALLS[q]
        literal_to = c.attr == "to" and c.node.args and c.node.args[0].__class__ is ast.Constant  # ``.to("hpu")``
        if q in ("torch.device", "torch.distributed.init_process_group") or literal_to:
            v = f.val(c, "backend" if q.endswith("init_process_group") else "type", 0)
            word = v.split(":")[0].lower() if isinstance(v, str) else ""
            if word in ("xla", "hpu", "hccl"):
                return c, f"{q or '.to'}({v!r})", "hpu" if word in ("hpu", "hccl") else "xla"
    return None


def _autocast_device(f: _Facts, c: Call):
    """The device an autocast context casts on: fixed by ``torch.cuda.amp.autocast``/``torch.cpu.amp.autocast``,
    else ``device_type`` (first positional) of ``torch.autocast``/``torch.amp.autocast``, possibly UNKNOWN or a OneOf."""
    if c.qualname == "torch.cuda.amp.autocast":
        return "cuda"
    if c.qualname == "torch.cpu.amp.autocast":
        return "cpu"
    return f.val(c, "device_type", 0)


def _cpu_autocast(f: _Facts, c: Call) -> bool:
    """``torch.cpu.amp.autocast()`` or ``torch.autocast("cpu")`` / ``device_type="cpu"``."""
    return _autocast_device(f, c) == "cpu"


def _precision(f: _Facts) -> None:
    ix = f.ix
    for c in ix.calls_to(*AUTOCAST):
        if c.qualname == "torch.cpu.amp.autocast":
            continue
        if f.opaque_kwargs(c) or any(a.__class__ is ast.Starred for a in c.node.args):
            # ``torch.autocast(**ctx.autocast_kwargs)``: device, dtype and enabled are the caller's, unknown here
            f.add("precision", {"mechanism": "autocast", "dtype": None, "enabled": None}, c.node, c.qualname,
                  in_with=c.in_with, scope=c.scope)
            continue
        device = _autocast_device(f, c)
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
        value = {"mechanism": "autocast", "dtype": half if on is True else _norm(_dtype(dtype)),
                 "enabled": _norm(enabled) if not isinstance(enabled, OneOf) else None}
        if _local_fp32_region(c):
            value["local"] = True
        f.add("precision", value, c.node, c.qualname, in_with=c.in_with, scope=c.scope)
    for c in ix.calls_to(*TE_AUTOCAST):
        # NVIDIA TransformerEngine runs its layers in FP8 inside this context (``enabled`` defaults to True)
        enabled = _norm(f.val(c, "enabled", 0)) if f.present(c, "enabled") or c.positional(0) is not None else True
        f.add("precision", {"mechanism": "transformer_engine", "dtype": "fp8",
                            "enabled": None if isinstance(enabled, OneOf) else enabled},
              c.node, c.qualname, in_with=c.in_with, scope=c.scope)
    for c in ix.calls_to("functools.partial"):
        # ``self.autocast_ctx = partial(torch.cuda.amp.autocast, enabled=True, dtype=torch.float16)``, entered later
        # as ``with self.autocast_ctx():``: the autocast it binds is the workload's
        inner = _qualified(f, c.positional(0)) if c.positional(0) is not None else ""
        if inner not in AUTOCAST or inner == "torch.cpu.amp.autocast":
            continue
        device = "cuda" if inner == "torch.cuda.amp.autocast" else f.val(c, "device_type")
        if device is not UNKNOWN and device not in ("cuda", "xpu", "mps"):
            continue
        on, half = half_precision(f.val(c, "dtype") if f.present(c, "dtype") else "fp16")
        enabled = _norm(f.val(c, "enabled")) if f.present(c, "enabled") else True
        f.add("precision", {"mechanism": "autocast", "dtype": half if on is True else None,
                            "enabled": (enabled if enabled in (True, False) else None) if on is True else None},
              c.node, "functools.partial", in_with=False, scope=c.scope)
    for c in ix.method_calls("configure_apex_amp"):
        # a Determined trial's ``self.context.configure_apex_amp(models, optimizers, opt_level="O1")``: apex AMP
        level = f.val(c, "opt_level") if f.present(c, "opt_level") else "O1"
        on = None if level is UNKNOWN or isinstance(level, (dict, OneOf)) else (str(level).upper() != "O0")
        f.add("precision", {"mechanism": "apex", "dtype": "fp16" if on else None, "enabled": on}, c.node, "configure_apex_amp")
    for c in ix.calls_to("apex.amp.initialize"):
        level = f.val(c, "opt_level")
        on = None if level is UNKNOWN or isinstance(level, (dict, OneOf)) else (str(level).upper() != "O0")
        f.add("precision", {"mechanism": "apex", "dtype": "fp16" if on else None, "enabled": on}, c.node, c.qualname)
    for c in ix.calls_to("apex.amp.scale_loss"):
        f.add("grad_scaler", {"enabled": True}, c.node, c.qualname)  # apex scales the loss itself
        break
    for c in ix.calls_to(*GRAD_SCALER):
        f.add("grad_scaler", {"enabled": _norm(f.val(c, "enabled")) if f.present(c, "enabled") else True}, c.node, c.qualname)
    for c in ix.calls_to(*HF_ARGS):
        _hf_args(f, c)
    for c in ix.calls_to("transformers.HfArgumentParser", "trl.TrlParser"):
        # TrainingArguments parsed from the command line (or a JSON file the launcher passes); a TRL
        # config among the parsed classes defaults --bf16 to "not --fp16" (TRL >= 0.19)
        trl = any(q.startswith("trl.") and q.endswith("Config") for q in _parsed_classes(f, c)) or c.qualname == "trl.TrlParser"
        fact = {"mechanism": "hf_cli", "dtype": None,
                "enabled": {"bf16": {"cli_arg": "--bf16", "default": None if trl else False},
                            "fp16": {"cli_arg": "--fp16", "default": False}}}
        if trl:
            fact["undecided"] = TRL_BF16_DEFAULT
        f.add("precision", fact, c.node, c.qualname)
    for c in ix.calls_to(*MEGATRON_PRETRAIN):
        _megatron_precision(f, c)
        break
    for c in ix.calls_to(*ACCELERATOR):
        if f.present(c, "mixed_precision"):
            mp = f.val(c, "mixed_precision")
            f.add("precision", {"mechanism": "accelerate", "dtype": _norm(_dtype(mp)) if not isinstance(mp, dict) else mp,
                                "enabled": None if mp is UNKNOWN or isinstance(mp, dict) else (mp not in ("no", None))},
                  c.node, "mixed_precision")
        else:
            # Accelerator() without the argument takes the accelerate config / launch flag
            f.add("precision", {"mechanism": "accelerate", "dtype": None, "enabled": None, "from_launcher": True}, c.node, "mixed_precision")
    for c in ix.calls:
        q = c.qualname or ""
        built = q.endswith(_TRAINER_BUILDERS) and _framework_class(q, {}) in LIGHTNING_TRAINERS
        if q in LIGHTNING_TRAINERS or built:
            if f.present(c, "precision"):
                p = f.val(c, "precision")
                f.add("precision", _lightning_precision(p), c.node, "precision")
            elif built or f.opaque_kwargs(c):
                # ``Trainer.from_argparse_args(opt)`` reads --precision from the command line, ``Trainer(**cfg)`` from
                # a config: decided at run time
                f.add("precision", {"mechanism": "lightning", "dtype": None, "enabled": None}, c.node, "precision")
            else:
                # Fabric() takes --precision from ``fabric run`` (its launcher) through the environment: fp32 by default
                fabric = {"fabric": True} if q.endswith("Fabric") else {}
                f.add("precision", {"mechanism": "lightning", "dtype": "fp32", "enabled": False, "default": True, **fabric},
                      c.node, "precision")
    for c in ix.calls_to(*FSDP_MP):
        dt = f.val(c, "param_dtype")
        f.add("precision", {"mechanism": "fsdp", "dtype": _norm(_dtype(dt)), "enabled": True if dt not in (UNKNOWN, "fp32") else _norm(dt != "fp32" if dt is not UNKNOWN else UNKNOWN)},
              c.node, c.qualname)
    for c in ix.calls_to(*KERAS_POLICY):
        pol = f.val(c, "policy", 0)
        enabled = None if pol is UNKNOWN else ("mixed" in str(pol))
        dtype = None if pol is UNKNOWN else ("bf16" if "bfloat16" in str(pol) else "fp16" if "float16" in str(pol) else "fp32")
        f.add("precision", {"mechanism": "keras", "dtype": dtype, "enabled": enabled}, c.node, c.qualname)
    for c in ix.calls_to(*DS_INIT):
        cfg = c.kwarg("config") or c.kwarg("config_params")
        val = f.ev.value(cfg, c.scope) if cfg is not None else UNKNOWN
        if isinstance(val, dict):
            _deepspeed_dict(f, val, c.node)
        elif isinstance(val, str):
            f.add("config_ref", {"kind": "deepspeed", "path": val}, c.node, "config")
        else:
            f.add("precision", {"mechanism": "deepspeed", "dtype": None, "enabled": None, "from_config": True}, c.node, "deepspeed.initialize")
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
        elif c.attr == "from_pretrained" and (f.kwarg(c, "torch_dtype") is not None or f.kwarg(c, "dtype") is not None):
            v = f.ev.value(f.kwarg(c, "torch_dtype") or f.kwarg(c, "dtype"), c.scope)
            enabled, dtype = half_precision(v)
            if enabled is False:
                continue  # an fp32 load: nothing turns mixed precision on here
            # "auto" loads the checkpoint's own dtype, which the repository does not say: undecided
            f.add("precision", {"mechanism": "model_cast", "dtype": dtype, "enabled": enabled, "load_dtype": True},
                  c.node, "torch_dtype")
        elif c.attr == "from_pretrained" and _norm(f.val(c, "trust_remote_code")) is True and \
                not re.search(r"Tokenizer|Processor|Config|FeatureExtractor", c.qualname or c.receiver) and \
                _may_run_remote_code(f.val(c, "pretrained_model_name_or_path", 0)):
            # the model repository's own modelling code runs (Qwen switches itself to bf16, ChatGLM builds its layers
            # in the config's fp16): without a torch_dtype the dtype is that code's choice, not fp32 for sure
            f.add("precision", {"mechanism": "model_cast", "dtype": None, "enabled": None, "load_dtype": True},
                  c.node, "trust_remote_code")
    # a notebook cell that did not parse and mentions a dtype or a model load may have set the precision: the
    # notebook's fp32 is then not decided (the cell runs in Jupyter; gpulint read the notebook without it)
    for line, text in getattr(f.src, "unread_cells", ()):
        m = _PRECISION_WORDS.search(text)
        if m:
            f.out.append(Fact("precision", {"mechanism": "unread_cell", "dtype": None, "enabled": None,
                                            "undecided": f"a notebook cell gpulint could not parse mentions {m.group(0)!r}, "
                                                         f"which may set it"}, f.src.loc(line, 1, line, 1), "cell", "", {}))
            break
    # quantized loads compute in the dtype their config names (bitsandbytes' compute dtype, GPTQ/AWQ kernels)
    for c in ix.calls:
        q = c.qualname or ""
        if q in QUANT_CONFIGS:
            if c.assigned_to and not _read_again(f, c.assigned_to):
                continue  # ``bnb_config = BitsAndBytesConfig(...)`` that no load is given: the model loads unquantised
            compute = f.val(c, "bnb_4bit_compute_dtype") if q.endswith("BitsAndBytesConfig") else UNKNOWN
            enabled, dtype = half_precision(compute)
            f.add("precision", {"mechanism": "quantized", "dtype": dtype if enabled is True else None,
                                "enabled": True if enabled is True else None}, c.node, q)
        elif c.attr == "from_pretrained" and any(_norm(f.val(c, k)) is True for k in ("load_in_4bit", "load_in_8bit")):
            f.add("precision", {"mechanism": "quantized", "dtype": None, "enabled": None}, c.node, "load_in_kbit")
        elif c.attr == "from_pretrained" and _PREQUANTIZED.search(str(_model_id(f, c) or "")):
            # a checkpoint published quantized (``unsloth/llama-2-7b-bnb-4bit``, ``TheBloke/...-GPTQ``): its config's
            # quantization_config loads it quantized, computing in the 16-bit dtype that config names
            f.add("precision", {"mechanism": "quantized", "dtype": None, "enabled": None}, c.node, "prequantized")


#: model ids of checkpoints published quantized (bitsandbytes, GPTQ, AWQ, EXL2, AQLM, HQQ exports)
_PREQUANTIZED = re.compile(r"bnb-?[48]bit|[-_.](?:gptq|awq|exl2|aqlm|hqq)\b|[-_](?:int4|int8|4bit|8bit)\b", re.I)


def _model_id(f: _Facts, c: Call) -> Any:
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


def _device_map(f: _Facts, c: Call) -> str:
    """A from_pretrained load's ``device_map``: the literal ("auto", "cuda:0") or "?" when it is not one."""
    v = f.val(c, "device_map")
    return v if isinstance(v, str) else "?"


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


TRL_BF16_DEFAULT = "TRL >= 0.19 turns bf16 on when fp16 is not set; older releases train in fp32"


def _parsed_classes(f: _Facts, c: Call) -> list[str]:
    """Qualified names of the dataclasses an HfArgumentParser(...) call parses."""
    first = c.positional(0) or c.kwarg("dataclass_types")
    items = elements(first)
    items = items if items is not None else [first] if first is not None else []
    out = []
    for node in items:
        q = _qualified(f, node.value if isinstance(node, ast.Starred) else node)
        if q:
            out.append(q)
    return out


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


def _lightning_precision(p: Any) -> dict:
    if p is UNKNOWN:
        return {"mechanism": "lightning", "dtype": None, "enabled": None}
    s = str(p).lower()
    if s in ("32", "32-true", "64", "64-true", "transformer-engine-float32"):
        return {"mechanism": "lightning", "dtype": "fp32", "enabled": False}
    if "bf16" in s:
        return {"mechanism": "lightning", "dtype": "bf16", "enabled": True}
    if s.startswith("16") or "fp16" in s:
        return {"mechanism": "lightning", "dtype": "fp16", "enabled": True}
    if "transformer-engine" in s or "fp8" in s:
        return {"mechanism": "lightning", "dtype": "fp8", "enabled": True}
    return {"mechanism": "lightning", "dtype": None, "enabled": None}


def _hf_args(f: _Facts, c: Call) -> None:
    values: dict[str, Any] = {}
    for key in ("fp16", "bf16", "tf32", "gradient_checkpointing", "save_strategy", "save_steps", "deepspeed", "fsdp",
                "dataloader_num_workers", "dataloader_pin_memory", "resume_from_checkpoint", "output_dir", "optim",
                "per_device_train_batch_size", "half_precision_backend"):
        if f.present(c, key):
            values[key] = _norm(f.val(c, key))
    star = f.opaque_kwargs(c)
    fp16, bf16 = values.get("fp16", False if not star else None), values.get("bf16", False if not star else None)
    trl_default = (c.qualname or "").startswith("trl.") and "bf16" not in values and fp16 is not True
    if trl_default:
        bf16 = None  # TRL >= 0.19 turns bf16 on when fp16 is not set; older releases train in fp32
    dtype, enabled = None, None
    if fp16 is True or bf16 is True:
        dtype, enabled = ("bf16" if bf16 is True else "fp16"), True
    elif fp16 is False and bf16 is False:
        dtype, enabled = "fp32", False
    elif isinstance(fp16, dict) or isinstance(bf16, dict):
        enabled = {"bf16": bf16, "fp16": fp16}  # decided by the launcher's flags
    fact = {"mechanism": "hf_args", "dtype": dtype, "enabled": enabled}
    if enabled is False and "fp16" not in values and "bf16" not in values:
        fact["default"] = True  # neither is written: fp32 is the default, not a choice the code makes
    if trl_default and enabled is None:
        fact["undecided"] = TRL_BF16_DEFAULT
    f.add("precision", fact, c.node, c.qualname or "TrainingArguments")
    f.add("config.hf_args", values, c.node, c.qualname or "TrainingArguments")
    ds = values.get("deepspeed")
    if isinstance(ds, str):
        f.add("config_ref", {"kind": "deepspeed", "path": ds}, c.node, "deepspeed")
    elif isinstance(ds, dict):
        _deepspeed_dict(f, ds, c.node)
    if "tf32" in values:
        f.add("tf32", {"enabled": values["tf32"], "via": "TrainingArguments(tf32=...)"}, c.node, "tf32")
    if "dataloader_num_workers" in values or True:
        f.add("dataloader", {"num_workers": values.get("dataloader_num_workers", 0 if not star else None),
                             "pin_memory": values.get("dataloader_pin_memory", True if not star else None),
                             "num_workers_set": "dataloader_num_workers" in values, "pin_memory_set": True,
                             "via": "hf_trainer"}, c.node, "dataloader_num_workers")
    gc = values.get("gradient_checkpointing")
    if gc is not None:
        f.add("grad_checkpointing", {"enabled": gc, "via": "TrainingArguments"}, c.node, "gradient_checkpointing")
    ss = values.get("save_strategy")
    if ss is not None and not isinstance(ss, dict) and str(ss).lower() != "no":
        f.add("checkpoint.save", {"via": "hf_trainer", "dir": values.get("output_dir")}, c.node, "save_strategy")
    elif ss is None and not star:
        f.add("checkpoint.save", {"via": "hf_trainer", "dir": values.get("output_dir"), "default": True}, c.node, "save_strategy")


def _deepspeed_dict(f: _Facts, cfg: dict, node: ast.AST) -> None:
    fp16 = (cfg.get("fp16") or {}).get("enabled") if isinstance(cfg.get("fp16"), dict) else None
    bf16 = (cfg.get("bf16") or cfg.get("bfloat16") or {}) if isinstance(cfg.get("bf16") or cfg.get("bfloat16"), dict) else {}
    bf16 = bf16.get("enabled") if bf16 else None
    on = fp16 is True or bf16 is True or fp16 == "auto" or bf16 == "auto"
    f.add("precision", {"mechanism": "deepspeed", "dtype": "bf16" if bf16 is True else "fp16" if fp16 is True else None,
                        "enabled": True if on else (False if fp16 in (False, None) and bf16 in (False, None) else None)}, node, "deepspeed")


def _tf32(f: _Facts) -> None:
    ix = f.ix
    for qual, what in TF32_FLAGS.items():
        for a in ix.assignments_to(qual):
            v = f.ev.value(a.value, a.scope)
            f.add("tf32", {"enabled": _norm(v), "via": qual, "what": what}, a.node, qual)
    for qual in TF32_PRECISION:
        for a in ix.assignments_to(qual):
            v = f.ev.value(a.value, a.scope)
            f.add("tf32", {"enabled": None if v is UNKNOWN else v == "tf32", "via": qual, "what": "matmul"}, a.node, qual)
    for c in ix.calls_to("torch.set_float32_matmul_precision"):
        v = f.val(c, "precision", 0)
        f.add("tf32", {"enabled": None if v is UNKNOWN else v in ("high", "medium"), "via": c.qualname, "what": "matmul"}, c.node, c.qualname)


def _dataloaders(f: _Facts) -> None:
    for c in f.ix.calls_to(*DATALOADER):
        star = f.opaque_kwargs(c)
        nw_set, pin_set = f.present(c, "num_workers"), f.present(c, "pin_memory")
        nw = f.val(c, "num_workers") if nw_set else (None if star else 0)
        pin = f.val(c, "pin_memory") if pin_set else (None if star else False)
        f.add("dataloader", {"num_workers": _norm(nw), "pin_memory": _norm(pin), "num_workers_set": nw_set or star,
                             "pin_memory_set": pin_set or star, "via": "torch"}, c.node, c.qualname,
              purpose=_read_without_training(f, c) or _loader_purpose(c), guards=list(c.guards),
              in_memory=_in_memory_dataset(f, c),
              pretokenized=_pretokenized(f, c), **({"gpu_collate": True} if _collates_on_gpu(f, c) else {}),
              **_reached(f.ix, c))


def _reached(ix: PyIndex, c: Call) -> dict:
    """``reached_from`` of a call inside a function or class (see _owner): a script importing the module builds
    this loader only by calling one of them; nothing when module-level code reaches it."""
    owner = _owner(ix, c)
    return {"reached_from": owner["reached_from"]} if "reached_from" in owner else {}


def _read_without_training(f: _Facts, c: Call) -> str | None:
    """What the loader is read for where no read of its name feeds a training step: "inspect" when every read is
    ``next(iter(loader))`` or a loop that breaks after its first batch (a notebook printing one batch's shapes
    before a Trainer, which builds a loader of its own, trains); "no_grad" when every read is a loop that runs
    without autograd and steps nothing (``for batch in tqdm(cache_loader): with torch.no_grad(): ...``, caching
    latents or features once). None otherwise."""
    name = c.assigned_to
    tree = f.src.syntax
    if not name or "." in name or tree is None:
        return None
    if f.peeked is None:  # the reads of loader names that are only looks or gradient-free loops, once per file
        peeked = {id(n.args[0].args[0]): "inspect" for n in ast.walk(tree)
                  if n.__class__ is ast.Call and dotted(n.func) == "next" and n.args and n.args[0].__class__ is ast.Call
                  and dotted(n.args[0].func) == "iter" and n.args[0].args and n.args[0].args[0].__class__ is ast.Name}
        for loop, no_grad in _loops(tree):
            if any(x.__class__ is ast.Attribute and x.attr in ("backward", "step") for x in ast.walk(loop)):
                continue
            looped = _looped_name(loop.iter)
            if looped is None:
                continue
            if loop.iter.__class__ is ast.Name and loop.body and loop.body[-1].__class__ is ast.Break:
                peeked[id(looped)] = "inspect"  # ``for batch in loader: print(batch.shape); break``
            elif no_grad or (len(loop.body) == 1 and _no_grad_with(loop.body[0])):
                peeked[id(looped)] = "no_grad"
        f.peeked = peeked
    reads = f.reads(name)
    kinds = {f.peeked.get(id(n)) for n in reads}
    return kinds.pop() if reads and len(kinds) == 1 and None not in kinds else None


def _looped_name(node: ast.expr) -> ast.Name | None:
    """The name a loop iterates: ``loader``, or inside ``tqdm(loader, ...)`` / ``enumerate(tqdm(loader))``."""
    for _ in range(3):
        if node.__class__ is ast.Name:
            return node
        if node.__class__ is ast.Call and node.args and (dotted(node.func) or "").rsplit(".", 1)[-1] in ("tqdm", "enumerate", "iter"):
            node = node.args[0]
            continue
        return None
    return None


_NO_GRAD = ("no_grad", "inference_mode")


def _no_grad_with(stmt: ast.stmt) -> bool:
    """``with torch.no_grad():`` / ``with torch.inference_mode():``."""
    return stmt.__class__ is ast.With and any(
        i.context_expr.__class__ is ast.Call and (dotted(i.context_expr.func) or "").rsplit(".", 1)[-1] in _NO_GRAD
        for i in stmt.items)


def _loops(tree: ast.AST) -> list[tuple[ast.For, bool]]:
    """Every ``for`` loop of the tree, with whether it runs without autograd: inside a ``with torch.no_grad():`` or
    in a function decorated ``@torch.no_grad()`` / ``@torch.inference_mode()``."""
    out: list[tuple[ast.For, bool]] = []
    stack: list[tuple[ast.AST, bool]] = [(tree, False)]
    while stack:
        node, no_grad = stack.pop()
        if node.__class__ is ast.For:
            out.append((node, no_grad))
        if node.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef):
            no_grad = any((dotted(d.func if d.__class__ is ast.Call else d) or "").rsplit(".", 1)[-1] in _NO_GRAD
                          for d in node.decorator_list)
        elif node.__class__ is ast.With and _no_grad_with(node):
            no_grad = True
        stack.extend((child, no_grad) for child in ast.iter_child_nodes(node))
    return out


def _collates_on_gpu(f: _Facts, c: Call) -> bool:
    """The loader's collate function builds batches on the GPU: ``partial(collate, device=device)``, or a function of
    the file that moves what it returns (``.to(device)``, ``.cuda()``). Worker processes cannot touch CUDA and pinned
    memory cannot hold CUDA tensors: IO001/IO002's advice does not apply."""
    node = f.kwarg(c, "collate_fn")
    if node is None:
        return False
    if node.__class__ is ast.Call and (_qualified(f, node) or "").endswith("partial"):
        if any(k.arg == "device" for k in node.keywords):
            return True
        node = node.args[0] if node.args else None
    name = dotted(node) if node is not None else None
    fn = f.ix.top_functions.get(name or "")
    return fn is not None and _moves_to_device(fn)


def _moves_to_device(fn: ast.AST) -> bool:
    """``fn`` copies tensors to an accelerator: ``.cuda()``, or ``.to(...)`` with a device (``.to(device)``,
    ``.to("cuda")``, ``.to(device=...)``); ``.to(memory_format=...)`` and ``.to(torch.float16)`` or ``.to(dtype=...)``
    only change the layout or dtype, in host memory."""
    for n in ast.walk(fn):
        if n.__class__ is not ast.Call or n.func.__class__ is not ast.Attribute:
            continue
        if n.func.attr == "cuda":
            return True
        if n.func.attr != "to":
            continue
        if any(k.arg == "device" for k in n.keywords):
            return True
        first = n.args[0] if n.args else None
        if first is None:
            continue
        word = (dotted(first) or "").rsplit(".", 1)[-1].lower()
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if first.value.split(":")[0] in ("cuda", "xpu", "mps"):
                return True
        elif word and not (word in _DTYPE_WORDS or word.endswith("dtype") or word.endswith("_format")):
            return True  # .to(device), .to(self.device), .to(x.device), .to(rank)
    return False


#: names of dtypes, as ``torch.<name>`` or a variable of that name: ``.to(torch.bfloat16)`` moves nothing
_DTYPE_WORDS = frozenset({"float16", "bfloat16", "float32", "float64", "half", "float", "double", "int8", "uint8", "int32",
                          "int64", "long", "bool", "float8_e4m3fn", "float8_e5m2"})


#: names of loaders that never run a training step: evaluation, and generation (a loader of prompts
#: that a pipeline samples images or text from: ``sample_dataloader``, ``prompt_loader``)
_EVAL_WORDS = re.compile(r"(^|_)(val|valid|validation|eval|evaluate|evaluation|test|dev|predict|prediction|inference|infer|calib|calibration"
                         r"|sample|sampling|generate|generation|prompt|prompts|testing|accuracy|score|scoring)"
                         r"(_|$|\d|loader|set|dl|ds|data)")


IN_MEMORY_DATASETS = {"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset", "datasets.Dataset.from_dict",
                      "datasets.Dataset.from_list", "datasets.Dataset.from_pandas", "lightning.pytorch.demos.WikiText2",
                      "pytorch_lightning.demos.WikiText2", "lightning.pytorch.demos.transformer.WikiText2"}


def _dataset_expr(f: _Facts, c: Call, splits: bool = False) -> ast.expr | None:
    """The expression a DataLoader's dataset comes from, through names, ``self.`` attributes and the one
    ``return`` of a module-level helper (up to four steps; with `splits`, through ``tokenized["train"]``
    subscripts)."""
    node = f.kwarg(c, "dataset") or c.positional(0)
    scope = c.scope
    for _ in range(4):
        if splits and isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name):
            node = _dataset_expr_of_name(f, node, scope)
            continue
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in f.ix.top_functions:
            # ``DataLoader(gen_tensor_dataset(features))``: what the repository's helper returns
            fn = f.ix.top_functions[node.func.id]
            returns = [r.value for r in ast.walk(fn) if isinstance(r, ast.Return) and r.value is not None]
            if len(returns) == 1:
                node, scope = returns[0], fn.name
                continue
        if isinstance(node, ast.Attribute) and dotted(node).startswith("self."):
            # DataLoader(self.replay_buffer): what __init__ (or any method) binds to that attribute, if one thing
            bound = [a.value for a in f.ix.assigns if a.target == dotted(node) and isinstance(a.value, ast.expr)]
            node = bound[0] if len(bound) == 1 else None
            continue
        break
    return node.value if splits and isinstance(node, ast.Subscript) else node


def _dataset_expr_of_name(f: _Facts, name: ast.Name, scope: str) -> ast.expr | None:
    """The expression a dataset name is bound to at its use: the binding that reaches it, else the last
    one written before it."""
    assigns = [a for a in f.ix.assigns if a.target == name.id and a.scope in (scope, "")]
    a = f.ix.reaching(assigns, scope, name) if len(assigns) > 1 else (assigns[0] if assigns else None)
    if a is None:
        # ``ds = ds.rename_column(...)``: the ds on the right is the binding written before that statement
        before = [x for x in assigns if (x.node.end_lineno or x.node.lineno) < name.lineno]
        a = before[-1] if before else (assigns[-1] if assigns else None)
    return a.value if a is not None and isinstance(a.value, ast.expr) else None


def _in_memory_dataset(f: _Facts, c: Call) -> bool | str:
    """The dataset is tensors already in memory (TensorDataset, a datasets.Dataset built from a dict):
    indexing is free, workers add nothing. A Dataset class of the repository is named (its class name) for
    the rules to look up in the ``dataset_class`` facts of the workload's files."""
    node = _dataset_expr(f, c)
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp, ast.Set)):
        return True  # ``DataLoader([0 for _ in range(20)])``: a list in memory (a placeholder handed to accelerate.prepare)
    if not isinstance(node, ast.Call):
        return False
    q = _qualified(f, node)
    if q == "range" or (q == "list" and node.args and _in_memory_literal(node.args[0])):
        return True
    if q in IN_MEMORY_DATASETS:
        return True
    last = (dotted(node.func) or "").rsplit(".", 1)[-1]
    if _SYNTHETIC_DATASET.match(last):
        return True  # ``MockVLMDataset(size=...)``, ``RandomDataset``: samples made in memory, nothing to load
    return f"class:{last}" if last[:1].isupper() else False


#: dataset classes named for data they make up (mock, fake, synthetic, dummy, random samples)
_SYNTHETIC_DATASET = re.compile(r"^_?(?:Mock|Fake|Synthetic|Dummy|Random)[A-Za-z0-9]*(?:Dataset|Data)$")


def _in_memory_literal(node: ast.expr) -> bool:
    """``list(range(n))``, ``list([...])``: values in memory."""
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp, ast.Set)):
        return True
    return isinstance(node, ast.Call) and dotted(node.func) == "range"


def _getitem_classes(f: _Facts) -> list[tuple[ast.ClassDef, ast.FunctionDef, bool]]:
    """(class, its ``__getitem__``, whether that only indexes what the object holds: ``return self.x[i], self.y[i]``)
    for each class of the file that has a ``__getitem__``; worked out once per file (media and dataset facts
    both ask)."""
    if f.getitem_classes is None:
        out = []
        for node, _ in f.ix.classes.values():
            get = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__getitem__"), None)
            if get is not None:
                out.append((node, get, all(_indexing_call(n) for n in ast.walk(get) if isinstance(n, ast.Call))))
        f.getitem_classes = out
    return f.getitem_classes


def _dataset_classes(f: _Facts) -> None:
    """Dataset classes whose ``__getitem__`` only indexes what ``__init__`` holds (``return self.x[i],
    self.y[i]``): a TensorDataset in all but name."""
    for node, get, in_memory in _getitem_classes(f):
        # a dataset that hands out CUDA tensors: workers cannot touch CUDA and pinning refuses CUDA tensors
        on_gpu = {"on_gpu": True} if _moves_to_device(get) else {}
        f.add("dataset_class", {"name": node.name, "in_memory": in_memory, **on_gpu}, node, node.name)
    # an IterableDataset streams one sequence: without torch.utils.data.get_worker_info() (or a library's
    # split_by_worker) every worker process replays all of it, so num_workers > 0 duplicates the data
    text = f.src.source_text().text
    sharded = "worker_info" in text or "split_by_worker" in text
    for node, bases in f.ix.classes.values():
        if any(b.rsplit(".", 1)[-1] == "IterableDataset" for b in bases) and any(
                isinstance(s, ast.FunctionDef) and s.name == "__iter__" for s in node.body):
            f.add("dataset_class", {"name": node.name, "in_memory": False, "iterable": True, "unsharded": not sharded},
                  node, node.name)


#: calls a __getitem__ may make and still only index memory (conversions, no I/O, no transforms)
_INDEXING_CALLS = frozenset({"int", "float", "len", "dict", "tuple", "list", "torch.tensor", "torch.as_tensor", "torch.from_numpy",
                             "torch.LongTensor", "torch.FloatTensor", "long", "float", "clone", "detach", "numpy", "item", "to"})


def _indexing_call(node: ast.Call) -> bool:
    text = dotted(node.func) or ""
    return text in _INDEXING_CALLS or text.rsplit(".", 1)[-1] in ("long", "float", "clone", "detach", "item", "int")


#: what makes a dataset rows of token ids already: HF datasets' map/format results and files saved by them
_TOKENISED_DATASET_CALLS = ("map", "with_format", "set_format", "load_from_disk")


def _qualified(f: _Facts, node: ast.expr | None) -> str:
    text = dotted(node.func if isinstance(node, ast.Call) else node) or ""
    head, _, rest = text.partition(".")
    return (f.ix.imports.get(head, head) + ("." + rest if rest else "")) if head in f.ix.imports else text


def _pretokenized(f: _Facts, c: Call) -> bool:
    """Does the loader batch rows that are token ids already (a transformers data collator, or a dataset
    that comes out of ``datasets``' ``.map()``/``load_from_disk``)? Collating them is a few tensor copies:
    worker processes have nothing to take off the GPU's path."""
    collate = f.kwarg(c, "collate_fn")
    if collate is not None:
        q = _qualified(f, collate)
        if q.startswith("transformers.") and "collator" in q.lower():
            return True
        if isinstance(collate, ast.Name) and _tokenizes(f.ix, collate.id):
            return True  # a collate function that pads or tokenises text: a few tensor copies per batch
    node = _dataset_expr(f, c, splits=True)
    for _ in range(8):  # tokenized["train"].shuffle(seed=0).select(range(1000)): through the row-preserving methods
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute) or node.func.attr not in _ROW_METHODS:
            break
        node = node.func.value
        if isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Name):
            node = _dataset_expr_of_name(f, node, c.scope)
    if isinstance(node, ast.Call):
        if _qualified(f, node) in IN_MEMORY_DATASETS:
            return True  # Dataset.from_dict({...}).with_format("torch"): rows in memory
        name = node.func.attr if isinstance(node.func, ast.Attribute) else dotted(node.func) or ""
        return name.rsplit(".", 1)[-1] in _TOKENISED_DATASET_CALLS and (
            f.ix.imports_any("datasets") or _qualified(f, node).startswith("datasets."))
    return False


#: datasets.Dataset methods that keep rows as they are (selecting, reordering, renaming columns)
_ROW_METHODS = frozenset({"shuffle", "select", "filter", "rename_column", "rename_columns", "remove_columns", "select_columns",
                          "train_test_split", "sort", "flatten_indices", "take", "skip", "with_format", "cast_column"})


def _tokenizes(ix: PyIndex, function: str) -> bool:
    """Is a local function a text collate: it calls ``tokenizer.pad``/``tokenizer(...)``, decodes nothing and
    batches no images (a diffusion collate pads the captions' ids and stacks ``pixel_values`` that the dataset's
    transform decoded per sample)?"""
    calls = [c for c in ix.calls if c.scope == function]
    if not any(c.attr == "pad" or "tokenizer" in (c.func or "").lower() for c in calls) or \
            any((c.qualname or "") in MEDIA_DECODERS for c in calls):
        return False
    fn = ix.top_functions.get(function)
    media_keys = fn is not None and any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _MEDIA_KEY.search(n.value)
                                        for n in ast.walk(fn))
    return not media_keys


#: batch keys of images, audio or video: a collate that stacks them batches decoded media, not text
_MEDIA_KEY = re.compile(r"pixel|image|img|audio|video|frames", re.I)


#: per-sample decoding of media: the host work DataLoader workers exist for
MEDIA_DECODERS = ("PIL.Image.open", "cv2.imread", "cv2.imdecode", "torchvision.io.read_image", "torchvision.io.decode_image",
                  "torchvision.io.decode_jpeg", "torchvision.io.read_video", "torchaudio.load", "librosa.load", "soundfile.read",
                  "imageio.imread", "imageio.v3.imread", "skimage.io.imread", "decord.VideoReader", "av.open")
#: random augmentation transforms (torchvision v1/v2, albumentations): computed per sample on the host
_AUGMENT = re.compile(r"^(torchvision\.transforms(\.v2)?\.(Random\w+|ColorJitter|TrivialAugmentWide|RandAugment|AutoAugment|AugMix)"
                      r"|albumentations\.\w+)$")


#: methods that produce one sample (a Dataset's item, an iterable dataset's next, a transform's call)
SAMPLE_METHODS = frozenset({"__getitem__", "__getitems__", "__iter__", "__next__", "__call__"})
#: dataset calls that take a per-sample (or per-batch) function: ``ds.set_transform(preprocess)``
_SAMPLE_HOOKS = frozenset({"set_transform", "with_transform", "map", "decode", "compose"})


def _sample_path_functions(ix: PyIndex) -> set[str]:
    """Functions that run per sample: the sample methods, functions they call (one level), and functions
    handed to a dataset's transform hook or a loader's collate_fn."""
    out = set(SAMPLE_METHODS)
    for c in ix.calls:
        if c.scope in SAMPLE_METHODS and c.receiver in ("", "self"):
            out.add(c.attr)  # load(path), self._load(path)
        elif c.attr in _SAMPLE_HOOKS or c.qualname in DATALOADER:
            for node in list(c.node.args) + [k.value for k in c.node.keywords if k.arg in ("transform", "collate_fn", "function")]:
                if isinstance(node, ast.Name):
                    out.add(node.id)
    return out


def _media(f: _Facts) -> None:
    """Decoding or random augmentation on the host, where it runs per sample: inside a Dataset's
    ``__getitem__`` (or what it calls, or a transform hook), folder datasets that open each file, and
    random transforms (built to run on each sample). A ``PIL.Image.open`` that shows one image in a
    notebook cell decodes nothing per sample."""
    per_sample = None
    # a Dataset that augments once in __init__ and only indexes tensors in __getitem__ (DreamBooth's precomputed
    # crops): its random transforms never run per sample
    classes = [in_memory for _, _, in_memory in _getitem_classes(f)]
    augments_per_sample = not classes or not all(classes)
    # the strongest evidence first: a decode inside the sample path, then folder datasets, then random transforms
    for c in sorted(f.ix.calls, key=lambda c: _AUGMENT.match(c.qualname or "") is not None):
        q = c.qualname or ""
        augment = _AUGMENT.match(q) is not None and augments_per_sample
        if not (q in MEDIA_DECODERS or q in _FOLDER_DATASETS or augment):
            continue
        if not augment and q not in _FOLDER_DATASETS:
            per_sample = per_sample if per_sample is not None else _sample_path_functions(f.ix)
            if c.scope not in per_sample:
                continue
        f.add("decodes_media", {"via": q}, c.node, q)
        return


#: torchvision datasets that open and decode an image or video file per sample (ImageFolder and the datasets built
#: like it); the in-memory ones (MNIST, CIFAR, SVHN arrays) are not here
_FOLDER_DATASETS = frozenset({f"torchvision.datasets.{name}" for name in (
    "ImageFolder", "DatasetFolder", "ImageNet", "CocoDetection", "CocoCaptions", "VOCDetection", "VOCSegmentation",
    "Places365", "LSUN", "CelebA", "Flowers102", "Food101", "StanfordCars", "OxfordIIITPet", "INaturalist", "Caltech101",
    "Caltech256", "Cityscapes", "SBDataset", "WIDERFace", "Imagenette", "Kinetics", "UCF101", "HMDB51")})


def _loader_purpose(c: Call) -> str:
    """What a DataLoader feeds, by the name it is bound to, the function it is built in or the dataset it
    is given: "eval" for a validation/test/prediction/generation loader (it never runs a training step),
    else "train" (the default reading)."""
    dataset = c.kwarg("dataset") or c.positional(0)
    names = [c.assigned_to.rsplit(".", 1)[-1], c.scope, (dotted(dataset) or "").rsplit(".", 1)[-1] if dataset is not None else ""]
    return "eval" if any(n and _EVAL_WORDS.search(n.lower()) for n in names) else "train"


def _distributed(f: _Facts) -> None:
    ix = f.ix
    for c in ix.calls_to(*INIT_PG):
        if f.present(c, "backend") or c.positional(0) is not None:
            b = f.val(c, "backend", 0)
            # a backend chosen at run time (``"nccl" if cuda else "gloo"``) is unknown, as in any fact
            backend = None if b is UNKNOWN or isinstance(b, OneOf) else str(b).lower() if b is not None else None
            explicit = True
        else:
            backend, explicit = None, False  # torch picks NCCL for CUDA when none is given
        f.add("process_group", {"backend": backend, "explicit": explicit}, c.node, c.qualname, guards=list(c.guards),
              rpc=any(x.qualname in RPC_INIT for x in ix.calls))
    distributed = list(ix.calls_to(*DDP, *FSDP))
    for c in ix.calls_to(*DATAPARALLEL):
        f.add("dataparallel", {}, c.node, c.qualname, guards=list(c.guards), function=c.scope,
              ddp_fallback=_fallback_of(c, distributed))
    for c in ix.calls_to(*FUNCTIONAL_DATAPARALLEL):
        f.add("dataparallel", {"via": "functional"}, c.node, c.qualname, guards=list(c.guards), function=c.scope,
              ddp_fallback=_fallback_of(c, distributed))
    for c in ix.calls_to(*DDP):
        f.add("ddp", {"via": "DistributedDataParallel"}, c.node, c.qualname)
    for c in ix.calls_to(*RAY_TRAIN):
        # Ray Train starts one worker per GPU itself (ScalingConfig(num_workers, use_gpu)) and wraps the model in DDP:
        # the one `python` the launcher starts is its driver, not the only GPU process
        f.add("ddp", {"via": "ray.train"}, c.node, c.qualname)
        break
    for c in ix.calls_to(*FSDP):
        strategy = c.kwarg("sharding_strategy")
        stage = None
        if strategy is not None:
            text = dotted(strategy) or ""
            stage = {"FULL_SHARD": 3, "SHARD_GRAD_OP": 2, "NO_SHARD": 0, "HYBRID_SHARD": 3, "_HYBRID_SHARD_ZERO2": 2}.get(text.split(".")[-1])
        elif c.qualname and c.qualname.endswith("fully_shard"):
            stage = 3
        else:
            stage = 3  # FULL_SHARD is FSDP's default
        f.add("sharding", {"via": "fsdp", "stage": stage, "hybrid": "HYBRID" in (dotted(strategy) or "") if strategy is not None else False},
              c.node, c.qualname)
        f.add("ddp", {"via": "FSDP"}, c.node, c.qualname)


def _in_autograd_function(ix: PyIndex, c: Call) -> bool:
    """Does `c` sit in a class derived from ``torch.autograd.Function`` (a custom op's forward/backward)?"""
    return any(b in ("torch.autograd.Function", "torch.autograd.function.Function") for _, bases in _classes_around(ix, c) for b in bases)


def _fallback_of(c: Call, others: list[Call]) -> bool:
    """Is `c` on the other side of an ``if`` from one of `others`: ``if args.distributed: DDP(...) ... else:
    DataParallel(...)`` (the pytorch/examples ImageNet shape), where the script's own distributed path is a flag away."""
    sides = {id(test): side for test, side in c.conditions}
    return any(sides.get(id(test), side) != side for o in others for test, side in o.conditions)


def _checkpoints(f: _Facts) -> None:
    ix = f.ix
    for c in ix.calls_to("torch.save"):
        target = f.val(c, "f", 1)
        where = posixpath.dirname(target) or "." if isinstance(target, str) else None
        f.add("checkpoint.save", {"via": "torch.save", "dir": where}, c.node, "torch.save")
    for c in ix.calls_to("torch.distributed.checkpoint.save", "torch.distributed.checkpoint.save_state_dict"):
        f.add("checkpoint.save", {"via": "dcp", "dir": None}, c.node, c.qualname)
    for c in ix.calls_to("torch.distributed.checkpoint.load", "torch.distributed.checkpoint.load_state_dict"):
        f.add("checkpoint.resume", {"via": "dcp"}, c.node, c.qualname)
    for c in ix.calls:
        if c.attr == "save_state" and c.receiver:
            f.add("checkpoint.save", {"via": "save_state", "dir": _norm(f.val(c, "output_dir", 0))}, c.node, "save_state")
        elif c.attr == "save_checkpoint" and c.receiver:
            f.add("checkpoint.save", {"via": "save_checkpoint", "dir": _norm(f.val(c, "save_dir", 0))}, c.node, "save_checkpoint")
        elif c.attr == "load_state" and c.receiver:
            f.add("checkpoint.resume", {"via": "load_state"}, c.node, "load_state")
        elif c.attr == "load_checkpoint" and c.receiver:
            f.add("checkpoint.resume", {"via": "load_checkpoint"}, c.node, "load_checkpoint")
        elif c.attr == "load_state_dict" and c.receiver:
            if _from_file(f, c.positional(0) or c.kwarg("state_dict"), c.scope):
                f.add("checkpoint.resume", {"via": "load_state_dict"}, c.node, "load_state_dict")
        elif c.attr == "save_pretrained" and c.receiver:
            f.add("checkpoint.save", {"via": "save_pretrained", "dir": _norm(f.val(c, "save_directory", 0)), "weights_only": True}, c.node, "save_pretrained")
        elif c.attr == "save_model" and c.receiver:
            f.add("checkpoint.save", {"via": "save_model", "dir": _norm(f.val(c, "output_dir", 0)), "weights_only": True}, c.node, "save_model")
        elif c.attr == "train" and c.qualname and c.qualname.endswith("().train") and f.present(c, "resume_from_checkpoint"):
            v = f.val(c, "resume_from_checkpoint")
            if v not in (None, False):
                f.add("checkpoint.resume", {"via": "resume_from_checkpoint", "value": _norm(v)}, c.node, "resume_from_checkpoint")
        elif c.attr == "fit" and f.present(c, "ckpt_path"):
            v = f.val(c, "ckpt_path")
            if v is not None:
                f.add("checkpoint.resume", {"via": "ckpt_path", "value": _norm(v)}, c.node, "ckpt_path")
    for c in ix.calls:
        q = c.qualname or ""
        if q.endswith("ModelCheckpoint") and q.startswith(("lightning", "pytorch_lightning")):
            f.add("checkpoint.save", {"via": "lightning", "dir": _norm(f.val(c, "dirpath"))}, c.node, q)
        elif q in LIGHTNING_TRAINERS and q.endswith("Trainer"):
            ec = f.val(c, "enable_checkpointing") if f.present(c, "enable_checkpointing") else True
            if ec is True:
                f.add("checkpoint.save", {"via": "lightning", "dir": _norm(f.val(c, "default_root_dir")), "default": True}, c.node, q)


_LOADERS = {"torch.load", "safetensors.torch.load_file", "torch.distributed.checkpoint.load"}


def _from_file(f: _Facts, arg: ast.expr | None, scope: str, depth: int = 0) -> bool:
    """Is a state dict read from a file (torch.load(...), ckpt["model"] of a
    loaded dict)? Copying between live modules (ema.load_state_dict(model.state_dict()))
    is not a resume."""
    if arg is None or depth > 4:
        return False
    if isinstance(arg, ast.Subscript):
        return _from_file(f, arg.value, scope, depth + 1)
    if isinstance(arg, ast.Call):
        q = f.ix.imports.get((dotted(arg.func) or "").split(".")[0], "")
        full = (q + "." + (dotted(arg.func) or "").split(".", 1)[1]) if q and "." in (dotted(arg.func) or "") else f.ix.imports.get(dotted(arg.func) or "", "")
        return full in _LOADERS or (dotted(arg.func) or "").endswith(("load_file", "torch.load"))
    if isinstance(arg, ast.Name):
        for a in f.ix.assigns:
            if a.target == arg.id and (a.scope == scope or a.scope == ""):
                if _from_file(f, a.value if isinstance(a.value, ast.expr) else None, scope, depth + 1):
                    return True
    return False


def _models(f: _Facts) -> None:
    for c in f.ix.calls:
        if c.attr == "from_pretrained":
            name = f.val(c, "pretrained_model_name_or_path", 0)
            flag, open_default = None, False
            if isinstance(name, dict) and "cli_arg" in name and isinstance(name.get("default"), str):
                # from_pretrained(args.model_name) with a default: that model unless a launcher passes another
                name, flag = name["default"], name["cli_arg"]
            elif isinstance(name, dict) and "cli_arg" in name and (name.get("default_unknown") or name.get("default") is None):
                # a required flag (default None, or an expression): the model only a launcher names
                name, flag, open_default = "", name["cli_arg"], True
            if isinstance(name, str):
                kind = "model.name"
                q = c.qualname or ""
                if "Tokenizer" in q or "Processor" in q or "Config" in q.split(".")[-2:-1][0:1] or "tokenizer" in c.receiver.lower():
                    continue
                f.add(kind, name, c.node, "from_pretrained",
                      load_in_4bit=_norm(f.val(c, "load_in_4bit")) is True, load_in_8bit=_norm(f.val(c, "load_in_8bit")) is True,
                      quantization_config=f.present(c, "quantization_config"), **({"cli_arg": flag} if flag else {}),
                      **({"default_unknown": True} if open_default else {}),
                      **({"device_map": _device_map(f, c)} if f.present(c, "device_map") else {}))
        elif c.attr == "from_name" and c.receiver[:1].isupper() and "Tokenizer" not in c.receiver:
            # ``LLaMAConfig.from_name("7B")``, ``Config.from_name("pythia-160m")``: a model named by its size or id
            name = f.val(c, "name", 0)
            if isinstance(name, str):
                f.add("model.name", name, c.node, "from_name")
        elif (c.qualname or "").startswith("torchvision.models.") and c.qualname.count(".") == 2 and c.attr[:1].islower():
            f.add("model.name", f"torchvision/{c.attr}", c.node, c.qualname)  # resnet50(), vit_b_16() ...
        elif c.qualname == "timm.create_model":
            name = f.val(c, "model_name", 0)
            if isinstance(name, str):
                f.add("model.name", name if "/" in name else f"timm/{name}", c.node, c.qualname)
        elif c.attr in ("gradient_checkpointing_enable",) and c.receiver:
            f.add("grad_checkpointing", {"enabled": True, "via": "gradient_checkpointing_enable"}, c.node, "gradient_checkpointing_enable")
    for c in f.ix.calls_to("torch.utils.checkpoint.checkpoint", "torch.utils.checkpoint.checkpoint_sequential",
                           "torch.distributed.algorithms._checkpoint.checkpoint_wrapper.apply_activation_checkpointing"):
        f.add("grad_checkpointing", {"enabled": True, "via": c.qualname}, c.node, c.qualname)
    for c in f.ix.calls:
        q = c.qualname or ""
        if q.startswith("transformers.") and q.endswith("Config") and "()" not in q and not q.endswith(("BitsAndBytesConfig", "GenerationConfig")):
            dims = {}
            for name, node in c.keywords():
                v = f.ev.value(node, c.scope)
                if isinstance(v, (int, float, str, bool)):
                    dims[name] = v
            if any(k in dims for k in ("hidden_size", "n_embd", "d_model")):
                dims.setdefault("model_type", q.split(".")[-1][: -len("Config")].lower())
                f.add("model.config", dims, c.node, q)
    for node, name, params, lookups in count_models(f.ix, lambda n: _qualified(f, n), f.ev.value):
        f.add("model.layers", {"name": name, "params": params, **({"embedding_params": lookups} if lookups else {})}, node, name)
    for c in f.ix.calls_to("peft.get_peft_model", "peft.LoraConfig", "peft.prepare_model_for_kbit_training"):
        f.add("peft", {"method": "lora", "via": c.qualname}, c.node, c.qualname)
    for c in f.ix.calls_to("transformers.BitsAndBytesConfig"):
        if c.assigned_to and not _read_again(f, c.assigned_to):
            continue  # a config no load is given
        bits = 4 if f.val(c, "load_in_4bit") is True else 8 if f.val(c, "load_in_8bit") is True else None
        f.add("quantized_load", {"bits": bits}, c.node, c.qualname)
    for c in f.ix.calls:
        q = c.qualname or ""
        if "()" in q:
            continue  # a method of an optimizer object, not its construction
        if q.startswith("torch.optim.") or q.startswith("bitsandbytes.optim.") or q in ("transformers.AdamW", "transformers.Adafactor"):
            name = q.split(".")[-1].lower()
            if name in ("lr_scheduler", "zero_redundancy_optimizer") or "scheduler" in q or "lr_scheduler" in q:
                continue
            if q.startswith("bitsandbytes."):
                name = "adam8bit" if "8bit" in name else name
            f.add("optimizer", {"name": name, "qualname": q}, c.node, q)


def _unique_target(f: _Facts, target: str) -> str:
    """Two jobs of one file assigned to the same name are two compute targets."""
    used = {x.target for x in f.out if x.kind == "compute.target"}
    out, n = target, 2
    while out in used:
        out, n = f"{target}#{n}", n + 1
    return out


def _cpu_choice(value: Any) -> Any:
    """``"local" if local_mode else "ml.c5.xlarge"``: a run-time choice among CPU instances is CPU
    compute whichever runs (the first non-local choice stands for it); any other choice stays unknown."""
    if not isinstance(value, OneOf) or not all(isinstance(ch, str) for ch in value.choices):
        return value
    from gpulint.core.families import CPU, device_of

    choices = sorted(value.choices, key=lambda ch: (ch == "local", ch))
    return choices[0] if all(device_of(ch)[0] == CPU for ch in choices) else value


#: the SageMaker Python SDK v1 names of estimator arguments (renamed in v2, still in many archived examples)
_SM_V1_NAMES = {"instance_type": "train_instance_type", "instance_count": "train_instance_count",
                "use_spot_instances": "train_use_spot_instances", "max_wait": "train_max_wait", "max_run": "train_max_run"}


def _sagemaker(f: _Facts) -> None:
    for c in f.ix.calls_to(*SAGEMAKER_ESTIMATORS):
        target = _unique_target(f, f"{c.qualname.split('.')[-1]}@{c.assigned_to or 'estimator'}")
        values = {}
        written: dict[str, str] = {}  # the keyword each value was given as (SDK v1's train_* names)
        for key in ("instance_type", "instance_count", "use_spot_instances", "max_wait", "max_run", "checkpoint_s3_uri",
                    "checkpoint_local_path", "entry_point", "source_dir", "distribution", "environment", "hyperparameters"):
            for name in (key, _SM_V1_NAMES.get(key)):
                if name and f.present(c, name):
                    values[key] = f.val(c, name)
                    written[key] = name
                    break
        loc = f.src.node_loc(c.node)

        def add(kind: str, value: Any, key: str, **attrs: Any) -> None:
            node = f.kwarg(c, written.get(key, key))
            f.out.append(Fact(kind, value, f.src.node_loc(node) if node is not None else loc, key, target, attrs))

        f.out.append(Fact("compute.target", {"source": "sagemaker", "provider": "aws", "resource": target, "role": "training"}, loc, c.qualname, target, {}))
        it = _cpu_choice(values.get("instance_type", UNKNOWN))
        add("compute.instance_type", _norm(it) if isinstance(it, str) else None, "instance_type")
        opaque = f.opaque_kwargs(c)
        n = values.get("instance_count", 1 if not opaque else UNKNOWN)
        add("compute.node_count", _norm(n) if isinstance(n, int) or n is UNKNOWN else None, "instance_count")
        spot = values.get("use_spot_instances", False if not opaque else UNKNOWN)
        add("compute.capacity", None if spot is UNKNOWN or isinstance(spot, dict) else ("spot" if spot else "on-demand"), "use_spot_instances")
        ckpt = {"s3_uri": _norm(values.get("checkpoint_s3_uri", None)), "local_path": _norm(values.get("checkpoint_local_path", None)),
                "max_wait": _norm(values.get("max_wait", None)), "max_run": _norm(values.get("max_run", None)),
                "s3_uri_set": "checkpoint_s3_uri" in values, "max_wait_set": "max_wait" in values, "star_kwargs": opaque}
        add("compute.checkpoint", ckpt, "checkpoint_s3_uri" if "checkpoint_s3_uri" in values else "use_spot_instances")
        ep = values.get("entry_point", UNKNOWN)
        sd = values.get("source_dir", UNKNOWN)
        script = ep if isinstance(ep, str) else None
        if script and isinstance(sd, str) and not sd.startswith(("s3://", "git")):
            script = sd.rstrip("/") + "/" + script
        hp = values.get("hyperparameters")
        args: list[str] = []
        if isinstance(hp, dict):
            for k, v in hp.items():
                args += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
        # SageMaker model parallelism turns 16 bit on for the job, whatever the script's own flags say
        mp = _sagemaker_mp_precision(values.get("distribution"))
        if mp is None and "distribution" in values and _names_precision(f, f.kwarg(c, "distribution"), c.scope):
            mp = "undecided"  # "bf16": hyperparameters["bf16"] > 0: set, but by a value read at run time
        attrs: dict[str, Any] = {}
        if ("hyperparameters" in values and not isinstance(hp, dict)) or opaque:
            attrs["args_unknown"] = True  # the script's flags are not its defaults: they are unknown
        if mp == "undecided":
            attrs["precision_undecided"] = "distribution"
        if _sagemaker_process_per_gpu(values.get("distribution")):
            attrs["process_per_gpu"] = True
        add("launch", {"tool": "sagemaker", "script": script, "args": args, "nnodes": _norm(n) if isinstance(n, int) else None,
                       "nproc_per_node": None, "mixed_precision": mp if mp != "undecided" else None, "config_file": None,
                       "deepspeed_config": None}, "entry_point", **attrs)
        env = values.get("environment")
        if isinstance(env, dict):
            for k, v in env.items():
                add("env", {"name": str(k), "value": str(v)}, "environment")


def _names_precision(f: _Facts, node: ast.expr | None, scope: str, depth: int = 0) -> bool:
    """Does a distribution expression (or the dict a name is bound to) hold a "bf16"/"fp16" key?"""
    if node is None or depth > 2:
        return False
    if isinstance(node, ast.Name):
        assigns = [a for a in f.ix.assigns if a.target == node.id and a.scope in (scope, "")]
        return any(isinstance(a.value, ast.expr) and _names_precision(f, a.value, a.scope, depth + 1) for a in assigns)
    return any(isinstance(n, ast.Constant) and n.value in ("bf16", "fp16") for n in ast.walk(node))


#: SageMaker distribution options that start one training process per GPU of every instance (data-parallel
#: libraries and torchrun): the SageMaker Python SDK's "Distributed training" options
_SM_PER_GPU = ("smdistributed.dataparallel", "pytorchddp", "torch_distributed")


def _sagemaker_process_per_gpu(dist: Any) -> bool:
    """Does a ``distribution`` dict start one process per GPU (``{"smdistributed": {"dataparallel":
    {"enabled": True}}}``, ``{"pytorchddp": {"enabled": True}}``, ``{"torch_distributed": {"enabled": True}}``)?"""
    if not isinstance(dist, dict):
        return False
    for path in _SM_PER_GPU:
        node: Any = dist
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict) and node.get("enabled") is True:
            return True
    return False


def _sagemaker_mp_precision(dist: Any) -> str | None:
    """bf16/fp16 of SageMaker model parallelism (``distribution={"smdistributed": {"modelparallel":
    {"parameters": {"bf16": True}}}}``, also the v2 ``torch_distributed`` form), or None."""
    if not isinstance(dist, dict):
        return None
    for path in (("smdistributed", "modelparallel", "parameters"), ("torch_distributed", "parameters")):
        node: Any = dist
        for key in path:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            on = lambda v: v is True or v == 1 or str(v).lower() in ("1", "true")  # noqa: E731 - SMP reads ints too
            if on(node.get("bf16")):
                return "bf16"
            if on(node.get("fp16")):
                return "fp16"
            if node.get("bf16") in (False, 0) and node.get("fp16") in (False, 0, None) and "bf16" in node:
                return "fp32"
            if "bf16" in node or "fp16" in node:
                return "undecided"  # a value computed at run time
    return None


#: Lightning strategies that spread one run over several devices
_LIGHTNING_MULTI = ("ddp", "fsdp", "deepspeed")


def _lightning_several(f: _Facts, c: Call, gpus: Any) -> bool:
    """Does a Lightning Trainer ask for two or more devices (``devices=4``, ``gpus=8``, ``devices=-1`` for
    all of them, ``num_nodes=2``, a ddp/fsdp/deepspeed strategy)?"""
    devices = f.val(c, "devices") if f.present(c, "devices") else UNKNOWN
    nodes = f.val(c, "num_nodes") if f.present(c, "num_nodes") else UNKNOWN
    strategy = f.val(c, "strategy") if f.present(c, "strategy") else UNKNOWN
    count = lambda v: type(v) is int and (v > 1 or v == -1)  # noqa: E731 - -1 is every device of the machine
    if any(count(v) for v in (devices, gpus, nodes)):
        return True
    return isinstance(strategy, str) and strategy.lower().startswith(_LIGHTNING_MULTI)


# SageMaker Python SDK ModelTrainer (sagemaker.modules in SDK 2.23x, sagemaker.train in SDK 3)
_SM_PACKAGES = ("sagemaker.modules", "sagemaker.train", "sagemaker.core.training")
MODEL_TRAINERS = {f"{p}.{m}" for p in ("sagemaker.modules.train", "sagemaker.modules.train.model_trainer",
                                        "sagemaker.train", "sagemaker.train.model_trainer")
                  for m in ("ModelTrainer", "ModelTrainer.from_recipe")}
_ML_DEFAULT_INSTANCE = "ml.m5.xlarge"  # ModelTrainer's compute when none is given (SDK docstring)


def _config_call(f: _Facts, call: Call, kw: str, *names: str) -> Call | None:
    """The ``Compute(...)``-like call passed as ``kw``, written inline or assigned to a
    name first; ``names`` are class names of the SageMaker config modules."""
    node = call.kwarg(kw)
    if isinstance(node, ast.Name):
        # the assignment that runs last before the call (notebooks reassign `compute = ...` cell by cell)
        line = call.node.lineno
        assigns = [a for a in f.ix.assigns if a.target == node.id and a.scope in (call.scope, "")]
        local = [a for a in assigns if a.scope == call.scope] or assigns
        before = [a for a in local if a.node.lineno <= line]
        node = before[-1].value if before else None
    if not isinstance(node, ast.Call):
        return None
    by_node = next((c for c in f.ix.calls if c.node is node), None)
    q = by_node.qualname if by_node is not None else None
    if q and q.startswith("sagemaker.") and q.rsplit(".", 1)[-1] in names:
        return by_node
    return None


def _sagemaker_model_trainer(f: _Facts) -> None:
    """ModelTrainer(compute=Compute(...), source_code=SourceCode(...), ...): the same
    compute facts as an estimator, and a launch of the entry script or command."""
    for c in f.ix.calls_to(*MODEL_TRAINERS):
        target = _unique_target(f, f"ModelTrainer@{c.assigned_to or 'trainer'}")
        loc = f.src.node_loc(c.node)
        star = c.has_star_kwargs

        def add(kind: str, value: Any, node: ast.AST | None, key: str, **attrs: Any) -> None:
            f.out.append(Fact(kind, value, f.src.node_loc(node) if node is not None else loc, key, target, attrs))

        f.out.append(Fact("compute.target", {"source": "sagemaker", "provider": "aws", "resource": target,
                                             "role": "training"}, loc, c.qualname, target, {"sdk": "ModelTrainer"}))
        compute = _config_call(f, c, "compute", "Compute")
        mode = c.kwarg("training_mode")
        local = mode is not None and (dotted(mode) or "").endswith("LOCAL_CONTAINER")
        if local:
            add("compute.instance_type", "local", mode, "training_mode")
        elif compute is not None:
            it = f.val(compute, "instance_type")
            node = compute.kwarg("instance_type")
            if node is None and not compute.has_star_kwargs and compute.kwarg("instance_groups") is None:
                add("compute.instance_type", _ML_DEFAULT_INSTANCE, compute.node, "compute.instance_type", default=True)
            else:
                add("compute.instance_type", _norm(it) if isinstance(it, str) else None, node or compute.node,
                    "compute.instance_type")
        elif c.kwarg("compute") is None and not star:
            add("compute.instance_type", _ML_DEFAULT_INSTANCE, None, "compute", default=True)
        else:
            add("compute.instance_type", None, c.kwarg("compute"), "compute")
        n: Any = UNKNOWN
        if compute is not None:
            n = f.val(compute, "instance_count") if compute.kwarg("instance_count") is not None else (
                1 if not compute.has_star_kwargs else UNKNOWN)
            add("compute.node_count", n if isinstance(n, int) and not isinstance(n, bool) else None,
                compute.kwarg("instance_count") or compute.node, "compute.instance_count")
        elif c.kwarg("compute") is None and not star:
            n = 1
            add("compute.node_count", 1, None, "compute", default=True)
        spot: Any = UNKNOWN
        if compute is not None:
            spot = f.val(compute, "enable_managed_spot_training") if compute.kwarg(
                "enable_managed_spot_training") is not None else (False if not compute.has_star_kwargs else UNKNOWN)
        elif c.kwarg("compute") is None and not star:
            spot = False
        cap_node = compute.kwarg("enable_managed_spot_training") if compute is not None else None
        add("compute.capacity", None if not isinstance(spot, bool) else ("spot" if spot else "on-demand"),
            cap_node or (compute.node if compute is not None else None), "compute.enable_managed_spot_training")
        ckpt = _config_call(f, c, "checkpoint_config", "CheckpointConfig")
        stop = _config_call(f, c, "stopping_condition", "StoppingCondition")
        has_ckpt = c.kwarg("checkpoint_config") is not None
        value = {
            "s3_uri": _norm(f.val(ckpt, "s3_uri")) if ckpt is not None else None,
            # CheckpointConfig's documented default folder
            "local_path": (_norm(f.val(ckpt, "local_path")) if ckpt.kwarg("local_path") is not None
                           else "/opt/ml/checkpoints") if ckpt is not None else None,
            "max_wait": _norm(f.val(stop, "max_wait_time_in_seconds")) if stop is not None else None,
            "max_run": _norm(f.val(stop, "max_runtime_in_seconds")) if stop is not None else None,
            # a CheckpointConfig without s3_uri gets a default bucket URI from the SDK
            "s3_uri_set": has_ckpt,
            "max_wait_set": stop is not None and stop.kwarg("max_wait_time_in_seconds") is not None,
            "star_kwargs": star or (c.kwarg("stopping_condition") is not None and stop is None),
        }
        add("compute.checkpoint", value, c.kwarg("checkpoint_config") or cap_node or c.node, "checkpoint_config")
        _model_trainer_launch(f, c, target, add, n)
        env = f.val(c, "environment")
        if isinstance(env, dict):
            for k, v in env.items():
                add("env", {"name": str(k), "value": str(v)}, c.kwarg("environment"), "environment")


def _model_trainer_launch(f: _Facts, c: Call, target: str, add, nodes: Any) -> None:
    src = _config_call(f, c, "source_code", "SourceCode")
    dist = _config_call(f, c, "distributed", "Torchrun", "MPI")
    per_node = _norm(f.val(dist, "process_count_per_node")) if dist is not None else None
    hp = f.val(c, "hyperparameters")
    args: list[str] = []
    if isinstance(hp, dict):
        for k, v in hp.items():
            args += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
    sd = f.val(src, "source_dir") if src is not None else UNKNOWN
    base = sd.rstrip("/") if isinstance(sd, str) and not sd.startswith(("s3://", "git")) else None
    command = f.val(src, "command") if src is not None else UNKNOWN
    if isinstance(command, str):
        from gpulint.read.kubernetes import launches_from_script

        for step in launches_from_script(command):
            if step.launch is None:
                continue
            launch = dict(step.launch)
            if base and isinstance(launch.get("script"), str) and not launch["script"].startswith("/"):
                launch["script"] = posixpath.normpath(posixpath.join(base, launch["script"]))
            if launch.get("nnodes") is None and isinstance(nodes, int):
                launch["nnodes"] = nodes
            add("launch", launch, src.kwarg("command"), "source_code.command", via="SourceCode.command", **step.attrs)
        return
    ep = f.val(src, "entry_script") if src is not None else UNKNOWN
    script = ep if isinstance(ep, str) else None
    if script and base is not None and not script.startswith("/"):
        script = posixpath.normpath(posixpath.join(base, script))
    elif script and isinstance(sd, str) and sd.startswith(("s3://", "git")):
        script = None  # code that is not in this repository
    value = {"tool": "sagemaker", "script": script, "module": None, "args": args,
             "nnodes": nodes if isinstance(nodes, int) and not isinstance(nodes, bool) else None,
             "nproc_per_node": per_node if isinstance(per_node, int) else None, "mixed_precision": None,
             "config_file": None, "deepspeed_config": None, "wrapper": None}
    if dist is not None:
        value["distributed"] = (dist.qualname or "").rsplit(".", 1)[-1].lower()
    node = (src.kwarg("entry_script") if src is not None else None) or c.kwarg("source_code") or c.node
    add("launch", value, node, "source_code.entry_script")


def _local_imports(f: _Facts) -> None:
    # module names only; the workload linker decides which are files of this repository
    for module in sorted(f.ix.imported_modules):
        f.out.append(Fact("import", module, f.src.loc(1), module, "", {}))
    for level, module in f.ix.relative_imports:
        f.out.append(Fact("import", "." * level + module, f.src.loc(1), module, "", {"relative": level}))
