"""gpulint's built-in output formats, registered like any outside plugin's.

``pyproject.toml`` announces this module under the ``gpulint`` entry-point
group; the host calls :func:`gpulint_output_formats` to learn the formats.
"""
from __future__ import annotations

from gpulint.hookspecs import hookimpl
from gpulint.reports.base import Reporter, ReportError, ReportOptions, render
from gpulint.reports.github import GithubReporter
from gpulint.reports.gitlab import GitlabReporter
from gpulint.reports.json_report import JsonReporter
from gpulint.reports.junit import JunitReporter
from gpulint.reports.markdown import MarkdownReporter
from gpulint.reports.sarif import SarifReporter
from gpulint.reports.text import TextReporter


def builtin_reporters() -> list[Reporter]:
    return [TextReporter(), JsonReporter(), SarifReporter(), GithubReporter(), GitlabReporter(), JunitReporter(), MarkdownReporter()]


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
