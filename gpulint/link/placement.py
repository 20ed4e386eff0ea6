"""Placement: which capacity a job runs on, when the job does not name its machine.

A Slurm batch script asks for a partition (``--partition gpu``); a pod asks for
node labels (``nodeSelector``), tolerates taints and requests GPUs. The
machines behind them are written elsewhere in the repository, in cluster
definitions (``gpulint.read.clusters``: a ParallelCluster queue, an eksctl
node group, a Cluster Toolkit partition, ``slurm.conf``, a Karpenter NodePool).
This module joins the two: ``place(computes)`` sets ``Compute.placed_on`` (the
capacity target) and ``Compute.placement`` (why, in words the workloads
report prints), or ``Compute.placement_unknown`` when candidates disagree.

Only what the scheduler itself would decide is decided here:

- Slurm: the partition the job names, among the queues of that name; a job that
  names none gets the cluster's default partition (``Default=YES``, or the first
  ParallelCluster queue); when nothing says which one is default and the
  repository has exactly one GPU queue, that queue, and the reason says it was
  assumed. ``--constraint`` narrows a queue's compute resources by name or
  instance type.
- Kubernetes: a GPU pod lands on nodes that carry every label it selects, whose
  taints it tolerates and that have GPUs; one such node group (or several with
  the same machine) places it. Slurm capacity made of pods (a Slinky NodeSet)
  is placed the same way, so a Slurm job reaches its machine in two steps.

Candidates in several places of the repository (copies of one template in
two folders) are narrowed to those nearest the job's file first. When the
remaining candidates have different machines, the job is not placed: which
one runs it is not in the repository.
"""
from __future__ import annotations

import posixpath
from typing import Any, Iterable

#: gpulint.link.workloads.Compute, which imports this module (so it is not imported back, not even for types)
Compute = Any

__all__ = ["place", "capacity_of"]

#: labels every node has, whatever its group: selecting them says nothing about which group
_UNIVERSAL_LABELS = ("kubernetes.io/os", "kubernetes.io/arch", "beta.kubernetes.io/os", "beta.kubernetes.io/arch")
#: labels NVIDIA GPU Feature Discovery puts on every GPU node (a pod is only placed among GPU groups anyway)
_GPU_NODE_LABELS = ("nvidia.com/gpu.present", "nvidia.com/gpu.deploy.device-plugin")


def capacity_of(c: Compute) -> str | None:
    """Which scheduler places jobs on this target: slurm | kubernetes | ray | batch, or None (a job, not capacity)."""
    f = c.first("compute.target")
    return (f.attrs or {}).get("capacity_of") if f is not None else None


def _target(c: Compute) -> tuple[dict, dict]:
    f = c.first("compute.target")
    return (f.value or {}) if f is not None else {}, (f.attrs or {}) if f is not None else {}


def _instances(c: Compute) -> tuple[str, ...]:
    return tuple(sorted(str(f.value) for f in c.facts if f.kind == "compute.instance_type" and isinstance(f.value, str)))


def _shared_folders(path: str, other: str) -> int:
    """How many leading folders two files share."""
    a, b = posixpath.dirname(path).split("/"), posixpath.dirname(other).split("/")
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n] and a[n]:
        n += 1
    return n


def _near(path: str, other: str) -> bool:
    """Are two files in one folder tree: each at most one folder below the folders they share?"""
    shared = _shared_folders(path, other)
    depth = lambda p: len([x for x in posixpath.dirname(p).split("/") if x])  # noqa: E731
    return depth(path) - shared <= 1 and depth(other) - shared <= 1


def _nearest(cands: list, path: str, where=lambda c: c.path) -> list:
    """The candidates sharing the longest folder prefix with ``path`` (a job beside its cluster's config)."""
    best = max((_shared_folders(path, where(c)) for c in cands), default=0)
    return [c for c in cands if _shared_folders(path, where(c)) == best]


def _decide(job: Compute, cands: list[Compute], why: str) -> None:
    """Place ``job`` on the candidates when they are one machine; otherwise say which disagree."""
    if not cands:
        return
    near = _nearest(cands, job.path)
    machines = {_instances(c) for c in near}
    if len(near) == 1 or (len(machines) == 1 and machines != {()}):
        chosen = sorted(near, key=lambda c: c.id)[0]
        job.placed_on = chosen
        also = f" (and {len(near) - 1} identical definition(s))" if len(near) > 1 else ""
        job.placement = f"{why}: {chosen.id}{also}"
        return
    names = ", ".join(f"{c.id} ({'/'.join(_instances(c)) or 'no instance type'})" for c in sorted(near, key=lambda c: c.id)[:4])
    job.placement_unknown = f"{why}, but {len(near)} candidates differ: {names}"


def _project_cluster(job_path: str, queues: list[Compute]) -> tuple[list[Compute], str] | None:
    """The queues of the one cluster file under the job's nearest folder that holds any (never the repository's
    root, which holds every project's), and that folder; None when that folder holds several cluster files."""
    near = _nearest(queues, job_path)
    shared = _shared_folders(job_path, near[0].path) if near else 0
    if not shared or len({q.path for q in near}) != 1:
        return None
    return near, "/".join(posixpath.dirname(job_path).split("/")[:shared])


def _slurm(job: Compute, queues: list[Compute], assigned: dict[str, tuple[str, str]]) -> None:
    value, attrs = _target(job)
    asked = value.get("partition")
    constraint = attrs.get("constraint")

    def partition(q: Compute) -> str | None:
        return _target(q)[0].get("partition") or assigned.get(q.id, (None, ""))[0]

    if isinstance(asked, str) and asked.strip():
        wanted = {p.strip() for p in asked.split(",") if p.strip()}
        # a queue is also in partitions that span several (a Slinky chart's "all" over ALL NodeSets)
        cands = [q for q in queues if partition(q) in wanted or wanted & set(_target(q)[1].get("partitions") or ())]
        if len(cands) > 1 and job.has_gpu_hint():
            cands = [q for q in cands if q.has_gpu_hint()] or cands  # Slurm gives a GPU request only nodes with GPUs
        via = sorted({assigned[q.id][1] for q in cands if q.id in assigned})
        why = f"--partition {asked} is the queue" + (f" ({', '.join(via)} assigns it)" if via else "")
        if not cands:
            # a partition of a cluster the repository does not describe
            job.placement_unknown = (f"--partition {asked}: no queue of that name in the repository's cluster files "
                                     f"({_files(queues)})")
            return
    else:
        project = ""
        if len({q.path for q in queues}) > 1:
            # a job that names no partition runs on whichever cluster it is submitted to: with several cluster files
            # in the repository that is not stated (on awsome-distributed-training, HyperPod jobs had fallen onto a
            # ParallelCluster template's default queue: 7 wrong placements), unless the job's own project folder
            # holds exactly one (slinky-slurm/p5/ with its p5-values.yaml beside the p5 job)
            mine = _project_cluster(job.path, queues)
            if mine is None:
                job.placement_unknown = f"no --partition, and the repository defines several clusters ({_files(queues)})"
                return
            queues, folder = mine
            project = f"assumed: the only cluster file in the job's folder {folder}/ ({queues[0].path}); "
        # and only a cluster defined near the job (the same folder tree, or sibling folders such as cluster/ and
        # jobs/): a cluster template three folders away in a repository of examples is not where its jobs run
        near = [q for q in queues if _near(job.path, q.path)]
        if not near:
            job.placement_unknown = f"no --partition, and the only cluster file is not beside the job ({_files(queues)})"
            return
        queues = near
        cands = [q for q in queues if _target(q)[1].get("default")]
        why = f"{project}no --partition: the cluster's default partition"
        if not cands:
            gpu = [q for q in queues if q.has_gpu_hint()]
            parts = {partition(q) for q in gpu}
            if len(parts) != 1:
                shown = ", ".join(sorted(str(p or "unnamed") for p in parts)[:4]) or "none"
                job.placement_unknown = f"no --partition, no queue marked default, and GPU queues: {shown}"
                return
            cands = gpu
            why = (f"{project}no --partition, and no queue is marked default: assumed the "
                   f"{'cluster' if project else 'repository'}'s only GPU queue ({parts.pop() or 'unnamed'})")
    if isinstance(constraint, str) and constraint.strip():
        narrowed = [q for q in cands if _matches_constraint(q, constraint)]
        if narrowed:
            cands, why = narrowed, f"{why}, --constraint {constraint}"
    _decide(job, cands, why)


def _files(targets: list[Compute]) -> str:
    """The cluster files behind some targets, for a reason: the first three and how many more."""
    paths = sorted({t.path for t in targets})
    return ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")


def _matches_constraint(q: Compute, constraint: str) -> bool:
    """A feature expression's plain names (``p5.48xlarge``, ``gpu&efa``) against the queue's compute-resource name and
    instance types (ParallelCluster gives every node both as features)."""
    words = {w for w in constraint.replace("|", "&").replace(",", "&").split("&") if w and w[0] not in "[("}
    own = set(_instances(q)) | {q.target.rsplit("/", 1)[-1]}
    return bool(words & own)


def _tolerates(pod_tolerations: list, taints: list) -> bool:
    """Does a pod with these tolerations schedule onto nodes with these taints (NoSchedule / NoExecute only)?"""
    for t in taints:
        if str(t.get("effect") or "NoSchedule") == "PreferNoSchedule":
            continue
        ok = False
        for tol in pod_tolerations:
            key, op = tol.get("key"), tol.get("operator") or "Equal"
            if key is None and op == "Exists":
                ok = True  # tolerates everything
            elif key == t.get("key") and (op == "Exists" or str(tol.get("value")) == str(t.get("value"))) and \
                    (not tol.get("effect") or tol.get("effect") == t.get("effect")):
                ok = True
            if ok:
                break
        if not ok:
            return False
    return True


def _selects(selector: dict, labels: dict) -> bool:
    """Every label the pod selects is on the group's nodes with that value."""
    return all(str(labels.get(k)) == str(v) for k, v in selector.items())


def _pod(job: Compute, groups: list[Compute]) -> None:
    value, attrs = _target(job)
    if job.first("compute.instance_type") is not None or not any(
            f.kind == "compute.gpus_per_node" and isinstance(f.value, int) and f.value > 0 for f in job.facts):
        return  # the pod names its machine itself, or runs on no GPU
    # labels every node or every GPU node has are not a group's to state, and select none
    selector = {k: v for k, v in (attrs.get("node_selector") or {}).items()
                if k not in _UNIVERSAL_LABELS and k not in _GPU_NODE_LABELS}
    if not selector:
        # a pod that selects no group may land on node groups created outside the repository (judged wrong twice
        # on aws-do-hyperpod, where the only group the repository states was a template's parameter default)
        job.placement_unknown = ("it selects no node label, so it may run on node groups created outside the "
                                 f"repository (those the repository defines: {_files(groups)})")
        return
    tolerations = attrs.get("tolerations") or []
    provider = value.get("provider")
    cands = [g for g in groups if g.has_gpu_hint() and _selects(selector, _target(g)[1].get("labels") or {})
             and _tolerates(tolerations, _target(g)[1].get("taints") or [])
             and (provider is None or _target(g)[0].get("provider") in (None, provider))]
    shown = ", ".join(f"{k}={v}" for k, v in sorted(selector.items()))
    if not cands:
        job.placement_unknown = f"no GPU node group of the repository carries its nodeSelector ({shown}) and admits it"
        return
    _decide(job, cands, f"the GPU node group(s) whose labels match its nodeSelector ({shown})")


def _partition_maps(capacity: list[Compute], maps: list) -> dict[str, tuple[str, str]]:
    """Partitions a SageMaker HyperPod ``provisioning_parameters.json`` assigns to instance groups that do not name
    their own: ``{target id: (partition, where)}``, from the map nearest each group's cluster file."""
    out: dict[str, tuple[str, str]] = {}
    for c in capacity:
        value, _ = _target(c)
        resource = str(value.get("resource") or "")
        if value.get("partition") or not resource.startswith("InstanceGroup/"):
            continue
        group = resource.split("/", 1)[1]
        cands = [m for m in maps if isinstance(m.value, dict) and m.value.get("group") == group and m.value.get("partition")]
        if not cands:
            continue
        best = _nearest(cands, c.path, where=lambda m: m.loc.path)
        if len({m.value["partition"] for m in best}) == 1:
            out[c.id] = (best[0].value["partition"], best[0].loc.short())
    return out


def place(computes: dict[str, Compute], partition_maps: list = ()) -> None:
    """Set ``placed_on`` / ``placement`` / ``placement_unknown`` on every job the repository's capacity places
    (``partition_maps``: the ``cluster.partition_map`` facts of the repository)."""
    by_kind: dict[str, list[Compute]] = {}
    for c in computes.values():
        kind = capacity_of(c)
        if kind:
            by_kind.setdefault(kind, []).append(c)
    if not by_kind:
        return
    assigned = _partition_maps(by_kind.get("slurm", []), list(partition_maps))
    if by_kind.get("kubernetes"):
        # Slurm capacity that is itself pods (Slinky NodeSets: slurmd pods) runs on the node group its pods select:
        # placed first, so a job on the NodeSet reaches the machine in two steps
        for c in sorted(by_kind.get("slurm", []), key=lambda c: c.id):
            if _target(c)[1].get("node_selector"):
                _pod(c, by_kind["kubernetes"])
    for c in _jobs(computes.values()):
        source = _target(c)[0].get("source")
        if source == "slurm" and by_kind.get("slurm"):
            _slurm(c, by_kind["slurm"], assigned)
        elif source == "kubernetes" and by_kind.get("kubernetes"):
            _pod(c, by_kind["kubernetes"])


def _jobs(computes: Iterable[Compute]) -> list[Compute]:
    return sorted((c for c in computes if not capacity_of(c)), key=lambda c: c.id)
