"""The typed results of resolution: what a compute target and a workload *are*.

``gpulint.resolve.resolver`` builds these once per scan, after linking; rules read
them and never resolve anything themselves. Every decided value keeps where it
was decided (a ``Location`` or a short reason), and every value that could not
be decided is ``None`` with a sentence saying why.

* ``ResolvedCompute``: one compute target (a Terraform resource, a Kubernetes
  job, a SkyPilot task, a SageMaker estimator, a Slurm allocation ...) with its
  catalogue instance, device kind (gpu / cpu / unknown), nodes, capacity, EFA
  and price.
* ``WorkloadResolution``: a workload's role, its compute (as the workload runs
  it: launcher node counts and the workloads table applied), the other compute
  targets of the same job, the model, the precision and the checkpoint
  evidence.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

# what a compute target runs on: one definition, shared with the instance families
from gpulint.core.families import CPU, GPU, UNKNOWN
from gpulint.core.model import Fact, Location

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.pricing.catalogue import Instance

#: workload roles
TRAINING, INFERENCE, BATCH = "training", "inference", "batch"
ROLES = (TRAINING, INFERENCE, BATCH)


@dataclass
class PrecisionView:
    """The precision facts of one workload sorted by what they decide."""

    on: list[tuple[Fact, str]] = field(default_factory=list)  # (fact, dtype) of enabled mechanisms
    off: list[Fact] = field(default_factory=list)  # explicit fp32 / "no" written in a file
    default_off: list[Fact] = field(default_factory=list)  # off because nothing turned it on (defaults, absent flags)
    unknown: list[Fact] = field(default_factory=list)

    @property
    def decided_off(self) -> bool:
        return not self.on and not self.unknown

    @property
    def dtypes(self) -> set[str]:
        return {d for _, d in self.on if d}


@dataclass(frozen=True)
class UnknownInstance:
    """An instance type written in the infrastructure that the catalogue does not know."""

    name: str
    loc: Location
    key: str = ""


@dataclass(frozen=True)
class Price:
    """The hourly price of a compute target (all its nodes), with its basis."""

    unit_usd_per_hour: float | None  # one node
    usd_per_hour: float | None  # all nodes
    capacity: str  # the capacity the figure is for: "spot" | "on-demand"
    nodes: int  # nodes the figure counts (1 when unknown)
    region: str | None
    as_of: str | None
    source: str
    why_none: str | None = None  # set when usd_per_hour is None


@dataclass(frozen=True)
class GpuHourRate:
    """How a job that names only its GPU model is priced: per GPU-hour, at the lowest per-GPU rate among the
    catalogue instances with that GPU (``source``'s hourly price over its GPUs)."""

    source: "Instance"  # the catalogue instance the rate comes from

    @property
    def gpu_model(self) -> str:
        return self.source.gpu_model

    @property
    def from_instance(self) -> str:
        return self.source.name

    @property
    def from_gpus(self) -> int:
        return self.source.gpu_count


@dataclass(frozen=True)
class ResolvedCompute:
    """One compute target, resolved against the catalogue and the module's variables."""

    id: str  # "path#target"
    path: str
    target: str
    loc: Location
    source: str | None  # terraform | kubernetes | skypilot | sagemaker | slurm | azureml | vertex ...
    provider: str | None  # aws | gcp | azure | None
    resource: str | None  # "aws_instance.trainer", "PyTorchJob/llama" ...
    target_role: str | None  # what the infrastructure names it for: training | serving | notebook | None
    device: str  # GPU | CPU | UNKNOWN
    device_reason: str  # why (instance family, GPU request, catalogue entry ...)
    instance: "Instance | None" = None  # the catalogue entry
    #: where no machine is known but the GPU model is, and no per-GPU-hour rate carries it (a Modal Function, SkyPilot on Kubernetes):
    #: a catalogue instance with that GPU, for the GPU's own properties (model, architecture, bf16) only, never
    #: for a price, a GPU count or a network
    gpu_like: "Instance | None" = None
    architecture: str | None = None  # of the GPU model (Ampere, Hopper ...): the instance's, gpu_like's or the GPU-hour rate's
    instance_written: str | None = None  # as written (SageMaker "ml." names included)
    instance_loc: Location | None = None  # where the instance type (or the pin) was written
    instance_pinned_by: str | None = None  # "[tool.gpulint] workloads table" when the table decided it
    assumed: str | None = None  # e.g. the cheapest catalogue match for a SkyPilot accelerator request
    accelerator: dict | None = None  # {"type", "count"} as requested
    gpus_per_node: int | None = None  # GPUs the job uses per node (a pod's request, else the instance's)
    nodes: int | None = None
    min_nodes: int | None = None
    capacity: str | None = None  # "spot" | "on-demand" | "reserved" (a capacity block or reservation) | None (not stated)
    capacity_loc: Location | None = None
    capacity_pinned_by: str | None = None
    on_demand_fallback: bool = False
    efa_requested: int | None = None
    efa_loc: Location | None = None
    price: Price | None = None
    gpu_hour: GpuHourRate | None = None  # set when the job is priced per GPU-hour (no instance, a named GPU model)
    run_hours: float | None = None  # how long one run may last, as the launcher states it (Slurm --time, SageMaker max_run)
    run_hours_loc: Location | None = None
    runs_per_month: float | None = None  # how often a scheduled job runs (a CronJob's schedule)
    runs_loc: Location | None = None
    placed_on: str | None = None  # the cluster capacity (a Slurm queue, a node group) the job was placed on
    #: placed_on, then the capacity that is placed on in turn (a Slinky NodeSet's node group): every target the job uses
    placed_via: tuple[str, ...] = ()
    placement: str | None = None  # why (gpulint.link.placement)
    placement_unknown: str | None = None  # why it was not placed although the repository defines capacity
    why_unknown: str | None = None  # why there is no instance (and so no price, unless priced per GPU-hour)
    unknown_instances: tuple[UnknownInstance, ...] = ()
    facts: tuple[Fact, ...] = ()  # every fact of the target and of the templates it starts

    # -- catalogue facts of the instance -----------------------------------------------------
    @property
    def instance_name(self) -> str | None:
        return self.instance.name if self.instance is not None else None

    @property
    def gpu_model(self) -> str | None:
        if self.instance is not None:
            return self.instance.gpu_model
        if self.gpu_hour is not None:
            return self.gpu_hour.gpu_model
        return self.gpu_like.gpu_model if self.gpu_like is not None else None

    @property
    def gpu_count(self) -> int | None:
        """GPUs the instance has per node (the catalogue's figure)."""
        return self.instance.gpu_count if self.instance is not None else None

    @property
    def gpu_memory_gib(self) -> float | None:
        return self.instance.gpu_memory_gib if self.instance is not None else None

    @property
    def gpu_bf16(self) -> bool | None:
        """Whether the GPU has bf16: the instance's, or, for a job that names only its GPU model (priced per
        GPU-hour), that model's (an architecture's property, the same on every instance that has it)."""
        if self.instance is not None:
            return self.instance.bf16_supported
        if self.gpu_hour is not None:
            return self.gpu_hour.source.bf16_supported
        return self.gpu_like.bf16_supported if self.gpu_like is not None else None

    @property
    def interconnect(self) -> str | None:
        return self.instance.gpu_interconnect if self.instance is not None else None

    @property
    def network_gbps(self) -> float | None:
        return self.instance.network_gbps if self.instance is not None else None

    @property
    def rdma(self) -> str | None:
        return self.instance.rdma if self.instance is not None else None

    @property
    def efa_interfaces(self) -> int | None:
        return self.instance.efa_interfaces if self.instance is not None else None

    @property
    def local_nvme_gib(self) -> float | None:
        return self.instance.local_nvme_gib if self.instance is not None else None

    @property
    def usd_per_hour(self) -> float | None:
        return self.price.usd_per_hour if self.price is not None else None

    @property
    def why_no_price(self) -> str | None:
        if self.price is not None and self.price.usd_per_hour:
            return None
        if self.price is not None and self.price.why_none:
            return self.price.why_none
        return self.why_unknown or f"{self.id} names no instance type"

    @property
    def is_gpu(self) -> bool:
        return self.device == GPU

    @property
    def is_cpu(self) -> bool:
        return self.device == CPU

    # -- facts ---------------------------------------------------------------------------------
    def first(self, kind: str) -> Fact | None:
        return next((f for f in self.facts if f.kind == kind), None)

    def facts_of(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind]

    def with_(self, **changes: Any) -> "ResolvedCompute":
        return replace(self, **changes)

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "id": self.id, "source": self.source, "provider": self.provider, "resource": self.resource,
            "target_role": self.target_role, "device": self.device, "device_reason": self.device_reason,
            "instance": self.instance_name, "instance_written": self.instance_written,
            "instance_fact": _where(self.instance_loc) or self.instance_pinned_by, "assumed": self.assumed,
            "accelerator": self.accelerator, "gpu_model": self.gpu_model, "gpu_count": self.gpu_count,
            "gpus_per_node": self.gpus_per_node, "gpu_memory_gib": self.gpu_memory_gib,
            "bf16_supported": self.gpu_bf16, "architecture": self.architecture, "interconnect": self.interconnect, "network_gbps": self.network_gbps,
            "rdma": self.rdma, "efa_interfaces": self.efa_interfaces, "local_nvme_gib": self.local_nvme_gib,
            "nodes": self.nodes, "min_nodes": self.min_nodes, "capacity": self.capacity,
            "capacity_fact": _where(self.capacity_loc) or self.capacity_pinned_by,
            "efa_requested": self.efa_requested, "efa_fact": _where(self.efa_loc),
            "why_unknown": self.why_unknown,
            "unknown_instance_types": [{"name": u.name, "where": u.loc.short()} for u in self.unknown_instances],
        }
        if self.placed_on is not None:
            out["placed_on"] = self.placed_on
            out["placed_via"] = list(self.placed_via)
            out["placement"] = self.placement
        elif self.placement_unknown:
            out["placement_unknown"] = self.placement_unknown
        if self.run_hours is not None:
            out["run_hours"] = self.run_hours
            out["run_hours_fact"] = _where(self.run_hours_loc)
        if self.runs_per_month is not None:
            out["runs_per_month"] = self.runs_per_month
            out["runs_per_month_fact"] = _where(self.runs_loc)
        if self.gpu_hour is not None:
            out["priced_per_gpu_hour"] = {"gpu_model": self.gpu_hour.gpu_model, "gpus_per_node": self.gpus_per_node,
                                          "from_instance": self.gpu_hour.from_instance, "from_gpus": self.gpu_hour.from_gpus}
        p = self.price
        if p is not None:
            out.update({"unit_usd_per_hour": p.unit_usd_per_hour, "usd_per_hour": p.usd_per_hour,
                        "price_capacity": p.capacity, "region": p.region, "as_of": p.as_of, "price_source": p.source})
        out["why_no_price"] = self.why_no_price
        return out


def _where(loc: Location | None) -> str | None:
    return loc.short() if loc is not None else None


@dataclass(frozen=True)
class ModelInfo:
    """The model a workload trains or serves, and how its size was decided."""

    params: int
    evidence: str
    name: str | None = None
    active_params: int | None = None
    dims: dict = field(default_factory=dict)
    load_in_4bit: bool = False
    load_in_8bit: bool = False
    embedding_params: int = 0  # of params, in embedding tables (counted models only): lookups that keep no Tensor Core busy

    def to_json(self) -> dict:
        out = {"name": self.name, "params": self.params, "active_params": self.active_params, "evidence": self.evidence,
               "dims": self.dims or None, "load_in_4bit": self.load_in_4bit or None, "load_in_8bit": self.load_in_8bit or None,
               "embedding_params": self.embedding_params or None}
        return {k: v for k, v in out.items() if v is not None}


@dataclass(frozen=True)
class PrecisionInfo:
    """What precision the workload trains in: the per-mechanism view and its summary."""

    view: "PrecisionView"
    mixed: bool | None  # True on, False decided off, None undecided
    dtypes: tuple[str, ...]
    evidence: tuple[str, ...]

    def to_json(self) -> dict:
        return {"mixed": self.mixed, "dtypes": list(self.dtypes), "evidence": list(self.evidence)}


@dataclass(frozen=True)
class CheckpointInfo:
    saves: tuple[Fact, ...] = ()
    resumes: tuple[Fact, ...] = ()

    def to_json(self) -> dict:
        return {"saves": [f"{f.value.get('via')} at {f.loc.short()}" for f in self.saves],
                "resumes": [f"{f.value.get('via')} at {f.loc.short()}" for f in self.resumes]}


@dataclass(frozen=True)
class WorkloadResolution:
    role: str  # TRAINING | INFERENCE | BATCH
    role_reason: str
    compute: ResolvedCompute | None  # as this workload runs it
    job_computes: tuple[ResolvedCompute, ...]  # every target of the job (a PyTorchJob's Master and Worker)
    model: ModelInfo | None
    precision: PrecisionInfo
    checkpoint: CheckpointInfo
    launch_nodes: int | None = None  # nodes the launchers ask for (--nnodes, num_machines, srun -N)
    tutorial: str | None = None  # what makes it tutorial-sized (gpulint.resolve.scale): MNIST, a 1.2M-parameter model ...
    gpus_hidden: str | None = None  # every launcher runs it with no usable GPU (CUDA_VISIBLE_DEVICES= at Makefile:6, a CPU-only torch image)
    unsized: str | None = None  # why nothing sizes its GPU time (gpulint.resolve.scale): no named instance or GPU, unknown model size, one GPU
    to_price: str | None = None  # for an unpriced GPU workload, the one fact that would price it and how to declare it
    #: what is derived from this resolution and its workload's facts, computed on first use and kept for every
    #: rule after (``gpulint.resolve.memfit``'s fit profile and sharding): never compared, printed or serialised,
    #: and empty again in a resolution made with ``dataclasses.replace``
    derived: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    @property
    def device(self) -> str:
        return self.compute.device if self.compute is not None else UNKNOWN

    def to_json(self) -> dict:
        out = {"role": self.role, "role_reason": self.role_reason, "precision": self.precision.to_json(),
               "checkpoint": self.checkpoint.to_json()}
        if self.model is not None:
            out["model"] = self.model.to_json()
        if self.tutorial is not None:
            out["tutorial_sized"] = self.tutorial
        if self.gpus_hidden is not None:
            out["gpus_hidden"] = self.gpus_hidden
        if self.unsized is not None:
            out["spend_unsized"] = self.unsized
        if self.to_price is not None:
            out["to_price"] = self.to_price
        return out
