"""IO: input pipeline."""
from __future__ import annotations

from gpulint.rulekit import (
    Example, Expect, LARGE_MODEL_PARAMS, OFF_GPU_HOST, Rule, Severity, Workload, benchmark_of, fixes,
    gpu_spend_unknown, hookimpl, resolve_cli, toy_workload, trains_on_gpu, unpriced,
)

#: above this size the GPU step dwarfs the host work of a text batch (tokenised rows, default collation)
LARGE_MODEL = LARGE_MODEL_PARAMS  # the same 1B bar as a short run's in gpulint.resolve.scale


def _large_model(wl: Workload) -> bool:
    model = wl.resolution.model if wl.resolution is not None else None
    return model is not None and model.params >= LARGE_MODEL


def _loaders(wl: Workload):
    """The DataLoaders that feed training steps: validation/test/prediction loaders (by the name they
    are bound to or built in), loaders only looked into (``next(iter(loader))``) or read only by loops without
    autograd (caching latents once under ``torch.no_grad()``), loaders in branches that never run (``if False:``,
    the CPU branch of a CUDA check) are not."""
    for f in wl.code_facts("dataloader"):
        attrs = f.attrs or {}
        if attrs.get("purpose") in ("eval", "inspect", "no_grad") or set(attrs.get("guards") or ()) & OFF_GPU_HOST or attrs.get("gpu_collate"):
            continue  # (gpu_collate) batches built on the GPU by the collate function: no workers, no pinning
        if attrs.get("in_memory") is True or attrs.get("pretokenized") or _dataset_class(wl, attrs.get("in_memory"), "in_memory"):
            continue  # a TensorDataset, or rows of token ids batched by a collator: workers have nothing to do
        if _dataset_class(wl, attrs.get("in_memory"), "on_gpu"):
            continue  # its items are CUDA tensors already: workers cannot make them and pin_memory refuses them
        if f.value.get("via") == "hf_trainer" or (_large_model(wl) and not wl.code_facts("decodes_media")):
            continue  # tokenised text for a large model: collation is negligible next to the step
        yield f, {k: resolve_cli(v, wl) if isinstance(v, dict) else v for k, v in f.value.items()}


def _dataset_class(wl: Workload, ref, key: str) -> bool:
    """``class:Name``: the loader's dataset is a class of the workload's code, and each class of that name has `key`."""
    if not isinstance(ref, str) or not ref.startswith("class:"):
        return False
    name = ref[len("class:"):]
    found = [f for f in wl.code_facts("dataset_class") if f.value.get("name") == name]
    return bool(found) and all(f.value.get(key) for f in found)


class DataloaderSingleProcess(Rule):
    """A DataLoader feeding GPU training loads data in the training process (num_workers 0 or unset).

    What it does:
        Finds ``torch.utils.data.DataLoader`` calls in the code of a workload that trains on a GPU,
        whose ``num_workers`` is 0 or not given. Values are followed through assignments, argparse
        defaults (resolved against the launcher's flags) and dataclass defaults; ``**kwargs`` or values
        computed at run time (``os.cpu_count()``) keep it silent. Loaders that cannot starve the GPU
        are left alone: validation/test/prediction loaders, ``TensorDataset``s (indexing tensors in
        memory), ``IterableDataset`` classes that never ask ``get_worker_info()`` (each worker would
        replay the whole stream: an RL experience source stepping the live policy, a reader of one file),
        text batches for models of 1B+ parameters or fed by HF/TRL trainers (tokenised rows and default
        collation are negligible next to such a step), and loaders whose collator is a
        transformers data collator or whose dataset comes out of ``datasets``' ``.map()``/``load_from_disk``
        (rows of token ids). A benchmark, a measurement or a demo (a file named for it, a timed step, a
        docstring that says it demonstrates, a budget of a few steps) is left alone: its loader's speed is not
        what it is run for; so is a tutorial-sized workload (MNIST/CIFAR-scale data, a model under 5M
        parameters). It reports only where the workload's code decodes or augments samples on the host
        (``PIL.Image.open``, ``cv2.imread``, ``torchvision.io``, ``torchaudio.load``, ``ImageFolder``,
        random transforms): without such work, whether workers would help is a guess (measured on real
        repositories, 5 of 52 such findings were worth acting on; the rest batched token ids, replay
        buffers or tensors). A warning where the compute, a launcher or the code (``.cuda()``, a ``"cuda"``
        device) puts it on a GPU (for a notebook: a compute target or job that runs it); info where only
        a framework or a ``torch.cuda.is_available()`` check says GPU, or the model is 1B+ parameters
        (a step that likely dwarfs the decoding). A tf.data ``map`` whose function decodes images or
        audio (``tf.io.decode_jpeg``) without ``num_parallel_calls`` is the same single-threaded stage
        and is judged the same way; ``num_parallel_calls=tf.data.AUTOTUNE`` (or a count) is parallel.
    Why it costs money:
        With ``num_workers=0`` the GPU waits while the same Python process reads, decodes and
        augments each batch: a starved GPU is billed at full price.
    How to fix:
        Load in worker processes and keep them alive between epochs::

            DataLoader(ds, batch_size=64, num_workers={workers}, pin_memory=True, persistent_workers=True)

        (HF Trainer: ``dataloader_num_workers={workers}``). Start near the number of CPU cores per GPU.
        tf.data: ``ds.map(decode, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE)``.
    Cost model:
        No hourly figure: how long the GPU waits depends on the data and the model; profile a few
        steps (GPU utilisation below ~80% with a busy main process is the sign).
    Sources:
        PyTorch data loading docs (docs.pytorch.org/docs/stable/data.html, "Single- and Multi-process Data Loading");
        TensorFlow "Better performance with the tf.data API" guide (parallelizing data transformation).
    """

    code = "IO001"
    name = "dataloader-single-process"
    severity = Severity.WARNING
    family = "IO"
    since = "0.1.0"

    VALID = [
        Example(
            """\
import torch
from torch.utils.data import DataLoader
train_loader = DataLoader(train_ds, batch_size=32, num_workers=8, pin_memory=True)
val_loader = DataLoader(val_ds, batch_size=64)
model = model.cuda()
for x in train_loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
""",
            title="a validation loader runs no training step",
        ),
        Example(
            """\
import torch
from torch.utils.data import DataLoader
loader = DataLoader(ds, batch_size=32, num_workers=8, pin_memory=True)
model = model.cuda()
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
""",
            title="workers set",
        ),
        Example(
            """\
import os
import torch
from torch.utils.data import DataLoader
loader = DataLoader(ds, num_workers=os.cpu_count(), pin_memory=True)
model = model.cuda()
for x in loader:
    model(x).sum().backward()
    opt.step()
""",
            title="computed at run time: undecidable",
        ),
        Example(
            """\
import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import default_data_collator
tokenized = load_dataset("glue", "sst2").map(tokenize, batched=True)
loader = DataLoader(tokenized["train"], batch_size=32, shuffle=True, collate_fn=default_data_collator, pin_memory=True)
model = model.cuda()
for batch in loader:
    model(**batch).loss.backward()
    opt.step()
""",
            title="rows of token ids batched by a transformers collator",
        ),
        Example(
            """\
import torch
from torch.utils.data import DataLoader
testloader = DataLoader(testset, batch_size=256)
trainloader = DataLoader(trainset, batch_size=64, num_workers=4, pin_memory=True)
model = model.cuda()
for x, y in trainloader:
    loss_fn(model(x.cuda()), y.cuda()).backward()
    opt.step()
""",
            title="testloader is an evaluation loader",
        ),
        Example(
            """\
import torch
from torch.utils.data import DataLoader
loader = DataLoader(PackedTokens("/data/shards"), batch_size=8)
model = model.cuda()
for x in loader:
    model(x.cuda()).loss.backward()
    opt.step()
""",
            title="no per-sample decoding or augmentation on the host: whether workers help is a guess",
        ),
        Example({"train.py": """\
import tensorflow as tf
def decode(path):
    return tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(path), channels=3), (224, 224))
ds = tf.data.Dataset.list_files("/data/train/*.jpg").map(decode, num_parallel_calls=tf.data.AUTOTUNE)
model = tf.keras.applications.ResNet50(weights=None)
model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
model.fit(ds.batch(128).prefetch(tf.data.AUTOTUNE), epochs=90)
""", "infra/main.tf": 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "g5.2xlarge"\n}\n'},
            title="a tf.data map that decodes in parallel (AUTOTUNE)",
        ),
    ]
    INVALID = [
        Example(
            """\
import torch
import torch.utils.data as tud
from torchvision.datasets import ImageFolder
loader = tud.DataLoader(ImageFolder("/data/train", transform=tfm), batch_size=32, shuffle=True)
model = model.cuda()
for x in loader:
    loss = model(x.cuda()).sum()
    loss.backward()
    opt.step()
""",
            expect=[Expect("train.py", 4, ("num_workers", "ImageFolder"))],
            title="no workers, images decoded in the training process",
        ),
        Example(
            {"train.py": """\
import argparse
import torch
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()
loader = DataLoader(ImageFolder(args.data), num_workers=args.workers, pin_memory=True)
model = model.cuda()
for x in loader:
    model(x).sum().backward()
    opt.step()
""", "run.sh": "python train.py --epochs 3\n"},
            expect=[Expect("train.py", 8, "num_workers=0")],
            title="argparse default 0 and no launcher passes --workers",
        ),
        Example({"train.py": """\
import tensorflow as tf
def decode(path):
    return tf.image.resize(tf.io.decode_jpeg(tf.io.read_file(path), channels=3), (224, 224))
ds = tf.data.Dataset.list_files("/data/train/*.jpg").map(decode)
model = tf.keras.applications.ResNet50(weights=None)
model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")
model.fit(ds.batch(128).prefetch(tf.data.AUTOTUNE), epochs=90)
""", "infra/main.tf": 'resource "aws_instance" "t" {\n  ami = "ami-1"\n  instance_type = "g5.2xlarge"\n}\n'},
            expect=[Expect("train.py", 4, "num_parallel_calls is not set")],
            title="a tf.data map that decodes JPEGs one at a time",
        ),
    ]

    def check_workload(self, wl: Workload, ctx):
        if trains_on_gpu(wl) is None or benchmark_of(wl) is not None or toy_workload(wl):
            return  # (benchmark) a measurement, demo or few-step run: its loader's speed is not what it is for;
            # (toy) an MNIST-sized step: nobody rents a GPU to speed its loader up
        for f, v in _loaders(wl):
            if _dataset_class(wl, (f.attrs or {}).get("in_memory"), "unsharded"):
                continue  # an IterableDataset that does not split itself by worker: workers would replay its stream
            nw = v.get("num_workers")
            if nw == 0 and not isinstance(nw, bool):
                how = "num_workers=0" if f.value.get("num_workers_set") else "num_workers is not set (default 0)"
                what = "DataLoader feeding GPU training loads batches in the training process"
                if f.value.get("via") == "tf.data":
                    how = "num_parallel_calls=0" if f.value.get("num_workers_set") else "num_parallel_calls is not set"
                    what = "tf.data map feeding GPU training decodes one element at a time"
                # the GPU starves when each sample is decoded or augmented on the host; without such work in
                # the workload's code the loss is a guess, and on real repositories mostly wrong: no finding
                media = wl.code_facts("decodes_media")
                if not media:
                    continue
                weak = gpu_spend_unknown(wl)  # code that would run on a CPU too, or a notebook on a machine nobody names
                # a step of a billion-parameter model takes seconds: decoding a few samples on the host is a small share
                large = wl.resolution.model if _large_model(wl) else None
                yield self.finding(
                    f.loc, f"{what}: {how}"
                           f" while samples are decoded on the host ({media[0].value.get('via')} at {media[0].loc.path}:{media[0].loc.line})"
                           + (f" (a step of {large.name or 'the model'}, {large.params / 1e9:.0f}B parameters, likely dwarfs "
                              f"the decoding: profile first)" if large else ""),
                    symbol=f"{f.key}", workload=wl.name, severity=None if not weak and not large else Severity.INFO,
                    cost=unpriced("No hourly figure: the GPU's idle share depends on data and model; profile GPU utilisation."),
                    fix=fixes.num_workers(f),
                )


# the advice names the number the fix writes (fixes.num_workers), so the two never disagree
if DataloaderSingleProcess.__doc__:  # (none under python -OO)
    DataloaderSingleProcess.__doc__ = DataloaderSingleProcess.__doc__.replace("{workers}", str(fixes.DEFAULT_WORKERS))


class DataloaderUnpinnedMemory(Rule):
    """A DataLoader feeding CUDA training does not pin host memory.

    What it does:
        Finds ``torch.utils.data.DataLoader`` calls in a workload that trains on a GPU where
        ``pin_memory`` is not given (its default is False). An explicit ``pin_memory=False`` is
        taken as a deliberate choice and left alone, and so are benchmarks, measurements, demos and
        tutorial-sized workloads (as for IO001) and steps of 1B+ parameter models. Like IO001 it reports
        only workloads whose code decodes or augments samples on the host (images, audio, video): token
        ids, tensors and replay buffers make copies too small for pinning to matter (measured on real
        repositories, 11 of 63 such findings were worth acting on, against 77 of 129 on decoded media).
    Why it costs money:
        Copies from pageable host memory are staged and synchronous; pinned buffers let
        ``.to("cuda", non_blocking=True)`` overlap the copy with compute.
    How to fix:
        ``DataLoader(..., pin_memory=True)`` and move batches with ``non_blocking=True``.
    Cost model:
        No hourly figure: the gain is the host-to-device copy time per step, usually small.
    Sources:
        PyTorch data loading docs, "Memory Pinning"; CUDA best practices guide on pinned memory.
    """

    code = "IO002"
    name = "dataloader-unpinned-memory"
    severity = Severity.INFO
    family = "IO"
    since = "0.1.0"

    VALID = [
        Example(
            """\
from torch.utils.data import DataLoader
loader = DataLoader(ds, num_workers=4, pin_memory=True)
model = model.cuda()
for x in loader:
    model(x.cuda(non_blocking=True)).sum().backward()
    opt.step()
""",
        ),
        Example(
            """\
from torch.utils.data import DataLoader
loader = DataLoader(ds, num_workers=4, pin_memory=False)
model = model.cuda()
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
""",
            title="explicitly off: a deliberate choice",
        ),
        Example(
            """\
from torch.utils.data import DataLoader
loader = DataLoader(PackedTokens("/data/shards"), batch_size=8, num_workers=2)
model = model.cuda()
for x in loader:
    model(x.cuda()).loss.backward()
    opt.step()
""",
            title="batches of token ids: a copy too small for pinning to matter",
        ),
    ]
    INVALID = [
        Example(
            """\
from torch.utils.data import DataLoader
from torchvision.datasets import ImageFolder
loader = DataLoader(ImageFolder("/data/train", transform=tfm), num_workers=4)
model = model.cuda()
for x in loader:
    model(x.cuda()).sum().backward()
    opt.step()
""",
            expect=[Expect("train.py", 3, "pin_memory")],
            title="decoded images copied from pageable memory",
        ),
    ]

    def check_workload(self, wl: Workload, ctx):
        if trains_on_gpu(wl) is None or _large_model(wl) or benchmark_of(wl) is not None or toy_workload(wl):
            return  # (large model) a host-to-device copy of a batch is nothing next to a billion-parameter step
        if not wl.code_facts("decodes_media"):
            return  # batches of token ids or tensors: copies too small for pinning to matter
        for f, v in _loaders(wl):
            if f.value.get("via") == "torch" and not f.value.get("pin_memory_set") and v.get("pin_memory") is False:
                yield self.finding(f.loc, "DataLoader feeding CUDA training does not pin host memory (pin_memory not set)",
                                   symbol=f"{f.key}:pin", workload=wl.name,
                                   cost=unpriced("No hourly figure: the saving is the host-to-device copy time per step."),
                                   fix=fixes.pin_memory(f))


@hookimpl
def gpulint_rules():
    return [DataloaderSingleProcess, DataloaderUnpinnedMemory]
