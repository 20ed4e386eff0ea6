"""Turning a workload's linked facts into decided values: the instance (from
the catalogue), node and GPU counts, capacity, price, model size, precision and
checkpoint evidence. Each value keeps the evidence it came from; what cannot
be decided is listed under the workload's ``unknown``.
"""
from __future__ import annotations

import posixpath
from typing import Any

from gpulint.context import WorkloadContext
from gpulint.model import Fact
from gpulint.workloads import Compute, Repo, Workload


# -- Terraform references ---------------------------------------------------------------
def tf_value(fact: Fact | None, compute: Compute, repo: Repo) -> Any:
    """A compute fact's value with ``{"ref": "var.x"}`` resolved from the
    variables and locals of the same Terraform module (its folder)."""
    if fact is None:
        return None
    v = fact.value
    if not (isinstance(v, dict) and "ref" in v):
        return v
    ref = v["ref"]
    kind, _, name = ref.partition(".")
    folder = posixpath.dirname(compute.path)
    raw = None
    for path in sorted(repo.facts):
        if posixpath.dirname(path) != folder:
            continue
        for f in repo.facts[path]:
            if kind == "var" and f.kind == "tf.variable" and f.value.get("name") == name:
                raw = f.value.get("default")
            elif kind == "local" and f.kind == "tf.local" and f.value.get("name") == name:
                raw = f.value.get("value")
    # terraform.tfvars / *.auto.tfvars would override defaults; gpulint does not read them, so a
    # variable without a literal default stays unknown
    if raw is None:
        return None
    mapping = v.get("map")
    if isinstance(mapping, dict):
        key = raw.lower() if isinstance(raw, str) else str(raw).lower()
        return mapping.get(key, None)
    return raw


def _facts(compute: Compute, kind: str) -> list[Fact]:
    return [f for f in compute.facts if f.kind == kind]


def _joined(compute: Compute, ctx: WorkloadContext) -> list[Compute]:
    """The compute itself plus a launch template it starts (ASG -> template)."""
    return [compute] + list(compute.joined)


def resolve_compute(compute: Compute, ctx: WorkloadContext, nodes_hint: Any = None) -> dict:
    """Decided facts about one compute target; ``why_no_price`` says what is missing."""
    repo = ctx.repo
    cat = ctx.catalogue
    parts = _joined(compute, ctx)
    target = compute.first("compute.target")
    provider = (target.value or {}).get("provider") if target else None
    out: dict[str, Any] = {"id": compute.id, "source": (target.value or {}).get("source") if target else None, "provider": provider}
    names: list[tuple[str, Fact]] = []
    unresolved: list[str] = []
    for part in parts:
        for f in _facts(part, "compute.instance_type"):
            v = tf_value(f, part, repo)
            if isinstance(v, str) and v:
                names.append((v, f))
            elif isinstance(f.value, dict) and "ref" in f.value:
                unresolved.append(f"{f.value['ref']} ({f.loc.short()}) has no literal default in its module")
    accel = None
    for part in parts:
        for f in _facts(part, "compute.accelerator"):
            if isinstance(f.value, dict):
                accel = f.value
                break
    inst = None
    unknown_names = []
    for name, f in names:
        hit = cat.resolve(name, provider=provider, accelerator=accel)
        if hit is not None:
            inst = hit
            out["instance_fact"] = f.loc.short()
            out["instance_written"] = name
            break
        unknown_names.append((name, f))
    if inst is None and accel and not names:
        cands = cat.by_accelerator(str(accel.get("type") or ""), accel.get("count"), provider)
        priced = sorted((c for c in cands if cat.price(c).usd_per_hour), key=lambda c: cat.price(c).usd_per_hour)
        if priced:
            inst = priced[0]
            out["assumed"] = f"{accel.get('type')}:{accel.get('count')} resolved to the cheapest matching catalogue instance, as SkyPilot's optimizer picks"
    out["unknown_instance_types"] = [{"name": n, "where": f.loc.short(), "line": f.loc.line, "path": f.loc.path, "key": f.key} for n, f in unknown_names if inst is None]
    capacity = None
    for part in parts:
        for f in _facts(part, "compute.capacity"):
            v = tf_value(f, part, repo)
            if v in ("spot", "on-demand"):
                if capacity is None or (capacity == "on-demand" and (f.attrs or {}).get("default")):
                    capacity = v
                    out["capacity_fact"] = f.loc.short()
                if v == "spot":
                    capacity = "spot"
                    out["capacity_fact"] = f.loc.short()
    out["capacity"] = capacity
    nodes = None
    for f in _facts(compute, "compute.node_count"):
        v = tf_value(f, compute, repo)
        if isinstance(v, int) and not isinstance(v, bool):
            nodes = v
            break
    if nodes is None and isinstance(nodes_hint, int):
        nodes = nodes_hint
    if nodes is None and out["source"] in ("skypilot", "sagemaker"):
        nodes = 1  # num_nodes / instance_count default to 1
    out["nodes"] = nodes
    gpn = None
    for f in _facts(compute, "compute.gpus_per_node"):
        v = tf_value(f, compute, repo)
        if isinstance(v, int) and not isinstance(v, bool):
            gpn = v
    efa = None
    for part in parts:
        for f in _facts(part, "compute.efa"):
            v = tf_value(f, part, repo)
            if isinstance(v, int) and not isinstance(v, bool):
                efa = max(efa or 0, v)
                out["efa_fact"] = f.loc.short()
    out["efa_requested"] = efa
    if inst is not None:
        out.update(_instance_fields(inst, ctx, capacity, nodes, gpn, written=out.get("instance_written")))
    else:
        out["gpus_per_node"] = gpn
        if unknown_names:
            out["why_no_price"] = f"instance type {unknown_names[0][0]!r} is not in the catalogue"
        elif unresolved:
            out["why_no_price"] = f"the instance type {unresolved[0]}"
        elif accel:
            out["why_no_price"] = f"accelerator {accel.get('type')!r} x{accel.get('count')} matches no catalogue instance"
        else:
            out["why_no_price"] = f"{compute.id} names no instance type"
    return out


def _instance_fields(inst, ctx: WorkloadContext, capacity: str | None, nodes: int | None, gpn: int | None = None,
                     written: str | None = None) -> dict:
    """Catalogue facts and the price of `nodes` x `inst` on `capacity`."""
    cat = ctx.catalogue
    gpu = cat.gpu(inst)
    price = cat.price(inst, capacity or "on-demand")
    n = nodes or 1
    source = price.source + (f"; {price.note}" if price.note else "")
    if written and written.lower().startswith("ml."):
        source += ("; this is the EC2 list price of the SageMaker instance's twin: SageMaker lists higher "
                   "(about +15-40% by a third-party table, unverified), so the figure is a lower bound")
    out = {
            "instance": inst.name,
            "provider": inst.provider,
            "gpu_model": inst.gpu_model,
            "gpu_count": inst.gpu_count,
            "gpus_per_node": gpn or inst.gpu_count,
            "gpu_memory_gib": inst.gpu_memory_gib,
            "bf16_supported": inst.bf16_supported,
            "architecture": gpu.architecture if gpu else None,
            "interconnect": inst.gpu_interconnect,
            "network_gbps": inst.network_gbps,
            "rdma": inst.rdma,
            "efa_interfaces": inst.efa_interfaces,
            "local_nvme_gib": inst.local_nvme_gib,
            "unit_usd_per_hour": price.usd_per_hour,
            "usd_per_hour": round(price.usd_per_hour * n, 4) if price.usd_per_hour else None,
            "region": price.region,
            "as_of": price.as_of,
            "price_source": source,
    }
    if not price.usd_per_hour:
        out["why_no_price"] = f"the catalogue has no {capacity or 'on-demand'} price for {inst.name}"
    return out


def _all_computes(ctx: WorkloadContext) -> list[Compute]:
    cached = getattr(ctx, "_computes", None)
    if cached is None:
        from gpulint.workloads import compute_targets

        cached = list(compute_targets(ctx.repo).values())
        ctx._computes = cached  # type: ignore[attr-defined]
    return cached


# -- the workload ------------------------------------------------------------------------------
def resolve_workload(wl: Workload, ctx: WorkloadContext) -> None:
    launch_nodes = None
    for l in wl.launchers:
        v = l.value
        for key in ("nnodes", "num_machines"):
            if isinstance(v.get(key), int):
                launch_nodes = v[key]
        w = v.get("wrapper") or {}
        if isinstance(w, dict) and isinstance(w.get("nodes"), int):
            launch_nodes = launch_nodes or w["nodes"]
    for f in wl.of("config.accelerate"):
        if isinstance(f.value.get("num_machines"), int):
            launch_nodes = launch_nodes or f.value["num_machines"]
    if wl.compute is not None:
        wl.resolved["compute"] = resolve_compute(wl.compute, ctx, launch_nodes)
    ov = wl.overrides
    if ov.get("instance") or ov.get("capacity") or ov.get("nodes"):
        base = wl.resolved.setdefault("compute", {})
        name = ov.get("instance") or base.get("instance_written") or base.get("instance")
        inst = ctx.catalogue.resolve(name) if name else None
        capacity = ov.get("capacity") or base.get("capacity")
        nodes = ov.get("nodes") or base.get("nodes") or launch_nodes
        base.update({"capacity": capacity, "nodes": nodes})
        if ov.get("capacity"):
            base["capacity_fact"] = "[tool.gpulint] workloads table"
        if ov.get("instance"):
            base["instance_fact"] = "[tool.gpulint] workloads table"
            wl.reasons.append(f"config: workloads table pins instance {ov['instance']}")
            wl.unknown[:] = [u for u in wl.unknown if not u.startswith("compute:")]
        if inst is not None:
            base.pop("why_no_price", None)
            base.update(_instance_fields(inst, ctx, capacity, nodes, written=name))
        elif ov.get("instance"):
            base["why_no_price"] = f"instance {ov['instance']!r} from the workloads table is not in the catalogue"
    if wl.resolved.get("compute") is not None and wl.resolved["compute"].get("nodes") is None and launch_nodes:
        wl.resolved["compute"]["nodes"] = launch_nodes
    _model(wl, ctx)
    _summaries(wl)
    c = wl.resolved.get("compute")
    if c is not None:
        if not c.get("instance"):
            wl.unknown.append(f"instance: {c.get('why_no_price')}")
        if c.get("capacity") is None:
            wl.unknown.append("capacity: spot or on-demand is not stated; on-demand assumed for prices")
        if c.get("nodes") is None:
            wl.unknown.append("nodes: no node count found; 1 assumed for prices")


def _model(wl: Workload, ctx: WorkloadContext) -> None:
    from gpulint import modelsize

    extra = [{"name": k, "params": int(v)} for k, v in (ctx.config.models or {}).items()]
    ov = wl.overrides
    if ov.get("params"):
        wl.resolved["model"] = {"params": int(ov["params"]), "evidence": "[tool.gpulint] workloads table params", "name": ov.get("model")}
        return
    if ov.get("model"):
        size = _size_for_name(ov["model"], extra, ctx)
        if size is not None:
            wl.resolved["model"] = {"name": ov["model"], "params": size.params, "active_params": size.active_params,
                                    "evidence": f"{size.evidence} ([tool.gpulint] workloads table model)", "dims": size.dims}
            return
    names = [f for f in wl.of("model.name") if isinstance(f.value, str)]
    for f in names:
        size = _size_for_name(f.value, extra, ctx)
        if size is not None:
            wl.resolved["model"] = {"name": f.value, "params": size.params, "active_params": size.active_params,
                                    "evidence": f"{size.evidence} ({f.loc.short() if f.loc else 'config'})", "dims": size.dims,
                                    "load_in_4bit": bool((f.attrs or {}).get("load_in_4bit")), "load_in_8bit": bool((f.attrs or {}).get("load_in_8bit"))}
            return
    for f in wl.of("model.config"):
        size = modelsize.from_hf_config(f.value, source=f.loc.short())
        if size is not None:
            wl.resolved["model"] = {"name": None, "params": size.params, "active_params": size.active_params,
                                    "evidence": f"{size.evidence} ({f.loc.short()})", "dims": size.dims}
            return
    if names:
        wl.unknown.append(f"model size: {names[0].value!r} is not a known model and carries no size hint; add it under [tool.gpulint.models]")


def _size_for_name(name: str, extra: list, ctx: WorkloadContext):
    from gpulint import modelsize

    size = modelsize.from_name(name, extra)
    if size is not None:
        return size
    # a local checkpoint folder with a config.json
    for path, facts in ctx.repo.facts.items():
        if path.endswith("config.json") and posixpath.dirname(path).endswith(name.strip("./").rstrip("/")):
            for f in facts:
                if f.kind == "model.config":
                    return modelsize.from_hf_config(f.value, source=path)
    return None


def _summaries(wl: Workload) -> None:
    from gpulint.precision import precision_view

    view = precision_view(wl)
    wl.resolved["precision"] = {
        "mixed": True if view.on else (False if view.decided_off else None),
        "dtypes": sorted(view.dtypes),
        "evidence": [f"{f.value.get('mechanism') if isinstance(f.value, dict) and f.kind == 'precision' else f.kind} at {f.loc.short()}" for f, _ in view.on]
        + [f"off: {f.key or f.kind} at {f.loc.short()}" for f in view.off + view.default_off]
        + [f"undecided: {f.key or f.kind} at {f.loc.short()}" for f in view.unknown],
    }
    wl.resolved["checkpoint"] = {
        "saves": [f"{f.value.get('via')} at {f.loc.short()}" for f in wl.of("checkpoint.save")],
        "resumes": [f"{f.value.get('via')} at {f.loc.short()}" for f in wl.of("checkpoint.resume")],
    }
