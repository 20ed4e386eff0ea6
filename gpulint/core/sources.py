"""A file parsed once and shared by every extractor and rule.

A ``Source`` holds the text and the parsed tree of one file. Python (and the
code cells of a notebook) is parsed by CPython's own parser into ``syntax``
(an ``ast.Module``), whose nodes carry their positions; libcst's lossless
``tree`` is parsed only when something asks for it (a plugin's rule that
walks libcst nodes), since it costs about ten times CPython's parse.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from gpulint.core.model import Location


class ParseError(ValueError):
    """A file of a known kind that could not be parsed (becomes SYS001)."""

    def __init__(self, message: str, line: int = 1, column: int = 1):
        super().__init__(message)
        self.message, self.line, self.column = message, line, column


class NewerSyntax(ParseError):
    """Valid source of a newer language version than the one gpulint runs on (a Python 3.12 f-string
    read on 3.11): nothing in the file is wrong, so its SYS001 is info, not an error."""


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
    #: notebooks: the instance its kernel runs on, as SageMaker Studio records it (``metadata.instance_type``)
    kernel_instance: str | None = None
    #: notebooks: cells that did not parse and were read as empty (each a ParseError at its cell), the rest was read
    cell_errors: list = field(default_factory=list)
    #: notebooks: those cells' text, as (first line in the virtual module, source) (what they might have set up)
    unread_cells: list[tuple[int, str]] = field(default_factory=list)
    _positions: Any = None
    _index: Any = None
    #: Python and notebooks: CPython's syntax tree of `text` (positions in UTF-8 bytes, see node_loc)
    syntax: Any = None
    _text_index: Any = None

    def source_text(self):
        """`text` with its line starts and column conversion (gpulint.read.python.index.SourceText), built once."""
        if self._text_index is None:
            from gpulint.read.python.index import SourceText

            self._text_index = SourceText(self.text)
        return self._text_index

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
        """Location of a node of CPython's tree (``syntax``) or of libcst's (``tree``).

        An ``ast`` node carries its own range (columns in UTF-8 bytes, turned
        into code points here). For a libcst node:

        libcst is lossless, so a node's own code appears verbatim in the text:
        when it appears exactly once, its offset is its position. Only when the
        text is ambiguous are positions resolved for the whole module (the
        metadata pass costs about twice the parse, so most files never pay it).
        """
        if isinstance(node, ast.AST):
            return self._ast_loc(node)
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

    def _ast_loc(self, node: ast.AST) -> Location:
        line = getattr(node, "lineno", None)
        if line is None:
            return self.loc(1, 1)
        st = self.source_text()
        col = st.column(line, node.col_offset) + 1
        end_line = getattr(node, "end_lineno", None)
        if end_line is None:
            return self.loc(line, col)
        return self.loc(line, col, end_line, st.column(end_line, node.end_col_offset) + 1)

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    def find_line(self, needle: str, start: int = 1) -> int | None:
        for i, line in enumerate(self.lines[start - 1 :], start):
            if needle in line:
                return i
        return None


class PythonSource(Source):
    """Python source, or a notebook's code cells as one module: ``syntax`` is
    CPython's tree; ``tree`` (libcst's) is parsed on first use."""

    _cst: Any = None
    _cst_tried: bool = False

    @property  # type: ignore[override]
    def tree(self) -> Any:
        if not self._cst_tried:
            self._cst_tried = True
            import libcst as cst

            try:
                self._cst = cst.parse_module(self.text)
            except Exception:  # CPython read it; a libcst that lags behind the grammar may not
                self._cst = None
        return self._cst

    @tree.setter
    def tree(self, value: Any) -> None:
        self._cst = value
        self._cst_tried = value is not None
