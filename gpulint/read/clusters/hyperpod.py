"""SageMaker HyperPod clusters: ``aws sagemaker create-cluster`` input, and the Slurm partition map.

The create-cluster input (``--cli-input-json``/``--cli-input-yaml``: ``ClusterName``,
``InstanceGroups``, ``Orchestrator``; or the bare ``InstanceGroups`` list given
to ``--instance-groups file://...``) has one capacity target per instance group.
HyperPod instance groups run all the time: ``InstanceCount`` is both the nodes
a group runs and the ones it keeps idle, unless the cluster's ``AutoScaling``
(Karpenter) scales it, when neither is decided here. Instance types stay
``ml.*`` (the catalogue prices them by their EC2 twins). ``Orchestrator.Eks``
places jobs by Kubernetes (nodes carry ``sagemaker.amazonaws.com/instance-group-name``,
``node.kubernetes.io/instance-type`` and the group's ``KubernetesConfig``); without
one, HyperPod runs Slurm.

A Slurm cluster's partitions are named by its lifecycle scripts'
``provisioning_parameters.json`` (``controller_group``, ``login_group``,
``worker_groups: [{instance_group_name, partition_name}]``), a separate file:
it yields one ``cluster.partition_map`` fact per group, for the linker to attach
the partition to the group's target found in another file. Newer clusters say
it in the group itself (``SlurmConfig.PartitionNames``), read here.

``read_groups`` is shared with the CloudFormation reader (``AWS::SageMaker::Cluster``),
which passes its own resolver of ``!Ref`` values.
"""
from __future__ import annotations

from typing import Any, Callable

from gpulint.core.model import Fact
from gpulint.read.clusters.common import capacity
from gpulint.read.kubernetes import FactSink, as_dict, as_int, as_list
from gpulint.read.yamlnodes import Doc, Tagged

#: a value at a key path -> (value or None when not decided, attrs saying where it came from)
Resolve = Callable[[tuple], tuple[Any, dict]]
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _group_like(item: Any) -> bool:
    return isinstance(item, dict) and "InstanceGroupName" in item and "InstanceType" in item


def _params_like(data: Any) -> bool:
    return (isinstance(data, dict) and isinstance(data.get("worker_groups"), list)
            and ("controller_group" in data or "workload_manager" in data))


def looks_like(doc: Doc, path: str) -> bool:
    data = doc.data
    if isinstance(data, list):
        return bool(data) and all(_group_like(g) for g in data)
    if _params_like(data):
        return True
    return (isinstance(data, dict) and "Resources" not in data and isinstance(data.get("InstanceGroups"), list)
            and any(_group_like(g) for g in data["InstanceGroups"]))


def read(docs: list[Doc], path: str) -> list[Fact]:
    out: list[Fact] = []
    for doc in docs:
        sink = FactSink(doc, path)
        if _params_like(doc.data):
            _partition_map(sink, doc.data)
        elif isinstance(doc.data, list):
            read_groups(sink, (), None, lambda at: (doc.get(at), {}), orchestrator=None)
        else:
            name = doc.data.get("ClusterName")
            read_groups(sink, ("InstanceGroups",), name if isinstance(name, str) else None,
                        lambda at: (doc.get(at), {}), orchestrator=doc.data.get("Orchestrator"),
                        autoscaling=doc.data.get("AutoScaling"))
        out += sink.facts
    return out


def orchestrated_by(orchestrator: Any) -> str | None:
    """kubernetes (``Orchestrator.Eks``), slurm (``Orchestrator.Slurm``, or none: HyperPod's original scheduler)."""
    if orchestrator is None:
        return "slurm"
    if isinstance(orchestrator, dict) and not isinstance(orchestrator, Tagged):
        if "Eks" in orchestrator:
            return "kubernetes"
        if "Slurm" in orchestrator:
            return "slurm"
    return None


def read_groups(sink: FactSink, base: tuple, cluster: str | None, resolve: Resolve, *, orchestrator: Any,
                autoscaling: Any = None, target_prefix: str = "", source: str = "hyperpod") -> None:
    """One capacity target per instance group of the list at ``base``."""
    capacity_of = orchestrated_by(orchestrator)
    scaled = isinstance(autoscaling, dict) and str(autoscaling.get("Mode", "")).lower() == "enable"
    used: set[str] = set()
    for i, g in enumerate(as_list(sink.doc.get(base) if base else sink.doc.data)):
        if not isinstance(g, dict) or isinstance(g, Tagged):  # a group behind !If is not decided here
            continue
        at = base + (i,)
        name, _ = resolve(at + ("InstanceGroupName",))
        if not isinstance(name, str) or not name.strip() or "${" in name:
            continue
        target, n = f"{target_prefix}{name}", 2
        while target in used:
            target, n = f"{target_prefix}{name}#{n}", n + 1
        used.add(target)
        _group(sink, at, g, name, target, cluster, resolve, capacity_of, scaled, source)


def _group(sink, at, g, name, target, cluster, resolve, capacity_of, scaled, source) -> None:
    itype, iattrs = resolve(at + ("InstanceType",))
    types = [(itype, at + ("InstanceType",), iattrs)] if isinstance(itype, str) else []
    count, cattrs = resolve(at + ("InstanceCount",))
    nodes = None if scaled else (count, at + ("InstanceCount",), cattrs)
    attrs: dict = {"hyperpod": True}
    if scaled:
        attrs["autoscaling"] = True  # Karpenter sizes the group; InstanceCount is where it starts
    threads, _ = resolve(at + ("ThreadsPerCore",))
    if as_int(threads) is not None:
        attrs["threads_per_core"] = as_int(threads)
    slurm = as_dict(g.get("SlurmConfig"))
    partition = None
    names = as_list(slurm.get("PartitionNames"))
    if names and isinstance(names[0], str) and not isinstance(slurm, Tagged):
        partition = names[0]
    if isinstance(slurm.get("NodeType"), str):
        attrs["slurm_node_type"] = slurm["NodeType"]
    labels, taints = None, None
    if capacity_of == "kubernetes":
        kube = as_dict(g.get("KubernetesConfig"))
        labels = {k: v for k, v in as_dict(kube.get("Labels")).items() if isinstance(k, str) and isinstance(v, str)}
        labels["sagemaker.amazonaws.com/instance-group-name"] = name
        if types:
            labels["node.kubernetes.io/instance-type"] = itype
        taints = [{"key": t["Key"], "value": str(t.get("Value", "")), "effect": t["Effect"]}
                  for t in as_list(kube.get("Taints"))
                  if isinstance(t, dict) and isinstance(t.get("Key"), str) and t.get("Effect") in _EFFECTS
                  and isinstance(t.get("Value", ""), str)]
    capacity(sink, target, source=source, provider="aws", resource=f"InstanceGroup/{name}", at=at,
             capacity_of=capacity_of, partition=partition, instance_types=types, max_nodes=nodes, min_nodes=nodes,
             market=_market(at, g, resolve), labels=labels, taints=taints, cluster=cluster, attrs=attrs)


def _market(at: tuple, g: dict, resolve: Resolve) -> tuple | None:
    if "TrainingPlanArn" in g:  # a flexible training plan: capacity bought ahead for a period
        plan, _ = resolve(at + ("TrainingPlanArn",))
        return ("reserved", at + ("TrainingPlanArn",)) if isinstance(plan, str) and plan.strip() else None
    req = g.get("CapacityRequirements")
    if isinstance(req, dict) and not isinstance(req, Tagged) and req:
        if "Spot" in req:
            return ("spot", at + ("CapacityRequirements", "Spot"))
        if "OnDemand" in req:
            return ("on-demand", at + ("CapacityRequirements", "OnDemand"))
        return None
    return ("on-demand", at, {"default": True}) if req is None else None


def _partition_map(sink: FactSink, data: dict) -> None:
    """``provisioning_parameters.json``: which instance group is the controller, the login nodes, each partition."""
    for key, node_type in (("controller_group", "controller"), ("login_group", "login")):
        group = data.get(key)
        if isinstance(group, str) and group.strip():
            sink.add("cluster.partition_map", {"group": group, "partition": None, "node_type": node_type},
                     (key,), "")
    for i, wg in enumerate(data["worker_groups"]):
        if not isinstance(wg, dict):
            continue
        group, part = wg.get("instance_group_name"), wg.get("partition_name")
        if isinstance(group, str) and group.strip():
            sink.add("cluster.partition_map",
                     {"group": group, "partition": part if isinstance(part, str) and part.strip() else None,
                      "node_type": "compute"}, ("worker_groups", i), "")
