"""Joins a launch makes by assumption, when its script path is not a path of the repository as written.

Cluster and container paths (``srun /fsx/awsome/3.test_cases/FSDP/src/train.py``, ``torchrun /fsdp/train.py`` in a
job whose image a Dockerfile of the project builds) name a repository file only through where the repository is
checked out or copied. Each function here returns that file with the assumption in words, which the linker keeps on
the join (``linked: launcher ... runs X (assumed: ...)``) so a reader, and a rule, can tell it from a stated one.
None whenever more than one file would do: a wrong join costs more than a missing one.
"""
from __future__ import annotations

import posixpath
from typing import Callable, Iterable, Protocol


class Repo(Protocol):
    """What these joins read of gpulint.link.workloads.Repo (named here, not imported: workloads imports this)."""

    def of_kind(self, path: str, kind: str) -> list: ...

    def dockerfiles_by_folder(self) -> dict[str, list[str]]: ...


__all__ = ["by_path_tail", "through_image", "in_project", "nearest_under"]

#: a common tail of at least this many path components names one file even when the repository sits deeper
#: in the cluster's tree than its own root (``pytorch/FSDP/src/train.py``); two (``src/train.py``) is too common
_MIN_TAIL = 3


def _tail(a: list[str], b: list[str]) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    return n


def by_path_tail(script: str, paths: Iterable[str]) -> tuple[str, str] | None:
    """The one file of ``paths`` the absolute ``script`` ends like: the repository checked out somewhere on the
    cluster (``/fsx/<clone>/3.test_cases/FSDP/src/train.py`` -> ``3.test_cases/FSDP/src/train.py``). A file whose
    whole repository path ends the script path wins with two components or more; otherwise a common tail of
    ``_MIN_TAIL`` components or more; several files with the longest tail: None."""
    if not script.startswith("/") or "$" in script or "{" in script:
        return None
    parts = [p for p in script.split("/") if p and p != "."]
    if len(parts) < 2:
        return None
    scored = []
    for p in paths:
        comps = p.split("/")
        n = _tail(parts, comps)
        if n:
            scored.append((n, n == len(comps), p))
    if not scored:
        return None
    best = max(n for n, _, _ in scored)
    top = [(whole, p) for n, whole, p in scored if n == best]
    if len(top) != 1:
        return None
    whole, path = top[0]
    if not (whole and best >= 2 or best >= _MIN_TAIL):
        return None
    return path, f"assumed: joined by path tail, {script} -> {path}"


def through_image(script: str, launcher_path: str, repo: Repo, ok: Callable[[str], bool]) -> tuple[str, str] | None:
    """The file a Dockerfile of the launcher's project copies to the absolute ``script`` path (``COPY src/ /fsdp/``
    and ``torchrun /fsdp/train.py``): Dockerfiles from the launcher's folder up to the root, the nearest folder
    with a match deciding; the build context is taken to be the Dockerfile's folder, else the repository root."""
    if not script.startswith("/") or "$" in script or "{" in script:
        return None
    script = posixpath.normpath(script)
    folder = posixpath.dirname(launcher_path)
    while True:
        found: dict[str, str] = {}
        for df in repo.dockerfiles_by_folder().get(folder, []):
            for f in repo.of_kind(df, "image.copy"):
                src, dest = str(f.value.get("src") or ""), str(f.value.get("dest") or "")
                rest = _under(script, dest)
                if rest is None or not src or "$" in src or src.startswith(("http://", "https://")):
                    continue
                for base in (posixpath.dirname(df), ""):
                    cand = posixpath.normpath(posixpath.join(base, src, rest) if rest else posixpath.join(base, src))
                    if ok(cand):
                        found.setdefault(cand, f"assumed: the image built from {df} copies {src} to {dest} "
                                               f"(COPY at {f.loc.short()}), so {script} is {cand}")
                        break
        if found:
            return next(iter(found.items())) if len(found) == 1 else None
        if not folder:
            return None
        folder = posixpath.dirname(folder)


def _under(script: str, dest: str) -> str | None:
    """The part of ``script`` below the COPY destination ``dest`` ("" when ``dest`` is the file itself)."""
    if not dest.startswith("/"):
        return None  # relative to WORKDIR, which this does not follow
    d = posixpath.normpath(dest)
    if script == d:
        return ""
    return script[len(d) + 1:] if script.startswith(d.rstrip("/") + "/") else None


def nearest_under(paths: Iterable[str], start: str) -> tuple[str, list[str]] | None:
    """The nearest folder of the file ``start`` that holds any of ``paths`` (its own folder, then each parent, never
    the repository root, which holds every project's), and the paths under it; None when only the root does."""
    here = posixpath.dirname(start)
    while here:
        under = [p for p in paths if p.startswith(here + "/")]
        if under:
            return here, under
        here = posixpath.dirname(here)
    return None


def in_project(name: str, launcher_path: str, candidates: list[str]) -> tuple[str, str] | None:
    """A bare script name (``train.py``) a container job runs from its image's working folder: the one file of
    that name under the launcher's nearest folder that holds any (the job's project: ``llama3/kubernetes/job.yaml``
    and ``llama3/src/train.py``)."""
    near = nearest_under(candidates, launcher_path) if "/" not in name else None
    if near is None or len(near[1]) != 1:
        return None
    folder, [path] = near
    return path, f"assumed: the only {name} in the job's project {folder}/ (joined by name)"
