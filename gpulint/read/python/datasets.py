"""What the data is: the ``dataset`` (a toy benchmark set or environment), ``dataset_class`` (a Dataset class
of the file: in memory, on the GPU, an unsharded IterableDataset) and ``decodes_media`` (per-sample decoding
or augmentation on the host) facts.

These read the file's Dataset classes and the datasets it names, not its loaders (loaders.py), and the
``__getitem__`` analysis is shared by the media and dataset-class passes (cached on ``Facts``).
"""
from __future__ import annotations

import ast
import re
from typing import Any

from gpulint.read.python.common import Facts, moves_to_device
from gpulint.read.python.index import UNKNOWN, PyIndex, dotted, literal
from gpulint.read.python.names import DATALOADER, MEDIA_DECODERS

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


def toy_datasets(f: Facts) -> None:
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


def _getitem_classes(f: Facts) -> list[tuple[ast.ClassDef, ast.FunctionDef, bool]]:
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


def dataset_classes(f: Facts) -> None:
    """Dataset classes whose ``__getitem__`` only indexes what ``__init__`` holds (``return self.x[i],
    self.y[i]``): a TensorDataset in all but name."""
    for node, get, in_memory in _getitem_classes(f):
        # a dataset that hands out CUDA tensors: workers cannot touch CUDA and pinning refuses CUDA tensors
        on_gpu = {"on_gpu": True} if moves_to_device(get) else {}
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


def media(f: Facts) -> None:
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
