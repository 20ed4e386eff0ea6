"""Resolution: linked facts -> decided, typed values (``gpulint.resolve.results``), once per scan.

``resolve_scan`` resolves every compute target the linker found (instance from
the catalogue, device kind, nodes, capacity, EFA, price), then every workload
(its role, its compute as it runs it, the model, the precision, the checkpoint
evidence). Rules read the results from ``WorkloadContext.computes`` and
``Workload.resolution`` and never resolve anything themselves. What cannot be
decided is ``None`` with the reason, and listed under the workload's
``unknown``.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import replace
from typing import Any

from gpulint.resolve import modelsize
from gpulint.pricing.catalogue import Catalogue, Instance
from gpulint.core.families import CPU, GPU, UNKNOWN, device_of
from gpulint.core.model import Fact, Location
from gpulint.resolve.precision import precision_view, resolve_cli
from gpulint.read import packaged
from gpulint.read.kubernetes import as_int
from gpulint.resolve.results import (
    BATCH, INFERENCE, TRAINING, CheckpointInfo, GpuHourRate, ModelInfo, PrecisionInfo, Price, ResolvedCompute, UnknownInstance,
    WorkloadResolution,
)
from gpulint.resolve.scale import tutorial_size, unsized_spend
from gpulint.resolve.tfvalues import TerraformValues, is_ref
from gpulint.link.placement import capacity_of as placement_capacity
from gpulint.link.workloads import Compute, Repo, Workload

#: Kubernetes objects that are capacity (nodes), not pods: they need no GPU request to be GPU compute
_CAPACITY_OBJECTS = ("NodePool/", "Provisioner/", "NodeClaim/", "EC2NodeClass/")
TABLE = "[tool.gpulint] workloads table"
CONFIG_MODELS = "[tool.gpulint.models]"


class Resolver:
    """Resolves compute targets (each once, cached by id) and workloads."""

    def __init__(self, repo: Repo, catalogue: Catalogue, config: Any):
        self.repo = repo
        self.catalogue = catalogue
        self.config = config
        self.tf = TerraformValues(repo.facts)
        self.computes: dict[str, ResolvedCompute] = {}

    # -- compute targets ---------------------------------------------------------------------
    def compute(self, compute: Compute) -> ResolvedCompute:
        hit = self.computes.get(compute.id)
        if hit is None:
            hit = self.computes[compute.id] = self._compute(compute)
        return hit

    def _compute(self, compute: Compute) -> ResolvedCompute:
        parts = [compute] + list(compute.joined)
        placed = compute.placed_on
        # the capacity a job is placed on (gpulint.link.placement) supplies what the job leaves unsaid: its machine
        # and market; the job's own statements come first. RDMA: a Slurm node's EFA is every job's on it, while a
        # pod uses only the EFA devices it requests, whatever its node has
        chain = _placement_chain(placed)
        machine_parts = parts + [p for hop in chain for p in (hop, *hop.joined)]
        # (only the first hop: a Slinky NodeSet's slurmd pods use the EFA devices they request, not their node's)
        efa_parts = parts + [placed, *placed.joined] \
            if placed is not None and placement_capacity(placed) != "kubernetes" else parts
        target = compute.first("compute.target")
        tv = (target.value if target is not None else None) or {}
        provider, source, resource = tv.get("provider"), tv.get("source"), tv.get("resource")
        for hop in chain:
            provider = provider or (hop.value("compute.target") or {}).get("provider")
        names: list[tuple[str, Fact]] = []
        unresolved: list[str] = []
        for part in machine_parts:
            for f in part.facts:
                if f.kind != "compute.instance_type":
                    continue
                v = self.tf.value_of(f)
                if isinstance(v.value, str) and v.value.strip():
                    names.append((v.value.strip(), f))
                elif is_ref(f.value):
                    unresolved.append(f"the instance type ({f.loc.short()}): {v.why}")
        accel = next((self._accelerator(f) for p in machine_parts for f in p.facts if f.kind == "compute.accelerator" and isinstance(f.value, dict)), None)
        cat = self.catalogue
        inst: Instance | None = None
        inst_fact: Fact | None = None
        assumed = None
        unknown: list[UnknownInstance] = []
        for name, f in names:
            found = cat.resolve(name, provider=provider, accelerator=accel)
            if found is not None:
                inst, inst_fact = found, f
                break
            unknown.append(UnknownInstance(name, f.loc, f.key))
        # SkyPilot on a Kubernetes cluster, an SSH node pool or a GPU cloud the catalogue does not hold picks no
        # catalogue instance: the cheapest AWS/GCP/Azure match would be a price this job never pays
        infra = str(((target.attrs or {}).get("infra") if target is not None else None) or "").split("/")[0].strip().lower()
        off_catalogue = source == "skypilot" and bool(infra) and provider is None
        # a Modal Function's GPUs are billed per second at Modal's prices, which the catalogue does not hold
        off_catalogue = off_catalogue or source == "modal"
        # a Slurm job, or a Slurm partition of its own (slurm.conf, a queue naming only its GPUs), holds GPUs on nodes
        # the repository names no machine for: never the cheapest cloud machine, but GPU-hours of the named model
        slurm = source == "slurm" or placement_capacity(compute) == "slurm"
        if inst is None and accel and not names and not off_catalogue and not slurm:
            # a GKE node selector names the accelerator, the pod's nvidia.com/gpu request its count: an instance with fewer
            # GPUs than the pod requests never schedules it
            count = accel.get("count") if isinstance(accel.get("count"), int) else self._int(compute, "compute.gpus_per_node")
            cands = cat.by_accelerator(str(accel.get("type") or ""), count, provider)
            priced = sorted((c for c in cands if cat.price(c).usd_per_hour), key=lambda c: cat.price(c).usd_per_hour)
            if priced:
                inst = priced[0]
                picker = "as SkyPilot's optimizer picks" if source == "skypilot" else "an assumption: the repository names no machine type"
                assumed = f"{accel.get('type')}:{count} resolved to the cheapest matching catalogue instance, {picker}"
        gpu_hour = None
        if inst is None and accel and not names and not off_catalogue and (slurm or (source == "kubernetes" and not assumed)):
            # A Slurm job holds the GPUs its gres names on nodes the repository does not describe, and a pod whose GPU
            # count no catalogue machine matches shares a node: both are priced per GPU-hour of the named model
            gpu_hour = self._gpu_hour_rate(str(accel.get("type") or ""), provider)
            if gpu_hour is not None:
                assumed = None
        capacity, capacity_fact, fallback = self._capacity(parts)
        if capacity is None and placed is not None:
            capacity, capacity_fact, fallback = self._capacity(machine_parts)
        nodes = self._int(compute, "compute.node_count")
        if nodes is None and source in ("skypilot", "sagemaker"):
            nodes = 1  # num_nodes / instance_count default to 1
        gpn_fact = compute.first("compute.gpus_per_node")
        gpn = self._int(compute, "compute.gpus_per_node")
        if gpn is None and placed is not None and placed.first("compute.gpus_per_node") is not None:
            # a Slurm node that is a pod (a Slinky NodeSet's slurmd) has the GPUs the pod requests, not its machine's
            gpn_fact, gpn = placed.first("compute.gpus_per_node"), self._int(placed, "compute.gpus_per_node")
        efa, efa_fact = None, None
        for part in efa_parts:
            for f in part.facts:
                if f.kind == "compute.efa":
                    v = self.tf.value_of(f).value
                    if (f.attrs or {}).get("all") and v:
                        # a cluster definition that enables EFA attaches every interface the instance has
                        v = (inst.efa_interfaces if inst is not None else None) or v
                    if isinstance(v, int) and not isinstance(v, bool):
                        efa = max(efa or 0, v)
                        efa_fact = f
        device, reason = self._device(compute, resource, source, provider, inst, names, accel, gpn_fact, gpn)
        why = None
        if inst is None:
            if unknown:
                why = f"instance type {unknown[0].name!r} is not in the catalogue"
            elif unresolved:
                why = unresolved[0]
            elif accel and off_catalogue and source == "modal":
                why = (f"a Modal Function on {accel.get('type')}" + (f" x{accel.get('count')}" if accel.get("count") else "")
                       + ": Modal bills per GPU-second at prices the catalogue does not hold")
            elif accel and off_catalogue:
                why = f"SkyPilot runs it on {infra!r}, which has no catalogue instance or price"
            elif gpu_hour is not None:
                why = (f"no machine type is named; the job is priced per GPU-hour of {gpu_hour.gpu_model} "
                       f"(the lowest per-GPU rate in the catalogue, {gpu_hour.from_instance})")
            elif accel:
                count = accel.get("count") if accel.get("count") is not None else gpn
                why = (f"accelerator {accel.get('type')!r}" + (f" x{count}" if count is not None else "")
                       + " matches no catalogue instance")
            elif (gpu_only := next((f for p in machine_parts for f in p.facts if f.kind == "compute.gpu_only"), None)):
                where = "" if gpu_only.loc.path == compute.path else f" (placed on {gpu_only.loc.path})"
                why = f"any GPU instance that {gpu_only.value} admits{where}: the machine is not one the repository names"
            else:
                why = f"{compute.id} names no instance type"
        like = None
        # (a job priced per GPU-hour names its GPU through that rate already: the rate's instance gives its architecture)
        if inst is None and gpu_hour is None and accel and accel.get("type"):
            like = next(iter(cat.by_accelerator(str(accel.get("type")), None, provider)), None)
        rc = ResolvedCompute(
            id=compute.id, path=compute.path, target=compute.target, loc=compute.loc, source=source, provider=provider,
            resource=resource, target_role=tv.get("role"), device=device, device_reason=reason, instance=inst,
            gpu_like=like, architecture=self._architecture(inst or like or (gpu_hour.source if gpu_hour is not None else None)),
            instance_written=next((n for n, f in names if f is inst_fact), names[0][0] if names else None),
            instance_loc=inst_fact.loc if inst_fact is not None else None, assumed=assumed, accelerator=accel,
            gpus_per_node=gpn or (inst.gpu_count if inst is not None else None), nodes=nodes,
            min_nodes=self._int(compute, "compute.min_nodes"), capacity=capacity,
            capacity_loc=capacity_fact.loc if capacity_fact is not None else None, on_demand_fallback=fallback,
            efa_requested=efa, efa_loc=efa_fact.loc if efa_fact is not None else None, gpu_hour=gpu_hour, why_unknown=why,
            placed_on=placed.id if placed is not None else None, placed_via=tuple(hop.id for hop in chain),
            placement=compute.placement,
            placement_unknown=compute.placement_unknown,
            **self._run_hours(parts),
            unknown_instances=tuple(unknown) if inst is None else (),
            facts=tuple(compute.all_facts + (placed.all_facts if placed is not None else [])),
        )
        return self.priced(rc)

    def _run_hours(self, parts: list[Compute]) -> dict:
        """How long one run may last (a Slurm --time, a Job's activeDeadlineSeconds, a SageMaker job's max_run in
        seconds, whose 24 h default is not stated in the repository and so not used), and how often it runs."""
        runs = next((f for part in parts for f in part.facts
                     if f.kind == "compute.runs_per_month" and isinstance(f.value, (int, float)) and f.value > 0), None)
        out = {"runs_per_month": float(runs.value), "runs_loc": runs.loc} if runs is not None else {}
        return {**out, **self._run_limit(parts)}

    def _run_limit(self, parts: list[Compute]) -> dict:
        for part in parts:
            for f in part.facts:
                if f.kind == "compute.time_limit" and isinstance(f.value, (int, float)) and f.value > 0:
                    return {"run_hours": float(f.value), "run_hours_loc": f.loc}
                if f.kind == "compute.checkpoint" and isinstance(f.value, dict):
                    seconds = as_int(f.value.get("max_run"))
                    if seconds and seconds > 0:
                        return {"run_hours": round(seconds / 3600, 4), "run_hours_loc": f.loc}
        return {}

    def _gpu_hour_rate(self, accel_type: str, provider: str | None) -> GpuHourRate | None:
        """The catalogue instance with the lowest on-demand price per GPU among those carrying ``accel_type``."""
        cat = self.catalogue
        best: tuple[float, Instance] | None = None
        for cand in cat.by_accelerator(accel_type, None, provider):
            usd = cat.price(cand).usd_per_hour
            if usd and cand.gpu_count and (best is None or usd / cand.gpu_count < best[0]):
                best = (usd / cand.gpu_count, cand)
        return GpuHourRate(best[1]) if best is not None else None

    def _architecture(self, inst: Instance | None) -> str | None:
        gpu = self.catalogue.gpu(inst)
        return gpu.architecture if gpu is not None else None

    def _capacity(self, parts: list[Compute]) -> tuple[str | None, Fact | None, bool]:
        capacity, where, fallback = None, None, False
        alternative_on_demand = False
        for part in parts:
            for f in part.facts:
                if f.kind != "compute.capacity":
                    continue
                v = self.tf.value_of(f).value
                if v not in ("spot", "on-demand", "reserved"):
                    continue
                if v == "reserved":
                    # a reservation the nodes are placed in outranks the on-demand a market type implies
                    if capacity != "spot":
                        capacity, where = "reserved", f
                elif v == "spot":
                    capacity, where = "spot", f
                    fallback = fallback or bool((f.attrs or {}).get("on_demand_fallback"))
                else:
                    # one of several alternatives (SkyPilot any_of: [{use_spot: true}, {use_spot: false}]): the fallback
                    alternative_on_demand = alternative_on_demand or bool((f.attrs or {}).get("alternatives"))
                    if capacity is None or (capacity == "on-demand" and (f.attrs or {}).get("default")):
                        capacity, where = v, f
        return capacity, where, fallback or (capacity == "spot" and alternative_on_demand)

    def _int(self, compute: Compute, kind: str) -> int | None:
        for f in compute.facts:
            if f.kind == kind:
                v = as_int(self.tf.value_of(f).value)  # "2" too: Terraform converts digits where a number is expected
                if v is not None:
                    return v
        return None

    def _accelerator(self, f: Fact) -> dict:
        """A ``compute.accelerator`` value with Terraform references resolved (``type = var.gpu_type`` whose default,
        in the module's variables.tf, is ``"nvidia-tesla-t4"``); a reference that cannot be resolved stays one."""
        out = dict(f.value)
        folder = posixpath.dirname(f.loc.path)
        for key in ("type", "count"):
            if is_ref(out.get(key)):
                got = self.tf.resolve(out[key]["ref"], folder)
                if got.known:
                    out[key] = got.value
        count = as_int(out.get("count"))
        if count is not None:
            out["count"] = count  # "1" from a string-typed variable: Terraform converts it to a number
        return out

    @staticmethod
    def _device(compute, resource, source, provider, inst, names, accel, gpn_fact, gpn) -> tuple[str, str]:
        if source == "kubernetes" and not str(resource or "").startswith(_CAPACITY_OBJECTS):
            # a pod sees GPUs only through a device-plugin request, whatever node it lands on
            if gpn_fact is None or gpn == 0:
                other = str(accel.get("type") or "") if isinstance(accel, dict) else ""
                if re.search(r"tpu|neuron|gaudi|habana", other, re.I):
                    # a TPU slice or Trainium/Inferentia/Gaudi pod: no GPU, but no CPU job either
                    return UNKNOWN, f"the pod asks for {other}, an accelerator other than a GPU that gpulint does not model"
                return CPU, "the pod requests no GPU (nvidia.com/gpu or amd.com/gpu)"
            return GPU, f"the pod requests {gpn if gpn is not None else 'some'} GPU(s) ({gpn_fact.loc.short()})"
        if source == "compose" and gpn_fact is not None:
            # a Compose service's GPU reservation: the host has them, whatever machine it is
            return GPU, (f"the service reserves {gpn} GPU(s)" if gpn is not None else "the service reserves the host's GPUs") + \
                f" ({gpn_fact.loc.short()})"
        if inst is not None:
            return GPU, f"{inst.name} has {inst.gpu_count}x {inst.gpu_model} (catalogue)"
        if isinstance(gpn, int) and gpn > 0:
            return GPU, f"{gpn} GPU(s) requested per node ({gpn_fact.loc.short()})"
        count = accel.get("count") if isinstance(accel, dict) else None
        if names:
            device, why = device_of(names[0][0], provider, count if isinstance(count, int) else None)
            return device, why
        if accel and source == "determined":
            return GPU, (f"{accel.get('count')} slots per trial (a Determined slot is a GPU), spread over agents the "
                         f"config does not name")
        if accel:
            return GPU, f"accelerator {accel.get('type')} requested"
        gpu_only = compute.first("compute.gpu_only")
        if gpu_only is not None:
            return GPU, (f"it launches only GPU instances ({gpu_only.value}, {gpu_only.loc.short()}); which one is "
                         f"not stated, so it is not priced")
        if source == "skypilot":
            return CPU, "the SkyPilot task requests no accelerators"
        return UNKNOWN, "no instance type, accelerator or GPU request decides it"

    def priced(self, rc: ResolvedCompute, pinned: str | None = None) -> ResolvedCompute:
        """``rc`` with the price of its nodes on its capacity (the capacity it is priced at is named)."""
        inst = rc.instance
        if inst is None:
            return rc.with_(price=self._gpu_hour_price(rc))
        # a Modal Function is preemptible at Modal's one list price: there is no cheaper spot rate to price it at
        cap = "spot" if rc.capacity == "spot" and rc.source != "modal" else "on-demand"
        written = rc.instance_written or ""
        sagemaker = written.lower().startswith("ml.")
        use = _SAGEMAKER_USE.get(rc.target_role or "")
        # SageMaker bills its own price per use; managed spot training has no list price, so spot stays the EC2 twin's
        own = self.catalogue.sagemaker_price(written, use) if sagemaker and use and cap == "on-demand" else None
        p = own or self.catalogue.price(inst, cap)
        n = rc.nodes or 1
        source = p.source + (f"; {p.note}" if p.note else "")
        if rc.capacity == "reserved":
            source += ("; reserved capacity (a capacity block or reservation) is priced at the on-demand list rate: the "
                       "reservation's own rate is not in the repository, and it is billed whether or not nodes run")
        if sagemaker and own is None:
            source += ("; this is the EC2 list price of the SageMaker instance's twin: SageMaker lists higher, so the figure "
                       "is a lower bound (`gpulint catalogue import` of the AmazonSageMaker price list prices it exactly)")
        why = None if p.usd_per_hour else f"the catalogue has no {cap} price for {inst.name}"
        price = Price(p.usd_per_hour, round(p.usd_per_hour * n, 4) if p.usd_per_hour else None, cap, n, p.region, p.as_of,
                      source, why)
        return rc.with_(price=price)

    def _gpu_hour_price(self, rc: ResolvedCompute) -> Price | None:
        """A GPU-model-only job's price: its GPUs per node times the rate's per-GPU price, on its capacity."""
        rate = rc.gpu_hour
        if rate is None or not rc.gpus_per_node:
            return None
        cap = "spot" if rc.capacity == "spot" else "on-demand"
        p = self.catalogue.price(rate.source, cap)
        if not p.usd_per_hour:
            return Price(None, None, cap, rc.nodes or 1, None, None, "", f"the catalogue has no {cap} price for {rate.from_instance}")
        per_gpu = p.usd_per_hour / rate.from_gpus
        unit = round(per_gpu * rc.gpus_per_node, 4)
        n = rc.nodes or 1
        source = (f"{rate.from_instance} ${p.usd_per_hour:.2f}/h over its {rate.from_gpus} GPUs, the lowest per-GPU {cap} rate "
                  f"for {rate.gpu_model} in the catalogue; an assumption: the repository names the GPU, not the machine, "
                  f"and the job pays only for the GPUs it holds"
                  + ("; on a cluster you own or share, read it as the cloud list price of the same GPU-hours"
                     if rc.source in ("slurm", "slurm.conf") else "")
                  + f"; {p.source}" + (f"; {p.note}" if p.note else ""))
        return Price(unit, round(unit * n, 4), cap, n, p.region, p.as_of, source)

    # -- workloads ---------------------------------------------------------------------------
    def workload(self, wl: Workload, all_computes: dict[str, Compute]) -> WorkloadResolution:
        launch_nodes = _launch_nodes(wl)
        rc = self.compute(wl.compute) if wl.compute is not None else None
        if rc is not None and rc.nodes is None and launch_nodes:
            rc = self.priced(rc.with_(nodes=launch_nodes))
        rc = self._table(wl, rc, launch_nodes)
        job = [rc] if rc is not None else []
        for l in wl.launchers:
            other = all_computes.get(f"{l.loc.path}#{l.target}") if l.target else None
            if other is not None and all(other.id != c.id for c in job):
                job.append(self.compute(other))
        for extra in wl.job_computes:
            if all(extra.id != c.id for c in job):
                job.append(self.compute(extra))
        model = self._model(wl)
        view = precision_view(wl)
        precision = PrecisionInfo(
            view=view,
            mixed=True if view.on else (False if view.decided_off else None),
            dtypes=tuple(sorted(view.dtypes)),
            evidence=tuple(
                [f"{f.value.get('mechanism') if isinstance(f.value, dict) and f.kind == 'precision' else f.kind} at {f.loc.short()}" for f, _ in view.on]
                + [f"off: {f.key or f.kind} at {f.loc.short()}" for f in view.off + view.default_off]
                + [f"undecided: {f.key or f.kind} at {f.loc.short()}" for f in view.unknown]),
        )
        for f in (view.unknown if precision.mixed is None else ()):  # undecided overall: say what leaves it open
            v = f.value if isinstance(f.value, dict) else {}
            why = v.get("undecided") or f"{v.get('mechanism') or f.kind} is decided at run time"
            wl.unknown.append(f"precision: {why} ({f.loc.short()})")
        role, why = _role(wl, rc)
        res = WorkloadResolution(role=role, role_reason=why, compute=rc, job_computes=tuple(job), model=model,
                                 precision=precision, checkpoint=CheckpointInfo(tuple(wl.of("checkpoint.save")), tuple(wl.of("checkpoint.resume"))),
                                 launch_nodes=launch_nodes, tutorial=tutorial_size(wl, model), gpus_hidden=_gpus_hidden(wl),
                                 unsized=unsized_spend(wl, model, rc, launch_nodes))
        if not res.gpus_hidden and (rc is None or (rc.device != CPU and not rc.usd_per_hour)):
            res = replace(res, to_price=_to_price(wl, rc))
        if res.gpus_hidden:
            wl.reasons.append(f"device: every launcher runs it with no usable GPU ({res.gpus_hidden}): GPU checks do not apply")
        if rc is not None and rc.placed_on:
            wl.reasons.append(f"placement: {rc.id} runs on {rc.placement}")
        elif rc is not None and rc.placement_unknown:
            wl.unknown.append(f"placement: {rc.placement_unknown}")
        if rc is not None and rc.device == CPU:
            wl.reasons.append(f"device: {rc.id} is CPU compute ({rc.device_reason}): GPU checks do not apply")
        elif rc is not None:
            if rc.instance is None:
                wl.unknown.append(f"instance: {rc.why_unknown or rc.why_no_price}")
            if rc.capacity is None:
                wl.unknown.append("capacity: spot or on-demand is not stated; on-demand assumed for prices")
            if rc.nodes is None:
                wl.unknown.append("nodes: no node count found; 1 assumed for prices")
        return res

    def _table(self, wl: Workload, rc: ResolvedCompute | None, launch_nodes: int | None) -> ResolvedCompute | None:
        ov = wl.overrides
        if not (ov.get("instance") or ov.get("capacity") or ov.get("nodes")):
            return rc
        if rc is None:
            loc = Location(wl.entrypoint)
            rc = ResolvedCompute(id=TABLE, path="", target="", loc=loc, source="config", provider=None, resource=None,
                                 target_role=None, device=UNKNOWN, device_reason="pinned in the workloads table")
        changes: dict[str, Any] = {}
        if ov.get("capacity"):
            changes.update(capacity=ov["capacity"], capacity_loc=None, capacity_pinned_by=TABLE)
        nodes = ov.get("nodes") or rc.nodes or launch_nodes
        changes["nodes"] = nodes
        if ov.get("instance"):
            wl.reasons.append(f"config: workloads table pins instance {ov['instance']}")
            wl.unknown[:] = [u for u in wl.unknown if not u.startswith("compute:")]
            inst = self.catalogue.resolve(ov["instance"])
            changes.update(instance=inst, instance_written=ov["instance"], instance_loc=None, instance_pinned_by=TABLE,
                           assumed=None, unknown_instances=(), architecture=self._architecture(inst))
            if inst is not None:
                changes.update(device=GPU, device_reason=f"{inst.name} has {inst.gpu_count}x {inst.gpu_model} (catalogue)",
                               gpus_per_node=inst.gpu_count, why_unknown=None)
            else:
                device, why = device_of(str(ov["instance"]))
                changes.update(device=device, device_reason=why,
                               why_unknown=f"instance {ov['instance']!r} from the workloads table is not in the catalogue")
        return self.priced(rc.with_(**changes))

    def _model(self, wl: Workload) -> ModelInfo | None:
        extra = [{"id": k, "params": int(v), "table": CONFIG_MODELS, "source": CONFIG_MODELS}
                 for k, v in (self.config.models or {}).items()]
        ov = wl.overrides
        if ov.get("params"):
            return ModelInfo(params=int(ov["params"]), evidence=f"{TABLE} params", name=ov.get("model"))
        if ov.get("model"):
            size = self._size_for_name(ov["model"], extra)
            if size is not None:
                return ModelInfo(params=size.params, active_params=size.active_params, name=ov["model"],
                                 evidence=f"{size.evidence} ({TABLE} model)", dims=dict(size.dims or {}))
        names = [f for f in wl.of("model.name") if isinstance(f.value, str)]
        for f in names:
            name = f.value
            flag = (f.attrs or {}).get("cli_arg")
            if flag:  # an argparse default: what the launchers pass decides (unknown when they pass several, or none is read)
                name = resolve_cli({"cli_arg": flag, "default": f.value,
                                    **({"default_unknown": True} if (f.attrs or {}).get("default_unknown") else {})}, wl)
                if not isinstance(name, str):
                    continue
            size = self._size_for_name(name, extra)
            if size is not None:
                attrs = f.attrs or {}
                return ModelInfo(params=size.params, active_params=size.active_params, name=name,
                                 evidence=f"{size.evidence} ({f.loc.short()}{', the default of ' + flag if flag else ''})",
                                 dims=dict(size.dims or {}),
                                 load_in_4bit=bool(attrs.get("load_in_4bit")), load_in_8bit=bool(attrs.get("load_in_8bit")))
        for f in wl.of("model.config"):
            size = modelsize.from_hf_config(f.value, source=f.loc.short())
            if size is not None:
                return ModelInfo(params=size.params, active_params=size.active_params, evidence=f"{size.evidence} ({f.loc.short()})",
                                 dims=dict(size.dims or {}))
        counted = wl.code_facts("model.layers")
        if counted and not names and all(isinstance(f.value.get("params"), int) for f in counted):
            # every model the workload's code builds is framework layers of literal sizes: their sum bounds the model
            total = sum(f.value["params"] for f in counted)
            shown = ", ".join(sorted({f.value["name"] for f in counted})[:3])
            return ModelInfo(params=total, evidence=f"counted from the literal layer sizes of {shown} ({counted[0].loc.short()})",
                             embedding_params=sum(f.value.get("embedding_params") or 0 for f in counted))
        served = _served_model(wl)
        if served is not None:
            name, launcher = served
            size = self._size_for_name(name, extra)
            if size is not None:
                return ModelInfo(params=size.params, active_params=size.active_params, name=name,
                                 evidence=f"{size.evidence} (served by {launcher.loc.short()})", dims=dict(size.dims or {}))
            names = names or [launcher]
        if names:
            shown = names[0].value if isinstance(names[0].value, str) else served[0] if served else names[0].value
            wl.unknown.append(f"model size: {shown!r} is not a known model and carries no size hint; add it under [tool.gpulint.models]")
        nemo = next((t for t in wl.code_facts("trains") if t.value.get("via") in ("nemo2_recipe", "nemo2_task")), None)
        if nemo is not None and not names:
            wl.unknown.append(f"model size: {nemo.key} ({nemo.loc.short()}) builds its model from NeMo's configs and shards it "
                              "with Megatron parallelism: not modelled, so the memory checks do not run")
        return None

    def _size_for_name(self, name: str, extra: list):
        size = modelsize.from_name(name, extra)
        if size is not None:
            return size
        # a local checkpoint folder with a config.json
        for path, facts in self.repo.facts.items():
            if path.endswith("config.json") and posixpath.dirname(path).endswith(name.strip("./").rstrip("/")):
                for f in facts:
                    if f.kind == "model.config":
                        return modelsize.from_hf_config(f.value, source=path)
        return None


#: flags that name the model of a model server (vLLM, TGI, SGLang, LMDeploy, TensorRT-LLM serve ...)
_MODEL_FLAGS = ("--model", "--model-id", "--model_id", "--model-path", "--model_path", "--model-name", "--served-model-name")
_SERVE_VERBS = ("serve",)


def _placement_chain(placed: Compute | None) -> list[Compute]:
    """The capacity a job is placed on, then what that capacity is placed on in turn (a Slurm job on a Slinky
    NodeSet, the NodeSet's pods on a node group): nearest first, each once."""
    out: list[Compute] = []
    while placed is not None and all(placed.id != hop.id for hop in out):
        out.append(placed)
        placed = placed.placed_on
    return out


def _to_price(wl: Workload, rc: ResolvedCompute | None) -> str:
    """The one fact that would price an unpriced workload, and where to declare it."""
    pin = f'a [[tool.gpulint.workloads]] entry with entrypoint = "{wl.entrypoint}" and instance = "<machine type>"'
    if rc is None:
        return (f"the machine it runs on: nothing in the repository names one; declare it in {pin} "
                "(and nodes = N, capacity = \"spot\" where they apply)")
    if rc.instance is not None:
        return (f"a price for {rc.instance.name}: [tool.gpulint.pricing] prices = {{ \"{rc.instance.name}\" = <USD per hour> }}, "
                "or `gpulint catalogue import` of a price list that has it")
    if rc.unknown_instances:
        name = rc.unknown_instances[0].name
        return (f"catalogue facts for {name!r}: a [[tool.gpulint.instances]] entry (provider, name, gpu_model, gpu_count, "
                f"gpu_memory_gib, on_demand_usd_per_hour), or {pin} with a catalogue instance of the same hardware")
    accel = rc.accelerator or {}
    if rc.source == "slurm" and rc.gpus_per_node and not accel:
        return (f"the GPU model: --gres=gpu:<model>:{rc.gpus_per_node} (a100, h100, l4 ...) prices it per GPU-hour; "
                f"or the machine type, {pin}")
    if rc.source == "modal":
        return (f"Modal's per-second price of {accel.get('type') or 'its GPU'}: a [[tool.gpulint.instances]] entry (provider = "
                f"\"modal\", name, gpu_model, gpu_count, gpu_memory_gib, on_demand_usd_per_hour) and {pin} naming it")
    return f"the machine type of {rc.id}: {pin}"


#: the role of a compute target -> the SageMaker use it is billed as (gpulint.pricing.catalogue.SAGEMAKER_USES)
_SAGEMAKER_USE = {"training": "training", "serving": "hosting", "notebook": "notebook"}


def _served_model(wl: Workload) -> tuple[str, Fact] | None:
    """The model a model-server launcher names (``vllm serve meta-llama/...``, ``--model X``,
    ``text-generation-launcher --model-id X``), with the launch that names it."""
    for l in wl.launchers:
        args = [a for a in (l.value.get("args") or []) if isinstance(a, str)]
        words = [str(l.value.get("script") or ""), str(l.value.get("module") or "")] + args
        for i, a in enumerate(args):
            flag, eq, val = a.partition("=")
            if flag in _MODEL_FLAGS[:-1]:
                val = val if eq else (args[i + 1] if i + 1 < len(args) else "")
                if val and not val.startswith(("-", "$")):
                    return val, l
        if any(w in ("vllm", "sglang") or w.endswith(("/vllm", "vllm.entrypoints.cli.main")) for w in words) and args:
            if args[0] in _SERVE_VERBS and len(args) > 1 and not args[1].startswith("-"):
                return args[1], l
    return None


#: CUDA_VISIBLE_DEVICES values that leave no GPU visible to the process (an empty list, or an invalid ordinal first)
_NO_GPU_VISIBLE = ("", "-1", "none", "NoDevFiles")


def _gpus_hidden(wl: Workload) -> str | None:
    """Where the workload's launchers hide every GPU (``CUDA_VISIBLE_DEVICES= python train.py``, or exported empty
    earlier in the launcher's file) or run it in an image whose PyTorch is a CPU-only build (a Dockerfile that
    installs from download.pytorch.org/whl/cpu), when every launcher does: the process then trains on the CPU
    whatever its code asks for. None when a launcher leaves the GPUs visible, sets it at run time, or only in a branch."""
    if not wl.launchers:
        return None
    where = []
    for l in wl.launchers:
        cpu_image = (l.attrs or {}).get("image_cpu_torch")
        if cpu_image:
            where.append(f"its image installs a CPU-only PyTorch at {cpu_image}")
            continue
        sets = [e for e in wl.env if e.value.get("name") == "CUDA_VISIBLE_DEVICES" and e.loc.path == l.loc.path
                and (e.loc.line or 0) <= (l.loc.line or 0) and (not e.target or e.target == l.target)]
        last = max(sets, key=lambda e: e.loc.line or 0, default=None)  # the assignment in force when it runs
        if last is None or (last.attrs or {}).get("conditional") or last.value.get("value") not in _NO_GPU_VISIBLE:
            return None
        if (last.attrs or {}).get("scope") == "command" and last.loc.line != l.loc.line:
            return None  # set for another command of the file
        where.append(f"CUDA_VISIBLE_DEVICES={last.value.get('value')} at {last.loc.short()}")
    return ", ".join(dict.fromkeys(where))


def _launch_nodes(wl: Workload) -> int | None:
    nodes = None
    for l in wl.launchers:
        v = l.value
        for key in ("nnodes", "num_machines"):
            if isinstance(v.get(key), int) and not isinstance(v.get(key), bool):
                nodes = v[key]
        w = v.get("wrapper") or {}
        if isinstance(w, dict) and isinstance(w.get("nodes"), int):
            nodes = nodes or w["nodes"]
    for f in wl.of("config.accelerate"):
        if isinstance(f.value.get("num_machines"), int):
            nodes = nodes or f.value["num_machines"]
    return nodes


def _role(wl: Workload, rc: ResolvedCompute | None) -> tuple[str, str]:
    """Training when the code trains; inference when it serves (or its compute is a serving
    target); batch otherwise (a job that runs a script that neither trains nor serves)."""
    trains = wl.code_facts("trains")
    if trains:
        return TRAINING, f"{trains[0].value.get('via')} at {trains[0].loc.short()}"
    if wl.launch_training:  # a job whose code is not in the repository: its launcher says it trains
        return TRAINING, f"the launcher: {wl.launch_training}"
    # a packaged trainer's own training command (llamafactory-cli train, axolotl train, tune run) run on a copy of
    # that trainer in the repository: the command trains by the trainer's documentation, even where its code trains
    # through a Trainer subclass gpulint does not follow
    cli = next(((l, t) for l in wl.launchers if (t := packaged.trainer_of_launch(l.value)) is not None), None)
    if cli is not None:
        return TRAINING, f"the launcher: {cli[0].loc.short()} runs {cli[1].label}'s training command"
    serves = wl.code_facts("serves")
    if serves:
        return INFERENCE, f"serves with {serves[0].value.get('via')} at {serves[0].loc.short()}"
    if rc is not None and rc.target_role == "serving":
        return INFERENCE, f"{rc.id} is a serving target"
    inference = wl.code_facts("inference")
    if inference:
        return BATCH, f"runs a model ({inference[0].value.get('via')} at {inference[0].loc.short()}) without training or serving"
    return BATCH, "neither trains nor serves"


def resolve_scan(workloads: list[Workload], computes: dict[str, Compute], repo: Repo, catalogue: Catalogue,
                 config: Any) -> dict[str, ResolvedCompute]:
    """Resolve every compute target and every workload (sets ``wl.resolution``); returns the targets by id."""
    resolver = Resolver(repo, catalogue, config)
    for c in computes.values():
        resolver.compute(c)
    for wl in workloads:
        wl.resolution = resolver.workload(wl, computes)
    return dict(resolver.computes)
