"""Environment variables set by Terraform: container definitions of AWS Batch job
definitions and ECS task definitions (HCL objects or ``jsonencode``/JSON text)."""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

from hcl2.rules.containers import ObjectRule, TupleRule
from hcl2.rules.functions import FunctionCallRule
from hcl2.rules.strings import HeredocTemplateRule

from gpulint.read.terraform.hcl import MAX_DEPTH, OPTS, UNKNOWN, View, evaluate, node_name, object_key, position, unwrap
from gpulint.read.terraform.targets import Context


def env_from_container(ctx: Context, address: str, view: View, name: str):
    attr = view.attrs.get(name)
    if attr is None:
        return
    node = unwrap(attr.node)
    if isinstance(node, FunctionCallRule):
        ids = [node_name(i) for i in node.identifiers]
        args = node.arguments.arguments if node.arguments else []
        if ids == ["jsonencode"] and len(args) == 1:
            for env_name, value, line, col in _env_in_tree(unwrap(args[0]), attr.line, attr.column, 0):
                ctx.emit("env", {"name": env_name, "value": value}, line, col, key=env_name,
                         attrs={"resource": address})
        return
    text = evaluate(node)
    if text is UNKNOWN and isinstance(node, HeredocTemplateRule):
        text = _json_template(node.serialize(OPTS))
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
    if depth > MAX_DEPTH:
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
    if depth > MAX_DEPTH or node is None:
        return
    if isinstance(node, ObjectRule):
        for elem in node.elements:
            key = object_key(elem)
            value = unwrap(elem.expression)
            eline, ecol = position(elem, line, col)
            if key == "environment" and isinstance(value, TupleRule):
                for item in value.elements:
                    data = evaluate(item)
                    pair = _env_pair(data) if isinstance(data, dict) else None
                    if pair:
                        yield (*pair, *position(item, eline, ecol))
            else:
                yield from _env_in_tree(value, eline, ecol, depth + 1)
    elif isinstance(node, TupleRule):
        for item in node.elements:
            yield from _env_in_tree(unwrap(item), *position(item, line, col), depth + 1)
