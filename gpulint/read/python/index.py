"""One pass over a Python module that every Python fact and rule shares.

The index is built from CPython's own syntax tree (``ast``): the parse is done
in C, about ten times faster than libcst's, and the tree is the one the
pre-checks of gpulint.core.limits already had to build. libcst's lossless tree is
only parsed where text is rewritten (autofix, gpulint.core.fixes) or a plugin asks
for ``Source.tree``.

The index records imports (so ``import torch as t`` resolves ``t.autocast`` to
``torch.autocast``), every call with its resolved qualified name and arguments,
assignments (to follow a value through ``x = ...``), argparse arguments and
dataclass field defaults. Rules then ask questions of the index instead of
walking the tree again: one walk in all, whatever the number of rules.

Qualified names:
- ``torch.autocast`` for a call of an imported name;
- ``transformers.Trainer().train`` for a method called on a variable assigned
  from ``Trainer(...)`` in the same scope or module;
- ``None`` where the callee cannot be resolved (``loss.backward()``); the call
  is still recorded with its ``attr`` (``backward``) and ``receiver`` text.
"""
from __future__ import annotations

import ast
import operator
import re

from dataclasses import dataclass, field
from typing import Any, Iterator

UNKNOWN = object()  # a value that cannot be decided statically


#: calls that hand back the object they are given, configured or wrapped, with its methods (Ray Train's prepare_*,
#: torch.compile): ``x = prepare_trainer(x)`` keeps x's type
PASSTHROUGH = frozenset({"ray.train.lightning.prepare_trainer", "ray.train.torch.prepare_model", "torch.compile"})


@dataclass(frozen=True)
class OneOf:
    """One of a few literal values, decided at run time: ``torch.bfloat16 if bf16_ok else torch.float16``.

    Consumers ask what all the choices have in common (every choice a half-precision dtype: mixed
    precision is on, whichever) and treat anything else as unknown. Never stored in a fact."""

    choices: frozenset

    @classmethod
    def of(cls, values) -> "OneOf | Any":
        flat: set = set()
        for v in values:
            if v is UNKNOWN or isinstance(v, (dict, list)):
                return UNKNOWN
            flat |= set(v.choices) if isinstance(v, OneOf) else {v}
        if not flat:
            return UNKNOWN
        return next(iter(flat)) if len(flat) == 1 else cls(frozenset(flat))


@dataclass
class Call:
    node: ast.Call
    qualname: str | None
    attr: str  # last name of the callee (``backward`` in ``loss.backward()``)
    receiver: str  # source text of the receiver for method calls ("" otherwise)
    func: str  # the callee as written (``t.autocast``)
    scope: str  # enclosing function ("" = module level)
    in_with: bool = False
    decorator: bool = False
    assigned_to: str = ""  # ``x`` in ``x = f(...)``
    #: branches the call sits in (outermost first): "gpu" / "cpu" (a CUDA check's branches), "multi_gpu"
    #: (more than one GPU), "debug" (a debug or verbose switch), "dead" (``if False:``), "other_os"
    #: (a Windows/macOS branch: ``if sys.platform == "win32":``)
    guards: tuple[str, ...] = ()
    order: int = 0  # position in PyIndex.calls (source order)
    #: the tests of the ``if`` statements and conditional expressions around the call (outermost first), each with
    #: True for its body and False for its else branch: ``if args.amp: with autocast():`` runs only where the flag is set
    conditions: tuple[tuple[ast.expr, bool], ...] = ()

    def kwarg(self, name: str) -> ast.expr | None:
        for kw in self.node.keywords:
            if kw.arg == name:
                return kw.value
        return None

    def has_kwarg(self, name: str) -> bool:
        return self.kwarg(name) is not None

    def positional(self, i: int) -> ast.expr | None:
        pos = [a for a in self.node.args if a.__class__ is not ast.Starred]
        return pos[i] if i < len(pos) else None

    def keywords(self) -> list[tuple[str, ast.expr]]:
        """(name, value) of every keyword argument, in order (``**kwargs`` not included)."""
        return [(kw.arg, kw.value) for kw in self.node.keywords if kw.arg is not None]

    @property
    def has_args(self) -> bool:
        """Any argument at all, positional, keyword or starred."""
        return bool(self.node.args or self.node.keywords)

    @property
    def has_star_kwargs(self) -> bool:
        return any(kw.arg is None for kw in self.node.keywords)

    @property
    def has_star_args(self) -> bool:
        return any(a.__class__ is ast.Starred for a in self.node.args)


@dataclass
class Assign:
    target: str  # dotted text: ``x``, ``self.model``, ``torch.backends.cuda.matmul.allow_tf32``
    resolved: str  # target with import aliases resolved
    value: ast.expr
    scope: str
    node: ast.AST


@dataclass
class CliArgument:
    flags: tuple[str, ...]  # ("--bf16",)
    dest: str
    default: Any  # literal default, None when absent, UNKNOWN when not literal
    has_default: bool
    action: str | None
    node: ast.Call
    type_bool: bool = False  # ``type=bool``: argparse makes any non-empty word True, "False" included


@dataclass
class PyIndex:
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified
    imported_modules: set[str] = field(default_factory=set)
    relative_imports: list[tuple[int, str]] = field(default_factory=list)  # (level, module)
    #: local name -> (module, name, level) of each name a relative import binds (``from .engine import Engine``)
    relative_names: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    assigns: list[Assign] = field(default_factory=list)
    cli: dict[str, CliArgument] = field(default_factory=dict)  # dest -> argument
    dataclass_fields: dict[str, dict[str, ast.expr]] = field(default_factory=dict)
    var_types: dict[str, str] = field(default_factory=dict)  # ``trainer`` -> ``transformers.Trainer``
    functions: set[str] = field(default_factory=set)
    #: module-level functions and every class by name (first definition), with their base classes' qualified names
    top_functions: dict[str, ast.FunctionDef] = field(default_factory=dict)
    classes: dict[str, tuple[ast.ClassDef, tuple[str, ...]]] = field(default_factory=dict)
    main_guard: bool = False
    #: (first, last) lines of each module-level ``if __name__ == "__main__":`` body: code that runs only when the
    #: file is the script, never when another file imports it
    main_blocks: list[tuple[int, int]] = field(default_factory=list)
    #: (name, scope) of containers changed after they were built: ``hp["bf16"] = 1``, ``hp |= {...}``,
    #: ``hp.update(...)`` / ``setdefault`` / ``pop``: a dict literal bound to such a name is not its value
    mutated: set[tuple[str, str]] = field(default_factory=set)
    #: the statements of each scope's own body ("" = the module), for straight-line reaching definitions;
    #: None where two functions share a name (their scopes cannot be told apart)
    bodies: dict[str, list | None] = field(default_factory=dict)
    #: parameter names of each function scope: a binding no assignment shows
    params: dict[str, set[str]] = field(default_factory=dict)
    _by_qualname: dict[str, list[Call]] | None = field(default=None, repr=False)
    _by_attr: dict[str, list[Call]] | None = field(default=None, repr=False)
    _by_func: dict[str, list[Call]] | None = field(default=None, repr=False)
    _by_node: dict[int, Call] | None = field(default=None, repr=False)
    _assigns_by: tuple[int, dict[tuple[str, str], list[Assign]]] | None = field(default=None, repr=False)
    _callers_of: dict[str, set[str]] | None = field(default=None, repr=False)

    # -- questions ------------------------------------------------------------------
    def calls_to(self, *qualnames: str) -> Iterator[Call]:
        """Calls of these qualified names, in source order."""
        if self._by_qualname is None:
            by: dict[str, list[Call]] = {}
            for c in self.calls:
                if c.qualname:
                    by.setdefault(c.qualname, []).append(c)
            self._by_qualname = by
        by = self._by_qualname
        if len(qualnames) == 1:
            return iter(by.get(qualnames[0], ()))
        found = [c for q in set(qualnames) for c in by.get(q, ())]
        found.sort(key=lambda c: c.order)
        return iter(found)

    def calls_matching(self, predicate) -> Iterator[Call]:
        return (c for c in self.calls if predicate(c))

    def method_calls(self, attr: str) -> Iterator[Call]:
        """Calls of a method named `attr` on some receiver, in source order."""
        if self._by_attr is None:
            by: dict[str, list[Call]] = {}
            for c in self.calls:
                if c.receiver:
                    by.setdefault(c.attr, []).append(c)
            self._by_attr = by
        return iter(self._by_attr.get(attr, ()))

    def function_calls(self, name: str) -> Iterator[Call]:
        """Calls of a bare name (``train(args)``, no receiver), in source order."""
        if self._by_func is None:
            by: dict[str, list[Call]] = {}
            for c in self.calls:
                if not c.receiver:
                    by.setdefault(c.func, []).append(c)
            self._by_func = by
        return iter(self._by_func.get(name, ()))

    def call_at(self, node: ast.AST) -> Call | None:
        """The call whose node this is (a fact made from a call knows only its node)."""
        if self._by_node is None:
            self._by_node = {id(c.node): c for c in self.calls}
        return self._by_node.get(id(node))

    def assigns_of(self, name: str, scope: str) -> list[Assign]:
        """The assignments of `name` in `scope`, in source order (indexed once the walk has recorded them all)."""
        if self._assigns_by is None or self._assigns_by[0] != len(self.assigns):
            by: dict[tuple[str, str], list[Assign]] = {}
            for a in self.assigns:
                by.setdefault((a.target, a.scope), []).append(a)
            self._assigns_by = (len(self.assigns), by)
        return self._assigns_by[1].get((name, scope), [])

    def reached_from(self, names: set[str]) -> tuple[set[str], bool]:
        """The functions and classes of the module from which `names` are reached by its own calls (a class reaches its
        methods), and whether code that runs on import (module level, outside ``__main__`` blocks) reaches them."""
        if self._callers_of is None:
            graph: dict[str, set[str]] = {}  # callee -> who calls it
            for x in self.calls:
                callee = x.attr or (x.func or "").rsplit(".", 1)[-1]
                if callee:
                    line = x.node.lineno
                    caller = x.scope or ("<main>" if any(lo <= line <= hi for lo, hi in self.main_blocks) else "<module>")
                    graph.setdefault(callee, set()).add(caller)
            for node, _ in self.classes.values():
                for s in node.body:
                    if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        graph.setdefault(s.name, set()).add(node.name)
            self._callers_of = graph
        seen, todo = set(names), list(names)
        while todo:
            for caller in self._callers_of.get(todo.pop(), ()):
                if caller not in seen:
                    seen.add(caller)
                    todo.append(caller)
        return seen, "<module>" in seen

    def rebinds(self, name: str, scope: str) -> bool:
        """Does the scope itself assign `name` anywhere (a parameter it may rebind on some path)?"""
        return bool(self.assigns_of(name, scope))

    def imports_any(self, *prefixes: str) -> bool:
        return any(m == p or m.startswith(p + ".") for m in self.imported_modules for p in prefixes)

    def assignments_to(self, resolved: str) -> list[Assign]:
        return [a for a in self.assigns if a.resolved == resolved]

    def bindings(self, name: str, scope: str, use: ast.AST | None = None) -> list[Assign] | None:
        """The assignments that may bind `name` at `use`: the scope's own, else the module's; only the one
        that reaches the use when straight-line code decides it (``reaching``); None for a parameter of the
        scope that no straight-line assignment rebinds before the use (``if kw is None: kw = {}``: the
        caller decides). Without `use`, every assignment of the scope (else of the module)."""
        assigns = list(self.assigns_of(name, scope) or self.assigns_of(name, ""))
        param = name in self.params.get(scope, ())
        if use is not None and (len(assigns) > 1 or param):
            found = self.reaching(assigns, scope, use)
            if found is not None:
                return [found]
            if param:
                return None
        return assigns

    def reaching(self, assigns: list[Assign], scope: str, use: ast.AST) -> Assign | None:
        """The one assignment of ``assigns`` that reaches ``use`` in straight-line code, else None.

        A notebook rebinds ``instance_type`` or ``params`` from cell to cell: at a use in a
        statement of its scope's own body (not inside an ``if``/loop/``try``), the last
        assignment before that statement holds, when that assignment is itself a statement of
        the same body (so it ran, and nothing after it could rebind the name before the use).
        Uses in functions of names bound at module level are not decided (the function may
        run at any time)."""
        body = self.bodies.get(scope)
        line = getattr(use, "lineno", None)
        if not body or line is None:
            return None
        stmt = _statement_at(body, line)
        if stmt is None or stmt.__class__ not in _STRAIGHT:
            return None
        before = [a for a in assigns if a.scope == scope and a.node is not stmt and
                  (a.node.lineno, a.node.col_offset) < (stmt.lineno, stmt.col_offset)]
        if not before:
            return None
        last = max(before, key=lambda a: (a.node.lineno, a.node.col_offset))
        return last if _statement_at(body, last.node.lineno) is last.node else None


def _statement_at(body: list, line: int) -> ast.stmt | None:
    """The statement of ``body`` (in source order) that spans ``line``."""
    lo, hi = 0, len(body)
    while lo < hi:
        mid = (lo + hi) // 2
        if (body[mid].end_lineno or body[mid].lineno) < line:
            lo = mid + 1
        else:
            hi = mid
    return body[lo] if lo < len(body) and body[lo].lineno <= line else None


#: statements that run as a whole once reached (no branch, loop or handler inside)
_STRAIGHT = frozenset({ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return})

#: dict methods that change the container in place
_MUTATORS = frozenset({"update", "setdefault", "pop", "popitem", "clear"})


def dotted(node: ast.AST | None) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while node.__class__ is ast.Attribute:
        parts.append(node.attr)
        node = node.value
    if node.__class__ is ast.Name:
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def string(node: ast.AST | None) -> str | None:
    """The value of a string literal (implicitly concatenated parts included), else None."""
    if node.__class__ is ast.Constant and node.value.__class__ is str:
        return node.value
    return None


_DATACLASS_DECORATORS = {"dataclasses.dataclass", "dataclass", "pydantic.dataclasses.dataclass", "attr.s", "attrs.define"}


class SourceText:
    """Text of a module and the positions CPython's tree gives (UTF-8 byte columns) as code points."""

    _BREAK = re.compile(r"\r\n|\r|\n")

    def __init__(self, text: str):
        self.text = text
        self.ascii = text.isascii()
        self._starts: list[int] | None = None

    def starts(self) -> list[int]:
        if self._starts is None:
            self._starts = [0] + [m.end() for m in self._BREAK.finditer(self.text)]
        return self._starts

    def column(self, line: int, byte_col: int) -> int:
        """0-based code-point column of a 0-based UTF-8 byte column of a 1-based line."""
        if self.ascii or byte_col <= 0:
            return byte_col
        starts = self.starts()
        if line - 1 >= len(starts):
            return byte_col
        begin = starts[line - 1]
        end = starts[line] if line < len(starts) else len(self.text)
        raw = self.text[begin:end].encode("utf-8", "surrogatepass")
        return len(raw[:byte_col].decode("utf-8", "replace"))

    def offset(self, line: int, byte_col: int) -> int:
        starts = self.starts()
        return (starts[line - 1] if line - 1 < len(starts) else len(self.text)) + self.column(line, byte_col)

    def segment(self, node: ast.AST) -> str:
        """The source text of a node (``ast.get_source_segment``, without re-splitting the text each time)."""
        try:
            return self.text[self.offset(node.lineno, node.col_offset):self.offset(node.end_lineno, node.end_col_offset)]
        except (AttributeError, TypeError):
            return ""


class _Leave:
    __slots__ = ("fn", "arg")

    def __init__(self, fn, arg=None):
        self.fn, self.arg = fn, arg


#: fields never worth walking into (expression contexts, operators) and leaf node types
_SKIP_FIELDS = {"ctx", "op", "ops", "type_comment", "id", "attr", "kind"}
_LEAVES = (ast.Constant, ast.Name, ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal, ast.alias)
_LEAF_TYPES = frozenset(_LEAVES)
_CHILD_FIELDS: dict[type, tuple[str, ...]] = {}


def _child_fields(cls: type) -> tuple[str, ...]:
    names = _CHILD_FIELDS.get(cls)
    if names is None:
        if issubclass(cls, _LEAVES):
            names = ()
        elif cls is ast.ClassDef:  # libcst's order, which the facts were written against: body before bases
            names = ("body", "bases", "keywords", "decorator_list")
        else:
            names = tuple(n for n in cls._fields if n not in _SKIP_FIELDS)
        names = names[::-1]  # the walk pushes the last field first, so the first is visited first
        _CHILD_FIELDS[cls] = names
    return names


#: module paths that re-export another module's API under a different name: ``import tensorflow.compat.v2
#: as tf`` is TensorFlow's own namespace, so ``tf.keras.datasets.mnist`` is ``tensorflow.keras...``
_MODULE_ALIASES = (("tensorflow.compat.v2", "tensorflow"), ("tensorflow.compat.v1", "tensorflow"), ("tf_keras", "keras"))


def _canonical_module(name: str) -> str:
    for alias, canonical in _MODULE_ALIASES:
        if name == alias or name.startswith(alias + "."):
            return canonical + name[len(alias):]
    return name


def _start(node: ast.AST) -> tuple[int, int]:
    return node.lineno, node.col_offset


class _Indexer:
    def __init__(self, index: PyIndex, text: SourceText):
        self.ix = index
        self.src = text
        self.scope: list[str] = []
        self.with_calls: set[int] = set()
        self.decorator_calls: set[int] = set()
        self.assign_target: dict[int, str] = {}
        self.class_stack: list[tuple[str, bool]] = []
        self.guards: list[str] = []
        self.conditions: list[tuple[ast.expr, bool]] = []
        #: (name, scope) -> the value last assigned to it so far in the walk (source order), for _with_bindings
        self.last_bound: dict[tuple[str, str], Any] = {}
        #: (name, scope) -> how many assignments bind it so far in the walk (for _folded)
        self.bindings: dict[tuple[str, str], int] = {}
        #: names the module binds exactly once, to a literal, that no function rebinds as ``global`` (for _folded;
        #: worked out on first use)
        self.module_constants: dict[str, ast.Constant] | None = None
        self.module: ast.Module | None = None
        self.handlers = {
            ast.Import: self.visit_Import, ast.ImportFrom: self.visit_ImportFrom,
            ast.FunctionDef: self.visit_FunctionDef, ast.AsyncFunctionDef: self.visit_FunctionDef,
            ast.ClassDef: self.visit_ClassDef, ast.AnnAssign: self.visit_AnnAssign, ast.Assign: self.visit_Assign,
            ast.With: self.visit_With, ast.AsyncWith: self.visit_With, ast.Call: self.visit_Call,
            ast.AugAssign: self.visit_AugAssign,
        }

    # -- the walk ----------------------------------------------------------------------
    def walk(self, module: ast.Module) -> None:
        """Pre-order, children in field order (as libcst's walk was), iterative: the
        nesting the pre-checks allow (max-nesting) never meets Python's recursion limit."""
        self.module = module
        self.ix.bodies[""] = module.body
        stack: list[Any] = [module]
        pop, push = stack.pop, stack.append
        handlers = self.handlers
        node_type = ast.AST
        leave_type = _Leave
        if_type, call_type, dict_type, ifexp_type = ast.If, ast.Call, ast.Dict, ast.IfExp
        leaves = _LEAF_TYPES  # nothing to do at a name or a constant: never pushed
        while stack:
            node = pop()
            cls = node.__class__
            if cls is leave_type:
                node.fn(node.arg)
                continue
            if cls is if_type:
                self._if(node, push)
                continue
            if cls is ifexp_type:
                self._ifexp(node, push)
                continue
            h = handlers.get(cls)
            if h is not None:
                leave = h(node)
                if leave is not None:
                    push(leave)
            if cls is call_type and node.args and node.keywords:
                # source order, as libcst's one list of arguments: ``f(a=g(), *h())`` visits g before h
                for x in sorted(node.args + node.keywords, key=_start, reverse=True):
                    push(x)
                push(node.func)
                continue
            if cls is dict_type:  # key, value, key, value ... (``**other`` has no key)
                for k, v in zip(reversed(node.keys), reversed(node.values)):
                    push(v)
                    if k is not None:
                        push(k)
                continue
            fields = _CHILD_FIELDS.get(cls)
            if fields is None:
                fields = _child_fields(cls)
            for name in fields:
                v = getattr(node, name, None)
                if v.__class__ is list:
                    for x in reversed(v):
                        if x.__class__ not in leaves and isinstance(x, node_type):
                            push(x)
                elif v.__class__ not in leaves and isinstance(v, node_type):
                    push(v)

    def _if(self, node: ast.If, push) -> None:
        """An ``if``: its test under the branches around it, its body and else branch under the guard
        the test decides (an ``elif`` is the else branch's one ``if``)."""
        test_text = self._code(node.test)
        if not self.scope and node.test.__class__ is ast.Compare:
            if "__name__" in test_text and "__main__" in test_text:
                self.ix.main_guard = True
                if node.body and "!=" not in test_text:
                    self.ix.main_blocks.append((node.body[0].lineno, node.body[-1].end_lineno or node.body[-1].lineno))
        body_guard, else_guard = guard_of(node.test, self._with_bindings(node.test, test_text))
        folded = self._folded(node.test)
        if folded is not None:
            # ``num_gpus = 1`` ... ``if num_gpus > 1:``: a test of constants the file binds decides the branch
            body_guard, else_guard = (None, "dead") if folded else ("dead", None)
        for guard, stmts, side in ((else_guard, node.orelse, False), (body_guard, node.body, True)):  # pushed in reverse
            if stmts:
                self._push_branch(push, guard, stmts, (node.test, side))
        push(node.test)

    def _folded(self, test: ast.expr) -> bool | None:
        """The value of a comparison of a name the file last bound to a literal with a literal (``num_gpus > 1``
        after ``num_gpus = 1``), and of ``and``/``or``/``not`` of such; None when anything in it is not such."""
        cls = test.__class__
        if cls is ast.UnaryOp and test.op.__class__ is ast.Not:
            inner = self._folded(test.operand)
            return None if inner is None else not inner
        if cls is ast.BoolOp:
            parts = [self._folded(v) for v in test.values]
            if test.op.__class__ is ast.And:
                return False if False in parts else None if None in parts else True
            return True if True in parts else None if None in parts else False
        if cls is not ast.Compare or len(test.ops) != 1 or test.left.__class__ is not ast.Name:
            return None
        right = test.comparators[0]
        if right.__class__ is not ast.Constant:
            return None
        scope = self.scope[-1] if self.scope else ""
        name = test.left.id
        if (name, scope) in self.last_bound:
            # bound in this scope before the test, once: ``n_gpu = device_count()`` / ``else: n_gpu = 1`` decide nothing
            if (name, scope) in self.ix.mutated or self.bindings.get((name, scope)) != 1:
                return None
            bound = self.last_bound[(name, scope)]
        elif scope and name not in self.ix.params.get(scope, ()):
            if self.module_constants is None:
                self.module_constants = _module_constants(self.module, self.src.text) if self.module is not None else {}
            bound = self.module_constants.get(name)  # a module constant read in a function
        else:
            return None
        if bound.__class__ is not ast.Constant or type(bound.value) not in (int, float, bool, str):
            return None
        a, b = bound.value, right.value
        op = _FOLD_OPS.get(test.ops[0].__class__)
        try:
            return bool(op(a, b)) if op is not None else None
        except TypeError:
            return None

    def _with_bindings(self, test: ast.expr, text: str) -> str:
        """The test's text with what its names were last bound to before it (one level): ``all_gpus =
        list(range(torch.cuda.device_count()))`` ... ``if len(all_gpus) > 0:`` is a CUDA check."""
        names = {n.id for n in ast.walk(test) if n.__class__ is ast.Name}
        if not names:
            return text
        scope = self.scope[-1] if self.scope else ""
        values = [self.last_bound.get((n, scope), self.last_bound.get((n, ""))) for n in sorted(names)]
        extra = " ".join(self._code(v) for v in values if v is not None and v is not UNKNOWN_EXPR and isinstance(v, ast.AST))
        return f"{text} {extra}" if extra else text

    def _ifexp(self, node: ast.IfExp, push) -> None:
        """``torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")``: each side under the
        guard its test decides, as for an ``if`` statement."""
        body_guard, else_guard = guard_of(node.test, self._code(node.test))
        for guard, expr, side in ((else_guard, node.orelse, False), (body_guard, node.body, True)):  # pushed in reverse
            self._push_branch(push, guard, [expr], (node.test, side))
        push(node.test)

    def _push_branch(self, push, guard: str | None, nodes: list, condition: tuple[ast.expr, bool]) -> None:
        """Push a branch's nodes for the walk, under `guard` (set on entering them, dropped after) when there is one,
        and under the test that leads to it."""
        push(_Leave(self._pop_condition))
        if guard:
            push(_Leave(self._pop_guard))
        for n in reversed(nodes):
            push(n)
        if guard:
            push(_Leave(self.guards.append, guard))
        push(_Leave(self.conditions.append, condition))

    def _pop_guard(self, _=None) -> None:
        self.guards.pop()

    def _pop_condition(self, _=None) -> None:
        self.conditions.pop()

    # -- names -------------------------------------------------------------------------
    def resolve(self, text: str | None) -> str | None:
        if not text:
            return None
        head, _, rest = text.partition(".")
        if head in self.ix.imports:
            base = self.ix.imports[head]
            return f"{base}.{rest}" if rest else base
        if head in self.ix.var_types:
            base = self.ix.var_types[head]
            return f"{base}().{rest}" if rest else None
        return None

    def _code(self, node: ast.AST) -> str:
        return self.src.segment(node)

    # -- imports ---------------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            name = alias.name
            self.ix.imported_modules.add(name)
            if alias.asname:
                self.ix.imports[alias.asname] = _canonical_module(name)
            else:
                head = name.split(".")[0]
                self.ix.imports[head] = head

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        level = node.level or 0
        star = len(node.names) == 1 and node.names[0].name == "*"
        if level:
            self.ix.relative_imports.append((level, module))
            if star:
                return
            for alias in node.names:
                self.ix.relative_imports.append((level, f"{module}.{alias.name}" if module else alias.name))
                self.ix.relative_names[alias.asname or alias.name] = (module, alias.name, level)
            return
        if module:
            self.ix.imported_modules.add(module)
        if star:
            return
        for alias in node.names:
            name = alias.name
            local = alias.asname or name
            self.ix.imports[local] = _canonical_module(f"{module}.{name}" if module else name)
            self.ix.imported_modules.add(f"{module}.{name}")

    # -- scopes ------------------------------------------------------------------------
    def visit_FunctionDef(self, node: ast.FunctionDef) -> _Leave:
        if not self.scope and not self.class_stack:
            self.ix.top_functions.setdefault(node.name, node)
        self.ix.bodies[node.name] = node.body if node.name not in self.ix.bodies else None
        a = node.args
        self.ix.params.setdefault(node.name, set()).update(
            x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [v for v in (a.vararg, a.kwarg) if v is not None])
        self.scope.append(node.name)
        self.ix.functions.add(node.name)
        for dec in node.decorator_list:
            if dec.__class__ is ast.Call:
                self.decorator_calls.add(id(dec))
        return _Leave(self._leave_function)

    def _leave_function(self, _=None) -> None:
        self.scope.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> _Leave:
        is_dc = False
        for dec in node.decorator_list:
            d = dec.func if dec.__class__ is ast.Call else dec
            text = dotted(d)
            if text and (self.resolve(text) in _DATACLASS_DECORATORS or text in _DATACLASS_DECORATORS):
                is_dc = True
        bases = tuple(self.resolve(t) or t for t in (dotted(b) for b in node.bases) if t)
        self.ix.classes.setdefault(node.name, (node, bases))
        self.class_stack.append((node.name, is_dc))
        if is_dc:
            self.ix.dataclass_fields.setdefault(node.name, {})
        return _Leave(self._leave_class)

    def _leave_class(self, _=None) -> None:
        self.class_stack.pop()

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if self.class_stack and not self.scope and self.class_stack[-1][1] and node.target.__class__ is ast.Name:
            if node.value is not None:
                value = node.value
                # field(default=...) carries the default inside
                if value.__class__ is ast.Call and (dotted(value.func) or "").split(".")[-1] == "field":
                    value = next((kw.value for kw in value.keywords if kw.arg == "default"), None)
                if value is not None:
                    self.ix.dataclass_fields[self.class_stack[-1][0]][node.target.id] = value
            return
        if node.value is not None:
            self._record_assign(node.target, node.value, node)

    # -- with / decorators -------------------------------------------------------------
    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            if item.context_expr.__class__ is ast.Call:
                self.with_calls.add(id(item.context_expr))

    # -- assignments ---------------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        for t in node.targets:
            self._record_assign(t, node.value, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        text = dotted(node.target.value if node.target.__class__ is ast.Subscript else node.target)
        if text:
            self.ix.mutated.add((text, self.scope[-1] if self.scope else ""))

    def _record_assign(self, target: ast.expr, value: ast.expr, node: ast.AST) -> None:
        scope = self.scope[-1] if self.scope else ""
        if target.__class__ is ast.Subscript:  # hp["bf16"] = 1: the container changes
            text = dotted(target.value)
            if text:
                self.ix.mutated.add((text, scope))
            return
        if target.__class__ in (ast.Tuple, ast.List):
            if value.__class__ in (ast.Tuple, ast.List) and len(value.elts) == len(target.elts) and \
                    not any(e.__class__ is ast.Starred for e in (*target.elts, *value.elts)):
                # ``V, C, steps = 11, 64, 1000``: each name is bound to its own element, as Python pairs them
                for el, v in zip(target.elts, value.elts):
                    self._record_assign(el, v, node)
                return
            for el in target.elts:
                text = dotted(el.value if el.__class__ is ast.Starred else el)
                if text:
                    self.ix.assigns.append(Assign(text, text, UNKNOWN_EXPR, scope, node))
                    self.last_bound[(text, scope)] = UNKNOWN_EXPR
                    self.bindings[(text, scope)] = self.bindings.get((text, scope), 0) + 1
            return
        text = dotted(target)
        if not text:
            return
        resolved = self.resolve(text) or text
        self.ix.assigns.append(Assign(text, resolved, value, scope, node))
        self.last_bound[(text, scope)] = value
        self.bindings[(text, scope)] = self.bindings.get((text, scope), 0) + 1
        if value.__class__ is ast.Call:
            self.assign_target[id(value)] = text
            callee = dotted(value.func)
            # an instance of a class of the file is typed by the class's name (``trainer = ProjectTrainer(...)``)
            q = self.resolve(callee) or (callee if callee in self.ix.classes else None)
            if q in PASSTHROUGH and value.args and value.args[0].__class__ is ast.Name:
                # ``trainer = ray.train.lightning.prepare_trainer(trainer)``: the same object, configured; its type holds
                q = self.ix.var_types.get(value.args[0].id, q)
            if q and "." not in text:
                self.ix.var_types[text] = q

    # -- calls -------------------------------------------------------------------------
    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        text = dotted(func)
        attr = ""
        receiver = ""
        if func.__class__ is ast.Attribute:
            attr = func.attr
            receiver = dotted(func.value) or self._code(func.value)
        elif func.__class__ is ast.Name:
            attr = func.id
        qual = self.resolve(text) if text else None
        if qual is None and func.__class__ is ast.Attribute and func.value.__class__ is ast.Call:
            inner = self.resolve(dotted(func.value.func))
            if inner:
                qual = f"{inner}().{attr}"
        call = Call(
            node=node,
            qualname=qual,
            attr=attr,
            receiver=receiver,
            func=text or self._code(func),
            scope=self.scope[-1] if self.scope else "",
            in_with=id(node) in self.with_calls,
            decorator=id(node) in self.decorator_calls,
            assigned_to=self.assign_target.get(id(node), ""),
            guards=tuple(self.guards),
            conditions=tuple(self.conditions),
            order=len(self.ix.calls),
        )
        self.ix.calls.append(call)
        if attr in _MUTATORS and func.__class__ is ast.Attribute and dotted(func.value):
            self.ix.mutated.add((receiver, call.scope))
        if attr == "add_argument":
            self._record_cli(node)

    def _record_cli(self, node: ast.Call) -> None:
        flags = [s for s in (string(a) for a in node.args) if s is not None]
        if not flags:
            return
        dest = None
        default: Any = None
        has_default = False
        action = None
        type_bool = False
        for kw in node.keywords:
            key = kw.arg
            if key == "type":
                type_bool = kw.value.__class__ is ast.Name and kw.value.id == "bool"
            elif key == "dest":
                d = literal(kw.value)
                dest = d if isinstance(d, str) else None
            elif key == "default":
                has_default = True
                default = literal(kw.value)
            elif key == "action":
                a = literal(kw.value)
                action = a if isinstance(a, str) else None
        if dest is None:
            longs = [f for f in flags if f.startswith("--")]
            dest = (longs[0] if longs else flags[0]).lstrip("-").replace("-", "_")
        if not has_default:
            if action == "store_true":
                default, has_default = False, True
            elif action == "store_false":
                default, has_default = True, True
        self.ix.cli[dest] = CliArgument(tuple(flags), dest, default, has_default, action, node, type_bool)


UNKNOWN_EXPR = ast.Name("__gpulint_unknown__", ast.Load())

_ARITHMETIC = {ast.Mult: "Multiply", ast.Add: "Add", ast.Sub: "Subtract", ast.FloorDiv: "FloorDivide"}


def literal(node: ast.AST | None) -> Any:
    """The Python value of a literal expression, or UNKNOWN."""
    if node is None:
        return UNKNOWN
    cls = node.__class__
    if cls is ast.Constant:
        v = node.value
        if v is None or v.__class__ in (str, int, float, bool):
            return v
        return UNKNOWN  # bytes, complex numbers, Ellipsis
    if cls is ast.BinOp:
        # constant folding of plain arithmetic: max_wait=48 * 3600
        a, b = literal(node.left), literal(node.right)
        op = _ARITHMETIC.get(node.op.__class__)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
            try:
                if op == "Multiply":
                    return a * b
                if op == "Add":
                    return a + b
                if op == "Subtract":
                    return a - b
                if op == "FloorDivide" and b:
                    return a // b
            except OverflowError:
                return UNKNOWN
        if isinstance(a, str) and isinstance(b, str) and op == "Add":
            return a + b
        return UNKNOWN
    if cls is ast.UnaryOp and node.op.__class__ is ast.USub:
        v = literal(node.operand)
        return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else UNKNOWN
    if cls is ast.List or cls is ast.Tuple:
        vals = [literal(e) for e in node.elts]
        return UNKNOWN if any(v is UNKNOWN for v in vals) else vals
    if cls is ast.Dict:
        out = {}
        for k_node, v_node in zip(node.keys, node.values):
            if k_node is None:  # ``**other``
                return UNKNOWN
            k, v = literal(k_node), literal(v_node)
            if k is UNKNOWN or v is UNKNOWN:
                return UNKNOWN
            try:
                out[k] = v
            except TypeError:  # an unhashable key ([1]: 2) is an error at run time
                return UNKNOWN
        return out
    return UNKNOWN


def dict_items(node: ast.AST | None) -> list[tuple[ast.expr | None, ast.expr]] | None:
    """(key, value) nodes of a dict display (key None for ``**other``), else None."""
    if node.__class__ is not ast.Dict:
        return None
    return list(zip(node.keys, node.values))


def elements(node: ast.AST | None) -> list[ast.expr] | None:
    """The element nodes of a list or tuple display, else None."""
    if node.__class__ in (ast.List, ast.Tuple):
        return list(node.elts)
    return None


_CPU_WORDS = re.compile(r"""(==\s*["']cpu["']|["']cpu["']\s*(==|in\b)|\bno_cuda\b|\buse_cpu\b|\bcpu_only\b|\bon_cpu\b)""")
#: a test that the device is not the CPU (``device != "cpu"``, ``device not in ["cpu"]``): the body is the GPU's branch
_NOT_CPU = re.compile(r"""(!=\s*["']cpu["']|["']cpu["']\s*!=|\bnot\s+in\s*[\[\(]\s*["']cpu["'])""")
_IN_CPU = re.compile(r"""\bin\s*[\[\(]\s*["']cpu["']""")
_GPU_WORDS = re.compile(r"""(cuda\.is_available\(\)|cuda\.device_count\(\)|["']cuda["']\s*(==|in\b)|==\s*["']cuda["']|\buse_cuda\b|\bis_cuda\b|\.is_cuda\b|\buse_gpu\b|accelerator\.is_available\(\))""")
_MULTI = re.compile(r"""(device_count\(\)|\bn_gpus?\b|\bnum_gpus\b|\bworld_size\b|\bngpus?\b)\s*(>\s*1|>=\s*2)""")
_DEBUG = re.compile(r"""\b(debug|DEBUG|verbose|VERBOSE|is_debug|debug_mode|dry_run)\b""")


_OTHER_OS = re.compile(r"(sys\.platform|os\.name|platform\.system\(\))\s*(==|!=|\.startswith\(|in |not in )\s*[\(\[]?\s*['\"]"
                       r"(win32|win|nt|windows|darwin|cygwin)['\"]", re.I)


#: which part's branch an ``a and b`` body is in when its parts' branches differ: the one that runs least
_AND_PRIORITY = ("dead", "other_os", "cpu", "multi_gpu", "debug", "gpu")


def _module_constants(module: ast.Module, text: str) -> dict[str, ast.Constant]:
    """Names the module's own code (outside functions and classes) binds once, directly at its top level, to a
    literal, and that no function declares ``global`` (the only way a function rebinds a module name)."""
    counts: dict[str, int] = {}
    literal_of: dict[str, ast.Constant] = {}
    declared = set(re.findall(r"\bglobal[ \t]+([\w, \t]+)", text))
    declared = {n.strip() for group in declared for n in group.split(",")}
    todo = list(module.body)
    while todo:
        node = todo.pop()
        cls = node.__class__
        if cls in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef):
            continue
        if cls in (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.AsyncWith):
            targets = node.targets if cls is ast.Assign else [node.target] if cls in (ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor) \
                else [i.optional_vars for i in node.items if i.optional_vars is not None]
            for t in targets:
                for n in ast.walk(t):
                    if n.__class__ is ast.Name:
                        counts[n.id] = counts.get(n.id, 0) + 1
        for field_name in ("body", "orelse", "finalbody", "handlers"):
            todo.extend(getattr(node, field_name, None) or ())
    for stmt in module.body:
        if stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name \
                and stmt.value.__class__ is ast.Constant:
            literal_of[stmt.targets[0].id] = stmt.value
    return {n: v for n, v in literal_of.items() if counts.get(n) == 1 and n not in declared}


_FOLD_OPS = {ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Eq: operator.eq,
             ast.NotEq: operator.ne}


def guard_of(test: ast.expr, text: str) -> tuple[str | None, str | None]:
    """(guard of the body, guard of the else branch) of an ``if`` test: which runs only without a
    GPU, only with one (or several), only in a debug run, or never."""
    negated = False
    while test.__class__ is ast.UnaryOp and test.op.__class__ is ast.Not:
        negated = not negated
        test = test.operand
        text = text.strip()[3:].strip() if text.strip().startswith("not") else text
    lit = literal(test)
    if lit is False or lit == 0 and not isinstance(lit, bool) and lit is not UNKNOWN:
        return ("dead", None) if not negated else (None, "dead")
    if test.__class__ is ast.BoolOp:
        if test.op.__class__ is not ast.And or negated:
            return None, None  # `a or b`: neither branch is decided by one check alone
        # `cuda and RANK == -1 and device_count() > 1`: the body runs only where every part holds, so it is
        # in the branch of the most restrictive part; the else branch may be any part failing (undecided)
        bodies = {guard_of(part, ast.unparse(part))[0] for part in test.values} - {None}
        return next((g for g in _AND_PRIORITY if g in bodies), None), None
    body: str | None
    other: str | None
    if _OTHER_OS.search(text):
        # ``if sys.platform == "win32": backend = "gloo"``: a desktop's branch, never the Linux GPU host's
        body, other = ("other_os", None) if "!=" not in text and " not in " not in text else (None, "other_os")
    elif _MULTI.search(text):
        body, other = "multi_gpu", None
    elif _NOT_CPU.search(text):
        body, other = "gpu", "cpu"
    elif _CPU_WORDS.search(text) or _IN_CPU.search(text):
        body, other = "cpu", "gpu"
    elif _GPU_WORDS.search(text):
        body, other = "gpu", "cpu"
    elif _DEBUG.search(text):
        body, other = "debug", None
    else:
        return None, None
    return (other, body) if negated else (body, other)


def build_index(module: ast.Module, text: "SourceText | str") -> PyIndex:
    ix = PyIndex()
    _Indexer(ix, text if isinstance(text, SourceText) else SourceText(text)).walk(module)
    return ix


DTYPES = {
    "torch.bfloat16": "bf16",
    "torch.float16": "fp16",
    "torch.half": "fp16",
    "torch.float32": "fp32",
    "torch.float": "fp32",
    "torch.float8_e4m3fn": "fp8",
    "torch.float8_e5m2": "fp8",
    "jax.numpy.bfloat16": "bf16",
    "jax.numpy.float16": "fp16",
}
DTYPE_STRINGS = {"bfloat16": "bf16", "bf16": "bf16", "float16": "fp16", "fp16": "fp16", "half": "fp16", "float32": "fp32", "fp32": "fp32"}

_SCALARS = (str, int, float, bool, type(None), OneOf)
_PARSE_ARGS = {"parse_args", "parse_known_args", "parse_args_into_dataclasses", "parse_json_file", "parse_yaml_file", "parse_dict"}


class Evaluator:
    """Follows a value through simple assignments, argparse defaults and
    dataclass defaults in the same file. Returns a Python literal, a
    ``{"cli_arg": ...}`` marker (decided by the launcher), or UNKNOWN."""

    def __init__(self, index: PyIndex):
        self.ix = index

    def value(self, node: ast.AST | None, scope: str = "", depth: int = 0) -> Any:
        if node is None or depth > 8:
            return UNKNOWN
        lit = literal(node)
        if lit is not UNKNOWN:
            return lit
        cls = node.__class__
        if cls is ast.BinOp:
            a, b = self.value(node.left, scope, depth + 1), self.value(node.right, scope, depth + 1)
            op = node.op.__class__
            if isinstance(a, str) and isinstance(b, str) and op is ast.Add:
                return a + b
            if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)) and op in (ast.Mult, ast.Add):
                return a * b if op is ast.Mult else a + b
            return UNKNOWN
        if cls is ast.IfExp:
            return OneOf.of([self.value(node.body, scope, depth + 1), self.value(node.orelse, scope, depth + 1)])
        if cls is ast.Subscript:
            return self._subscript(node, scope, depth)
        if cls is ast.Call and dotted(node.func) == "getattr" and len(node.args) >= 2:
            return self._getattr(node, scope, depth)
        if cls is ast.JoinedStr:
            parts = []
            for p in node.values:
                if p.__class__ is ast.Constant and isinstance(p.value, str):
                    parts.append(p.value)
                elif p.__class__ is ast.FormattedValue and p.format_spec is None and p.conversion == -1:
                    v = self.value(p.value, scope, depth + 1)
                    if not isinstance(v, (str, int)) or isinstance(v, bool):
                        return UNKNOWN
                    parts.append(str(v))
                else:
                    return UNKNOWN
            return "".join(parts)
        text = dotted(node)
        if text:
            resolved = self._resolve(text)
            if resolved in DTYPES:
                return DTYPES[resolved]
            if "." not in text:
                return self._name(text, scope, depth, node)
            head, _, attr = text.rpartition(".")
            if "." not in head:
                return self._attribute(head, attr, scope, depth)
        return UNKNOWN

    def _subscript(self, node: ast.Subscript, scope: str, depth: int) -> Any:
        """``{"bf16": torch.bfloat16, "fp16": torch.float16}[key]``: the entry, or one of the entries."""
        table = node.value
        if table.__class__ is ast.Name:
            assigns = self._assigns(table.id, scope)
            table = assigns[0].value if len(assigns) == 1 else None
        if table.__class__ is not ast.Dict or node.slice.__class__ in (ast.Slice, ast.Tuple):
            return UNKNOWN
        entries = {}
        for k_node, v_node in zip(table.keys, table.values):
            if k_node is None:
                return UNKNOWN
            k = literal(k_node)
            if k is UNKNOWN:
                return UNKNOWN
            try:
                entries[k] = self.value(v_node, scope, depth + 1)
            except TypeError:
                return UNKNOWN
        key = self.value(node.slice, scope, depth + 1)
        if isinstance(key, OneOf):
            return OneOf.of([entries.get(k, UNKNOWN) for k in key.choices])
        if isinstance(key, dict) and "cli_arg" in key:  # a flag picks the entry: the default's, or any
            return OneOf.of(entries.values())
        return entries.get(key, UNKNOWN) if key is not UNKNOWN and not isinstance(key, (dict, list)) else UNKNOWN

    def _getattr(self, node: ast.Call, scope: str, depth: int) -> Any:
        """``getattr(torch, args.dtype)``: a dtype named by a string (or by a flag with a default)."""
        if self._resolve(dotted(node.args[0]) or "") != "torch":
            return UNKNOWN
        name = self.value(node.args[1], scope, depth + 1)
        if isinstance(name, str):
            return DTYPES.get(f"torch.{name}", UNKNOWN)
        if isinstance(name, OneOf):
            return OneOf.of([DTYPES.get(f"torch.{n}", UNKNOWN) if isinstance(n, str) else UNKNOWN for n in name.choices])
        if isinstance(name, dict) and "cli_arg" in name and isinstance(name.get("default"), str):
            return {**name, "default": DTYPES.get(f"torch.{name['default']}", name["default"])}
        return UNKNOWN

    def _resolve(self, text: str) -> str:
        h, _, rest = text.partition(".")
        if h in self.ix.imports:
            return self.ix.imports[h] + ("." + rest if rest else "")
        return text

    def _assigns(self, name: str, scope: str) -> list[Assign]:
        return self.ix.bindings(name, scope) or []

    def _name(self, name: str, scope: str, depth: int, use: ast.AST | None = None) -> Any:
        assigns = self.ix.bindings(name, scope, use)
        if assigns is None or (not assigns and name in self.ix.params.get(scope, ())):
            # a parameter no straight-line code rebinds: what the module's calls of the function pass
            if not self.ix.rebinds(name, scope):
                return self._argument_value(name, scope, depth)
            return UNKNOWN
        if not assigns:
            return UNKNOWN  # unbound here
        values = [self.value(a.value, a.scope, depth + 1) if a.value is not UNKNOWN_EXPR else UNKNOWN for a in assigns]
        first = values[0]
        if first is UNKNOWN or any(v is UNKNOWN for v in values):
            return UNKNOWN
        if any(v != first for v in values[1:]):
            # bound to different literals on different paths (``if local: t = "local" else: t = "ml.c5.xlarge"``):
            # one of them, decided at run time
            return OneOf.of(values) if all(isinstance(v, _SCALARS) for v in values) else UNKNOWN
        if isinstance(first, (dict, list)) and ((name, scope) in self.ix.mutated or (name, assigns[0].scope) in self.ix.mutated):
            return UNKNOWN  # hp = {...}; hp["bf16"] = 1: the literal is not what is passed on
        return first

    def _attribute(self, obj: str, attr: str, scope: str, depth: int) -> Any:
        """``args.bf16`` (argparse / HfArgumentParser) or ``cfg.bf16`` (dataclass instance)."""
        if obj in self.ix.params.get(scope, ()) and not self.ix.rebinds(obj, scope):
            return self._attribute_of_argument(obj, attr, scope, depth)
        for a in self._assigns(obj, scope):
            v = a.value
            if v is UNKNOWN_EXPR:
                # ``model_args, training_args = parser.parse_args_into_dataclasses()``
                return self._from_cli(attr)
            if v.__class__ is ast.Call:
                callee = dotted(v.func) or ""
                # ``get_parser().parse_args()``: the method's name decides, whatever builds the parser
                last = callee.split(".")[-1] if callee else (v.func.attr if v.func.__class__ is ast.Attribute else "")
                if last in _PARSE_ARGS:
                    return self._from_cli(attr)
                fields = self.ix.dataclass_fields.get(last)
                if fields is not None:
                    for kw in v.keywords:
                        if kw.arg == attr:
                            return self.value(kw.value, scope, depth + 1)
                    if attr in fields:
                        return self.value(fields[attr], "", depth + 1)
                    return UNKNOWN
        return UNKNOWN

    def _attribute_of_argument(self, param: str, attr: str, scope: str, depth: int) -> Any:
        """``args.bf16`` where ``args`` is a parameter (``def train(args)``, called as ``train(args)`` after
        ``args = parser.parse_args()``): the attribute of what every call in this module passes, when the
        calls agree; unknown when the function is not called here (another module's caller decides)."""
        args = self._arguments(param, scope, depth)
        if args is None or any(node.__class__ is not ast.Name for node, _ in args):
            return UNKNOWN
        values = [self._attribute(node.id, attr, at, depth + 1) for node, at in args]
        if any(v is UNKNOWN for v in values) or any(v != values[0] for v in values[1:]):
            return UNKNOWN
        return values[0]

    def _argument_value(self, param: str, scope: str, depth: int) -> Any:
        """A parameter's value from the calls of its function in this module (``get_estimator("ml.g5.12xlarge")``,
        or its default where a call leaves it out): one value when they agree, one of several scalars when they
        differ, unknown when the function is not called here."""
        args = self._arguments(param, scope, depth)
        if args is None:
            return UNKNOWN
        values = [self.value(node, at, depth + 1) for node, at in args]
        if any(v is UNKNOWN for v in values):
            return UNKNOWN
        if all(v == values[0] for v in values[1:]):
            return values[0]
        return OneOf.of(values) if all(isinstance(v, _SCALARS) for v in values) else UNKNOWN

    def _arguments(self, param: str, scope: str, depth: int) -> list[tuple[ast.expr, str]] | None:
        """(argument expression, the caller's scope) of `param` at every call of the module-level function
        `scope` in this module, its default standing in where a call leaves it out; None when there is no call,
        or a call passes it in a way that cannot be read (``*args``, ``**kw``)."""
        fn = self.ix.top_functions.get(scope)
        if fn is None or depth > 8 or self.ix.bodies.get(scope) is None:
            return None
        a = fn.args
        positional = [x.arg for x in a.posonlyargs + a.args]
        index = positional.index(param) if param in positional else None
        defaults = dict(zip(positional[len(positional) - len(a.defaults):], a.defaults))
        defaults.update({x.arg: d for x, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None})
        out = []
        for c in self.ix.function_calls(scope):
            node = c.kwarg(param)
            if node is None and index is not None and index < len(c.node.args):
                if any(x.__class__ is ast.Starred for x in c.node.args[:index + 1]):
                    return None
                node = c.node.args[index]
            if node is None:
                if any(kw.arg is None for kw in c.node.keywords) or any(x.__class__ is ast.Starred for x in c.node.args):
                    return None
                node = defaults.get(param)
                if node is None:
                    return None
                out.append((node, ""))  # a default is evaluated where the function is defined (module level)
                continue
            out.append((node, c.scope))
        return out or None

    def _from_cli(self, dest: str) -> Any:
        arg = self.ix.cli.get(dest)
        if arg is not None:
            marker = {"cli_arg": arg.flags[-1] if arg.flags else "--" + dest, "default": arg.default}
            if not arg.has_default or arg.default is UNKNOWN:
                # ``default=True if torch.cuda.get_device_capability()[0] == 8 else False``: only a launcher
                # that passes the flag decides it; without the flag it stays unknown
                marker.update(default=None, default_unknown=True)
            if arg.type_bool:
                marker["type_bool"] = True
            return marker
        for fields in self.ix.dataclass_fields.values():
            if dest in fields:
                d = self.value(fields[dest], "", 1)
                if d is UNKNOWN:
                    return UNKNOWN
                return {"cli_arg": "--" + dest, "default": d}
        return UNKNOWN
