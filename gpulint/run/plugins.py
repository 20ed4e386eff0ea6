"""Loading plugins (built-in packs and outside packages) through pluggy.

Entry points of the ``gpulint`` group are only imported when a command first
asks for what they provide; import failures and hook failures are recorded,
not raised, so one broken plugin never stops a scan.
"""
from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass, field
from functools import cached_property
from importlib.metadata import entry_points
from types import ModuleType

import pluggy

from gpulint import hookspecs
GROUP = "gpulint"


@dataclass
class PluginStatus:
    name: str
    module: str
    distribution: str
    ok: bool
    error: str = ""


@dataclass
class Registry:
    """What all loaded plugins provide, collected once."""

    rules: dict = field(default_factory=dict)  # code -> rule class
    rule_plugin: dict = field(default_factory=dict)  # code -> plugin name
    file_kinds: list = field(default_factory=list)
    extractors: list = field(default_factory=list)
    formats: dict = field(default_factory=dict)
    catalogue: list = field(default_factory=list)
    rule_options: dict = field(default_factory=dict)


class PluginHost:
    def __init__(self, extra_modules: list[ModuleType | object] | None = None, use_entry_points: bool = True):
        self.pm = pluggy.PluginManager("gpulint")
        self.pm.add_hookspecs(hookspecs)
        self.statuses: list[PluginStatus] = []
        self._extra = list(extra_modules or [])
        self._use_entry_points = use_entry_points
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        if self._use_entry_points:
            for ep in sorted(entry_points(group=GROUP), key=lambda e: e.name):
                dist = getattr(ep.dist, "name", "") if getattr(ep, "dist", None) else ""
                try:
                    module = ep.load()
                    self.pm.register(module, name=ep.name)
                    self.statuses.append(PluginStatus(ep.name, ep.value, dist, True))
                except Exception as exc:  # a broken plugin must not stop the others
                    self.statuses.append(PluginStatus(ep.name, ep.value, dist, False, _one_line(exc)))
        for obj in self._extra:
            name = obj if isinstance(obj, str) else getattr(obj, "__name__", type(obj).__name__)
            try:
                if isinstance(obj, str):
                    obj = importlib.import_module(obj)
                    name = obj.__name__
                if self.pm.is_registered(obj):
                    continue
                self.pm.register(obj, name=name)
                self.statuses.append(PluginStatus(name, name, "", True))
            except Exception as exc:
                self.statuses.append(PluginStatus(name, name, "", False, _one_line(exc)))

    def _call(self, hook_name: str) -> list[tuple[str, object]]:
        """Call a hook on each plugin separately, so one raising plugin is isolated."""
        self._load()
        out = []
        for impl in getattr(self.pm.hook, hook_name).get_hookimpls():
            pname = impl.plugin_name
            try:
                result = impl.function()
            except Exception as exc:
                self._fail(pname, f"{hook_name} raised {_one_line(exc)}")
                continue
            for item in result or ():
                out.append((pname, item))
        return out

    def _fail(self, pname: str, why: str) -> None:
        for st in self.statuses:
            if st.name == pname:
                st.ok = False
                st.error = (st.error + "; " if st.error else "") + why
                return
        self.statuses.append(PluginStatus(pname, pname, "", False, why))

    @cached_property
    def registry(self) -> Registry:
        reg = Registry()
        for pname, rule in self._call("gpulint_rules"):
            code = getattr(rule, "code", None)
            if not code:
                self._fail(pname, f"rule {rule!r} has no code")
                continue
            if code in reg.rules:
                self._fail(pname, f"rule code {code} already registered by {reg.rule_plugin[code]}")
                continue
            reg.rules[code] = rule
            reg.rule_plugin[code] = pname
        reg.file_kinds = [k for _, k in self._call("gpulint_file_kinds")]
        reg.extractors = [e for _, e in self._call("gpulint_fact_extractors")]
        for _, fmt in self._call("gpulint_output_formats"):
            reg.formats.setdefault(fmt.name, fmt)
        reg.catalogue = [c for _, c in self._call("gpulint_catalogue")]
        for _, opts in self._call("gpulint_rule_options"):
            reg.rule_options.update(opts)
        for code, rule in reg.rules.items():
            if getattr(rule, "options", None):
                reg.rule_options.setdefault(code, rule.options)
        return reg


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip()
    return text.splitlines()[0] if text else type(exc).__name__


def format_traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
