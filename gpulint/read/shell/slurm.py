"""Slurm's GPU counts as written in options: ``--gres=gpu:a100:8``, ``--gpus-per-node=8``.

A leaf module shared by the command parser (``srun`` options) and the shell
reader (``#SBATCH`` directives).
"""
from __future__ import annotations

__all__ = ["gpu_count", "gres_gpus"]


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
