"""How the data reaches the model: the ``dataloader`` facts of torch DataLoaders (and of tf.data maps that decode
media, read by frameworks/keras.py after them).

Each DataLoader gets its workers and pinning (what the code sets, or torch's defaults), and what the rules
need to judge them: what it is read for (training, evaluation, a peek at one batch, a gradient-free loop),
whether its dataset is tensors already in memory or token ids already, and whether its collate function
builds batches on the GPU. Those judgements follow the dataset expression back through names, ``self.``
attributes and helpers, which is why this is a module of its own. (TrainingArguments' loader is read in
frameworks/hf.py.)
"""
from __future__ import annotations

import ast
import re

from gpulint.read.python.common import Facts, moves_to_device, norm, owner, qualified
from gpulint.read.python.frameworks import keras
from gpulint.read.python.index import Call, PyIndex, dotted
from gpulint.read.python.names import DATALOADER, MEDIA_DECODERS


def dataloaders(f: Facts) -> None:
    for c in f.ix.calls_to(*DATALOADER):
        star = f.opaque_kwargs(c)
        nw_set, pin_set = f.present(c, "num_workers"), f.present(c, "pin_memory")
        nw = f.val(c, "num_workers") if nw_set else (None if star else 0)
        pin = f.val(c, "pin_memory") if pin_set else (None if star else False)
        f.add("dataloader", {"num_workers": norm(nw), "pin_memory": norm(pin), "num_workers_set": nw_set or star,
                             "pin_memory_set": pin_set or star, "via": "torch"}, c.node, c.qualname,
              purpose=_read_without_training(f, c) or _loader_purpose(c), guards=list(c.guards),
              in_memory=_in_memory_dataset(f, c),
              pretokenized=_pretokenized(f, c), **({"gpu_collate": True} if _collates_on_gpu(f, c) else {}),
              **_reached(f.ix, c))
    keras.pipelines(f, purpose_of_names)  # tf.data maps that decode media, judged by the same measure


def _reached(ix: PyIndex, c: Call) -> dict:
    """``reached_from`` of a call inside a function or class (see common.owner): a script importing the module builds
    this loader only by calling one of them; nothing when module-level code reaches it."""
    where = owner(ix, c)
    return {"reached_from": where["reached_from"]} if "reached_from" in where else {}


def _read_without_training(f: Facts, c: Call) -> str | None:
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


def _collates_on_gpu(f: Facts, c: Call) -> bool:
    """The loader's collate function builds batches on the GPU: ``partial(collate, device=device)``, or a function of
    the file that moves what it returns (``.to(device)``, ``.cuda()``). Worker processes cannot touch CUDA and pinned
    memory cannot hold CUDA tensors: IO001/IO002's advice does not apply."""
    node = f.kwarg(c, "collate_fn")
    if node is None:
        return False
    if node.__class__ is ast.Call and (qualified(f, node) or "").endswith("partial"):
        if any(k.arg == "device" for k in node.keywords):
            return True
        node = node.args[0] if node.args else None
    name = dotted(node) if node is not None else None
    fn = f.ix.top_functions.get(name or "")
    return fn is not None and moves_to_device(fn)


#: names of loaders that never run a training step: evaluation, and generation (a loader of prompts
#: that a pipeline samples images or text from: ``sample_dataloader``, ``prompt_loader``)
_EVAL_WORDS = re.compile(r"(^|_)(val|valid|validation|eval|evaluate|evaluation|test|dev|predict|prediction|inference|infer|calib|calibration"
                         r"|sample|sampling|generate|generation|prompt|prompts|testing|accuracy|score|scoring)"
                         r"(_|$|\d|loader|set|dl|ds|data)")


def _loader_purpose(c: Call) -> str:
    """What a DataLoader feeds, by the name it is bound to, the function it is built in or the dataset it
    is given: "eval" for a validation/test/prediction/generation loader (it never runs a training step),
    else "train" (the default reading)."""
    dataset = c.kwarg("dataset") or c.positional(0)
    names = [c.assigned_to.rsplit(".", 1)[-1], c.scope, (dotted(dataset) or "").rsplit(".", 1)[-1] if dataset is not None else ""]
    return purpose_of_names(names)


def purpose_of_names(names: list[str]) -> str:
    """"eval" when one of the names a loader is known by says validation/test/prediction, else "train"."""
    return "eval" if any(n and _EVAL_WORDS.search(n.lower()) for n in names) else "train"


IN_MEMORY_DATASETS = {"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset", "datasets.Dataset.from_dict",
                      "datasets.Dataset.from_list", "datasets.Dataset.from_pandas", "lightning.pytorch.demos.WikiText2",
                      "pytorch_lightning.demos.WikiText2", "lightning.pytorch.demos.transformer.WikiText2"}


def _dataset_expr(f: Facts, c: Call, splits: bool = False) -> ast.expr | None:
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


def _dataset_expr_of_name(f: Facts, name: ast.Name, scope: str) -> ast.expr | None:
    """The expression a dataset name is bound to at its use: the binding that reaches it, else the last
    one written before it."""
    assigns = [a for a in f.ix.assigns if a.target == name.id and a.scope in (scope, "")]
    a = f.ix.reaching(assigns, scope, name) if len(assigns) > 1 else (assigns[0] if assigns else None)
    if a is None:
        # ``ds = ds.rename_column(...)``: the ds on the right is the binding written before that statement
        before = [x for x in assigns if (x.node.end_lineno or x.node.lineno) < name.lineno]
        a = before[-1] if before else (assigns[-1] if assigns else None)
    return a.value if a is not None and isinstance(a.value, ast.expr) else None


def _in_memory_dataset(f: Facts, c: Call) -> bool | str:
    """The dataset is tensors already in memory (TensorDataset, a datasets.Dataset built from a dict):
    indexing is free, workers add nothing. A Dataset class of the repository is named (its class name) for
    the rules to look up in the ``dataset_class`` facts of the workload's files."""
    node = _dataset_expr(f, c)
    if isinstance(node, (ast.List, ast.Tuple, ast.ListComp, ast.Set)):
        return True  # ``DataLoader([0 for _ in range(20)])``: a list in memory (a placeholder handed to accelerate.prepare)
    if not isinstance(node, ast.Call):
        return False
    q = qualified(f, node)
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


#: what makes a dataset rows of token ids already: HF datasets' map/format results and files saved by them
_TOKENISED_DATASET_CALLS = ("map", "with_format", "set_format", "load_from_disk")


def _pretokenized(f: Facts, c: Call) -> bool:
    """Does the loader batch rows that are token ids already (a transformers data collator, or a dataset
    that comes out of ``datasets``' ``.map()``/``load_from_disk``)? Collating them is a few tensor copies:
    worker processes have nothing to take off the GPU's path."""
    collate = f.kwarg(c, "collate_fn")
    if collate is not None:
        q = qualified(f, collate)
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
        if qualified(f, node) in IN_MEMORY_DATASETS:
            return True  # Dataset.from_dict({...}).with_format("torch"): rows in memory
        name = node.func.attr if isinstance(node.func, ast.Attribute) else dotted(node.func) or ""
        return name.rsplit(".", 1)[-1] in _TOKENISED_DATASET_CALLS and (
            f.ix.imports_any("datasets") or qualified(f, node).startswith("datasets."))
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
