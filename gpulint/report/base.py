"""What every report format shares: the Reporter protocol, its options and helpers.

A reporter is a pure function of a ScanResult: it never reads files, the
environment or the clock, so the same scan always renders the same bytes
(CI diffs, caches and tests rely on that).
"""
from __future__ import annotations

import json
import math
import posixpath
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable

from gpulint.core.model import Finding

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.core.result import ScanResult, WorkloadSpend


class ReportError(ValueError):
    """The asked-for format does not exist (the CLI turns it into exit 2)."""


@dataclass(frozen=True)
class ReportOptions:
    show_guidance: bool = False
    color: bool = False  # the CLI decides (isatty, NO_COLOR); reporters never look
    quiet: bool = False
    verbose: bool = False


class Reporter:
    """One output format: ``name`` is the value of ``--format``."""

    name: str = ""
    description: str = ""

    def render(self, result: "ScanResult", options: ReportOptions) -> str:  # pragma: no cover - abstract
        raise NotImplementedError

    def reads_fixes(self, options: ReportOptions) -> bool:
        """Whether this rendering shows a finding's ``fix`` or ``result.fixable``. Only then does the
        CLI check each fix against the files (building its edits, which for Python means importing
        libcst and parsing), dropping those --fix would refuse; a format that never shows fixes
        answers False and skips that work. Unknown (plugin) formats are assumed to read them."""
        return True


# -- helpers shared by the formats ---------------------------------------------


def sorted_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Path, line, column, code (then message, so ties are still deterministic)."""
    return sorted(findings, key=lambda f: (f.loc.path, f.loc.line, f.loc.column, f.code, f.message))


def usd(value: float | None) -> float | None:
    """A money figure fit for output: a finite number, or None (unknown, never a guess)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    return float(value)


def money(value: float | None) -> str:
    v = usd(value)
    return "?" if v is None else f"${v:,.2f}"


def period_spend(spend: "WorkloadSpend", hours_per_month: float) -> str:
    """A workload's avoidable spend over the period its launcher sizes: "$5,344" for a month of running,
    "$351 per run (48 h)" or "$1,812 per month (30.42 runs x 4 h)" where a time limit (and a schedule) is stated."""
    covered, label = spend.period(hours_per_month)
    v = usd(spend.usd_per_hour_avoidable)
    figure = "?" if v is None else f"${v * covered:,.0f}"
    return f"{figure} {label}" if spend.run_hours else figure


def cost_suffix(finding: Finding) -> str:
    """`  (~$10.96/h avoidable)` when the finding names a figure, else ``""``."""
    v = usd(finding.cost_impact.usd_per_hour)
    if v is None or v <= 0:
        return ""
    return f"  (~{money(v)}/h avoidable)"


def one_line(text: str) -> str:
    """Messages are one line in line-oriented formats (problem matchers read lines)."""
    return " ".join(str(text).split())


def posix(path: str) -> str:
    p = str(path).replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p


def display_path(root: str, path: str) -> str:
    """The path as a user in the working directory would type it.

    Finding paths are relative to the scanned root; when that root was given
    relative (``gpulint scan training/``) the root is put in front, so that
    terminals, editors and GitHub annotations (which resolve paths from the
    checkout) find the file. An absolute root leaves the path root-relative.
    """
    p = posix(path)
    r = posix(root or ".").rstrip("/")
    if not r or r == "." or r.startswith("/") or (len(r) > 1 and r[1] == ":") or p.startswith("/"):
        return p
    joined = posixpath.normpath(posixpath.join(r, p))
    return joined


def dumps(doc: Any) -> str:
    """``json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False)``, byte for byte, at about twice its speed.

    The standard library encodes an indented document in pure Python, one generator step per value; this writes
    the same text with one recursive pass and the C string encoder. A report of 8,000 findings is about 40 MB."""
    out: list[str] = []
    put = out.append
    enc_str = json.encoder.encode_basestring  # the C function where the _json accelerator exists

    def enc(o: Any, level: int) -> None:
        if isinstance(o, str):
            put(enc_str(o))
        elif o is None:
            put("null")
        elif o is True:
            put("true")
        elif o is False:
            put("false")
        elif isinstance(o, int):
            put(int.__repr__(o))
        elif isinstance(o, float):
            if o != o or o in (math.inf, -math.inf):
                raise ValueError(f"Out of range float values are not JSON compliant: {o!r}")
            put(float.__repr__(o))
        elif isinstance(o, dict):
            if not o:
                put("{}")
                return
            sep = "\n" + "  " * (level + 1)
            put("{")
            first = True
            for k, v in o.items():
                put(sep if first else "," + sep)
                first = False
                put(enc_str(_key(k)))
                put(": ")
                enc(v, level + 1)
            put("\n" + "  " * level + "}")
        elif isinstance(o, (list, tuple)):
            if not o:
                put("[]")
                return
            sep = "\n" + "  " * (level + 1)
            put("[")
            first = True
            for v in o:
                put(sep if first else "," + sep)
                first = False
                enc(v, level + 1)
            put("\n" + "  " * level + "]")
        else:
            raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")

    enc(doc, 0)
    return "".join(out)


def _key(k: Any) -> str:
    if isinstance(k, str):
        return k
    if k is True or k is False or k is None:
        return json.dumps(k)
    if isinstance(k, (int, float)):
        return json.dumps(k, allow_nan=False)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")
