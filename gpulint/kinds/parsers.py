"""Parsers of the built-in file kinds: each parses once and returns a Source."""
from __future__ import annotations

import json
import re

from gpulint.sources import ParseError, Source
from gpulint.yamlnodes import Doc, YamlError, load_documents


def parse_python(text: str, path: str) -> Source:
    import libcst as cst

    try:
        tree = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        line, col, msg = _python_error(text, exc)
        raise ParseError(f"Python syntax error: {msg}", line, col) from None
    except (RecursionError, MemoryError):
        raise ParseError("Python source too deeply nested to parse") from None
    except Exception as exc:  # libcst raises a few other types on odd input
        raise ParseError(f"Python source could not be parsed: {_first_line(str(exc))}") from None
    return Source(path, "python", text, tree)


def _python_error(text: str, exc) -> tuple[int, int, str]:
    """CPython's own position and wording for a syntax error (libcst's point at
    the token where its parser gave up, often a line later). ast.parse only
    parses; nothing is executed."""
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(text)
    except SyntaxError as err:
        if err.lineno:
            return err.lineno, max(1, err.offset or 1), _first_line(err.msg)
    except (ValueError, RecursionError, MemoryError):
        pass
    return exc.raw_line, exc.raw_column + 1, _first_line(exc.message)


_MAGIC = re.compile(r"^\s*([%!]|\?\w|\w+\?$)")
# cell magics whose body IPython runs as Python (timed, captured or profiled):
# only their first line is not Python; every other cell magic is blanked whole
_PYTHON_CELL_MAGIC = re.compile(r"^%%(time|timeit|capture|prun)\b")


def parse_notebook(text: str, path: str) -> Source:
    """Code cells of a Jupyter notebook as one virtual module (imports made in
    one cell are seen by the next). IPython magics and shell escapes are
    blanked so they parse; locations map back to cell and line."""
    import libcst as cst

    try:
        nb = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"notebook is not valid JSON: {_first_line(str(exc))}", getattr(exc, "lineno", 1) or 1, getattr(exc, "colno", 1) or 1) from None
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        raise ParseError("notebook has no cells list")
    file_lines = _source_lines_in_file(text, len(cells))
    parts: list[str] = []
    mapping: list[tuple[int, int, int | None]] = []
    line = 1
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        src = "".join(src) if isinstance(src, list) else str(src)
        body = _blank_magics(src.splitlines() or [""])
        mapping.append((i + 1, line, file_lines[i] if file_lines else None))
        parts.append("\n".join(body))
        line += len(body)
    module = "\n".join(parts) + "\n"
    source = Source(path, "notebook", module, None, cells=mapping)
    try:
        source.tree = cst.parse_module(module)
    except cst.ParserSyntaxError as exc:
        raise _notebook_syntax_error(source, exc) from None
    except Exception as exc:
        raise ParseError(f"notebook code could not be parsed: {_first_line(str(exc))}") from None
    return source


def _blank_magics(body: list[str]) -> list[str]:
    """Lines of one code cell with IPython syntax replaced by `pass`, so the
    line count (and so every position) stays the same."""
    first = body[0].lstrip()
    if first.startswith("%%"):
        if not _PYTHON_CELL_MAGIC.match(first):
            return ["pass" for _ in body]  # %%bash, %%writefile ...: not Python
        body = ["pass"] + body[1:]
    # keep a magic's indentation: `    !nvidia-smi` in a loop body stays in the loop
    return [(b[: len(b) - len(b.lstrip())] + "pass" if _MAGIC.match(b) else b) for b in body]


def _notebook_syntax_error(source: Source, exc) -> ParseError:
    """A ParseError at CPython's position (see _python_error), mapped back from
    the virtual module to the cell, the cell line and the line of the .ipynb."""
    line, col, msg = _python_error(source.text, exc)
    line = max(1, min(line, source.text.count("\n")))  # EOF errors point past the last line
    msg = re.sub(r"\berror at \d+:\d+: ", "", msg)  # libcst's fallback wording names virtual coordinates
    loc = source.loc(line, col)
    err = ParseError(f"Python syntax error in cell {loc.cell}, line {loc.cell_line}: {msg}", loc.line, loc.column)
    err.location = loc  # type: ignore[attr-defined]  # full Location with cell/cell_line, for callers that use it
    return err


_SOURCE_KEY = re.compile(r'^\s*"source"\s*:\s*(\[)?')


def _source_lines_in_file(text: str, n_cells: int) -> list[int | None] | None:
    """Line in the .ipynb of each cell's first source line, when the file is
    laid out as Jupyter writes it (one JSON string per source line)."""
    starts: list[int | None] = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        m = _SOURCE_KEY.match(raw)
        if m:
            starts.append(lineno + 1 if m.group(1) and raw.rstrip().endswith("[") else lineno)
    return starts if len(starts) == n_cells else None


def parse_yaml(text: str, path: str) -> Source:
    try:
        docs = load_documents(text)
    except YamlError as exc:
        raise ParseError(f"YAML syntax error: {exc}", exc.line, exc.column) from None
    return Source(path, "yaml", text, docs)


def parse_json(text: str, path: str) -> Source:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"JSON syntax error: {_first_line(getattr(exc, 'msg', str(exc)))}", getattr(exc, "lineno", 1) or 1, getattr(exc, "colno", 1) or 1) from None
    marks: dict = {}
    if len(text) < 512_000:  # key positions for configs; big data files keep none
        try:
            docs = load_documents(text)
            if docs:
                marks = docs[0].marks
        except YamlError:
            marks = {}
    return Source(path, "json", text, [Doc(data, marks)])


def parse_toml(text: str, path: str) -> Source:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+), column (\d+)", str(exc))
        raise ParseError(f"TOML syntax error: {_first_line(str(exc))}", int(m.group(1)) if m else 1, int(m.group(2)) if m else 1) from None
    return Source(path, "toml", text, data)


def parse_text(kind: str):
    def parse(text: str, path: str) -> Source:
        return Source(path, kind, text, None)

    return parse


def _first_line(text: str) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else "invalid syntax"
