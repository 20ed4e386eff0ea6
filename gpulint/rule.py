"""The rule base class, its documentation template and its examples.

A rule is one small class::

    class DataParallelInsteadOfDDP(Rule):
        \"\"\"One-line summary.

        What it does:
            ...
        Why it costs money:
            ...
        How to fix:
            ...
        Cost model:
            ...
        Sources:
            ...
        \"\"\"
        code = "NET006"
        name = "dataparallel-instead-of-ddp"
        severity = Severity.WARNING
        family = "NET"
        since = "0.1.0"
        VALID = [Example({"train.py": "..."})]
        INVALID = [Example({"train.py": "..."}, expect=[Expect("train.py", 7, "DataParallel")])]

        def check_workload(self, workload, ctx):
            ...

The test suite turns every VALID example into a test that must produce no
finding of the rule and every INVALID example into one that must produce
exactly the expected findings; ``gpulint explain CODE`` renders the docstring
and the examples.
"""
from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Iterable

from gpulint.core.model import NO_COST, CostImpact, Finding, Fix, Location, Related, Severity

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.run.context import FileContext, WorkloadContext
    from gpulint.core.sources import Source
    from gpulint.link.workloads import Workload

DOC_SECTIONS = ("What it does", "Why it costs money", "How to fix", "Cost model")
OPTIONAL_SECTIONS = ("Example", "Sources")


@dataclass(frozen=True)
class Expect:
    """A finding an INVALID example must produce (message_contains: substrings)."""

    path: str
    line: int
    message_contains: tuple[str, ...] | str = ()
    code: str | None = None

    def contains(self) -> tuple[str, ...]:
        return (self.message_contains,) if isinstance(self.message_contains, str) else tuple(self.message_contains)


@dataclass(frozen=True)
class Example:
    """A small repository: a single source (named train.py) or {path: text}."""

    files: dict | str
    expect: tuple[Expect, ...] | list = ()
    config: str = ""  # text of a .gpulint.toml for the example
    title: str = ""

    def file_map(self) -> dict[str, str]:
        if isinstance(self.files, str):
            return {"train.py": self.files}
        return dict(self.files)


class Rule:
    code: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.WARNING
    family: ClassVar[str] = ""
    since: ClassVar[str] = "0.1.0"
    default_enabled: ClassVar[bool] = True
    #: workload roles check_workload is called for (gpulint.resolve.results: training, inference, batch)
    roles: ClassVar[tuple[str, ...]] = ("training",)
    #: check_workload is called only for workloads whose code is in the repository; a rule that judges nothing but
    #: the launcher, the compute and the environment sets False and runs on infrastructure-only jobs too
    reads_code: ClassVar[bool] = True
    #: file kinds check_file is called for; empty = none
    kinds: ClassVar[tuple[str, ...]] = ()
    #: text gate: check_file only runs on files containing one of these
    requires_text: ClassVar[tuple[str, ...]] = ()
    #: JSON Schema (object) of options under [tool.gpulint.rules.CODE]
    options: ClassVar[dict | None] = None
    #: one-paragraph default guidance attached to findings
    guidance: ClassVar[str] = ""
    VALID: ClassVar[list] = []
    INVALID: ClassVar[list] = []

    def __init__(self, options: dict | None = None):
        self.opts = dict(options or {})

    # -- what rules implement --------------------------------------------------
    def check_file(self, source: "Source", ctx: "FileContext") -> Iterable[Finding]:
        return ()

    def check_workload(self, workload: "Workload", ctx: "WorkloadContext") -> Iterable[Finding]:
        return ()

    def check_repo(self, workloads: list["Workload"], ctx: "WorkloadContext") -> Iterable[Finding]:
        """Once per scan, over every compute target and workload (infrastructure-wide checks)."""
        return ()

    # -- helpers ----------------------------------------------------------------
    def finding(
        self,
        loc: Location,
        message: str,
        *,
        symbol: str = "",
        guidance: str | None = None,
        cost: CostImpact | None = None,
        related: Iterable[Related] = (),
        workload: str | None = None,
        severity: Severity | None = None,
        fix: Fix | None = None,
    ) -> Finding:
        return Finding(
            code=self.code,
            name=self.name,
            severity=severity or self.severity,
            loc=loc,
            message=message,
            guidance=guidance if guidance is not None else self.guidance or self.section("How to fix"),
            cost_impact=cost or NO_COST,
            related=tuple(related),
            workload=workload,
            symbol=symbol,
            fix=fix,
        )

    @classmethod
    def summary(cls) -> str:
        doc = inspect.getdoc(cls) or ""
        return doc.splitlines()[0].strip() if doc else cls.name

    @classmethod
    def sections(cls) -> dict[str, str]:
        # parsed once per class: every finding without its own guidance reads "How to fix" (thousands on a large file)
        cached = cls.__dict__.get("_sections_cache")
        if cached is None or cached[0] is not cls.__doc__:
            cached = (cls.__doc__, parse_doc(inspect.getdoc(cls) or ""))
            setattr(cls, "_sections_cache", cached)
        return dict(cached[1])

    @classmethod
    def section(cls, title: str) -> str:
        return cls.sections().get(title, "")

    @classmethod
    def is_python_only(cls) -> bool:
        return cls.kinds == ("python",)


_HEADER = re.compile(r"^([A-Z][A-Za-z ]+):\s*$")


def parse_doc(doc: str) -> dict[str, str]:
    """Split a rule docstring into its summary and titled sections."""
    out: dict[str, str] = {}
    lines = doc.splitlines()
    current = "Summary"
    buf: list[str] = []
    for line in lines:
        m = _HEADER.match(line)
        if m and m.group(1) in DOC_SECTIONS + OPTIONAL_SECTIONS:
            out[current] = _dedent("\n".join(buf)).strip()
            current, buf = m.group(1), []
        else:
            buf.append(line)
    out[current] = _dedent("\n".join(buf)).strip()
    return out


def _dedent(text: str) -> str:
    import textwrap

    return textwrap.dedent(text)


def doc_problems(rule: type[Rule]) -> list[str]:
    """What is missing from a rule's declaration (used by tests and `gpulint plugins`)."""
    problems = []
    for attr in ("code", "name", "family", "since"):
        if not getattr(rule, attr, ""):
            problems.append(f"missing {attr}")
    if rule.code and not re.fullmatch(r"[A-Z]{2,6}\d{3}", rule.code):
        problems.append(f"code {rule.code!r} is not FAMILY + three digits")
    if rule.code and rule.family and not rule.code.startswith(rule.family):
        problems.append(f"code {rule.code} is not in family {rule.family}")
    if rule.name and not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name):
        problems.append(f"name {rule.name!r} is not kebab-case")
    sections = rule.sections()
    for title in DOC_SECTIONS:
        if not sections.get(title):
            problems.append(f"docstring lacks section {title!r}")
    return problems
