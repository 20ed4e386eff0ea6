"""Parsers of the built-in file kinds: each parses once and returns a Source."""
from __future__ import annotations

import ast
import json
import re
import sys

from gpulint.read.python.ipython import python_lines, shell_commands
from gpulint.core import limits
from gpulint.core.limits import LimitExceeded, python_syntax
from gpulint.read.templates import has_template
from gpulint.core.sources import NewerSyntax, ParseError, PythonSource, Source
from gpulint.read.yamlnodes import Doc, YamlError, load_documents


def parse_python(text: str, path: str) -> Source:
    def syntax_error(where: tuple[int, int, str], _exc) -> ParseError:
        line, col, msg = where
        return ParseError(f"Python syntax error: {msg}", line, col)

    if text.startswith(DATABRICKS_HEADER):
        module, shell = databricks_cells(text)
        source = PythonSource(path, "python", module, shell=shell)
        source.syntax = _parse_module(module, syntax_error)
        return source
    source = PythonSource(path, "python", text)
    source.syntax = _parse_module(text, syntax_error)
    return source


#: the first line of a notebook exported from (or kept in a repo by) Databricks as a .py file
DATABRICKS_HEADER = "# Databricks notebook source"
_DATABRICKS_CELL = re.compile(r"^# COMMAND -{5,}\s*$")
_DATABRICKS_MAGIC = re.compile(r"^# MAGIC ?")


def databricks_cells(text: str) -> tuple[str, list[tuple[int, str]]]:
    """A Databricks notebook source file as Python with the same lines: its cells (split at
    ``# COMMAND ----------``) read as IPython cells (``!deepspeed ...``, ``%pip`` rewritten by gpulint.read.python.ipython),
    and the shell of its ``# MAGIC %sh`` cells and ``!`` lines as (line, text). ``# MAGIC`` lines are
    comments to Python already."""
    lines = text.split("\n")
    out: list[str] = []
    shell: list[tuple[int, str]] = []
    start = 0
    for i in range(len(lines) + 1):
        if i < len(lines) and not _DATABRICKS_CELL.match(lines[i]):
            continue
        cell = lines[start:i]
        if cell and any(_DATABRICKS_MAGIC.match(l) for l in cell if l.strip()) and \
                all(_DATABRICKS_MAGIC.match(l) or not l.strip() for l in cell):
            body = [_DATABRICKS_MAGIC.sub("", l, count=1) for l in cell]
            first = next((j for j, l in enumerate(body) if l.strip()), None)
            if first is not None and body[first].strip() == "%sh":
                # line k of "%%sh" + the rest is line first + k of the cell
                shell += [(start + 1 + first + at, cmd) for at, cmd in shell_commands("\n".join(["%%sh"] + body[first + 1:]))]
            out += cell  # comments as they are
        else:
            rewritten = python_lines("\n".join(cell)) if cell else []
            out += rewritten + [""] * (len(cell) - len(rewritten))
            shell += [(start + 1 + at, cmd) for at, cmd in shell_commands("\n".join(cell))]
        if i < len(lines):
            out.append(lines[i])
        start = i + 1
    return "\n".join(out), shell


def _parse_module(text: str, syntax_error) -> ast.Module:
    """CPython's syntax tree of `text`, within the budgets of gpulint.core.limits
    (which also keep input that would crash or stall libcst's native parser
    from it, should a plugin ask for libcst's tree later).

    Text this interpreter cannot parse is given to libcst for its verdict: a
    syntax error is reported at CPython's position and in its words; text that
    libcst reads is newer grammar than the running Python's, said as such."""
    tree, cpython_error = python_syntax(text)  # raises LimitExceeded
    if tree is not None:
        return tree
    import libcst as cst

    try:
        cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise syntax_error(_python_error(text, exc, cpython_error), exc) from None
    except (RecursionError, MemoryError):
        raise ParseError("Python source too deeply nested to parse") from None
    except Exception as exc:  # libcst raises a few other types on odd input
        raise ParseError(f"Python source could not be parsed: {_first_line(str(exc))}") from None
    if cpython_error is None:  # CPython refused the text outright (a NUL byte past the binary check)
        raise ParseError("Python source could not be parsed: it contains a NUL byte")
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    line, col = cpython_error.lineno or 1, max(1, cpython_error.offset or 1)
    err = syntax_error((line, col, f"{_first_line(cpython_error.msg)} (this is newer syntax than Python {version}, which runs "
                                   f"gpulint, reads: run gpulint on a newer Python to check this file)"), None)
    raise NewerSyntax(err.message, err.line, err.column) from None


def _python_error(text: str, exc, err: SyntaxError | None = None) -> tuple[int, int, str]:
    """CPython's own position and wording for a syntax error (libcst's point at
    the token where its parser gave up, often a line later). `err` is CPython's
    error when the pre-check already has it; ast.parse only parses, nothing is
    executed."""
    import ast
    import warnings

    if err is None:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ast.parse(text)
        except SyntaxError as e:
            err = e
        except (ValueError, RecursionError, MemoryError):
            pass
    if err is not None and err.lineno:
        return err.lineno, max(1, err.offset or 1), _first_line(err.msg)
    return exc.raw_line, exc.raw_column + 1, _first_line(exc.message)


#: kernel languages whose cells are Python (IPython) code
_PYTHON_KERNELS = ("python", "ipython", "pyspark", "python3")


def notebook_language(nb: dict) -> str | None:
    """The kernel's language from the notebook metadata (None when it does not say)."""
    meta = nb.get("metadata") if isinstance(nb.get("metadata"), dict) else {}
    for section, key in (("kernelspec", "language"), ("language_info", "name")):
        value = (meta.get(section) or {}).get(key) if isinstance(meta.get(section), dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip().lower()
    return None


#: cell languages (VS Code's languageId, .NET Interactive's) whose text is shell commands
_SHELL_CELLS = ("shellscript", "bash", "sh", "zsh", "shell")


def cell_language(cell: dict) -> str | None:
    """The language a code cell declares in its own metadata, over the kernel's: VS Code writes
    ``metadata.vscode.languageId`` ("shellscript" for a cell meant for a terminal), .NET Interactive and
    Polyglot Notebooks ``dotnet_interactive.language`` / ``polyglot_notebook.kernelName``. None when it says none."""
    meta = cell.get("metadata")
    if not isinstance(meta, dict):
        return None
    for section, key in (("vscode", "languageId"), ("dotnet_interactive", "language"), ("polyglot_notebook", "kernelName")):
        value = meta.get(section).get(key) if isinstance(meta.get(section), dict) else None
        if isinstance(value, str) and value.strip():
            return value.strip().lower()
    return None


def parse_notebook(text: str, path: str) -> Source:
    """Code cells of a Jupyter notebook as one virtual module (imports made in
    one cell are seen by the next), IPython syntax rewritten line for line
    (gpulint.read.python.ipython), so locations map back to cell and line. A notebook whose
    kernel is not Python (R, Julia, Scala ...) has no Python to read: it parses
    to an empty module."""
    try:
        nb = json.loads(text)
    except RecursionError:
        raise LimitExceeded("notebook JSON nested too deeply for the parser to follow") from None
    except ValueError as exc:
        raise ParseError(f"notebook is not valid JSON: {_first_line(str(exc))}", getattr(exc, "lineno", 1) or 1, getattr(exc, "colno", 1) or 1) from None
    if not isinstance(nb, dict):
        raise ParseError(f"not a Jupyter notebook: the top level is a JSON {type(nb).__name__}, not an object")
    cells = nb.get("cells")
    if not isinstance(cells, list):
        if isinstance(nb.get("worksheets"), list):
            raise ParseError("notebook format 3 (worksheets) is not read; save it with a current Jupyter (nbformat 4)")
        raise ParseError("not a Jupyter notebook: no 'cells' list")
    language = notebook_language(nb)
    if language is not None and not language.startswith(_PYTHON_KERNELS):
        empty = PythonSource(path, "notebook", "\n", cells=[])
        empty.syntax = ast.parse("\n")
        return empty
    file_lines = _source_lines_in_file(text, len(cells))
    shell: list[tuple[int, str]] = []
    parts: list[str] = []
    mapping: list[tuple[int, int, int | None]] = []
    line = 1
    for i, cell in enumerate(cells):
        if not isinstance(cell, dict):
            raise ParseError(f"cell {i + 1} is a JSON {type(cell).__name__}, not an object")
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        if isinstance(src, list) and all(isinstance(s, str) for s in src):
            src = "".join(src)
        elif not isinstance(src, str):
            raise ParseError(f"cell {i + 1}: 'source' is not text (a string or a list of strings)")
        declared = cell_language(cell)
        if declared is not None and not declared.startswith(_PYTHON_KERNELS):
            # a cell its metadata says is shell (or SQL, PowerShell ...): no Python, as a %%bash cell's body
            body = ["pass" if text.strip() else "" for text in (src.splitlines() or [""])]
            if declared in _SHELL_CELLS and src.strip():
                shell.append((line, src))
        else:
            body = python_lines(src)
            shell += [(line + at, cmd) for at, cmd in shell_commands(src)]
        mapping.append((i + 1, line, file_lines[i] if file_lines else None))
        parts.append("\n".join(body))
        line += len(body)
    module = "\n".join(parts) + "\n"
    budget = limits.current().max_file_size_kb * 1024
    if len(module.encode("utf-8", "surrogatepass")) > budget:
        raise LimitExceeded(f"notebook code cells larger than max-file-size-kb ({budget // 1024:,} KB); not read")
    source = PythonSource(path, "notebook", module, cells=mapping, shell=shell)
    meta = nb.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("instance_type"), str):
        source.kernel_instance = meta["instance_type"]
    try:
        source.syntax = _parse_module(module, lambda exc, cst_exc: _notebook_syntax_error(source, exc))
    except LimitExceeded:
        raise
    except ParseError as whole:
        _parse_without_bad_cells(source, parts, whole)
    return source


def _parse_without_bad_cells(source: PythonSource, parts: list[str], whole: ParseError) -> None:
    """Jupyter runs each cell on its own: a cell that does not parse (a pasted shell line, a placeholder, newer
    syntax) fails alone and the others run. The notebook is read without its bad cells, each reported
    (``source.cell_errors``); `whole` is raised when even the rest does not parse."""
    errors: list[ParseError] = []
    kept: list[str] = []
    unread: list[tuple[int, str]] = []
    start = 1
    for body in parts:
        n = body.count("\n") + 1
        try:
            _parse_module(body + "\n", lambda where, _e: ParseError(where[2], where[0], where[1]))
            kept.append(body)
        except LimitExceeded:
            raise
        except ParseError as exc:
            line, col = start + exc.line - 1, exc.column
            err = _notebook_syntax_error(source, (line, col, exc.message))
            errors.append(NewerSyntax(err.message, err.line, err.column) if isinstance(exc, NewerSyntax) else err)
            errors[-1].location = err.location  # type: ignore[attr-defined]
            kept.append("\n".join([""] * n))  # the same lines, empty: positions of later cells stay
            unread.append((start, body))
        start += n
    if not errors:
        raise whole
    try:
        source.syntax = _parse_module("\n".join(kept) + "\n", lambda where, _e: whole)
    except ParseError:
        raise whole from None
    source.cell_errors = errors
    source.unread_cells = unread


def _notebook_syntax_error(source: Source, where: tuple[int, int, str]) -> ParseError:
    """A ParseError at CPython's position (see _python_error), mapped back from
    the virtual module to the cell, the cell line and the line of the .ipynb."""
    line, col, msg = where
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
    found: list[tuple[int, int]] = []  # (indentation, line of the first source line)
    for lineno, raw in enumerate(text.splitlines(), 1):
        m = _SOURCE_KEY.match(raw)
        if m:
            found.append((len(raw) - len(raw.lstrip()), lineno + 1 if m.group(1) and raw.rstrip().endswith("[") else lineno))
    if len(found) != n_cells and found:
        # a "source" key elsewhere (a raw cell kept in the notebook's metadata by PyCharm): the cells' keys are the ones
        # at the indentation most of them share
        indent = max({i for i, _ in found}, key=lambda i: sum(1 for j, _ in found if j == i))
        found = [f for f in found if f[0] == indent]
    starts: list[int | None] = [line for _, line in found]
    return starts if len(starts) == n_cells else None


def parse_yaml(text: str, path: str) -> Source:
    try:
        docs = load_documents(text)
    except YamlError as exc:
        if exc.limit:
            raise LimitExceeded(str(exc), exc.line, exc.column) from None
        raise ParseError(f"YAML syntax error: {exc}", exc.line, exc.column) from None
    return Source(path, "yaml", text, docs)


#: files whose tools read JSON with comments and trailing commas (JSONC); every other
#: .json is read by json.load (DeepSpeed, HF, accelerate), where a comment is an error
_JSONC_NAMES = ("devcontainer.json", ".devcontainer.json", "settings.json", "launch.json", "tasks.json", "extensions.json",
                "keybindings.json", "tsconfig*.json", "jsconfig*.json", ".eslintrc.json", "deno.json", "*.jsonc",
                "*.code-workspace", "language-configuration.json", "api-extractor.json", ".swcrc")


def is_jsonc_file(path: str) -> bool:
    from fnmatch import fnmatch

    name = path.rsplit("/", 1)[-1]
    return any(fnmatch(name, pattern) for pattern in _JSONC_NAMES) or "/.vscode/" in f"/{path}"


def parse_json(text: str, path: str) -> Source:
    """JSON, and what real repositories keep in .json files besides: JSON with
    comments and trailing commas where the file's tool reads JSONC (VS Code
    settings, devcontainer.json, tsconfig.json), JSON Lines (one record per
    line, as dataset loaders read .json files), templates (``{{ .Values.n }}``)
    and empty files."""
    if not text.strip():
        return Source(path, "json", text, [])
    try:
        data = json.loads(text)
    except RecursionError:
        raise LimitExceeded("JSON nested too deeply for the parser to follow") from None
    except ValueError as exc:
        docs = _tolerant_json(text, exc, is_jsonc_file(path))
        if docs is None:
            raise ParseError(f"JSON syntax error: {_first_line(getattr(exc, 'msg', str(exc)))}", getattr(exc, "lineno", 1) or 1,
                             getattr(exc, "colno", 1) or 1) from None
        return Source(path, "json", text, docs)
    return Source(path, "json", text, [Doc(data, marks_of=text)])


def _tolerant_json(text: str, exc: Exception, jsonc: bool) -> list[Doc] | None:
    if isinstance(exc, RecursionError):
        return None
    if "Extra data" in str(exc):
        docs = _json_lines(text)
        if docs is not None:
            return docs
    stripped = _strip_jsonc(text) if jsonc else None
    if stripped is not None:
        try:
            return [Doc(json.loads(stripped), marks_of=stripped)]
        except (ValueError, RecursionError):
            pass
    if has_template(text):
        try:
            return load_documents(text)
        except YamlError:
            return None
    return None


def _json_lines(text: str) -> list[Doc] | None:
    """One JSON value per line (JSON Lines), or None when a line is not JSON."""
    docs = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            docs.append(Doc(json.loads(line), {(): (lineno, 1)}, lineno))
        except (ValueError, RecursionError):
            return None
    return docs


_JSONC_TOKEN = re.compile(r'"|//|/\*|,')
_JSON_STRING_REST = re.compile(r'(?:[^"\\\n]|\\.)*"')
_CLOSER_NEXT = re.compile(r"\s*[\]}]")


def _strip_jsonc(text: str) -> str | None:
    """The text with // and /* */ comments and trailing commas blanked (same
    length and lines), or None when it has none. Comments go first, so a comma
    before a comment and a closer (``],\n  // "x": 1\n}``) is trailing too.
    Linear on any input."""
    if "//" not in text and "/*" not in text and not re.search(r",\s*[\]}]", text):
        return None
    without_comments = _blank_jsonc(text, commas=False)
    if without_comments is None:
        return None
    stripped = _blank_jsonc(without_comments, commas=True)
    if stripped is None:
        return None
    return stripped if stripped != text else None


def _blank_jsonc(text: str, commas: bool) -> str | None:
    """One pass outside strings: comments blanked, or (``commas``) commas before a closer; None for an
    unterminated string."""
    out = list(text)
    pos = 0
    while True:
        m = _JSONC_TOKEN.search(text, pos)
        if m is None:
            break
        tok, at = m.group(), m.start()
        if tok == '"':
            end = _JSON_STRING_REST.match(text, at + 1)
            if end is None:
                return None  # an unterminated string: not JSONC either
            pos = end.end()
            continue
        if tok == ",":
            pos = at + 1
            if commas and _CLOSER_NEXT.match(text, pos):
                out[at] = " "
            continue
        end = text.find("\n", at) if tok == "//" else text.find("*/", at + 2)
        end = len(text) if end < 0 else (end if tok == "//" else end + 2)
        if not commas:
            for i in range(at, end):
                if out[i] != "\n":
                    out[i] = " "
        pos = end
    return "".join(out)


def parse_toml(text: str, path: str) -> Source:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        data = tomllib.loads(text)
    except RecursionError:
        raise LimitExceeded("TOML nested too deeply for the parser to follow") from None
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
