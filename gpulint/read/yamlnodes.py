"""YAML (and JSON) documents as plain data plus the position of every node.

``load_documents(text)`` returns one ``Doc`` per YAML document. ``Doc.data`` is
ordinary Python data (dict/list/str/int/float/bool/None), built only through
PyYAML's safe constructor; ``Doc.marks`` maps a key path (a tuple of dict keys
and list indexes) to the 1-based ``(line, column)`` of that node: for a mapping
entry the position of its *key*, for a list item the position of the item.
``Doc.at(path)`` gives that position, falling back to the nearest ancestor.

The loader is tolerant of what real repositories hold and bounded on what
hostile ones could:

- application tags (CloudFormation ``!Ref``/``!Sub``/``!GetAtt``, GitLab
  ``!reference``, ``!!python/name:...`` in mkdocs) are read, never
  constructed: the node becomes ``Tagged({"!Ref": "Subnet"})``, a one-key
  dict, so the tag is kept and the data stays plain (JSON, pickle);
- Helm/Go/Jinja/Terraform templates are read with placeholders when the
  file is not YAML as it stands (gpulint.read.templates): values that are
  template actions come back as their template text;
- every node visited is counted, through aliases, merge keys and mapping
  keys alike, and nesting is bounded (gpulint.core.limits): an alias bomb stops
  at the budget in linear time, wherever the aliases are used.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from gpulint.core import limits

from gpulint.read import templates
class YamlError(ValueError):
    def __init__(self, message: str, line: int = 1, column: int = 1, limit: bool = False):
        super().__init__(message)
        self.line, self.column = line, column
        self.limit = limit  # past a budget (nesting, alias expansion), not a syntax error


@dataclass
class Doc:
    data: Any
    marks: dict[tuple, tuple[int, int]] = field(default_factory=dict)
    start_line: int = 1
    template: bool = False  # read with placeholders (Helm, Jinja ...): values are not known until rendered
    #: JSON: the text whose key positions ``marks`` holds, read on the first ``at()`` (most JSON files, data and
    #: results, are never asked for a position, and reading positions costs a full YAML compose)
    marks_of: str | None = None

    def at(self, path: tuple | list) -> tuple[int, int]:
        if self.marks_of is not None:
            text, self.marks_of = self.marks_of, None
            self.marks = _json_key_marks(text)
        path = tuple(path)
        while path:
            if path in self.marks:
                return self.marks[path]
            path = path[:-1]
        return self.marks.get((), (self.start_line, 1))

    def get(self, path: tuple | list, default: Any = None) -> Any:
        node = self.data
        for part in path:
            if isinstance(node, Tagged) and part not in node:
                node = node.value
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and -len(node) <= part < len(node):
                node = node[part]
            else:
                return default
        return node


class Tagged(dict):
    """A node with an application tag: ``{tag: value}`` with exactly one key
    (``!Ref Subnet`` -> ``Tagged({"!Ref": "Subnet"})``). A dict, so it stays
    plain data; ``tag`` and ``value`` name its parts."""

    @property
    def tag(self) -> str:
        return next(iter(self))

    @property
    def value(self) -> Any:
        return self[self.tag]


#: libyaml's parser where PyYAML was built with it (the wheels are): it composes the node tree with the same
#: marks ten times faster than the pure-Python one, which was most of a cold scan of a YAML-heavy repository
_SafeBase = yaml.CSafeLoader if getattr(yaml, "__with_libyaml__", False) else yaml.SafeLoader


class _Loader(_SafeBase):  # type: ignore[misc, valid-type]
    """SafeLoader without the implicit date/timestamp type (keeps plain strings)."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}

_STD = "tag:yaml.org,2002:"
_PLAIN_SCALARS = {_STD + t for t in ("str", "int", "float", "bool", "null")}
_STD_COLLECTIONS = {_STD + t for t in ("map", "seq", "omap", "pairs", "set")}


def load_documents(text: str) -> list[Doc]:
    """Every document of `text`. Raises YamlError.

    A file that is not YAML as it stands but holds template syntax is read
    again with placeholders (gpulint.read.templates): first with every action as a
    placeholder scalar, then with the lines that are only template actions
    (``{{- if .Values.x }}``, a ``${yamlencode(x)}`` line) blanked. Such
    documents are marked ``template``: their values are not known until the
    template is rendered, so readers do not take facts from them."""
    try:
        return _load(text, text, [])
    except YamlError as exc:
        if exc.limit or not templates.has_template(text):
            raise
        templated = exc
        for blank_lines in (False, True):
            filled = templates.with_placeholders(text, blank_lines=blank_lines)
            if filled is None:
                break
            try:
                docs = _load(filled[0], text, filled[1])
            except YamlError as again:
                templated = again
                continue
            for doc in docs:
                doc.template = True
            return docs
        if exc.limit or (exc.line, str(exc)) == (templated.line, str(templated)):
            raise  # the same error either way: the YAML itself is broken, not the template
        raise YamlError(f"{exc} (the file holds template syntax and could not be read with placeholders either: {templated})",
                        exc.line, exc.column) from None


def _load(text: str, original: str, inline: list[tuple[int, int]]) -> list[Doc]:
    budget = limits.current()
    depth, line = limits.flow_depth(text)
    if depth > budget.max_nesting:  # before PyYAML, whose scanner is quadratic in flow depth
        raise YamlError(f"YAML nesting deeper than {budget.max_nesting} levels (max-nesting)", line, limit=True)
    conv = _Converter(budget.max_nodes + len(text) // 2, budget.max_nesting, original, inline)
    try:  # the reader checks every character at construction (control characters are not YAML)
        loader = _Loader(text)
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).splitlines()[0] if str(exc) else "invalid YAML") from None
    docs: list[Doc] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            marks: dict[tuple, tuple[int, int]] = {}
            data = conv.convert(loader, node, (), marks)
            marks[()] = (node.start_mark.line + 1, node.start_mark.column + 1)
            docs.append(Doc(data, marks, node.start_mark.line + 1))
    except yaml.MarkedYAMLError as exc:
        if "maximum nesting depth" in str(exc.problem or ""):  # libyaml's own depth limit, PyYAML's RecursionError
            raise YamlError("YAML nested too deeply for the parser to follow", limit=True) from None
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlError(f"{exc.problem or exc.context or 'invalid YAML'}", line, col) from None
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):
            raise YamlError("YAML nested too deeply for the parser to follow", limit=True) from None
        raise YamlError(str(exc).splitlines()[0] if str(exc) else "invalid YAML") from None
    except RecursionError:
        raise YamlError("YAML nested too deeply for the parser to follow", limit=True) from None
    finally:
        loader.dispose()
    return docs


class _Converter:
    """Plain data from composed nodes, counting every node it visits."""

    def __init__(self, budget: int, max_depth: int, original: str, inline: list[tuple[int, int]]):
        self.left = budget
        self.budget = budget
        self.max_depth = max_depth
        self.original = original
        self.inline = inline

    def convert(self, loader: _Loader, node: yaml.Node, path: tuple, marks: dict | None, depth: int = 0) -> Any:
        self.left -= 1
        if self.left < 0:  # alias bombs ("billion laughs") stop here, in keys and merges too
            raise YamlError(f"YAML document too large: more than {self.budget:,} nodes after alias expansion (max-nodes)",
                            node.start_mark.line + 1, node.start_mark.column + 1, limit=True)
        if depth > self.max_depth:
            raise YamlError(f"YAML nesting deeper than {self.max_depth} levels (max-nesting)", node.start_mark.line + 1,
                            node.start_mark.column + 1, limit=True)
        tag = node.tag
        if isinstance(node, yaml.ScalarNode):
            value = self._scalar(loader, node)
        elif isinstance(node, yaml.MappingNode):
            value = self._mapping(loader, node, path, marks, depth)
        else:
            value = self._sequence(loader, node, path, marks, depth)
        if tag and tag not in _PLAIN_SCALARS and tag not in _STD_COLLECTIONS:
            return Tagged({_short(tag): value})
        return value

    def _scalar(self, loader: _Loader, node: yaml.ScalarNode) -> Any:
        if node.tag in _PLAIN_SCALARS:
            try:
                value = loader.construct_object(node)
            except (ValueError, OverflowError, yaml.YAMLError):  # an int of 10,000 digits ...
                value = node.value
        else:
            value = node.value  # !Ref Subnet, !!binary ..., !!timestamp: the text as written
        if isinstance(value, str) and self.inline:
            value = templates.restore(value, self.original, node.start_mark.index, node.end_mark.index, self.inline)
        return value

    def _mapping(self, loader: _Loader, node: yaml.MappingNode, path: tuple, marks: dict | None, depth: int) -> dict:
        out: dict = {}
        merged: list[dict] = []
        for key_node, value_node in node.value:
            if key_node.tag == _STD + "merge":  # `<<: *defaults`: merged below, without PyYAML's (unbounded) flattening
                sources = value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
                for src in sources:
                    v = self.convert(loader, src, path, None, depth + 1)
                    if isinstance(v, dict):
                        merged.append(v)
                continue
            key = self.convert(loader, key_node, path, None, depth + 1)
            try:
                hash(key)
            except TypeError:
                key = str(key)[:200]
            kpath = path + (key,)
            if marks is not None:
                marks[kpath] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = self.convert(loader, value_node, kpath, marks, depth + 1)
        if not merged:
            return out
        full: dict = {}
        for m in reversed(merged):  # the mapping's own keys win, then earlier merges over later ones
            full.update(m)
        full.update(out)
        return full

    def _sequence(self, loader: _Loader, node: yaml.SequenceNode, path: tuple, marks: dict | None, depth: int) -> list:
        items = []
        for i, item in enumerate(node.value):
            ipath = path + (i,)
            if marks is not None:
                marks[ipath] = (item.start_mark.line + 1, item.start_mark.column + 1)
            items.append(self.convert(loader, item, ipath, marks, depth + 1))
        return items


def _short(tag: str) -> str:
    """``tag:yaml.org,2002:python/name:x`` -> ``!!python/name:x``; local tags stay as written (``!Ref``)."""
    return "!!" + tag[len(_STD):] if tag.startswith(_STD) else tag


def _json_key_marks(text: str) -> dict:
    """Key positions of a JSON document, read as YAML (JSON is YAML); none for big data files."""
    if len(text) >= 512_000:
        return {}
    try:
        docs = load_documents(text)
    except YamlError:
        return {}
    return docs[0].marks if docs else {}
