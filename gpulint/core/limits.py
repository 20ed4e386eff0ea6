"""Budgets of one file's work, and the cheap pre-checks that enforce them.

A parser must never be handed input that would crash it or run away with
time or memory: libcst's native parser overflows its stack past a few hundred
levels of nesting and is quadratic in the depth of left-recursive chains
(``a+a+...``, ``f().g().h()...``); a YAML alias bomb used as a key expands
exponentially. The checks here run before the parser, in C where possible
(``ast.parse``, ``re``), and turn such input into a ``LimitExceeded`` (a
SYS001 that names the limit and the configuration key that sets it).

The limits are read from the configuration (``max-nesting``, ``max-nodes``,
``file-timeout``, ``max-file-size-kb``) and reach the parsers through a
context variable, so ``FileKind.parse(text, path)`` keeps its signature.
"""
from __future__ import annotations

import ast
import contextlib
import contextvars
import re
import warnings
from dataclasses import dataclass

from gpulint.core.sources import ParseError


@dataclass(frozen=True)
class Limits:
    max_nesting: int = 200  # syntax nesting (Python AST depth, brackets, YAML/JSON/TOML levels); CPython allows 200 brackets
    max_nodes: int = 100_000  # syntax nodes of one file (Python tokens, YAML nodes after alias expansion)
    file_timeout: float = 20.0  # seconds of parsing and fact extraction per file
    max_file_size_kb: int = 2048  # larger files are not read

    @classmethod
    def of(cls, config) -> "Limits":
        return cls(
            max_nesting=int(getattr(config, "max_nesting", cls.max_nesting)),
            max_nodes=int(getattr(config, "max_nodes", cls.max_nodes)),
            file_timeout=float(getattr(config, "file_timeout", cls.file_timeout)),
            max_file_size_kb=int(getattr(config, "max_file_size_kb", cls.max_file_size_kb)),
        )


class LimitExceeded(ParseError):
    """Input past a budget: reported as SYS001, never handed to the parser."""


_CURRENT: contextvars.ContextVar[Limits] = contextvars.ContextVar("gpulint_limits", default=Limits())


def current() -> Limits:
    return _CURRENT.get()


@contextlib.contextmanager
def using(limits: Limits):
    token = _CURRENT.set(limits)
    try:
        yield limits
    finally:
        _CURRENT.reset(token)


def too_deep(limits: Limits, what: str = "nesting", line: int = 1) -> LimitExceeded:
    return LimitExceeded(f"{what} deeper than {limits.max_nesting} levels (max-nesting); not parsed", line)


def too_large(limits: Limits, count: int, unit: str) -> LimitExceeded:
    return LimitExceeded(f"too large to analyse: about {count:,} {unit} (max-nodes {limits.max_nodes:,}); not parsed")


# -- Python --------------------------------------------------------------------------------
# one token per string literal, comment, word or punctuation character; every
# alternative is unambiguous, so the scan is linear on any input
_STRING = (r"""[rRbBuUfF]{0,2}(?:'''(?:[^'\\]|\\.|'(?!''))*'''|\"\"\"(?:[^"\\]|\\.|"(?!""))*\"\"\"|"""
           r"""'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")""")
_TOKEN = re.compile(_STRING + r"""|#[^\n]*|\w+|[^\w\s]""", re.S)
_BRACKETS = re.compile(_STRING + r"""|#[^\n]*|[()\[\]{}]""", re.S)
_NESTING_MESSAGES = ("too many nested parentheses", "too many levels of indentation", "too many statically nested blocks",
                     "too complex", "nested too deeply", "maximum recursion")
#: below this size a file is never near the token budget (the largest hand-written
#: modules in large ML libraries are about 300 KB and 40,000 tokens)
_TOKEN_SCAN_FROM = 256 * 1024


def python_tokens(text: str) -> int:
    """Number of tokens, counting a string literal or comment as one (an estimate: no tokenizer)."""
    return _TOKEN.subn("", text)[1]


def bracket_depth(text: str) -> tuple[int, int]:
    """Deepest bracket nesting outside strings and comments, and the line it is first reached on."""
    depth = best = 0
    best_at = 0
    for m in _BRACKETS.finditer(text):
        ch = m.group()
        if ch in "([{":
            depth += 1
            if depth > best:
                best, best_at = depth, m.start()
        elif ch in ")]}":
            depth = max(0, depth - 1)
    return best, text.count("\n", 0, best_at) + 1


_YAML_BRACKETS = re.compile(r"""\"(?:[^"\\\n]|\\.)*\"|'[^'\n]*'|(?:^|(?<=\s))#[^\n]*|[\[\]{}]""", re.M)


def flow_depth(text: str) -> tuple[int, int]:
    """Deepest [ ] / { } nesting of YAML or JSON text outside quoted strings and
    comments, and its line. PyYAML's scanner is quadratic in this depth."""
    if "[" not in text and "{" not in text:
        return 0, 1
    depth = best = best_at = 0
    for m in _YAML_BRACKETS.finditer(text):
        ch = m.group()
        if ch == "[" or ch == "{":
            depth += 1
            if depth > best:
                best, best_at = depth, m.start()
        elif ch == "]" or ch == "}":
            depth = max(0, depth - 1)
    return best, text.count("\n", 0, best_at) + 1


#: fields of CPython's AST that never hold a node (names, identifiers, constants)
_NO_NODE_FIELDS = frozenset({"id", "attr", "name", "asname", "module", "level", "arg", "kind", "type_comment", "conversion",
                             "is_async", "simple"})
#: fields that always hold one leaf node (an expression context or operator): counted, not walked
_LEAF_FIELDS = frozenset({"ctx", "op"})
_SHAPES: dict[type, tuple[tuple[str, ...], int, bool]] = {}


def _shape_of(cls: type) -> tuple[tuple[str, ...], int, bool]:
    """(fields to walk, leaf nodes always below it, whether it has a list of comparison operators)."""
    shape = _SHAPES.get(cls)
    if shape is None:
        fields = cls._fields
        walk = tuple(f for f in fields if f not in _NO_NODE_FIELDS and f not in _LEAF_FIELDS and f != "ops"
                     and not (cls is ast.Constant and f == "value"))
        shape = _SHAPES[cls] = (walk, sum(1 for f in fields if f in _LEAF_FIELDS), "ops" in fields)
    return shape


def ast_shape(tree: ast.AST, stop: int) -> tuple[int, int]:
    """Depth and node count of a CPython AST (iterative; returns early once deeper than `stop`).
    Every node counts, expression contexts and operators included; those leaves (about a third of
    all nodes) are counted from their parent's type rather than visited, and fields that never hold
    a node (names, constants) are not read."""
    node_type = ast.AST
    best = nodes = 0
    stack = [(tree, 1)]
    pop, push = stack.pop, stack.append
    shapes = _SHAPES
    while stack:
        node, d = pop()
        nodes += 1
        if d > best:
            best = d
            if best > stop:
                break
        cls = node.__class__
        shape = shapes.get(cls) or _shape_of(cls)
        fields, leaves, ops = shape
        d += 1
        if leaves or ops:
            nodes += leaves + (len(node.ops) if ops else 0)
            if d > best:
                best = d
                if best > stop:
                    break
        for name in fields:
            v = getattr(node, name, None)
            if v.__class__ is list:
                for x in v:
                    if isinstance(x, node_type):
                        push((x, d))
            elif isinstance(v, node_type):
                push((v, d))
    return best, nodes


def check_python(text: str, limits: Limits | None = None) -> SyntaxError | None:
    """Raise LimitExceeded for Python source libcst must not be given.

    CPython's own parser (in C, with its own nesting and recursion limits)
    reads the text first: nothing is executed. Returns its SyntaxError when
    the text is not valid Python for the running interpreter but safe to
    give libcst (which also reads newer grammar), so callers can report
    CPython's position and wording.
    """
    return python_syntax(text, limits)[1]


def python_syntax(text: str, limits: Limits | None = None) -> tuple[ast.Module | None, SyntaxError | None]:
    """CPython's syntax tree of `text` within the budgets, or (None, its
    SyntaxError) when the running interpreter cannot parse it. Raises
    LimitExceeded past a budget (see check_python)."""
    limits = limits or current()
    if len(text) >= _TOKEN_SCAN_FROM:
        n = python_tokens(text)
        if n > limits.max_nodes:
            raise too_large(limits, n, "tokens")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except SyntaxError as err:
        msg = (err.msg or "").lower()
        if any(m in msg for m in _NESTING_MESSAGES):
            raise too_deep(limits, line=err.lineno or 1) from None
        depth, line = bracket_depth(text)
        if depth > limits.max_nesting:
            raise too_deep(limits, "bracket nesting", line) from None
        return None, err
    except (RecursionError, MemoryError):
        raise too_deep(limits, "expression nesting") from None
    except ValueError:  # NUL bytes and the like: libcst reports them
        return None, None
    depth, nodes = ast_shape(tree, limits.max_nesting)
    if depth > limits.max_nesting:
        raise too_deep(limits, "syntax nesting")
    if nodes > limits.max_nodes:
        raise too_large(limits, nodes, "syntax nodes")
    return tree, None
