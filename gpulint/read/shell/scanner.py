"""Shell and Slurm batch scripts -> env, launch and Slurm compute facts.

A small, tolerant bash lexer (quotes, `\\` continuations, `$VAR`/`${...}`/`$(...)`,
arrays, heredocs, redirections, comments) feeds a statement walker that
tracks literal variable assignments, so `torchrun --nnodes $NNODES` resolves
when `NNODES=2` was set earlier at the same level. Assignments inside
`if`/loops/`case`/functions make the variable unknown afterwards. Nothing is
ever executed; what cannot be decided statically is None.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field

from gpulint.core.model import Fact, Location
from gpulint.read.shell.commands import Word, parse_words
from gpulint.read.errors import ReadError
from gpulint.read.shell.lexer import ASSIGN_HEAD, Lexer, Tok, lit_text, split_words
from gpulint.read.shell.slurm import job_gpus, slurm_hours

__all__ = ["read_shell", "ShellScanner", "UNKNOWN", "inline_launches", "launch_provenance", "parse_command"]


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = _Unknown()
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


# ---------------------------------------------------------------- values

class _Val(str):
    """A literal value with where it came from.

    ``default_of`` names the variable whose value the caller's environment would
    use instead (``${X:-default}`` with X not set in the script); ``self_dir`` marks
    a path relative to the script's own folder (``$(dirname "$0")``).
    """

    default_of: str = ""
    self_dir: bool = False

    def __new__(cls, text: str, default_of: str = "", self_dir: bool = False):
        obj = str.__new__(cls, text)
        obj.default_of, obj.self_dir = default_of, self_dir
        return obj


@dataclass(frozen=True)
class _Alts:
    """A variable the branches of an `if` set to different literals: each value with the line that assigned it,
    and whether some path through the block leaves it to the caller's environment (``open``). It expands as
    unknown, like any value decided at run time; a launch whose script word uses it lists the candidates."""

    values: tuple  # ((value, line), ...)
    open: bool = False


#: at most this many candidates of one variable are kept; more is a table of options, not a choice
_MAX_CANDIDATES = 8


def _tags(value) -> tuple[str, bool]:
    return getattr(value, "default_of", ""), getattr(value, "self_dir", False)


# vars_ key telling the expansion that `$0` is this very file (a script read from disk,
# not a `bash -c` string or a YAML `run:` block): `$(dirname "$0")` is then its folder
_SELF = "\x00self"
_SELF_NAMES = ("0", "BASH_SOURCE")
_FILE = "\x00file"  # the script itself, while evaluating `$(dirname "$(realpath "$0")")`
_DIR = "\x00dir:"  # prefix of a folder relative to the script's folder, same evaluation
# vars_ key of the working folder a `cd` moved to: ("launcher", path) relative to the script's folder, ("", path)
# relative to wherever the caller ran it; UNKNOWN after a `cd` that cannot be followed
_CWD = "\x00cwd"
# vars_ key prefix of a variable's assigned text with its unresolved parts written back as `$NAME` (a value that is
# UNKNOWN as a whole): a `bash -c "$RUN_CMD"` expands it itself, so the command it runs is that text, those words unknown
_TEMPLATE = "\x00template:"


# ---------------------------------------------------------------- expansion

def _expand(tok: Tok, vars_: dict) -> list[Word]:
    """Expand one word with the known variables: a list of Words (splitting unquoted
    expansions on whitespace), or a single unknown Word showing the unresolved part."""
    parts = tok.parts
    if len(parts) == 1 and parts[0][0] == "arr":
        val = vars_.get(parts[0][1], UNKNOWN)
        if isinstance(val, list):
            return list(val)  # each element keeps the position where the array was written
        return [Word(tok.text, tok.line, tok.column, False)]
    out, known, split = [], True, False
    default_of, self_dir = "", False
    for i, part in enumerate(parts):
        if part[0] == "lit":
            out.append(part[1])
            continue
        if part[0] == "cmd":
            rel = _self_dir_subst(part[1], vars_)
            if rel is None:
                out.append(part[1])
                known = False
            else:
                out.append(rel)
                self_dir = self_dir or not "".join(out[:-1])
            continue
        if part[0] == "arr":
            val = vars_.get(part[1], UNKNOWN)
            if isinstance(val, list) and all(v.known for v in val):
                out.append(" ".join(v.text for v in val))
                split = split or not part[2]
                default_of = default_of or next((v.default_of for v in val if v.default_of), "")
            else:
                out.append("${%s[@]}" % part[1])
                known = False
            continue
        _, name, mod, quoted = part
        val = _var_value(name, mod, vars_)
        if val is UNKNOWN:
            out.append("${%s%s}" % (name, mod) if mod else "$" + name)
            known = False
        else:
            d, s = _tags(val)
            default_of = default_of or d
            self_dir = self_dir or (s and not "".join(out))
            out.append(val)
            if not quoted and any(ch.isspace() for ch in val) or (not quoted and val == "" and len(parts) == 1):
                split = True
    text = "".join(out)
    if not known:
        return [Word(text, tok.line, tok.column, False)]
    if self_dir:
        text = _normpath(text)
    if split:
        return [Word(t, tok.line, tok.column, True, default_of) for t in text.split()]
    return [Word(text, tok.line, tok.column, True, default_of, self_dir)]


def _normpath(text: str) -> str:
    import posixpath

    return posixpath.normpath(text) if text else text


def _var_value(name: str, mod: str, vars_: dict):
    present = name in vars_
    val = vars_.get(name, UNKNOWN)
    if isinstance(val, _Alts):
        val = UNKNOWN  # one of several values: decided at run time
    if isinstance(val, list):
        val = (_Val(val[0].text, val[0].default_of) if val and val[0].known else UNKNOWN)
    if not mod:
        return val
    if name in _SELF_NAMES and mod in ("%/*", "[0]%/*") and vars_.get(_SELF):
        return _Val(".", self_dir=True)  # `${0%/*}`: the script's folder
    m = re.match(r"^(:?)([-=+?])(.*)$", mod, re.S)
    if not m:
        return UNKNOWN  # ${X%...}, ${X/...}, ${X:0:3}: not worth modelling
    colon, op, word = m.groups()
    if op == "?":
        return val  # `${X:?message}`: X, or the script stops
    if val is UNKNOWN:
        if present or op == "+":
            return UNKNOWN  # set in the script to something undecidable, or `${X:+...}` of the unknown X
        # not set anywhere in the script: the default applies unless the caller's environment sets X
        dflt = _default_word(word, vars_)
        if dflt is None:
            return UNKNOWN
        return _Val(dflt, default_of=name, self_dir=_tags(dflt)[1])
    empty = val == "" if colon else False
    if op in "-=":
        if empty:
            dflt = _default_word(word, vars_)
            return UNKNOWN if dflt is None else dflt
        return val
    if empty or val == "":
        return ""
    alt = _default_word(word, vars_)
    return UNKNOWN if alt is None else alt


def _defaulted_alts(parts, vars_: dict, line: int) -> _Alts | None:
    """``${S:=word}`` / ``${S:-word}`` (the whole right of an assignment) where an `if` left S one of several
    literals: those values, with ``word`` in place of an empty one and, where some path left S unset, ``word``
    as one more candidate (assigned at ``line``); None for anything else or a default that does not resolve."""
    if len(parts) == 2 and parts[0] == ("lit", "", False):
        parts = parts[1:]
    if len(parts) != 1 or parts[0][0] != "var":
        return None
    _, name, mod, *_ = parts[0]
    val = vars_.get(name)
    m = re.match(r"^(:?)([-=])(.*)$", mod or "", re.S)
    if not isinstance(val, _Alts) or not m:
        return None
    colon, _op, word = m.groups()
    dflt = _default_word(word, vars_)
    if dflt is None or _tags(dflt)[1]:
        return None
    values = [((dflt, line) if colon and v == "" else (v, at)) for v, at in val.values]
    if val.open:
        values.append((dflt, line))
    seen: dict = {}
    for v, at in values:
        seen.setdefault(str(v), (v, at))
    return _Alts(tuple(seen.values()), False) if len(seen) <= _MAX_CANDIDATES else None


def _default_word(word: str, vars_: dict):
    """The word of ``${X:-word}``: quotes removed, expansions resolved; None when unknown."""
    if not any(c in word for c in "$`'\"\\"):
        return word
    values = []
    for tok in Lexer(word).tokens():
        if tok.kind != "word":
            return None
        value = _assigned_value(tok.parts, vars_)
        if value is None:
            return None
        values.append(value)
    text = " ".join(values)
    if len(values) == 1 and isinstance(values[0], _Val):
        return _Val(text, *_tags(values[0]))
    return text


def _template(parts, vars_) -> str:
    """The right of `NAME=` with what resolves substituted and the rest written as the shell would see it again."""
    out = []
    for p in parts:
        if p[0] == "lit":
            out.append(p[1])
        elif p[0] == "var":
            val = _var_value(p[1], p[2], vars_)
            out.append(("${%s%s}" % (p[1], p[2]) if p[2] else "${%s}" % p[1]) if val is UNKNOWN else str(val))
        elif p[0] == "arr":
            val = vars_.get(p[1])
            known = isinstance(val, list) and all(w.known for w in val)
            out.append(" ".join(w.text for w in val) if known else "${%s[@]}" % p[1])
        else:
            out.append("$(%s)" % p[1])
    return "".join(out)


def _assigned_value(parts, vars_) -> str | None:
    """The right of `NAME=`: no word splitting there; None when anything is unresolved."""
    out = []
    default_of, self_dir = "", False
    for p in parts:
        if p[0] == "lit":
            out.append(p[1])
        elif p[0] == "var":
            val = _var_value(p[1], p[2], vars_)
            if val is UNKNOWN:
                return None
            d, s = _tags(val)
            default_of = default_of or d
            self_dir = self_dir or (s and not "".join(out))
            out.append(val)
        elif p[0] == "arr":
            val = vars_.get(p[1])
            if not isinstance(val, list) or not all(w.known for w in val):
                return None
            out.append(" ".join(w.text for w in val))
        else:
            rel = _self_dir_subst(p[1], vars_)
            if rel is None:
                return None  # $(...) / `...`: never executed
            self_dir = self_dir or not "".join(out)
            out.append(rel)
    text = "".join(out)
    if self_dir:
        return _Val(_normpath(text), default_of, True)
    return _Val(text, default_of) if default_of else text


# ---------------------------------------------------------------- the script's own folder

def _self_dir_subst(src: str, vars_: dict) -> str | None:
    """The folder, relative to the script's own, that a substitution such as
    ``$(dirname "$0")``, ``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)`` or
    ``$(dirname "$(realpath "$0")")`` prints; None for anything else (never run)."""
    if not vars_.get(_SELF):
        return None
    if src.startswith("$(") and src.endswith(")") and not src.startswith("$(("):
        inner = src[2:-1]
    elif src.startswith("`") and src.endswith("`") and len(src) > 1:
        inner = src[1:-1]
    else:
        return None
    out = _path_of_command(inner, vars_, 0)
    return _normpath(out[len(_DIR):]) if isinstance(out, str) and out.startswith(_DIR) else None


def _path_of_command(text: str, vars_: dict, depth: int) -> str | None:
    if depth > 4:
        return None
    cmds: list[list[Tok]] = [[]]
    ops: list[str] = []
    skip = False
    for tok in Lexer(text).tokens():
        if skip:  # the target of a redirection: `&> /dev/null`
            skip = False
            continue
        if tok.kind == "redir":
            skip = True
            continue
        if tok.kind == "op":
            if cmds[-1]:
                cmds.append([])
                ops.append(tok.text)
            continue
        if tok.kind != "word":
            return None
        cmds[-1].append(tok)
    cmds = [c for c in cmds if c]
    if not cmds:
        return None
    heads = [lit_text(c[0].parts) if all(p[0] == "lit" for p in c[0].parts) else "" for c in cmds]
    if len(cmds) == 2 and heads == ["cd", "pwd"] and ops[0] in ("&&", ";", "\n"):
        args = [w for w in cmds[0][1:] if lit_text(w.parts) not in ("--", "-P", "-L") or len(w.parts) > 1]
        path = _path_of_word(args[0], vars_, depth) if len(args) == 1 else None
        return path if path is not None and path.startswith(_DIR) else None
    if len(cmds) != 1:
        return None
    head = heads[0]
    flags = [lit_text(w.parts) for w in cmds[0][1:] if len(w.parts) == 1 and w.parts[0][0] == "lit"
             and w.parts[0][1].startswith("-")]
    args = [w for w in cmds[0][1:] if not (len(w.parts) == 1 and w.parts[0][0] == "lit" and w.parts[0][1].startswith("-"))]
    if len(args) != 1:
        return None
    path = _path_of_word(args[0], vars_, depth)
    if path is None:
        return None
    if head == "dirname":
        if path == _FILE:
            return _DIR + "."
        return _DIR + _normpath(path[len(_DIR):] + "/..")
    if head == "realpath" or (head == "readlink" and any(f in ("-f", "-e", "-m") for f in flags)):
        return path
    return None


def _path_of_word(tok: Tok, vars_: dict, depth: int) -> str | None:
    """A word inside such a substitution: the script file, a folder relative to the
    script's folder, or None."""
    out = []
    for part in tok.parts:
        if part[0] == "lit":
            out.append(part[1])
        elif part[0] == "var" and part[1] in _SELF_NAMES and part[2] in ("", "[0]"):
            out.append(_FILE)
        elif part[0] == "var":
            val = vars_.get(part[1])
            if part[2] or not isinstance(val, str) or not _tags(val)[1]:
                return None
            out.append(_DIR + val)
        elif part[0] == "cmd" and part[1].startswith("$(") and not part[1].startswith("$(("):
            inner = _path_of_command(part[1][2:-1], vars_, depth + 1)
            if inner is None:
                return None
            out.append(inner)
        else:
            return None
    if out == [_FILE]:
        return _FILE
    if not out or not out[0].startswith(_DIR) or any(_FILE in o or _DIR in o for o in out[1:]):
        return None
    return _DIR + _normpath("".join([out[0][len(_DIR):]] + out[1:]))


# ---------------------------------------------------------------- statements

_BLOCK_OPEN = {"if", "while", "until", "for", "case", "select", "{"}
_BLOCK_CLOSE = {"fi", "done", "esac", "}"}
_BRANCH = {"else", "elif"}
_PASS = {"then", "do", "!", "time"}
_DECLARE = {"export", "declare", "typeset", "local", "readonly"}
_UNSET = object()  # a frame's memory of a variable the script had not set before the block


@dataclass
class _Frame:
    kind: str = ""  # the opening word: if, for, case, {, ( ...
    before: dict = field(default_factory=dict)
    changed: set = field(default_factory=set)
    before_line: dict = field(default_factory=dict)  # the line that assigned each `before` value
    ends: list = field(default_factory=list)  # `if`: {name: (value, line)} at the end of each branch before the last
    has_else: bool = False  # `if`: some branch runs on every path


class ShellScanner:
    """Walks shell text statement by statement, collecting env and launch facts.

    Used for every piece of shell gpulint reads: script files, Makefile recipes,
    Dockerfile RUN/CMD, SkyPilot ``run:``, container ``sh -c``, Terraform
    ``user_data`` and DVC ``cmd`` (`feed` takes the fragment's starting line and
    column). ``self_path`` says that ``$0`` is the file being read, so
    ``$(dirname "$0")`` is its folder.
    """

    def __init__(self, path: str, variables: dict | None = None, env_names=_ENV_NAME, launch_target: str = "",
                 self_path: bool = False, programs: bool = False):
        self.path = path
        # In a batch script every launch runs on the script's allocation, so it shares
        # the compute target ("slurm"); elsewhere each launch is its own "launchN".
        self.launch_target = launch_target
        self.vars: dict = dict(variables or {})
        if self_path:
            self.vars[_SELF] = True
        self.stack: list[_Frame] = []
        self.facts: list[Fact] = []
        self.launches = 0
        # `fairseq-train data --fp16`: a command that may be a console script of the repository's packaging (the
        # linker decides); only script files ask for these, other shell text (user data, RUN lines) never
        self.programs = programs
        self.program_launches = 0
        self.lines: dict[str, int] = {}  # the line that assigned each variable's current value
        self.env_names = env_names
        self.found: list = []  # every Launch, in order (for `bash -c` strings scanned inside a command)
        # files and folders the script downloads (wget -O x.py, curl -o x.py, git clone URL dir), and whether it
        # has cd'ed into one: a script run from there is not the repository's file of the same name
        self.fetched: set[str] = set()
        self.in_fetched = False

    # -- public
    def feed(self, text: str, line: int = 1, column: int = 1, indent: int = 0) -> list[Fact]:
        start = len(self.facts)
        cmd: list[Tok] = []
        skip_target = False
        for tok in Lexer(text, line, column, indent).tokens():
            if tok.kind == "op":
                if tok.text == "(" and not cmd:
                    self._push("(")
                    continue
                if tok.text == "(" and cmd:
                    cmd = []  # `name() {`: a function definition; its body follows
                    skip_target = True
                    continue
                if tok.text == ")" and skip_target:
                    skip_target = False
                    continue
                if cmd:
                    self._statement(cmd, background=tok.text == "&")
                cmd = []
                if tok.text == ")" and self.stack and self.stack[-1].kind == "(":
                    self._pop()  # end of a subshell; in `case`, `pat)` closes nothing
                continue
            if tok.kind == "redir":
                skip_target = False
                cmd.append(tok)
                continue
            cmd.append(tok)
        if cmd:
            self._statement(cmd)
        return self.facts[start:]

    def feed_words(self, words: list[Word]) -> list[Fact]:
        """An exec-form command (Dockerfile ``CMD [...]``, a container's command+args):
        words Docker or the kubelet pass on without a shell."""
        start = len(self.facts)
        launch = parse_words(words, self.vars, inline_launches)
        if launch is not None:
            self._launched(launch, [])
        return self.facts[start:]

    # -- scopes
    def _push(self, kind: str = ""):
        self.stack.append(_Frame(kind))

    def _pop(self):
        if not self.stack:
            return
        frame = self.stack.pop()
        alts = self._branch_values(frame) if frame.kind == "if" else {}
        for name, before in frame.before.items():
            now = self.vars.get(name, _UNSET)
            if name in frame.changed or now is not before and now != before:
                self._set(name, alts.get(name, UNKNOWN))

    def _branch_values(self, frame: _Frame) -> dict:
        """What each variable an `if` assigned may hold after it: {name: _Alts} for those whose every path
        ends on a literal (or on the caller's environment, for a variable the script had not set)."""
        last = {n: (self.vars.get(n, _UNSET), self.lines.get(n)) for n in frame.before}
        ends = frame.ends + [last] + ([] if frame.has_else else [{}])  # {}: the path through no branch
        out = {}
        for name, before in frame.before.items():
            values: list = []
            open_ = False
            for end in ends:
                val, line = end.get(name, (before, frame.before_line.get(name)))
                if val is _UNSET:
                    open_ = True  # the script leaves it unset there: the environment's value, if any
                elif isinstance(val, _Alts):
                    values += val.values
                    open_ = open_ or val.open
                elif isinstance(val, str) and not _tags(val)[1]:
                    values.append((val, line))
                else:
                    break  # unknown on some path (or a path relative to the script's folder): no candidates
            else:
                seen: dict = {}
                for val, line in values:
                    seen.setdefault(str(val), (val, line))
                if seen and len(seen) <= _MAX_CANDIDATES:  # in the order the script assigns them
                    order = sorted(seen.values(), key=lambda vl: (vl[1] is None, vl[1] or 0))
                    out[name] = _Alts(tuple(order), open_)
        return out

    def _branch(self, word: str = "else"):
        """`else`/`elif`: the next branch does not see what the previous one assigned."""
        if not self.stack:
            return
        frame = self.stack[-1]
        if frame.kind == "if":
            frame.ends.append({n: (self.vars.get(n, _UNSET), self.lines.get(n)) for n in frame.before})
            frame.has_else = frame.has_else or word == "else"
        for name, before in frame.before.items():
            if self.vars.get(name, _UNSET) != before:
                frame.changed.add(name)
            if before is _UNSET:
                self.vars.pop(name, None)
            else:
                self.vars[name] = before
            line = frame.before_line.get(name)
            if line is None:
                self.lines.pop(name, None)
            else:
                self.lines[name] = line

    def _set(self, name: str, value, line: int | None = None) -> None:
        """Assign (at `line`, when a literal); UNKNOWN records that the script set it to something undecidable."""
        if self.stack:
            for fr in self.stack:  # every enclosing frame must learn of it
                if name not in fr.before:
                    fr.before[name] = self.vars.get(name, _UNSET)
                    fr.before_line[name] = self.lines.get(name)
        self.vars[name] = value
        if line is None:
            self.lines.pop(name, None)
        else:
            self.lines[name] = line

    # -- one simple command
    def _statement(self, toks: list[Tok], background: bool = False) -> None:
        """One simple command; ``background``: it ends in ``&``, so the script goes on while it runs (a sweep that
        starts one run per GPU, often in a loop): its launch is one of several running at once."""
        toks = self._drop_redirects(toks)
        while toks and toks[0].kind == "word" and len(toks[0].parts) == 1 and toks[0].parts[0][0] == "lit" \
                and not toks[0].parts[0][2]:
            word = toks[0].parts[0][1]
            if word in _BLOCK_OPEN:
                self._push(word)
                if word in ("for", "select"):
                    if len(toks) > 1 and _NAME.match(toks[1].text):
                        self._set(toks[1].text, UNKNOWN)
                    return
                if word == "case":
                    return
                toks = toks[1:]
            elif word in _BLOCK_CLOSE:
                self._pop()
                toks = toks[1:]
            elif word in _BRANCH:
                self._branch(word)
                toks = toks[1:]
            elif word in _PASS:
                toks = toks[1:]
            elif word == "function":
                toks = toks[2:]
            else:
                break
        if not toks:
            return
        self._assign_defaults(toks)
        assigns = []
        while toks and (toks[0].kind == "array" or (toks[0].kind == "word" and toks[0].parts
                                                     and toks[0].parts[0][0] == "lit" and not toks[0].parts[0][2]
                                                     and ASSIGN_HEAD.match(toks[0].parts[0][1]))):
            assigns.append(toks.pop(0))
        if not toks:
            for a in assigns:
                self._assign(a, exported=False)
            return
        head = toks[0]
        if head.kind == "word" and head.text in _DECLARE:
            for t in toks[1:]:
                if t.kind == "array" or (t.kind == "word" and t.parts and t.parts[0][0] == "lit"
                                         and ASSIGN_HEAD.match(t.parts[0][1])):
                    self._assign(t, exported=head.text == "export" or head.text in ("declare", "typeset")
                                 and any(o.text.startswith("-") and "x" in o.text for o in toks[1:]))
            return
        if head.kind == "word" and head.text == "unset":
            for t in toks[1:]:
                if _NAME.match(t.text):
                    self._set(t.text, "")
            return
        if head.kind == "word" and head.text in ("read", "mapfile", "readarray", "getopts"):
            for t in toks[1:]:
                if _NAME.match(t.text):
                    self._set(t.text, UNKNOWN)
            return
        words: list[Word] = []
        for t in toks:
            if t.kind == "word":
                words.extend(_expand(t, self.vars))
        if self._fetches(words):
            return
        launch = parse_words(words, self.vars, inline_launches, programs=self.programs)
        launch = self._with_candidates(toks, launch)
        if launch is None:
            return
        self._launched(launch, assigns, background)

    def _with_candidates(self, toks: list[Tok], launch):
        """A launch whose script word holds a variable an `if` set to several literals (`torchrun $SCRIPT`):
        the command read once per value, each script kept as a candidate (``attrs.script_candidates``) while
        the launch's own script stays None. Only one such variable per command, and only when every value
        gives a launch of the same tool with a script or module (`python $S` is no launch without them)."""
        if launch is not None and (launch.more or launch.value.get("script") is not None
                                   or launch.value.get("module") is not None):
            return launch
        names = list(dict.fromkeys(p[1] for t in toks if t.kind == "word" for p in t.parts
                                   if p[0] == "var" and isinstance(self.vars.get(p[1]), _Alts)))
        # the one such variable whose every value gives the script (`srun ${AUTO_RESUME} torchrun $SCRIPT`: the
        # flag's values give no script while SCRIPT is unknown, so SCRIPT is the choice)
        choices = [(name, found) for name in names if (found := self._candidates(toks, name, launch))]
        if len(choices) != 1:
            return launch
        name, found = choices[0]
        alts = self.vars[name]
        if launch is None:  # read as the first value gave it, without the value
            launch = found[0][0]
            launch.value[found[0][1]] = None
            launch.notes.pop("overridable", None)
        launch.notes["script_candidates"] = [e for _, _, e in found]
        if alts.open:
            launch.notes["script_candidates_open"] = [name]
        return launch

    def _candidates(self, toks: list[Tok], name: str, launch) -> list | None:
        """The command read once per value of ``name``: [(launch, "script"|"module", entry)], or None when some
        value gives no launch of the same tool with a script or module."""
        found: list = []
        for value, line in self.vars[name].values:
            vars_ = {**self.vars, name: value}
            words = [w for t in toks if t.kind == "word" for w in _expand(t, vars_)]
            one = parse_words(words, vars_, inline_launches, programs=self.programs)
            if one is None or one.more or (launch is not None and one.value["tool"] != launch.value["tool"]):
                return None
            key = "script" if one.value.get("script") is not None else "module" if one.value.get("module") else None
            if key is None or (found and key != found[0][1]):
                return None
            entry = {key: one.value[key], "var": name, "line": line}
            if _tags(value)[0]:
                entry["default_of"] = _tags(value)[0]
            if launch_provenance(one).get("relative_to"):
                entry["relative_to"] = "launcher"
            found.append((one, key, entry))
        return found

    def _launched(self, launch, assigns: list[Tok], background: bool = False) -> None:
        for one in [launch] + list(launch.more):
            self.found.append(one)
            if one.value.get("tool") == "program":  # counted apart: other launches keep their numbers
                self.program_launches += 1
                target = self.launch_target or f"program{self.program_launches}"
            else:
                self.launches += 1
                target = self.launch_target or f"launch{self.launches}"
            for a in assigns:  # `NCCL_DEBUG=INFO torchrun ...`: set for this launch only
                self._assign(a, exported=True, target=target, persist=False)
            self._emit_launch(one, target, background)

    def _fetches(self, words: list) -> bool:
        """Record what a download or clone writes (and a cd into it); True when the statement is one."""
        if not words:
            return False
        head = posixpath.basename(words[0].text)
        args = [w.text for w in words[1:]]
        out = None
        if head == "wget":
            out = next((a.split("=", 1)[1] for a in args if a.startswith("--output-document=")), None) or \
                next((args[i + 1] for i, a in enumerate(args[:-1]) if a == "-O"), None) or \
                next((posixpath.basename(a) for a in args if a.startswith(("http://", "https://"))), None)
        elif head == "curl":
            out = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-o", "--output")), None)
        elif head == "git" and args[:1] == ["clone"]:
            rest = [a for a in args[1:] if not a.startswith("-")]
            if rest:
                out = rest[1] if len(rest) > 1 else posixpath.basename(rest[0]).removesuffix(".git")
        elif head == "cd" and args:
            target = _strip_dot(args[0])
            self.in_fetched = any(target == f or target.startswith(f + "/") for f in self.fetched)
            self._cd(words[1:])
            return True
        elif head == "cd":  # the home folder
            self._set(_CWD, UNKNOWN)
            return True
        if out is None:
            return False
        self.fetched.add(_strip_dot(out))
        return True

    def _cd(self, words: list[Word]) -> None:
        """Follow the working folder: a `cd` to a folder relative to the script's own (`cd "$(dirname "$0")/.."`)
        or to a literal relative folder; anything else (an absolute folder of the machine, `cd -`, `cd $DIR`)
        makes it unknown, and a `cd` inside a block makes it unknown after the block."""
        args = [w for w in words if not (w.known and w.text in ("-P", "-L", "-e", "-@", "--"))]
        old = self.vars.get(_CWD)
        new = UNKNOWN
        if len(args) == 1 and args[0].known and args[0].text and args[0].text[0] not in "-~/":
            w = args[0]
            if w.self_dir:
                new = ("launcher", _normpath(w.text))
            elif isinstance(old, tuple):
                new = (old[0], _normpath(posixpath.join(old[1], w.text)))
            elif old is None:
                new = ("", _normpath(w.text))
        self._set(_CWD, new)

    def _assign_defaults(self, toks: list[Tok]) -> None:
        """`: "${TRAIN_SCRIPT:=../src/train.py}"` assigns the default when the script had not set it."""
        for t in toks:
            for p in t.parts if t.kind == "word" else ():
                if p[0] == "var" and isinstance(self.vars.get(p[1]), _Alts) and re.match(r"^:?=", p[2]):
                    self._set(p[1], _defaulted_alts([p], self.vars, t.line))  # `: ${S:=x}` after an `if` set S
                    continue
                if p[0] == "var" and p[1] not in self.vars and _NAME.match(p[1]) and re.match(r"^:?=", p[2]):
                    value = _var_value(p[1], p[2], self.vars)
                    self._set(p[1], value, t.line)
                    if value is not UNKNOWN and self.env_names.match(p[1]):
                        self.facts.append(Fact("env", {"name": p[1], "value": str(value)}, self._loc(t), key=p[1],
                                               attrs={"exported": False, "overridable": p[1]}))

    @staticmethod
    def _drop_redirects(toks: list[Tok]) -> list[Tok]:
        out, skip = [], False
        for t in toks:
            if skip:
                skip = False
                continue
            if t.kind == "redir":
                skip = True
                continue
            out.append(t)
        return out

    def _assign(self, tok: Tok, exported: bool, target: str = "", persist: bool = True) -> None:
        if tok.kind == "array":
            name = tok.text.rstrip("+")
            values = []
            for item in tok.items:
                values.extend(_expand(item, self.vars))
            if persist:
                self._set(name, values)
            return
        m = ASSIGN_HEAD.match(tok.parts[0][1])
        name, append = m.group(1), m.group(2)
        rest = [("lit", tok.parts[0][1][m.end():], False)] + tok.parts[1:]
        alts = None if append else _defaulted_alts(rest, self.vars, tok.line)
        if alts is not None and persist:  # `S=${S:=../src/train.py}` after an `if` set S: each value stays a candidate
            self._set(name, alts)
            return
        value = _assigned_value(rest, self.vars)
        if append:
            old = self.vars.get(name, UNKNOWN)
            value = old + value if isinstance(old, str) and value is not None else None
        if persist:
            self._set(name, UNKNOWN if value is None else value, tok.line)
            fresh = value is None and not append  # unresolved as a whole: keep its text for a `bash -c "$NAME"`
            if fresh or _TEMPLATE + name in self.vars:
                self._set(_TEMPLATE + name, _template(rest, self.vars) if fresh else UNKNOWN)
        if self.env_names.match(name):
            attrs = {"exported": exported}
            if self.stack:
                attrs["conditional"] = True
            default_of, self_dir = _tags(value)
            if default_of:
                attrs["overridable"] = default_of
            if self_dir:  # an absolute path at run time; only its place relative to the script is known
                attrs["script_dir"] = str(value)
                value = None
            self.facts.append(Fact("env", {"name": name, "value": None if value is None else str(value)},
                                   self._loc(tok, len(name)), key=name, target=target, attrs=attrs))

    def _loc(self, w, length: int = 0) -> Location:
        end = w.column + length if length else None
        return Location(self.path, w.line, w.column, w.line if end else None, end)

    def _emit_launch(self, launch, target: str, background: bool = False) -> None:
        v = launch.value
        flags = {k: [w.line, w.column] for k, w in launch.flags.items()}
        attrs = {"flags": flags, **launch_provenance(launch), **launch.notes}
        if background:
            attrs["background"] = True
        if v.get("script") is None and v.get("module") is None and "script_candidates" not in attrs:
            # `torchrun $CODE_DIR/train.py`: the script word is decided at run time; kept as written, so the
            # workloads report can say which launch it could not join and why
            held = next((w.text for w in launch.words or [] if not w.known and w.text.endswith(".py")), None)
            if held:
                attrs["script_unresolved"] = held
        cwd = self.vars.get(_CWD)
        if isinstance(cwd, tuple) and (cwd[0] or cwd[1] != "."):
            attrs["cwd"] = {"path": cwd[1], **({"relative_to": "launcher"} if cwd[0] else {})}
        script = _strip_dot(v.get("script") if isinstance(v.get("script"), str) else "")
        if script and (self.in_fetched and not script.startswith("/") or
                       any(script == f or script.startswith(f + "/") for f in self.fetched)):
            attrs["fetched"] = True  # downloaded or cloned at run time: not the repository's file of that name
        self.facts.append(Fact("launch", v, self._loc(launch.head), key=v["tool"], target=target, attrs=attrs))
        for name, value, w in launch.env:
            if self.env_names.match(name):
                known = value is not None and "$" not in value and "`" not in value
                self.facts.append(Fact("env", {"name": name, "value": value if known else None},
                                       self._loc(w, len(name)), key=name, target=target,
                                       attrs={"exported": True, "scope": "command"}))
        mp = v.get("mixed_precision")
        if v["tool"] == "accelerate" and mp is not None:
            flag = next((k for k in launch.flags if k.lstrip("-").replace("-", "_") == "mixed_precision"), "")
            fw = launch.flags.get(flag, launch.head)
            dtype = mp if mp in ("no", "fp16", "bf16", "fp8") else None
            self.facts.append(Fact("precision", {"mechanism": "launcher", "dtype": dtype, "enabled": mp != "no"},
                                   self._loc(fw), key=flag or "--mixed_precision", target=target))


def _strip_dot(path: str) -> str:
    return path[2:] if path.startswith("./") else path.rstrip("/")


def launch_provenance(launch) -> dict:
    """Attributes saying where a launch's values came from: ``overridable`` maps the
    script (``"script"``/``"module"``) or a flag as written to the variable whose
    default supplied it; ``relative_to: "launcher"`` says the script path was built
    from the launcher's own folder (``$(dirname "$0")/train.py``)."""
    out: dict = {}
    words = launch.words or []
    v = launch.value
    over: dict = {}
    for key in ("script", "module"):
        text = v.get(key)
        if not isinstance(text, str):
            continue
        w = next((w for w in words if w.known and w.text == text), None)
        if w is not None and w.default_of:
            over[key] = w.default_of
        if w is not None and w.self_dir and key == "script":
            out["relative_to"] = "launcher"
    ids = {id(w): i for i, w in enumerate(words)}
    for flag, fw in launch.flags.items():
        k = ids.get(id(fw))
        vw = fw if "=" in fw.text or k is None else (words[k + 1] if k + 1 < len(words) else None)
        if vw is not None and vw.default_of:
            over[flag] = vw.default_of
    if over:
        out["overridable"] = over
    if launch.prefix:
        out["unknown_prefix"] = launch.prefix  # it may wrap the launcher (a profiler) or not run it (echo)
    return out


def inline_launches(src: Word, variables: dict | None = None) -> list:
    """The launches of a ``bash -c "<script>"`` string, scanned like any script (its
    ``$0`` is not a file). Positions point into the string."""
    vars_ = {k: v for k, v in (variables or {}).items() if k != _SELF}
    scanner = ShellScanner("", vars_)
    text, col = src.text, src.column + (1 if "\n" not in src.text else 0)
    ref = None if src.known else re.fullmatch(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", text)
    if ref is not None and isinstance(vars_.get(_TEMPLATE + ref.group(1)), str):
        # `bash -c "$RUN_CMD"`: the command assigned to RUN_CMD, its unresolved words left unknown; positions are
        # the reference's own, the line that runs it
        text, col = " ".join(vars_[_TEMPLATE + ref.group(1)].split()), src.column
    try:
        scanner.feed(text, src.line, col)
    except RecursionError:
        return []
    env_before: list = []
    out = []
    k = 0
    for f in scanner.facts:
        if f.kind == "env" and not f.target:
            env_before.append((f.value["name"], f.value["value"], Word(f.value["name"], f.loc.line, f.loc.column)))
        elif f.kind == "launch":
            launch = scanner.found[k]
            k += 1
            launch.env = env_before + launch.env
            out.append(launch)
    return out


def parse_command(argv: list[str]) -> dict | None:
    """The `launch` value for one command (env assignments already stripped), or None;
    `bash -c` strings are read with this module's scanner."""
    launch = parse_words([Word.of(a) for a in argv], inline=inline_launches)
    return launch.value if launch else None


# ---------------------------------------------------------------- Slurm directives

# Job options that decide a node's GPUs, by the long name job_gpus() reads them under.
_SBATCH_GPU_KEYS = {"--gres": "gres", "--gpus-per-node": "gpus_per_node", "--gpus": "gpus", "-G": "gpus",
                    "--gpus-per-task": "gpus_per_task"}
_SBATCH_COUNT_KEYS = {"--nodes": "nodes", "-N": "nodes", "--ntasks": "ntasks", "-n": "ntasks",
                      "--ntasks-per-node": "ntasks_per_node"}


def _gpu_facts(facts: list[Fact], seeds: dict, gpu_opts: dict[str, tuple[str, Location, str]]) -> None:
    """The GPUs per node (and model) that the job's GPU options decide, at the option that asked for them."""
    got = job_gpus({key: val for key, (val, _, _) in gpu_opts.items()})
    if got is None:
        return
    count, kind, key = got
    _, loc, flag = gpu_opts[key]
    facts.append(Fact("compute.gpus_per_node", count, loc, key=flag, target="slurm"))
    if kind:
        facts.append(Fact("compute.accelerator", {"type": kind, "count": count}, loc, key=flag, target="slurm"))
    if key == "gpus_per_node" and count is not None:
        seeds["SLURM_GPUS_PER_NODE"] = str(count)
    if count is not None:
        seeds["SLURM_GPUS_ON_NODE"] = str(count)  # set by Slurm for every form of GPU request


def _sbatch_facts(text: str, path: str) -> tuple[list[Fact], dict]:
    """`#SBATCH` lines before the first command (sbatch stops reading there)."""
    facts: list[Fact] = []
    seeds: dict = {}
    target_at = None
    partition = constraint = None
    gpu_opts: dict[str, tuple[str, Location, str]] = {}  # long name -> (value, where, flag as written)
    for lineno, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped:
            continue
        if not stripped.startswith("#"):
            break
        if not stripped.startswith("#SBATCH"):
            continue
        offset = raw.index("#SBATCH") + len("#SBATCH")
        if target_at is None:
            target_at = (lineno, raw.index("#SBATCH") + 1)
        argv = split_words(raw[offset:])
        k = 0
        cursor = offset
        while k < len(argv):
            word = argv[k]
            col = raw.find(word, cursor)
            col = (col if col >= 0 else offset) + 1
            cursor = max(cursor, col - 1 + len(word))
            name, eq, val = word.partition("=")
            if not eq and word.startswith("-"):
                if not word.startswith("--") and len(word) > 2:
                    name, val = word[:2], word[2:]
                elif k + 1 < len(argv) and not argv[k + 1].startswith("-"):
                    val = argv[k + 1]
                    k += 1
            k += 1
            loc = Location(path, lineno, col)
            if name in ("--nodes", "-N"):
                m = re.match(r"^(\d+)(?:-(\d+))?$", val)
                count = int(m.group(1)) if m and not m.group(2) else None
                facts.append(Fact("compute.node_count", count, loc, key=name, target="slurm"))
                if m and m.group(2):
                    facts.append(Fact("compute.min_nodes", int(m.group(1)), loc, key=name, target="slurm"))
                if count is not None:
                    seeds["SLURM_JOB_NUM_NODES"] = seeds["SLURM_NNODES"] = str(count)
            elif name in _SBATCH_GPU_KEYS and (name != "--gres" or val.startswith("gpu")):
                gpu_opts[_SBATCH_GPU_KEYS[name]] = (val, loc, name)
            elif name in ("--time", "-t"):
                hours = slurm_hours(val)
                if hours is not None:
                    facts.append(Fact("compute.time_limit", hours, loc, key=name, target="slurm"))
            elif name in ("--partition", "-p"):
                partition = val or None
            elif name in ("--constraint", "-C") and val:
                constraint = val  # node features: on ParallelCluster, a compute resource's name or instance type
            elif name == "--ntasks-per-node" and val.isdigit():
                seeds["SLURM_NTASKS_PER_NODE"] = val
            if name in _SBATCH_COUNT_KEYS:  # a later option overrides an earlier one, as in sbatch
                gpu_opts[_SBATCH_COUNT_KEYS[name]] = (val, loc, name)
    _gpu_facts(facts, seeds, gpu_opts)
    if target_at is not None:
        facts.insert(0, Fact("compute.target", {"source": "slurm", "provider": None, "resource": "sbatch",
                                                "role": None, "partition": partition},
                             Location(path, *target_at), key="#SBATCH", target="slurm",
                             attrs={"constraint": constraint} if constraint else {}))
    return facts, seeds


def read_shell(text: str, path: str) -> list[Fact]:
    """Facts of a .sh/.bash/.slurm/.sbatch script; tolerant of anything that is text."""
    if not isinstance(text, str):
        raise ReadError("shell script is not text")
    if "\x00" in text:
        raise ReadError("binary content in a shell script", 1, 1)
    slurm, seeds = _sbatch_facts(text, path)
    scanner = ShellScanner(path, seeds, launch_target="slurm" if slurm else "", self_path=True, programs=True)
    try:
        facts = scanner.feed(text)
    except RecursionError as exc:  # pathological nesting; never expected from real scripts
        raise ReadError(f"shell script too deeply nested: {exc}") from None
    return slurm + facts
