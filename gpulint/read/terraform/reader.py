"""Terraform reader: GPU compute targets, capacity type, EFA, budgets and env from one .tf file.

``read(text, path)`` parses HCL with python-hcl2 8 into its rule tree (not its
dict output: the tree keeps lark's position on every attribute, block and
object element, so each fact points at the attribute it came from) and returns
``Fact``s in the vocabulary of ``gpulint.core.facts``.

Values
------
* a literal is the Python value;
* ``var.x`` / ``local.y`` alone (or a string that is only ``"${var.x}"``) is
  ``{"ref": "var.x"}``, resolved later across the module's files. A reference to
  a variable/local with a literal value *in this file* is resolved here and the
  fact says ``attrs["resolved_from"]``. When the raw value is normalised
  (``"SPOT"`` -> ``"spot"``) the ref carries ``"map"``: raw value (JSON text for
  non-strings, e.g. ``"true"``) -> normalised value;
* anything else (other interpolation, functions, conditionals) is ``None``.

Non-compute facts: ``tf.variable`` {"name", "default"}, ``tf.local`` {"name",
"value"}, ``infra.budget`` {"resource", "kind"}, ``infra.placement_group``
{"resource", "strategy"}, ``env`` {"name", "value"} (attrs["resource"]).

Targets are emitted for every resource type that *can* carry GPUs, whatever its
instance type: whether ``m5.large`` has a GPU is the instance catalogue's call.
"""
from __future__ import annotations

import re
from typing import Callable


from gpulint.core.model import Fact, Location
from gpulint.read.errors import BlockFailure, PartialRead, ReadError
from gpulint.read.terraform.aws import (
    aws_asg, aws_batch_ce, aws_eks_node_group, aws_instance, aws_launch_configuration, aws_launch_template,
    aws_sagemaker_endpoint_config, aws_sagemaker_notebook, awscc_sagemaker_cluster,
)
from gpulint.read.terraform.azure import aks_cluster, aks_node_pool, az_vm, az_vmss
from gpulint.read.terraform.env import env_from_container
from gpulint.read.terraform.gcp import gcp_instance, gke_cluster, gke_node_pool
from gpulint.read.terraform.hcl import View, parse as hcl_parse
from gpulint.read.terraform.manifests import MANIFEST_ATTRS, manifests_of, read_manifests
from gpulint.read.terraform.modules import eks_module
from gpulint.read.terraform.scripts import startup_scripts
from gpulint.read.terraform.targets import Context, is_auto_tfvars


__all__ = ["ReadError", "read"]


def read(text: str, path: str) -> list[Fact]:
    """Facts of one Terraform file. Raises only ReadError (unparsable HCL)."""
    try:
        tree = hcl_parse(text)
    except RecursionError:
        raise ReadError("HCL nesting too deep to parse", 1, 1) from None
    except Exception as exc:  # lark/hcl2 raise several types; callers get one
        tree = _without_unread_interpolations(text, exc)
        if tree is None:
            raise _read_error(exc, text) from None
    ctx = Context(path)
    try:
        root = View(tree.body, 1, 1, "")
    except RecursionError:
        raise ReadError("HCL nesting too deep to read", 1, 1) from None
    ctx.collect_values(root)
    failures: list[BlockFailure] = []
    manifests = []  # Kubernetes documents the file applies, read together once every block is read
    for name, blocks in root.raw.items():
        for body, line, col, _dyn, labels in blocks:
            start = len(ctx.facts)
            try:
                _top_block(ctx, name, labels, View(body, line, col, ""), line, col)
                if name == "resource" and len(labels) == 2 and labels[0] in MANIFEST_ATTRS:
                    found = manifests_of(ctx, labels[0], labels[1], View(body, line, col, ""), line)
                    manifests += [found] if found else []
            except Exception as exc:  # noqa: BLE001 - one odd block must not lose the file's other facts
                del ctx.facts[start:]  # a half-read block says nothing rather than something partial
                what = " ".join([name] + [f'"{lab}"' for lab in labels])
                error = "nesting too deep" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {exc}"
                failures.append(BlockFailure(what, line, col, error))
    start = len(ctx.facts)
    try:
        read_manifests(ctx, manifests)
    except Exception as exc:  # noqa: BLE001 - the manifests' facts are lost, not the file's own
        del ctx.facts[start:]
        failures.append(BlockFailure("Kubernetes manifests", manifests[0].first if manifests else 1, 1,
                                     f"{type(exc).__name__}: {exc}"))
    if failures:
        raise PartialRead(ctx.facts, failures)
    return ctx.facts


_JSON_REF = re.compile(r"^\$\{\s*((?:var|local)\.[A-Za-z_][A-Za-z0-9_-]*)\s*\}$")


def _json_value(value):
    """A .tf.json value: literals as they are, ``"${var.x}"`` as a reference, other templates unknown."""
    if isinstance(value, str):
        m = _JSON_REF.match(value)
        if m:
            return {"ref": m.group(1)}
        return None if "${" in value else value
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {k: _json_value(v) for k, v in value.items()}
    return value


def read_json_values(doc, path: str) -> list[Fact]:
    """Variables, locals, module calls (``*.tf.json``) and assignments (``*.tfvars.json``) of
    Terraform's JSON syntax (``doc`` a ``gpulint.read.yamlnodes.Doc``), as the value facts the HCL
    reader emits."""
    out: list[Fact] = []
    data = doc.data
    if not isinstance(data, dict):
        return out

    def loc(*keys) -> Location:
        line, col = doc.at(keys)
        return Location(path, line, col)

    if path.endswith(".tfvars.json"):
        for name, value in data.items():
            out.append(Fact("tf.tfvar", {"name": name, "value": _json_value(value), "auto": is_auto_tfvars(path)},
                            loc(name), key=f"var.{name}"))
        return out
    variables = data.get("variable")
    for name, body in (variables.items() if isinstance(variables, dict) else ()):
        body = body if isinstance(body, dict) else {}
        out.append(Fact("tf.variable", {"name": name, "default": _json_value(body.get("default")),
                                        "has_default": "default" in body}, loc("variable", name), key=f"var.{name}"))
    blocks = data.get("locals")
    for block in (blocks if isinstance(blocks, list) else [blocks] if isinstance(blocks, dict) else []):
        for name, value in (block.items() if isinstance(block, dict) else ()):
            out.append(Fact("tf.local", {"name": name, "value": _json_value(value)}, loc("locals", name), key=f"local.{name}"))
    modules = data.get("module")
    for name, body in (modules.items() if isinstance(modules, dict) else ()):
        if not isinstance(body, dict) or not isinstance(body.get("source"), str):
            continue
        inputs = {k: _json_value(v) for k, v in body.items()
                  if k not in ("source", "version", "providers", "count", "for_each", "depends_on")}
        out.append(Fact("tf.module_call", {"name": name, "source": body["source"], "inputs": inputs},
                        loc("module", name), key=f"module.{name}"))
    return out


#: interpolations python-hcl2 may fail on that one file can hold (each retried parse blanks one more)
_MAX_BLANKED = 8


def _without_unread_interpolations(text: str, exc: Exception):
    """The tree of `text` with the ``${ ... }`` interpolations python-hcl2 cannot read blanked out, or None.
    Terraform accepts an interpolation that spans lines (a chain of conditionals inside a quoted string);
    python-hcl2's grammar does not. The failing one is replaced by spaces (lines keep their numbers) and the
    file is parsed again, so its blocks are read and only that string's value is lost; an error anywhere
    else (not inside an interpolation) is a real syntax error."""
    for _ in range(_MAX_BLANKED):
        line, col = getattr(exc, "line", None), getattr(exc, "column", None)
        if not isinstance(line, int) or not isinstance(col, int) or line < 1:
            return None
        lines = text.split("\n")
        if line > len(lines):
            return None
        at = sum(len(l) + 1 for l in lines[: line - 1]) + col - 1
        start = text.rfind("${", 0, at + 1)
        if start < 0:
            return None
        depth, end = 0, None
        for i in range(start + 1, len(text)):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    end = i
                    break
        if end is None or end < at or "\n" not in text[start:end]:
            return None  # the error is not inside a multi-line interpolation
        text = text[:start] + "".join("\n" if ch == "\n" else " " for ch in text[start:end + 1]) + text[end + 1:]
        try:
            return hcl_parse(text)
        except RecursionError:
            return None
        except Exception as again:  # noqa: BLE001 - the next failing interpolation, or a real error
            exc = again
    return None


def _read_error(exc: Exception, text: str) -> ReadError:
    line = getattr(exc, "line", None)
    col = getattr(exc, "column", None)
    if not isinstance(line, int) or line < 1:  # UnexpectedEOF reports -1: point at the end
        lines = text.splitlines() or [""]
        line, col = len(lines), len(lines[-1]) + 1
    if not isinstance(col, int) or col < 1:
        col = 1
    first = str(exc).strip().splitlines()
    message = f"cannot parse HCL: {first[0] if first else type(exc).__name__}"
    return ReadError(message, line, col)


_Handler = Callable[..., None]


_RESOURCES: dict[str, _Handler] = {
    "aws_instance": aws_instance,
    "aws_spot_instance_request": lambda *a: aws_instance(*a, spot_request=True),
    "aws_launch_template": aws_launch_template,
    "aws_launch_configuration": aws_launch_configuration,
    "aws_autoscaling_group": aws_asg,
    "aws_eks_node_group": aws_eks_node_group,
    "aws_batch_compute_environment": aws_batch_ce,
    "awscc_sagemaker_cluster": awscc_sagemaker_cluster,
    "aws_sagemaker_notebook_instance": aws_sagemaker_notebook,
    "aws_sagemaker_endpoint_configuration": aws_sagemaker_endpoint_config,
    "google_compute_instance": gcp_instance,
    "google_compute_instance_template": gcp_instance,
    "google_compute_region_instance_template": gcp_instance,
    "google_container_node_pool": gke_node_pool,
    "google_container_cluster": gke_cluster,
    "azurerm_linux_virtual_machine": az_vm,
    "azurerm_windows_virtual_machine": az_vm,
    "azurerm_virtual_machine": az_vm,
    "azurerm_linux_virtual_machine_scale_set": az_vmss,
    "azurerm_windows_virtual_machine_scale_set": az_vmss,
    "azurerm_orchestrated_virtual_machine_scale_set": az_vmss,
    "azurerm_kubernetes_cluster_node_pool": aks_node_pool,
    "azurerm_kubernetes_cluster": aks_cluster,
}


# resources whose boot script (user_data, custom_data, startup script) gpulint reads
_BOOT_SCRIPTS = {"aws_instance", "aws_spot_instance_request", "aws_launch_template", "aws_launch_configuration",
                 "azurerm_linux_virtual_machine", "azurerm_linux_virtual_machine_scale_set", "azurerm_virtual_machine",
                 "azurerm_orchestrated_virtual_machine_scale_set"}


_BUDGETS = {"aws_budgets_budget", "google_billing_budget"}


_PLACEMENT = {"aws_placement_group": "strategy", "azurerm_proximity_placement_group": None}


_ENV_ATTRS = {
    "aws_batch_job_definition": ("container_properties", "node_properties", "ecs_properties"),
    "aws_ecs_task_definition": ("container_definitions",),
}


def _top_block(ctx: Context, name: str, labels: tuple, view: View, line: int, col: int):
    if name == "module" and len(labels) == 1:
        if "eks_managed_node_groups" in view.attrs or "self_managed_node_groups" in view.attrs:
            eks_module(ctx, labels[0], view, line, col)
        return
    if name != "resource" or len(labels) != 2:
        return
    rtype, label = labels
    address = f"{rtype}.{label}"
    handler = _RESOURCES.get(rtype)
    if handler is not None:
        handler(ctx, rtype, label, view, line, col)
        if rtype in _BOOT_SCRIPTS or rtype.startswith("google_compute_"):
            startup_scripts(ctx, address, rtype, view)
    elif rtype in _BUDGETS or rtype.startswith("azurerm_consumption_budget_"):
        ctx.emit("infra.budget", {"resource": address, "kind": "budget"}, line, col, key=address)
    elif rtype == "aws_cloudwatch_metric_alarm":
        metric = ctx.get(view, "metric_name")
        if metric and metric.value == "EstimatedCharges":
            ctx.emit("infra.budget", {"resource": address, "kind": "billing_alarm"}, metric.line, metric.column,
                     key=address)
    elif rtype in _PLACEMENT:
        strategy = ctx.get(view, _PLACEMENT[rtype]) if _PLACEMENT[rtype] else None
        value = {"resource": address, "strategy": strategy.value if strategy else None}
        ctx.emit("infra.placement_group", value, line, col, key=address)
    elif rtype == "google_compute_resource_policy":
        gpp = view.block("group_placement_policy")
        coll = ctx.get(gpp, "collocation")
        if coll is not None:
            ctx.emit("infra.placement_group", {"resource": address, "strategy": coll.value}, coll.line,
                     coll.column, key=address)
    if rtype in _ENV_ATTRS:
        for attr in _ENV_ATTRS[rtype]:
            env_from_container(ctx, address, view, attr)
