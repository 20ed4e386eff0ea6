"""IPython syntax in notebook cells, turned into Python with the same lines.

Jupyter's Python kernel is IPython, which accepts more than Python: line and
cell magics (``%pip install``, ``%%bash``), shell escapes (``!nvidia-smi``,
continued with a trailing backslash), captured shell output
(``files = !ls``), help (``obj?``, ``??obj``), autocall escapes
(``/f x``) and automagic (``pip install x`` without the ``%``). This module
rewrites one cell the way IPython's input transformers see it, line for line,
so every position in the result is the position in the cell:

- IPython-only statements become ``pass`` at their own indentation (a magic
  inside a loop stays inside the loop);
- ``name = !cmd`` / ``name = %magic`` keep the assignment as ``name = None``,
  so the name is still bound for what follows;
- the continuation lines of an escaped command are blanked with it;
- a cell magic whose body IPython runs as Python (``%%time``, ``%%capture``
  ...) keeps its body; any other cell magic (``%%bash``, ``%%writefile``) is
  not Python and is blanked whole.

Lines inside an open bracket or a triple-quoted string are never rewritten:
there, ``!`` and ``%`` are data. Nothing is executed.
"""
from __future__ import annotations

import re

#: cell magics whose body IPython runs as Python code in the kernel
PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun"})

#: line magics IPython's automagic runs without a leading % (IPython's default set)
AUTOMAGIC = frozenset("""
alias alias_magic autoawait autocall automagic autosave bookmark cat cd clear colors conda config connect_info cp
debug dhist dirs doctest_mode ed edit env gui hist history killbgscripts ldir less lf lk ll load load_ext loadpy
logoff logon logstart logstate logstop ls lsmagic lx macro magic man matplotlib mkdir more mv notebook page
pastebin pdb pdef pdoc pfile pinfo pinfo2 pip popd pprint precision prun psearch psource pushd pwd pycat pylab
qtconsole quickref recall rehashx reload_ext rep rerun reset reset_selective rm rmdir run save sc set_env store
sx system tb time timeit unalias unload_ext who who_ls whos xdel xmode uv
""".split())

_CELL_MAGIC = re.compile(r"^%%([\w.-]*)")  # IPython reads any first line starting %% as a cell magic, a name or not
_ESCAPE = re.compile(r"^[ \t]*(?:!|%|\?|/[A-Za-z_]|;[A-Za-z_]|,[A-Za-z_])")
_HELP_END = re.compile(r"^[ \t]*%{0,2}[\w*]+(?:\.[\w*]+|\[\d+\])*\?\??[ \t]*$")
_ASSIGN_ESCAPE = re.compile(r"^(?P<lhs>[ \t]*[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*)[ \t]*=[ \t]*(?:!|%)")
_AUTOMAGIC = re.compile(r"^[ \t]*(?P<name>[A-Za-z_]\w*)[ \t]+(?P<rest>\S.*)$")
#: an assignment left blank for the reader: nothing (or only a comment) after ``=``, or a ``<placeholder>``
_BLANK_TO_FILL = re.compile(r"^(?P<lhs>[ \t]*[A-Za-z_][\w.]*)[ \t]*=[ \t]*(?:<[^<>\n]*>[ \t]*)?(?:#.*)?$")
# what changes the bracket depth or opens a multi-line string on one line
_LINE_TOKENS = re.compile(r"""#[^\n]*|[rRbBuUfF]{0,2}(?:'''|\"\"\"|'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")|[()\[\]{}]|\\$""")


def python_lines(cell: str) -> list[str]:
    """The lines of one code cell as Python IPython would run (same number of lines)."""
    lines = _cleanup(cell.splitlines() or [""])
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is not None:
        m = _CELL_MAGIC.match(lines[first])
        if m:
            if m.group(1) not in PYTHON_CELL_MAGICS:
                return ["pass" if line.strip() else "" for line in lines]
            # the body is a cell of its own to IPython (`%%time` over a `%%bash` cell is a bash cell, timed)
            return lines[:first] + ["pass"] + (python_lines("\n".join(lines[first + 1:])) if first + 1 < len(lines) else [])
    return _line_magics(lines)


_SHELL_CELL_MAGICS = frozenset({"bash", "sh", "script"})
_SHELL_ESCAPE = re.compile(r"^[ \t]*(?:[\w.]+(?:[ \t]*,[ \t]*[\w.]+)*[ \t]*=[ \t]*)?!!?(?P<cmd>.*)$")


def shell_commands(cell: str) -> list[tuple[int, str]]:
    """Shell the cell runs: ``!cmd`` lines (joined across ``\\`` continuations), ``x = !cmd``, and the
    body of a ``%%bash``/``%%sh`` cell, as (0-based line in the cell, text). Lines inside brackets or
    strings are data, as in python_lines; nothing is run."""
    lines = _cleanup(cell.splitlines() or [""])
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return []
    m = _CELL_MAGIC.match(lines[first])
    if m:
        if m.group(1) in _SHELL_CELL_MAGICS:
            return [(first + 1, "\n".join(lines[first + 1:]))] if first + 1 < len(lines) else []
        if m.group(1) in PYTHON_CELL_MAGICS:
            return [(first + 1 + i, text) for i, text in shell_commands("\n".join(lines[first + 1:]))]
        return []
    out: list[tuple[int, str]] = []
    depth, triple, continued = 0, None, False
    i = 0
    while i < len(lines):
        line = lines[i]
        if depth == 0 and triple is None and not continued:
            e = _SHELL_ESCAPE.match(line)
            if e and not line.lstrip().startswith("!=") and _is_ipython(line):
                start, parts = i, [e.group("cmd")]
                while parts[-1].rstrip().endswith("\\") and i + 1 < len(lines):
                    i += 1
                    parts.append(lines[i])
                out.append((start, "\n".join(parts)))
                i += 1
                continue
        depth, triple, continued = _scan(line, depth, triple)
        i += 1
    return out


_PROMPTS = (re.compile(r"^(>>>|\.\.\.)( |$)"), re.compile(r"^(In \[\d+\]: |\s*\.\.\.+: )"))


def _cleanup(lines: list[str]) -> list[str]:
    """IPython's clean-up before anything else: pasted prompts (``>>> ``,
    ``In [3]: ``) are removed, and so is the indentation of the first line
    from every line (a cell may start indented). Columns shift; lines do not."""
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        return lines
    for prompt in _PROMPTS:
        if prompt.match(lines[first]):
            lines = [prompt.sub("", line, count=1) for line in lines]
            break
    head = lines[first]
    indent = head[: len(head) - len(head.lstrip(" \t"))]
    if indent:
        lines = [line[len(indent):] if line.startswith(indent) else line for line in lines]
    return lines


def _line_magics(lines: list[str]) -> list[str]:
    out: list[str] = []
    depth = 0  # open brackets carried over from previous lines
    triple: str | None = None  # an open triple-quoted string
    continued = False  # the previous Python line ended with a backslash
    escaped = False  # continuation lines of an escaped command
    for line in lines:
        if escaped:  # blank, not `pass`: a continuation line's indentation means nothing to Python
            out.append("")
            escaped = line.rstrip().endswith("\\")
            continue
        at_statement_start = depth == 0 and triple is None and not continued
        blank = _BLANK_TO_FILL.match(line) if at_statement_start else None
        if blank:
            # a course notebook's blank for the reader to fill (``PROJECT = # TODO: your project``, ``REGION = <region>``):
            # no cell runs as written; the rest of the cell is read with the blank left unknown
            out.append(f"{blank.group('lhs')} = None")
            continue
        if at_statement_start and _is_ipython(line):
            m = _ASSIGN_ESCAPE.match(line)
            out.append(f"{m.group('lhs')} = None" if m else _indent(line) + "pass")
            escaped = line.rstrip().endswith("\\")
            continue
        out.append(line)
        depth, triple, continued = _scan(line, depth, triple)
    return out


def _is_ipython(line: str) -> bool:
    if _ESCAPE.match(line) or _HELP_END.match(line) or _ASSIGN_ESCAPE.match(line):
        return True
    m = _AUTOMAGIC.match(line)
    if m and m.group("name") in AUTOMAGIC and not m.group("rest").startswith(("=", "(", "[", ",", ":", ")")):
        return not _is_python(line.strip())
    return False


def _is_python(stmt: str) -> bool:
    import ast
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(stmt)
        return True
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False


def _scan(line: str, depth: int, triple: str | None) -> tuple[int, str | None, bool]:
    """Bracket depth, open triple quote and backslash continuation after `line`."""
    pos = 0
    if triple is not None:
        end = line.find(triple)
        if end < 0:
            return depth, triple, False
        pos = end + 3
        triple = None
    continued = False
    while True:
        m = _LINE_TOKENS.search(line, pos)
        if m is None:
            break
        tok = m.group()
        pos = m.end()
        if tok.endswith(("'''", '"""')):
            quote = tok[-3:]
            end = line.find(quote, pos)
            if end < 0:
                return depth, quote, False
            pos = end + 3
        elif tok in "([{":
            depth += 1
        elif tok in ")]}":
            depth = max(0, depth - 1)
        elif tok == "\\":
            continued = True
    return depth, None, continued


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]

