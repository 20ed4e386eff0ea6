"""GCP Cluster Toolkit (formerly HPC Toolkit) blueprints: Slurm partitions and GKE node pools.

::

    blueprint_name: ml
    vars: {project_id: p, spot: true}
    deployment_groups:
    - group: primary
      modules:
      - id: a3_nodeset
        source: community/modules/compute/schedmd-slurm-gcp-v6-nodeset
        settings: {machine_type: a3-highgpu-8g, node_count_static: 2, node_count_dynamic_max: 6}
      - id: a3_partition
        source: community/modules/compute/schedmd-slurm-gcp-v6-partition
        use: [a3_nodeset]
        settings: {partition_name: a3, is_default: true}
      - id: gpu_pool
        source: modules/compute/gke-node-pool
        settings: {machine_type: g2-standard-24, spot: true, autoscaling_total_max_nodes: 4}

A Slurm target is one nodeset (v6 ``schedmd-slurm-gcp-v6-nodeset``, v5 ``schedmd-slurm-gcp-v5-node-group``,
or an early v5 partition that carries its own ``machine_type``) in the partition that ``use``\\ s it:
target ``"<partition id>/<nodeset id>"``, partition ``partition_name``, default by ``is_default`` or
``partition_conf.Default``. A GKE node pool is a Kubernetes target with the labels GKE puts on its nodes.

The module defaults are the modules' own (``variables.tf`` of each): ``machine_type`` c2-standard-60
(reported with ``attrs.default``), ``node_count_static`` 0 and ``node_count_dynamic_max`` 10 (the most
nodes is their sum), spot/preemptible off. Blueprint semantics (examples/README.md, "Deployment
Variables"): a setting a module does not give and a deployment variable of the same name sets is that
variable; ``$(vars.x)`` is replaced by a literal variable. Other expressions (``$(module.output)``,
``((terraform))``) are unknown and their facts are left out; so is a partition name a separate deployment
file supplies.
"""
from __future__ import annotations

import re
from typing import Any

from gpulint.core.model import Fact
from gpulint.read.clusters.common import capacity
from gpulint.read.kubernetes import FactSink, as_dict, as_int, as_list
from gpulint.read.yamlnodes import Doc

SOURCE = "toolkit"
DEFAULT_MACHINE = "c2-standard-60"  # schedmd-slurm-gcp-v6-nodeset, v5-node-group and gke-node-pool variables.tf
_NODESETS = ("schedmd-slurm-gcp-v6-nodeset", "schedmd-slurm-gcp-v5-node-group")
_PARTITIONS = ("schedmd-slurm-gcp-v6-partition", "schedmd-slurm-gcp-v5-partition")
_EFFECT = {"NO_SCHEDULE": "NoSchedule", "PREFER_NO_SCHEDULE": "PreferNoSchedule", "NO_EXECUTE": "NoExecute"}
_VAR = re.compile(r"\$\(vars\.([A-Za-z_][\w-]*)\)")
UNKNOWN = object()


def looks_like(doc: Doc, path: str) -> bool:
    data = doc.data
    return (isinstance(data, dict) and isinstance(data.get("deployment_groups"), list)
            and ("blueprint_name" in data or "vars" in data))


def _kind(source: Any) -> str:
    """``github.com/.../cluster-toolkit//community/modules/compute/gke-node-pool?ref=v1.40.0`` -> ``gke-node-pool``."""
    return source.split("?")[0].rstrip("/").rsplit("/", 1)[-1] if isinstance(source, str) else ""


class _Blueprint:
    def __init__(self, doc: Doc, path: str):
        self.doc, self.sink = doc, FactSink(doc, path)
        self.vars = as_dict(doc.data.get("vars"))
        self.modules: dict[str, tuple[dict, tuple]] = {}
        for gi, group in enumerate(as_list(doc.data.get("deployment_groups"))):
            for mi, mod in enumerate(as_list(as_dict(group).get("modules"))):
                if isinstance(mod, dict) and isinstance(mod.get("id"), str):
                    self.modules.setdefault(mod["id"], (mod, ("deployment_groups", gi, "modules", mi)))

    def resolve(self, value: Any, depth: int = 0) -> Any:
        """A literal, with ``$(vars.x)`` replaced; UNKNOWN for any other expression."""
        if isinstance(value, str):
            whole = _VAR.fullmatch(value.strip())
            if whole:
                name = whole.group(1)
                return self.resolve(self.vars[name], depth + 1) if name in self.vars and depth < 8 else UNKNOWN
            text = value
            for name in _VAR.findall(value):
                got = self.resolve(self.vars.get(name, UNKNOWN), depth + 1) if depth < 8 else UNKNOWN
                if got is UNKNOWN or isinstance(got, (dict, list)) or got is None:
                    return UNKNOWN
                text = text.replace(f"$(vars.{name})", str(got).lower() if isinstance(got, bool) else str(got))
            return UNKNOWN if "$(" in text or "((" in text else text
        if isinstance(value, list):  # containers keep their shape: an unknown leaf stays UNKNOWN
            return [self.resolve(v, depth) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v, depth) for k, v in value.items()}
        return value

    def setting(self, mod: dict, at: tuple, key: str) -> tuple[Any, tuple] | None:
        """``(value, where)`` of a setting: the module's, else a deployment variable of the same name; None if
        neither gives it."""
        settings = as_dict(mod.get("settings"))
        if key in settings:
            return self.resolve(settings[key]), at + ("settings", key)
        if key in self.vars:
            return self.resolve(self.vars[key]), ("vars", key)
        return None


def read(docs: list[Doc], path: str) -> list[Fact]:
    out: list[Fact] = []
    for doc in docs:
        bp = _Blueprint(doc, path)
        for mid, (mod, at) in bp.modules.items():
            kind = _kind(mod.get("source"))
            if kind in _PARTITIONS:
                _partition(bp, mid, mod, at)
            elif kind == "gke-node-pool":
                _node_pool(bp, mid, mod, at)
        out += bp.sink.facts
    return out


def _literal(pair) -> Any:
    return UNKNOWN if pair is None else pair[0]


def _cluster_name(bp: _Blueprint) -> str | None:
    for mod, at in bp.modules.values():
        if _kind(mod.get("source")).startswith(("schedmd-slurm-gcp-v6-controller", "schedmd-slurm-gcp-v5-controller")):
            name = _literal(bp.setting(mod, at, "slurm_cluster_name"))
            return name if isinstance(name, str) and name else None
    return None


def _partition(bp: _Blueprint, pid: str, mod: dict, at: tuple) -> None:
    name = _literal(bp.setting(mod, at, "partition_name"))
    name = name if isinstance(name, str) and name else None
    default = _literal(bp.setting(mod, at, "is_default")) is True
    conf = _literal(bp.setting(mod, at, "partition_conf"))
    if isinstance(conf, dict) and isinstance(conf.get("Default"), str):
        default = conf["Default"].upper() == "YES"  # partition_conf's Default wins over is_default (variables.tf)
    used = [u for u in as_list(mod.get("use")) if isinstance(u, str) and _kind(bp.modules.get(u, ({}, ()))[0].get("source")) in _NODESETS]
    sets = [(u, *bp.modules[u]) for u in used]
    if not sets and "machine_type" in as_dict(mod.get("settings")):
        sets = [(pid, mod, at)]  # an early v5 partition holds its nodes' settings itself
    for sid, smod, sat in sets:
        _nodeset(bp, f"{pid}/{sid}" if sid != pid else pid, sid, smod, sat, name, default and name is not None)


def _market(bp: _Blueprint, mod: dict, at: tuple, spot_keys: tuple[str, ...], reservations: tuple[str, ...]):
    """reserved (a specific reservation is named), spot (a spot/preemptible switch is on), on-demand (every
    switch written is off), else None (unwritten, or not literal)."""
    for key in reservations:
        got = bp.setting(mod, at, key)
        if got and isinstance(got[0], str) and got[0].strip():
            return "reserved", got[1]
    written = [got for got in (bp.setting(mod, at, k) for k in spot_keys) if got is not None]
    for value, where in written:
        if value is True:
            return "spot", where
    if written and all(value is False for value, _ in written):
        return "on-demand", written[0][1]
    return None


def _machine(bp: _Blueprint, mod: dict, at: tuple) -> tuple[list, str | None]:
    """The instance types to hand to ``capacity``, and the machine type (the module default when unwritten,
    which :func:`_default_machine` emits with ``attrs.default``)."""
    got = bp.setting(mod, at, "machine_type")
    if got is None:
        return [], DEFAULT_MACHINE
    return [got], (got[0] if isinstance(got[0], str) else None)


def _default_machine(bp: _Blueprint, mod: dict, at: tuple, target: str) -> None:
    if bp.setting(mod, at, "machine_type") is None:
        bp.sink.add("compute.instance_type", DEFAULT_MACHINE, at, target, key=f"{mod.get('id')}.machine_type",
                    attrs={"default": True})


def _accelerators(bp: _Blueprint, mod: dict, at: tuple):
    """From guest_accelerator: the GPUs per node and where (None unless every count is literal), the type, and
    the ``compute.accelerator`` values with their places (emitted after the target)."""
    got = bp.setting(mod, at, "guest_accelerator")
    if got is None or not isinstance(got[0], list):
        return None, None, []
    total, kind, facts = 0, None, []
    for i, acc in enumerate(got[0]):
        acc = as_dict(acc)
        count, atype = as_int(acc.get("count")), acc.get("type")
        if isinstance(atype, str) and atype:
            facts.append(({"type": atype, "count": count}, got[1] + (i,)))
            kind = atype
        total = None if total is None or count is None else total + count
    return ((total, got[1]) if total else None), kind, facts


def _emit_accelerators(bp: _Blueprint, target: str, facts: list) -> None:
    for value, where in facts:
        bp.sink.add("compute.accelerator", value, where, target)


def _nodeset(bp: _Blueprint, target: str, sid: str, mod: dict, at: tuple, partition: str | None, default: bool) -> None:
    static, dynamic = bp.setting(mod, at, "node_count_static"), bp.setting(mod, at, "node_count_dynamic_max")
    s = 0 if static is None else as_int(static[0])
    d = 10 if dynamic is None else as_int(dynamic[0])
    max_nodes = None
    if s is not None and d is not None:
        max_nodes = (s + d, (dynamic or static or (None, at))[1])
    name = _literal(bp.setting(mod, at, "name"))
    types, _ = _machine(bp, mod, at)
    gpus, _, accels = _accelerators(bp, mod, at)
    capacity(bp.sink, target, source=SOURCE, provider="gcp", resource=f"Nodeset/{name if isinstance(name, str) else sid}",
             at=at, capacity_of="slurm", partition=partition, instance_types=types, max_nodes=max_nodes,
             min_nodes=(s, static[1]) if static is not None and s is not None else None,
             market=_market(bp, mod, at, ("enable_spot_vm", "preemptible"), ("reservation_name", "future_reservation")),
             gpus_per_node=gpus, default=default, cluster=_cluster_name(bp))
    _default_machine(bp, mod, at, target)
    _emit_accelerators(bp, target, accels)


def _node_pool(bp: _Blueprint, pid: str, mod: dict, at: tuple) -> None:
    name = _literal(bp.setting(mod, at, "name"))
    name = name if isinstance(name, str) and name else None
    types, machine = _machine(bp, mod, at)
    gpus, atype, accels = _accelerators(bp, mod, at)
    static = bp.setting(mod, at, "static_node_count")
    if static is not None and static[0] is not None:
        max_nodes = min_nodes = static
    else:
        max_nodes, min_nodes = bp.setting(mod, at, "autoscaling_total_max_nodes"), bp.setting(mod, at, "autoscaling_total_min_nodes")
    market = _market(bp, mod, at, ("spot",), ())
    affinity = bp.setting(mod, at, "reservation_affinity")
    if affinity and isinstance(affinity[0], dict) and affinity[0].get("consume_reservation_type") == "SPECIFIC_RESERVATION":
        market = ("reserved", affinity[1])
    written = _literal(bp.setting(mod, at, "kubernetes_labels"))
    labels = {k: v for k, v in written.items() if isinstance(v, (str, int, float, bool))} if isinstance(written, dict) else {}
    # the labels GKE itself puts on every node of the pool (what a pod's nodeSelector names)
    if name:
        labels["cloud.google.com/gke-nodepool"] = name
    if isinstance(machine, str):
        labels["node.kubernetes.io/instance-type"] = machine
    if market and market[0] == "spot":
        labels["cloud.google.com/gke-spot"] = "true"
    if atype:
        labels["cloud.google.com/gke-accelerator"] = atype
    taints = []
    raw = _literal(bp.setting(mod, at, "taints"))
    for t in raw if isinstance(raw, list) else []:
        value, effect = t.get("value") if isinstance(t, dict) else None, t.get("effect") if isinstance(t, dict) else None
        if isinstance(t, dict) and isinstance(t.get("key"), str) and isinstance(effect, str) and value is not UNKNOWN:
            taints.append({"key": t["key"], "value": None if value is None else str(value).lower() if isinstance(value, bool) else str(value),
                           "effect": _EFFECT.get(effect.upper(), effect)})
    cluster = None
    for u in as_list(mod.get("use")):
        umod, uat = bp.modules.get(u, ({}, ())) if isinstance(u, str) else ({}, ())
        if _kind(umod.get("source")) in ("gke-cluster", "gke-autopilot-cluster"):
            got = _literal(bp.setting(umod, uat, "name"))
            cluster = got if isinstance(got, str) and got else None
    capacity(bp.sink, pid, source=SOURCE, provider="gcp", resource=f"NodePool/{name or pid}", at=at,
             capacity_of="kubernetes", instance_types=types, max_nodes=max_nodes, min_nodes=min_nodes, market=market,
             gpus_per_node=gpus, labels=labels, taints=taints, cluster=cluster)
    _default_machine(bp, mod, at, pid)
    _emit_accelerators(bp, pid, accels)
