"""What the code runs on: the ``uses_gpu``, ``cpu_only``, ``other_accelerator`` and ``custom_kernel`` facts,
and the compute of a notebook's own kernel.

A GPU is evidence (``.cuda()``, a CUDA device string or ordinal, a scheduler asked for GPUs, a CUDA query, a
framework that takes the GPU) and every piece says whether it is only a probe (inside a CUDA check); CPU-only
is what the code declares (Lightning's ``accelerator="cpu"``, a CPU notebook kernel, Kubeflow resources
without a GPU). It is separate from training.py because it is read whether or not the file trains; it runs
right after it, as the second half of what was one pass, so the facts keep their order.
"""
from __future__ import annotations

import ast
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.python.common import Facts, autocast_device, printed_and_asserted, read_again
from gpulint.read.python.frameworks import jax, keras, lightning, ray
from gpulint.read.python.index import UNKNOWN, Call, dotted
from gpulint.read.python.names import (ACCELERATOR, AUTOCAST, DS_INIT, HF_TRAINERS, LIGHTNING_TRAINERS, framework_class,
                                       trainer_classes)

#: calls that compile a CUDA extension from source at run time (JIT) for the script's own kernels
CUSTOM_KERNEL_BUILDS = ("torch.utils.cpp_extension.load", "torch.utils.cpp_extension.load_inline")


#: Kubeflow Trainer SDK trainers that carry the resources of the nodes they run on
KUBEFLOW_TRAINERS = frozenset({"CustomTrainer", "BuiltinTrainer", "Trainer"})


def devices(f: Facts) -> None:
    """GPU evidence first (the strongest of each kind, one fact each), then other accelerators, custom kernels
    and what declares the CPU."""
    local_trainers = trainer_classes(f.ix)
    # GPU use: explicit device strings, .cuda(), or frameworks that take the GPU when one exists
    # a device only where a CUDA check found one (``"cuda" if torch.cuda.is_available() else "cpu"``, ``if
    # torch.cuda.is_available(): model.cuda()``) runs on the CPU as well: a probe, not a GPU the code requires
    _cuda_moves(f)
    _cuda_devices(f)
    _scheduled_gpus(f)
    ray.scaling(f)  # Ray Train's ScalingConfig (frameworks/ray.py)
    _cuda_queries(f)
    _gpu_frameworks(f, local_trainers)
    _lightning_devices(f, local_trainers)
    keras.gpu_use(f)
    jax.devices(f)
    # an XLA device (TPU, Trainium and Inferentia through torch-neuronx) or Intel Gaudi's HPU: not a CUDA GPU
    other = _other_accelerator(f)
    if other is not None:
        f.add("other_accelerator", {"via": other[1], "device": other[2]}, other[0].node, other[1])
    _custom_kernel(f)
    _declared_cpu(f)


def _cuda_moves(f: Facts) -> None:
    """``model.cuda()`` (not ``torch.cuda.*``), the unguarded one first."""
    for c in sorted(f.ix.calls, key=lambda c: "gpu" in c.guards):
        q = c.qualname or ""
        if c.attr == "cuda" and c.receiver and not q.startswith("torch.cuda"):
            f.add("uses_gpu", {"via": ".cuda()", "probe": "gpu" in c.guards}, c.node, "cuda")
            return


def _cuda_devices(f: Facts) -> None:
    """A CUDA device string or ordinal given to ``.to()``, ``torch.device`` or a transformers pipeline."""
    for c in sorted(f.ix.calls, key=lambda c: "gpu" in c.guards):
        pipe = c.qualname in ("transformers.pipeline", "transformers.pipelines.pipeline")
        if c.attr in ("to", "device") or c.qualname == "torch.device" or pipe:
            first = f.val(c, "device") if pipe else f.val(c, None, 0) if c.positional(0) is not None else f.val(c, "device")
            # an ordinal is a CUDA device: ``.to(0)``, ``torch.device(0)``, ``pipeline(..., device=0)`` (-1 is its CPU)
            ordinal = isinstance(first, int) and not isinstance(first, bool) and first >= 0
            if (isinstance(first, str) and first.startswith("cuda")) or ordinal:
                if c.qualname == "torch.device" and c.assigned_to and not read_again(f, c.assigned_to):
                    continue  # ``device = torch.device("cuda")`` that nothing reads: the model never goes there
                f.add("uses_gpu", {"via": "device", "probe": "gpu" in c.guards}, c.node, "cuda")
                return


def _scheduled_gpus(f: Facts) -> None:
    """A Ray task/actor or Serve deployment, or a BentoML service, that asks its scheduler for GPUs: it is placed on
    one or never runs."""
    for c in f.ix.calls_to(*_GPU_RESOURCE_DECLARATIONS):
        gpus = _declared_gpus(f, c)
        if isinstance(gpus, (int, float)) and not isinstance(gpus, bool) and gpus > 0:
            f.add("uses_gpu", {"via": f"{c.qualname} asks for {gpus} GPU(s)"}, c.node, c.qualname)
            return


def _cuda_queries(f: Facts) -> None:
    """``torch.cuda.is_available()``, ``set_device`` ... (or torch.accelerator's): asserted, used, or only printed."""
    said_asserted = None  # the print/assert walk of the file, only once a CUDA query is there to judge
    for c in f.ix.calls:
        q = c.qualname or ""
        if (q.startswith("torch.cuda.") and c.attr in ("is_available", "device_count", "set_device", "current_device")) or \
                (q.startswith("torch.accelerator.") and c.attr in ("current_accelerator", "is_available", "device_count",
                                                                    "set_device_index", "current_device_index")):
            said, asserted = said_asserted = said_asserted or printed_and_asserted(f.src.syntax)
            if id(c.node) in said:
                continue  # ``print(torch.cuda.is_available())``: a notebook reporting what it has, not using it
            if id(c.node) in asserted:
                # ``assert torch.cuda.is_available(), "needs a GPU"``: the script refuses to run without one
                f.add("uses_gpu", {"via": f"{q} (asserted)"}, c.node, q)
                return
            # ``if torch.cuda.device_count() > 0: torch.cuda.set_device(0)``: inside a CUDA check it is a probe too
            f.add("uses_gpu", {"via": q, **({"probe": True} if "gpu" in c.guards else {})}, c.node, q)
            return


def _gpu_frameworks(f: Facts, local_trainers: dict[str, str]) -> None:
    """HF Trainer, accelerate and DeepSpeed (or a local subclass of a trainer)."""
    gpu_frameworks = HF_TRAINERS | ACCELERATOR | DS_INIT
    for c in f.ix.calls:
        q = framework_class(c.qualname or (c.func if c.func in local_trainers else ""), local_trainers)
        if q in gpu_frameworks:
            # HF Trainer and accelerate take a GPU when there is one and train on the CPU otherwise ("auto");
            # DeepSpeed needs one
            f.add("uses_gpu", {"via": q, "auto": q not in DS_INIT}, c.node, q)
            return


def _lightning_devices(f: Facts, local_trainers: dict[str, str]) -> None:
    """A Lightning Trainer's ``accelerator`` / ``gpus``: the GPU (perhaps several), or the CPU it is told to use."""
    for c in f.ix.calls:
        if framework_class(c.qualname or "", local_trainers) in LIGHTNING_TRAINERS:
            acc = f.val(c, "accelerator")
            gpus = f.val(c, "gpus") if f.present(c, "gpus") else UNKNOWN
            if f.present(c, "gpus") and not f.present(c, "accelerator") and (gpus == 0 or gpus is None):
                # Lightning 1.x: ``Trainer(gpus=0)`` (or None) trains on the CPU, whatever the machine has
                f.add("cpu_only", {"via": f"lightning gpus={gpus}"}, c.node, c.qualname)
            elif acc is UNKNOWN and not f.present(c, "accelerator") or acc in ("gpu", "cuda", "auto"):
                asks = acc in ("gpu", "cuda") or (isinstance(gpus, int) and not isinstance(gpus, bool) and gpus > 0)
                several = lightning.several_devices(f, c, gpus)
                count = lightning.device_count(f, c, gpus)
                f.add("uses_gpu", {"via": "lightning", "auto": not asks, **({"several": True} if several else {}),
                                   **({"devices": count} if count is not None else {})}, c.node, c.qualname)
            elif acc == "cpu":
                f.add("cpu_only", {"via": "lightning accelerator='cpu'"}, c.node, c.qualname)
    for c in lightning.cli_runs(f):  # its accelerator comes from the --config file: a GPU when there is one by default
        f.add("uses_gpu", {"via": "lightning", "auto": True}, c.node, c.qualname)


def _custom_kernel(f: Facts) -> None:
    """A CUDA extension compiled from the repository's own sources (RWKV's wkv kernels, a fused op): autocast does not
    reach inside it, so the advice to train in 16 bit has to say how its inputs stay in the dtype it was written for."""
    kernel = next(iter(f.ix.calls_to(*CUSTOM_KERNEL_BUILDS)), None)
    if kernel is not None:
        f.add("custom_kernel", {"via": kernel.qualname}, kernel.node, kernel.qualname)


def _declared_cpu(f: Facts) -> None:
    """CPU compute the file itself declares: IPEX with CPU autocast, a notebook kernel on a CPU instance (or the GPU
    instance it runs on), Kubeflow Trainer resources without a GPU."""
    ix = f.ix
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


#: decorators and calls that declare the GPUs a task, actor, deployment or service is scheduled with
_GPU_RESOURCE_DECLARATIONS = ("ray.remote", "ray.serve.deployment", "bentoml.service")


def _declared_gpus(f: Facts, c: Call) -> Any:
    """GPUs a scheduler gives the decorated code: ``@ray.remote(num_gpus=1)``, ``@serve.deployment(ray_actor_options=
    {"num_gpus": 1})``, ``@bentoml.service(resources={"gpu": 1})``; UNKNOWN where the value is not literal."""
    if c.qualname == "ray.remote":
        return f.val(c, "num_gpus") if f.present(c, "num_gpus") else UNKNOWN
    key, inner = ("ray_actor_options", "num_gpus") if c.qualname == "ray.serve.deployment" else ("resources", "gpu")
    opts = f.val(c, key) if f.present(c, key) else UNKNOWN
    return opts.get(inner, UNKNOWN) if isinstance(opts, dict) else UNKNOWN


#: calls that put a model on an accelerator that is not a CUDA GPU, by the device they give
_OTHER_ACCELERATOR_CALLS = {"torch_xla.core.xla_model.xla_device": "xla", "torch_xla.device": "xla",
                            "torch_xla.distributed.parallel_loader.MpDeviceLoader": "xla", "torch_neuronx.trace": "xla",
                            "habana_frameworks.torch.core.mark_step": "hpu", "habana_frameworks.torch.hpu.is_available": "hpu"}


def _other_accelerator(f: Facts) -> tuple[Call, str, str] | None:
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


def _cpu_autocast(f: Facts, c: Call) -> bool:
    """``torch.cpu.amp.autocast()`` or ``torch.autocast("cpu")`` / ``device_type="cpu"``."""
    return autocast_device(f, c) == "cpu"
