"""One pass over a Python module that every Python fact and rule shares.

The index records imports (so ``import torch as t`` resolves ``t.autocast`` to
``torch.autocast``), every call with its resolved qualified name and arguments,
assignments (to follow a value through ``x = ...``), argparse arguments and
dataclass field defaults. Rules then ask questions of the index instead of
walking the tree again: one visitor pass in all, whatever the number of rules.

Qualified names:
- ``torch.autocast`` for a call of an imported name;
- ``transformers.Trainer().train`` for a method called on a variable assigned
  from ``Trainer(...)`` in the same scope or module;
- ``None`` where the callee cannot be resolved (``loss.backward()``); the call
  is still recorded with its ``attr`` (``backward``) and ``receiver`` text.
"""
from __future__ import annotations

import re

from dataclasses import dataclass, field
from typing import Any, Iterator

import libcst as cst

UNKNOWN = object()  # a value that cannot be decided statically


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
    node: cst.Call
    qualname: str | None
    attr: str  # last name of the callee (``backward`` in ``loss.backward()``)
    receiver: str  # source text of the receiver for method calls ("" otherwise)
    func: str  # the callee as written (``t.autocast``)
    scope: str  # enclosing function ("" = module level)
    in_with: bool = False
    decorator: bool = False
    assigned_to: str = ""  # ``x`` in ``x = f(...)``
    #: branches the call sits in (outermost first): "gpu" / "cpu" (a CUDA check's branches), "multi_gpu"
    #: (more than one GPU), "debug" (a debug or verbose switch), "dead" (``if False:``)
    guards: tuple[str, ...] = ()

    def kwarg(self, name: str) -> cst.BaseExpression | None:
        for arg in self.node.args:
            if arg.keyword is not None and arg.keyword.value == name:
                return arg.value
        return None

    def has_kwarg(self, name: str) -> bool:
        return self.kwarg(name) is not None

    def positional(self, i: int) -> cst.BaseExpression | None:
        pos = [a.value for a in self.node.args if a.keyword is None and not a.star]
        return pos[i] if i < len(pos) else None

    @property
    def has_star_kwargs(self) -> bool:
        return any(a.star == "**" for a in self.node.args)

    @property
    def has_star_args(self) -> bool:
        return any(a.star == "*" for a in self.node.args)


@dataclass
class Assign:
    target: str  # dotted text: ``x``, ``self.model``, ``torch.backends.cuda.matmul.allow_tf32``
    resolved: str  # target with import aliases resolved
    value: cst.BaseExpression
    scope: str
    node: cst.CSTNode


@dataclass
class CliArgument:
    flags: tuple[str, ...]  # ("--bf16",)
    dest: str
    default: Any  # literal default, None when absent, UNKNOWN when not literal
    has_default: bool
    action: str | None
    node: cst.Call


@dataclass
class PyIndex:
    imports: dict[str, str] = field(default_factory=dict)  # local name -> qualified
    imported_modules: set[str] = field(default_factory=set)
    relative_imports: list[tuple[int, str]] = field(default_factory=list)  # (level, module)
    calls: list[Call] = field(default_factory=list)
    assigns: list[Assign] = field(default_factory=list)
    cli: dict[str, CliArgument] = field(default_factory=dict)  # dest -> argument
    dataclass_fields: dict[str, dict[str, cst.BaseExpression]] = field(default_factory=dict)
    var_types: dict[str, str] = field(default_factory=dict)  # ``trainer`` -> ``transformers.Trainer``
    functions: set[str] = field(default_factory=set)
    #: module-level functions and every class by name (first definition), with their base classes' qualified names
    top_functions: dict[str, cst.FunctionDef] = field(default_factory=dict)
    classes: dict[str, tuple[cst.ClassDef, tuple[str, ...]]] = field(default_factory=dict)
    main_guard: bool = False

    # -- questions ------------------------------------------------------------------
    def calls_to(self, *qualnames: str) -> Iterator[Call]:
        wanted = set(qualnames)
        for c in self.calls:
            if c.qualname in wanted:
                yield c

    def calls_matching(self, predicate) -> Iterator[Call]:
        return (c for c in self.calls if predicate(c))

    def method_calls(self, attr: str) -> Iterator[Call]:
        return (c for c in self.calls if c.attr == attr and c.receiver)

    def imports_any(self, *prefixes: str) -> bool:
        return any(m == p or m.startswith(p + ".") for m in self.imported_modules for p in prefixes)

    def assignments_to(self, resolved: str) -> list[Assign]:
        return [a for a in self.assigns if a.resolved == resolved]


def dotted(node: cst.BaseExpression) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


_DATACLASS_DECORATORS = {"dataclasses.dataclass", "dataclass", "pydantic.dataclasses.dataclass", "attr.s", "attrs.define"}


class _Indexer(cst.CSTVisitor):
    def __init__(self, index: PyIndex, module: cst.Module):
        self.ix = index
        self.module = module
        self.scope: list[str] = []
        self.with_calls: set[int] = set()
        self.decorator_calls: set[int] = set()
        self.assign_target: dict[int, str] = {}
        self.class_stack: list[tuple[str, bool]] = []
        self.branch_guard: dict[int, str | None] = {}  # id(body or orelse node) -> guard of that branch
        self.guards: list[tuple[int, str]] = []  # (id of the branch node, guard) while inside it

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

    def _code(self, node: cst.CSTNode) -> str:
        try:
            return self.module.code_for_node(node)
        except Exception:
            return ""

    # -- imports ---------------------------------------------------------------------
    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            name = dotted(alias.name) or ""
            self.ix.imported_modules.add(name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self.ix.imports[alias.asname.name.value] = name
            else:
                head = name.split(".")[0]
                self.ix.imports[head] = head

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted(node.module) if node.module is not None else ""
        level = len(node.relative)
        if level:
            self.ix.relative_imports.append((level, module or ""))
            if isinstance(node.names, cst.ImportStar):
                return
            for alias in node.names:
                self.ix.relative_imports.append((level, f"{module}.{dotted(alias.name)}" if module else dotted(alias.name) or ""))
            return
        if module:
            self.ix.imported_modules.add(module)
        if isinstance(node.names, cst.ImportStar):
            return
        for alias in node.names:
            name = dotted(alias.name) or ""
            local = alias.asname.name.value if alias.asname is not None and isinstance(alias.asname.name, cst.Name) else name
            self.ix.imports[local] = f"{module}.{name}" if module else name
            self.ix.imported_modules.add(f"{module}.{name}")

    # -- scopes ------------------------------------------------------------------------
    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not self.scope and not self.class_stack:
            self.ix.top_functions.setdefault(node.name.value, node)
        self.scope.append(node.name.value)
        self.ix.functions.add(node.name.value)
        for dec in node.decorators:
            if isinstance(dec.decorator, cst.Call):
                self.decorator_calls.add(id(dec.decorator))

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self.scope.pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        is_dc = False
        for dec in node.decorators:
            d = dec.decorator.func if isinstance(dec.decorator, cst.Call) else dec.decorator
            text = dotted(d)
            if text and (self.resolve(text) in _DATACLASS_DECORATORS or text in _DATACLASS_DECORATORS):
                is_dc = True
        bases = tuple(self.resolve(t) or t for t in (dotted(b.value) for b in node.bases) if t)
        self.ix.classes.setdefault(node.name.value, (node, bases))
        self.class_stack.append((node.name.value, is_dc))
        if is_dc:
            self.ix.dataclass_fields.setdefault(node.name.value, {})

    def leave_ClassDef(self, original_node: cst.ClassDef) -> None:
        self.class_stack.pop()

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self.class_stack and not self.scope and self.class_stack[-1][1] and isinstance(node.target, cst.Name):
            if node.value is not None:
                value = node.value
                # field(default=...) carries the default inside
                if isinstance(value, cst.Call) and (dotted(value.func) or "").split(".")[-1] == "field":
                    for arg in value.args:
                        if arg.keyword is not None and arg.keyword.value == "default":
                            value = arg.value
                            break
                    else:
                        value = None
                if value is not None:
                    self.ix.dataclass_fields[self.class_stack[-1][0]][node.target.value] = value
            return
        if node.value is not None:
            self._record_assign(node.target, node.value, node)

    # -- with / decorators -------------------------------------------------------------
    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            if isinstance(item.item, cst.Call):
                self.with_calls.add(id(item.item))

    def visit_If(self, node: cst.If) -> None:
        self._enter_branch(node)  # an `elif` is the orelse branch of the `if` before it
        if not self.scope and isinstance(node.test, cst.Comparison):
            text = self._code(node.test)
            if "__name__" in text and "__main__" in text:
                self.ix.main_guard = True
        body, orelse = guard_of(node.test, self._code(node.test))
        self.branch_guard[id(node.body)] = body
        if node.orelse is not None:
            self.branch_guard[id(node.orelse)] = orelse

    def leave_If(self, original_node: cst.If) -> None:
        self._leave_branch(original_node)

    def _enter_branch(self, node: cst.CSTNode) -> None:
        g = self.branch_guard.pop(id(node), None)
        if g:
            self.guards.append((id(node), g))

    def _leave_branch(self, node: cst.CSTNode) -> None:
        if self.guards and self.guards[-1][0] == id(node):
            self.guards.pop()

    visit_IndentedBlock = visit_SimpleStatementSuite = visit_Else = _enter_branch
    leave_IndentedBlock = leave_SimpleStatementSuite = leave_Else = _leave_branch

    # -- assignments ---------------------------------------------------------------------
    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            self._record_assign(t.target, node.value, node)

    def _record_assign(self, target: cst.BaseExpression, value: cst.BaseExpression, node: cst.CSTNode) -> None:
        scope = self.scope[-1] if self.scope else ""
        if isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                text = dotted(el.value)
                if text:
                    self.ix.assigns.append(Assign(text, text, UNKNOWN_EXPR, scope, node))
            return
        text = dotted(target)
        if not text:
            return
        resolved = self.resolve(text) or text
        self.ix.assigns.append(Assign(text, resolved, value, scope, node))
        if isinstance(value, cst.Call):
            self.assign_target[id(value)] = text
            q = self.resolve(dotted(value.func))
            if q and "." not in text:
                self.ix.var_types[text] = q

    # -- calls -------------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        text = dotted(func)
        attr = ""
        receiver = ""
        if isinstance(func, cst.Attribute):
            attr = func.attr.value
            receiver = dotted(func.value) or self._code(func.value)
        elif isinstance(func, cst.Name):
            attr = func.value
        qual = self.resolve(text) if text else None
        if qual is None and isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
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
            guards=tuple(g for _, g in self.guards),
        )
        self.ix.calls.append(call)
        if attr == "add_argument":
            self._record_cli(node)

    def _record_cli(self, node: cst.Call) -> None:
        flags = []
        for arg in node.args:
            if arg.keyword is None and isinstance(arg.value, cst.SimpleString):
                flags.append(arg.value.evaluated_value)
        flags = [f for f in flags if isinstance(f, str)]
        if not flags:
            return
        dest = None
        default: Any = None
        has_default = False
        action = None
        for arg in node.args:
            if arg.keyword is None:
                continue
            key = arg.keyword.value
            if key == "dest":
                d = literal(arg.value)
                dest = d if isinstance(d, str) else None
            elif key == "default":
                has_default = True
                default = literal(arg.value)
            elif key == "action":
                a = literal(arg.value)
                action = a if isinstance(a, str) else None
        if dest is None:
            longs = [f for f in flags if f.startswith("--")]
            dest = (longs[0] if longs else flags[0]).lstrip("-").replace("-", "_")
        if not has_default:
            if action == "store_true":
                default, has_default = False, True
            elif action == "store_false":
                default, has_default = True, True
        self.ix.cli[dest] = CliArgument(tuple(flags), dest, default, has_default, action, node)


UNKNOWN_EXPR = cst.Name("__gpulint_unknown__")


def literal(node: cst.BaseExpression | None) -> Any:
    """The Python value of a literal expression, or UNKNOWN."""
    if node is None:
        return UNKNOWN
    if isinstance(node, (cst.SimpleString, cst.ConcatenatedString)):
        try:
            v = node.evaluated_value
            return v if isinstance(v, str) else UNKNOWN
        except Exception:
            return UNKNOWN
    if isinstance(node, cst.Integer):
        try:
            return int(node.value.replace("_", ""), 0)
        except ValueError:
            return UNKNOWN
    if isinstance(node, cst.Float):
        try:
            return float(node.value.replace("_", ""))
        except ValueError:
            return UNKNOWN
    if isinstance(node, cst.Name):
        return {"True": True, "False": False, "None": None}.get(node.value, UNKNOWN)
    if isinstance(node, cst.BinaryOperation):
        # constant folding of plain arithmetic: max_wait=48 * 3600
        a, b = literal(node.left), literal(node.right)
        if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool) and not isinstance(b, bool):
            op = type(node.operator).__name__
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
        if isinstance(a, str) and isinstance(b, str) and isinstance(node.operator, cst.Add):
            return a + b
        return UNKNOWN
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        v = literal(node.expression)
        return -v if isinstance(v, (int, float)) and not isinstance(v, bool) else UNKNOWN
    if isinstance(node, (cst.List, cst.Tuple)):
        vals = [literal(e.value) for e in node.elements]
        return UNKNOWN if any(v is UNKNOWN for v in vals) else vals
    if isinstance(node, cst.Dict):
        out = {}
        for el in node.elements:
            if not isinstance(el, cst.DictElement):
                return UNKNOWN
            k, v = literal(el.key), literal(el.value)
            if k is UNKNOWN or v is UNKNOWN:
                return UNKNOWN
            out[k] = v
        return out
    return UNKNOWN


_CPU_WORDS = re.compile(r"""(==\s*["']cpu["']|["']cpu["']\s*(==|in\b)|\bno_cuda\b|\buse_cpu\b|\bcpu_only\b|\bon_cpu\b)""")
_GPU_WORDS = re.compile(r"""(cuda\.is_available\(\)|cuda\.device_count\(\)|["']cuda["']\s*(==|in\b)|==\s*["']cuda["']|\buse_cuda\b|\bis_cuda\b|\.is_cuda\b|\buse_gpu\b|accelerator\.is_available\(\))""")
_MULTI = re.compile(r"""(device_count\(\)|\bn_gpus?\b|\bnum_gpus\b|\bworld_size\b|\bngpus?\b)\s*(>\s*1|>=\s*2)""")
_DEBUG = re.compile(r"""\b(debug|DEBUG|verbose|VERBOSE|is_debug|debug_mode|dry_run)\b""")


def guard_of(test: cst.BaseExpression, text: str) -> tuple[str | None, str | None]:
    """(guard of the body, guard of the else branch) of an ``if`` test: which runs only without a
    GPU, only with one (or several), only in a debug run, or never."""
    negated = False
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        negated = not negated
        test = test.expression
        text = text.strip()[3:].strip() if text.strip().startswith("not") else text
    lit = literal(test)
    if lit is False or lit == 0 and not isinstance(lit, bool) and lit is not UNKNOWN:
        return ("dead", None) if not negated else (None, "dead")
    if isinstance(test, cst.BooleanOperation):
        return None, None  # `a and b`: neither branch is decided by one check alone
    body: str | None
    other: str | None
    if _MULTI.search(text):
        body, other = "multi_gpu", None
    elif _CPU_WORDS.search(text):
        body, other = "cpu", "gpu"
    elif _GPU_WORDS.search(text):
        body, other = "gpu", "cpu"
    elif _DEBUG.search(text):
        body, other = "debug", None
    else:
        return None, None
    return (other, body) if negated else (body, other)


_FIELDS: dict[type, tuple[str, ...]] = {}


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    names = _FIELDS.get(type(node))
    if names is None:
        import dataclasses

        names = _FIELDS[type(node)] = tuple(f.name for f in dataclasses.fields(node))
    kids: list[cst.CSTNode] = []
    for name in names:
        v = getattr(node, name)
        if isinstance(v, cst.CSTNode):
            kids.append(v)
        elif isinstance(v, (list, tuple)):
            kids.extend(x for x in v if isinstance(x, cst.CSTNode))
    return kids


def walk(module: cst.Module, visitor: cst.CSTVisitor) -> None:
    """Pre-order walk calling ``visit_<Node>``/``leave_<Node>`` like libcst's
    own ``Module.visit``, but read-only: libcst's visit rebuilds every node
    (it serves transformers too) and costs as much as the parse; this walk
    costs about a fifth of it."""
    handlers: dict[type, tuple] = {}
    stack: list[tuple[cst.CSTNode, bool]] = [(module, False)]
    while stack:
        node, leaving = stack.pop()
        cls = type(node)
        h = handlers.get(cls)
        if h is None:
            name = cls.__name__
            h = handlers[cls] = (getattr(visitor, f"visit_{name}", None), getattr(visitor, f"leave_{name}", None))
        if leaving:
            h[1](node)
            continue
        if h[0] is not None and h[0](node) is False:
            continue
        if h[1] is not None:
            stack.append((node, True))
        stack.extend((c, False) for c in reversed(_children(node)))


def build_index(module: cst.Module) -> PyIndex:
    ix = PyIndex()
    walk(module, _Indexer(ix, module))
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

_PARSE_ARGS = {"parse_args", "parse_known_args", "parse_args_into_dataclasses", "parse_json_file", "parse_yaml_file", "parse_dict"}


class Evaluator:
    """Follows a value through simple assignments, argparse defaults and
    dataclass defaults in the same file. Returns a Python literal, a
    ``{"cli_arg": ...}`` marker (decided by the launcher), or UNKNOWN."""

    def __init__(self, index: PyIndex):
        self.ix = index

    def value(self, node: cst.BaseExpression | None, scope: str = "", depth: int = 0) -> Any:
        if node is None or depth > 8:
            return UNKNOWN
        lit = literal(node)
        if lit is not UNKNOWN:
            return lit
        if isinstance(node, cst.BinaryOperation):
            a, b = self.value(node.left, scope, depth + 1), self.value(node.right, scope, depth + 1)
            if isinstance(a, str) and isinstance(b, str) and isinstance(node.operator, cst.Add):
                return a + b
            if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (a, b)) and isinstance(node.operator, (cst.Multiply, cst.Add)):
                return a * b if isinstance(node.operator, cst.Multiply) else a + b
            return UNKNOWN
        if isinstance(node, cst.IfExp):
            return OneOf.of([self.value(node.body, scope, depth + 1), self.value(node.orelse, scope, depth + 1)])
        if isinstance(node, cst.Subscript):
            return self._subscript(node, scope, depth)
        if isinstance(node, cst.Call) and dotted(node.func) == "getattr" and len(node.args) >= 2:
            return self._getattr(node, scope, depth)
        if isinstance(node, cst.FormattedString):
            parts = []
            for p in node.parts:
                if isinstance(p, cst.FormattedStringText):
                    parts.append(p.value)
                elif isinstance(p, cst.FormattedStringExpression) and p.format_spec is None and p.conversion is None:
                    v = self.value(p.expression, scope, depth + 1)
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
                return self._name(text, scope, depth)
            head, _, attr = text.rpartition(".")
            if "." not in head:
                return self._attribute(head, attr, scope, depth)
        return UNKNOWN

    def _subscript(self, node: cst.Subscript, scope: str, depth: int) -> Any:
        """``{"bf16": torch.bfloat16, "fp16": torch.float16}[key]``: the entry, or one of the entries."""
        table = node.value
        if isinstance(table, cst.Name):
            assigns = self._assigns(table.value, scope)
            table = assigns[0].value if len(assigns) == 1 else None
        if not isinstance(table, cst.Dict) or len(node.slice) != 1 or not isinstance(node.slice[0].slice, cst.Index):
            return UNKNOWN
        entries = {}
        for el in table.elements:
            if not isinstance(el, cst.DictElement):
                return UNKNOWN
            k = literal(el.key)
            if k is UNKNOWN:
                return UNKNOWN
            entries[k] = self.value(el.value, scope, depth + 1)
        key = self.value(node.slice[0].slice.value, scope, depth + 1)
        if isinstance(key, OneOf):
            return OneOf.of([entries.get(k, UNKNOWN) for k in key.choices])
        if isinstance(key, dict) and "cli_arg" in key:  # a flag picks the entry: the default's, or any
            return OneOf.of(entries.values())
        return entries.get(key, UNKNOWN) if key is not UNKNOWN and not isinstance(key, (dict, list)) else UNKNOWN

    def _getattr(self, node: cst.Call, scope: str, depth: int) -> Any:
        """``getattr(torch, args.dtype)``: a dtype named by a string (or by a flag with a default)."""
        if self._resolve(dotted(node.args[0].value) or "") != "torch":
            return UNKNOWN
        name = self.value(node.args[1].value, scope, depth + 1)
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
        local = [a for a in self.ix.assigns if a.target == name and a.scope == scope]
        return local or [a for a in self.ix.assigns if a.target == name and a.scope == ""]

    def _name(self, name: str, scope: str, depth: int) -> Any:
        assigns = self._assigns(name, scope)
        if not assigns:
            return UNKNOWN
        values = [self.value(a.value, a.scope, depth + 1) if a.value is not UNKNOWN_EXPR else UNKNOWN for a in assigns]
        first = values[0]
        if first is UNKNOWN or any(v != first for v in values[1:]):
            return UNKNOWN
        return first

    def _attribute(self, obj: str, attr: str, scope: str, depth: int) -> Any:
        """``args.bf16`` (argparse / HfArgumentParser) or ``cfg.bf16`` (dataclass instance)."""
        for a in self._assigns(obj, scope):
            v = a.value
            if v is UNKNOWN_EXPR:
                # ``model_args, training_args = parser.parse_args_into_dataclasses()``
                return self._from_cli(attr)
            if isinstance(v, cst.Call):
                callee = dotted(v.func) or ""
                last = callee.split(".")[-1]
                if last in _PARSE_ARGS:
                    return self._from_cli(attr)
                fields = self.ix.dataclass_fields.get(last)
                if fields is not None:
                    for arg in v.args:
                        if arg.keyword is not None and arg.keyword.value == attr:
                            return self.value(arg.value, scope, depth + 1)
                    if attr in fields:
                        return self.value(fields[attr], "", depth + 1)
                    return UNKNOWN
        return UNKNOWN

    def _from_cli(self, dest: str) -> Any:
        arg = self.ix.cli.get(dest)
        if arg is not None:
            if not arg.has_default or arg.default is UNKNOWN:
                return UNKNOWN
            return {"cli_arg": arg.flags[-1] if arg.flags else "--" + dest, "default": arg.default}
        for fields in self.ix.dataclass_fields.values():
            if dest in fields:
                d = self.value(fields[dest], "", 1)
                if d is UNKNOWN:
                    return UNKNOWN
                return {"cli_arg": "--" + dest, "default": d}
        return UNKNOWN
