"""CloudFormation templates (YAML or JSON): the resources that are capacity, one target per logical id.

``AWS::SageMaker::Cluster`` (HyperPod instance groups, read as the create-cluster input is:
``<LogicalId>.<group>``), ``AWS::Batch::ComputeEnvironment`` (vCPU bounds, not nodes: only a floor of 0 vCPUs
is a node count; the job queues of the template that use it are its partitions), ``AWS::EKS::Nodegroup``,
``AWS::EC2::Instance``, ``AWS::EC2::LaunchTemplate`` and ``AWS::AutoScaling::AutoScalingGroup``; and
``AWS::Batch::JobDefinition`` as a job target (its GPUs per node, nodes and command, read as a launch); and
ParallelCluster's ``Custom::PclusterCluster``, whose ``ClusterConfiguration`` is read as a ParallelCluster config
(``!FindInMap`` keyed by parameter defaults resolved, as ``!Ref`` is).

A ``!Ref`` (or ``{"Ref": ...}``) to a template parameter with a literal ``Default`` reads as that default,
said in attrs (``parameter``, ``template_default``): a deployment may pass another value. A resource that names
a launch template of the same template (``!Ref LT``) takes its instance type, market and EFA interfaces from it.
Every other intrinsic (``!If``, ``!Sub``, ``!GetAtt``, ``Fn::ImportValue`` ...) is not evaluated: its fact is
left out.
"""
from __future__ import annotations

from typing import Any

from gpulint.core.model import Fact
from gpulint.read.clusters.common import capacity
from gpulint.read.clusters.hyperpod import read_groups
from gpulint.read.kubernetes import FactSink, as_dict, as_int, as_list, dotted, emit_step, launches_from_argv
from gpulint.read.yamlnodes import Doc, Tagged

_EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
_EKS_MARKET = {"ON_DEMAND": "on-demand", "SPOT": "spot", "CAPACITY_BLOCK": "reserved"}
_EC2_MARKET = {"spot": "spot", "capacity-block": "reserved"}


def _resources(data: Any) -> dict:
    res = data.get("Resources") if isinstance(data, dict) else None
    return res if isinstance(res, dict) and not isinstance(res, Tagged) else {}


def _type(res: Any) -> str | None:
    return res["Type"] if isinstance(res, dict) and isinstance(res.get("Type"), str) else None


def looks_like(doc: Doc, path: str) -> bool:
    return any(_type(r) in _READERS for r in _resources(doc.data).values())


def read(docs: list[Doc], path: str) -> list[Fact]:
    out: list[Fact] = []
    for doc in docs:
        tpl = _Template(doc, path)
        for rid, res in _resources(doc.data).items():
            reader = _READERS.get(_type(res)) if isinstance(rid, str) else None
            if reader and isinstance(res.get("Properties"), dict) and not isinstance(res["Properties"], Tagged):
                reader(tpl, rid, ("Resources", rid, "Properties"))
        out += tpl.sink.facts
    return out


class _Template:
    def __init__(self, doc: Doc, path: str):
        self.doc, self.sink = doc, FactSink(doc, path)
        self.params = {k: v["Default"] for k, v in as_dict(doc.data.get("Parameters")).items()
                       if isinstance(v, dict) and isinstance(v.get("Default"), (str, int, float))
                       and not isinstance(v.get("Default"), bool)}
        self.resources = _resources(doc.data)

    def value(self, at: tuple) -> tuple[Any, dict]:
        """The literal at ``at``, a parameter's default for a ``Ref`` to it, else None."""
        raw = self.doc.get(at)
        ref = _ref(raw)
        if ref is not None:
            return (self.params[ref], {"parameter": ref, "template_default": True}) if ref in self.params else (None, {})
        if isinstance(raw, dict) and (isinstance(raw, Tagged) or any(str(k).startswith("Fn::") for k in raw)):
            return None, {}
        return raw, {}

    def pair(self, at: tuple) -> tuple | None:
        v, attrs = self.value(at)
        return None if v is None else (v, at, attrs)

    def launch_template(self, spec_at: tuple) -> tuple | None:
        """``(logical id, path of its LaunchTemplateData)`` of a launch template of this template named by a Ref."""
        spec = as_dict(self.doc.get(spec_at))
        for key in ("LaunchTemplateId", "Id", "LaunchTemplateName", "Name"):
            ref = _ref(spec.get(key))
            if ref and as_dict(self.resources.get(ref)).get("Type") == "AWS::EC2::LaunchTemplate":
                return ref, ("Resources", ref, "Properties", "LaunchTemplateData")
        return None


def _ref(raw: Any) -> str | None:
    """The name a ``!Ref`` (YAML) or ``{"Ref": ...}`` (JSON) refers to."""
    key = "!Ref" if isinstance(raw, Tagged) else "Ref"
    ok = isinstance(raw, dict) and list(raw) == [key] and isinstance(raw[key], str)
    return raw[key] if ok else None


def _ec2_market(tpl: _Template, data_at: tuple) -> tuple | None:
    at = data_at + ("InstanceMarketOptions", "MarketType")
    mt, attrs = tpl.value(at)
    if isinstance(mt, str):
        return (_EC2_MARKET.get(mt.lower(), "on-demand" if mt.lower() == "on-demand" else None), at, attrs)
    if tpl.doc.get(at) is not None:
        return (None, at)  # a market decided elsewhere: not the on-demand default
    aim = data_at + ("CapacityReservationSpecification", "CapacityReservationTarget")
    return ("reserved", aim) if isinstance(tpl.doc.get(aim), dict) else None


def _efa(tpl: _Template, data_at: tuple) -> tuple | None:
    """EFA interfaces of an instance or launch template's ``NetworkInterfaces``; none listed: no EFA."""
    nics = tpl.doc.get(data_at + ("NetworkInterfaces",))
    if nics is None:
        return (0, data_at, {"absent": True})
    if not isinstance(nics, list) or isinstance(nics, Tagged):
        return None
    count, first = 0, None
    for i, nic in enumerate(nics):
        kind, _ = tpl.value(data_at + ("NetworkInterfaces", i, "InterfaceType"))
        if not isinstance(nic, dict) or isinstance(nic, Tagged) or (kind is None and "InterfaceType" in nic):
            return None  # an interface decided elsewhere: the count is not known
        if isinstance(kind, str) and kind.lower() in ("efa", "efa-only"):
            count, first = count + 1, first or data_at + ("NetworkInterfaces", i, "InterfaceType")
    return (count, first or data_at + ("NetworkInterfaces",), {})


def _from_lt(tpl: _Template, spec_at: tuple, attrs: dict) -> tuple[list, tuple | None, tuple | None]:
    """Instance types, market and EFA a referenced launch template of the template decides."""
    lt = tpl.launch_template(spec_at)
    if lt is None:
        return [], None, None
    attrs["launch_template"] = lt[0]
    itype = tpl.pair(lt[1] + ("InstanceType",))
    return ([itype] if itype else []), _ec2_market(tpl, lt[1]), _efa(tpl, lt[1])


def _base(rid: str, rtype: str) -> dict:
    return {"source": "cloudformation", "provider": "aws", "resource": f"{rtype}/{rid}", "at": ("Resources", rid)}


def _sagemaker_cluster(tpl: _Template, rid: str, props: tuple) -> None:
    name, _ = tpl.value(props + ("ClusterName",))
    read_groups(tpl.sink, props + ("InstanceGroups",), name if isinstance(name, str) else None, tpl.value,
                orchestrator=tpl.doc.get(props + ("Orchestrator",)), autoscaling=tpl.doc.get(props + ("AutoScaling",)),
                target_prefix=f"{rid}.", source="cloudformation")


def _batch_ce(tpl: _Template, rid: str, props: tuple) -> None:
    cr = props + ("ComputeResources",)
    ctype, _ = tpl.value(cr + ("Type",))
    if not isinstance(tpl.doc.get(cr), dict) or (isinstance(ctype, str) and ctype.upper().startswith("FARGATE")):
        return  # unmanaged, or Fargate (no GPUs)
    attrs: dict = {}
    types, market, efa = _from_lt(tpl, cr + ("LaunchTemplate",), attrs)
    n = len(as_list(tpl.doc.get(cr + ("InstanceTypes",))))
    listed = [(v, cr + ("InstanceTypes", i), a) for i in range(n) for v, a in [tpl.value(cr + ("InstanceTypes", i))]]
    families = [t for t, _, _ in listed if isinstance(t, str) and "." not in t]  # "p4d", "optimal": Batch picks the size
    if families:
        attrs["instance_families"] = families
    types = [p for p in listed if isinstance(p[0], str) and "." in p[0]] or types
    if isinstance(ctype, str) and ctype.upper() in ("EC2", "SPOT"):
        market = market if market and ctype.upper() == "EC2" else ("spot" if ctype.upper() == "SPOT" else "on-demand", cr + ("Type",))
    low = None
    for key in ("MinvCpus", "MaxvCpus", "DesiredvCpus"):
        v, _ = tpl.value(cr + (key,))
        if as_int(v) is not None:
            attrs[key.lower().replace("vcpus", "_vcpus")] = as_int(v)
            if key == "MinvCpus" and as_int(v) == 0:
                low = (0, cr + (key,))  # vCPUs are not nodes: only a floor of none converts
    queues = _queues_of(tpl, rid)
    if queues:
        attrs["queues"] = queues
    capacity(tpl.sink, rid, **_base(rid, "AWS::Batch::ComputeEnvironment"), capacity_of="batch",
             partition=queues[0] if len(queues) == 1 else None, instance_types=types, min_nodes=low, market=market,
             efa=efa or (0, cr, {"absent": True}), attrs=attrs)


def _queues_of(tpl: _Template, ce: str) -> list[str]:
    """The job queues of the template that send jobs to compute environment ``ce`` (by name, else logical id)."""
    out = []
    for qid, res in tpl.resources.items():
        if not isinstance(res, dict) or res.get("Type") != "AWS::Batch::JobQueue":
            continue
        props = as_dict(res.get("Properties"))
        if any(_ref(as_dict(o).get("ComputeEnvironment")) == ce for o in as_list(props.get("ComputeEnvironmentOrder"))):
            name, _ = tpl.value(("Resources", qid, "Properties", "JobQueueName"))
            out.append(name if isinstance(name, str) else qid)
    return out


def _eks_nodegroup(tpl: _Template, rid: str, props: tuple) -> None:
    attrs: dict = {}
    types, market, efa = _from_lt(tpl, props + ("LaunchTemplate",), attrs)
    listed = as_list(tpl.doc.get(props + ("InstanceTypes",)))
    if listed:
        types = [p for p in (tpl.pair(props + ("InstanceTypes", i)) for i in range(len(listed))) if p]
    cap, cattrs = tpl.value(props + ("CapacityType",))
    if isinstance(cap, str):
        market = (_EKS_MARKET.get(cap.upper()), props + ("CapacityType",), cattrs)
    elif "CapacityType" not in as_dict(tpl.doc.get(props)):
        market = market or ("on-demand", ("Resources", rid), {"default": True})
    labels = {k: v for k, v in as_dict(tpl.doc.get(props + ("Labels",))).items() if isinstance(v, str)}
    name, _ = tpl.value(props + ("NodegroupName",))
    if isinstance(name, str):
        labels["eks.amazonaws.com/nodegroup"] = name
    if market and market[0]:
        labels["eks.amazonaws.com/capacityType"] = {"spot": "SPOT", "reserved": "CAPACITY_BLOCK"}.get(market[0], "ON_DEMAND")
    if len(types) == 1 and isinstance(types[0][0], str):
        labels["node.kubernetes.io/instance-type"] = types[0][0]
    taints = [{"key": t["Key"], "value": t.get("Value", "") if isinstance(t.get("Value", ""), str) else "",
               "effect": _EKS_EFFECTS[t["Effect"]]} for t in as_list(tpl.doc.get(props + ("Taints",)))
              if isinstance(t, dict) and isinstance(t.get("Key"), str) and isinstance(t.get("Effect"), str)
              and t["Effect"] in _EKS_EFFECTS]
    sc = props + ("ScalingConfig",)
    _desired(tpl, sc + ("DesiredSize",), attrs)
    if "launch_template" not in attrs:
        efa = (0, ("Resources", rid), {"absent": True})  # a managed node group without a launch template has no EFA
    capacity(tpl.sink, rid, **_base(rid, "AWS::EKS::Nodegroup"), capacity_of="kubernetes", instance_types=types,
             max_nodes=tpl.pair(sc + ("MaxSize",)), min_nodes=tpl.pair(sc + ("MinSize",)), market=market,
             efa=efa, labels=labels, taints=taints, attrs=attrs)


def _ec2_instance(tpl: _Template, rid: str, props: tuple) -> None:
    attrs: dict = {}
    types, market, efa = _from_lt(tpl, props + ("LaunchTemplate",), attrs)
    own = tpl.pair(props + ("InstanceType",))
    market = _ec2_market(tpl, props) or market or ("on-demand", ("Resources", rid), {"default": True})
    if "NetworkInterfaces" in as_dict(tpl.doc.get(props)) or efa is None:
        efa = _efa(tpl, props)
    capacity(tpl.sink, rid, **_base(rid, "AWS::EC2::Instance"), capacity_of=None,
             instance_types=[own] if own else types, max_nodes=(1, ("Resources", rid), {"default": True}),
             market=market, efa=efa, attrs=attrs)


def _launch_template(tpl: _Template, rid: str, props: tuple) -> None:
    data = props + ("LaunchTemplateData",)
    own = tpl.pair(data + ("InstanceType",))
    capacity(tpl.sink, rid, **_base(rid, "AWS::EC2::LaunchTemplate"), capacity_of=None,
             instance_types=[own] if own else [], market=_ec2_market(tpl, data), efa=_efa(tpl, data))


def _asg(tpl: _Template, rid: str, props: tuple) -> None:
    attrs: dict = {}
    mip = props + ("MixedInstancesPolicy",)
    spec = mip + ("LaunchTemplate", "LaunchTemplateSpecification") if tpl.doc.get(mip) else props + ("LaunchTemplate",)
    types, market, efa = _from_lt(tpl, spec, attrs)
    overrides = as_list(tpl.doc.get(mip + ("LaunchTemplate", "Overrides")))
    listed = [p for p in (tpl.pair(mip + ("LaunchTemplate", "Overrides", i, "InstanceType")) for i in range(len(overrides))) if p]
    dist = as_dict(tpl.doc.get(mip + ("InstancesDistribution",)))
    if tpl.doc.get(mip):
        pct, base = as_int(dist.get("OnDemandPercentageAboveBaseCapacity", 100)), as_int(dist.get("OnDemandBaseCapacity", 0))
        if pct is not None and base is not None:
            market = ("on-demand" if pct >= 100 else "spot", mip + ("InstancesDistribution",),
                      {"on_demand_percentage_above_base_capacity": pct, "on_demand_base_capacity": base,
                       "mixed": 0 < pct < 100 or (pct == 0 and base > 0)})
    _desired(tpl, props + ("DesiredCapacity",), attrs)
    capacity(tpl.sink, rid, **_base(rid, "AWS::AutoScaling::AutoScalingGroup"), capacity_of=None,
             instance_types=listed or types, max_nodes=tpl.pair(props + ("MaxSize",)),
             min_nodes=tpl.pair(props + ("MinSize",)), market=market, efa=efa, attrs=attrs)


def _desired(tpl: _Template, at: tuple, attrs: dict) -> None:
    if as_int(tpl.value(at)[0]) is not None:
        attrs["desired"] = as_int(tpl.value(at)[0])  # where it starts; the maximum is its node count


def _job_definition(tpl: _Template, rid: str, props: tuple) -> None:
    """A Batch job: one target per container (the single one, or each node range of a multi-node job)."""
    ranges = as_list(tpl.doc.get(props + ("NodeProperties", "NodeRangeProperties")))
    if isinstance(tpl.doc.get(props + ("ContainerProperties",)), dict):
        containers = [(rid, props + ("ContainerProperties",), (1, ("Resources", rid), {"default": True}))]
    else:
        nodes = tpl.pair(props + ("NodeProperties", "NumNodes"))
        containers = [(rid if len(ranges) == 1 else f"{rid}.NodeRangeProperties[{i}]",
                       props + ("NodeProperties", "NodeRangeProperties", i, "Container"), nodes if len(ranges) == 1 else None)
                      for i in range(len(ranges))]
    for target, c, nodes in containers:
        if not isinstance(tpl.doc.get(c), dict):
            continue
        gpus = None
        for i, req in enumerate(as_list(tpl.doc.get(c + ("ResourceRequirements",)))):
            if isinstance(req, dict) and req.get("Type") == "GPU":
                gpus = tpl.pair(c + ("ResourceRequirements", i, "Value"))
        itype = tpl.pair(c + ("InstanceType",))
        capacity(tpl.sink, target, **_base(rid, "AWS::Batch::JobDefinition"), capacity_of=None,
                 instance_types=[itype] if itype else [], max_nodes=nodes, gpus_per_node=gpus)
        command = tpl.doc.get(c + ("Command",))
        if isinstance(command, list) and not isinstance(command, Tagged):
            for n, (idx, step, multi) in enumerate(launches_from_argv(command)):
                at = c + ("Command", idx) if idx is not None else c + ("Command",)
                emit_step(tpl.sink, at, step.offset if multi else None, step, target,
                          dotted(c[3:] + ("Command",)) + (f"[{n}]" if idx is not None else ""), {})


def _find_in_map(tpl: _Template, raw: Any) -> Any:
    """``!FindInMap [Map, Key, Key2]`` (or ``Fn::FindInMap``) whose keys are literals or Refs to parameter defaults."""
    args = raw.get("!FindInMap") if isinstance(raw, Tagged) else raw.get("Fn::FindInMap") if isinstance(raw, dict) else None
    if not isinstance(args, list) or len(args) != 3:
        return None
    keys = []
    for a in args:
        ref = _ref(a)
        keys.append(tpl.params.get(ref) if ref is not None else a if isinstance(a, str) else None)
    if any(not isinstance(k, str) for k in keys):
        return None
    value = as_dict(as_dict(as_dict(tpl.doc.data.get("Mappings")).get(keys[0])).get(keys[1])).get(keys[2])
    return value if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def _resolved(tpl: _Template, node: Any) -> Any:
    """A copy of ``node`` with each Ref to a parameter default and each resolvable FindInMap replaced by its value
    (a deployment that passes other parameters gets other values: these are the template's defaults); every other
    intrinsic stays as it is, and the readers leave it out."""
    ref = _ref(node)
    if ref is not None:
        return tpl.params.get(ref, node)
    found = _find_in_map(tpl, node)
    if found is not None:
        return found
    if isinstance(node, Tagged):
        return node
    if isinstance(node, dict):
        return {k: _resolved(tpl, v) for k, v in node.items()}
    if isinstance(node, list):
        return [_resolved(tpl, v) for v in node]
    return node


def _pcluster(tpl: _Template, rid: str, props: tuple) -> None:
    """ParallelCluster's CloudFormation resource (``Custom::PclusterCluster`` of its custom-resource stack, or the
    ``AWS::ParallelCluster::Cluster`` type): its ``ClusterConfiguration`` is a ParallelCluster config, read as one."""
    from gpulint.read.clusters.parallelcluster import read_config

    config = tpl.doc.get(props + ("ClusterConfiguration",))
    if isinstance(config, dict) and not isinstance(config, Tagged):
        read_config(tpl.sink, props + ("ClusterConfiguration",), _resolved(tpl, config))


_READERS = {
    "Custom::PclusterCluster": _pcluster,
    "AWS::ParallelCluster::Cluster": _pcluster,
    "AWS::SageMaker::Cluster": _sagemaker_cluster,
    "AWS::Batch::ComputeEnvironment": _batch_ce,
    "AWS::EKS::Nodegroup": _eks_nodegroup,
    "AWS::EC2::Instance": _ec2_instance,
    "AWS::EC2::LaunchTemplate": _launch_template,
    "AWS::AutoScaling::AutoScalingGroup": _asg,
    "AWS::Batch::JobDefinition": _job_definition,
}
