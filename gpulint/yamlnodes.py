"""YAML (and JSON) documents as plain data plus the position of every node.

``load_documents(text)`` returns one ``Doc`` per YAML document. ``Doc.data`` is
ordinary Python data (dict/list/str/int/float/bool/None), built only through
PyYAML's safe constructor; ``Doc.marks`` maps a key path (a tuple of dict keys
and list indexes) to the 1-based ``(line, column)`` of that node: for a mapping
entry the position of its *key*, for a list item the position of the item.
``Doc.at(path)`` gives that position, falling back to the nearest ancestor.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml


class YamlError(ValueError):
    def __init__(self, message: str, line: int = 1, column: int = 1):
        super().__init__(message)
        self.line, self.column = line, column


@dataclass
class Doc:
    data: Any
    marks: dict[tuple, tuple[int, int]] = field(default_factory=dict)
    start_line: int = 1

    def at(self, path: tuple | list) -> tuple[int, int]:
        path = tuple(path)
        while path:
            if path in self.marks:
                return self.marks[path]
            path = path[:-1]
        return self.marks.get((), (self.start_line, 1))

    def get(self, path: tuple | list, default: Any = None) -> Any:
        node = self.data
        for part in path:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and isinstance(part, int) and -len(node) <= part < len(node):
                node = node[part]
            else:
                return default
        return node


class _Loader(yaml.SafeLoader):
    """SafeLoader without the implicit date/timestamp type (keeps plain strings)."""


_Loader.yaml_implicit_resolvers = {
    k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:timestamp"]
    for k, v in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}


def load_documents(text: str) -> list[Doc]:
    loader = _Loader(text)
    docs: list[Doc] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            marks: dict[tuple, tuple[int, int]] = {}
            data = _convert(loader, node, (), marks)
            marks[()] = (node.start_mark.line + 1, node.start_mark.column + 1)
            docs.append(Doc(data, marks, node.start_mark.line + 1))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        raise YamlError(f"{exc.problem or exc.context or 'invalid YAML'}", line, col) from None
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).splitlines()[0] if str(exc) else "invalid YAML") from None
    except RecursionError:
        raise YamlError("YAML nesting too deep") from None
    finally:
        loader.dispose()
    return docs


_MAX_NODES = 1_000_000


def _convert(loader: _Loader, node: yaml.Node, path: tuple, marks: dict) -> Any:
    if len(marks) > _MAX_NODES:  # alias bombs ("billion laughs") stop here
        raise YamlError("YAML document too large (alias expansion?)")
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        loader.flatten_mapping(node)
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            try:
                hash(key)
            except TypeError:
                key = str(key)
            kpath = path + (key,)
            marks[kpath] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            out[key] = _convert(loader, value_node, kpath, marks)
        return out
    if isinstance(node, yaml.SequenceNode):
        items = []
        for i, item in enumerate(node.value):
            ipath = path + (i,)
            marks[ipath] = (item.start_mark.line + 1, item.start_mark.column + 1)
            items.append(_convert(loader, item, ipath, marks))
        return items
    return loader.construct_object(node, deep=True)
