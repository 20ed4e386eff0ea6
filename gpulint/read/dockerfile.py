"""Dockerfiles -> env facts (ENV) and the launch their ENTRYPOINT/CMD runs.

Only the final build stage matters at run time: its ENV (inherited from an
earlier stage it is built `FROM`) and the command Docker would run, which is
ENTRYPOINT followed by CMD in exec form, or `/bin/sh -c` of a shell form.
ARG defaults are used to expand ENV values (a `--build-arg` may change them;
the default is what the file says). Exec-form words are never expanded,
because Docker runs them without a shell.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from gpulint.core.model import Fact, Location
from gpulint.read.shell.commands import Word
from gpulint.read.errors import ReadError
from gpulint.read.shell.lexer import Lexer
from gpulint.read.shell.scanner import UNKNOWN, ShellScanner, _assigned_value

__all__ = ["read_dockerfile"]

_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_STRING = re.compile(r'"((?:[^"\\]|\\.)*)"')


@dataclass
class _Instr:
    name: str  # upper-case instruction
    args: str  # argument text, continuations kept (`\` + newline) so shell positions stay right
    line: int
    column: int  # column where args start


@dataclass
class _Stage:
    name: str | None
    vars: dict = field(default_factory=dict)  # ENV and ARG values visible in the stage
    env: dict = field(default_factory=dict)  # ENV name -> Fact
    cpu_torch: str | None = None  # where a RUN installs a CPU-only PyTorch build ("Dockerfile:4")
    copies: list = field(default_factory=list)  # image.copy facts: files of the build context COPY/ADD puts in the image
    entrypoint: _Instr | None = None
    cmd: _Instr | None = None


def _instructions(text: str) -> list[_Instr]:
    escape = "\\"
    lines = text.splitlines()
    m = re.match(r"^\s*#\s*escape\s*=\s*(\S)", lines[0]) if lines else None
    if m:
        escape = m.group(1)
    out: list[_Instr] = []
    k = 0
    while k < len(lines):
        raw = lines[k]
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            k += 1
            continue
        m = re.match(r"^(\s*)([A-Za-z]+)(\s+|$)", raw)
        if not m:
            k += 1
            continue
        start_line = k + 1
        col = m.end() + 1
        body = [raw[m.end():]]
        while body[-1].rstrip().endswith(escape) and k + 1 < len(lines):
            k += 1
            nxt = lines[k]
            # Docker drops comment lines inside a continued instruction; keep the line count.
            body.append(escape if nxt.strip().startswith("#") else nxt)
        k += 1
        args = "\n".join(body)
        if escape != "\\":
            args = args.replace(escape + "\n", "\\\n")
        out.append(_Instr(m.group(2).upper(), args, start_line, col))
    return out


def _exec_form(instr: _Instr) -> list[Word] | None:
    """A JSON array of strings, each with its position; None for shell form."""
    text = instr.args.strip()
    if not text.startswith("["):
        return None
    try:
        values = json.loads(text.replace("\\\n", ""))
    except ValueError:
        return None  # Docker treats invalid JSON as shell form
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        return None
    lead = len(instr.args) - len(instr.args.lstrip())
    positions = []
    for m in _STRING.finditer(instr.args):
        before = instr.args[:m.start()]
        line = instr.line + before.count("\n")
        col = instr.column + m.start() if "\n" not in before else m.start() - before.rfind("\n")
        positions.append((line, col))
    if len(positions) != len(values):
        positions = [(instr.line, instr.column + lead)] * len(values)
    return [Word(v, ln, c, "$" not in v and "`" not in v) for v, (ln, c) in zip(values, positions)]


class _Reader:
    def __init__(self, path: str):
        self.path = path
        self.stages: list[_Stage] = []
        self.global_args: dict = {}

    def run(self, text: str) -> list[Fact]:
        for ins in _instructions(text):
            handler = _HANDLED.get(ins.name)  # only instructions: `SHELL` must not reach a helper method
            if handler is not None:
                getattr(self, handler)(ins)
        if not self.stages:
            return []
        final = self.stages[-1]
        facts = sorted(final.env.values(), key=lambda f: (f.loc.line, f.loc.column))
        launches = self._launch(final)
        if final.cpu_torch:
            for f in launches:
                if f.kind == "launch":
                    f.attrs["image_cpu_torch"] = final.cpu_torch  # the command runs where torch has no CUDA
        return facts + launches + final.copies

    # -- instructions
    def _from(self, ins: _Instr) -> None:
        words = ins.args.split()
        name = words[2] if len(words) >= 3 and words[1].lower() == "as" else None
        image = words[0] if words and not words[0].startswith("--") else (words[1] if len(words) > 1 else "")
        base = next((s for s in reversed(self.stages) if s.name and s.name == image), None)
        stage = _Stage(name)
        if base is not None:  # `FROM builder`: ENV and the command carry over, ARG values do not
            stage.vars = {k: base.vars[k] for k in base.env if k in base.vars}
            stage.env = dict(base.env)
            stage.entrypoint, stage.cmd = base.entrypoint, base.cmd
            stage.cpu_torch = base.cpu_torch
            stage.copies = list(base.copies)
        self.stages.append(stage)

    def _copy(self, ins: _Instr) -> None:
        """``COPY train.py utils/ /workspace/``: the context files the image holds (flags and ``--from`` stages aside)."""
        if not self.stages:
            return
        words = [w for w in ins.args.replace("\\\n", " ").split() if not w.startswith("--")]
        if any(w.startswith("--from") for w in ins.args.split()) or len(words) < 2 or words[0].startswith("["):
            return  # a file of another stage, or the JSON form (rare for sources): nothing of the context is named
        for src in words[:-1]:
            if "$" in src or "://" in src:
                continue
            self.stages[-1].copies.append(Fact("image.copy", {"src": src, "dest": words[-1]},
                                               Location(self.path, ins.line, ins.column), key=src))

    def _run(self, ins: _Instr) -> None:
        if self.stages and _CPU_TORCH.search(ins.args):
            self.stages[-1].cpu_torch = f"{self.path}:{ins.line}"

    def _arg(self, ins: _Instr) -> None:
        for tok in Lexer(ins.args, ins.line, ins.column).tokens():
            if tok.kind != "word":
                continue
            name, eq, _ = tok.text.partition("=")
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
                continue
            scope = self.stages[-1].vars if self.stages else self.global_args
            if eq:
                rest = [("lit", tok.parts[0][1][len(name) + 1:], False)] + tok.parts[1:] if tok.parts else []
                value = _assigned_value(rest, scope)
                scope[name] = UNKNOWN if value is None else value
            elif self.stages and name in self.global_args:
                scope[name] = self.global_args[name]  # re-declared global ARG keeps its default

    def _env(self, ins: _Instr) -> None:
        if not self.stages:
            return
        stage = self.stages[-1]
        toks = [t for t in Lexer(ins.args, ins.line, ins.column).tokens() if t.kind == "word"]
        if not toks:
            return
        if "=" not in toks[0].text:  # legacy `ENV NAME value with spaces`
            name = toks[0].text
            rest = ins.args.strip()[len(name):].strip()
            value = None if "$" in rest or "`" in rest else rest.replace("\\\n", "")
            self._set_env(stage, name, value, toks[0])
            return
        updates = []
        for tok in toks:
            name, eq, _ = tok.text.partition("=")
            if not eq or not tok.parts or tok.parts[0][0] != "lit":
                continue
            rest = [("lit", tok.parts[0][1][len(name) + 1:], False)] + tok.parts[1:]
            updates.append((name, _assigned_value(rest, stage.vars), tok))
        for name, value, tok in updates:  # values see the variables as they were before this ENV
            self._set_env(stage, name, value, tok)

    def _set_env(self, stage: _Stage, name: str, value, tok) -> None:
        value = None if value is None else str(value)  # a plain string in facts, whatever its provenance
        stage.vars[name] = UNKNOWN if value is None else value
        if _ENV_NAME.match(name):
            loc = Location(self.path, tok.line, tok.column, tok.line, tok.column + len(name))
            stage.env[name] = Fact("env", {"name": name, "value": value}, loc, key=name,
                                   attrs={"exported": True, "instruction": "ENV"})
        else:
            stage.env.pop(name, None)

    def _entrypoint(self, ins: _Instr) -> None:
        if self.stages:
            self.stages[-1].entrypoint = ins
            self.stages[-1].cmd = None  # Docker: a new ENTRYPOINT resets an inherited CMD

    def _cmd(self, ins: _Instr) -> None:
        if self.stages:
            self.stages[-1].cmd = ins

    # -- the command Docker runs
    def _launch(self, stage: _Stage) -> list[Fact]:
        env_vars = {k: v for k, v in stage.vars.items() if k in stage.env and v is not UNKNOWN}
        ep, cmd = stage.entrypoint, stage.cmd
        ep_exec = _exec_form(ep) if ep else None
        cmd_exec = _exec_form(cmd) if cmd else None
        if ep is not None and ep_exec is None:
            return self._shell_launch(ep, env_vars)  # shell-form ENTRYPOINT ignores CMD
        if ep_exec is not None:
            if cmd is None:
                argv = ep_exec
            elif cmd_exec is not None:
                argv = ep_exec + cmd_exec
            else:
                argv = ep_exec + [Word("/bin/sh", cmd.line, cmd.column), Word("-c", cmd.line, cmd.column),
                                  Word(cmd.args.replace("\\\n", " ").strip(), cmd.line, cmd.column)]
            return self._exec(argv)
        if cmd is None:
            return []
        return self._exec(cmd_exec) if cmd_exec is not None else self._shell_launch(cmd, env_vars)

    def _exec(self, argv: list[Word]) -> list[Fact]:
        return ShellScanner(self.path).feed_words(argv)  # exec form: no shell, no expansion

    def _shell_launch(self, ins: _Instr, env_vars: dict) -> list[Fact]:
        return ShellScanner(self.path, env_vars).feed(ins.args, ins.line, ins.column)


_HANDLED = {"FROM": "_from", "ARG": "_arg", "ENV": "_env", "ENTRYPOINT": "_entrypoint", "CMD": "_cmd", "RUN": "_run",
            "COPY": "_copy", "ADD": "_copy"}
#: a CPU-only PyTorch build: pip from the CPU wheel index, a +cpu local version, conda's cpuonly package
_CPU_TORCH = re.compile(r"download\.pytorch\.org/whl/cpu\b|\btorch(?:vision|audio)?==[\w.]+\+cpu\b|\bcpuonly\b")


def read_dockerfile(text: str, path: str) -> list[Fact]:
    """ENV facts of the final stage and the launch its ENTRYPOINT/CMD runs."""
    if not isinstance(text, str) or "\x00" in text:
        raise ReadError("Dockerfile is not text")
    return _Reader(path).run(text)
