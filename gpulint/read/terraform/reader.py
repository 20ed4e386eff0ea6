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

import json
import re
from typing import Any, Callable, Iterator

import hcl2
from hcl2.rules.base import AttributeRule, BlockRule, BodyRule
from hcl2.rules.containers import ObjectElemKeyRule, ObjectRule, TupleRule
from hcl2.rules.expressions import ExprTermRule, UnaryOpRule
from hcl2.rules.functions import FunctionCallRule
from hcl2.rules.indexing import GetAttrExprTermRule, IndexExprTermRule
from hcl2.rules.literal_rules import FloatLitRule, IdentifierRule, IntLitRule, LiteralValueRule
from hcl2.rules.strings import HeredocTemplateRule, InterpolationRule, StringRule
from hcl2.utils import SerializationOptions, process_escape_sequences

from gpulint.core.model import Fact, Location
from gpulint.read.errors import BlockFailure, PartialRead, ReadError

__all__ = ["ReadError", "read"]

_UNKNOWN = object()
_OPTS = SerializationOptions(
    with_comments=False, preserve_heredocs=False, strip_string_quotes=True, preserve_scientific_notation=False
)
_MAX_DEPTH = 64
# Nested block types that repeat by nature: always indexed in key paths, so adding a
# second one does not rename the first (keys feed fingerprints).
_REPEATED = {"override", "network_interfaces", "guest_accelerator", "node_pool", "production_variants",
             "accelerator_configs", "instance_types"}


# --------------------------------------------------------------------------- parsing


def read(text: str, path: str) -> list[Fact]:
    """Facts of one Terraform file. Raises only ReadError (unparsable HCL)."""
    try:
        tree = hcl2.parses(text)
    except RecursionError:
        raise ReadError("HCL nesting too deep to parse", 1, 1) from None
    except Exception as exc:  # lark/hcl2 raise several types; callers get one
        tree = _without_unread_interpolations(text, exc)
        if tree is None:
            raise _read_error(exc, text) from None
    ctx = _Ctx(path)
    try:
        root = _View(tree.body, 1, 1, "")
    except RecursionError:
        raise ReadError("HCL nesting too deep to read", 1, 1) from None
    ctx.collect_values(root)
    failures: list[BlockFailure] = []
    for name, blocks in root.raw.items():
        for body, line, col, _dyn, labels in blocks:
            start = len(ctx.facts)
            try:
                _top_block(ctx, name, labels, _View(body, line, col, ""), line, col)
            except Exception as exc:  # noqa: BLE001 - one odd block must not lose the file's other facts
                del ctx.facts[start:]  # a half-read block says nothing rather than something partial
                what = " ".join([name] + [f'"{lab}"' for lab in labels])
                error = "nesting too deep" if isinstance(exc, RecursionError) else f"{type(exc).__name__}: {exc}"
                failures.append(BlockFailure(what, line, col, error))
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
            out.append(Fact("tf.tfvar", {"name": name, "value": _json_value(value), "auto": _is_auto_tfvars(path)},
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


def _is_auto_tfvars(path: str) -> bool:
    """Terraform loads these without a -var-file flag."""
    name = path.rsplit("/", 1)[-1]
    return name in ("terraform.tfvars", "terraform.tfvars.json") or name.endswith((".auto.tfvars", ".auto.tfvars.json"))


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
            return hcl2.parses(text)
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


def _pos(rule, line: int = 1, col: int = 1) -> tuple[int, int]:
    meta = getattr(rule, "_meta", None)
    return getattr(meta, "line", line) or line, getattr(meta, "column", col) or col


# --------------------------------------------------------------------------- values


def _unwrap(node):
    for _ in range(_MAX_DEPTH):
        if not isinstance(node, ExprTermRule):
            return node
        node = node.expression
    return None


def _name(node) -> str | None:
    if isinstance(node, IdentifierRule):
        return str(node.serialize(_OPTS))
    return None


def _traversal(node, depth: int = 0) -> list[str] | None:
    """``a.b[0].c`` as ["a", "b", "[]", "c"]; None for anything that is not a plain traversal."""
    node = _unwrap(node)
    if depth > _MAX_DEPTH or node is None:
        return None
    if isinstance(node, IdentifierRule):
        return [_name(node)]
    if isinstance(node, GetAttrExprTermRule):
        head = _traversal(node.expr_term, depth + 1)
        tail = _name(node.get_attr.identifier)
        return head + [tail] if head and tail else None
    if isinstance(node, IndexExprTermRule):
        head = _traversal(node.children[0], depth + 1)
        return head + ["[]"] if head else None
    return None


def _var_ref(node) -> str | None:
    parts = _traversal(node)
    if parts and len(parts) == 2 and parts[0] in ("var", "local") and parts[1] != "[]":
        return f"{parts[0]}.{parts[1]}"
    return None


def _resource_ref(node) -> str | None:
    """``aws_launch_template.gpu.id`` -> ``aws_launch_template.gpu`` (None for var/local/data)."""
    parts = _traversal(node)
    if parts and len(parts) >= 2 and parts[1] != "[]" and "_" in parts[0] and parts[0] not in ("var", "local"):
        return f"{parts[0]}.{parts[1]}"
    if parts and len(parts) >= 3 and parts[0] == "module":
        return f"module.{parts[1]}"
    return None


def _string(node: StringRule):
    parts = node.string_parts
    if len(parts) == 1 and isinstance(parts[0].content, InterpolationRule):
        ref = _var_ref(parts[0].content.expression)
        return {"ref": ref} if ref else _UNKNOWN
    out = []
    for part in parts:
        content = part.content
        kind = content.lark_name() if hasattr(content, "lark_name") else ""
        if kind == "STRING_CHARS":
            out.append(process_escape_sequences(str(content.serialize(_OPTS))))
        elif kind in ("ESCAPED_INTERPOLATION", "ESCAPED_DIRECTIVE"):
            out.append(str(content.serialize(_OPTS))[1:])  # "$${" is a literal "${"
        else:
            return _UNKNOWN  # interpolation mixed with text, or a template directive
    return "".join(out)


_TEMPLATE = re.compile(r"(?<![$%])[$%]\{")


def _heredoc(node: HeredocTemplateRule):
    body = node.serialize(_OPTS)
    if not isinstance(body, str) or _TEMPLATE.search(body):
        return _UNKNOWN
    return body.replace("$${", "${").replace("%%{", "%{")


def _eval(node, depth: int = 0):
    """Literal value of an expression, {"ref": ...} for var/local, else _UNKNOWN."""
    node = _unwrap(node)
    if node is None or depth > _MAX_DEPTH:
        return _UNKNOWN
    if isinstance(node, (IntLitRule, FloatLitRule)):
        value = node.serialize(_OPTS)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else _UNKNOWN
    if isinstance(node, LiteralValueRule):
        value = node.serialize(_OPTS)
        return value if value is None or isinstance(value, bool) else _UNKNOWN
    if isinstance(node, StringRule):
        return _string(node)
    if isinstance(node, HeredocTemplateRule):
        return _heredoc(node)
    if isinstance(node, UnaryOpRule):
        inner = _eval(node.expr_term, depth + 1)
        op = node.operator.strip()
        if op == "-" and isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
        if op == "!" and isinstance(inner, bool):
            return not inner
        return _UNKNOWN
    if isinstance(node, TupleRule):
        return [_plain(_eval(e, depth + 1)) for e in node.elements]
    if isinstance(node, ObjectRule):
        out = {}
        for elem in node.elements:
            key = _object_key(elem)
            if key is not None:
                out[key] = _plain(_eval(elem.expression, depth + 1))
        return out
    ref = _var_ref(node)
    return {"ref": ref} if ref else _UNKNOWN


def _object_key(elem) -> str | None:
    key = elem.key
    if not isinstance(key, ObjectElemKeyRule):
        return None  # a computed key, (expr) = ...
    inner = key.value
    if isinstance(inner, IdentifierRule):
        return _name(inner)
    if isinstance(inner, StringRule):
        value = _string(inner)
        return value if isinstance(value, str) else None
    value = inner.serialize(_OPTS)
    return str(value) if isinstance(value, (int, float)) else None


def _plain(value):
    return None if value is _UNKNOWN else value


def _is_ref(value) -> bool:
    return isinstance(value, dict) and set(value) == {"ref"}


# --------------------------------------------------------------------------- views


class _Attr:
    __slots__ = ("node", "line", "column")

    def __init__(self, node, line, column):
        self.node, self.line, self.column = node, line, column


class _View:
    """One block body or one object literal, read alike: ``x { a = 1 }`` and ``x = { a = 1 }``
    are the same to Terraform's schema, and module inputs only have the object form."""

    def __init__(self, rule, line: int, column: int, prefix: str, for_each=None, depth: int = 0):
        self.line, self.column, self.prefix = line, column, prefix
        self.for_each = for_each  # the for_each expression when this is a dynamic block's content
        self.depth = depth
        self.attrs: dict[str, _Attr] = {}
        # name -> [(rule, line, col, for_each, labels)]
        self.raw: dict[str, list[tuple]] = {}
        if depth > _MAX_DEPTH:
            return
        if isinstance(rule, BodyRule):
            for child in rule.children:
                if isinstance(child, AttributeRule):
                    self._attr(_name(child.identifier), child.expression, *_pos(child, line, column))
                elif isinstance(child, BlockRule):
                    self._block(child)
        elif isinstance(rule, ObjectRule):
            for elem in rule.elements:
                self._attr(_object_key(elem), elem.expression, *_pos(elem, line, column))

    def _attr(self, name, expr, line, col):
        if not name:
            return
        self.attrs[name] = _Attr(expr, line, col)
        inner = _unwrap(expr)
        if isinstance(inner, ObjectRule):
            self.raw.setdefault(name, []).append((inner, line, col, None, ()))
        elif isinstance(inner, TupleRule) and inner.elements and all(
            isinstance(_unwrap(e), ObjectRule) for e in inner.elements
        ):
            for e in inner.elements:
                self.raw.setdefault(name, []).append((_unwrap(e), *_pos(e, line, col), None, ()))

    def _block(self, block: BlockRule):
        labels = [_label(lab) for lab in block.labels]
        line, col = _pos(block, self.line, self.column)
        if labels[0] == "dynamic" and len(labels) == 2 and labels[1]:
            inner = _View(block.body, line, col, "", depth=self.depth + 1)
            for_each = inner.attrs.get("for_each")
            for content in inner.raw.get("content", []):
                self.raw.setdefault(labels[1], []).append(
                    (content[0], content[1], content[2], for_each.node if for_each else None, ())
                )
            return
        self.raw.setdefault(labels[0], []).append((block.body, line, col, None, tuple(labels[1:])))

    def blocks(self, name: str) -> list["_View"]:
        found = self.raw.get(name, [])
        out = []
        for i, (rule, line, col, for_each, _labels) in enumerate(found):
            index = f"[{i}]" if name in _REPEATED or len(found) > 1 else ""
            out.append(_View(rule, line, col, f"{self.prefix}{name}{index}.", for_each, self.depth + 1))
        return out

    def block(self, name: str) -> "_View | None":
        found = self.blocks(name)
        return found[0] if found else None

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"


def _label(rule) -> str:
    if isinstance(rule, StringRule):
        value = _string(rule)
        return value if isinstance(value, str) else ""
    return _name(rule) or ""


class _Val:
    """An attribute's value with where it was written."""

    __slots__ = ("value", "line", "column", "key", "resolved_from")

    def __init__(self, value, line, column, key, resolved_from=None):
        self.value, self.line, self.column, self.key, self.resolved_from = value, line, column, key, resolved_from

    @property
    def attrs(self) -> dict:
        return {"resolved_from": self.resolved_from} if self.resolved_from else {}


# --------------------------------------------------------------------------- context


class _Ctx:
    def __init__(self, path: str):
        self.path = path
        self.facts: list[Fact] = []
        self.known: dict[str, Any] = {}  # "var.x"/"local.y" -> literal value in this file
        # expressions as written, for boot scripts kept in a local, a variable default or a data source
        self.local_nodes: dict[str, tuple] = {}  # name -> (node, line, column)
        self.variable_nodes: dict[str, tuple] = {}
        self.data_views: dict[str, _View] = {}  # "data.template_file.x" -> its body

    def collect_values(self, root: _View):
        """Variables (every one, with or without a default), locals, ``.tfvars`` assignments and
        module calls: the raw material of ``gpulint.resolve.tfvalues``, which resolves references across the
        module's files. Only literals are also remembered for references within this file."""
        for _body, line, col, _dyn, labels in root.raw.get("data", []):
            if len(labels) == 2 and labels[0] in ("template_file", "cloudinit_config"):
                self.data_views[f"data.{labels[0]}.{labels[1]}"] = _View(_body, line, col, "")
        for _body, line, col, _dyn, labels in root.raw.get("variable", []):
            if not labels:
                continue
            view = _View(_body, line, col, "")
            attr = view.attrs.get("default")
            if attr is not None:
                self.variable_nodes[labels[0]] = (attr.node, attr.line, attr.column)
            value = _eval(attr.node) if attr is not None else _UNKNOWN
            where = attr or _Attr(None, line, col)
            fact = {"name": labels[0], "default": _plain(value), "has_default": attr is not None}
            if attr is not None and value is _UNKNOWN:
                fact["computed"] = True  # a default gpulint does not evaluate
            if value is not _UNKNOWN:
                self.known[f"var.{labels[0]}"] = value
            self.emit("tf.variable", fact, where.line, where.column, f"var.{labels[0]}")
        for _body, line, col, _dyn, _labels in root.raw.get("locals", []):
            view = _View(_body, line, col, "")
            for name, attr in view.attrs.items():
                self.local_nodes[name] = (attr.node, attr.line, attr.column)
                value = _eval(attr.node)
                fact = {"name": name, "value": _plain(value)}
                if value is _UNKNOWN:
                    fact["computed"] = True
                else:
                    self.known[f"local.{name}"] = value
                self.emit("tf.local", fact, attr.line, attr.column, f"local.{name}")
        if self.path.endswith(".tfvars"):
            auto = _is_auto_tfvars(self.path)
            for name, attr in root.attrs.items():
                value = _eval(attr.node)
                self.emit("tf.tfvar", {"name": name, "value": _plain(value), "auto": auto}, attr.line, attr.column,
                          f"var.{name}")
        for _body, line, col, _dyn, labels in root.raw.get("module", []):
            if len(labels) != 1:
                continue
            view = _View(_body, line, col, "")
            source = _eval(view.attrs["source"].node) if "source" in view.attrs else _UNKNOWN
            if not isinstance(source, str):
                continue
            inputs = {name: _plain(_eval(a.node)) for name, a in view.attrs.items()
                      if name not in ("source", "version", "providers", "count", "for_each", "depends_on")}
            lines = {name: [a.line, a.column] for name, a in view.attrs.items() if name in inputs}
            self.emit("tf.module_call", {"name": labels[0], "source": source, "inputs": inputs}, line, col,
                      f"module.{labels[0]}", attrs={"input_positions": lines})

    def get(self, view: _View | None, name: str) -> _Val | None:
        if view is None or name not in view.attrs:
            return None
        attr = view.attrs[name]
        value = original = _eval(attr.node)
        resolved = None
        for _ in range(8):  # local.a = var.b chains, bounded against cycles
            if _is_ref(value) and value["ref"] in self.known:
                resolved = resolved or value["ref"]
                value = self.known[value["ref"]]
            else:
                break
        if _is_ref(value):  # the chain ends outside this file: the linker follows it from the start
            value, resolved = original, None
        return _Val(_plain(value), attr.line, attr.column, view.key(name), resolved)

    def emit(self, kind, value, line, column, key="", target="", attrs=None):
        loc = Location(self.path, line, column)
        self.facts.append(Fact(kind, value, loc, key=key, target=target, attrs=dict(attrs or {})))


# --------------------------------------------------------------------------- normalisation


def _norm(val: _Val, table: dict[str, str], default_unknown=True):
    """Map a raw value through `table` (keys: strings as written, lower-cased; non-strings as JSON)."""
    raw = val.value
    if _is_ref(raw):
        return {"ref": raw["ref"], "map": table}
    if isinstance(raw, str):
        return table.get(raw.lower())
    if isinstance(raw, bool) or isinstance(raw, (int, float)) or raw is None:
        return table.get(json.dumps(raw)) if raw is not None else None
    return None


def _int(val: _Val | None):
    if val is None:
        return None
    v = val.value
    if isinstance(v, bool):
        return None
    if isinstance(v, int) or _is_ref(v):
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


def _role(label: str, *views: _View | None) -> tuple[str | None, str | None]:
    texts = [("name", label)]
    for view in views:
        if view is None:
            continue
        for attr in _NAME_ATTRS:
            if attr in view.attrs:
                value = _eval(view.attrs[attr].node)
                if isinstance(value, str):
                    texts.append((attr, value))
        for tags_name in ("tags", "labels", "node_labels", "resource_labels", "tags_all"):
            for tags in view.blocks(tags_name):
                for key, attr in tags.attrs.items():
                    value = _eval(attr.node)
                    if isinstance(value, str) and any(k in key.lower() for k in _ROLE_TAG_KEYS):
                        texts.append((f"{tags_name}.{key}", value))
        for spec in view.blocks("tag_specifications"):
            for tags in spec.blocks("tags"):
                for key, attr in tags.attrs.items():
                    value = _eval(attr.node)
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


# --------------------------------------------------------------------------- targets


class _Target:
    def __init__(self, ctx: _Ctx, target: str, resource: str, provider: str | None, view: _View,
                 line: int, col: int, role=None, role_evidence=None, attrs=None):
        self.ctx, self.target, self.view, self.line, self.col = ctx, target, view, line, col
        extra = dict(attrs or {})
        if role_evidence:
            extra["role_evidence"] = role_evidence
        value = {"source": "terraform", "provider": provider, "resource": resource, "role": role}
        ctx.emit("compute.target", value, line, col, key="", target=target, attrs=extra)
        self.reserved = self.reservation(view)

    def reservation(self, view: _View | None) -> bool:
        """Capacity bought ahead of use: a targeted reservation (AWS ODCR or Capacity Block, GCP specific
        reservation, Azure capacity reservation group) bills whether or not the nodes run, so its floor is not
        idle spend that scaling to zero returns. Whether `view` declares one."""
        found = _reservation(self.ctx, view)
        if found is not None:
            self.fact("compute.capacity", "reserved", found)
        return found is not None

    def fact(self, kind, value, val: _Val | None = None, key: str | None = None, attrs=None):
        line, col = (val.line, val.column) if val else (self.line, self.col)
        merged = dict(val.attrs if val else {})
        merged.update(attrs or {})
        if key is None:
            key = val.key if val else ""
        self.ctx.emit(kind, value, line, col, key=key, target=self.target, attrs=merged)

    def instance_type(self, val: _Val | None):
        if val is None:
            return
        v = val.value
        if isinstance(v, list):
            for i, item in enumerate(v):
                self.fact("compute.instance_type", item if isinstance(item, (str, dict)) else None, val,
                          key=f"{val.key}[{i}]")
        else:
            self.fact("compute.instance_type", v if isinstance(v, (str, dict)) else None, val)

    def count(self, kind, val: _Val | None, attrs=None):
        if val is not None:
            self.fact(kind, _int(val), val, attrs=attrs)


def _reservation(ctx: _Ctx, view: _View | None) -> _Val | None:
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


def _named(ctx: _Ctx, view: _View | None, name: str) -> _Val | None:
    """``name``'s value where it names something (a literal id, a variable, another resource's attribute), None
    where it is absent, null or empty."""
    val = ctx.get(view, name)
    if val is None:
        return None
    return val if val.value not in (None, "") or _resource_ref(view.attrs[name].node) else None


def _ref_attr(ctx: _Ctx, view: _View | None, *names: str) -> str | None:
    if view is None:
        return None
    for name in names:
        if name in view.attrs:
            ref = _resource_ref(view.attrs[name].node)
            if ref:
                return ref
            val = ctx.get(view, name)
            if val and isinstance(val.value, str):
                return val.value
    return None


def _placement_attrs(ctx: _Ctx, view: _View, attrs: dict):
    pg = _ref_attr(ctx, view, "placement_group", "proximity_placement_group_id")
    placement = view.block("placement")
    pg = pg or _ref_attr(ctx, placement, "group_name", "group_id")
    if pg:
        attrs["placement_group"] = pg
    policy = view.block("placement_policy")
    if policy:
        ptype = ctx.get(policy, "type")
        if ptype and isinstance(ptype.value, str):
            attrs["placement_policy"] = ptype.value
    pols = view.attrs.get("resource_policies")
    if pols is not None:
        inner = _unwrap(pols.node)
        refs = [_resource_ref(e) for e in inner.elements] if isinstance(inner, TupleRule) else []
        refs = [r for r in refs if r]
        if refs:
            attrs["resource_policies"] = refs


def _node_count_from_count(t: _Target, ctx: _Ctx, view: _View):
    count = ctx.get(view, "count")
    if count is not None:
        t.count("compute.node_count", count)
    elif "for_each" in view.attrs:
        t.fact("compute.node_count", None, key="for_each", attrs={"for_each": True})
    else:
        t.fact("compute.node_count", 1, key="count", attrs={"default": True})


# ---- AWS

_MARKET = {"spot": "spot", "capacity-block": "reserved"}
_EKS_CAPACITY = {"spot": "spot", "on_demand": "on-demand", "capacity_block": "reserved"}
_BATCH_TYPE = {"spot": "spot", "ec2": "on-demand", "fargate_spot": "spot", "fargate": "on-demand"}
_BOOL_SPOT = {"true": "spot", "false": "on-demand"}
_AZ_PRIORITY = {"spot": "spot", "regular": "on-demand", "lowpriority": "spot", "low": "spot", "dedicated": "on-demand"}


def _market(t: _Target, ctx: _Ctx, view: _View, default: bool):
    opts = view.block("instance_market_options")
    if opts is not None:
        mt = ctx.get(opts, "market_type")
        if mt is not None:
            attrs = {"market_type": mt.value} if isinstance(mt.value, str) else {}
            t.fact("compute.capacity", _norm(mt, _MARKET), mt, attrs=attrs)
        else:
            t.fact("compute.capacity", None, key=opts.key("market_type"))
    elif default:
        t.fact("compute.capacity", "on-demand", key=view.key("instance_market_options.market_type"),
               attrs={"default": True})


def _efa(t: _Target, ctx: _Ctx, view: _View, nics_name="network_interfaces", default_zero=True):
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
        if itype is None or itype.value is None or _is_ref(itype.value):
            if itype is not None:
                t.fact("compute.efa", None, itype)
                return
            continue
        if str(itype.value).lower() != "efa":
            continue
        first = first or itype
        if nic.for_each is not None:
            n = _eval(nic.for_each)
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


def _aws_instance(ctx, rtype, label, view, line, col, spot_request=False):
    attrs: dict = {}
    lt = view.block("launch_template")
    ref = _ref_attr(ctx, lt, "id", "name")
    if ref:
        attrs["launch_template"] = ref
    _placement_attrs(ctx, view, attrs)
    role, ev = _role(label, view)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "instance_type"))
    if spot_request:
        t.fact("compute.capacity", "spot", key="resource_type")
    else:  # with a launch template and no market options of its own, the template decides
        _market(t, ctx, view, default="launch_template" not in attrs)
    _node_count_from_count(t, ctx, view)


def _aws_launch_template(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    _placement_attrs(ctx, view, attrs)
    role, ev = _role(label, view)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "instance_type"))
    _market(t, ctx, view, default=False)  # the group that launches it may decide
    _efa(t, ctx, view)


def _aws_launch_configuration(ctx, rtype, label, view, line, col):
    role, ev = _role(label, view)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "aws", view, line, col, role, ev)
    t.instance_type(ctx.get(view, "instance_type"))
    price = ctx.get(view, "spot_price")
    if price is not None:
        t.fact("compute.capacity", "spot", price)
    else:
        t.fact("compute.capacity", "on-demand", key="spot_price", attrs={"default": True})


def _aws_asg(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    lt_ref = _ref_attr(ctx, view.block("launch_template"), "id", "name")
    mip = view.block("mixed_instances_policy")
    mlt = mip.block("launch_template") if mip else None
    spec = mlt.block("launch_template_specification") if mlt else None
    lt_ref = lt_ref or _ref_attr(ctx, spec, "launch_template_id", "launch_template_name")
    if lt_ref:
        attrs["launch_template"] = lt_ref
    lc = _ref_attr(ctx, view, "launch_configuration")
    if lc:
        attrs["launch_configuration"] = lc
    _placement_attrs(ctx, view, attrs)
    max_size = ctx.get(view, "max_size")
    if max_size is not None and _int(max_size) is not None:
        attrs["max_size"] = _int(max_size)
    role, ev = _role(label, view)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    for ov in mlt.blocks("override") if mlt else []:
        t.instance_type(ctx.get(ov, "instance_type"))
    # desired_capacity_type "vcpu"/"memory-mib" makes sizes non-node units
    unit = ctx.get(view, "desired_capacity_type")
    nodes = unit is None or unit.value == "units"
    desired, minimum = ctx.get(view, "desired_capacity"), ctx.get(view, "min_size")
    if desired is not None:
        t.fact("compute.node_count", _int(desired) if nodes else None, desired)
    elif minimum is not None:  # AWS starts an ASG at min_size when desired is unset
        t.fact("compute.node_count", _int(minimum) if nodes else None, minimum, key="desired_capacity",
               attrs={"from": "min_size"})
    if minimum is not None:
        t.fact("compute.min_nodes", _int(minimum) if nodes else None, minimum)
    dist = mip.block("instances_distribution") if mip else None
    if mip is not None:
        pct = ctx.get(dist, "on_demand_percentage_above_base_capacity")
        base = ctx.get(dist, "on_demand_base_capacity")
        pct_v = _int(pct) if pct else 100  # AWS defaults: 100 % on-demand, base 0
        base_v = _int(base) if base else 0
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


def _scaling(t: _Target, ctx: _Ctx, view: _View | None, desired="desired_size", minimum="min_size",
             maximum="max_size"):
    if view is None:
        return
    d, m, x = ctx.get(view, desired), ctx.get(view, minimum), ctx.get(view, maximum)
    if d is not None:
        t.count("compute.node_count", d)
    elif m is not None:
        t.fact("compute.node_count", _int(m), m, key=view.key(desired), attrs={"from": minimum})
    if m is not None:
        t.count("compute.min_nodes", m, attrs={"max": _int(x)} if x is not None and _int(x) is not None else None)


def _aws_eks_node_group(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    ref = _ref_attr(ctx, view.block("launch_template"), "id", "name")
    if ref:
        attrs["launch_template"] = ref
    ami = ctx.get(view, "ami_type")
    if ami and isinstance(ami.value, str):
        attrs["ami_type"] = ami.value
    role, ev = _role(label, view)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "instance_types"))
    cap = ctx.get(view, "capacity_type")
    if cap is not None:
        t.fact("compute.capacity", _norm(cap, _EKS_CAPACITY), cap)
    else:
        t.fact("compute.capacity", "on-demand", key="capacity_type", attrs={"default": True})
    _scaling(t, ctx, view.block("scaling_config"))


def _aws_batch_ce(ctx, rtype, label, view, line, col):
    cr = view.block("compute_resources")
    if cr is None:
        return
    ctype = ctx.get(cr, "type")
    if ctype and isinstance(ctype.value, str) and ctype.value.upper().startswith("FARGATE"):
        return  # Fargate has no GPUs
    attrs: dict = {}
    ref = _ref_attr(ctx, cr.block("launch_template"), "launch_template_id", "launch_template_name")
    if ref:
        attrs["launch_template"] = ref
    _placement_attrs(ctx, cr, attrs)
    role, ev = _role(label, view, cr)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "aws", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(cr, "instance_type"))
    if ctype is not None:
        t.fact("compute.capacity", _norm(ctype, _BATCH_TYPE), ctype)
    for name, kind in (("min_vcpus", "compute.min_nodes"), ("desired_vcpus", "compute.node_count")):
        val = ctx.get(cr, name)
        if val is None:
            continue
        vcpus = _int(val)
        # vCPUs are not nodes; only zero converts without the instance catalogue
        t.fact(kind, 0 if vcpus == 0 else None, val, attrs={name: vcpus})


def _aws_sagemaker_notebook(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    lc = ctx.get(view, "lifecycle_config_name")
    attrs["lifecycle_config"] = None if lc is None else (lc.value if isinstance(lc.value, str) else True)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "aws", view, line, col, "notebook", "resource type", attrs)
    t.instance_type(ctx.get(view, "instance_type"))
    t.fact("compute.capacity", "on-demand", key="instance_type", attrs={"default": True})
    t.fact("compute.node_count", 1, key="instance_type", attrs={"default": True})


def _aws_sagemaker_endpoint_config(ctx, rtype, label, view, line, col):
    addr = f"{rtype}.{label}"
    variants = [v for v in view.blocks("production_variants") if "instance_type" in v.attrs]
    for i, var in enumerate(variants):
        target = addr if len(variants) == 1 else f"{addr}.production_variants[{i}]"
        vline, vcol = var.line, var.column
        t = _Target(ctx, target, addr, "aws", var, vline, vcol, "serving", "resource type")
        t.instance_type(ctx.get(var, "instance_type"))
        t.fact("compute.capacity", "on-demand", key=var.key("instance_type"),
               attrs={"default": True})  # real-time endpoints have no spot option
        t.count("compute.node_count", ctx.get(var, "initial_instance_count"))


# ---- GCP


def _accelerators(t: _Target, ctx: _Ctx, view: _View, name="guest_accelerator", count_attr="count"):
    accs = view.blocks(name)
    if name in view.attrs and not accs:
        t.fact("compute.accelerator", None, key=name)  # guest_accelerator = var.x
        t.fact("compute.gpus_per_node", None, key=name)
        return
    first = None
    counts = []
    for acc in accs:
        typ, cnt = ctx.get(acc, "type"), ctx.get(acc, count_attr)
        n = _int(cnt) if cnt is not None else 1
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


def _gcp_scheduling(t: _Target, ctx: _Ctx, view: _View):
    sched = view.block("scheduling")
    pre = ctx.get(sched, "preemptible")
    model = ctx.get(sched, "provisioning_model")
    if model is not None and not (pre is not None and pre.value is True):
        t.fact("compute.capacity", _norm(model, {"spot": "spot", "standard": "on-demand"}), model)
    elif pre is not None:
        t.fact("compute.capacity", _norm(pre, _BOOL_SPOT), pre)
    else:
        t.fact("compute.capacity", "on-demand", key=view.key("scheduling.provisioning_model"),
               attrs={"default": True})


def _gcp_instance(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    _placement_attrs(ctx, view, attrs)
    role, ev = _role(label, view)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "gcp", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "machine_type"))
    _accelerators(t, ctx, view)
    _gcp_scheduling(t, ctx, view)
    if rtype == "google_compute_instance":
        _node_count_from_count(t, ctx, view)


def _gke_pool(ctx, target, resource, label, view, line, col):
    nc = view.block("node_config")
    attrs: dict = {}
    _placement_attrs(ctx, view, attrs)
    role, ev = _role(label, view, nc)
    t = _Target(ctx, target, resource, "gcp", view, line, col, role, ev, attrs)
    if nc is not None:
        t.instance_type(ctx.get(nc, "machine_type"))
        _accelerators(t, ctx, nc)
        spot, pre = ctx.get(nc, "spot"), ctx.get(nc, "preemptible")
        chosen = spot if spot is not None and not (pre is not None and pre.value is True) else pre
        if chosen is not None:
            t.fact("compute.capacity", _norm(chosen, _BOOL_SPOT), chosen)
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
        t.fact("compute.min_nodes", _int(count), count, attrs={"fixed_size": True, **count.attrs})


def _gke_node_pool(ctx, rtype, label, view, line, col):
    addr = f"{rtype}.{label}"
    _gke_pool(ctx, addr, addr, label, view, line, col)


def _gke_cluster(ctx, rtype, label, view, line, col):
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


# ---- Azure


def _az_priority(t: _Target, ctx: _Ctx, view: _View, name="priority"):
    pri = ctx.get(view, name)
    if pri is not None:
        t.fact("compute.capacity", _norm(pri, _AZ_PRIORITY), pri)
    else:
        t.fact("compute.capacity", "on-demand", key=view.key(name), attrs={"default": True})


def _az_vm(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    _placement_attrs(ctx, view, attrs)
    role, ev = _role(label, view)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "azure", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "size") or ctx.get(view, "vm_size"))
    _az_priority(t, ctx, view)
    _node_count_from_count(t, ctx, view)


def _az_vmss(ctx, rtype, label, view, line, col):
    attrs: dict = {}
    _placement_attrs(ctx, view, attrs)
    role, ev = _role(label, view)
    addr = f"{rtype}.{label}"
    t = _Target(ctx, addr, addr, "azure", view, line, col, role, ev, attrs)
    t.instance_type(ctx.get(view, "sku") or ctx.get(view, "sku_name"))
    _az_priority(t, ctx, view)
    t.count("compute.node_count", ctx.get(view, "instances"))  # autoscale lives in another resource


def _aks_pool(ctx, target, resource, label, view, line, col, allow_spot=True):
    attrs: dict = {}
    _placement_attrs(ctx, view, attrs)
    role, ev = _role(label, view)
    t = _Target(ctx, target, resource, "azure", view, line, col, role, ev, attrs)
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
            t.fact("compute.min_nodes", _int(count), count, attrs={"fixed_size": True, **count.attrs})
    elif minimum is not None:  # autoscaling decided by a variable: min_count is the floor if it is on
        t.count("compute.min_nodes", minimum, attrs={"if_autoscaling": auto.value})


def _aks_node_pool(ctx, rtype, label, view, line, col):
    addr = f"{rtype}.{label}"
    _aks_pool(ctx, addr, addr, label, view, line, col)


def _aks_cluster(ctx, rtype, label, view, line, col):
    addr = f"{rtype}.{label}"
    pool = view.block("default_node_pool")
    if pool is not None:
        name = ctx.get(pool, "name")
        pname = name.value if name and isinstance(name.value, str) else label
        _aks_pool(ctx, f"{addr}.default_node_pool", addr, pname, pool, pool.line, pool.column, allow_spot=False)


# ---- modules (terraform-aws-modules/eks managed / self-managed node groups)


def _merged_get(ctx: _Ctx, view: _View, defaults: _View | None, name: str) -> _Val | None:
    return ctx.get(view, name) if name in view.attrs else ctx.get(defaults, name)


def _eks_module(ctx, label, view, line, col):
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
            _placement_attrs(ctx, gview, attrs)
            role, ev = _role(key, gview)
            t = _Target(ctx, target, f"module.{label}", "aws", gview, attr.line, attr.column, role, ev, attrs)
            if not t.reserved:
                t.reservation(defaults)  # eks_managed_node_group_defaults = { capacity_reservation_specification = ... }
            get = lambda n, g=gview: _merged_get(ctx, g, defaults, n)  # noqa: E731
            t.instance_type(get("instance_type") if self_managed else get("instance_types"))
            if self_managed:
                src = gview if "instance_market_options" in gview.raw else defaults
                if src is not None:
                    _market(t, ctx, src, default=True)
            else:
                cap = get("capacity_type")
                if cap is not None:
                    t.fact("compute.capacity", _norm(cap, _EKS_CAPACITY), cap)
                else:
                    t.fact("compute.capacity", "on-demand", key=gview.key("capacity_type"), attrs={"default": True})
            desired, minimum = get("desired_size"), get("min_size")
            if desired is not None:
                t.count("compute.node_count", desired)
            if minimum is not None:
                t.count("compute.min_nodes", minimum)
            efa_flag = get("enable_efa_support")
            if "network_interfaces" in gview.attrs:
                _efa(t, ctx, gview)
            elif efa_flag is not None and efa_flag.value is True:
                # the module adds every EFA interface the instance type supports
                t.fact("compute.efa", None, efa_flag, attrs={"enable_efa_support": True})


# --------------------------------------------------------------------------- env in container JSON


def _env_from_container(ctx: _Ctx, address: str, view: _View, name: str):
    attr = view.attrs.get(name)
    if attr is None:
        return
    node = _unwrap(attr.node)
    if isinstance(node, FunctionCallRule):
        ids = [_name(i) for i in node.identifiers]
        args = node.arguments.arguments if node.arguments else []
        if ids == ["jsonencode"] and len(args) == 1:
            for env_name, value, line, col in _env_in_tree(_unwrap(args[0]), attr.line, attr.column, 0):
                ctx.emit("env", {"name": env_name, "value": value}, line, col, key=env_name,
                         attrs={"resource": address})
        return
    text = _eval(node)
    if text is _UNKNOWN and isinstance(node, HeredocTemplateRule):
        text = _json_template(node.serialize(_OPTS))
    if not isinstance(text, str):
        return
    try:
        data = json.loads(text)
    except ValueError:
        return
    # a heredoc's body starts on the line after the attribute
    first = attr.line + 1 if isinstance(node, HeredocTemplateRule) else attr.line
    lines = text.split("\n")
    for env_name, value in _env_in_json(data, 0):
        offset = next((i for i, ln in enumerate(lines) if f'"{env_name}"' in ln), 0)
        ctx.emit("env", {"name": env_name, "value": value}, first + offset if len(lines) > 1 else attr.line,
                 1 if len(lines) > 1 else attr.column, key=env_name, attrs={"resource": address})


_EXPR_MARK = "\u0000tf-expr\u0000"


def _json_template(body) -> str | None:
    """A heredoc JSON template with ``${...}`` made parseable: an interpolated value becomes unknown."""
    if not isinstance(body, str) or "%{" in body.replace("%%{", ""):
        return None
    in_json = json.dumps(_EXPR_MARK)[1:-1]  # decodes back to _EXPR_MARK inside a JSON string
    body = re.sub(r"(?<!\$)\$\{[^{}]*\}", lambda _m: in_json, body)
    mark = re.escape(in_json)
    return re.sub(r"(:\s*)" + mark + r"(?=\s*[,}\]])", r"\1null", body)  # a bare ${...} value


def _env_pair(obj: dict):
    name, value = obj.get("name"), obj.get("value")
    if isinstance(name, str) and name and _EXPR_MARK not in name:
        if isinstance(value, str) and _EXPR_MARK in value:
            value = None
        return name, value if isinstance(value, (str, int, float, bool)) or value is None else None
    return None


def _env_in_json(data, depth) -> Iterator[tuple[str, Any]]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "environment" and isinstance(value, list):
                for item in value:
                    pair = _env_pair(item) if isinstance(item, dict) else None
                    if pair:
                        yield pair
            else:
                yield from _env_in_json(value, depth + 1)
    elif isinstance(data, list):
        for item in data:
            yield from _env_in_json(item, depth + 1)


def _env_in_tree(node, line, col, depth) -> Iterator[tuple[str, Any, int, int]]:
    if depth > _MAX_DEPTH or node is None:
        return
    if isinstance(node, ObjectRule):
        for elem in node.elements:
            key = _object_key(elem)
            value = _unwrap(elem.expression)
            eline, ecol = _pos(elem, line, col)
            if key == "environment" and isinstance(value, TupleRule):
                for item in value.elements:
                    data = _eval(item)
                    pair = _env_pair(data) if isinstance(data, dict) else None
                    if pair:
                        yield (*pair, *_pos(item, eline, ecol))
            else:
                yield from _env_in_tree(value, eline, ecol, depth + 1)
    elif isinstance(node, TupleRule):
        for item in node.elements:
            yield from _env_in_tree(_unwrap(item), *_pos(item, line, col), depth + 1)


# --------------------------------------------------------------------------- dispatch

_Handler = Callable[..., None]
_RESOURCES: dict[str, _Handler] = {
    "aws_instance": _aws_instance,
    "aws_spot_instance_request": lambda *a: _aws_instance(*a, spot_request=True),
    "aws_launch_template": _aws_launch_template,
    "aws_launch_configuration": _aws_launch_configuration,
    "aws_autoscaling_group": _aws_asg,
    "aws_eks_node_group": _aws_eks_node_group,
    "aws_batch_compute_environment": _aws_batch_ce,
    "aws_sagemaker_notebook_instance": _aws_sagemaker_notebook,
    "aws_sagemaker_endpoint_configuration": _aws_sagemaker_endpoint_config,
    "google_compute_instance": _gcp_instance,
    "google_compute_instance_template": _gcp_instance,
    "google_compute_region_instance_template": _gcp_instance,
    "google_container_node_pool": _gke_node_pool,
    "google_container_cluster": _gke_cluster,
    "azurerm_linux_virtual_machine": _az_vm,
    "azurerm_windows_virtual_machine": _az_vm,
    "azurerm_virtual_machine": _az_vm,
    "azurerm_linux_virtual_machine_scale_set": _az_vmss,
    "azurerm_windows_virtual_machine_scale_set": _az_vmss,
    "azurerm_orchestrated_virtual_machine_scale_set": _az_vmss,
    "azurerm_kubernetes_cluster_node_pool": _aks_node_pool,
    "azurerm_kubernetes_cluster": _aks_cluster,
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


def _top_block(ctx: _Ctx, name: str, labels: tuple, view: _View, line: int, col: int):
    if name == "module" and len(labels) == 1:
        if "eks_managed_node_groups" in view.attrs or "self_managed_node_groups" in view.attrs:
            _eks_module(ctx, labels[0], view, line, col)
        return
    if name != "resource" or len(labels) != 2:
        return
    rtype, label = labels
    address = f"{rtype}.{label}"
    handler = _RESOURCES.get(rtype)
    if handler is not None:
        handler(ctx, rtype, label, view, line, col)
        if rtype in _BOOT_SCRIPTS or rtype.startswith("google_compute_"):
            from gpulint.read.terraform.scripts import startup_scripts

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
            _env_from_container(ctx, address, view, attr)
