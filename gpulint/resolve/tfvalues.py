"""Terraform values across a module's files: the one place ``var.x`` and ``local.y`` are resolved.

A Terraform module is a folder; its ``.tf`` / ``.tf.json`` files share variables
and locals. The readers emit, per file, ``tf.variable`` (every variable, with or
without a default), ``tf.local``, ``tf.tfvar`` (assignments in ``*.tfvars`` /
``*.tfvars.json``) and ``tf.module_call`` (a ``module`` block with a local
``source`` and its inputs); compute facts hold ``{"ref": "var.x"}`` where a value
comes from elsewhere. This module follows those references the way Terraform
does, within what can be decided without running it:

* ``local.a`` -> the local's expression, followed while it is itself a reference;
* ``var.x`` -> auto-loaded ``terraform.tfvars`` / ``*.auto.tfvars`` (later files
  win, as in Terraform's load order) -> the variable's default -> the inputs of
  module blocks whose ``source`` is this folder (one module level up) -> named
  ``*.tfvars`` files (passed with ``-var-file``) when they all agree.

A named ``*.tfvars`` that sets another value than the default makes the value
undecided (which file is passed is not in the repository). Every answer says
how it was reached; every non-answer says why.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass
from typing import Any

from gpulint.core.model import Fact

_MAX_HOPS = 16


@dataclass(frozen=True)
class TfValue:
    value: Any  # None when undecided
    via: tuple[str, ...] = ()  # "local.x (infra/main.tf:4)", "var.y default (infra/variables.tf:2)" ...
    why: str | None = None  # set when value is None

    @property
    def known(self) -> bool:
        return self.value is not None


def is_ref(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("ref"), str)


class TerraformValues:
    """Every module folder's variables, locals, tfvars and the module calls into it."""

    def __init__(self, facts: dict[str, list[Fact]]):
        self.variables: dict[str, dict[str, Fact]] = {}
        self.locals: dict[str, dict[str, Fact]] = {}
        self.tfvars: dict[str, dict[str, list[Fact]]] = {}
        self.calls: dict[str, list[Fact]] = {}  # module folder -> module blocks that instantiate it
        for path in sorted(facts):
            folder = posixpath.dirname(path)
            for f in facts[path]:
                if f.kind == "tf.variable":
                    self.variables.setdefault(folder, {})[f.value["name"]] = f
                elif f.kind == "tf.local":
                    self.locals.setdefault(folder, {})[f.value["name"]] = f
                elif f.kind == "tf.tfvar":
                    self.tfvars.setdefault(folder, {}).setdefault(f.value["name"], []).append(f)
                elif f.kind == "tf.module_call":
                    source = f.value.get("source")
                    if isinstance(source, str) and source.startswith(("./", "../")):
                        target = posixpath.normpath(posixpath.join(folder, source))
                        self.calls.setdefault("" if target == "." else target, []).append(f)

    # -- public ----------------------------------------------------------------------------
    def value_of(self, fact: Fact | None) -> TfValue:
        """A compute fact's value with references resolved from its module folder."""
        if fact is None:
            return TfValue(None, why="not set")
        v = fact.value
        if not is_ref(v):
            return TfValue(v) if v is not None else TfValue(None, why=f"{fact.key or fact.kind} ({fact.loc.short()}) is an expression gpulint does not evaluate")
        res = self.resolve(v["ref"], posixpath.dirname(fact.loc.path))
        if not res.known:
            return res
        mapping = v.get("map")
        if isinstance(mapping, dict):
            raw = res.value
            key = raw.lower() if isinstance(raw, str) else str(raw).lower()
            mapped = mapping.get(key)
            if mapped is None:
                return TfValue(None, res.via, f"{v['ref']} = {raw!r} is not a value gpulint recognises here")
            return TfValue(mapped, res.via)
        return res

    def resolve(self, ref: str, folder: str, hops: int = 0, modules: bool = True) -> TfValue:
        kind, _, name = ref.partition(".")
        if hops > _MAX_HOPS:
            return TfValue(None, why=f"{ref}: references nest too deep (a cycle?)")
        where = folder or "."
        if kind == "local":
            f = self.locals.get(folder, {}).get(name)
            if f is None:
                return TfValue(None, why=f"local.{name} is not defined in the module {where}")
            step = f"local.{name} ({f.loc.short()})"
            if f.value.get("computed") or f.value.get("value") is None:
                return TfValue(None, (step,), f"local.{name} ({f.loc.short()}) is computed by an expression gpulint does not evaluate")
            return self._follow(f.value["value"], folder, step, hops, modules)
        if kind == "var":
            return self._variable(name, folder, hops, modules)
        return TfValue(None, why=f"{ref} is not a variable or local")

    # -- helpers -----------------------------------------------------------------------------
    def _follow(self, value: Any, folder: str, step: str, hops: int, modules: bool) -> TfValue:
        if is_ref(value):
            res = self.resolve(value["ref"], folder, hops + 1, modules)
            return TfValue(res.value, (step,) + res.via, res.why)
        return TfValue(value, (step,))

    def _variable(self, name: str, folder: str, hops: int, modules: bool) -> TfValue:
        where = folder or "."
        assigned = self.tfvars.get(folder, {}).get(name, [])
        auto = sorted((f for f in assigned if f.value.get("auto")), key=_load_order)
        if auto:
            f = auto[-1]
            return self._follow(f.value.get("value"), folder, f"var.{name} = ... in {f.loc.short()}", hops, modules)
        named = [f for f in assigned if not f.value.get("auto")]
        var = self.variables.get(folder, {}).get(name)
        default = None
        if var is not None and var.value.get("has_default") and not var.value.get("computed"):
            default = var.value.get("default")
        if default is not None:
            others = sorted({repr(f.value.get("value")) for f in named if f.value.get("value") != default})
            if others:
                files = ", ".join(sorted({f.loc.path for f in named}))
                return TfValue(None, (f"var.{name} default ({var.loc.short()})",),
                               f"var.{name} defaults to {default!r} but {files} set(s) {', '.join(others)}; "
                               f"which -var-file is passed is not in the repository")
            return self._follow(default, folder, f"var.{name} default ({var.loc.short()})", hops, modules)
        if modules:
            passed = []
            for call in self.calls.get(folder, []):
                inputs = call.value.get("inputs") or {}
                if name in inputs:
                    caller = posixpath.dirname(call.loc.path)
                    passed.append((call, self._follow(inputs[name], caller, f"module.{call.value['name']} passes {name} ({call.loc.short()})", hops, modules=False)))
            known = [r for _, r in passed if r.known]
            values = {repr(r.value) for r in known}
            if known and len(values) == 1 and len(known) == len(passed):
                return known[0]
            if len(values) > 1:
                return TfValue(None, why=f"var.{name}: module blocks pass different values ({', '.join(sorted(values))})")
            if passed:
                return TfValue(None, passed[0][1].via, passed[0][1].why)
        named_values = {repr(f.value.get("value")) for f in named if f.value.get("value") is not None}
        if len(named_values) == 1 and named:
            f = named[0]
            return self._follow(f.value.get("value"), folder, f"var.{name} = ... in {f.loc.short()} (a -var-file)", hops, modules)
        if var is None:
            return TfValue(None, why=f"var.{name} is not declared in the module {where}")
        if var.value.get("computed"):
            return TfValue(None, why=f"var.{name}'s default ({var.loc.short()}) is an expression gpulint does not evaluate")
        return TfValue(None, why=f"var.{name} ({var.loc.short()}) has no default, and no tfvars file or module block in the repository sets it")


def _load_order(f: Fact) -> tuple:
    """Terraform loads terraform.tfvars, then terraform.tfvars.json, then *.auto.tfvars(.json) in lexical order."""
    name = posixpath.basename(f.loc.path)
    return (0 if name == "terraform.tfvars" else 1 if name == "terraform.tfvars.json" else 2, name)
