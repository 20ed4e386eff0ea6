"""The hooks through which gpulint is extended, built-in packs included.

A plugin is a module (or object) with functions marked ``@gpulint.hookimpl``.
Outside packages announce it in their packaging metadata::

    [project.entry-points.gpulint]
    mypack = "mypack.gpulint_plugin"

and gpulint's own packs are announced in exactly the same way (see its
``pyproject.toml``). Every hook is called without arguments and returns a list
(or ``None``); results of all plugins are concatenated. Plugins are imported
lazily, the first time a command needs what they provide; a plugin that fails
to import, or whose hook raises, is reported by ``gpulint plugins`` and the
others still run.
"""
from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("gpulint")
hookimpl = pluggy.HookimplMarker("gpulint")


@hookspec
def gpulint_rules():
    """Return rule classes (subclasses of ``gpulint.rule.Rule``).

    Each class declares ``code``, ``name``, ``severity``, ``family``, ``since``,
    ``default_enabled``, a docstring in the fixed template (see
    ``gpulint.rule``), ``VALID``/``INVALID`` examples, and implements
    ``check_file`` (syntax-level, per parsed file) and/or ``check_workload``
    (cross-file, over workload facts). Codes must be unique across plugins.
    """


@hookspec
def gpulint_file_kinds():
    """Return ``gpulint.read.kinds.FileKind`` objects: how to recognise a file,
    parse it (once, shared by every rule) and which comment starts an inline
    suppression in it."""


@hookspec
def gpulint_fact_extractors():
    """Return ``gpulint.read.kinds.Extractor`` objects: pure functions from a
    parsed source (and config) to a list of ``gpulint.core.model.Fact`` for the file
    kinds they name. They must not read other files."""


@hookspec
def gpulint_output_formats():
    """Return ``gpulint.report.base.Reporter`` objects: ``name`` (the value of
    ``--format``) and ``render(result, options) -> str``."""


@hookspec
def gpulint_catalogue():
    """Return catalogue additions: dicts shaped like entries of the bundled
    instance catalogue (``{"instances": [...], "gpu_models": [...], "models": [...]}``),
    validated against the catalogue schema before use."""


@hookspec
def gpulint_rule_options():
    """Return ``{code: json_schema}``: options a rule accepts under
    ``[tool.gpulint.rules.CODE]``. Rule classes may instead declare an
    ``options`` class attribute (a JSON Schema of an object); both are validated
    with jsonschema when the configuration is loaded."""
