"""The one error type readers raise for input they cannot read."""
from __future__ import annotations


class ReadError(ValueError):
    """Unreadable input; `line` and `column` are 1-based and point at the problem."""

    def __init__(self, message, line=1, column=1):
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
