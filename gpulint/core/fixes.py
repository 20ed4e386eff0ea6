"""Autofix: what a finding's fix changes, and how it becomes text edits.

A rule attaches a :class:`gpulint.core.model.Fix` to a finding; its ``edits`` are
the operations defined here, anchored on the facts the rule judged (the
DataLoader call, the accelerate key, the ``export`` line). Nothing is edited
at scan time: an operation becomes concrete :class:`TextEdit` s only when a
fix is applied (``gpulint scan --fix`` / ``--diff``) or offered (the language
server's quick fixes), against the text the file has *then*. An operation
that no longer finds what it expects (the call moved, the value changed)
raises :class:`FixError` and the fix is not offered.

Python is edited through libcst positions, with the smallest text change that
does the job (one keyword inserted, one literal replaced, one statement
added), so formatting and comments around it are kept. YAML, JSON, HCL,
shell, Makefiles and Dockerfiles get line-preserving edits: one value
replaced within its line, or whole lines removed; every other line stays
byte for byte. After the edits a file must still parse: :func:`plan_fixes`
re-parses each fixed file and refuses the fixes that break it.

The fix builders at the bottom are what rules call
(``fix=fixes.pin_memory(fact)``); each states what it changes and, for an
unsafe fix, why it may change behaviour.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from gpulint.core.model import Fact, Finding, Fix, Location

SAFE, UNSAFE = "safe", "unsafe"


class FixError(Exception):
    """An operation cannot be turned into edits against the current text."""


@dataclass(frozen=True, order=True)
class TextEdit:
    """Replace ``text[start:end]`` of file ``path`` by ``new`` (offsets in code points)."""

    path: str
    start: int
    end: int
    new: str


# -- operations ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class SetKeyword:
    """Python: in the call at ``loc``, keyword ``name`` gets ``value``.

    When the keyword is absent it is added (unless ``add`` is False); when it
    is present (as a keyword or at ``positional``), it is replaced only if its
    current value is a literal in ``replace``: anything else (a variable, an
    expression) is the author's decision and refuses the fix.
    """

    loc: Location
    name: str
    value: Any
    replace: tuple[Any, ...] = ()
    positional: int | None = None
    add: bool = True


@dataclass(frozen=True)
class SetAssignedValue:
    """Python: the assignment statement at ``loc`` assigns ``value`` instead of a literal in ``replace``."""

    loc: Location
    value: Any
    replace: tuple[Any, ...] = ()


@dataclass(frozen=True)
class InsertAfterImports:
    """Python: ``statement`` after the module's leading imports, unless the module already has it.

    ``{module}`` in the statement is the name the module binds ``module`` to
    (``import torch as t`` gives ``t``); without such an import, ``import
    module`` is added too.
    """

    path: str
    module: str
    statement: str


@dataclass(frozen=True)
class SetConfigValue:
    """YAML / JSON, line-preserving: the value of ``key`` on ``loc.line`` becomes ``value``
    (keeping its quotes), if it is now one of ``replace``."""

    loc: Location
    key: str
    value: str
    replace: tuple[str, ...] = ()


@dataclass(frozen=True)
class RemoveEnv:
    """Remove the declaration of environment variable ``name`` (= ``value``) at ``loc``:
    a Kubernetes ``env`` entry, a YAML map entry, an ``export`` line, an ``ENV`` line,
    an HCL map entry or ``env {}`` block, or a ``NAME=value`` command prefix.
    Whole lines go; the rest of the file is untouched."""

    loc: Location
    name: str
    value: str


# -- materialising ------------------------------------------------------------------------------
ReadText = Callable[[str], "str | None"]
KindOf = Callable[[str], "str | None"]


class Materializer:
    """Turns a fix's operations into text edits, caching one parse per file text."""

    def __init__(self, read: ReadText, kind_of: KindOf):
        self.read = read
        self.kind_of = kind_of
        self._py: dict[str, tuple[str, Any, Any]] = {}
        self._texts: dict[str, str] = {}  # a materializer lives for one look at the files
        self._starts: dict[str, list[int]] = {}

    def text(self, path: str) -> str:
        t = self._texts.get(path)
        if t is None:
            t = self.read(path)
            if t is None:
                raise FixError(f"{path} cannot be read")
            self._texts[path] = t
        return t

    def starts(self, path: str) -> list[int]:
        if path not in self._starts:
            self._starts[path] = _line_starts(self.text(path))
        return self._starts[path]

    def edits(self, fix: Fix) -> list[TextEdit]:
        out: list[TextEdit] = []
        for op in fix.edits:
            out.extend(self._one(op))
        if not out:
            raise FixError("nothing to change")
        return out

    def _one(self, op: Any) -> list[TextEdit]:
        if isinstance(op, SetKeyword):
            return [self._set_keyword(op)]
        if isinstance(op, SetAssignedValue):
            return [self._set_assigned(op)]
        if isinstance(op, InsertAfterImports):
            return self._insert_after_imports(op)
        if isinstance(op, SetConfigValue):
            return [self._set_config_value(op)]
        if isinstance(op, RemoveEnv):
            return self._remove_env(op)
        raise FixError(f"unknown fix operation {type(op).__name__}")

    # -- Python ------------------------------------------------------------------------
    def _python(self, path: str) -> tuple[str, Any, Any, list[int]]:
        if not path.endswith((".py", ".pyw")):
            raise FixError(f"{path}: only Python source files are edited (not notebooks)")
        text = self.text(path)
        cached = self._py.get(path)
        if cached is None or cached[0] != text:
            import libcst as cst
            from libcst.metadata import MetadataWrapper, PositionProvider

            try:
                wrapper = MetadataWrapper(cst.parse_module(text))
            except cst.ParserSyntaxError as exc:
                raise FixError(f"{path} does not parse: {exc.message}") from None
            cached = (text, wrapper.module, wrapper.resolve(PositionProvider))
            self._py[path] = cached
        return cached[0], cached[1], cached[2], self.starts(path)

    def _node_at(self, loc: Location, types: tuple[type, ...]):
        """The node of one of `types` the location spans, and a function giving any node's span
        as file offsets. The fact's exact range is parsed on its own (a call or a statement is
        valid source by itself): a fix costs a parse of a few lines, not of the whole file."""
        if loc.cell is not None:
            raise FixError("notebook cells are not edited")
        if not loc.path.endswith(_PYTHON):
            raise FixError(f"{loc.path}: only Python source files are edited (not notebooks)")
        text = self.text(loc.path)
        starts = self.starts(loc.path)
        if loc.end_line is not None and loc.end_column is not None and loc.end_line <= len(starts):
            found = self._snippet_node(text, starts, loc, types)
            if found is not None:
                return (text, *found)
        return (text, *self._module_node(loc, types))

    def _snippet_node(self, text: str, starts: list[int], loc: Location, types: tuple[type, ...]):
        import libcst as cst
        from libcst.metadata import MetadataWrapper, PositionProvider

        begin = starts[loc.line - 1] + loc.column - 1
        end = starts[loc.end_line - 1] + loc.end_column - 1
        snippet = text[begin:end]
        try:
            wrapper = MetadataWrapper(cst.parse_module(snippet))
        except cst.ParserSyntaxError:
            return None
        body = wrapper.module.body
        if len(body) != 1 or not isinstance(body[0], cst.SimpleStatementLine) or len(body[0].body) != 1:
            return None
        node = body[0].body[0]
        if isinstance(node, cst.Expr):
            node = node.value
        if not isinstance(node, types):
            return None
        pos = wrapper.resolve(PositionProvider)
        rel = _line_starts(snippet) or [0]

        def span(n) -> tuple[int, int]:
            r = pos[n]
            return begin + rel[r.start.line - 1] + r.start.column, begin + rel[r.end.line - 1] + r.end.column

        return node, span

    def _module_node(self, loc: Location, types: tuple[type, ...]):
        text, module, pos, starts = self._python(loc.path)
        hits = []
        for node, rng in pos.items():
            if isinstance(node, types) and rng.start.line == loc.line and rng.start.column + 1 == loc.column:
                hits.append((node, rng))
        if len(hits) > 1 and loc.end_line is not None:
            exact = [h for h in hits if h[1].end.line == loc.end_line and h[1].end.column + 1 == loc.end_column]
            hits = exact or hits
        if not hits:
            raise FixError(f"{loc.path}:{loc.line}: the code the finding points at has changed")
        # `f(a)(b)`: the outer and inner calls start together; the longest span is the one the fact names
        node, _ = max(hits, key=lambda h: (h[1].end.line, h[1].end.column))

        def span(n) -> tuple[int, int]:
            r = pos[n]
            return starts[r.start.line - 1] + r.start.column, starts[r.end.line - 1] + r.end.column

        return node, span

    def _set_keyword(self, op: SetKeyword) -> TextEdit:
        import libcst as cst

        text, call, span = self._node_at(op.loc, (cst.Call,))
        current = None
        for i, arg in enumerate(call.args):
            if arg.keyword is not None and arg.keyword.value == op.name:
                current = arg
                break
            if arg.keyword is None and not arg.star and op.positional is not None and i == op.positional:
                current = arg
        if current is not None:
            s, e = span(current.value)
            value = _literal(current.value)
            if value is _NOT_LITERAL or not any(_same(value, r) for r in op.replace):
                raise FixError(f"{op.name} is set to {text[s:e]}, which gpulint does not change")
            return TextEdit(op.loc.path, s, e, _render(op.value, current.value))
        if not op.add:
            raise FixError(f"{op.name} is not given")
        new = f"{op.name}={_render(op.value)}"
        call_start, call_end = span(call)
        if not call.args:
            close = text.rfind(")", call_start, call_end)
            if close < 0:
                raise FixError("the call has no closing parenthesis")
            return TextEdit(op.loc.path, close, close, new)
        last = call.args[-1]
        last_start = span(last)[0]
        _, last_end = span(last.value)
        if not isinstance(last.comma, cst.Comma):
            close = text.rfind(")", last_end, call_end)
            before = span(call.args[-2])[1] if len(call.args) > 1 else call_start
            if "\n" in text[last_end:close] and "\n" in text[before:last_start]:
                # one argument per line, the parenthesis on a line of its own: the new one gets its own line
                line_start = text.rfind("\n", 0, last_start) + 1
                indent = re.match(r"[ \t]*", text[line_start:]).group(0)
                return TextEdit(op.loc.path, last_end, last_end, f",\n{indent}{new}")
            return TextEdit(op.loc.path, last_end, last_end, f", {new}")
        # a trailing comma: the new argument goes after it, on a line of its own if the call is laid out so
        after_comma = text.index(",", last_end) + 1
        close = text.rfind(")", after_comma, call_end)
        newline = text.find("\n", after_comma, close)
        if newline >= 0:  # after the line of the last argument, comment included
            line_start = text.rfind("\n", 0, last_start) + 1
            indent = re.match(r"[ \t]*", text[line_start:]).group(0)
            return TextEdit(op.loc.path, newline + 1, newline + 1, f"{indent}{new},\n")
        return TextEdit(op.loc.path, after_comma, after_comma, f" {new},")

    def _set_assigned(self, op: SetAssignedValue) -> TextEdit:
        import libcst as cst

        text, node, span = self._node_at(op.loc, (cst.Assign, cst.AnnAssign, cst.SimpleStatementLine))
        if isinstance(node, cst.SimpleStatementLine):
            inner = [n for n in node.body if isinstance(n, (cst.Assign, cst.AnnAssign))]
            if len(inner) != 1:
                raise FixError("the assignment has changed")
            node = inner[0]
        if node.value is None:
            raise FixError("the assignment has no value")
        s, e = span(node.value)
        value = _literal(node.value)
        if value is _NOT_LITERAL or not any(_same(value, r) for r in op.replace):
            raise FixError(f"the assigned value {text[s:e]} is not one gpulint changes")
        return TextEdit(op.loc.path, s, e, _render(op.value, node.value))

    def _insert_after_imports(self, op: InsertAfterImports) -> list[TextEdit]:
        import libcst as cst

        text, module, pos, starts = self._python(op.path)
        alias = None
        anchor = None  # the last statement of the leading block of imports
        body = list(module.body)
        for i, stmt in enumerate(body):
            if i == 0 and _is_docstring(stmt):
                anchor = stmt
                continue
            if not (isinstance(stmt, cst.SimpleStatementLine) and all(isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body)):
                break
            anchor = stmt
            for s in stmt.body:
                if isinstance(s, cst.Import):
                    for name in s.names:
                        if _dotted(name.name) == op.module:
                            alias = name.asname.name.value if name.asname else op.module
        # an import further down binds the name too late for a statement up here: import it again
        statement = op.statement.format(module=alias or op.module)
        if any(line.strip() == statement for line in text.splitlines()):
            raise FixError("the statement is already there")
        nl = "\r\n" if "\r\n" in text else "\n"
        lines = ([] if alias else [f"import {op.module}"]) + [statement]
        block = nl.join(lines) + nl
        if anchor is None:
            # no docstring, no leading import: after the shebang / encoding / comment lines at the top
            at = 0
            for m in re.finditer(r"[^\n]*\n", text):
                if not m.group(0).startswith("#"):
                    break
                at = m.end()
            return [TextEdit(op.path, at, at, block)]
        end_line = pos[anchor].end.line
        at = starts[end_line] if end_line < len(starts) else len(text)
        if at == len(text) and not text.endswith("\n"):
            block = nl + block
        return [TextEdit(op.path, at, at, block)]

    # -- configuration files, line-preserving -----------------------------------------
    def _line(self, loc: Location) -> tuple[str, int, str]:
        if loc.cell is not None:
            raise FixError("notebook cells are not edited")
        text = self.text(loc.path)
        starts = _line_starts(text)
        if not 1 <= loc.line <= len(starts):
            raise FixError(f"{loc.path}: line {loc.line} does not exist")
        start = starts[loc.line - 1]
        end = text.find("\n", start)
        end = len(text) if end < 0 else end
        return text, start, text[start:end].rstrip("\r")

    def _set_config_value(self, op: SetConfigValue) -> TextEdit:
        text, start, line = self._line(op.loc)
        m = re.match(r"""^(\s*(?:-\s+)?["']?%s["']?\s*:\s*)("[^"]*"|'[^']*'|[^\s#,]+)""" % re.escape(op.key), line)
        if not m:
            raise FixError(f"{op.loc.path}:{op.loc.line}: no '{op.key}:' on this line any more")
        raw = m.group(2)
        value = raw[1:-1] if raw[:1] in "\"'" else raw
        if op.replace and value not in op.replace:
            raise FixError(f"{op.key} is now {raw}")
        quote = raw[0] if raw[:1] in "\"'" else ('"' if op.loc.path.endswith(".json") else "")
        return TextEdit(op.loc.path, start + m.start(2), start + m.end(2), f"{quote}{op.value}{quote}")

    def _remove_env(self, op: RemoveEnv) -> list[TextEdit]:
        kind = self.kind_of(op.loc.path) or ""
        text, start, line = self._line(op.loc)
        starts = _line_starts(text)
        name, value = re.escape(op.name), _value_pattern(op.value)

        def drop_lines(first: int, last: int) -> list[TextEdit]:
            s = starts[first - 1]
            e = starts[last] if last < len(starts) else len(text)
            return [TextEdit(op.loc.path, s, e, "")]

        if kind == "yaml":
            return self._remove_yaml_env(op, text, starts, drop_lines)
        if kind in ("shell", "makefile"):
            if re.fullmatch(rf"\s*(export\s+)?{name}={value}\s*;?\s*(#.*)?", line):
                return drop_lines(op.loc.line, op.loc.line)
            m = re.search(rf"(?:^|(?<=\s)){name}={value}\s+(?=\S)", line)
            if m and not line.lstrip().startswith(("export", "#")):
                return [TextEdit(op.loc.path, start + m.start(), start + m.end(), "")]
            raise FixError(f"{op.loc.path}:{op.loc.line}: {op.name} is not set on a line of its own")
        if kind == "dockerfile":
            if re.fullmatch(rf"\s*ENV\s+{name}(=|\s+){value}\s*", line, re.IGNORECASE):
                return drop_lines(op.loc.line, op.loc.line)
            raise FixError(f"{op.loc.path}:{op.loc.line}: the ENV line sets more than {op.name}")
        if kind == "terraform":
            if re.fullmatch(rf"""\s*["']?{name}["']?\s*[=:]\s*{value}\s*,?\s*((#|//).*)?""", line):
                return drop_lines(op.loc.line, op.loc.line)
            return self._remove_hcl_env_block(op, text, starts, drop_lines)
        raise FixError(f"{op.loc.path}: environment variables in {kind or 'this kind of'} files are removed by hand")

    def _remove_yaml_env(self, op: RemoveEnv, text: str, starts: list[int], drop_lines) -> list[TextEdit]:
        import yaml

        try:
            docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise FixError(f"{op.loc.path} does not parse: {str(exc).splitlines()[0]}") from None
        want = op.loc.line - 1  # 0-based, as yaml marks count

        def only_item_on_lines(first: int, last: int, col: int) -> bool:
            # nothing else shares those lines: the first starts with the item, the last ends with it
            lines = text.splitlines()
            head = lines[first][:col]
            return re.fullmatch(r"\s*(-\s*)?", head) is not None

        def walk(node, parent=None, key=None):
            """(node, the collection holding it, the key the collection sits under)."""
            if isinstance(node, yaml.SequenceNode):
                for item in node.value:
                    yield from walk(item, node, key)
            elif isinstance(node, yaml.MappingNode):
                yield node, parent, key
                for k, v in node.value:
                    yield from walk(v, node, k)
            elif isinstance(node, yaml.ScalarNode):
                yield node, parent, key

        for doc in docs:
            if doc is None:
                continue
            for node, parent, key in walk(doc):
                # `- name: NCCL_X` / `  value: "1"`: a Kubernetes-style env entry
                if isinstance(node, yaml.MappingNode) and isinstance(parent, yaml.SequenceNode) and not parent.flow_style:
                    pairs = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
                    n = pairs.get("name")
                    if isinstance(n, yaml.ScalarNode) and n.value == op.name and node.start_mark.line <= want <= node.end_mark.line:
                        v = pairs.get("value")
                        if not (isinstance(v, yaml.ScalarNode) and str(v.value).strip() == str(op.value).strip()):
                            raise FixError(f"{op.name} no longer has the value {op.value}")
                        first = node.start_mark.line
                        last = max(v2.end_mark.line if v2.end_mark.column > 0 else v2.end_mark.line - 1 for _, v2 in node.value)
                        if not only_item_on_lines(first, last, node.start_mark.column) or node.flow_style:
                            raise FixError("the env entry shares its lines with other YAML")
                        if len(parent.value) == 1 and isinstance(key, yaml.ScalarNode) and key.start_mark.line == first - 1 \
                                and re.fullmatch(rf"\s*{re.escape(key.value)}\s*:\s*(#.*)?", text.splitlines()[first - 1]):
                            first -= 1  # the only entry: `env:` goes too, rather than be left as null
                        return drop_lines(first + 1, last + 1)
                # `NCCL_X: "1"` in a map (SkyPilot envs, docker-compose environment)
                if isinstance(node, yaml.MappingNode) and not node.flow_style:
                    for k, v in node.value:
                        if isinstance(k, yaml.ScalarNode) and k.value == op.name and k.start_mark.line == want:
                            if not isinstance(v, yaml.ScalarNode) or v.end_mark.line != want or v.style in ("|", ">"):
                                raise FixError("the value spans several lines")
                            if str(v.value).strip() != str(op.value).strip():
                                raise FixError(f"{op.name} no longer has the value {op.value}")
                            if not only_item_on_lines(want, want, k.start_mark.column):
                                raise FixError("the entry shares its line with other YAML")
                            if len(node.value) == 1:
                                raise FixError(f"{op.name} is the only entry of its map; remove the map by hand")
                            return drop_lines(want + 1, want + 1)
                # `export NCCL_X=1` (or `NCCL_X=1 torchrun ...`) inside a `run: |` script
                name, value = re.escape(op.name), _value_pattern(op.value)
                lines = text.splitlines()
                if isinstance(node, yaml.ScalarNode) and node.style == "|" and node.start_mark.line <= want <= node.end_mark.line:
                    block = range(node.start_mark.line + 1, min(node.end_mark.line + 1, len(lines)))
                    own = [i for i in block if re.fullmatch(rf"\s*(export\s+)?{name}={value}\s*;?\s*(#.*)?", lines[i])]
                    target = [want] if want in own else own
                    if len(target) == 1:
                        if not any(lines[i].strip() for i in block if i != target[0]):
                            raise FixError("the script has no other line")
                        return drop_lines(target[0] + 1, target[0] + 1)
                    m = re.search(rf"(?:^|(?<=\s)){name}={value}\s+(?=\S)", lines[want]) if want in block else None
                    if m and not target:
                        return [TextEdit(op.loc.path, starts[want] + m.start(), starts[want] + m.end(), "")]
                    raise FixError(f"{op.name} is set more than once in the script, or not on a line of its own")
                # `- NCCL_X=1` in a list (docker-compose environment)
                if isinstance(node, yaml.ScalarNode) and node.style is None and isinstance(parent, yaml.SequenceNode) \
                        and not parent.flow_style and node.start_mark.line == want \
                        and re.fullmatch(rf"\s*-\s*[\"']?{name}={value}[\"']?\s*(#.*)?", lines[want]):
                    if len(parent.value) == 1:
                        raise FixError(f"{op.name} is the only entry of its list; remove the list by hand")
                    return drop_lines(want + 1, want + 1)
        raise FixError(f"{op.loc.path}:{op.loc.line}: no YAML entry of {op.name} found here")

    def _remove_hcl_env_block(self, op: RemoveEnv, text: str, starts: list[int], drop_lines) -> list[TextEdit]:
        lines = text.splitlines()
        i = op.loc.line - 1
        top = next((j for j in range(i, max(-1, i - 4), -1) if re.fullmatch(r"\s*env\s*\{\s*", lines[j])), None)
        if top is None:
            raise FixError(f"{op.loc.path}:{op.loc.line}: {op.name} is not an HCL map entry or env block of its own")
        bottom = next((j for j in range(i, min(len(lines), i + 5)) if re.fullmatch(r"\s*\}\s*", lines[j])), None)
        if bottom is None:
            raise FixError("the env block does not end where expected")
        inner = lines[top + 1:bottom]
        if not all(re.fullmatch(r"""\s*(name|value)\s*=\s*("[^"]*"|'[^']*'|\S+)\s*((#|//).*)?""", l) or not l.strip() for l in inner):
            raise FixError("the env block holds more than a name and a value")
        body = "\n".join(inner)
        if not re.search(rf"""name\s*=\s*["']{re.escape(op.name)}["']""", body):
            raise FixError(f"the env block no longer names {op.name}")
        return drop_lines(top + 1, bottom + 1)


_NOT_LITERAL = object()


def _literal(node) -> Any:
    """The value of a literal expression node (int, float, str, True/False/None), else _NOT_LITERAL."""
    import libcst as cst

    if isinstance(node, cst.Integer):
        return int(node.value.replace("_", ""), 0) if node.value[:2].lower() in ("0x", "0o", "0b") else int(node.value.replace("_", ""))
    if isinstance(node, cst.Float):
        return float(node.value.replace("_", ""))
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return {"True": True, "False": False, "None": None}[node.value]
    if isinstance(node, cst.SimpleString):
        try:
            return node.evaluated_value
        except Exception:
            return _NOT_LITERAL
    return _NOT_LITERAL


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _render(value: Any, like=None) -> str:
    """Python source for ``value``; a string replacing a string keeps its prefix and quotes."""
    import libcst as cst

    if isinstance(value, str):
        if isinstance(like, cst.SimpleString):
            prefix = like.prefix
            quote = like.quote
            return f"{prefix}{quote}{value}{quote}"
        return f'"{value}"'
    if isinstance(value, bool) or value is None:
        return repr(value)
    return repr(value)


def _dotted(node) -> str:
    import libcst as cst

    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        return f"{_dotted(node.value)}.{node.attr.value}"
    return ""


def _is_docstring(stmt) -> bool:
    import libcst as cst

    return (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
            and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _line_starts(text: str) -> list[int]:
    out = [0]
    for m in re.finditer("\n", text):
        out.append(m.end())
    if out[-1] == len(text) and len(out) > 1:
        out.pop()  # a final newline does not open a line
    return out


def _value_pattern(value: str) -> str:
    v = re.escape(str(value).strip())
    return rf"""(?:"{v}"|'{v}'|{v})"""


# -- applying -----------------------------------------------------------------------------------
@dataclass
class FixPlan:
    """What applying the fixes of a scan would do."""

    originals: dict[str, str] = field(default_factory=dict)  # path -> text before
    texts: dict[str, str] = field(default_factory=dict)  # path -> text after (changed files only)
    applied: list[Finding] = field(default_factory=list)
    refused: list[tuple[Finding, str]] = field(default_factory=list)
    unsafe_available: int = 0  # fixes left out because --unsafe-fixes was not given

    def diff(self) -> str:
        return unified_diff(self.originals, self.texts)


def _conflicts(a: TextEdit, b: TextEdit) -> bool:
    if a.path != b.path or a == b:
        return False
    if a.start == a.end and b.start == b.end:
        return False  # two insertions at one point: both happen, in order
    return a.start < b.end and b.start < a.end or (a.start == a.end and b.start < a.start < b.end) or (b.start == b.end and a.start < b.start < a.end)


def apply_edits(text: str, edits: Iterable[TextEdit]) -> str:
    """Apply non-overlapping edits given against the same text."""
    out = text
    seen: set[TextEdit] = set()
    ordered = []
    for e in edits:
        if e not in seen:
            seen.add(e)
            ordered.append(e)
    # later offsets first; insertions at one point keep their order
    for e in sorted(enumerate(ordered), key=lambda p: (p[1].start, p[1].end, p[0]), reverse=True):
        ed = e[1]
        out = out[: ed.start] + ed.new + out[ed.end:]
    return out


def plan_fixes(findings: Iterable[Finding], read: ReadText, kind_of: KindOf, check: Callable[[str, str], "str | None"],
               unsafe: bool = False, only_paths: set[str] | None = None) -> FixPlan:
    """Work out the edits of every applicable fix, without writing anything.

    ``check(path, new_text)`` returns a problem (the file no longer parses)
    or None. A fix whose edits collide with an earlier fix's is left for the
    next pass (the caller re-scans the fixed text); a fix that breaks its file
    is refused, and the file keeps the other fixes.
    """
    plan = FixPlan()
    mat = Materializer(read, kind_of)
    accepted: list[tuple[Finding, list[TextEdit]]] = []
    taken: list[TextEdit] = []
    for f in sorted(findings, key=lambda f: f.sort_key()):
        fix = f.fix
        if fix is None:
            continue
        if not fix.safe and not unsafe:
            plan.unsafe_available += 1
            continue
        try:
            edits = mat.edits(fix)
        except FixError as exc:
            plan.refused.append((f, str(exc)))
            continue
        paths = {e.path for e in edits}
        if len(paths) > 1:
            plan.refused.append((f, "it would edit several files"))
            continue
        if only_paths is not None and not paths <= only_paths:
            plan.refused.append((f, "it edits another file than the one given"))
            continue
        if any(_conflicts(e, t) for e in edits for t in taken):
            continue  # overlaps an earlier fix: the next pass sees the new text
        accepted.append((f, edits))
        taken.extend(edits)
    by_path: dict[str, list[tuple[Finding, list[TextEdit]]]] = {}
    for f, edits in accepted:
        by_path.setdefault(edits[0].path, []).append((f, edits))
    for path, items in sorted(by_path.items()):
        original = mat.text(path)
        plan.originals[path] = original
        text = apply_edits(original, [e for _, es in items for e in es])
        if check(path, text) is None:
            plan.texts[path] = text
            plan.applied.extend(f for f, _ in items)
            continue
        # one fix at a time, each against the text the previous ones left
        text = original
        for f, _ in items:
            current = text
            step = Materializer(lambda p, _c=current: _c if p == path else read(p), kind_of)
            try:
                candidate = apply_edits(current, step.edits(f.fix))
            except FixError as exc:
                plan.refused.append((f, str(exc)))
                continue
            why = check(path, candidate)
            if why is None:
                text = candidate
                plan.applied.append(f)
            else:
                plan.refused.append((f, f"the fixed file would not parse: {why}"))
        if text != original:
            plan.texts[path] = text
    return plan


def unified_diff(originals: dict[str, str], texts: dict[str, str]) -> str:
    out = []
    for path in sorted(texts):
        before, after = originals.get(path, ""), texts[path]
        out.extend(difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True),
                                        fromfile=f"a/{path}", tofile=f"b/{path}"))
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n\\ No newline at end of file\n"
    return "".join(out)


def line_col(text: str, offset: int) -> tuple[int, int]:
    """0-based line and code-point column of an offset (for editors)."""
    line = text.count("\n", 0, offset)
    col = offset - (text.rfind("\n", 0, offset) + 1)
    return line, col


# -- the fixes rules attach ---------------------------------------------------------------------
# Each builder returns None when its fact is not one it can edit (a notebook cell, a value
# computed at run time); the finding is then reported without a fix.

_PYTHON = (".py", ".pyw")


def _py(fact: Fact) -> bool:
    return fact.loc.cell is None and fact.loc.path.endswith(_PYTHON)


def pin_memory(fact: Fact) -> Fix | None:
    """IO002: ``DataLoader(..., pin_memory=True)``. Safe: batches are the same tensors,
    only the host buffers they are copied from are page-locked."""
    if not _py(fact):
        return None
    return Fix("Add pin_memory=True to the DataLoader call", SAFE, (SetKeyword(fact.loc, "pin_memory", True),))


DEFAULT_WORKERS = 4


def num_workers(fact: Fact) -> Fix | None:
    """IO001: load batches in worker processes (``num_workers=4``). HF Trainer loaders are not IO001's
    (tokenised rows need no workers), so the key is always the DataLoader's."""
    if not _py(fact) or fact.value.get("via") != "torch":
        return None  # a tf.data map takes num_parallel_calls=tf.data.AUTOTUNE, an expression, not a literal keyword
    return Fix(f"Set num_workers={DEFAULT_WORKERS} (tune it to the CPU cores per GPU)", UNSAFE,
               (SetKeyword(fact.loc, "num_workers", DEFAULT_WORKERS, replace=(0,)),),
               "worker processes need a picklable dataset and collate function, seed their random generators "
               "separately and multiply host memory; code that relies on loading in the main process changes behaviour")


def nccl_backend(fact: Fact, wl: Any) -> Fix | None:
    """NET005: ``init_process_group(backend="nccl")`` instead of gloo/mpi, for CUDA-only code.

    Code that also sets up NCCL elsewhere, or says it runs on the CPU, chose Gloo on purpose
    for that path (``"nccl" if torch.cuda.is_available() else "gloo"`` written as two calls):
    no fix is offered there."""
    if not _py(fact):
        return None
    facts = list(getattr(wl, "facts", ()))
    if any(f.kind == "cpu_only" for f in facts):
        return None
    if any(f.kind == "process_group" and f is not fact and "nccl" in str((f.value or {}).get("backend") or "") for f in facts):
        return None
    backend = fact.value.get("backend")
    return Fix(f'Use the "nccl" backend instead of "{backend}" in init_process_group', UNSAFE,
               (SetKeyword(fact.loc, "backend", "nccl", replace=(backend, backend.upper() if isinstance(backend, str) else backend),
                           positional=0, add=False),),
               "collectives on CPU tensors fail under NCCL; keep Gloo for them with backend=\"cpu:gloo,cuda:nccl\"")


def enable_tf32(trains: Fact, tf32_facts: list[Fact]) -> Fix | None:
    """AMP005: TF32 matmuls. An explicit ``allow_tf32 = False`` (or ``"highest"`` precision,
    ``TrainingArguments(tf32=False)``) is switched; otherwise
    ``torch.backends.cuda.matmul.allow_tf32 = True`` goes after the imports of the training file."""
    why = ("TF32 rounds matmul inputs to a 10-bit mantissa: results change slightly, which matters to code that "
           "checks bitwise reproducibility or needs full fp32 accuracy")
    off = [f for f in tf32_facts if f.value.get("enabled") is False]
    if off:
        ops = []
        for f in off:
            if not _py(f):
                return None
            via = str(f.value.get("via") or "")
            if via.startswith("TrainingArguments"):
                ops.append(SetKeyword(f.loc, "tf32", True, replace=(False,), add=False))
            elif via.endswith("set_float32_matmul_precision"):
                ops.append(SetKeyword(f.loc, "precision", "high", replace=("highest",), positional=0, add=False))
            elif via.endswith("fp32_precision"):
                ops.append(SetAssignedValue(f.loc, "tf32", replace=("ieee", "none")))
            else:
                ops.append(SetAssignedValue(f.loc, True, replace=(False, 0)))
        return Fix("Enable TF32 matmuls where they are switched off", UNSAFE, tuple(ops), why)
    if not _py(trains):
        return None
    return Fix(f"Add torch.backends.cuda.matmul.allow_tf32 = True after the imports of {trains.loc.path}", UNSAFE,
               (InsertAfterImports(trains.loc.path, "torch", "{module}.backends.cuda.matmul.allow_tf32 = True"),), why)


def bf16_capable(wl: Any) -> bool | None:
    """Does the workload's GPU run bf16 natively (from the catalogue)? None when unknown.
    (``wl`` is a Workload; its resolved compute is read by attribute, so this module needs
    nothing beyond the model.)"""
    resolution = getattr(wl, "resolution", None)
    c = resolution.compute if resolution is not None else None
    return c.gpu_bf16 if c is not None else None


def enable_bf16(at: Fact, wl: Any) -> Fix | None:
    """AMP001 on a GPU with bf16: switch on bf16 mixed precision where the workload turns it off.

    Handles an accelerate config (``mixed_precision: "no"``), ``Accelerator(mixed_precision="no")``,
    HF ``TrainingArguments`` (``bf16=True``) and Lightning ``Trainer(precision="bf16-mixed")``.
    A raw PyTorch loop needs autocast around its forward pass: that is not a mechanical edit,
    and neither is a GPU without bf16 (fp16 needs loss scaling).
    """
    if bf16_capable(wl) is not True:
        return None
    why = ("bf16 changes the numerics of training (an 8-bit mantissa for activations and gradients): "
           "loss curves and results move, and custom ops without bf16 kernels may fail")
    if at.kind == "trains":  # nothing turns precision off explicitly: a framework default may
        defaults = [f for f in getattr(wl, "facts", ()) if f.kind == "precision" and isinstance(f.value, dict)
                    and f.value.get("mechanism") == "lightning" and f.value.get("default")]
        if len(defaults) != 1:
            return None
        at = defaults[0]
    if at.kind != "precision" or not isinstance(at.value, dict):
        return None
    mech = at.value.get("mechanism")
    if mech == "accelerate_config" and at.loc.cell is None:
        return Fix(f"Set mixed_precision to bf16 in {at.loc.path}", UNSAFE,
                   (SetConfigValue(at.loc, "mixed_precision", "bf16", replace=("no", "fp32")),), why)
    if mech == "packaged_config" and at.loc.cell is None and not at.value.get("default"):
        # a packaged trainer's config (axolotl, LLaMA-Factory: bf16: false; torchtune: dtype: fp32), on the key's line
        if at.value.get("trainer") == "torchtune" and at.key == "dtype":
            return Fix(f"Set dtype to bf16 in {at.loc.path}", UNSAFE,
                       (SetConfigValue(at.loc, "dtype", "bf16", replace=("fp32", "float32")),), why)
        if at.key == "bf16":
            return Fix(f"Set bf16 to true in {at.loc.path}", UNSAFE,
                       (SetConfigValue(at.loc, "bf16", "true", replace=("false", "False", "FALSE")),), why)
        return None
    if not _py(at):
        return None
    if mech == "accelerate":
        return Fix('Pass mixed_precision="bf16" to Accelerator', UNSAFE,
                   (SetKeyword(at.loc, "mixed_precision", "bf16", replace=("no", "fp32"), add=False),), why)
    if mech == "hf_args":
        return Fix("Set bf16=True in TrainingArguments", UNSAFE, (SetKeyword(at.loc, "bf16", True, replace=(False,)),), why)
    if mech == "lightning":
        return Fix('Set precision="bf16-mixed" in the Lightning Trainer', UNSAFE,
                   (SetKeyword(at.loc, "precision", "bf16-mixed", replace=(32, "32", "32-true")),), why)
    return None


def remove_env(fact: Fact) -> Fix | None:
    """NET002: delete the NCCL / libfabric override (a debugging switch)."""
    name, value = fact.value.get("name"), fact.value.get("value")
    if not isinstance(name, str) or value is None or fact.loc.cell is not None:
        return None
    return Fix(f"Remove {name}={value} from {fact.loc.path}", UNSAFE, (RemoveEnv(fact.loc, name, str(value)),),
               f"if {name} works around a real fault (a driver bug, a wrong network interface), "
               "the job may hang or fail without it")
