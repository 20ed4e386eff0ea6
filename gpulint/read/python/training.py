"""Does the file train, and where: the ``trainer_class``, ``trains`` and ``trainer_call`` facts, the
``inference`` facts, and the file-level ``script`` fact.

Training is recognised by its step (``loss.backward()`` beside ``optimizer.step()``), by a framework's
trainer (HF Trainer, Lightning, accelerate/Fabric, Keras ``fit``, Determined, TensorFlow's GradientTape,
Megatron, DeepSpeed) or by a class of the file built on one. Each ``trains`` fact says which function and
class it sits in (``owner``), so the linker can tell a script from library code. This is the first pass:
the ``benchmark`` facts of benchmark.py are read from here, once a training step is known, and the later
passes (devices, precision, ...) are judged against what it found.

The framework branches of the trainer-call chain (HF, Lightning, Keras, accelerate) stay in one ``elif``
chain over the calls, because the facts come out in call order; a per-framework reader would reorder them.
Keras's branch asks frameworks/keras.py (``fits``), which also reads the custom GradientTape loop.
"""
from __future__ import annotations

import ast

from gpulint.core.model import Fact
from gpulint.read.python.benchmark import benchmarked_step, demo
from gpulint.read.python.common import Facts, classes_around, owner
from gpulint.read.python.frameworks import hydra, jax, keras, lightning, ray
from gpulint.read.python.index import Call, PyIndex, literal
from gpulint.read.python.names import (ACCELERATOR, DS_INIT, HF_TRAINERS, LIGHTNING_CLI, LIGHTNING_TRAINERS, MEGATRON_PRETRAIN, NOT_LOCAL,
                                       framework_class, trainer_classes)

FABRICS = frozenset({"lightning.fabric.Fabric", "lightning.Fabric", "lightning_fabric.Fabric"})

INFERENCE_CTX = {"torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.grad_mode.no_grad"}

PIPELINE = {"transformers.pipeline"}


_OTHER_FRAMEWORKS = ("mxnet", "paddle", "chainer", "mindspore", "oneflow", "megengine", "cupy")


def training_steps(f: Facts) -> None:
    """The classes of the file that are framework trainers, then every way the file trains, then (for a file
    that trains or runs as a script) whether it is a demo."""
    local_trainers = trainer_classes(f.ix)
    for name, base in local_trainers.items():
        node = f.ix.classes[name][0]
        f.add("trainer_class", {"name": name, "base": base}, node, name)
    _training_loop(f)
    _trainer_calls(f, local_trainers)
    _platform_loops(f)
    keras_step = keras.training_call(f)
    if keras_step is not None and not any(x.kind == "benchmark" for x in f.out):
        benchmarked_step(f, keras_step)  # a Keras/TensorFlow step named or written as a benchmark, as a PyTorch one
    trains = next((x for x in f.out if x.kind == "trains"), None)
    # the budget or docstring of a demo lives in the script that runs, also where its training step is a library's
    # (``for _ in range(NUM_STEPS): engine.train_step()``, the backward inside the installed package)
    if (trains is not None or _runs_as_script(f.ix)) and not any(x.kind == "benchmark" for x in f.out):
        demo(f)


def _training_loop(f: Facts) -> None:
    """A hand-written PyTorch loop: ``loss.backward()`` and ``optimizer.step()`` (and whether it is a benchmark)."""
    ix = f.ix
    # a custom autograd Function's own ``backward`` calls its kernel's backward (``wkv.backward(w, k, v, gy, ...)``):
    # gradient arithmetic, not the training step (a trainer's ``def backward(self, loss)`` helper still is one)
    backward = [c for c in ix.method_calls("backward") if not (c.scope == "backward" and _in_autograd_function(ix, c))]
    steps = [c for c in ix.method_calls("step") if "sched" not in c.receiver.lower()]
    # loss.backward() + trainer.step() is also MXNet Gluon's, Paddle's, Chainer's loop: frameworks whose mixed
    # precision, loaders and launchers gpulint does not read; their loops are not judged as PyTorch's
    other = ix.imports_any(*_OTHER_FRAMEWORKS) and not ix.imports_any("torch", "lightning", "pytorch_lightning", "accelerate",
                                                                       "deepspeed", "transformers")
    if backward and steps and not other:
        f.add("trains", {"via": "loop"}, backward[0].node, "backward", **owner(ix, backward[0]))
        benchmarked_step(f, backward[0])


def _trainer_calls(f: Facts, local_trainers: dict[str, str]) -> None:
    """A framework trainer run: ``Trainer(...).train()``, ``pl.Trainer(...).fit()``, ``accelerator.backward``,
    Keras ``model.fit``; or a trainer class imported from a repository module, for the linker to decide."""
    ix = f.ix
    cli = lightning.cli_runs(f)
    hydra_fits = {id(fit) for _, fit in hydra.instantiated_trainers(f)}
    for c in ix.calls:
        q = c.qualname or ""
        if id(c) in hydra_fits:  # ``hydra.utils.instantiate(cfg.trainer).fit(...)``: a Lightning Trainer the config builds
            f.add("trains", {"via": "lightning"}, c.node, q, **owner(ix, c))
        elif q.endswith("().train") and framework_class(q[: -len("().train")], local_trainers) in HF_TRAINERS:
            f.add("trains", {"via": "hf_trainer"}, c.node, q, **owner(ix, c))
        elif q.endswith("().fit") and framework_class(q[: -len("().fit")], local_trainers) in LIGHTNING_TRAINERS:
            f.add("trains", {"via": "lightning"}, c.node, q, **owner(ix, c))
        elif keras.fits(f, c):
            f.add("trains", {"via": "keras"}, c.node, c.attr, **owner(ix, c))
        elif q.endswith(("().train", "().fit")) and "." in q.partition("(")[0] and \
                not q.partition("(")[0].startswith(NOT_LOCAL + _OTHER_FRAMEWORKS):
            # ``LLaVATrainer(...).train()`` of a class imported from a repository module: the linker decides
            # whether that class is a framework trainer (its module's trainer_class facts)
            module, _, name = q.partition("(")[0].rpartition(".")
            # in a Keras file, ``common.get_model(...).fit(...)`` may be a model a repository function builds
            extra = {"keras": True} if c.attr == "fit" and keras.keras_file(ix) else {}
            f.add("trainer_call", {"module": module, "name": name, "method": c.attr}, c.node, q, **extra, **owner(ix, c))
        elif q in LIGHTNING_CLI and c in cli:
            f.add("trains", {"via": "lightning"}, c.node, q, **owner(ix, c))
        elif q.endswith("().backward") and q[: -len("().backward")] in ACCELERATOR | FABRICS:
            f.add("trains", {"via": "fabric" if q[: -len("().backward")] in FABRICS else "accelerate"}, c.node, q, **owner(ix, c))


def _platform_loops(f: Facts) -> None:
    """Loops a platform or library runs for the file: a Determined trial, a custom TensorFlow loop, Megatron's
    ``pretrain``, a DeepSpeed engine stepped by the file."""
    ix = f.ix
    # a Determined trial: the platform runs the loop and calls the trial's train_batch, which steps through its context
    context_backward = any(c.receiver.endswith("context") for c in ix.method_calls("backward"))
    for name, (node, bases) in ix.classes.items():
        if context_backward and any(b.rsplit(".", 1)[-1] == "PyTorchTrial" for b in bases):
            step = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "train_batch"), None)
            if step is not None:
                f.add("trains", {"via": "determined"}, step, f"{name}.train_batch", function="train_batch", cls=name)
    keras.custom_loop(f)  # a custom TensorFlow loop: GradientTape gradients applied by an optimizer
    for c in ix.calls_to(*MEGATRON_PRETRAIN):
        f.add("trains", {"via": "megatron"}, c.node, c.qualname, **owner(ix, c))
        f.add("uses_gpu", {"via": "megatron"}, c.node, c.qualname)  # NCCL process groups: no CPU path
        break
    for c in ix.calls_to(*DS_INIT):
        if any(x.attr == "backward" for x in ix.calls):
            f.add("trains", {"via": "deepspeed"}, c.node, "deepspeed.initialize", **owner(ix, c))
    jax.training(f)  # a jax.grad applied by optax / a flax TrainState (frameworks/jax.py)
    if not any(x.kind == "trains" for x in f.out):
        ray.training(f)  # Ray AIR's HuggingFaceTrainer/LightningTrainer run the trainer they build (frameworks/ray.py)


def _in_autograd_function(ix: PyIndex, c: Call) -> bool:
    """Does `c` sit in a class derived from ``torch.autograd.Function`` (a custom op's forward/backward)?"""
    return any(b in ("torch.autograd.Function", "torch.autograd.function.Function") for _, bases in classes_around(ix, c) for b in bases)


def inference(f: Facts) -> None:
    """Signs the file runs a model without training it: a no_grad/inference_mode context, a pipeline,
    ``generate``, ``model.eval()``, ``torch.set_grad_enabled(False)``. Read after the device pass, as before
    the split (the facts keep their order)."""
    ix = f.ix
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


def script(f: Facts) -> None:
    """The ``script`` fact, last of all: running the file does work (how, and the lines of its ``__main__`` blocks)."""
    ix = f.ix
    if _runs_as_script(ix):
        value = {"via": "main_guard" if ix.main_guard else "module_level"}
        if ix.main_blocks:
            value["main_lines"] = [list(b) for b in ix.main_blocks]
        f.out.append(Fact("script", value, f.src.loc(1), "script", "", {}))


#: module-level calls that make a file do work when run: a training step or loop, a trainer, a launcher
_SCRIPT_CALLS = frozenset({"train", "fit", "fit_generator", "train_on_batch", "backward", "step", "apply_gradients", "gradient", "run", "launch", "main",
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
