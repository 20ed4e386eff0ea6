"""What every pass over a Python file shares: the per-file context and the small value helpers.

`Facts` is handed to each subject pass (training, precision, loaders, ...): it holds the source, its index,
the evaluator, the facts read so far (`out`, in the order the passes run) and the caches several passes
fill once per file. It also reads a call's arguments the way every pass must, through ``**settings``
dicts, and conditions a mixed-precision fact on the ``if`` around it (``add``).

The helpers below it are the ones more than one subject module calls. This module is a leaf among the
modules of the Python reader: it imports the index and the core model, never a subject module, so any
pass can use it without an import cycle.
"""
from __future__ import annotations

import ast
from typing import Any

from gpulint.core.facts import is_cli
from gpulint.core.model import Fact
from gpulint.core.sources import Source
from gpulint.read.python.index import UNKNOWN, Call, Evaluator, OneOf, PyIndex, dotted, guard_of, string

#: a literal budget this short is a demo or smoke test: nothing of it is worth a GPU-efficiency change
#: (benchmark.py reads a script's own budget with it, frameworks/lightning.py a Lightning Trainer's)
DEMO_MAX_STEPS = 100


# -- the per-file context ----------------------------------------------------------------------------
def _main_test(test: ast.expr) -> bool:
    """``__name__ == "__main__"`` (either way round)."""
    if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.ops[0].__class__ is not ast.Eq:
        return False
    sides = [test.left, test.comparators[0]]
    return any(n.__class__ is ast.Name and n.id == "__name__" for n in sides) and \
        any(n.__class__ is ast.Constant and n.value == "__main__" for n in sides)


class Facts:
    """One file being read: its source and index, the facts read so far (in order), per-file caches, and how
    a call's arguments are read (``val``, ``present``, ``kwarg``, ``opaque_kwargs``) and a fact recorded (``add``)."""

    def __init__(self, source: Source, ix: PyIndex):
        self.src = source
        self.ix = ix
        self.ev = Evaluator(ix)
        self.out: list[Fact] = []
        self.getitem_classes: list[tuple[ast.ClassDef, ast.FunctionDef, bool]] | None = None  # see datasets._getitem_classes
        self._reads: dict[str, list[ast.AST]] | None = None  # see reads
        self.peeked: dict[int, str] | None = None  # see loaders._read_without_training

    def reads(self, name: str) -> list[ast.AST]:
        """The nodes that read `name` in the file: ``x`` (a Name loaded), or ``.attr`` for any attribute ``o.attr``
        loaded; indexed once per file."""
        if self._reads is None:
            index: dict[str, list[ast.AST]] = {}
            for node in ast.walk(self.src.syntax) if self.src.syntax is not None else ():
                if node.__class__ is ast.Name and node.ctx.__class__ is ast.Load:
                    index.setdefault(node.id, []).append(node)
                elif node.__class__ is ast.Attribute and node.ctx.__class__ is ast.Load:
                    index.setdefault("." + node.attr, []).append(node)
            self._reads = index
        return self._reads.get(name, [])

    def add(self, kind: str, value: Any, node: ast.AST, key: str = "", **attrs: Any) -> None:
        if kind == "precision" and isinstance(value, dict) and value.get("enabled") is True:
            value = self._conditioned(value, node)
            if value is None:
                return  # in a branch that never runs
        self.out.append(Fact(kind, value, self.src.node_loc(node), key, "", attrs))

    def _conditioned(self, value: dict, node: ast.AST) -> dict | None:
        """A mixed-precision mechanism inside ``if args.amp:`` (or ``if self.use_fp16:``) is on only where that
        test holds: its ``enabled`` becomes the flag (resolved against the launchers) or undecided. Tests that
        are GPU/CPU checks, debug switches or OS branches are the guards' business, not this."""
        c = self.ix.call_at(node)
        if c is None or not c.conditions:
            return value
        decided: list[Any] = []
        for test, side in c.conditions:
            parts = list(test.values) if test.__class__ is ast.BoolOp and test.op.__class__ is ast.And and side else [test]
            # device, OS and debug checks are the guards'; ``if __name__ == "__main__":`` is the script running
            parts = [p for p in parts if not any(guard_of(p, ast.unparse(p))) and not _main_test(p)]
            for part in parts:
                negated = False
                while part.__class__ is ast.UnaryOp and part.op.__class__ is ast.Not:
                    part, negated = part.operand, not negated
                compared = self._flag_compared(part, c.scope)
                if compared is not None:
                    # ``if args.precision == "amp_bf16":`` (or != "fp32", in (...)): on where the flag's value passes
                    decided.append({**compared, "negate": compared["negate"] != (negated or not side)})
                    continue
                v = self.ev.value(part, c.scope) if part.__class__ in (ast.Name, ast.Attribute) else UNKNOWN
                if isinstance(v, bool):
                    if (v != negated) != side:
                        return None  # ``USE_AMP = False`` ... ``if USE_AMP:``: the branch never runs
                    continue
                if is_cli(v) and side and not negated and len(parts) == 1:
                    decided.append(v)
                    continue
                return {**value, "enabled": None, "guarded": True}  # a condition gpulint cannot decide
        if len(decided) == 1:
            return {**value, "enabled": decided[0], "guarded": True}
        return value if not decided else {**value, "enabled": None, "guarded": True}

    def _flag_compared(self, test: ast.expr, scope: str) -> dict | None:
        """``args.precision == "bf16"`` / ``!= "fp32"`` / ``in ("amp", "amp_bf16")``: the flag's marker with the words
        that make the test true (``one_of``; ``negate`` for != / not in), resolved per launcher; else None."""
        if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.left.__class__ not in (ast.Name, ast.Attribute):
            return None
        op, right = test.ops[0], test.comparators[0]
        if op.__class__ in (ast.Eq, ast.NotEq) and right.__class__ is ast.Constant and isinstance(right.value, str):
            words = [right.value]
        elif op.__class__ in (ast.In, ast.NotIn) and right.__class__ in (ast.Tuple, ast.List, ast.Set) and \
                all(e.__class__ is ast.Constant and isinstance(e.value, str) for e in right.elts):
            words = [e.value for e in right.elts]
        else:
            return None
        marker = self.ev.value(test.left, scope)
        if not is_cli(marker):
            return None
        return {**marker, "one_of": words, "negate": op.__class__ in (ast.NotEq, ast.NotIn)}

    def val(self, call: Call, kw: str | None = None, pos: int | None = None) -> Any:
        node = self.kwarg(call, kw) if kw else None
        if node is None and pos is not None:
            node = call.positional(pos)
        if node is None:
            return UNKNOWN
        return self.ev.value(node, call.scope)

    def present(self, call: Call, kw: str) -> bool:
        return self.kwarg(call, kw) is not None

    def kwarg(self, call: Call, kw: str) -> ast.expr | None:
        """A keyword argument, also when it comes in a ``**settings`` dict literal (``settings = dict(...)``
        or ``{...}`` assigned once in the same scope or at module level)."""
        node = call.kwarg(kw)
        if node is not None:
            return node
        for table in self._star_dicts(call) or ():
            if kw in table:
                return table[kw]
        return None

    def opaque_kwargs(self, call: Call) -> bool:
        """``**kwargs`` whose keys cannot be read: any keyword may be set there."""
        return call.has_star_kwargs and self._star_dicts(call) is None

    def _star_dicts(self, call: Call) -> list[dict[str, ast.expr]] | None:
        out = []
        for kw in call.node.keywords:
            if kw.arg is not None:
                continue
            table = _dict_literal(kw.value, self.ix, call.scope)
            if table is None:
                return None
            out.append(table)
        return out


def _dict_literal(node: ast.expr, ix: PyIndex, scope: str, depth: int = 0) -> dict[str, ast.expr] | None:
    """Keys and value nodes of ``{"k": v}`` / ``dict(k=v)`` (possibly through one name), else None."""
    if depth > 3:
        return None
    if isinstance(node, ast.Name):
        # rebound (a notebook's cells): the binding that reaches this use; a parameter: what the caller passes
        assigns = ix.bindings(node.id, scope, node)
        if not assigns or len(assigns) != 1 or not isinstance(assigns[0].value, ast.expr):
            return None
        if (node.id, assigns[0].scope) in ix.mutated or (node.id, scope) in ix.mutated:
            return None  # changed after it was built (hp["bf16"] = 1, hp.update(...)): its keys are not the literal's
        return _dict_literal(assigns[0].value, ix, assigns[0].scope, depth + 1)
    if isinstance(node, ast.Dict):
        out: dict[str, ast.expr] = {}
        for k, v in zip(node.keys, node.values):
            key = string(k)
            if key is None:  # ``**other`` or a key that is not a string literal
                return None
            out[key] = v
        return out
    if isinstance(node, ast.Call) and dotted(node.func) == "dict" and len(node.args) <= 1:
        # dict(k=v), dict(base, k=v), dict(**base, k=v): the readable parts merged in order, else unreadable
        merged: dict[str, ast.expr] = {}
        parts = [(None, a) for a in node.args] + [(k.arg, k.value) for k in node.keywords]
        for key, value in parts:
            if key is not None:
                merged[key] = value
                continue
            inner = _dict_literal(value, ix, scope, depth + 1)
            if inner is None:
                return None
            merged.update(inner)
        return merged
    return None


# -- helpers more than one subject module calls (each says which, so it is clear why it is here) --------
def norm(v: Any) -> Any:
    """A value as a fact may hold it: unknown (and a run-time choice among several) is None."""
    return None if v is UNKNOWN or isinstance(v, OneOf) else v


def qualified(f: Facts, node: ast.expr | None) -> str:
    """The qualified name of an expression (or of a call's function) through the file's imports:
    ``nn.Linear`` -> ``torch.nn.Linear``; the text itself when its head is not imported. (precision, loaders,
    models, nemo_run, frameworks/hf)"""
    text = dotted(node.func if isinstance(node, ast.Call) else node) or ""
    head, _, rest = text.partition(".")
    return (f.ix.imports.get(head, head) + ("." + rest if rest else "")) if head in f.ix.imports else text


def read_again(f: Facts, name: str) -> bool:
    """Is `name` (``device``, or ``self.device``: any ``.device`` attribute) read anywhere in the file?
    (devices, precision, models)"""
    return bool(f.reads("." + name.split(".", 1)[1] if name.startswith("self.") else name))


def classes_around(ix: PyIndex, c: Call) -> list[tuple[ast.ClassDef, tuple[str, ...]]]:
    """The classes of the module (with their bases' qualified names) whose body holds the call, outermost first.
    (owner, training)"""
    line = c.node.lineno
    return sorted(((node, bases) for node, bases in ix.classes.values() if node.lineno <= line <= (node.end_lineno or node.lineno)),
                  key=lambda nb: nb[0].lineno)


def owner(ix: PyIndex, c: Call) -> dict:
    """The function and class a training call sits in (``train_one_epoch``, ``Trainer.run``): what a script
    of the repository must call to run this training (see the ``invokes`` facts). (training, loaders)"""
    inside = [node for node, _ in classes_around(ix, c)]
    cls = max(inside, key=lambda n: n.lineno).name if inside else ""
    # what of the module leads to that function or class (``main`` calling ``train`` building ``Trainer``): a script
    # that imports the module runs this training only by calling one of them, unless module-level code does
    names = {n for n in (c.scope, cls) if n}
    if not names:
        return {"function": c.scope, "cls": cls}
    callers, on_import = ix.reached_from(names)
    return {"function": c.scope, "cls": cls, **({} if on_import else {"reached_from": sorted(callers)[:40]})}


def autocast_device(f: Facts, c: Call):
    """The device an autocast context casts on: fixed by ``torch.cuda.amp.autocast``/``torch.cpu.amp.autocast``,
    else ``device_type`` (first positional) of ``torch.autocast``/``torch.amp.autocast``, possibly UNKNOWN or a OneOf.
    (precision, and devices for CPU autocast)"""
    if c.qualname == "torch.cuda.amp.autocast":
        return "cuda"
    if c.qualname == "torch.cpu.amp.autocast":
        return "cpu"
    return f.val(c, "device_type", 0)


def moves_to_device(fn: ast.AST) -> bool:
    """``fn`` copies tensors to an accelerator: ``.cuda()``, or ``.to(...)`` with a device (``.to(device)``,
    ``.to("cuda")``, ``.to(device=...)``); ``.to(memory_format=...)`` and ``.to(torch.float16)`` or ``.to(dtype=...)``
    only change the layout or dtype, in host memory. (loaders for a collate function, datasets for ``__getitem__``)"""
    for n in ast.walk(fn):
        if n.__class__ is not ast.Call or n.func.__class__ is not ast.Attribute:
            continue
        if n.func.attr == "cuda":
            return True
        if n.func.attr != "to":
            continue
        if any(k.arg == "device" for k in n.keywords):
            return True
        first = n.args[0] if n.args else None
        if first is None:
            continue
        word = (dotted(first) or "").rsplit(".", 1)[-1].lower()
        if isinstance(first, ast.Constant) and isinstance(first.value, str):
            if first.value.split(":")[0] in ("cuda", "xpu", "mps"):
                return True
        elif word and not (word in _DTYPE_WORDS or word.endswith("dtype") or word.endswith("_format")):
            return True  # .to(device), .to(self.device), .to(x.device), .to(rank)
    return False


#: names of dtypes, as ``torch.<name>`` or a variable of that name: ``.to(torch.bfloat16)`` moves nothing
_DTYPE_WORDS = frozenset({"float16", "bfloat16", "float32", "float64", "half", "float", "double", "int8", "uint8", "int32",
                          "int64", "long", "bool", "float8_e4m3fn", "float8_e5m2"})


def printed_and_asserted(tree: ast.AST | None) -> tuple[set[int], set[int]]:
    """Ids of the nodes inside a ``print(...)``/logging call's arguments, and inside an ``assert``'s test: a
    device query there reports or requires a GPU rather than uses one. (devices, frameworks/keras)"""
    said: set[int] = set()
    asserted: set[int] = set()
    for node in ast.walk(tree) if tree is not None else ():
        if node.__class__ is ast.Assert:
            asserted.update(id(n) for n in ast.walk(node.test))
        elif node.__class__ is ast.Call and (dotted(node.func) or "").rsplit(".", 1)[-1] in ("print", "info", "debug", "log"):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                said.update(id(n) for n in ast.walk(arg))
    return said, asserted
