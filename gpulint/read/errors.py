"""The error types readers raise for input they cannot read."""
from __future__ import annotations

from dataclasses import dataclass


class ReadError(ValueError):
    """Unreadable input; `line` and `column` are 1-based and point at the problem."""

    def __init__(self, message, line=1, column=1):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


@dataclass(frozen=True)
class BlockFailure:
    """One part of a file a reader failed on (``what`` names it, e.g. ``resource "aws_instance" "a"``)."""

    what: str
    line: int
    column: int
    error: str


class PartialRead(Exception):
    """A reader read the file but failed on some of its parts: ``facts`` holds what
    it could read, ``failures`` each part it could not (reported as SYS002, so a
    failure is never silent and never costs the other parts' facts)."""

    def __init__(self, facts: list, failures: list[BlockFailure]):
        super().__init__("; ".join(f"{f.what}: {f.error}" for f in failures))
        self.facts = facts
        self.failures = failures
