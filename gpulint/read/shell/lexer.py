"""The shell lexer: text to tokens (words with their parts, operators, redirections, arrays).

A leaf module: it knows quoting, ``$`` expansions as written, heredocs and
positions, and nothing of what the words mean. The shell reader
(:mod:`gpulint.read.shell.scanner`), the command parser
(:mod:`gpulint.read.shell.commands`) and the Dockerfile reader build on it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["ASSIGN_HEAD", "Lexer", "Tok", "lit_text", "matching", "source_text", "split_words"]

#: ``NAME=`` or ``NAME+=`` at the head of a word (an assignment)
ASSIGN_HEAD = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(\+?)=")


@dataclass
class Tok:
    kind: str  # "word" | "op" | "redir" | "array"
    text: str  # source text (op text for operators)
    line: int
    column: int
    parts: list = field(default_factory=list)  # word parts, see Lexer._word
    items: list = field(default_factory=list)  # array elements (word Tok)


OPS = ("&&", "||", ";;", "|&", ";", "|", "&", "(", ")")
REDIRS = ("<<<", "<<-", "&>>", "<<", ">>", ">&", "<&", "<>", ">|", "&>", ">", "<")


class Lexer:
    """``indent`` is added to the column of every line after the first (text that was
    dedented before lexing, such as a Terraform ``<<-EOF`` heredoc)."""

    def __init__(self, text: str, line: int = 1, column: int = 1, indent: int = 0):
        self.s = text
        self.p = 0
        self.line0, self.col0 = line, column
        self.indent = indent
        self.heredocs: list[tuple[str, bool]] = []
        self._nl = [i for i, c in enumerate(text) if c == "\n"]

    def pos(self, p: int) -> tuple[int, int]:
        import bisect

        k = bisect.bisect_left(self._nl, p)
        if k == 0:
            return self.line0, self.col0 + p
        return self.line0 + k, p - self._nl[k - 1] + self.indent

    def tokens(self):
        s, n = self.s, len(self.s)
        while self.p < n:
            c = s[self.p]
            if c in " \t\r":
                self.p += 1
            elif c == "\\" and s.startswith("\\\n", self.p):
                self.p += 2
            elif c == "#":
                end = s.find("\n", self.p)
                self.p = n if end < 0 else end
            elif c == "\n":
                yield Tok("op", "\n", *self.pos(self.p))
                self.p += 1
                self._skip_heredocs()
            else:
                op = next((o for o in REDIRS if s.startswith(o, self.p)), None)
                if op:
                    yield from self._redirect(op)
                    continue
                op = next((o for o in OPS if s.startswith(o, self.p)), None)
                if op:
                    yield Tok("op", op, *self.pos(self.p))
                    self.p += len(op)
                    continue
                yield self._word()

    def _redirect(self, op: str):
        tok = Tok("redir", op, *self.pos(self.p))
        self.p += len(op)
        yield tok
        if op in ("<<", "<<-"):
            while self.p < len(self.s) and self.s[self.p] in " \t":
                self.p += 1
            if self.p < len(self.s) and self.s[self.p] not in "\n;|&":
                w = self._word()
                delim = "".join(p[1] for p in w.parts if p[0] == "lit")
                self.heredocs.append((delim, op == "<<-"))

    def _skip_heredocs(self):
        """Heredoc bodies are data, not commands: skip them up to their delimiter."""
        s = self.s
        while self.heredocs:
            delim, strip_tabs = self.heredocs.pop(0)
            while self.p < len(s):
                end = s.find("\n", self.p)
                end = len(s) if end < 0 else end
                line = s[self.p:end]
                self.p = min(end + 1, len(s))
                if (line.lstrip("\t") if strip_tabs else line).rstrip("\r") == delim:
                    break

    def _word(self) -> Tok:
        """Read one word into parts: ("lit", text, quoted) | ("var", name, modifier, quoted) |
        ("arr", name, quoted) | ("cmd", source)."""
        s, n = self.s, len(self.s)
        start = self.p
        line, col = self.pos(start)
        parts: list = []
        while self.p < n:
            c = s[self.p]
            if c in " \t\r\n" or c in ";&|()<>":
                if c in "<>" and parts and all(p[0] == "lit" and not p[2] and p[1].isdigit() for p in parts):
                    self.p = start  # `2>&1`: the digits are a file descriptor, not a word
                    return self._fd_redirect(start)
                if c == "(" and parts and ASSIGN_HEAD.match(lit_text(parts)) and lit_text(parts).endswith("="):
                    return self._array(start, parts)
                break
            if c == "\\":
                if s.startswith("\\\n", self.p):
                    self.p += 2
                    continue
                parts.append(("lit", s[self.p + 1:self.p + 2], True))
                self.p += 2
            elif c == "'":
                end = s.find("'", self.p + 1)
                end = n if end < 0 else end
                parts.append(("lit", s[self.p + 1:end], True))
                self.p = end + 1
            elif c == '"':
                self.p += 1
                self._dquote(parts)
            elif c == "$":
                self._dollar(parts, quoted=False)
            elif c == "`":
                end = s.find("`", self.p + 1)
                end = n if end < 0 else end
                parts.append(("cmd", s[self.p:end + 1]))
                self.p = end + 1
            else:
                m = re.compile(r"[^\s;&|()<>\\'\"$`]+").match(s, self.p)
                if m is None:  # a character regex calls whitespace but the shell does not (\x1f, \x0b ...): part of the word
                    parts.append(("lit", c, False))
                    self.p += 1
                    continue
                parts.append(("lit", m.group(0), False))
                self.p = m.end()
        return Tok("word", s[start:self.p], line, col, parts)

    def _fd_redirect(self, start: int) -> Tok:
        while self.s[self.p].isdigit():
            self.p += 1
        op = next(o for o in REDIRS if self.s.startswith(o, self.p))
        line, col = self.pos(start)
        self.p += len(op)
        return Tok("redir", op, line, col)

    def _array(self, start: int, parts: list) -> Tok:
        line, col = self.pos(start)
        self.p += 1  # "("
        items = []
        s, n = self.s, len(self.s)
        while self.p < n:
            c = s[self.p]
            if c in " \t\r\n":
                self.p += 1
            elif c == "#":
                end = s.find("\n", self.p)
                self.p = n if end < 0 else end
            elif c == ")":
                self.p += 1
                break
            elif s.startswith("\\\n", self.p):
                self.p += 2
            else:
                before = self.p
                w = self._word()
                if self.p == before:  # a stray operator character inside (...): skip it
                    self.p += 1
                    continue
                items.append(w)
        return Tok("array", lit_text(parts)[:-1], line, col, parts, items)

    def _dquote(self, parts: list) -> None:
        s, n = self.s, len(self.s)
        buf = []
        first = len(parts)
        while self.p < n:
            c = s[self.p]
            if c == '"':
                self.p += 1
                break
            if c == "\\" and self.p + 1 < n and s[self.p + 1] in '$`"\\\n':
                if s[self.p + 1] != "\n":
                    buf.append(s[self.p + 1])
                self.p += 2
            elif c in "$`":
                if buf:
                    parts.append(("lit", "".join(buf), True))
                    buf = []
                if c == "$":
                    self._dollar(parts, quoted=True)
                else:
                    end = s.find("`", self.p + 1)
                    end = n if end < 0 else end
                    parts.append(("cmd", s[self.p:end + 1]))
                    self.p = end + 1
            else:
                buf.append(c)
                self.p += 1
        if buf or len(parts) == first:
            parts.append(("lit", "".join(buf), True))  # keeps "" as an (empty) word

    def _dollar(self, parts: list, quoted: bool) -> None:
        s, n = self.s, len(self.s)
        p = self.p
        nxt = s[p + 1] if p + 1 < n else ""
        if nxt == "(":
            end = matching(s, p + 1, "(", ")")
            parts.append(("cmd", s[p:end]))
            self.p = end
        elif nxt == "{":
            end = matching(s, p + 1, "{", "}")
            inner = s[p + 2:end - 1]
            m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*)\[[@*]\]$", inner)
            if m:
                parts.append(("arr", m.group(1), quoted))
            else:
                m = re.match(r"^([A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-])(.*)$", inner, re.S)
                name, mod = (m.group(1), m.group(2)) if m else ("", inner)
                parts.append(("var", name, mod, quoted))
            self.p = end
        elif nxt == "'" and not quoted:  # $'...' ANSI-C string: take it literally
            end = s.find("'", p + 2)
            end = n if end < 0 else end
            parts.append(("lit", s[p + 2:end], True))
            self.p = end + 1
        else:
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]").match(s, p + 1)
            if m:
                parts.append(("var", m.group(0), "", quoted))
                self.p = m.end()
            else:
                parts.append(("lit", "$", quoted))
                self.p = p + 1


def matching(s: str, p: int, open_: str, close: str) -> int:
    """Index just past the bracket matching s[p]; quotes inside are skipped."""
    depth, i, n = 0, p, len(s)
    while i < n:
        c = s[i]
        if c == "\\":
            i += 2
            continue
        if c == "'" and open_ == "(":
            j = s.find("'", i + 1)
            i = n if j < 0 else j + 1
            continue
        if c == open_:
            depth += 1
        elif c == close:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def lit_text(parts: list) -> str:
    return "".join(p[1] for p in parts if p[0] == "lit")


def split_words(text: str) -> list[str]:
    """The words of a command line as the shell would split them, quotes removed and
    expansions left as written (``$VAR``); operators are words of their own. Never raises."""
    out = []
    for tok in Lexer(text).tokens():
        if tok.kind == "op":
            if tok.text != "\n":
                out.append(tok.text)
        elif tok.kind == "redir":
            out.append(tok.text)
        elif tok.kind == "array":
            out.append(tok.text + "=(" + " ".join(source_text(i.parts) for i in tok.items) + ")")
        else:
            out.append(source_text(tok.parts))
    return out


def source_text(parts: list) -> str:
    out = []
    for p in parts:
        if p[0] == "lit":
            out.append(p[1])
        elif p[0] == "var":
            out.append("${%s%s}" % (p[1], p[2]) if p[2] else "$" + p[1])
        elif p[0] == "arr":
            out.append("${%s[@]}" % p[1])
        else:
            out.append(p[1])
    return "".join(out)
