"""Google Cloud resources as compute targets: Compute Engine instances and templates
(guest accelerators, scheduling) and GKE clusters and node pools."""
from __future__ import annotations

from gpulint.read.terraform.hcl import View
from gpulint.read.terraform.targets import (
    BOOL_SPOT, Context, Target, accelerators, int_value, node_count_from_count, norm, placement_attrs, role_of,
)


def _gcp_scheduling(t: Target, ctx: Context, view: View):
    sched = view.block("scheduling")
    pre = ctx.get(sched, "preemptible")
    model = ctx.get(sched, "provisioning_model")
    if model is not None and not (pre is not None and pre.value is True):
        t.fact("compute.capacity", norm(model, {"spot": "spot", "standard": "on-demand"}), model)
    elif pre is not None:
        t.fact("compute.capacity", norm(pre, BOOL_SPOT), pre)
    else:
        t.fact("compute.capacity", "on-demand", key=view.key("scheduling.provisioning_model"),
               attrs={"default": True})


def gcp_instance(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    placement_attrs(ctx, view, attrs)
    role, ev = role_of(label, view)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "gcp", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "machine_type"))
    accelerators(t, ctx, view)
    _gcp_scheduling(t, ctx, view)
    if rtype == "google_compute_instance":
        node_count_from_count(t, ctx, view)


def _gke_pool(ctx, target, resource, label, view, line, col):
    nc = view.block("node_config")
    attrs: dict = {}
    placement_attrs(ctx, view, attrs)
    role, ev = role_of(label, view, nc)
    t = Target(ctx, target, resource, "gcp", view, line, col, role, ev, attrs)
    if nc is not None:
        t.instance_type(ctx.get(nc, "machine_type"))
        accelerators(t, ctx, nc)
        spot, pre = ctx.get(nc, "spot"), ctx.get(nc, "preemptible")
        chosen = spot if spot is not None and not (pre is not None and pre.value is True) else pre
        if chosen is not None:
            t.fact("compute.capacity", norm(chosen, BOOL_SPOT), chosen)
        else:
            t.fact("compute.capacity", "on-demand", key=nc.key("spot"), attrs={"default": True})
    count = ctx.get(view, "node_count") or ctx.get(view, "initial_node_count")
    if count is not None:
        t.count("compute.node_count", count)
    auto = view.block("autoscaling")
    if auto is not None:
        zonal, total = ctx.get(auto, "min_node_count"), ctx.get(auto, "total_min_node_count")
        if total is not None:
            t.count("compute.min_nodes", total)
        elif zonal is not None:
            t.count("compute.min_nodes", zonal, attrs={"per_zone": True})
        else:
            t.fact("compute.min_nodes", 0, key=auto.key("min_node_count"), attrs={"default": True})
    elif count is not None:  # no autoscaling: the pool never shrinks below its size
        t.fact("compute.min_nodes", int_value(count), count, attrs={"fixed_size": True, **count.attrs})


def gke_node_pool(ctx, rtype, label, view, line, col):
    addr = f"{rtype}.{label}"
    _gke_pool(ctx, addr, addr, label, view, line, col)


def gke_cluster(ctx, rtype, label, view, line, col):
    addr = f"{rtype}.{label}"
    for i, pool in enumerate(view.blocks("node_pool")):
        name = ctx.get(pool, "name")
        pname = name.value if name and isinstance(name.value, str) else label
        _gke_pool(ctx, f"{addr}.node_pool[{i}]", addr, pname, pool, pool.line, pool.column)
    # the default pool only matters when it is kept and has GPUs
    remove = ctx.get(view, "remove_default_node_pool")
    nc = view.block("node_config")
    if nc is not None and nc.raw.get("guest_accelerator") and not (remove and remove.value is True):
        _gke_pool(ctx, f"{addr}.node_config", addr, label, view, nc.line, nc.column)
