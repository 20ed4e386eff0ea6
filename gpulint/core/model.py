"""The plain records that flow through gpulint: locations, facts and findings.

Everything here is a frozen dataclass of JSON-compatible values, so per-file
results can be pickled (worker pools), hashed into a cache and sent to an
editor unchanged.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace
from typing import Any, Mapping


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]

    @classmethod
    def parse(cls, text: str) -> "Severity":
        return cls(text.lower())


@dataclass(frozen=True, order=True)
class Location:
    """A place in a file: 1-based line and column; `cell` is set for notebooks."""

    path: str
    line: int = 1
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None
    cell: int | None = None
    cell_line: int | None = None

    def short(self) -> str:
        if self.cell is not None:
            return f"{self.path}:cell {self.cell}:{self.cell_line}"
        return f"{self.path}:{self.line}"

    def to_json(self) -> dict:
        out = {"path": self.path, "line": self.line, "column": self.column}
        if self.end_line is not None:
            out["end_line"] = self.end_line
            out["end_column"] = self.end_column
        if self.cell is not None:
            out["cell"] = self.cell
            out["cell_line"] = self.cell_line
        return out


@dataclass(frozen=True)
class Fact:
    """One thing learnt from one file, with where it was learnt.

    `kind` is from the vocabulary in `gpulint.core.facts`; `value` is JSON-compatible.
    `key` names the judged symbol or configuration key (a qualified name such as
    ``torch.nn.DataParallel`` or a key path such as ``resources.limits.nvidia.com/gpu``):
    it makes fingerprints independent of line numbers. `target` groups facts that
    describe one compute target or one launcher invocation within a file.
    """

    kind: str
    value: Any
    loc: Location
    key: str = ""
    target: str = ""
    attrs: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict:
        out = {"kind": self.kind, "value": self.value, "where": self.loc.short(), **self.loc.to_json()}
        if self.key:
            out["key"] = self.key
        if self.target:
            out["target"] = self.target
        if self.attrs:
            out["attrs"] = dict(self.attrs)
        return out


@dataclass(frozen=True)
class CostImpact:
    usd_per_hour: float | None
    basis: str
    confidence: str = "low"  # low | medium | high

    def to_json(self) -> dict:
        return {"usd_per_hour": self.usd_per_hour, "basis": self.basis, "confidence": self.confidence}


NO_COST = CostImpact(None, "No spend is attributed to this finding.", "high")


def price_origin(region: str | None, as_of: object, source: str | None) -> str:
    """"us-east-1, price as of 2025-06-01; source", leaving out what is unknown: a rate the user
    configured has no catalogue region or date, and its source says whose rate it is."""
    where = ", ".join(x for x in (region, f"price as of {as_of}" if as_of else None) if x)
    return "; ".join(x for x in (where, source) if x) or "source not recorded"


@dataclass(frozen=True)
class Related:
    loc: Location
    message: str

    def to_json(self) -> dict:
        out = {"path": self.loc.path, "line": self.loc.line, "message": self.message}
        if self.loc.column:
            out["column"] = self.loc.column
        return out


@dataclass(frozen=True)
class Fix:
    """An edit that resolves a finding, in ruff's terms.

    ``description`` says what the edit changes, in the imperative ("Add
    pin_memory=True to the DataLoader call"). ``applicability`` is ``safe``
    (the program does the same thing, only cheaper: applied by ``--fix``) or
    ``unsafe`` (it may change behaviour or results: applied only with
    ``--unsafe-fixes``), and ``unsafe_because`` says how. ``edits`` are
    operations of ``gpulint.core.fixes`` anchored on the facts the rule judged; they
    become text edits against the file's current text only when a fix is
    applied or offered, and a fix whose file would no longer parse is refused.
    """

    description: str
    applicability: str  # "safe" | "unsafe"
    edits: tuple[Any, ...] = ()
    unsafe_because: str = ""

    @property
    def safe(self) -> bool:
        return self.applicability == "safe"

    def to_json(self) -> dict:
        out = {"description": self.description, "applicability": self.applicability}
        if self.unsafe_because:
            out["unsafe_because"] = self.unsafe_because
        return out


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: Severity
    loc: Location
    message: str
    guidance: str = ""
    cost_impact: CostImpact = NO_COST
    related: tuple[Related, ...] = ()
    workload: str | None = None
    symbol: str = ""  # what was judged; feeds the fingerprint instead of the line
    fingerprint: str = ""
    #: every workload the finding affects (one finding per code, file and line, however many import the code)
    workloads: tuple[str, ...] = ()
    fix: Fix | None = None

    @property
    def affected(self) -> tuple[str, ...]:
        return self.workloads or ((self.workload,) if self.workload else ())

    def sort_key(self):
        return (self.loc.path, self.loc.line, self.loc.column, self.code, self.message)

    def with_(self, **changes) -> "Finding":
        return replace(self, **changes)

    def to_json(self) -> dict:
        out = {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "path": self.loc.path,
            "line": self.loc.line,
            "column": self.loc.column,
            "end_line": self.loc.end_line or self.loc.line,
            "end_column": self.loc.end_column or self.loc.column,
            "message": self.message,
            "guidance": self.guidance,
            "cost_impact": self.cost_impact.to_json(),
            "related": [r.to_json() for r in self.related],
            "workload": self.workload,
            "workloads": list(self.affected),
            "fingerprint": self.fingerprint,
        }
        if self.fix is not None:
            out["fix"] = self.fix.to_json()
        if self.loc.cell is not None:
            out["cell"] = self.loc.cell
            out["cell_line"] = self.loc.cell_line
        return out
