"""Slurm's GPU counts and time limits as written in options: ``--gres=gpu:a100:8``, ``--gpus-per-node=8``,
``--gpus=h100:16`` with ``--nodes=2``, ``--gpus-per-task=1`` with ``--ntasks-per-node=8``,
``--time=2-00:00:00``.

A leaf module shared by the command parser (``srun`` options) and the shell
reader (``#SBATCH`` directives).
"""
from __future__ import annotations

import re

__all__ = ["gres_gpus", "job_gpus", "slurm_hours"]


def gres_gpus(text: str) -> int | None:
    """`gpu:8`, `gpu:a100:8`, `gpu:8,nvme:1` -> 8; `gpu` alone -> None."""
    for part in text.split(","):
        bits = part.split(":")
        if bits[0] == "gpu" and len(bits) >= 2 and bits[-1].split("(")[0].isdigit():
            return int(bits[-1].split("(")[0])
    return None


def _typed(text: str | None) -> tuple[int | None, str | None]:
    """`4` -> (4, None); `h100:4` -> (4, "h100"); anything else -> (None, None). A type that is a resource name
    (`nvidia.com/gpu:8`, as Kubernetes-backed Slurm templates write it) names no GPU model."""
    bits = (text or "").split(",")[0].split(":")
    count = int(bits[-1]) if bits[-1].isdigit() else None
    return count, (bits[0] if len(bits) == 2 and count is not None and "/" not in bits[0] else None)


def _plain(text: str | None) -> int | None:
    return int(text) if text and text.isdigit() else None


# No GPU node holds more than 8 GPUs: a job total above that without --nodes may span nodes, so its
# per-node count is unknown.
_NODE_MAX_GPUS = 8


def job_gpus(opts: dict[str, str]) -> tuple[int | None, str | None, str] | None:
    """GPUs per node, GPU type and the option that said so, from a job's options keyed by long name without
    dashes (``gpus_per_node``, ``gres``, ``gpus_per_task``, ``gpus``, ``nodes``, ``ntasks``,
    ``ntasks_per_node``); None when no option asks for GPUs.

    sbatch(1): ``--gpus``/``-G`` is the job's total and ``--gpus-per-task`` multiplies by the tasks on a
    node, so both give a per-node count only where the node and task counts decide it (one task per node
    by default). A total with no ``--nodes`` is taken as one node only up to 8 GPUs.
    """
    nodes = _plain(opts.get("nodes"))
    if "gpus_per_node" in opts:
        count, kind = _typed(opts["gpus_per_node"])
        return count, kind, "gpus_per_node"
    if "gres" in opts and opts["gres"].startswith("gpu"):
        bits = opts["gres"].split(",")[0].split(":")
        return gres_gpus(opts["gres"]), bits[1] if len(bits) == 3 else None, "gres"
    if "gpus_per_task" in opts:
        per_task, kind = _typed(opts["gpus_per_task"])
        ntasks, tpn = _plain(opts.get("ntasks")), _plain(opts.get("ntasks_per_node"))
        if tpn is None and ntasks is not None:
            tpn = ntasks // nodes if nodes and ntasks % nodes == 0 else (ntasks if nodes in (None, 1) else None)
        count = per_task * (tpn or 1) if per_task is not None and (tpn or ntasks is None) else None
        if count is not None and nodes is None and "ntasks" in opts and count > _NODE_MAX_GPUS:
            count = None
        return count, kind, "gpus_per_task"
    if "gpus" in opts:
        total, kind = _typed(opts["gpus"])
        if total is None:
            count = None
        elif nodes:
            count = total // nodes if total % nodes == 0 else None
        else:
            count = total if total <= _NODE_MAX_GPUS else None
        return count, kind, "gpus"
    return None


_SLURM_TIME = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")


def slurm_hours(text: str) -> float | None:
    """Hours of a Slurm time limit (``--time``): "minutes", "minutes:seconds", "hours:minutes:seconds",
    "days-hours", "days-hours:minutes", "days-hours:minutes:seconds" (sbatch(1)); None for UNLIMITED/INFINITE,
    0 (no limit) or anything else."""
    m = _SLURM_TIME.match((text or "").strip())
    if not m:
        return None
    days, a, b, c = m.group(1), int(m.group(2)), m.group(3), m.group(4)
    if days is not None:  # days-hours[:minutes[:seconds]]
        hours = int(days) * 24 + a + (int(b) if b else 0) / 60 + (int(c) if c else 0) / 3600
    elif c is not None:  # hours:minutes:seconds
        hours = a + int(b) / 60 + int(c) / 3600
    elif b is not None:  # minutes:seconds
        hours = a / 60 + int(b) / 3600
    else:  # minutes
        hours = a / 60
    return round(hours, 4) if hours > 0 else None
