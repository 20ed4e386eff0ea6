"""Questions several rule packs ask of a workload."""
from __future__ import annotations

from gpulint.model import Fact, Related
from gpulint.workloads import Workload

GPU_LAUNCHERS = ("torchrun", "accelerate", "deepspeed", "torch.distributed.run", "torch.distributed.launch")


def training_fact(wl: Workload) -> Fact | None:
    """The fact that shows the workload trains (loop, trainer.train(), fit ...)."""
    facts = wl.code_facts("trains")
    order = {"hf_trainer": 0, "lightning": 1, "accelerate": 2, "deepspeed": 3, "keras": 4, "loop": 5}
    return sorted(facts, key=lambda f: (order.get(f.value.get("via"), 9), f.loc))[0] if facts else None


def on_gpu(wl: Workload) -> bool:
    """Does the workload run on a GPU? Only when the code, the launcher or the
    compute says so; a script with no device and no GPU compute is CPU work."""
    if wl.code_facts("cpu_only") and not wl.code_facts("uses_gpu"):
        return False
    if wl.code_facts("uses_gpu"):
        return True
    if any(l.value.get("tool") in GPU_LAUNCHERS for l in wl.launchers):
        return True
    c = wl.resolved.get("compute") or {}
    return bool(c.get("gpu_count"))


def trains_on_gpu(wl: Workload) -> Fact | None:
    t = training_fact(wl)
    return t if t is not None and on_gpu(wl) else None


def compute_related(wl: Workload) -> list[Related]:
    out = []
    if wl.compute is not None:
        c = wl.resolved.get("compute") or {}
        what = c.get("instance") or wl.compute.target
        cap = c.get("capacity")
        out.append(Related(wl.compute.loc, f"{what}{', ' + cap if cap else ''}"))
    for l in wl.launchers[:3]:
        out.append(Related(l.loc, f"launches {wl.entrypoint} ({l.value.get('tool')})"))
    return out


def gpu_phrase(wl: Workload) -> str:
    """`on p4d.24xlarge (8x A100-SXM4-40GB)` when known, else `on GPU`."""
    c = wl.resolved.get("compute") or {}
    if c.get("instance"):
        gpus = f" ({c['gpu_count']}x {c['gpu_model']})" if c.get("gpu_count") and c.get("gpu_model") else ""
        return f"on {c['instance']}{gpus}"
    return "on GPU"
