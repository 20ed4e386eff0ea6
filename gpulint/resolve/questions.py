"""Questions rules ask of a workload, answered from the typed results only.

Everything here reads the results of linking and resolution (``Workload``,
``Workload.resolution``, ``ResolvedCompute``) and never resolves anything
itself, so every rule (built-in or a plugin's) agrees about what a workload is.
Rule authors import these through :mod:`gpulint.rulekit`.
"""
from __future__ import annotations

from gpulint.resolve.cost import compute_of
from gpulint.core.model import Fact, Related
from gpulint.resolve.results import CPU, GPU
from gpulint.link.workloads import Workload

__all__ = ["GPU_LAUNCHERS", "NOTEBOOK_MACHINE_UNKNOWN", "OFF_GPU_HOST", "WEAK_GPU_EVIDENCE", "benchmark_of", "compute_related",
           "gpu_evidence", "gpu_phrase", "gpu_spend_unknown", "multi_gpu", "on_gpu", "toy_workload", "training_fact",
           "trains_on_gpu", "unsized_spend"]

#: branches of the code (pyindex guards) that never run on a cloud GPU host: dead code, the CPU side of a CUDA
#: check, a Windows/macOS branch
OFF_GPU_HOST = frozenset({"dead", "cpu", "other_os"})
#: evidence of a GPU that the code would also run without one: rules that cost GPU time speak at info on it
WEAK_GPU_EVIDENCE = ("probe", "framework")
NOTEBOOK_MACHINE_UNKNOWN = "a notebook whose kernel's machine nothing in the repository names"
#: launchers that start one process per GPU
GPU_LAUNCHERS = ("torchrun", "accelerate", "deepspeed", "torch.distributed.run", "torch.distributed.launch")


def training_fact(wl: Workload) -> Fact | None:
    """The fact that shows the workload trains (loop, trainer.train(), fit ...)."""
    facts = wl.code_facts("trains")
    order = {"hf_trainer": 0, "lightning": 1, "accelerate": 2, "fabric": 2, "deepspeed": 3, "megatron": 3, "keras": 4, "tensorflow": 5, "jax": 5, "loop": 6}
    return sorted(facts, key=lambda f: (order.get(f.value.get("via"), 9), f.loc))[0] if facts else None


def on_gpu(wl: Workload) -> bool:
    """Does the workload run on a GPU? Never when its compute is known CPU compute (an
    ``ml.c5`` job, a pod that requests no GPU, SageMaker local mode) or every launcher hides the GPUs
    (``CUDA_VISIBLE_DEVICES= python train.py``), whatever the code says;
    otherwise only when the code, the launcher or the compute says so."""
    c = compute_of(wl)
    if c is not None and c.device == CPU:
        return False
    if wl.resolution is not None and wl.resolution.gpus_hidden:
        return False  # every launcher hides the GPUs (CUDA_VISIBLE_DEVICES=): the code falls back to the CPU or fails
    cpu = wl.device_facts("cpu_only")
    weak = all(f.value.get("auto") or f.value.get("probe") for f in wl.device_facts("uses_gpu"))
    if wl.code_facts("other_accelerator") and weak and not (c is not None and c.device == GPU):
        return False  # an XLA device (TPU, Trainium) or a Gaudi HPU: torchrun starts one process per NeuronCore too
    if cpu and (weak or any(f.value.get("declared") for f in cpu)):
        # declared CPU resources win over code that would use a GPU if it had one; code that picks the CPU wins over
        # a framework that takes a GPU only when there is one (accelerate, HF Trainer) and over a probe
        return False
    if wl.device_facts("uses_gpu"):
        return True
    if any(l.value.get("tool") in GPU_LAUNCHERS for l in wl.launchers):
        return True
    # the compute counts GPUs, or asks for them without naming an instance (a pod's nvidia.com/gpu request)
    return bool(c is not None and (c.gpu_count or c.device == GPU))


#: code that only asks whether a GPU is there (``"cuda" if torch.cuda.is_available() else "cpu"``): it runs
#: on the CPU as well, so it says nothing about where it is deployed
_PROBES = ("is_available", "device_count", "current_device", "current_accelerator", "current_device_index")


def gpu_evidence(wl: Workload) -> str | None:
    """How the workload is known to run on a GPU, strongest first: ``"compute"`` (its compute target
    has GPUs), ``"launcher"`` (torchrun, accelerate, deepspeed start one process per GPU), ``"code"``
    (``.cuda()``, a ``"cuda"`` device, DeepSpeed), ``"framework"`` (HF Trainer, accelerate or Lightning
    take a GPU when there is one, and train on the CPU otherwise), ``"probe"`` (the code only asks
    whether a GPU exists, and falls back to the CPU), or None (not on a GPU, or nothing says so).
    Rules that warn about GPU cost on evidence this weak stay quiet or speak at info."""
    if not on_gpu(wl):
        return None
    c = compute_of(wl)
    if c is not None and c.device == GPU:
        return "compute"
    if any(l.value.get("tool") in GPU_LAUNCHERS for l in wl.launchers):
        return "launcher"
    uses = wl.device_facts("uses_gpu")
    # an asserted GPU (``assert torch.cuda.is_available()``) is a requirement of the script itself; in a helper module
    # the workload imports (``def init_distributed(): assert ...``) it holds only where that helper runs: a probe there
    probes = [f for f in uses if str(f.value.get("via") or "").rsplit(".", 1)[-1] in _PROBES or f.value.get("probe")
              or (str(f.value.get("via") or "").endswith("(asserted)") and f.loc.path != wl.entrypoint)]
    auto = [f for f in uses if f.value.get("auto")]
    if uses and len(probes) == len(uses):
        return "probe"
    if uses and len(probes) + len(auto) == len(uses):
        return "framework"
    return "code" if uses else "compute"  # on_gpu's last reason: the compute target counts GPUs


def multi_gpu(wl: Workload) -> bool | None:
    """Does the workload's machine have more than one GPU? From the compute target's GPUs per node,
    else a launcher that starts several processes per node (``--nproc_per_node 8``); None when
    nothing says."""
    c = compute_of(wl)
    per_node = c.gpus_per_node if c is not None else None
    if per_node:
        return per_node > 1
    procs = [l.value.get("nproc_per_node") or l.value.get("num_processes") for l in wl.launchers]
    if any(isinstance(n, int) and n > 1 for n in procs):
        return True
    return None


def toy_workload(wl: Workload) -> str | None:
    """What makes a workload tutorial-sized, in words (the benchmark dataset it trains on, or a model of fewer than
    ``gpulint.resolve.scale.SMALL_MODEL_PARAMS`` parameters), or None: resolved once per workload by the host
    (``WorkloadResolution.tutorial``, see ``gpulint.resolve.scale``). Such a step is bound by anything but GPU math, so
    advice about GPU efficiency is informational."""
    return wl.resolution.tutorial if wl.resolution is not None else None


def unsized_spend(wl: Workload) -> str | None:
    """Why nothing sizes the workload's GPU time (no named instance or GPU model, a model of unknown size, one
    GPU and no data-parallel code), in words, or None: resolved once per workload by the host
    (``WorkloadResolution.unsized``, see ``gpulint.resolve.scale``). Rules whose warning rests on the spend being
    material speak at info then."""
    return wl.resolution.unsized if wl.resolution is not None else None


def benchmark_of(wl: Workload) -> Fact | None:
    """The fact that says the workload measures its training step (a benchmark) rather than trains a model.
    Random inputs make a demo only where no file of the workload reads data (a loader in a module the
    training script imports is real data)."""
    reads_data = bool(wl.code_facts("dataloader") or wl.code_facts("dataset"))
    found = [f for f in wl.code_facts("benchmark") if not (f.value.get("synthetic") and reads_data)]
    return found[0] if found else None


def trains_on_gpu(wl: Workload) -> Fact | None:
    """The training fact of a workload that trains on a GPU, else None."""
    t = training_fact(wl)
    return t if t is not None and on_gpu(wl) else None


def launch_trains_on_gpu(wl: Workload) -> bool:
    """Does a job whose code is not in the repository train on a GPU by its launcher's word (a training launcher on GPU
    compute, gpulint.link.workloads._launch_training)? The rules that judge launcher and compute ask this of it."""
    return not wl.code_known and bool(wl.launch_training) and on_gpu(wl)


def compute_related(wl: Workload) -> list[Related]:
    """Related locations of a cross-file finding: the compute target and the first launchers."""
    out = []
    c = compute_of(wl)
    if wl.compute is not None:
        what = (c.instance_name if c is not None else None) or wl.compute.target
        cap = c.capacity if c is not None else None
        out.append(Related(wl.compute.loc, f"{what}{', ' + cap if cap else ''}"))
    for l in wl.launchers[:3]:
        out.append(Related(l.loc, f"launches {wl.entrypoint} ({l.value.get('tool')})"))
    return out


def gpu_phrase(wl: Workload) -> str:
    """`on p4d.24xlarge (8x A100-SXM4-40GB)` when known, `on GPU` when the code, launcher or compute says
    GPU, else `on a GPU if there is one` (code that falls back to the CPU, with no compute in sight)."""
    c = compute_of(wl)
    if c is not None and c.instance is not None:
        gpus = f" ({c.gpu_count}x {c.gpu_model})" if c.gpu_count and c.gpu_model else ""
        return f"on {c.instance_name}{gpus}"
    return "on a GPU if there is one" if gpu_evidence(wl) in WEAK_GPU_EVIDENCE else "on GPU"



def gpu_spend_unknown(wl: Workload) -> str | None:
    """Why GPU time the workload would waste is not known to be paid for, or None: code that also runs on
    a CPU with no compute or launcher to say GPU, or a notebook whose kernel runs on a machine nothing in
    the repository names (a laptop, Colab, a workstation). Rules about wasted GPU time speak at info then."""
    if gpu_evidence(wl) in WEAK_GPU_EVIDENCE:
        return "nothing says it runs on a GPU rather than falling back to the CPU"
    if wl.entrypoint.endswith(".ipynb") and compute_of(wl) is None and not wl.launchers:
        return NOTEBOOK_MACHINE_UNKNOWN
    return None
