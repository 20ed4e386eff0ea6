"""AWS resources as compute targets: EC2 instances, launch templates and configurations,
auto-scaling groups, EKS node groups, Batch compute environments, SageMaker
notebooks and endpoint configurations."""
from __future__ import annotations

from gpulint.read.terraform.targets import (
    BATCH_TYPE, EKS_CAPACITY, Target, efa, int_value, market, node_count_from_count, norm, placement_attrs,
    ref_attr, role_of, scaling,
)


def aws_instance(ctx, rtype, label, view, line, col, spot_request=False):
    attrs: dict = {}
    lt = view.block("launch_template")
    ref = ref_attr(ctx, lt, "id", "name")
    if ref:
        attrs["launch_template"] = ref
    placement_attrs(ctx, view, attrs)
    role, ev = role_of(label, view)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "instance_type"))
    if spot_request:
        t.fact("compute.capacity", "spot", key="resource_type")
    else:  # with a launch template and no market options of its own, the template decides
        market(t, ctx, view, default="launch_template" not in attrs)
    node_count_from_count(t, ctx, view)


def aws_launch_template(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    placement_attrs(ctx, view, attrs)
    role, ev = role_of(label, view)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "instance_type"))
    market(t, ctx, view, default=False)  # the group that launches it may decide
    efa(t, ctx, view)


def aws_launch_configuration(ctx, rtype, label, view, line, col):
    role, ev = role_of(label, view)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "aws", view, line, col, role, ev)
    t.instance_type(ctx.get(view, "instance_type"))
    price = ctx.get(view, "spot_price")
    if price is not None:
        t.fact("compute.capacity", "spot", price)
    else:
        t.fact("compute.capacity", "on-demand", key="spot_price", attrs={"default": True})


def aws_asg(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    lt_ref = ref_attr(ctx, view.block("launch_template"), "id", "name")
    mip = view.block("mixed_instances_policy")
    mlt = mip.block("launch_template") if mip else None
    spec = mlt.block("launch_template_specification") if mlt else None
    lt_ref = lt_ref or ref_attr(ctx, spec, "launch_template_id", "launch_template_name")
    if lt_ref:
        attrs["launch_template"] = lt_ref
    lc = ref_attr(ctx, view, "launch_configuration")
    if lc:
        attrs["launch_configuration"] = lc
    placement_attrs(ctx, view, attrs)
    max_size = ctx.get(view, "max_size")
    if max_size is not None and int_value(max_size) is not None:
        attrs["max_size"] = int_value(max_size)
    role, ev = role_of(label, view)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    for ov in mlt.blocks("override") if mlt else []:
        t.instance_type(ctx.get(ov, "instance_type"))
    # desired_capacity_type "vcpu"/"memory-mib" makes sizes non-node units
    unit = ctx.get(view, "desired_capacity_type")
    nodes = unit is None or unit.value == "units"
    desired, minimum = ctx.get(view, "desired_capacity"), ctx.get(view, "min_size")
    if desired is not None:
        t.fact("compute.node_count", int_value(desired) if nodes else None, desired)
    elif minimum is not None:  # AWS starts an ASG at min_size when desired is unset
        t.fact("compute.node_count", int_value(minimum) if nodes else None, minimum, key="desired_capacity",
               attrs={"from": "min_size"})
    if minimum is not None:
        t.fact("compute.min_nodes", int_value(minimum) if nodes else None, minimum)
    dist = mip.block("instances_distribution") if mip else None
    if mip is not None:
        pct = ctx.get(dist, "on_demand_percentage_above_base_capacity")
        base = ctx.get(dist, "on_demand_base_capacity")
        pct_v = int_value(pct) if pct else 100  # AWS defaults: 100 % on-demand, base 0
        base_v = int_value(base) if base else 0
        where = pct or base or (dist and ctx.get(dist, "spot_allocation_strategy"))
        split = {"on_demand_percentage_above_base_capacity": pct_v, "on_demand_base_capacity": base_v}
        if isinstance(pct_v, int) and isinstance(base_v, int):
            cap = "on-demand" if pct_v >= 100 else "spot"
            t.fact("compute.capacity", cap, where or None,
                   key=(where.key if where else "mixed_instances_policy.instances_distribution"),
                   attrs={**split, "mixed": 0 < pct_v < 100 or (pct_v == 0 and base_v > 0)})
        else:
            t.fact("compute.capacity", None, where or None,
                   key=(where.key if where else "mixed_instances_policy.instances_distribution"),
                   attrs={k: v for k, v in split.items() if not isinstance(v, dict)})


def aws_eks_node_group(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    ref = ref_attr(ctx, view.block("launch_template"), "id", "name")
    if ref:
        attrs["launch_template"] = ref
    ami = ctx.get(view, "ami_type")
    if ami and isinstance(ami.value, str):
        attrs["ami_type"] = ami.value
    role, ev = role_of(label, view)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "instance_types"))
    cap = ctx.get(view, "capacity_type")
    if cap is not None:
        t.fact("compute.capacity", norm(cap, EKS_CAPACITY), cap)
    else:
        t.fact("compute.capacity", "on-demand", key="capacity_type", attrs={"default": True})
    scaling(t, ctx, view.block("scaling_config"))


def aws_batch_ce(ctx, rtype, label, view, line, col):
    cr = view.block("compute_resources")
    if cr is None:
        return
    ctype = ctx.get(cr, "type")
    if ctype and isinstance(ctype.value, str) and ctype.value.upper().startswith("FARGATE"):
        return  # Fargate has no GPUs
    attrs: dict = {}
    ref = ref_attr(ctx, cr.block("launch_template"), "launch_template_id", "launch_template_name")
    if ref:
        attrs["launch_template"] = ref
    placement_attrs(ctx, cr, attrs)
    role, ev = role_of(label, view, cr)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(cr, "instance_type"))
    if ctype is not None:
        t.fact("compute.capacity", norm(ctype, BATCH_TYPE), ctype)
    for name, kind in (("min_vcpus", "compute.min_nodes"), ("desired_vcpus", "compute.node_count")):
        val = ctx.get(cr, name)
        if val is None:
            continue
        vcpus = int_value(val)
        # vCPUs are not nodes; only zero converts without the instance catalogue
        t.fact(kind, 0 if vcpus == 0 else None, val, attrs={name: vcpus})


def aws_sagemaker_notebook(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    lc = ctx.get(view, "lifecycle_config_name")
    attrs["lifecycle_config"] = None if lc is None else (lc.value if isinstance(lc.value, str) else True)
    addr = f"{rtype}.{label}"
    t = Target(ctx, addr, addr, "aws", view, line, col, "notebook", "resource type", attrs)
    t.instance_type(ctx.get(view, "instance_type"))
    t.fact("compute.capacity", "on-demand", key="instance_type", attrs={"default": True})
    t.fact("compute.node_count", 1, key="instance_type", attrs={"default": True})


def aws_sagemaker_endpoint_config(ctx, rtype, label, view, line, col):
    addr = f"{rtype}.{label}"
    variants = [v for v in view.blocks("production_variants") if "instance_type" in v.attrs]
    for i, var in enumerate(variants):
        target = addr if len(variants) == 1 else f"{addr}.production_variants[{i}]"
        vline, vcol = var.line, var.column
        t = Target(ctx, target, addr, "aws", var, vline, vcol, "serving", "resource type")
        t.instance_type(ctx.get(var, "instance_type"))
        t.fact("compute.capacity", "on-demand", key=var.key("instance_type"),
               attrs={"default": True})  # real-time endpoints have no spot option
        t.count("compute.node_count", ctx.get(var, "initial_instance_count"))


def awscc_sagemaker_cluster(ctx, rtype, label, view, line, col):
    """A SageMaker HyperPod cluster (Cloud Control provider): one target per instance group, as the create-cluster
    reader (gpulint.read.clusters.hyperpod) has it; groups run always, so instance_count is also the floor."""
    addr = f"{rtype}.{label}"
    orch = view.block("orchestrator")
    capacity_of = "slurm" if orch is None else "kubernetes" if orch.block("eks") else \
        "slurm" if orch.block("slurm") else None
    mode = ctx.get(view.block("auto_scaling"), "mode")
    scaled = mode is not None and isinstance(mode.value, str) and mode.value.lower() == "enable"
    name = ctx.get(view, "cluster_name")
    for grp in view.blocks("instance_groups"):
        gname = ctx.get(grp, "instance_group_name")
        if gname is None or not isinstance(gname.value, str):
            continue
        attrs = {"hyperpod": True, "capacity_of": capacity_of}
        if name is not None and isinstance(name.value, str):
            attrs["cluster"] = name.value
        if scaled:
            attrs["autoscaling"] = True  # Karpenter sizes the group
        itype = ctx.get(grp, "instance_type")
        if capacity_of == "kubernetes":  # the labels HyperPod puts on the group's nodes
            attrs["labels"] = {"sagemaker.amazonaws.com/instance-group-name": gname.value}
            if itype is not None and isinstance(itype.value, str):
                attrs["labels"]["node.kubernetes.io/instance-type"] = itype.value
        t = Target(ctx, f"{addr}.{gname.value}", addr, "aws", grp, grp.line, grp.column, attrs=attrs)
        t.instance_type(itype)
        count = ctx.get(grp, "instance_count")
        if not scaled:
            t.count("compute.node_count", count)
            t.count("compute.min_nodes", count)
        plan = ctx.get(grp, "training_plan_arn")
        req = grp.block("capacity_requirements")
        if plan is not None:
            t.fact("compute.capacity", "reserved", plan)
        elif req is not None and (req.block("spot") or "spot" in req.attrs):
            t.fact("compute.capacity", "spot", key=req.key("spot"))
        elif req is None and not t.reserved:
            t.fact("compute.capacity", "on-demand", key=grp.key("capacity_requirements"), attrs={"default": True})
