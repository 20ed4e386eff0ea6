"""Launcher commands a Python file runs: ``subprocess.run(["torchrun", "--nproc_per_node=8", "train.py"])``,
``os.system("accelerate launch train.py")``, a ``shell=True`` string. Each is read as the shell reader reads a command
line (gpulint.read.shell.commands) and becomes a ``launch`` of this file, as a shell script's would: a Python
launcher (a SageMaker entry script that starts torchrun, a ``run.py`` that builds the command) is then followed
like a shell one. A list element or f-string part not known here is a word decided at run time.

Only launchers are read (python, torchrun, accelerate, deepspeed, srun, the packaged trainers' CLIs ...): a
``pip install`` or ``nvidia-smi`` is no launch. A launch inside a Modal GPU Function is that Function's
(gpulint.read.python.modal), read there with the Function's compute target.
"""
from __future__ import annotations

import ast

from gpulint.core.model import Fact
from gpulint.read.python.common import Facts, norm
from gpulint.read.python.index import Call
from gpulint.read.shell.commands import Word, parse_words
from gpulint.read.shell.lexer import split_words

SUBPROCESS = frozenset({"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output",
                        "subprocess.Popen"})
SHELL = frozenset({"os.system"})
#: every call that runs a command line
COMMANDS = tuple(sorted(SUBPROCESS | SHELL))
#: launch tools a Python file's command may start (a bare shell or an unknown program is no launch)
_NO_LAUNCH = (None, "shell")


def subprocess_launches(f: Facts) -> None:
    """The launches of the file's subprocess calls, except those a Modal Function already read."""
    if not f.ix.imports_any("subprocess", "os"):
        return
    taken = {(x.loc.line, x.loc.column) for x in f.out if x.kind == "launch"}
    for c in f.ix.calls_to(*COMMANDS):
        loc = f.src.node_loc(c.node)
        if (loc.line, loc.column) in taken:
            continue
        for value in launches_of(f, c):
            f.out.append(Fact("launch", value, loc, value["tool"], "", {"via": c.qualname}))


def launches_of(f: Facts, c: Call, rewrite=None) -> list[dict]:
    """The launch values of the command `c` runs (``rewrite`` maps each known word's text first)."""
    words = command_words(f, c)
    if not words:
        return []
    if rewrite is not None:
        words = [Word(rewrite(w.text), w.line, known=w.known) if w.known else w for w in words]
    launch = parse_words(words)
    if launch is None or launch.value.get("tool") in _NO_LAUNCH:
        return []
    return [one.value for one in [launch, *launch.more] if one.value.get("tool") not in _NO_LAUNCH]


def command_words(f: Facts, c: Call) -> list[Word] | None:
    """The words of the command a call of ``COMMANDS`` runs: ``subprocess.run([...])`` (a list, or a string with
    ``shell=True``) or ``os.system("...")``; a list element not known here is an unresolved word."""
    arg = c.positional(0) if c.positional(0) is not None else f.kwarg(c, "args")
    if arg is None:
        return None
    line = c.node.lineno
    if arg.__class__ is ast.Name:  # cmd = ["torchrun", ...]; subprocess.run(cmd)
        bound = f.ix.bindings(arg.id, c.scope, arg) or []
        if len(bound) == 1 and bound[0].value.__class__ in (ast.List, ast.Tuple) and \
                (arg.id, bound[0].scope) not in f.ix.mutated:
            arg = bound[0].value
    if arg.__class__ in (ast.List, ast.Tuple):
        words = []
        for e in arg.elts:
            if e.__class__ is ast.Starred:
                return None
            v = norm(f.ev.value(e, c.scope))
            words.append(Word(str(v), line) if isinstance(v, (str, int)) and not isinstance(v, bool) else
                         Word("$_UNKNOWN", line, known=False))
        return words
    v = norm(f.ev.value(arg, c.scope)) if arg.__class__ is not ast.JoinedStr else _template(f, arg, c.scope)
    if isinstance(v, str) and (c.qualname in SHELL or norm(f.val(c, "shell")) is True):
        return [Word(w, line, known="$" not in w and "`" not in w) for w in split_words(v)]
    return None


def _template(f: Facts, node: ast.JoinedStr, scope: str) -> str:
    """An f-string command line with each part not known here written as ``${_}``: a word holding one is decided at
    run time (``axolotl train /root/configs/{config}``), the other words are read as written."""
    parts = []
    for p in node.values:
        if p.__class__ is ast.Constant and isinstance(p.value, str):
            parts.append(p.value)
            continue
        v = norm(f.ev.value(p.value, scope)) if p.__class__ is ast.FormattedValue else None
        parts.append(str(v) if isinstance(v, (str, int)) and not isinstance(v, bool) else "${_}")
    return "".join(parts)
