"""gpulint's built-in output formats, registered like any outside plugin's.

``pyproject.toml`` announces this module under the ``gpulint`` entry-point
group; the host calls :func:`gpulint_output_formats` to learn the formats.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable, Mapping

from gpulint.hookspecs import hookimpl
from gpulint.report.base import Reporter, ReportError, ReportOptions
from gpulint.report.github import GithubReporter
from gpulint.report.gitlab import GitlabReporter
from gpulint.report.json_report import JsonReporter
from gpulint.report.junit import JunitReporter
from gpulint.report.markdown import MarkdownReporter
from gpulint.report.sarif import SarifReporter
from gpulint.report.text import TextReporter

if TYPE_CHECKING:
    from gpulint.core.result import ScanResult


def builtin_reporters() -> list[Reporter]:
    return [TextReporter(), JsonReporter(), SarifReporter(), GithubReporter(), GitlabReporter(), JunitReporter(), MarkdownReporter()]


def render(
    result: "ScanResult",
    fmt_name: str,
    options: ReportOptions | None = None,
    formats: Mapping[str, Reporter] | Iterable[Reporter] | None = None,
) -> str:
    """Render ``result`` in the format named ``fmt_name``.

    ``formats`` is the registry's ``{name: reporter}`` (or a list of reporters);
    without it the built-in formats are used.
    """
    if formats is None:
        formats = builtin_reporters()
    table = dict(formats) if isinstance(formats, Mapping) else {r.name: r for r in formats}
    reporter = table.get(fmt_name)
    if reporter is None:
        known = ", ".join(sorted(table)) or "none"
        raise ReportError(f"unknown output format {fmt_name!r} (known: {known})")
    return reporter.render(result, options or ReportOptions())


@hookimpl
def gpulint_output_formats():
    return builtin_reporters()


__all__ = [
    "GithubReporter",
    "GitlabReporter",
    "JsonReporter",
    "JunitReporter",
    "MarkdownReporter",
    "ReportError",
    "ReportOptions",
    "Reporter",
    "SarifReporter",
    "TextReporter",
    "builtin_reporters",
    "gpulint_output_formats",
    "render",
]
