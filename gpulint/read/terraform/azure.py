"""Azure resources as compute targets: virtual machines, scale sets and AKS node pools
(priority Spot/Regular)."""
from __future__ import annotations

from gpulint.read.terraform.hcl import View
from gpulint.read.terraform.targets import (
    AZ_PRIORITY, Context, Target, int_value, node_count_from_count, norm, placement_attrs, role_of,
)


def _az_priority(t: Target, ctx: Context, view: View, name="priority"):
    pri = ctx.get(view, name)
    if pri is not None:
        t.fact("compute.capacity", norm(pri, AZ_PRIORITY), pri)
    else:
        t.fact("compute.capacity", "on-demand", key=view.key(name), attrs={"default": True})


def az_vm(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    placement_attrs(ctx, view, attrs)
    role, ev = role_of(label, view)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "azure", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "size") or ctx.get(view, "vm_size"))
    _az_priority(t, ctx, view)
    node_count_from_count(t, ctx, view)


def az_vmss(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    placement_attrs(ctx, view, attrs)
    role, ev = role_of(label, view)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "azure", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "sku") or ctx.get(view, "sku_name"))
    _az_priority(t, ctx, view)
    t.count("compute.node_count", ctx.get(view, "instances"))  # autoscale lives in another resource


def _aks_pool(ctx, target, resource, label, view, line, col, allow_spot=True):
    attrs: dict = {}
    placement_attrs(ctx, view, attrs)
    role, ev = role_of(label, view)
    t = Target(ctx, target, resource, "azure", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "vm_size"))
    if allow_spot:
        _az_priority(t, ctx, view)
    else:
        t.fact("compute.capacity", "on-demand", key=view.key("priority"), attrs={"default": True})
    count = ctx.get(view, "node_count")
    t.count("compute.node_count", count)
    auto = ctx.get(view, "auto_scaling_enabled") or ctx.get(view, "enable_auto_scaling")
    minimum = ctx.get(view, "min_count")
    if auto is not None and auto.value is True:
        if minimum is not None:
            t.count("compute.min_nodes", minimum)
    elif auto is None or auto.value is False:
        if count is not None:
            t.fact("compute.min_nodes", int_value(count), count, attrs={"fixed_size": True, **count.attrs})
    elif minimum is not None:  # autoscaling decided by a variable: min_count is the floor if it is on
        t.count("compute.min_nodes", minimum, attrs={"if_autoscaling": auto.value})


def aks_node_pool(ctx, rtype, label, view, line, col):
    addr = f"{rtype}.{label}"
    _aks_pool(ctx, addr, addr, label, view, line, col)


def aks_cluster(ctx, rtype, label, view, line, col):
    addr = f"{rtype}.{label}"
    pool = view.block("default_node_pool")
    if pool is not None:
        name = ctx.get(pool, "name")
        pname = name.value if name and isinstance(name.value, str) else label
        _aks_pool(ctx, f"{addr}.default_node_pool", addr, pname, pool, pool.line, pool.column, allow_spot=False)
