"""What every cluster format says about one piece of capacity, said one way.

``capacity(sink, ...)`` emits the facts of one compute target that is capacity
(a queue's compute resource, a node group, an instance group ...):

- ``compute.target`` with ``source`` the format (``parallelcluster``, ``eksctl``,
  ``hyperpod``, ``batch``, ``toolkit``, ``slurm.conf``, ``ray`` ...), ``resource``
  ``"<Kind>/<name>"``, ``partition`` the Slurm partition or queue it serves
  (jobs name it with ``--partition``), and attrs:
  ``capacity_of`` "slurm" | "kubernetes" | "ray" | "batch" | None (which
  scheduler places jobs on it), ``labels`` (node labels a pod selects),
  ``taints`` (``[{key, value, effect}]`` a pod must tolerate), ``default``
  (the partition jobs without ``--partition`` get), ``cluster`` (its name);
- ``compute.instance_type`` (one fact per allowed type; ``alternatives`` when
  several), ``compute.node_count`` (the most nodes it may run),
  ``compute.min_nodes`` (the nodes it keeps when idle), ``compute.capacity``
  (spot | on-demand | reserved), ``compute.efa`` (``attrs.all``: every EFA
  interface the instance has is attached; 0: RDMA explicitly off, with
  ``attrs.absent`` when the format's default says so), ``compute.gpus_per_node``
  where the format states it.

Values that are not literal (a CloudFormation ``!Ref``, a ``${var}``) are not
guessed: the fact is left out and the target says less. A value pair may carry a
third element, the attrs of its fact (``(2, at, {"default": True})`` for a
count the format's default decides), so a reader can say where a value came from.
"""
from __future__ import annotations

from typing import Any, Callable

from gpulint.core.model import Fact
from gpulint.read.kubernetes import FactSink, as_int

__all__ = ["capacity", "read_each", "Where"]

#: a key path into the document (what FactSink positions facts by)
Where = tuple


def _literal(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool)) and not (isinstance(value, str) and ("${" in value or "{{" in value))


def _extra(pair: tuple) -> dict:
    """The attrs a value pair carries as its optional third element."""
    return dict(pair[2]) if len(pair) > 2 and isinstance(pair[2], dict) else {}


def capacity(sink: FactSink, target: str, *, source: str, provider: str | None, resource: str, at: Where,
             capacity_of: str | None, partition: str | None = None, role: str | None = None,
             instance_types: list[tuple[Any, Where]] = (), max_nodes: tuple[Any, Where] | None = None,
             min_nodes: tuple[Any, Where] | None = None, market: tuple[str | None, Where] | None = None,
             efa: tuple[int | None, Where, dict] | None = None, gpus_per_node: tuple[Any, Where] | None = None,
             labels: dict | None = None, taints: list | None = None, default: bool = False,
             cluster: str | None = None, attrs: dict | None = None) -> None:
    """Emit one capacity target's facts (see the module docstring for what each means)."""
    tattrs: dict = {"capacity_of": capacity_of}
    if labels:
        tattrs["labels"] = {str(k): str(v) for k, v in labels.items() if _literal(v)}
    if taints:
        tattrs["taints"] = [t for t in taints if isinstance(t, dict)]
    if default:
        tattrs["default"] = True
    if cluster:
        tattrs["cluster"] = cluster
    tattrs.update(attrs or {})
    sink.add("compute.target", {"source": source, "provider": provider, "resource": resource, "role": role,
                                "partition": partition}, at, target, attrs=tattrs)
    types = [(str(p[0]).strip(), p[1], _extra(p)) for p in instance_types
             if isinstance(p[0], str) and _literal(p[0]) and p[0].strip()]
    for name, w, extra in types:
        sink.add("compute.instance_type", name, w, target,
                 attrs={**({"alternatives": True} if len(types) > 1 else {}), **extra})
    for kind, pair in (("compute.node_count", max_nodes), ("compute.min_nodes", min_nodes),
                       ("compute.gpus_per_node", gpus_per_node)):
        if pair is not None and as_int(pair[0]) is not None:
            sink.add(kind, as_int(pair[0]), pair[1], target, attrs=_extra(pair))
    if market is not None and market[0] in ("spot", "on-demand", "reserved"):
        sink.add("compute.capacity", market[0], market[1], target, attrs=_extra(market))
    if efa is not None and (efa[0] is None or as_int(efa[0]) is not None):
        value, w, eattrs = efa
        if value is not None:
            sink.add("compute.efa", as_int(value), w, target, attrs=dict(eattrs))


def read_each(docs: list, path: str, read_doc: Callable[[Any, str, set], list[Fact]]) -> list[Fact]:
    """``read_doc(doc, path, used)`` for every document, with target names unique across the file's documents
    (``used``); an odd shape in one document loses that document's facts only."""
    out: list[Fact] = []
    used: set[str] = set()
    for doc in docs:
        try:
            out += read_doc(doc, path, used)
        except (TypeError, ValueError, AttributeError):
            continue
    return out
