"""Community Terraform modules read as compute: the terraform-aws-modules EKS module's
``eks_managed_node_groups`` / ``self_managed_node_groups`` (with their defaults)."""
from __future__ import annotations

from gpulint.read.terraform.hcl import View
from gpulint.read.terraform.targets import (
    Context, EKS_CAPACITY, Target, Val, efa, market, norm, placement_attrs, role_of,
)


def _merged_get(ctx: Context, view: View, defaults: View | None, name: str) -> Val | None:
    return ctx.get(view, name) if name in view.attrs else ctx.get(defaults, name)


def eks_module(ctx, label, view, line, col):
    for group_kind, self_managed in (("eks_managed_node_groups", False), ("self_managed_node_groups", True)):
        groups = view.block(group_kind)
        if groups is None:
            continue
        defaults = view.block(group_kind.replace("_groups", "_group_defaults"))
        for key, attr in groups.attrs.items():
            gview = next((g for g in groups.blocks(key)), None)
            if gview is None:
                continue
            target = f"module.{label}.{group_kind}.{key}"
            attrs: dict = {}
            placement_attrs(ctx, gview, attrs)
            role, ev = role_of(key, gview)
            t = Target(ctx, target, f"module.{label}", "aws", gview, attr.line, attr.column, role, ev, attrs)
            if not t.reserved:
                t.reservation(defaults)  # eks_managed_node_group_defaults = { capacity_reservation_specification = ... }
            get = lambda n, g=gview: _merged_get(ctx, g, defaults, n)  # noqa: E731
            t.instance_type(get("instance_type") if self_managed else get("instance_types"))
            if self_managed:
                src = gview if "instance_market_options" in gview.raw else defaults
                if src is not None:
                    market(t, ctx, src, default=True)
            else:
                cap = get("capacity_type")
                if cap is not None:
                    t.fact("compute.capacity", norm(cap, EKS_CAPACITY), cap)
                else:
                    t.fact("compute.capacity", "on-demand", key=gview.key("capacity_type"), attrs={"default": True})
            desired, minimum = get("desired_size"), get("min_size")
            if desired is not None:
                t.count("compute.node_count", desired)
            if minimum is not None:
                t.count("compute.min_nodes", minimum)
            efa_flag = get("enable_efa_support")
            if "network_interfaces" in gview.attrs:
                efa(t, ctx, gview)
            elif efa_flag is not None and efa_flag.value is True:
                # the module adds every EFA interface the instance type supports
                t.fact("compute.efa", None, efa_flag, attrs={"enable_efa_support": True})
