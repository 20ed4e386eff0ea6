"""eksctl ``ClusterConfig`` (``apiVersion: eksctl.io/v1alpha5``): one capacity target per node group.

``managedNodeGroups`` (EKS managed node groups) and ``nodeGroups`` (self-managed
Auto Scaling groups) each become a target named after the group, placed by
Kubernetes: pods select its nodes by the group's ``labels`` plus the labels EKS
and eksctl put on every node of it, and must tolerate its ``taints``.

eksctl's own defaults are applied where the file leaves a value out, and said
so (``attrs.default``): ``m5.large`` when no instance type is given, sizes from
``desiredCapacity`` (``minSize`` and ``maxSize`` default to it, and all three to
2), on-demand capacity, EFA off. An ``instanceSelector`` or a managed group's
``launchTemplate`` decides the instance type elsewhere: no type is stated then.

This is the Kubernetes reader's business too by shape (``apiVersion`` and
``kind``), but that reader knows no ``ClusterConfig`` kind and emits nothing for
it, so the document is read here alone (tests pin that).
"""
from __future__ import annotations

from typing import Any

from gpulint.core.model import Fact
from gpulint.read.clusters.common import capacity
from gpulint.read.kubernetes import FactSink, as_dict, as_int, as_list
from gpulint.read.yamlnodes import Doc

DEFAULT_TYPE = "m5.large"  # eksctl's DefaultNodeType
DEFAULT_COUNT = 2          # eksctl's DefaultNodeCount: desiredCapacity, hence minSize and maxSize, when none is set
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def looks_like(doc: Doc, path: str) -> bool:
    data = doc.data
    return (isinstance(data, dict) and data.get("kind") == "ClusterConfig"
            and isinstance(data.get("apiVersion"), str) and data["apiVersion"].startswith("eksctl.io/"))


def read(docs: list[Doc], path: str) -> list[Fact]:
    out: list[Fact] = []
    for doc in docs:
        sink = FactSink(doc, path)
        name = as_dict(doc.data.get("metadata")).get("name")
        cluster = name if isinstance(name, str) and _plain(name) else None
        used: set[str] = set()
        for section, managed in (("managedNodeGroups", True), ("nodeGroups", False)):
            for i, group in enumerate(as_list(doc.data.get(section))):
                if isinstance(group, dict) and isinstance(group.get("name"), str) and _plain(group["name"]):
                    _group(sink, (section, i), group, managed, cluster, used)
        out += sink.facts
    return out


def _plain(value: Any) -> bool:
    """A literal string (not a placeholder a script substitutes later)."""
    return isinstance(value, str) and bool(value.strip()) and "${" not in value and "{{" not in value


def _group(sink: FactSink, at: tuple, g: dict, managed: bool, cluster: str | None, used: set) -> None:
    name = g["name"]
    target, n = name, 2
    while target in used:  # eksctl rejects duplicate names; a file that has them still gets both groups
        target, n = f"{name}#{n}", n + 1
    used.add(target)
    types = _instance_types(at, g, managed)
    market = _market(at, g, managed)
    labels = {k: v if isinstance(v, str) else str(v) for k, v in as_dict(g.get("labels")).items()
              if isinstance(k, str) and isinstance(v, (str, int)) and not isinstance(v, bool)}
    labels["alpha.eksctl.io/nodegroup-name"] = name
    if cluster:
        labels["alpha.eksctl.io/cluster-name"] = cluster
    if managed:
        labels["eks.amazonaws.com/nodegroup"] = name
        if market:  # EKS's label: a targeted reservation is ON_DEMAND capacity, a capacity block its own type
            block = market[0] == "reserved" and market[1][-1] == "marketType"
            labels["eks.amazonaws.com/capacityType"] = ("SPOT" if market[0] == "spot" else
                                                        "CAPACITY_BLOCK" if block else "ON_DEMAND")
    if len(types) == 1 and _plain(types[0][0]):
        labels["node.kubernetes.io/instance-type"] = types[0][0]
    attrs: dict = {"managed": managed}
    desired = as_int(g.get("desiredCapacity"))
    if desired is not None:
        attrs["desired"] = desired
    zones = as_list(g.get("availabilityZones"))
    if zones and all(_plain(z) for z in zones):
        attrs["zones"] = list(zones)
    if isinstance(g.get("instanceSelector"), dict) and g["instanceSelector"]:
        attrs["instance_selector"] = g["instanceSelector"]
    min_nodes, max_nodes = _sizes(at, g)
    capacity(sink, target, source="eksctl", provider="aws",
             resource=f"{'ManagedNodeGroup' if managed else 'NodeGroup'}/{name}", at=at,
             capacity_of="kubernetes", instance_types=types, max_nodes=max_nodes, min_nodes=min_nodes,
             market=market, efa=_efa(at, g), labels=labels, taints=_taints(g.get("taints")),
             cluster=cluster, attrs=attrs)


def _instance_types(at: tuple, g: dict, managed: bool) -> list[tuple]:
    if isinstance(g.get("instanceType"), str) and g["instanceType"] != "mixed":  # "mixed": the distribution's list
        return [(g["instanceType"], at + ("instanceType",))]
    lists = [("instanceTypes",)] if managed else [("instancesDistribution", "instanceTypes")]
    for key in lists:
        node: Any = g
        for part in key:
            node = as_dict(node).get(part)
        if isinstance(node, list) and node:
            return [(t, at + key + (i,)) for i, t in enumerate(node)]
    decided_elsewhere = "instanceSelector" in g or "launchTemplate" in g or "instanceType" in g or "instancesDistribution" in g
    return [] if decided_elsewhere else [(DEFAULT_TYPE, at, {"default": True})]


def _market(at: tuple, g: dict, managed: bool) -> tuple | None:
    mo = as_dict(g.get("instanceMarketOptions"))
    if isinstance(mo.get("marketType"), str) and mo["marketType"].lower() == "capacity-block":
        return ("reserved", at + ("instanceMarketOptions", "marketType"))
    cr = as_dict(g.get("capacityReservation"))
    if as_dict(cr.get("capacityReservationTarget")):
        return ("reserved", at + ("capacityReservation", "capacityReservationTarget"))
    if managed:
        spot = g.get("spot")
        if spot is True:
            return ("spot", at + ("spot",))
        if spot is False:
            return ("on-demand", at + ("spot",))
        return ("on-demand", at, {"default": True}) if spot is None else None
    dist = g.get("instancesDistribution")
    if not isinstance(dist, dict):
        return ("on-demand", at, {"default": True})
    dat = at + ("instancesDistribution",)
    # the Auto Scaling group's defaults: everything above a base of 0 on-demand, 100 %
    pct = as_int(dist.get("onDemandPercentageAboveBaseCapacity", 100))
    base = as_int(dist.get("onDemandBaseCapacity", 0))
    if pct is None or base is None:
        return None
    where = dat + ("onDemandPercentageAboveBaseCapacity",) if "onDemandPercentageAboveBaseCapacity" in dist else dat
    split = {"on_demand_percentage_above_base_capacity": pct, "on_demand_base_capacity": base,
             "mixed": 0 < pct < 100 or (pct == 0 and base > 0)}
    return ("on-demand" if pct >= 100 else "spot", where, split)


def _sizes(at: tuple, g: dict) -> tuple[tuple | None, tuple | None]:
    """(min_nodes, max_nodes) as eksctl settles them: minSize and maxSize default to desiredCapacity, all to 2."""
    def pick(*keys):
        for key in keys:
            if key in g:
                v = as_int(g[key])
                return None if v is None else (v, at + (key,), {} if key == keys[0] else {"from": key})
        return (DEFAULT_COUNT, at, {"default": True})

    low = pick("minSize", "desiredCapacity")
    high = pick("maxSize", "desiredCapacity", "minSize")
    if high is not None and high[0] == 0 and "maxSize" not in g:
        high = (1, high[1], {"default": True})  # eksctl's DefaultMaxSize: an ASG needs a maximum of at least 1
    return low, high


def _efa(at: tuple, g: dict) -> tuple:
    v = g.get("efaEnabled")
    if v is True:
        return (1, at + ("efaEnabled",), {"all": True})  # eksctl attaches an EFA interface on every network card
    if v is False:
        return (0, at + ("efaEnabled",), {})
    return (0, at, {"absent": True}) if v is None else (None, at, {})


def _taints(value: Any) -> list[dict]:
    """``[{key, value, effect}]``, or the older map form ``{key: "value:Effect"}`` eksctl still reads."""
    out: list[dict] = []
    if isinstance(value, dict):
        for key, ve in value.items():
            if isinstance(key, str) and isinstance(ve, str):
                parts = ve.split(":")  # eksctl: "<value>:<effect>" or "<effect>"
                val, effect = ("", parts[0]) if len(parts) == 1 else (parts[0], parts[1]) if len(parts) == 2 else ("", "")
                if effect in _EFFECTS:
                    out.append({"key": key, "value": val, "effect": effect})
    for t in as_list(value):
        if isinstance(t, dict) and isinstance(t.get("key"), str) and t.get("effect") in _EFFECTS:
            val = t.get("value", "")
            if isinstance(val, (str, int)) and not isinstance(val, bool):
                out.append({"key": t["key"], "value": str(val), "effect": t["effect"]})
    return out
