"""Compute targets of a Terraform file: the reading context and what every cloud shares.

``Context`` holds one file's variables, locals and emitted facts; ``Target``
builds one ``compute.target`` fact. The helpers (capacity type, EFA, node
counts from ``count``/scaling blocks, role from names and tags) are shared by
the per-cloud resource handlers in ``aws``, ``gcp``, ``azure`` and ``modules``.
"""
from __future__ import annotations

import json
import re
from typing import Any

from hcl2.rules.containers import TupleRule

from gpulint.core.model import Fact, Location
from gpulint.read.terraform.hcl import Attr, UNKNOWN, View, evaluate, is_ref, plain, resource_ref, unwrap


def is_auto_tfvars(path: str) -> bool:
    """Terraform loads these without a -var-file flag."""
    name = path.rsplit("/", 1)[-1]
    return name in ("terraform.tfvars", "terraform.tfvars.json") or name.endswith((".auto.tfvars", ".auto.tfvars.json"))


class Val:
    """An attribute's value with where it was written."""

    __slots__ = ("value", "line", "column", "key", "resolved_from")

    def __init__(self, value, line, column, key, resolved_from=None):
        self.value, self.line, self.column, self.key, self.resolved_from = value, line, column, key, resolved_from

    @property
    def attrs(self) -> dict:
        return {"resolved_from": self.resolved_from} if self.resolved_from else {}


class Context:
    def __init__(self, path: str):
        self.path = path
        self.facts: list[Fact] = []
        self.known: dict[str, Any] = {}  # "var.x"/"local.y" -> literal value in this file
        # expressions as written, for boot scripts kept in a local, a variable default or a data source
        self.local_nodes: dict[str, tuple] = {}  # name -> (node, line, column)
        self.variable_nodes: dict[str, tuple] = {}
        self.data_views: dict[str, View] = {}  # "data.template_file.x" -> its body

    def collect_values(self, root: View):
        """Variables (every one, with or without a default), locals, ``.tfvars`` assignments and
        module calls: the raw material of ``gpulint.resolve.tfvalues``, which resolves references across the
        module's files. Only literals are also remembered for references within this file."""
        for _body, line, col, _dyn, labels in root.raw.get("data", []):
            if len(labels) == 2 and labels[0] in ("template_file", "cloudinit_config"):
                self.data_views[f"data.{labels[0]}.{labels[1]}"] = View(_body, line, col, "")
        for _body, line, col, _dyn, labels in root.raw.get("variable", []):
            if not labels:
                continue
            view = View(_body, line, col, "")
            attr = view.attrs.get("default")
            if attr is not None:
                self.variable_nodes[labels[0]] = (attr.node, attr.line, attr.column)
            value = evaluate(attr.node) if attr is not None else UNKNOWN
            where = attr or Attr(None, line, col)
            fact = {"name": labels[0], "default": plain(value), "has_default": attr is not None}
            if attr is not None and value is UNKNOWN:
                fact["computed"] = True  # a default gpulint does not evaluate
            if value is not UNKNOWN:
                self.known[f"var.{labels[0]}"] = value
            self.emit("tf.variable", fact, where.line, where.column, f"var.{labels[0]}")
        for _body, line, col, _dyn, _labels in root.raw.get("locals", []):
            view = View(_body, line, col, "")
            for name, attr in view.attrs.items():
                self.local_nodes[name] = (attr.node, attr.line, attr.column)
                value = evaluate(attr.node)
                fact = {"name": name, "value": plain(value)}
                if value is UNKNOWN:
                    fact["computed"] = True
                else:
                    self.known[f"local.{name}"] = value
                self.emit("tf.local", fact, attr.line, attr.column, f"local.{name}")
        if self.path.endswith(".tfvars"):
            auto = is_auto_tfvars(self.path)
            for name, attr in root.attrs.items():
                value = evaluate(attr.node)
                self.emit("tf.tfvar", {"name": name, "value": plain(value), "auto": auto}, attr.line, attr.column,
                          f"var.{name}")
        for _body, line, col, _dyn, labels in root.raw.get("module", []):
            if len(labels) != 1:
                continue
            view = View(_body, line, col, "")
            source = evaluate(view.attrs["source"].node) if "source" in view.attrs else UNKNOWN
            if not isinstance(source, str):
                continue
            inputs = {name: plain(evaluate(a.node)) for name, a in view.attrs.items()
                      if name not in ("source", "version", "providers", "count", "for_each", "depends_on")}
            lines = {name: [a.line, a.column] for name, a in view.attrs.items() if name in inputs}
            self.emit("tf.module_call", {"name": labels[0], "source": source, "inputs": inputs}, line, col,
                      f"module.{labels[0]}", attrs={"input_positions": lines})

    def get(self, view: View | None, name: str) -> Val | None:
        if view is None or name not in view.attrs:
            return None
        attr = view.attrs[name]
        value = original = evaluate(attr.node)
        resolved = None
        for _ in range(8):  # local.a = var.b chains, bounded against cycles
            if is_ref(value) and value["ref"] in self.known:
                resolved = resolved or value["ref"]
                value = self.known[value["ref"]]
            else:
                break
        if is_ref(value):  # the chain ends outside this file: the linker follows it from the start
            value, resolved = original, None
        return Val(plain(value), attr.line, attr.column, view.key(name), resolved)

    def emit(self, kind, value, line, column, key="", target="", attrs=None):
        loc = Location(self.path, line, column)
        self.facts.append(Fact(kind, value, loc, key=key, target=target, attrs=dict(attrs or {})))


def norm(val: Val, table: dict[str, str], default_unknown=True):
    """Map a raw value through `table` (keys: strings as written, lower-cased; non-strings as JSON)."""
    raw = val.value
    if is_ref(raw):
        return {"ref": raw["ref"], "map": table}
    if isinstance(raw, str):
        return table.get(raw.lower())
    if isinstance(raw, bool) or isinstance(raw, (int, float)) or raw is None:
        return table.get(json.dumps(raw)) if raw is not None else None
    return None


def int_value(val: Val | None):
    if val is None:
        return None
    v = val.value
    if isinstance(v, bool):
        return None
    if isinstance(v, int) or is_ref(v):
        return v
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if isinstance(v, str) and v.strip().isdigit():
        return int(v)
    return None


_ROLE_WORDS = {
    "training": {"train", "training", "trainer", "trainers", "pretrain", "pretraining", "finetune", "finetuning"},
    "serving": {"inference", "inferencing", "serving", "serve", "predictor", "predict"},
    "notebook": {"notebook", "notebooks", "jupyter", "jupyterlab", "jupyterhub", "workbench", "devbox", "workstation"},
}


# "dev" alone usually names an environment (Environment = "dev"), not a development box.
_DEV_PAIRS = {"box", "vm", "instance", "machine", "workstation", "desktop", "server"}


_NAME_ATTRS = ("name", "name_prefix", "node_group_name", "variant_name", "instance_name", "display_name")


_ROLE_TAG_KEYS = ("name", "role", "workload", "purpose", "type", "app", "component", "usage", "function", "pool")


def role_of(label: str, *views: View | None) -> tuple[str | None, str | None]:
    texts = [("name", label)]
    for view in views:
        if view is None:
            continue
        for attr in _NAME_ATTRS:
            if attr in view.attrs:
                value = evaluate(view.attrs[attr].node)
                if isinstance(value, str):
                    texts.append((attr, value))
        for tags_name in ("tags", "labels", "node_labels", "resource_labels", "tags_all"):
            for tags in view.blocks(tags_name):
                for key, attr in tags.attrs.items():
                    value = evaluate(attr.node)
                    if isinstance(value, str) and any(k in key.lower() for k in _ROLE_TAG_KEYS):
                        texts.append((f"{tags_name}.{key}", value))
        for spec in view.blocks("tag_specifications"):
            for tags in spec.blocks("tags"):
                for key, attr in tags.attrs.items():
                    value = evaluate(attr.node)
                    if isinstance(value, str) and any(k in key.lower() for k in _ROLE_TAG_KEYS):
                        texts.append((f"tag_specifications.tags.{key}", value))
    found: dict[str, str] = {}
    for where, text in texts:
        tokens = [t for t in re.split(r"[^a-z0-9]+", text.lower()) if t]
        for role, words in _ROLE_WORDS.items():
            if any(t in words for t in tokens):
                found.setdefault(role, f"{where} {text!r}")
        if any(a == "dev" and b in _DEV_PAIRS for a, b in zip(tokens, tokens[1:])):
            found.setdefault("notebook", f"{where} {text!r}")
    if len(found) != 1:
        return None, None  # none, or contradictory names: do not guess
    return next(iter(found.items()))


class Target:
    def __init__(self, ctx: Context, target: str, resource: str, provider: str | None, view: View,
                 line: int, col: int, role=None, role_evidence=None, attrs=None):
        self.ctx, self.target, self.view, self.line, self.col = ctx, target, view, line, col
        extra = dict(attrs or {})
        if role_evidence:
            extra["role_evidence"] = role_evidence
        value = {"source": "terraform", "provider": provider, "resource": resource, "role": role}
        ctx.emit("compute.target", value, line, col, key="", target=target, attrs=extra)
        self.reserved = self.reservation(view)

    def reservation(self, view: View | None) -> bool:
        """Capacity bought ahead of use: a targeted reservation (AWS ODCR or Capacity Block, GCP specific
        reservation, Azure capacity reservation group) bills whether or not the nodes run, so its floor is not
        idle spend that scaling to zero returns. Whether `view` declares one."""
        found = _reservation(self.ctx, view)
        if found is not None:
            self.fact("compute.capacity", "reserved", found)
        return found is not None

    def fact(self, kind, value, val: Val | None = None, key: str | None = None, attrs=None):
        line, col = (val.line, val.column) if val else (self.line, self.col)
        merged = dict(val.attrs if val else {})
        merged.update(attrs or {})
        if key is None:
            key = val.key if val else ""
        self.ctx.emit(kind, value, line, col, key=key, target=self.target, attrs=merged)

    def instance_type(self, val: Val | None):
        if val is None:
            return
        v = val.value
        if isinstance(v, list):
            for i, item in enumerate(v):
                self.fact("compute.instance_type", item if isinstance(item, (str, dict)) else None, val,
                          key=f"{val.key}[{i}]")
        else:
            self.fact("compute.instance_type", v if isinstance(v, (str, dict)) else None, val)

    def count(self, kind, val: Val | None, attrs=None):
        if val is not None:
            self.fact(kind, int_value(val), val, attrs=attrs)


def _reservation(ctx: Context, view: View | None) -> Val | None:
    """Where ``view`` (a resource, a node group, or its ``node_config``) targets reserved capacity, else None.
    An open preference (``capacity_reservation_preference = "open"``, GCP ``ANY_RESERVATION``) only uses a
    reservation that happens to match, so it is not reserved capacity."""
    if view is None:
        return None
    for scope in (view, view.block("node_config")):
        if scope is None:
            continue
        spec = scope.block("capacity_reservation_specification")
        aim = spec.block("capacity_reservation_target") if spec is not None else None
        for name in ("capacity_reservation_id", "capacity_reservation_resource_group_arn"):
            val = _named(ctx, aim, name)
            if val is not None:
                return val
        affinity = scope.block("reservation_affinity")
        kind = ctx.get(affinity, "consume_reservation_type") if affinity is not None else None
        if kind is not None and str(kind.value).upper() == "SPECIFIC_RESERVATION":
            return kind
        group = _named(ctx, scope, "capacity_reservation_group_id")  # Azure VMs, scale sets and AKS node pools
        if group is not None:
            return group
    return None


def _named(ctx: Context, view: View | None, name: str) -> Val | None:
    """``name``'s value where it names something (a literal id, a variable, another resource's attribute), None
    where it is absent, null or empty."""
    val = ctx.get(view, name)
    if val is None:
        return None
    return val if val.value not in (None, "") or resource_ref(view.attrs[name].node) else None


def ref_attr(ctx: Context, view: View | None, *names: str) -> str | None:
    if view is None:
        return None
    for name in names:
        if name in view.attrs:
            ref = resource_ref(view.attrs[name].node)
            if ref:
                return ref
            val = ctx.get(view, name)
            if val and isinstance(val.value, str):
                return val.value
    return None


def placement_attrs(ctx: Context, view: View, attrs: dict):
    pg = ref_attr(ctx, view, "placement_group", "proximity_placement_group_id")
    placement = view.block("placement")
    pg = pg or ref_attr(ctx, placement, "group_name", "group_id")
    if pg:
        attrs["placement_group"] = pg
    policy = view.block("placement_policy")
    if policy:
        ptype = ctx.get(policy, "type")
        if ptype and isinstance(ptype.value, str):
            attrs["placement_policy"] = ptype.value
    pols = view.attrs.get("resource_policies")
    if pols is not None:
        inner = unwrap(pols.node)
        refs = [resource_ref(e) for e in inner.elements] if isinstance(inner, TupleRule) else []
        refs = [r for r in refs if r]
        if refs:
            attrs["resource_policies"] = refs


def node_count_from_count(t: Target, ctx: Context, view: View):
    count = ctx.get(view, "count")
    if count is not None:
        t.count("compute.node_count", count)
    elif "for_each" in view.attrs:
        t.fact("compute.node_count", None, key="for_each", attrs={"for_each": True})
    else:
        t.fact("compute.node_count", 1, key="count", attrs={"default": True})


_MARKET = {"spot": "spot", "capacity-block": "reserved"}


EKS_CAPACITY = {"spot": "spot", "on_demand": "on-demand", "capacity_block": "reserved"}


BATCH_TYPE = {"spot": "spot", "ec2": "on-demand", "fargate_spot": "spot", "fargate": "on-demand"}


BOOL_SPOT = {"true": "spot", "false": "on-demand"}


AZ_PRIORITY = {"spot": "spot", "regular": "on-demand", "lowpriority": "spot", "low": "spot", "dedicated": "on-demand"}


def market(t: Target, ctx: Context, view: View, default: bool):
    opts = view.block("instance_market_options")
    if opts is not None:
        mt = ctx.get(opts, "market_type")
        if mt is not None:
            attrs = {"market_type": mt.value} if isinstance(mt.value, str) else {}
            t.fact("compute.capacity", norm(mt, _MARKET), mt, attrs=attrs)
        else:
            t.fact("compute.capacity", None, key=opts.key("market_type"))
    elif default:
        t.fact("compute.capacity", "on-demand", key=view.key("instance_market_options.market_type"),
               attrs={"default": True})


def efa(t: Target, ctx: Context, view: View, nics_name="network_interfaces", default_zero=True):
    if nics_name in view.attrs and not view.raw.get(nics_name):
        t.fact("compute.efa", None, key=nics_name)  # network_interfaces = var.x
        return
    nics = view.blocks(nics_name)
    if not nics:
        if default_zero:
            t.fact("compute.efa", 0, key=nics_name, attrs={"default": True})
        return
    total, first, dynamic = 0, None, False
    for nic in nics:
        itype = ctx.get(nic, "interface_type")
        if itype is None or itype.value is None or is_ref(itype.value):
            if itype is not None:
                t.fact("compute.efa", None, itype)
                return
            continue
        if str(itype.value).lower() != "efa":
            continue
        first = first or itype
        if nic.for_each is not None:
            n = evaluate(nic.for_each)
            if isinstance(n, (list, dict)):
                total += len(n)
            else:
                dynamic = True
        else:
            total += 1
    if dynamic:
        t.fact("compute.efa", None, first, attrs={"dynamic": True})
    elif first is not None:
        t.fact("compute.efa", total, first)
    else:
        t.fact("compute.efa", 0, key=nics_name)


def scaling(t: Target, ctx: Context, view: View | None, desired="desired_size", minimum="min_size",
             maximum="max_size"):
    if view is None:
        return
    d, m, x = ctx.get(view, desired), ctx.get(view, minimum), ctx.get(view, maximum)
    if d is not None:
        t.count("compute.node_count", d)
    elif m is not None:
        t.fact("compute.node_count", int_value(m), m, key=view.key(desired), attrs={"from": minimum})
    if m is not None:
        t.count("compute.min_nodes", m, attrs={"max": int_value(x)} if x is not None and int_value(x) is not None else None)


def accelerators(t: Target, ctx: Context, view: View, name="guest_accelerator", count_attr="count"):
    accs = view.blocks(name)
    if name in view.attrs and not accs:
        t.fact("compute.accelerator", None, key=name)  # guest_accelerator = var.x
        t.fact("compute.gpus_per_node", None, key=name)
        return
    first = None
    counts = []
    for acc in accs:
        typ, cnt = ctx.get(acc, "type"), ctx.get(acc, count_attr)
        n = int_value(cnt) if cnt is not None else 1
        where = typ or cnt
        value = {"type": typ.value if typ else None, "count": n}
        attrs = {}
        for v in (typ, cnt):
            if v is not None and v.resolved_from:
                attrs.setdefault("resolved_from", v.resolved_from)
        t.fact("compute.accelerator", value, where, key=acc.prefix.rstrip("."), attrs=attrs)
        first = first or where
        counts.append(n)
    if len(counts) == 1:
        total = counts[0]  # may be a {"ref": ...}
    else:
        total = sum(counts) if all(isinstance(n, int) for n in counts) else None
    if accs:
        t.fact("compute.gpus_per_node", total, first, key=view.key(f"{name}.{count_attr}"))
