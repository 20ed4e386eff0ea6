"""Kubernetes manifests written inside Terraform: ``kubectl_manifest``, ``kubernetes_manifest``, and the values of
a ``helm_release``.

Platform teams apply their Karpenter NodePools, GPU Jobs and RayClusters from Terraform, with the YAML in the
``.tf`` file: ``yaml_body = <<-YAML ... YAML`` (or ``yamlencode({...})``) of the kubectl provider, ``manifest =
{...}`` (or ``yamldecode(<<-EOT ... EOT)``) of the kubernetes provider, directly or through a ``locals`` value.
Those documents are read by the Kubernetes reader (``gpulint.read.kubernetes``) as if they were a YAML file, at
their lines in the ``.tf`` file. A ``helm_release``'s ``values`` (a list of heredocs or ``yamlencode({...})``) are a
chart's values, read as cluster definitions (``gpulint.read.clusters``: a Slinky chart's NodeSets). A manifest named by ``file()``/``templatefile()`` is a file of its own, read
where it is.

Terraform fills the documents in before applying them; gpulint does not. A value that is a Terraform
interpolation is not literal: ``${local.x}`` with a literal value in this file is that value; any other
(``${var.gpu_type}``, ``${each.value}``) makes the scalar unknown, a ``Tagged({"!terraform": text})`` node as
CloudFormation's tags are (readers never take a fact from it), except in a script or an argv list (``command``,
``args``), where it is a shell word nothing sets, so the launch is still read with that word unknown. ``$${X}``
is Terraform's escape for a literal ``${X}``. A heredoc with template directives (``%{ if }``, ``%{ for }``) has a
structure only rendering decides, and is not read.

Targets are the Kubernetes reader's (``NodePool/gpu``, ``RayJob/ft/h100``), unique across the file's manifests
and never equal to a Terraform resource address (those hold no ``/``); each compute target names the Terraform
resource that applies it in ``attrs.terraform_resource``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from hcl2.rules.containers import ObjectRule, TupleRule
from hcl2.rules.functions import FunctionCallRule
from hcl2.rules.strings import HeredocTemplateRule

from gpulint.read.kubernetes import read_kubernetes
from gpulint.read.templates import _close
from gpulint.read.terraform.hcl import (
    MAX_DEPTH, UNKNOWN, View, evaluate, is_ref, node_name, object_key, position, traversal, unwrap,
)
from gpulint.read.terraform.scripts import _heredoc_body
from gpulint.read.yamlnodes import Doc, Tagged, YamlError, load_documents

__all__ = ["MANIFEST_ATTRS", "Manifest", "manifests_of", "read_manifests"]

#: resource type -> the attribute holding its manifest (a helm_release's: its chart's values, a list of documents)
MANIFEST_ATTRS = {"kubectl_manifest": "yaml_body", "kubernetes_manifest": "manifest", "helm_release": "values"}
#: functions whose argument is the manifest itself
_ENCODE = {"yamlencode", "jsonencode", "yamldecode", "jsondecode", "trimspace", "chomp"}
_DIRECTIVE = re.compile(r"(?<!%)%\{")
_SHELL_KEYS = ("command", "args")


@dataclass
class Manifest:
    docs: list[Doc]
    address: str  # the Terraform resource that applies them
    first: int    # the resource's line
    values: bool = False  # a Helm chart's values (read as cluster definitions), not Kubernetes objects

    def holds(self, line: int) -> bool:
        """Is ``line`` within one of its documents (written in the resource, or in a local it names)?"""
        return any(min(ln for ln, _ in d.marks.values()) <= line <= max(ln for ln, _ in d.marks.values())
                   for d in self.docs if d.marks)


def manifests_of(ctx, rtype: str, label: str, view: View, line: int) -> Manifest | None:
    """The Kubernetes documents one ``kubectl_manifest`` / ``kubernetes_manifest`` resource applies."""
    attr = view.attrs.get(MANIFEST_ATTRS.get(rtype, ""))
    if attr is None:
        return None
    if rtype == "helm_release":
        # values = [<<-YAML ... YAML, yamlencode({...})]: each element is one document of values
        node = unwrap(attr.node)
        elements = list(node.elements) if isinstance(node, TupleRule) else []
        docs = [d for e in elements for d in _docs(ctx, e, *position(e, attr.line, attr.column), 0)]
    else:
        docs = _docs(ctx, attr.node, attr.line, attr.column, 0)
    if not docs:
        return None
    return Manifest(docs, f"{rtype}.{label}", line, values=rtype == "helm_release")


def read_manifests(ctx, manifests: list[Manifest]) -> None:
    """The Kubernetes reader's facts of every manifest of the file, in one pass (an HPA scales a Deployment
    another resource applies), appended to ``ctx.facts``."""
    docs = [d for m in manifests if not m.values for d in m.docs]
    values = [d for m in manifests if m.values for d in m.docs]
    facts = read_kubernetes(docs, ctx.path) if docs else []
    if values:
        from gpulint.read.clusters import read_cluster_docs  # a chart's values: Slinky NodeSets, Ray clusters ...

        facts += read_cluster_docs(values, ctx.path)
    for f in facts:
        if f.kind == "compute.target":
            owner = next((m for m in manifests if m.holds(f.loc.line)), None)
            if owner is not None:
                f.attrs["terraform_resource"] = owner.address
    ctx.facts += facts


def _docs(ctx, node, line: int, col: int, depth: int) -> list[Doc]:
    node = unwrap(node)
    if node is None or depth > MAX_DEPTH:
        return []
    if isinstance(node, HeredocTemplateRule):
        return _heredoc_docs(ctx, node, line, col)
    if isinstance(node, ObjectRule):
        marks: dict = {}
        data = _hcl_value(ctx, node, (), marks, *position(node, line, col), 0)
        return [Doc(data, marks, marks[()][0])]
    if isinstance(node, FunctionCallRule):
        fname = "::".join(node_name(i) or "" for i in node.identifiers)
        args = node.arguments.arguments if node.arguments else []
        if fname in _ENCODE and len(args) == 1:
            return _docs(ctx, args[0], *position(args[0], line, col), depth + 1)
        return []  # file(), templatefile(): a file of its own
    parts = traversal(node)
    if parts and len(parts) == 2 and parts[0] == "local" and parts[1] in ctx.local_nodes:
        lnode, lline, lcol = ctx.local_nodes[parts[1]]
        return _docs(ctx, lnode, lline, lcol, depth + 1)
    return []


def _heredoc_docs(ctx, node, line: int, col: int) -> list[Doc]:
    hline, _ = position(node, line, col)
    body, indent = _heredoc_body(node)
    if body is None or _DIRECTIVE.search(body):
        return []
    try:
        docs = load_documents(body)
    except (YamlError, RecursionError):
        return []  # YAML that does not parse is the manifest's problem at apply time, not a reason to lose the file
    out = []
    for doc in docs:
        marks = {k: (ln + hline, c + indent) for k, (ln, c) in doc.marks.items()}
        out.append(Doc(_scrub(ctx, doc.data, ()), marks, doc.start_line + hline))
    return out


def _scrub(ctx, value, path: tuple):
    """The document as Terraform leaves it for gpulint: interpolations resolved or marked unknown."""
    if isinstance(value, dict):
        return {k: _scrub(ctx, v, path + (k,)) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(ctx, v, path + (i,)) for i, v in enumerate(value)]
    if not isinstance(value, str) or ("${" not in value and "%%{" not in value):
        return value
    text, unknown = _interpolate(ctx, value)
    if not unknown:
        return text
    if path[-2:] == ("metadata", "name"):
        return value  # a name identifies the target; it is never a measured value
    in_argv = len(path) >= 2 and isinstance(path[-1], int) and path[-2] in _SHELL_KEYS
    if in_argv or any(ch.isspace() for ch in text):
        return text  # a script or a command line: the shell reader sees an unset variable
    return Tagged({"!terraform": value})


def _interpolate(ctx, text: str) -> tuple[str, bool]:
    """``text`` with Terraform's interpolations resolved where this file decides them, and whether any is left
    (those become ``${___}``, a shell variable nothing sets)."""
    out, i, n, unknown = [], 0, len(text), False
    while i < n:
        if text.startswith("$${", i) or text.startswith("%%{", i):
            out.append(text[i + 1:i + 3])
            i += 3
            continue
        if text.startswith("${", i):
            end = _close(text, i + 2, "{", "}")
            if end < 0:
                out.append(text[i:])
                break
            value = _known(ctx, text[i + 2:end - 1].strip().strip("~").strip())
            if value is None:
                unknown = True
                out.append("${" + "_" * max(1, end - i - 3) + "}")
            else:
                out.append(value)
            i = end
            continue
        out.append(text[i])
        i += 1
    return "".join(out), unknown


def _known(ctx, expr: str) -> str | None:
    """A ``local`` with a literal value in this file (a variable's default may be overridden: not decided here)."""
    if not re.match(r"^local\.[A-Za-z_][\w-]*$", expr):
        return None
    value = ctx.known.get(expr, UNKNOWN)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)) and "\n" not in str(value):
        return str(value)
    return None


def _hcl_value(ctx, node, path: tuple, marks: dict, line: int, col: int, depth: int):
    """An HCL expression as the plain data of a manifest, with each key's position in ``marks``."""
    node = unwrap(node)
    marks[path] = (line, col)
    if depth > MAX_DEPTH or node is None:
        return Tagged({"!terraform": None})
    if isinstance(node, ObjectRule):
        out = {}
        for elem in node.elements:
            key = object_key(elem)
            if key is not None:
                eline, ecol = position(elem, line, col)
                out[key] = _hcl_value(ctx, elem.expression, path + (key,), marks, eline, ecol, depth + 1)
        return out
    if isinstance(node, TupleRule):
        return [_hcl_value(ctx, e, path + (i,), marks, *position(e, line, col), depth + 1)
                for i, e in enumerate(node.elements)]
    value = evaluate(node)
    if is_ref(value):
        known = ctx.known.get(value["ref"], UNKNOWN) if value["ref"].startswith("local.") else UNKNOWN
        value = known if isinstance(known, (str, int, float, bool)) else UNKNOWN
    # evaluate() gives a string only when it is literal ("$${X}" already the text "${X}")
    return Tagged({"!terraform": None}) if value is UNKNOWN else value
