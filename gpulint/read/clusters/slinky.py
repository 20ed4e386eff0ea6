"""Slinky (SchedMD's Slurm on Kubernetes) NodeSets -> one Slurm capacity target per NodeSet.

A NodeSet is a set of ``slurmd`` pods: each pod is one Slurm node, and the pods run on the Kubernetes cluster's
nodes. So a NodeSet is Slurm capacity (jobs name it with ``--partition``) whose machine is the Kubernetes node
group its pods are scheduled on (gpulint.link.placement places the NodeSet like a pod, then a job on the NodeSet).
It is written two ways:

- the ``NodeSet`` custom resource (``slinky.slurm.net/v1alpha1`` / ``v1beta1``): ``spec.replicas``, the ``slurmd``
  container's resources (``spec.slurmd.resources`` in v1beta1, a container of ``spec.template.spec`` in v1alpha1),
  the pod template's ``nodeSelector`` and ``tolerations``;
- the values of SchedMD's ``slurm`` Helm chart, which renders one NodeSet per entry: ``nodesets.<name>`` (chart
  0.4 and later: ``enabled``, ``replicas``, ``slurmd.resources``, ``podSpec.nodeSelector``/``tolerations``,
  ``partition.enabled``) or the list ``compute.nodesets`` (chart 0.1-0.3: ``name``, ``replicas``, ``resources``,
  ``nodeSelector``, ``tolerations``, ``partition``).

The partition is the NodeSet's own (its name, when ``partition.enabled`` is not false); the chart's ``partitions``
(``all`` over ``ALL`` NodeSets, ``Default: "YES"``) add names a job may give (``attrs.partitions``) and the
default. Its GPUs per node are
the slurmd container's ``nvidia.com/gpu`` request; its EFA interfaces, the ``vpc.amazonaws.com/efa`` it requests
(a pod uses only the EFA devices it requests, whatever its node has). A nodeSelector on an instance-type label
names the machine. Replicas may be scaled by the operator from the Slurm queue, so they are the most nodes, not a
floor (and 0, a NodeSet scaled from the queue, says nothing about its size). Values that are Helm templates are not guessed.
"""
from __future__ import annotations

from typing import Any

from gpulint.core.model import Fact
from gpulint.read.clusters.common import capacity, read_each
from gpulint.read.kubernetes import FactSink, as_dict, as_int, as_list, unique_target
from gpulint.read.yamlnodes import Doc

_API = "slinky.slurm.net/"
_INSTANCE_LABELS = ("node.kubernetes.io/instance-type", "beta.kubernetes.io/instance-type")
_GPU = ("nvidia.com/gpu", "amd.com/gpu")
_EFA = "vpc.amazonaws.com/efa"


def looks_like(doc: Doc, path: str) -> bool:
    data = doc.data
    if not isinstance(data, dict):
        return False
    if data.get("kind") == "NodeSet":
        return str(data.get("apiVersion", "")).startswith(_API)
    if "apiVersion" in data or "kind" in data:
        return False
    return bool(_chart_nodesets(doc))


def read(docs: list[Doc], path: str) -> list[Fact]:
    return read_each(docs, path, _read_doc)


class _NodeSet:
    """Where one NodeSet's parts are written: ``slurmd`` the container, ``pod`` the pod spec whose nodeSelector and
    tolerations place it, unless they are given apart (None: not stated)."""

    def __init__(self, name: str, at: tuple, replicas: tuple, slurmd: tuple | None, pod: tuple | None,
                 partition: tuple, resource: str, selector: tuple | None = None, tolerations: tuple | None = None):
        self.name, self.at, self.replicas, self.slurmd = name, at, replicas, slurmd
        self.partition, self.resource = partition, resource
        self.selector = selector or ((pod + ("nodeSelector",)) if pod else None)
        self.tolerations = tolerations or ((pod + ("tolerations",)) if pod else None)


def _chart_nodesets(doc: Doc) -> list[_NodeSet]:
    """The NodeSets of the slurm chart's values: entries with a slurmd container or a partition (what no other chart's
    ``nodesets`` key has)."""
    out: list[_NodeSet] = []
    sets = doc.get(("nodesets",))
    if isinstance(sets, dict):
        for name, spec in sets.items():
            if isinstance(spec, dict) and isinstance(name, str) and ("slurmd" in spec or "partition" in spec) \
                    and spec.get("enabled", True) is not False:
                at = ("nodesets", name)
                out.append(_NodeSet(name, at, at + ("replicas",), at + ("slurmd",), at + ("podSpec",),
                                    at + ("partition",), f"NodeSet/{name}"))
    for i, spec in enumerate(as_list(as_dict(doc.get(("compute",))).get("nodesets"))):
        if isinstance(spec, dict) and isinstance(spec.get("name"), str) and "partition" in spec \
                and spec.get("enabled", True) is not False:
            at = ("compute", "nodesets", i)
            out.append(_NodeSet(spec["name"], at, at + ("replicas",), at, None, at + ("partition",),
                                f"NodeSet/{spec['name']}", at + ("nodeSelector",), at + ("tolerations",)))
    return out


def _resource_nodeset(doc: Doc) -> list[_NodeSet]:
    name = str(as_dict(doc.get(("metadata",))).get("name") or "nodeset")
    if isinstance(doc.get(("spec", "slurmd")), dict):
        slurmd: tuple | None = ("spec", "slurmd")
    else:
        containers = as_list(doc.get(("spec", "template", "spec", "containers")))
        idx = [i for i, c in enumerate(containers) if isinstance(c, dict) and
               (c.get("name") == "slurmd" or len(containers) == 1)]
        slurmd = ("spec", "template", "spec", "containers", idx[0]) if idx else None
    return [_NodeSet(name, (), ("spec", "replicas"), slurmd, ("spec", "template", "spec"), ("spec", "partition"),
                     f"NodeSet/{name}")]


def _chart_partitions(doc: Doc) -> list[tuple[str, list[str], bool]]:
    """``(name, NodeSet names or ["ALL"], default)`` per enabled partition of the chart's values (``partitions.<name>``
    in chart 0.4+, the ``compute.partitions`` list before)."""
    found = as_dict(doc.get(("partitions",)))
    items = [(k, v) for k, v in found.items() if isinstance(k, str) and isinstance(v, dict)]
    items += [(v.get("name"), v) for v in as_list(as_dict(doc.get(("compute",))).get("partitions"))
              if isinstance(v, dict) and isinstance(v.get("name"), str)]
    out = []
    for name, spec in items:
        if spec.get("enabled", True) is False:
            continue
        conf = {**as_dict(spec.get("config")), **as_dict(spec.get("configMap"))}
        default = str(conf.get("Default", "")).upper() == "YES"
        out.append((name, [str(n) for n in as_list(spec.get("nodesets")) if isinstance(n, str)], default))
    return out


def _read_doc(doc: Doc, path: str, used: set) -> list[Fact]:
    sink = FactSink(doc, path)
    resource = doc.data.get("kind") == "NodeSet"
    sets = _resource_nodeset(doc) if resource else _chart_nodesets(doc)
    shared = [] if resource else _chart_partitions(doc)
    for ns in sets:
        part = doc.get(ns.partition)
        partition = None if isinstance(part, dict) and part.get("enabled") is False else ns.name
        # partitions over several NodeSets ("all" over ALL): a job naming one runs on any of their NodeSets
        also = [(name, default) for name, members, default in shared if "ALL" in members or ns.name in members]
        selector = {str(k): v for k, v in as_dict(doc.get(ns.selector) if ns.selector else None).items()
                    if isinstance(v, (str, int, bool))}
        tolerations = [{k: t.get(k) for k in ("key", "operator", "value", "effect") if t.get(k) is not None}
                       for t in as_list(doc.get(ns.tolerations) if ns.tolerations else None) if isinstance(t, dict)]
        attrs: dict = {"partitions": sorted({n for n, _ in also})} if also else {}
        if selector:
            attrs["node_selector"] = {k: str(v) for k, v in selector.items()}
        if tolerations:
            attrs["tolerations"] = tolerations
        replicas = doc.get(ns.replicas)
        target = unique_target(ns.name, used)
        efa = _requests(doc, ns, (_EFA,))
        capacity(sink, target, source="slinky", provider="aws" if efa else None,
                 resource=ns.resource, at=ns.at, capacity_of="slurm", partition=partition,
                 instance_types=[(selector[k], ns.selector + (k,)) for k in _INSTANCE_LABELS if k in selector][:1],
                 max_nodes=(replicas, ns.replicas) if (as_int(replicas) or 0) > 0 else None,
                 gpus_per_node=_requests(doc, ns, _GPU),
                 efa=(as_int(efa[0]), efa[1], {}) if efa is not None and as_int(efa[0]) is not None else None, attrs=attrs,
                 default=any(d for _, d in also))
    return sink.facts


def _requests(doc: Doc, ns: _NodeSet, names: tuple) -> tuple[Any, tuple] | None:
    """``(amount, where)`` of the first of ``names`` the slurmd container requests; limits win over requests."""
    if ns.slurmd is None:
        return None
    res = as_dict(doc.get(ns.slurmd + ("resources",)))
    for section in ("limits", "requests"):
        for name in names:
            if name in as_dict(res.get(section)):
                return as_dict(res.get(section))[name], ns.slurmd + ("resources", section, name)
    return None
