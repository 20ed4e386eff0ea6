"""Ray cluster launcher configs (``ray up cluster.yaml``) -> one capacity target per node type.

The file names a cloud (``provider.type``), a cluster-wide cap on workers (``max_workers``), and its node types
(``available_node_types``: each a ``node_config`` passed to the cloud's API, the ``resources`` it advertises to the
autoscaler, ``min_workers``/``max_workers``); ``head_node_type`` names the type the head runs on. Older files give
one ``head_node`` and one ``worker_nodes`` node config with the cluster's ``min_workers``/``max_workers``; Ray reads
those as the node types ``ray.head.default`` and ``ray.worker.default``, and so does this module.

What a node is:

- AWS: ``node_config.InstanceType`` (EC2 ``RunInstances`` parameters), spot with
  ``InstanceMarketOptions.MarketType: spot``, EFA with ``NetworkInterfaces[].InterfaceType: efa``;
- GCP: ``node_config.machineType`` plus ``guestAccelerators`` (the GPUs are attached, not implied by the machine
  type), spot with ``scheduling.preemptible: true`` or ``provisioningModel: SPOT`` (``scheduling`` is a mapping or,
  in Ray's own examples, a list of one-key mappings);
- Azure: ``node_config.azure_arm_parameters.vmSize``, spot with ``priority: Spot``;
- ``resources.GPU``: the GPUs the node advertises (what Ray schedules ``num_gpus`` on), when stated.

Ray jobs are submitted to the running cluster separately (``ray job submit``), so the file's setup and start
commands launch no workload and are not read.
"""
from __future__ import annotations

from typing import Any

from gpulint.core.model import Fact
from gpulint.read.clusters.common import capacity, read_each
from gpulint.read.kubernetes import FactSink, as_dict, as_int, as_list, unique_target
from gpulint.read.yamlnodes import Doc

_PROVIDERS = {"aws": "aws", "gcp": "gcp", "azure": "azure"}
#: the node type names Ray gives the legacy head_node / worker_nodes configs
_LEGACY = (("head_node", "ray.head.default"), ("worker_nodes", "ray.worker.default"))


def looks_like(doc: Doc, path: str) -> bool:
    data = doc.data
    if not isinstance(data, dict) or "apiVersion" in data or "kind" in data:
        return False
    if not isinstance(as_dict(data.get("provider")).get("type"), str):
        return False
    return isinstance(data.get("available_node_types"), dict) or any(
        isinstance(data.get(k), dict) for k, _ in _LEGACY)


def read(docs: list[Doc], path: str) -> list[Fact]:
    return read_each(docs, path, _read_doc)


def _node_types(doc: Doc) -> list[tuple[str, tuple, tuple, str | None]]:
    """``(name, path of the node type, path of its node_config, legacy key)`` per node type."""
    types = doc.get(("available_node_types",))
    if isinstance(types, dict):
        return [(str(name), ("available_node_types", name), ("available_node_types", name, "node_config"), None)
                for name, spec in types.items() if isinstance(spec, dict) and isinstance(name, (str, int))]
    return [(name, (key,), (key,), key) for key, name in _LEGACY if isinstance(doc.get((key,)), dict)]


def _read_doc(doc: Doc, path: str, used: set) -> list[Fact]:
    sink = FactSink(doc, path)
    data = doc.data
    kind = str(as_dict(data.get("provider")).get("type")).strip().lower()
    provider = _PROVIDERS.get(kind)
    region = _region(as_dict(data.get("provider")))
    cluster = data.get("cluster_name") if isinstance(data.get("cluster_name"), str) else None
    cap = as_int(data.get("max_workers"))
    head = data.get("head_node_type")
    for name, tpath, cpath, legacy in _node_types(doc):
        spec = as_dict(doc.get(tpath))
        config = as_dict(doc.get(cpath))
        is_head = name == head if legacy is None else legacy == "head_node"
        # the legacy form keeps the worker counts at the top level
        max_nodes, min_nodes = _counts(doc, () if legacy == "worker_nodes" else tpath, is_head, cap)
        attrs: dict = {"head": True} if is_head else {}
        if region:
            attrs["region"] = region
        target = unique_target(name, used)
        capacity(sink, target, source="ray", provider=provider, resource=f"RayNodeType/{name}", at=tpath,
                 capacity_of="ray", cluster=cluster, attrs=attrs,
                 instance_types=_instance_types(config, cpath, kind),
                 max_nodes=max_nodes, min_nodes=min_nodes, market=_market(config, cpath, kind),
                 efa=_efa(config, cpath) if kind == "aws" and isinstance(doc.get(cpath), dict) else None,
                 gpus_per_node=_gpus(doc, tpath, spec, config, cpath, legacy))
        if kind == "gcp":
            _accelerators(sink, config, cpath, target)
    return sink.facts


def _region(provider: dict) -> str | None:
    for key in ("region", "location", "availability_zone"):
        v = provider.get(key)
        if isinstance(v, str) and v and "$" not in v and "{" not in v:
            return v
    return None


def _counts(doc: Doc, at: tuple, is_head: bool, cap: int | None):
    """``(max_nodes, min_nodes)`` pairs for capacity(): the most nodes of the type and the floor it keeps.

    A worker type's ``max_workers`` defaults to the cluster's, and the cluster's caps every type's (Ray launches no
    more workers in all than the top-level ``max_workers``); its ``min_workers`` defaults to 0 and is not stated
    then. The head always runs: one node, kept when idle, plus any workers of its own type."""
    spec = as_dict(doc.get(at))
    own_max, own_min = as_int(spec.get("max_workers")), as_int(spec.get("min_workers"))
    if is_head:
        extra_max = own_max if own_max is not None else 0
        extra_min = own_min if own_min is not None else 0
        max_at = at + ("max_workers",) if own_max else at
        min_at = at + ("min_workers",) if own_min else at
        return (1 + extra_max, max_at), (1 + extra_min, min_at)
    max_nodes = None
    if own_max is not None and (cap is None or own_max <= cap):
        max_nodes = (own_max, at + ("max_workers",))
    elif cap is not None and ("max_workers" not in spec or own_max is not None):
        max_nodes = (cap, ("max_workers",))
    min_nodes = (own_min, at + ("min_workers",)) if own_min is not None else None
    if min_nodes is not None and max_nodes is not None and min_nodes[0] > max_nodes[0]:
        min_nodes = (max_nodes[0], min_nodes[1])  # max_workers "takes precedence over min_workers"
    return max_nodes, min_nodes


def _instance_types(config: dict, cpath: tuple, kind: str) -> list[tuple[Any, tuple]]:
    if kind == "aws" and "InstanceType" in config:
        return [(config["InstanceType"], cpath + ("InstanceType",))]
    if kind == "gcp" and "machineType" in config:
        # the API takes a bare name or a zone's URL path ("zones/us-west1-b/machineTypes/a2-highgpu-1g")
        mt = config["machineType"]
        return [(mt.rsplit("/", 1)[-1] if isinstance(mt, str) else mt, cpath + ("machineType",))]
    arm = as_dict(config.get("azure_arm_parameters"))
    if kind == "azure" and "vmSize" in arm:
        return [(arm["vmSize"], cpath + ("azure_arm_parameters", "vmSize"))]
    return []


def _market(config: dict, cpath: tuple, kind: str) -> tuple[str | None, tuple] | None:
    if kind == "aws":
        mt = as_dict(config.get("InstanceMarketOptions")).get("MarketType")
        if isinstance(mt, str) and mt.lower() == "spot":
            return "spot", cpath + ("InstanceMarketOptions", "MarketType")
    elif kind == "gcp":
        sched = config.get("scheduling")
        items = [(cpath + ("scheduling",), sched)] if isinstance(sched, dict) else \
            [(cpath + ("scheduling", i), s) for i, s in enumerate(as_list(sched)) if isinstance(s, dict)]
        for at, item in items:
            if item.get("preemptible") is True:
                return "spot", at + ("preemptible",)
            model = item.get("provisioningModel")
            if isinstance(model, str) and model.upper() == "SPOT":
                return "spot", at + ("provisioningModel",)
    elif kind == "azure":
        prio = as_dict(config.get("azure_arm_parameters")).get("priority")
        if isinstance(prio, str) and prio.lower() == "spot":
            return "spot", cpath + ("azure_arm_parameters", "priority")
    return None


def _efa(config: dict, cpath: tuple) -> tuple[int | None, tuple, dict]:
    """EFA interfaces the node config attaches; none (the EC2 default) when it lists no EFA interface."""
    nics = config.get("NetworkInterfaces")
    efa = [i for i, n in enumerate(as_list(nics)) if isinstance(n, dict)
           and str(n.get("InterfaceType", "")).lower() in ("efa", "efa-only")]
    if efa:
        return len(efa), cpath + ("NetworkInterfaces", efa[0], "InterfaceType"), {}
    if nics is not None and not isinstance(nics, list):
        return None, cpath, {}  # not a literal list: unknown
    return 0, cpath, {"absent": True}


def _gpus(doc: Doc, tpath: tuple, spec: dict, config: dict, cpath: tuple, legacy: str | None):
    """GPUs per node: the ``resources.GPU`` the node type advertises, else the GCP accelerators it attaches."""
    gpu = as_dict(spec.get("resources")).get("GPU") if legacy is None else None
    if gpu is not None:
        return (gpu, tpath + ("resources", "GPU")) if as_int(gpu) is not None else None
    accs = [(i, a) for i, a in enumerate(as_list(config.get("guestAccelerators"))) if isinstance(a, dict)]
    counts = [as_int(a.get("acceleratorCount", 1)) for _, a in accs]
    if accs and None not in counts:
        return sum(counts), cpath + ("guestAccelerators", accs[0][0])
    return None


def _accelerators(sink: FactSink, config: dict, cpath: tuple, target: str) -> None:
    """GCP ``guestAccelerators``: the GPU the machine type does not imply (an N1 with T4s)."""
    accs = [(i, a) for i, a in enumerate(as_list(config.get("guestAccelerators"))) if isinstance(a, dict)]
    for i, acc in accs:
        kind = acc.get("acceleratorType")
        if not isinstance(kind, str) or "$" in kind or "{" in kind:
            continue
        sink.add("compute.accelerator", {"type": kind.rsplit("/", 1)[-1], "count": as_int(acc.get("acceleratorCount", 1))},
                 cpath + ("guestAccelerators", i, "acceleratorType"), target,
                 attrs={"alternatives": True} if len(accs) > 1 else {})
