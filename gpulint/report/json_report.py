"""The JSON format: the shape promised in design/output.md and in schemas/output.schema.json.

Key order is the documented order (not alphabetical) and lists are sorted, so
two runs over the same tree produce the same bytes.
"""
from __future__ import annotations

import enum
import json
import math
from pathlib import PurePath
from typing import TYPE_CHECKING, Any

from gpulint.core.model import Finding
from gpulint.report.base import ReportOptions, Reporter, dumps, posix, sorted_findings, usd

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.core.result import ScanResult


def finding_json(f: Finding) -> dict[str, Any]:
    out = f.to_json()
    out["path"] = posix(out["path"])
    cost = dict(out["cost_impact"])
    cost["usd_per_hour"] = usd(cost.get("usd_per_hour"))  # NaN/inf are not JSON; unknown is null
    out["cost_impact"] = cost
    for r in out["related"]:
        r["path"] = posix(r["path"])
    return out


def _plain(value: Any) -> Any:
    """Workload dicts come from another room; make sure they are JSON, deterministically."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_plain(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, enum.Enum):
        return _plain(value.value)
    if isinstance(value, PurePath):
        return value.as_posix()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    to_json = getattr(value, "to_json", None)
    if callable(to_json):
        return _plain(to_json())
    return str(value)


def document(result: "ScanResult") -> dict[str, Any]:
    summary = _plain(result.summary())
    return {
        "version": result.version,
        "root": result.root,
        "findings": [finding_json(f) for f in sorted_findings(result.findings)],
        "workloads": [_plain(w) for w in sorted(result.workloads, key=lambda w: str(w.get("name", "")))],
        "summary": summary,
    }


class JsonReporter(Reporter):
    name = "json"
    description = "machine-readable findings, workloads and summary (schemas/output.schema.json)"

    def render(self, result: "ScanResult", options: ReportOptions) -> str:
        return dumps(document(result)) + "\n"
