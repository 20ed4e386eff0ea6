"""AWS ParallelCluster v3 cluster configurations: one capacity target per Slurm queue compute resource.

A configuration (``pcluster create-cluster --cluster-configuration cluster.yaml``) is::

    Region: us-east-1
    HeadNode: {InstanceType: m5.8xlarge, ...}
    Scheduling:
      Scheduler: slurm
      SlurmQueues:
        - Name: gpu                      # the Slurm partition jobs name with --partition
          CapacityType: ONDEMAND         # | SPOT | CAPACITY_BLOCK
          CapacityReservationTarget: {CapacityReservationId: cr-...}
          ComputeResources:
            - Name: p5
              InstanceType: p5.48xlarge  # or Instances: [{InstanceType: ...}, ...]
              MinCount: 2                # static nodes: running (and billed) while the cluster exists
              MaxCount: 16
              Efa: {Enabled: true}

Each ``(queue, compute resource)`` is a target ``"<queue>/<compute resource>"`` serving the partition
``<queue>``. What the documentation (AWS ParallelCluster User Guide, "Scheduling section", v3.6) fixes:
``CapacityType`` defaults to ``ONDEMAND``; ``MinCount`` to 0; ``Efa`` / ``Enabled`` to ``false`` (so a
compute resource without ``Efa`` attaches no EFA interface: ``compute.efa`` 0 with ``absent``; whether the
instance has EFA to attach is the rules' business, from the catalogue). The default partition is the
first queue: "The first queue in the queues list is the default queue" (aws-parallelcluster-cookbook,
``pcluster_slurm_config_generator.py``, which writes ``Default=YES`` on that queue's partition only; the
multiple-queue tutorial of the user guide shows the first queue with sinfo's ``*``).

Values written as ``${VAR}`` (configs rendered by ``envsubst``) are not guessed. ``AwsBatchQueues``
(the AWS Batch scheduler) and ParallelCluster v2 ``config`` INI files are not read.
"""
from __future__ import annotations

from typing import Any

from gpulint.core.model import Fact
from gpulint.read.clusters.common import capacity
from gpulint.read.kubernetes import FactSink, as_dict, as_list
from gpulint.read.yamlnodes import Doc

SOURCE = "parallelcluster"

#: CapacityType -> compute.capacity (a capacity block is reserved capacity, priced at the on-demand rate)
_MARKET = {"ONDEMAND": "on-demand", "SPOT": "spot", "CAPACITY_BLOCK": "reserved"}


def looks_like(doc: Doc, path: str) -> bool:
    data = doc.data
    if not isinstance(data, dict):
        return False
    sched = as_dict(data.get("Scheduling"))
    # SlurmQueues alone is distinctive; HeadNode/Region/Image guard against a fragment that happens to use the word
    return isinstance(sched.get("SlurmQueues"), list) and any(k in data for k in ("HeadNode", "Region", "Image"))


def read(docs: list[Doc], path: str) -> list[Fact]:
    out: list[Fact] = []
    for doc in docs:
        sink = FactSink(doc, path)
        read_config(sink, (), doc.data)
        out += sink.facts
    return out


def read_config(sink: FactSink, at: tuple, data: dict) -> None:
    """The queues of one ParallelCluster config ``data`` found at ``at`` of the sink's document (the whole file, or
    a CloudFormation resource's ``ClusterConfiguration``)."""
    queues = as_list(as_dict(data.get("Scheduling")).get("SlurmQueues"))
    for qi, queue in enumerate(queues):
        if isinstance(queue, dict):
            _queue(sink, at + ("Scheduling", "SlurmQueues", qi), queue, default=qi == 0)


def _name(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() and "${" not in value else None


def _reserved(node: dict) -> bool:
    """A capacity reservation (ODCR or a resource group of them) is targeted: the key is written with a value
    (a ``${CAPACITY_RESERVATION_ID}`` placeholder still says the queue runs on a reservation)."""
    target = as_dict(node.get("CapacityReservationTarget"))
    return any(isinstance(target.get(k), str) and target.get(k).strip()
               for k in ("CapacityReservationId", "CapacityReservationResourceGroupArn"))


def _queue(sink: FactSink, at: tuple, queue: dict, *, default: bool) -> None:
    qname = _name(queue.get("Name"))
    ctype = queue.get("CapacityType")
    market = None
    if isinstance(ctype, str) and ctype.strip().upper() in _MARKET:
        market = (_MARKET[ctype.strip().upper()], at + ("CapacityType",))
    queue_reserved = _reserved(queue)
    for ci, cr in enumerate(as_list(queue.get("ComputeResources"))):
        if not isinstance(cr, dict):
            continue
        cat = at + ("ComputeResources", ci)
        crname = _name(cr.get("Name")) or f"compute-resource-{ci}"
        target = f"{qname or f'queue-{at[-1]}'}/{crname}"
        types: list[tuple[Any, tuple]] = []
        if "InstanceType" in cr:
            types.append((cr.get("InstanceType"), cat + ("InstanceType",)))
        for ii, inst in enumerate(as_list(cr.get("Instances"))):
            if isinstance(inst, dict):
                types.append((inst.get("InstanceType"), cat + ("Instances", ii, "InstanceType")))
        cr_market = market
        if _reserved(cr):
            cr_market = ("reserved", cat + ("CapacityReservationTarget",))
        elif queue_reserved and (market is None or market[0] == "on-demand"):
            cr_market = ("reserved", at + ("CapacityReservationTarget",))
        efa = as_dict(cr.get("Efa"))
        enabled = efa.get("Enabled")
        if enabled is True:
            efa_fact = (1, cat + ("Efa", "Enabled"), {"all": True})
        elif enabled is False:
            efa_fact = (0, cat + ("Efa", "Enabled"), {})
        elif "Enabled" not in efa:
            # the documented default is false: no EFA interface is attached
            efa_fact = (0, cat + (("Efa",) if "Efa" in cr else ()), {"absent": True})
        else:
            efa_fact = None  # a placeholder: unknown
        capacity(sink, target, source=SOURCE, provider="aws", resource=f"ComputeResource/{target}", at=cat,
                 capacity_of="slurm", partition=qname, instance_types=types,
                 max_nodes=(cr.get("MaxCount"), cat + ("MaxCount",)) if "MaxCount" in cr else None,
                 min_nodes=(cr.get("MinCount"), cat + ("MinCount",)) if "MinCount" in cr else None,
                 market=cr_market, efa=efa_fact, default=default and qname is not None)
