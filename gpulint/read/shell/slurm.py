"""Slurm's GPU counts and time limits as written in options: ``--gres=gpu:a100:8``, ``--gpus-per-node=8``,
``--time=2-00:00:00``.

A leaf module shared by the command parser (``srun`` options) and the shell
reader (``#SBATCH`` directives).
"""
from __future__ import annotations

import re

__all__ = ["gpu_count", "gres_gpus", "slurm_hours"]


def gres_gpus(text: str) -> int | None:
    """`gpu:8`, `gpu:a100:8`, `gpu:8,nvme:1` -> 8; `gpu` alone -> None."""
    for part in text.split(","):
        bits = part.split(":")
        if bits[0] == "gpu" and len(bits) >= 2 and bits[-1].split("(")[0].isdigit():
            return int(bits[-1].split("(")[0])
    return None


def gpu_count(text: str | None) -> int | None:
    """`--gpus-per-node=8` or `=a100:8`."""
    if not text:
        return None
    last = text.split(":")[-1]
    return int(last) if last.isdigit() else None


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
