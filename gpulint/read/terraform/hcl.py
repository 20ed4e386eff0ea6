"""HCL evaluation: python-hcl2's rule tree to Python values, with positions.

A leaf of the Terraform reader: literals become Python values, ``var.x`` /
``local.y`` references become ``{"ref": ...}``, and anything else (other
interpolations, functions, conditionals) is ``UNKNOWN``. ``View`` is one block's
attributes and nested blocks. Nothing here knows a resource type.
"""
from __future__ import annotations

import re

from hcl2.api import parses_to_tree
from hcl2.rules.base import AttributeRule, BlockRule, BodyRule
from hcl2.rules.containers import ObjectElemKeyRule, ObjectRule, TupleRule
from hcl2.rules.expressions import ExprTermRule, UnaryOpRule
from hcl2.rules.indexing import GetAttrExprTermRule, IndexExprTermRule
from hcl2.rules.literal_rules import FloatLitRule, IdentifierRule, IntLitRule, LiteralValueRule
from hcl2.rules.strings import HeredocTemplateRule, InterpolationRule, StringRule
from hcl2.transformer import RuleTransformer
from hcl2.utils import SerializationOptions, process_escape_sequences


UNKNOWN = object()


def parse(text: str):
    """python-hcl2's rule tree of `text` (what ``hcl2.parses`` returns), built by `_RuleTransformer`."""
    return _RuleTransformer().transform(parses_to_tree(text))


class _RuleTransformer(RuleTransformer):
    """python-hcl2's transformer, with each grammar rule's handler looked up once per file. lark binds a handler
    declared with ``v_args`` anew (a ``functools.update_wrapper``) on every attribute lookup, that is once per node
    of the tree: more than half of a large file's transform. The bound handler is kept in the instance, where
    attribute lookup finds it first; what each handler returns is unchanged."""

    def _call_userfunc(self, tree, new_children=None):
        self._remember(tree.data)
        return super()._call_userfunc(tree, new_children)

    def _call_userfunc_token(self, token):
        self._remember(token.type)
        return super()._call_userfunc_token(token)

    def _remember(self, name) -> None:
        if name not in self.__dict__:
            try:
                self.__dict__[name] = getattr(self, name)
            except AttributeError:  # no handler: lark's default applies, as before
                pass


OPTS = SerializationOptions(
    with_comments=False, preserve_heredocs=False, strip_string_quotes=True, preserve_scientific_notation=False
)


MAX_DEPTH = 64


# Nested block types that repeat by nature: always indexed in key paths, so adding a
# second one does not rename the first (keys feed fingerprints).
_REPEATED = {"override", "network_interfaces", "guest_accelerator", "node_pool", "production_variants",
             "accelerator_configs", "instance_types"}


def position(rule, line: int = 1, col: int = 1) -> tuple[int, int]:
    meta = getattr(rule, "_meta", None)
    return getattr(meta, "line", line) or line, getattr(meta, "column", col) or col


def unwrap(node):
    for _ in range(MAX_DEPTH):
        if not isinstance(node, ExprTermRule):
            return node
        node = node.expression
    return None


def node_name(node) -> str | None:
    if isinstance(node, IdentifierRule):
        return str(node.serialize(OPTS))
    return None


def traversal(node, depth: int = 0) -> list[str] | None:
    """``a.b[0].c`` as ["a", "b", "[]", "c"]; None for anything that is not a plain traversal."""
    node = unwrap(node)
    if depth > MAX_DEPTH or node is None:
        return None
    if isinstance(node, IdentifierRule):
        return [node_name(node)]
    if isinstance(node, GetAttrExprTermRule):
        head = traversal(node.expr_term, depth + 1)
        tail = node_name(node.get_attr.identifier)
        return head + [tail] if head and tail else None
    if isinstance(node, IndexExprTermRule):
        head = traversal(node.children[0], depth + 1)
        return head + ["[]"] if head else None
    return None


def _var_ref(node) -> str | None:
    parts = traversal(node)
    if parts and len(parts) == 2 and parts[0] in ("var", "local") and parts[1] != "[]":
        return f"{parts[0]}.{parts[1]}"
    return None


def resource_ref(node) -> str | None:
    """``aws_launch_template.gpu.id`` -> ``aws_launch_template.gpu`` (None for var/local/data)."""
    parts = traversal(node)
    if parts and len(parts) >= 2 and parts[1] != "[]" and "_" in parts[0] and parts[0] not in ("var", "local"):
        return f"{parts[0]}.{parts[1]}"
    if parts and len(parts) >= 3 and parts[0] == "module":
        return f"module.{parts[1]}"
    return None


def _string(node: StringRule):
    parts = node.string_parts
    if len(parts) == 1 and isinstance(parts[0].content, InterpolationRule):
        ref = _var_ref(parts[0].content.expression)
        return {"ref": ref} if ref else UNKNOWN
    out = []
    for part in parts:
        content = part.content
        kind = content.lark_name() if hasattr(content, "lark_name") else ""
        if kind == "STRING_CHARS":
            out.append(process_escape_sequences(str(content.serialize(OPTS))))
        elif kind in ("ESCAPED_INTERPOLATION", "ESCAPED_DIRECTIVE"):
            out.append(str(content.serialize(OPTS))[1:])  # "$${" is a literal "${"
        else:
            return UNKNOWN  # interpolation mixed with text, or a template directive
    return "".join(out)


_TEMPLATE = re.compile(r"(?<![$%])[$%]\{")


def _heredoc(node: HeredocTemplateRule):
    body = node.serialize(OPTS)
    if not isinstance(body, str) or _TEMPLATE.search(body):
        return UNKNOWN
    return body.replace("$${", "${").replace("%%{", "%{")


def evaluate(node, depth: int = 0):
    """Literal value of an expression, {"ref": ...} for var/local, else _UNKNOWN."""
    node = unwrap(node)
    if node is None or depth > MAX_DEPTH:
        return UNKNOWN
    if isinstance(node, (IntLitRule, FloatLitRule)):
        value = node.serialize(OPTS)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else UNKNOWN
    if isinstance(node, LiteralValueRule):
        value = node.serialize(OPTS)
        return value if value is None or isinstance(value, bool) else UNKNOWN
    if isinstance(node, StringRule):
        return _string(node)
    if isinstance(node, HeredocTemplateRule):
        return _heredoc(node)
    if isinstance(node, UnaryOpRule):
        inner = evaluate(node.expr_term, depth + 1)
        op = node.operator.strip()
        if op == "-" and isinstance(inner, (int, float)) and not isinstance(inner, bool):
            return -inner
        if op == "!" and isinstance(inner, bool):
            return not inner
        return UNKNOWN
    if isinstance(node, TupleRule):
        return [plain(evaluate(e, depth + 1)) for e in node.elements]
    if isinstance(node, ObjectRule):
        out = {}
        for elem in node.elements:
            key = object_key(elem)
            if key is not None:
                out[key] = plain(evaluate(elem.expression, depth + 1))
        return out
    ref = _var_ref(node)
    return {"ref": ref} if ref else UNKNOWN


def object_key(elem) -> str | None:
    key = elem.key
    if not isinstance(key, ObjectElemKeyRule):
        return None  # a computed key, (expr) = ...
    inner = key.value
    if isinstance(inner, IdentifierRule):
        return node_name(inner)
    if isinstance(inner, StringRule):
        value = _string(inner)
        return value if isinstance(value, str) else None
    value = inner.serialize(OPTS)
    return str(value) if isinstance(value, (int, float)) else None


def plain(value):
    return None if value is UNKNOWN else value


def is_ref(value) -> bool:
    return isinstance(value, dict) and set(value) == {"ref"}


class Attr:
    __slots__ = ("node", "line", "column")

    def __init__(self, node, line, column):
        self.node, self.line, self.column = node, line, column


class View:
    """One block body or one object literal, read alike: ``x { a = 1 }`` and ``x = { a = 1 }``
    are the same to Terraform's schema, and module inputs only have the object form."""

    def __init__(self, rule, line: int, column: int, prefix: str, for_each=None, depth: int = 0):
        self.line, self.column, self.prefix = line, column, prefix
        self.for_each = for_each  # the for_each expression when this is a dynamic block's content
        self.depth = depth
        self.attrs: dict[str, Attr] = {}
        # name -> [(rule, line, col, for_each, labels)]
        self.raw: dict[str, list[tuple]] = {}
        if depth > MAX_DEPTH:
            return
        if isinstance(rule, BodyRule):
            for child in rule.children:
                if isinstance(child, AttributeRule):
                    self._attr(node_name(child.identifier), child.expression, *position(child, line, column))
                elif isinstance(child, BlockRule):
                    self._block(child)
        elif isinstance(rule, ObjectRule):
            for elem in rule.elements:
                self._attr(object_key(elem), elem.expression, *position(elem, line, column))

    def _attr(self, name, expr, line, col):
        if not name:
            return
        self.attrs[name] = Attr(expr, line, col)
        inner = unwrap(expr)
        if isinstance(inner, ObjectRule):
            self.raw.setdefault(name, []).append((inner, line, col, None, ()))
        elif isinstance(inner, TupleRule) and inner.elements and all(
            isinstance(unwrap(e), ObjectRule) for e in inner.elements
        ):
            for e in inner.elements:
                self.raw.setdefault(name, []).append((unwrap(e), *position(e, line, col), None, ()))

    def _block(self, block: BlockRule):
        labels = [_label(lab) for lab in block.labels]
        line, col = position(block, self.line, self.column)
        if labels[0] == "dynamic" and len(labels) == 2 and labels[1]:
            inner = View(block.body, line, col, "", depth=self.depth + 1)
            for_each = inner.attrs.get("for_each")
            for content in inner.raw.get("content", []):
                self.raw.setdefault(labels[1], []).append(
                    (content[0], content[1], content[2], for_each.node if for_each else None, ())
                )
            return
        self.raw.setdefault(labels[0], []).append((block.body, line, col, None, tuple(labels[1:])))

    def blocks(self, name: str) -> list["View"]:
        found = self.raw.get(name, [])
        out = []
        for i, (rule, line, col, for_each, _labels) in enumerate(found):
            index = f"[{i}]" if name in _REPEATED or len(found) > 1 else ""
            out.append(View(rule, line, col, f"{self.prefix}{name}{index}.", for_each, self.depth + 1))
        return out

    def block(self, name: str) -> "View | None":
        found = self.blocks(name)
        return found[0] if found else None

    def key(self, name: str) -> str:
        return f"{self.prefix}{name}"


def _label(rule) -> str:
    if isinstance(rule, StringRule):
        value = _string(rule)
        return value if isinstance(value, str) else ""
    return node_name(rule) or ""
