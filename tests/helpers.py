"""Scanning helpers shared by the tests (import them as ``from helpers import codes, findings``, beside
``from conftest import run_cli``): one in-process scan (gpulint.testing) and one way to turn its findings into the
tuples a test compares.

    findings(files, prefix="", **scan_kwargs)                 the Finding objects whose code starts with prefix
    codes(files, prefix="", fields=("code",), sort=False, **scan_kwargs)
                                                              the same findings as values (one field) or tuples
    rows(found, fields=("code",))                             that shaping alone, for Finding objects or the
                                                              JSON report's finding dicts (CLI tests)

``files`` is a repository as {path: text}, written to a temporary folder (gpulint.testing.scan_files), or a folder
already on disk (gpulint.testing.scan_tree, its own .gpulint.toml read as a scan would). ``scan_kwargs`` are
scan_files's: ``select`` (a list of codes or families, or one comma-separated string), ``config_text``, ``host``.
Findings come in the scan's own order (by path, line, column, code, message); ``sort=True`` sorts the rows instead.
"""
from __future__ import annotations

from pathlib import Path

from gpulint.core.model import Finding
from gpulint.testing import scan_files, scan_tree

#: the fields of a row: what each one reads from a Finding (a JSON finding has them as keys)
FIELDS = {
    "code": lambda f: f.code,
    "severity": lambda f: f.severity.value,
    "path": lambda f: f.loc.path,
    "line": lambda f: f.loc.line,
    "column": lambda f: f.loc.column,
    "message": lambda f: f.message,
}
#: shapes the tests use
AT = ("code", "path", "line")
SEVERITY_AT = ("code", "severity", "path", "line")


def findings(files: dict[str, str] | Path, prefix: str | tuple[str, ...] = "", **scan_kwargs) -> list[Finding]:
    """The findings of a scan of ``files`` whose code starts with ``prefix`` (a string or a tuple of them)."""
    select = scan_kwargs.pop("select", None)
    if isinstance(select, str):
        select = select.split(",")
    if isinstance(files, Path):
        result, _ = scan_tree(files, select=select, **scan_kwargs)
    else:
        result = scan_files(files, select=select, **scan_kwargs)
    return [f for f in result.findings if f.code.startswith(prefix)]


def rows(found, fields: tuple[str, ...] = ("code",)) -> list:
    """One value per finding for a single field, a tuple of the fields for several."""
    def value(f, field):
        return f[field] if isinstance(f, dict) else FIELDS[field](f)

    if len(fields) == 1:
        return [value(f, fields[0]) for f in found]
    return [tuple(value(f, field) for field in fields) for f in found]


def codes(files: dict[str, str] | Path, prefix: str | tuple[str, ...] = "", fields: tuple[str, ...] = ("code",),
          sort: bool = False, **scan_kwargs) -> list:
    """``findings(files, prefix, **scan_kwargs)`` as rows of ``fields``: ["AMP001", ...] by default,
    [("AMP001", "warning", "train.py", 12), ...] with ``fields=SEVERITY_AT``."""
    out = rows(findings(files, prefix, **scan_kwargs), fields)
    return sorted(out) if sort else out
