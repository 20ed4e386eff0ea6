"""A file parsed once and shared by every extractor and rule.

A ``Source`` holds the text and the parsed tree of one file. Positions of
Python nodes are computed lazily, only when something asks for one (most
files never produce a fact or finding, and position metadata costs more than
the parse itself).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpulint.model import Location


class ParseError(ValueError):
    """A file of a known kind that could not be parsed (becomes SYS001)."""

    def __init__(self, message: str, line: int = 1, column: int = 1):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


@dataclass
class Source:
    path: str  # posix, relative to the scan root
    kind: str
    text: str
    tree: Any = None
    #: notebooks: (cell number, first line of the cell in the virtual module,
    #: line of the cell's first source line in the .ipynb file or None)
    cells: list[tuple[int, int, int | None]] = field(default_factory=list)
    #: notebooks: shell the cells run (``!cmd``, ``%%bash``), as (line in the virtual module, text)
    shell: list[tuple[int, str]] = field(default_factory=list)
    _positions: Any = None
    _index: Any = None

    # -- locations ---------------------------------------------------------------
    def loc(self, line: int, column: int = 1, end_line: int | None = None, end_column: int | None = None) -> Location:
        """A location from a position in the parsed text (for notebooks: the
        virtual module of all code cells, mapped back to cell and file line)."""
        if not self.cells:
            return Location(self.path, line, column, end_line, end_column)
        cell, start, file_start = self._cell_of(line)
        cell_line = line - start + 1
        file_line = file_start + cell_line - 1 if file_start else cell_line
        end = file_line + (end_line - line) if end_line is not None else None
        return Location(self.path, file_line, column, end, end_column, cell, cell_line)

    def _cell_of(self, line: int) -> tuple[int, int, int | None]:
        best = self.cells[0]
        for entry in self.cells:
            if entry[1] <= line:
                best = entry
            else:
                break
        return best

    def node_loc(self, node: Any) -> Location:
        """Location of a libcst node.

        libcst is lossless, so a node's own code appears verbatim in the text:
        when it appears exactly once, its offset is its position. Only when the
        text is ambiguous are positions resolved for the whole module (the
        metadata pass costs about twice the parse, so most files never pay it).
        """
        if self._positions is None and self.tree is not None:
            try:
                code = self.tree.code_for_node(node)
            except Exception:
                code = ""
            if code and len(code) > 2:
                first = self.text.find(code)
                if first >= 0 and self.text.find(code, first + 1) < 0:
                    line = self.text.count("\n", 0, first) + 1
                    col = first - (self.text.rfind("\n", 0, first) + 1) + 1
                    end_line = line + code.count("\n")
                    end_col = (len(code) - code.rfind("\n") if "\n" in code else col + len(code))
                    return self.loc(line, col, end_line, end_col)
        if self._positions is None:
            from libcst.metadata import MetadataWrapper, PositionProvider

            wrapper = MetadataWrapper(self.tree, unsafe_skip_copy=True)
            self._positions = wrapper.resolve(PositionProvider)
        pos = self._positions.get(node)
        if pos is None:
            return self.loc(1, 1)
        return self.loc(pos.start.line, pos.start.column + 1, pos.end.line, pos.end.column + 1)

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def find_line(self, needle: str, start: int = 1) -> int | None:
        for i, line in enumerate(self.lines[start - 1 :], start):
            if needle in line:
                return i
        return None
