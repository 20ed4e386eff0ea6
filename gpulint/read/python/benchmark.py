"""Is the training measured rather than kept: the ``benchmark`` facts.

A training step that a benchmark times (the file's name, clocks and CUDA syncs beside the step, synthetic
inputs, a throughput metric) or a demo (its docstring says so, or its step budget is a literal of a few
steps) produces nothing worth a checkpoint, and fp32 may be what it measures; the rules judge it as such.
It is its own module because it reads the whole file for that evidence (names, strings, budgets), apart from
how the training itself is recognised; training.py calls it once it has found a training step.
"""
from __future__ import annotations

import ast
import posixpath
import re

from gpulint.read.python.common import DEMO_MAX_STEPS, Facts
from gpulint.read.python.frameworks import lightning
from gpulint.read.python.index import Call
from gpulint.read.python.names import DATALOADER, HF_ARGS, LIGHTNING_TRAINERS

#: entry points named for measuring speed, not for producing a model
_BENCH_FILE = re.compile(r"(^|[_\-.])(bench|benchmark|benchmarks|benchmarking|throughput|speedtest|speed_test|measure|profile|profiling)([_\-.]|$)")
_CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "timeit.default_timer"})
#: random tensors made from nothing (randn_like is a diffusion model's noise, not its input)
_RANDOM_INPUTS = frozenset({"torch.randn", "torch.rand", "torch.randint", "tensorflow.random.uniform", "tensorflow.random.normal"})
_DATA_SOURCES = ("torchvision.datasets.", "datasets.", "torchtext.", "tensorflow_datasets.", "webdataset.", "numpy.load",
                 "pandas.read_", "torch.load", "h5py.")
_DATA_CALLS = frozenset({"load_dataset", "load_from_disk", "read_csv", "read_parquet", "open"})


def benchmarked_step(f: Facts, backward: Call) -> None:
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


def demo(f: Facts) -> None:
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
            budget = lightning.step_budget(f, c)
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


_LOADER_WORDS = re.compile(r"loader|data_iter|dataiter|batches|prefetcher", re.I)


_FAKE_NAME = re.compile(r"(^|_)(fake|synthetic)(_|$)", re.I)

_SYNTHETIC_PATH = re.compile(r"[/_\-]synthetic([/_\-.]|$)", re.I)


def _says_synthetic(f: Facts) -> str | None:
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


def _iterates_a_loader(f: Facts, scope: str) -> bool:
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
