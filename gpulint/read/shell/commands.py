"""One launcher command line -> the value of a `launch` fact.

The shell, Dockerfile and Makefile readers all end up with words of one simple
command; this module decides whether those words start training (`torchrun`,
`accelerate launch`, `deepspeed`, `python train.py`, possibly under `srun` /
`mpirun` / `bash -c`) and what the launcher flags say. Nothing is executed.

Values follow gpulint.core.facts: an int or string when the word is literal, None
when it is an unresolved `$VAR` or not given (precision over recall).
"""
from __future__ import annotations

import os
import posixpath
import re
from dataclasses import dataclass, field
from typing import Callable

from gpulint.read.packaged import PROGRAMS as PACKAGED_PROGRAMS, TORCHTUNE, TRAINERS, trainer_of_cli, trainer_of_module
from gpulint.read.shell.lexer import split_words
from gpulint.read.shell.slurm import job_gpus

__all__ = ["Word", "Launch", "Inline", "parse_words", "split_command_line", "empty_launch"]


@dataclass(frozen=True)
class Word:
    """One shell word after expansion. `known` is False when it still holds an
    unresolved expansion (then `text` is the source text, e.g. ``$NNODES``)."""

    text: str
    line: int = 1
    column: int = 1
    known: bool = True
    # `${X:-default}` with X not set in the script: the text is the default, which the
    # caller's environment may override; names X
    default_of: str = ""
    # the text is a path relative to the script's own folder (`$(dirname "$0")/train.py`)
    self_dir: bool = False

    @classmethod
    def of(cls, text: str) -> "Word":
        return cls(text, known=not _looks_expanded(text))

    def shifted(self, text: str, offset: int) -> "Word":
        """The part of this word that starts `offset` characters in (for --flag=value)."""
        return Word(text, self.line, self.column + offset, self.known and not _looks_expanded(text),
                    self.default_of)


@dataclass
class Launch:
    value: dict
    head: Word  # where the command starts (wrapper included)
    flags: dict = field(default_factory=dict)  # flag as written -> Word of the flag
    env: list = field(default_factory=list)  # (name, value|None, Word) set by the command itself
    more: list = field(default_factory=list)  # further launches of the same command (`bash -c "a && b"`)
    prefix: str = ""  # an unresolved word run before the launcher (`$WRAPPER torchrun ...`)
    words: list = field(default_factory=list)  # the command's words after prefixes (for provenance)
    notes: dict = field(default_factory=dict)  # further attrs of the launch fact (the shell reader's script candidates)


#: reads the launches of a `bash -c` string (the word, the variables known where it runs)
Inline = Callable[[Word, "dict | None"], "list[Launch]"]


def _looks_expanded(text: str) -> bool:
    return "$" in text or "`" in text


def empty_launch(tool: str) -> dict:
    return {
        "tool": tool, "script": None, "module": None, "args": [], "nnodes": None, "nproc_per_node": None,
        "mixed_precision": None, "config_file": None, "deepspeed_config": None,
        "num_machines": None, "num_processes": None, "wrapper": None,
    }


# ---------------------------------------------------------------- splitting

_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)


def split_command_line(line: str) -> tuple[dict, list[str]]:
    """Split one command line into (leading VAR=value assignments, argv).

    Uses the shell lexer (gpulint.read.shell.lexer), so quoting and
    comments behave as in every other shell text gpulint reads; an unbalanced
    quote is closed at the end of the line. Never raises.
    """
    words = split_words(line)
    env: dict = {}
    i = 0
    while i < len(words):
        m = _ASSIGN.match(words[i])
        if not m:
            break
        env[m.group(1)] = m.group(2)
        i += 1
    return env, words[i:]


# ---------------------------------------------------------------- helpers

def _int(word: Word | None) -> int | None:
    if word is None or not word.known:
        return None
    t = word.text.strip()
    return int(t) if t.isdigit() else None


def _str(word: Word | None) -> str | None:
    return word.text if word is not None and word.known else None


def _base(word: Word) -> str:
    return os.path.basename(word.text) if word.known else ""


_PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")
_LAUNCHERS = {"torchrun", "hyperpodrun", "accelerate", "deepspeed", "srun", "mpirun", "mpiexec", "sky", "bash", "sh",
              "dvc", "composer", "torchx", "uvicorn", "gunicorn", "hypercorn"} | {p for t in TRAINERS for p, _ in t.cli}
#: ASGI/WSGI servers: they run the application named `module:attribute`
_APP_SERVERS = {"uvicorn", "gunicorn", "hypercorn"}
_APP = re.compile(r"^([A-Za-z_][\w.]*):[A-Za-z_]\w*(\(.*\))?$")
_SHELLS = {"bash", "sh", "zsh", "dash", "ash", "ksh"}
# shell files a command may run by path (`./train.sh`, `scripts/launch.bash`)
_SHELL_FILE = re.compile(r"\.(sh|bash|zsh|slurm|sbatch)$")


def _is_tool_word(word: Word) -> bool:
    b = _base(word)
    return bool(_PYTHON.match(b)) or b in _LAUNCHERS or bool(_SHELL_FILE.search(b))


def _target_follows(words, i: int) -> bool:
    """Is the launcher's target still ahead: a known ``--module``/``-m`` flag or ``*.py`` word after `i`, with
    only flags and unresolved words before it?"""
    for w in words[i:]:
        if not w.known:
            continue
        if w.text in ("--module", "-m") or w.text.endswith(".py"):
            return True
        if not w.text.startswith("-"):
            return False
    return False


def _scan_options(words, i, bools=frozenset(), pairs=frozenset(), stop_at_tool=False, attached=True):
    """Read `-x v`, `--flag v`, `--flag=v`, boolean flags from words[i:].

    Returns (options, index of the first positional word). `options` is a list of
    (name, value Word|None, flag Word). An unknown long flag takes the next word
    as its value unless that word looks like the script (`*.py`) or a flag.
    """
    opts = []
    n = len(words)
    while i < n:
        w = words[i]
        t = w.text
        if not w.known:
            name = t.partition("=")[0]
            if t.startswith("-") and "=" in t and not _looks_expanded(name):
                pass  # `--nnodes=$NNODES`: a known flag whose value is unresolved
            elif stop_at_tool:  # an unresolved `$EXTRA_ARGS` among wrapper options: skip it
                i += 1
                continue
            elif _target_follows(words, i + 1):
                # `deepspeed $GPU_FLAGS --module training.trainer`: the unresolved word is launcher options, since
                # the script (a .py word or --module) comes after it
                i += 1
                continue
            else:
                break
        if t == "--":
            return opts, i + 1
        if not t.startswith("-") or t == "-":
            break
        if "=" in t and t.startswith("--"):
            name, _, val = t.partition("=")
            opts.append((name, w.shifted(val, len(name) + 1), w))
            i += 1
            continue
        if t in bools:
            opts.append((t, None, w))
            i += 1
            continue
        if t in pairs:  # `--mca key value`, `-genv K V`
            opts.append((t, words[i + 1] if i + 1 < n else None, w))
            i += 3
            continue
        if attached and not t.startswith("--") and len(t) > 2:  # -N4, -n16
            opts.append((t[:2], w.shifted(t[2:], 2), w))
            i += 1
            continue
        nxt = words[i + 1] if i + 1 < n else None
        if nxt is None or (nxt.known and (nxt.text.startswith("-") and not _NUMBER.match(nxt.text)
                                          or nxt.text.endswith(".py"))) \
                or (stop_at_tool and _is_tool_word(nxt) and t not in _VALUE_FLAGS):
            opts.append((t, None, w))
            i += 1
            continue
        opts.append((t, nxt, w))
        i += 2
    return opts, i


_NUMBER = re.compile(r"^-?\d+(\.\d+)?$")
# Wrapper flags known to take a value even when the value looks like a tool name.
_VALUE_FLAGS = {"-p", "--partition", "-J", "--job-name", "-w", "--nodelist"}


def _norm(flag: str) -> str:
    return flag.lstrip("-").replace("-", "_")


# ---------------------------------------------------------------- script arguments

#: a word that is one expansion and nothing else (``$EXTRA``, ``"${ARGS[@]}"``, ``$@``, ``$(cat flags.txt)``)
_WHOLE_EXPANSION = re.compile(r'^"?(?:\$\{[^}]*\}|\$\w+|\$[@*]|\$\(.*\)|`.*`)"?$', re.S)


def _script_args(value: dict, args: list[Word], flags: dict) -> None:
    """Record the script's own arguments and a DeepSpeed config passed to it."""
    value["args"] = [a.text for a in args]
    for k, a in enumerate(args):
        prev = args[k - 1] if k else None
        if not a.known and _WHOLE_EXPANSION.match(a.text) and not (prev is not None and prev.known and prev.text.startswith("-")
                                                                   and "=" not in prev.text):
            # `... --epochs 2 $BF16_FLAG`: a word that may expand to flags of its own; a flag not seen may be in it
            # (a word with literal text around the expansion, `data/en-$tgt` or `${data}/bin`, is a value: a path)
            value["args_open"] = True
    for k, a in enumerate(args):
        if not a.known or not a.text.startswith("--"):
            continue
        name, eq, val = a.text.partition("=")
        if _norm(name) not in ("deepspeed", "deepspeed_config"):
            continue
        if eq:
            vw = a.shifted(val, len(name) + 1)
        else:
            nxt = args[k + 1] if k + 1 < len(args) else None
            if nxt is None or (nxt.known and nxt.text.startswith("-")):
                continue  # `--deepspeed` as a boolean switch; the config follows in --deepspeed_config
            vw = nxt
        value["deepspeed_config"] = _str(vw)
        flags.setdefault(name, a)


# ---------------------------------------------------------------- python

_NOT_TRAINING_MODULES = {
    "pip", "venv", "virtualenv", "ensurepip", "pytest", "unittest", "doctest", "http.server", "json.tool",
    "build", "twine", "black", "isort", "flake8", "mypy", "ruff", "pylint", "coverage", "spacy",
    "nltk.downloader", "torch.utils.collect_env", "tensorboard", "tensorboard.main", "jupyter", "notebook",
    "ipykernel", "pre_commit", "setuptools", "wheel", "pydoc", "timeit", "cProfile", "profile", "pdb",
    "site", "sysconfig", "platform", "compileall", "py_compile", "zipfile", "tarfile", "wandb", "uv",
    "pipx", "grpc_tools.protoc", "huggingface_hub", "huggingface_hub.commands.huggingface_cli",
    "bitsandbytes", "torch.utils.bottleneck", "nvitop", "gpustat", "pip_audit",
}


def _parse_python(words: list[Word]) -> Launch | None:
    i = 1
    n = len(words)
    while i < n:
        t = words[i].text
        if not words[i].known:
            return None
        if t in ("-c", "-"):
            return None  # inline code / stdin: nothing to link to
        if t == "-m":
            if i + 1 >= n or not words[i + 1].known:
                return None
            return _parse_module(words, i + 1)
        if t in ("-W", "-X"):
            i += 2
            continue
        if t.startswith("-") and len(t) > 1:
            if t.startswith("-m") and len(t) > 2:  # -mtorch.distributed.run
                return _parse_module(words[:i] + [words[i].shifted(t[2:], 2)] + words[i + 1:], i)
            if t.startswith("-c"):
                return None
            i += 1
            continue
        break
    if i >= n:
        return None  # interactive interpreter
    script = words[i]
    if script.known and (os.path.basename(script.text) == "setup.py" or not script.text):
        return None
    value = empty_launch("python")
    value["script"] = _str(script)
    launch = Launch(value, words[0])
    _script_args(value, words[i + 1:], launch.flags)
    return launch


def _parse_module(words: list[Word], i: int) -> Launch | None:
    mod = words[i].text
    rest = [words[0]] + words[i + 1:]
    if mod in ("torch.distributed.run", "torch.distributed.launch"):
        return _parse_torchrun(rest, tool_word=words[0])
    if mod in ("accelerate.commands.launch",):
        return _parse_accelerate_opts(rest, 1)
    if mod in ("deepspeed.launcher.runner", "deepspeed"):
        return _parse_deepspeed(rest)
    if mod in _APP_SERVERS:
        return _parse_app_server(rest, mod)
    top = mod.split(".")[0]
    if mod in _NOT_TRAINING_MODULES or top in {"pip", "pytest", "venv", "unittest", "http", "json"}:
        return None
    value = empty_launch("python")
    value["module"] = mod
    launch = Launch(value, words[0])
    _script_args(value, words[i + 1:], launch.flags)
    return launch


def _parse_app_server(words: list[Word], tool: str | None = None) -> Launch | None:
    """``uvicorn serve.app:app --port 8080``, ``gunicorn -k uvicorn.workers.UvicornWorker app:api``,
    ``python -m uvicorn ...``: the application module is what runs (``--app-dir``/``--chdir`` is
    the folder it is imported from). Bind addresses (``0.0.0.0:8000``) never match an application."""
    app_dir = None
    for j, w in enumerate(words[1:], start=1):
        t = w.text
        if not w.known:
            continue
        if t in ("--app-dir", "--chdir") and j + 1 < len(words) and words[j + 1].known:
            app_dir = words[j + 1].text
            continue
        if t.startswith(("--app-dir=", "--chdir=")):
            app_dir = t.split("=", 1)[1]
            continue
        m = _APP.match(t)
        if m and not t.startswith("-") and (j == 1 or words[j - 1].text not in ("-k", "--worker-class", "-b", "--bind")):
            module = m.group(1)
            if app_dir and not app_dir.startswith(("/", "$")) and app_dir.strip("./"):
                module = app_dir.strip("./").replace("/", ".") + "." + module
            value = empty_launch(tool or _base(words[0]))
            value["module"] = module
            return Launch(value, words[0])
    return None


# ---------------------------------------------------------------- torchrun

_TORCHRUN_BOOLS = frozenset({"--standalone", "-m", "--module", "--no_python", "--no-python", "--run_path",
                             "--run-path", "--use_env", "--use-env"})


def _elastic_nodes(word: Word | None):
    if word is None or not word.known:
        return None
    t = word.text.strip()
    if t.isdigit():
        return int(t)
    return t if re.match(r"^\d+:\d+$", t) else None


def _torchrun_options(opts: list, launch: Launch) -> bool:
    """torchrun's options (from _scan_options) into the launch: nodes, processes per node, ``--standalone`` (one
    node); True when ``-m`` / ``--module`` says the target is a module. ``tune run`` takes the same options."""
    value = launch.value
    module = False
    for name, val, fw in opts:
        key = _norm(name)
        if key == "nnodes":
            value["nnodes"] = _elastic_nodes(val)
        elif key == "nproc_per_node":
            value["nproc_per_node"] = _int(val)  # `gpu`, `auto`, `cpu` -> unknown here
        elif key == "standalone":
            if value["nnodes"] is None and "nnodes" not in {_norm(o[0]) for o in opts}:
                value["nnodes"] = 1
        elif key in ("m", "module"):
            module = True
        else:
            continue
        launch.flags[name] = fw
    return module


def _parse_torchrun(words: list[Word], tool_word: Word | None = None) -> Launch | None:
    opts, i = _scan_options(words, 1, bools=_TORCHRUN_BOOLS)
    value = empty_launch("torchrun")
    launch = Launch(value, tool_word or words[0])
    module = _torchrun_options(opts, launch)
    if i >= len(words):
        return None  # no script: not a training launch we can link
    target = words[i]
    if module:
        value["module"] = _str(target)
    else:
        value["script"] = _str(target)
    _script_args(value, words[i + 1:], launch.flags)
    return launch


# ---------------------------------------------------------------- torchx

#: ``torchx run`` options that take no value
_TORCHX_RUN_BOOLS = frozenset({"--dryrun", "--wait", "--log", "--tee", "-h", "--help"})
#: ``-j`` of the dist.ddp component: nodes (or min:max nodes) x processes per node
_TORCHX_J = re.compile(r"^(\d+(?::\d+)?)x(\d+)$")


def _parse_torchx(words: list[Word]) -> Launch | None:
    """``torchx run [-s kubernetes -c cfg] dist.ddp -j 2x8 --gpu 8 --script train.py -- --epochs 10``: the script (or
    ``-m`` module) a TorchX component starts, its nodes and processes per node, and the script's own arguments
    after ``--``. A component of the repository (``./dist_ddp.py:ddp``) takes the same arguments."""
    if len(words) < 3 or words[1].text != "run":
        return None
    _, i = _scan_options(words, 2, bools=_TORCHX_RUN_BOOLS)
    if i >= len(words) or not words[i].known:
        return None  # the component (dist.ddp, utils.python, ./ddp.py:ddp)
    # component arguments are always `--name value` (`--debug False` included), up to `--`
    opts, j = [], i + 1
    while j < len(words) and words[j].text != "--":
        w = words[j]
        if w.known and w.text.startswith("-") and "=" in w.text:
            name, _, val = w.text.partition("=")
            opts.append((name, w.shifted(val, len(name) + 1), w))
            j += 1
        elif w.known and w.text.startswith("-") and j + 1 < len(words):
            opts.append((w.text, words[j + 1], w))
            j += 2
        else:
            j += 1
    j += 1  # past `--`
    value = empty_launch("torchx")
    launch = Launch(value, words[0])
    for name, val, fw in opts:
        key = _norm(name)
        if key == "j" and val is not None and val.known and (m := _TORCHX_J.match(val.text.strip())):
            nodes = m.group(1)
            value["nnodes"] = int(nodes) if nodes.isdigit() else nodes
            value["nproc_per_node"] = int(m.group(2))
        elif key == "script":
            value["script"] = _str(val)
        elif key in ("m", "module"):
            value["module"] = _str(val)
        else:
            continue
        launch.flags[name] = fw
    if value["script"] is None and value["module"] is None:
        return None
    rest = words[j:] if j <= len(words) else []
    _script_args(value, rest, launch.flags)
    return launch


# ---------------------------------------------------------------- packaged trainers (gpulint.read.packaged)

_TRAINER_PROGRAMS = {p for t in TRAINERS for p, sub in t.cli if sub}


def _parse_packaged(words: list[Word]) -> Launch | None:
    """``axolotl train cfg.yml``, ``llamafactory-cli train cfg.yaml``, ``tune run --nproc_per_node 8 full_finetune_distributed
    --config cfg.yaml``: the packaged trainer's module (its code is not in the repository; its config is an argument)."""
    if len(words) < 2 or not words[1].known:
        return None
    trainer = trainer_of_cli(_base(words[0]), words[1].text)
    if trainer is None or _asks_for_help(words):
        return None  # another subcommand (preprocess, inference, export, download ...), or its usage text
    value = empty_launch(_base(words[0]))
    value["trainer"] = trainer.name
    launch = Launch(value, words[0])
    rest = words[2:]
    if trainer is TORCHTUNE:
        # `tune run [torchrun options] RECIPE [--config CFG] [key=value ...]`: the options are torchrun's
        opts, i = _scan_options(words, 2, bools=_TORCHRUN_BOOLS)
        _torchrun_options(opts, launch)
        if i >= len(words) or not words[i].known:
            return None
        recipe = words[i].text
        if recipe.endswith(".py"):
            value["script"] = recipe  # a recipe file of the repository: its code is read
        elif trainer_of_module(f"{trainer.module}.{recipe}") is None:
            return None  # a recipe that does not train (eleuther_eval, generate, quantize)
        else:
            value["module"] = f"{trainer.module}.{recipe}"
        rest = words[i + 1:]
    else:
        value["module"] = trainer.module
    _script_args(value, rest, launch.flags)
    return launch


# ---------------------------------------------------------------- accelerate

_ACCEL_BOOLS = frozenset({
    "--multi_gpu", "--multi-gpu", "--use_deepspeed", "--use-deepspeed", "--use_fsdp", "--use-fsdp",
    "--use_megatron_lm", "--use-megatron-lm", "--use_xpu", "--cpu", "--tpu", "-m", "--module",
    "--no_python", "--no-python", "--debug", "-q", "--quiet", "--same_network", "--same-network",
    "--enable_cpu_affinity", "--tpu_use_cluster", "--tpu_use_sudo", "--downcast_bf16", "-h", "--help",
})


def _parse_accelerate(words: list[Word]) -> Launch | None:
    if len(words) < 2 or words[1].text != "launch":
        return None  # accelerate config / env / test
    return _parse_accelerate_opts(words, 2)


def _parse_accelerate_opts(words: list[Word], start: int) -> Launch | None:
    opts, i = _scan_options(words, start, bools=_ACCEL_BOOLS)
    value = empty_launch("accelerate")
    value.update({"multi_gpu": None, "use_deepspeed": None, "use_fsdp": None})
    launch = Launch(value, words[0])
    module = False
    for name, val, fw in opts:
        key = _norm(name)
        if key == "config_file":
            value["config_file"] = _str(val)
        elif key == "mixed_precision":
            value["mixed_precision"] = _str(val).lower() if _str(val) else None
        elif key in ("num_processes", "num_machines"):
            # an unresolved value (``--num_processes $NP``) is kept as its text: it still overrides the config
            value[key] = _int(val) if val is None or val.known else val.text
        elif key in ("multi_gpu", "use_deepspeed", "use_fsdp"):
            value[key] = True
        elif key == "deepspeed_config_file":
            value["deepspeed_config"] = _str(val)
        elif key in ("m", "module"):
            module = True
        else:
            continue
        launch.flags[name] = fw
    machines, total = value["num_machines"], value["num_processes"]
    value["nnodes"] = machines if isinstance(machines, int) else None
    if isinstance(machines, int) and isinstance(total, int) and machines and total and total % machines == 0:
        value["nproc_per_node"] = total // machines
    if i >= len(words):
        return None
    target = words[i]
    value["module" if module else "script"] = _str(target)
    _script_args(value, words[i + 1:], launch.flags)
    return launch


# ---------------------------------------------------------------- deepspeed

_DS_BOOLS = frozenset({"--no_python", "--no-python", "--module", "--no_local_rank", "--no-local-rank",
                       "--force_multi", "--force-multi", "--elastic_training", "--bind_cores_to_rank",
                       "--no_ssh_check", "--no_ssh", "--save_pid", "--autotuning_run"})


def _parse_deepspeed(words: list[Word]) -> Launch | None:
    opts, i = _scan_options(words, 1, bools=_DS_BOOLS)
    value = empty_launch("deepspeed")
    value["hostfile"] = None
    launch = Launch(value, words[0])
    module = False
    for name, val, fw in opts:
        key = _norm(name)
        if key == "num_gpus":
            value["nproc_per_node"] = _int(val)
        elif key == "num_nodes":
            value["nnodes"] = _int(val)
        elif key in ("hostfile", "H"):
            value["hostfile"] = _str(val)
        elif key == "module":
            module = True
        else:
            continue
        launch.flags[name] = fw
    if i >= len(words):
        return None
    value["module" if module else "script"] = _str(words[i])
    _script_args(value, words[i + 1:], launch.flags)
    return launch


# ---------------------------------------------------------------- skypilot

_SKY_BOOLS = frozenset({"--use-spot", "--no-use-spot", "-y", "--yes", "-d", "--detach-run", "--down",
                        "--retry-until-up", "--async", "--fast", "--dryrun", "-s", "--detach-setup"})


def _parse_sky(words: list[Word]) -> Launch | None:
    sub = [w.text for w in words[1:3]]
    if sub[:1] == ["launch"]:
        start, managed = 2, False
    elif sub[:2] in (["jobs", "launch"], ["spot", "launch"]):
        start, managed = 3, True
    else:
        return None
    opts, i = _scan_options(words, start, bools=_SKY_BOOLS)
    value = empty_launch("skypilot")
    value.update({"managed": managed, "use_spot": None, "accelerators": None, "instance_type": None})
    launch = Launch(value, words[0])
    for name, val, fw in opts:
        key = _norm(name)
        if key == "use_spot":
            value["use_spot"] = True
        elif key == "no_use_spot":
            value["use_spot"] = False
        elif key == "num_nodes":
            value["nnodes"] = _int(val)
        elif key == "gpus":
            value["accelerators"] = _str(val)
        elif key == "instance_type":
            value["instance_type"] = _str(val)
        else:
            continue
        launch.flags[name] = fw
    if i < len(words) and words[i].known and words[i].text.endswith((".yaml", ".yml")):
        value["config_file"] = words[i].text
        launch.flags.setdefault("task", words[i])
    elif value["config_file"] is None and i < len(words):
        return None  # an inline command or a cluster name we do not model
    return launch


# ---------------------------------------------------------------- wrappers

_SRUN_BOOLS = frozenset({
    "-l", "--label", "-u", "--unbuffered", "--exclusive", "--overlap", "-K", "--kill-on-bad-exit", "-v",
    "--verbose", "-Q", "--quiet", "--container-remap-root", "--no-container-remap-root",
    "--no-container-mount-home", "--container-writable", "--container-readonly", "-k", "--no-kill", "-X",
    "--disable-status", "-Z", "--no-allocate", "--pty", "-E", "--preserve-env", "-s", "--oversubscribe",
    "-O", "--overcommit", "--multi-prog", "--exact", "--whole", "--spread-job", "--contiguous", "-H", "--hold",
    "--container-entrypoint", "--no-container-entrypoint", "--container-mount-home",
})
_MPI_BOOLS = frozenset({
    "--allow-run-as-root", "-allow-run-as-root", "--oversubscribe", "-oversubscribe", "--tag-output",
    "-tag-output", "--report-bindings", "-report-bindings", "--display-map", "-display-map", "-v",
    "--verbose", "-q", "--quiet", "--noprefix", "-noprefix", "--use-hwthread-cpus", "-l", "-prepend-rank",
    "--prepend-rank", "-print-rank-map", "-bootstrap-exec-args", "--nooversubscribe", "-nooversubscribe",
})
_MPI_PAIRS = frozenset({"--mca", "-mca", "-genv", "-env", "--gmca", "-gmca"})


# srun options that count nodes, tasks and GPUs, by the long name without dashes.
_SRUN_KEYS = {"N": "nodes", "nodes": "nodes", "n": "ntasks", "ntasks": "ntasks", "ntasks_per_node": "ntasks_per_node",
              "gpus_per_node": "gpus_per_node", "gres": "gres", "G": "gpus", "gpus": "gpus",
              "gpus_per_task": "gpus_per_task"}


def _parse_srun(words: list[Word]):
    opts, i = _scan_options(words, 1, bools=_SRUN_BOOLS, stop_at_tool=True)
    wrap = {"tool": "srun", "nodes": None, "ntasks": None, "ntasks_per_node": None, "gpus_per_node": None}
    flags = {}
    gpu_opts: dict[str, str] = {}  # as job_gpus() reads them
    for name, val, fw in opts:
        key = _SRUN_KEYS.get(_norm(name))
        if key is None:
            continue
        if key in ("nodes", "ntasks", "ntasks_per_node"):
            wrap[key] = _int(val)
        gpu_opts[key] = _str(val) or ""
        flags[name] = fw
    got = job_gpus(gpu_opts)
    wrap["gpus_per_node"] = got[0] if got else None
    if wrap["ntasks_per_node"] is None and wrap["nodes"] and wrap["ntasks"] and wrap["ntasks"] % wrap["nodes"] == 0:
        wrap["ntasks_per_node"] = wrap["ntasks"] // wrap["nodes"]
    return wrap, flags, i, []


def _parse_mpirun(words: list[Word]):
    # MPI launchers spell long options with one dash (-np, -npernode, -hostfile).
    opts, i = _scan_options(words, 1, bools=_MPI_BOOLS, pairs=_MPI_PAIRS, stop_at_tool=True, attached=False)
    wrap = {"tool": _base(words[0]), "nodes": None, "ntasks": None, "ntasks_per_node": None, "gpus_per_node": None,
            "hostfile": None}
    flags, env = {}, []
    for name, val, fw in opts:
        key = _norm(name)
        if key in ("np", "n", "c"):
            wrap["ntasks"] = _int(val)
        elif key in ("N", "npernode", "ppn", "perhost"):
            wrap["ntasks_per_node"] = _int(val)
        elif key == "map_by" and val is not None and val.known:
            m = re.match(r"^ppr:(\d+):node", val.text)
            if m:
                wrap["ntasks_per_node"] = int(m.group(1))
        elif key in ("hostfile", "machinefile", "f"):
            wrap["hostfile"] = _str(val)
        elif key == "x" and val is not None and val.known:
            nm, eq, v = val.text.partition("=")
            if eq:  # `-x NAME` alone only forwards the caller's value: unknown here
                env.append((nm, v, val))
            continue
        elif key in ("genv", "env") and val is not None and val.known:
            k = words.index(fw)
            v = words[k + 2] if k + 2 < len(words) else None
            env.append((val.text, _str(v), val))
            continue
        else:
            continue
        flags[name] = fw
    if wrap["nodes"] is None and wrap["ntasks"] and wrap["ntasks_per_node"] \
            and wrap["ntasks"] % wrap["ntasks_per_node"] == 0:
        wrap["nodes"] = wrap["ntasks"] // wrap["ntasks_per_node"]
    return wrap, flags, i, env


def _find_tool(words: list[Word], i: int) -> int | None:
    """After wrapper options that held an unresolved word, resync on a known tool."""
    if i < len(words) and words[i].known and not words[i].text.startswith("-"):
        return i
    for k in range(i, len(words)):
        if words[k].known and _is_tool_word(words[k]):
            return k
    return None


def _wrapped(words: list[Word], parser, variables: dict | None = None, inline: "Inline | None" = None,
             programs: bool = False) -> Launch | None:
    wrap, flags, i, env = parser(words)
    k = _find_tool(words, i)
    if k is None:
        return None
    inner = parse_words(words[k:], variables, inline, programs)
    if inner is None and "/" in words[k].text and k + 1 < len(words) and _is_tool_word(words[k + 1]):
        inner = parse_words(words[k + 1:], variables, inline, programs)  # `srun /fsx/profile-wrapper torchrun ...`
    if inner is None:
        return None
    for one in [inner] + list(inner.more):
        v = one.value
        if v.get("wrapper") is None:
            v["wrapper"] = dict(wrap)
        if v["tool"] in ("python", "program"):
            # A plain script (or console script) started once per task: the wrapper decides the process layout.
            if v["nproc_per_node"] is None:
                v["nproc_per_node"] = wrap["ntasks_per_node"]
            if v["nnodes"] is None:
                v["nnodes"] = wrap["nodes"]
        one.head = words[0]
        one.flags = {**flags, **one.flags}
        one.env = env + one.env
    return inner


# Prefix commands that run their arguments as another command.
_PREFIX_BOOLS = {
    "exec": set(), "nohup": set(), "time": {"-p"}, "command": set(), "builtin": set(),
    "sudo": {"-E", "-H", "-n", "-S", "--preserve-env"}, "stdbuf": set(), "nice": set(), "ionice": set(),
    "numactl": {"--localalloc", "-l"}, "taskset": {"-c", "-a"}, "xvfb-run": {"-a"},
}


def _strip_prefix(words: list[Word]):
    """Drop `env A=B`, `nohup`, `uv run`, `conda run -n x` ...; returns (words, env list)."""
    env = []
    for _ in range(8):
        if not words or not words[0].known:
            return words, env
        b = _base(words[0])
        if b == "env":
            i = 1
            while i < len(words) and words[i].known:
                t = words[i].text
                m = _ASSIGN.match(t)
                if m:
                    env.append((m.group(1), m.group(2) if words[i].known else None, words[i]))
                elif t in ("-u", "--unset", "-C", "--chdir"):
                    i += 1
                elif not t.startswith("-"):
                    break
                i += 1
            words = words[i:]
        elif b in ("uv", "poetry", "pipenv", "pdm", "hatch", "rye") and len(words) > 1 and words[1].text == "run":
            i = 2
            while i < len(words) and words[i].known and words[i].text.startswith("-"):
                t = words[i].text
                i += 1 if ("=" in t or t in ("--no-sync", "--frozen", "--locked", "--active", "--isolated")) else 2
            words = words[i:]
        elif b in ("conda", "mamba", "micromamba") and len(words) > 1 and words[1].text == "run":
            i = 2
            while i < len(words) and words[i].known and words[i].text.startswith("-"):
                i += 2 if words[i].text in ("-n", "--name", "-p", "--prefix") else 1
            words = words[i:]
        elif b in ("singularity", "apptainer") and len(words) > 2 and words[1].text == "exec":
            opts, i = _scan_options(words, 2, bools=frozenset({"--nv", "--rocm", "--cleanenv", "-e",
                                                                 "--contain", "--writable", "--fakeroot"}))
            words = words[i + 1:]  # skip the image
        elif b in _PREFIX_BOOLS:
            i = 1
            while i < len(words) and words[i].known and words[i].text.startswith("-"):
                t = words[i].text
                i += 1 if (t in _PREFIX_BOOLS[b] or "=" in t or (len(t) > 2 and not t.startswith("--"))) else 2
            words = words[i:]
        else:
            return words, env
    return words, env


def _parse_shell(words: list[Word], variables: dict | None, inline: "Inline | None") -> Launch | None:
    """`bash -c "<script>"` (read by the shell reader's scanner, so every launch in the
    string counts) or `bash [options] train.sh args`: a launch of the shell file."""
    i = 1
    while i < len(words) and words[i].known and words[i].text.startswith("-") and words[i].text != "--":
        t = words[i].text
        if not t.startswith("--") and "c" in t[1:]:  # -c, -lc, -ec, -xc
            if i + 1 >= len(words) or inline is None:
                return None
            found = inline(words[i + 1], variables)
            if not found:
                return None
            for one in found:
                one.head = words[0]
            first = found[0]
            first.more = found[1:]
            return first
        i += 2 if t in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file") else 1
    if i < len(words) and words[i].text == "--":
        i += 1
    if i >= len(words):
        return None  # an interactive shell, or commands from stdin
    return _shell_file(words, i)


def _shell_file(words: list[Word], i: int) -> Launch | None:
    script = words[i]
    if script.known and (not script.text or script.text.startswith("-")):
        return None
    value = empty_launch("shell")
    value["script"] = _str(script)
    launch = Launch(value, words[0])
    _script_args(value, words[i + 1:], launch.flags)
    return launch


# ---------------------------------------------------------------- composer, ray

_COMPOSER_BOOLS = frozenset({"-v", "--verbose", "-m", "--module_mode", "-c", "--command_mode", "--no_python"})


def _parse_composer(words: list[Word]) -> Launch | None:
    """MosaicML's `composer [-n NPROC] [--world_size N] script.py ...` launcher (torchrun-like)."""
    opts, i = _scan_options(words, 1, bools=_COMPOSER_BOOLS)
    value = empty_launch("composer")
    launch = Launch(value, words[0])
    world = None
    module = False
    for name, val, fw in opts:
        key = _norm(name)
        if key in ("n", "nproc"):
            value["nproc_per_node"] = _int(val)
        elif key == "world_size":
            world = _int(val)
        elif key in ("m", "module_mode"):
            module = True
        else:
            continue
        launch.flags[name] = fw
    if world is not None and value["nproc_per_node"] and world % value["nproc_per_node"] == 0:
        value["nnodes"] = world // value["nproc_per_node"]
    if i >= len(words):
        return None
    value["module" if module else "script"] = _str(words[i])
    _script_args(value, words[i + 1:], launch.flags)
    return launch


def _parse_ray(words: list[Word], variables: dict | None, inline: "Inline | None") -> Launch | None:
    """`ray job submit [options] -- <entrypoint>`: the entrypoint runs on the Ray cluster,
    in ``--working-dir`` when that is a local folder."""
    if [w.text for w in words[1:3]] != ["job", "submit"]:
        return None
    try:
        sep = next(k for k, w in enumerate(words) if w.known and w.text == "--")
    except StopIteration:
        return None
    workdir = None
    for k in range(3, sep):
        t = words[k].text
        if t in ("--working-dir", "--working_dir") and k + 1 < sep:
            workdir = words[k + 1] if words[k + 1].known else Word("", known=False)
        elif t.startswith(("--working-dir=", "--working_dir=")):
            workdir = words[k].shifted(t.split("=", 1)[1], len(t.split("=", 1)[0]) + 1)
    inner = parse_words(words[sep + 1:], variables, inline)
    if inner is None:
        return None
    for one in [inner] + list(inner.more):
        v = one.value
        if v.get("wrapper") is None:
            v["wrapper"] = {"tool": "ray", "nodes": None, "ntasks": None, "ntasks_per_node": None, "gpus_per_node": None}
        script = v.get("script")
        if workdir is not None and isinstance(script, str) and not script.startswith("/"):
            local = workdir.known and "://" not in workdir.text
            v["script"] = posixpath.normpath(posixpath.join(workdir.text, script)) if local else None
        one.head = words[0]
    return inner


# ---------------------------------------------------------------- dvc

_DVC_VALUE_FLAGS = {"-S", "--set-param", "-n", "--name", "-j", "--jobs", "-m", "--message", "-C", "--copy-paths",
                    "--glob-pattern"}


def _parse_dvc(words: list[Word]) -> Launch | None:
    """`dvc repro [targets]` / `dvc exp run [targets]`: the stages of a dvc.yaml.

    A target is a stage name, ``path/dvc.yaml:stage`` or a dvc.yaml path; without one
    DVC runs the dvc.yaml of the current folder. Each target is a launch of its own."""
    sub = [w.text for w in words[1:3]]
    if sub[:1] == ["repro"]:
        i = 2
    elif sub == ["exp", "run"]:
        i = 3
    else:
        return None
    targets: list[Word] = []
    while i < len(words):
        w = words[i]
        if w.known and w.text in _DVC_VALUE_FLAGS:
            i += 2
            continue
        if not (w.known and w.text.startswith("-")):
            targets.append(w)
        i += 1
    launches = []
    for t in targets or [None]:
        value = empty_launch("dvc")
        value["script"], value["stage"] = "dvc.yaml", None
        if t is not None and not t.known:
            value["script"] = None  # `dvc repro $STAGE`: which pipeline is unknown
        elif t is not None:
            path, colon, stage = t.text.rpartition(":")
            if not colon:
                path, stage = ("", t.text)
            if stage.endswith(("dvc.yaml", "dvc.yml")) or stage.endswith("/"):
                path, stage = stage, ""
            elif not colon and "/" in stage:
                path, stage = stage, ""  # a folder holding a dvc.yaml
            if path and not path.endswith(("dvc.yaml", "dvc.yml")):
                path = posixpath.join(path, "dvc.yaml")
            value["script"] = posixpath.normpath(path) if path else "dvc.yaml"
            value["stage"] = stage or None
        launch = Launch(value, words[0])
        if t is not None:
            launch.flags["stage"] = t
        launches.append(launch)
    first = launches[0]
    first.more = launches[1:]
    return first


#: a console script's name as packaging declares them: words joined by - or _ (fairseq-train, lm_eval)
_PROGRAM = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)+$")
#: commands of that shape that are the system's or a tool's, never a repository's own console script
_NOT_PROGRAMS = frozenset({
    "apt-get", "apt-cache", "apt-key", "add-apt-repository", "dpkg-query", "dpkg-reconfigure", "update-alternatives",
    "update-ca-certificates", "yum-config-manager", "lsb_release", "nvidia-smi", "nvidia-container-cli",
    "nvidia-ctk", "docker-compose", "ssh-keygen", "ssh-keyscan", "ssh-add", "ssh-copy-id", "git-lfs", "pre-commit",
    "pip-compile", "pip-sync", "huggingface-cli", "systemd-run", "start-stop-daemon", "kubectl-ai", "aws-iam-authenticator",
    "google-chrome", "xdg-open", "run-parts", "install-info", "mpi-selector", "fi_info", "ibv_devinfo", "ibv_devices",
    "all_reduce_perf", "all_gather_perf", "nccl-tests", "cuda-gdb", "ncu-ui", "nsys-ui",
})


def _asks_for_help(words: list[Word]) -> bool:
    """``fairseq-train --help``, ``llamafactory-cli train -h``: the program prints its usage and runs nothing."""
    return any(w.known and w.text in ("--help", "-h", "--version") for w in words[1:])


def _parse_program(words: list[Word]) -> Launch | None:
    """``fairseq-train data-bin/wmt --arch transformer``: a named program with flags among its arguments, which
    may be a console script of the repository (a package's entry point). A path (``./bin/x``), a name without
    - or _, a system tool or a command without flags is not one."""
    head = words[0]
    if not head.known or not _PROGRAM.match(head.text) or head.text in _NOT_PROGRAMS:
        return None
    if not any(w.known and w.text.startswith("-") and w.text != "-" for w in words[1:]) or _asks_for_help(words):
        return None
    value = empty_launch("program")
    value["program"] = head.text
    launch = Launch(value, head)
    _script_args(value, words[1:], launch.flags)
    return launch


def parse_words(words: list[Word], variables: dict | None = None, inline: "Inline | None" = None,
                programs: bool = False) -> Launch | None:
    """The launch (value, positions, env) of one simple command's words, or None.

    ``variables`` are the shell variables known where the command runs (for the
    strings of `bash -c`, which the inner shell expands itself). ``inline`` reads
    such a string's launches: the shell reader passes its own scanner (this module
    parses one command and knows no scripts); without it `bash -c` is no launch.
    ``programs``: a command that may be a console script (`_parse_program`) is a
    launch of tool "program" (script files ask for it; the linker keeps it only
    when the repository's packaging declares that name)."""
    all_words = list(words)
    words, env = _strip_prefix(all_words)
    # Per-command `VAR=value` left after a prefix such as `exec`.
    while words and words[0].known and _ASSIGN.match(words[0].text):
        m = _ASSIGN.match(words[0].text)
        env.append((m.group(1), m.group(2), words[0]))
        words = words[1:]
    prefix = ""
    if words and not words[0].known and len(words) > 1 and words[1].known and _is_tool_word(words[1]) \
            and not _SHELL_FILE.search(_base(words[1])):
        # `$MAYBE_COMPILE torchrun ...`: a prefix command decided at run time, then a launcher
        prefix, words = words[0].text, words[1:]
    if not words or not words[0].known:
        return None
    b = _base(words[0])
    if _PYTHON.match(b):
        launch = _parse_python(words)
    elif b in ("torchrun", "hyperpodrun"):
        launch = _parse_torchrun(words)
    elif b == "accelerate":
        launch = _parse_accelerate(words)
    elif b == "deepspeed":
        launch = _parse_deepspeed(words)
    elif b == "srun":
        launch = _wrapped(words, _parse_srun, variables, inline, programs)
    elif b in ("mpirun", "mpiexec"):
        launch = _wrapped(words, _parse_mpirun, variables, inline, programs)
    elif b == "sky":
        launch = _parse_sky(words)
    elif b in _SHELLS:
        launch = _parse_shell(words, variables, inline)
    elif b == "dvc":
        launch = _parse_dvc(words)
    elif b == "composer":
        launch = _parse_composer(words)
    elif b == "torchx":
        launch = _parse_torchx(words)
    elif b == "ray":
        launch = _parse_ray(words, variables, inline)
    elif b in _APP_SERVERS:
        launch = _parse_app_server(words)
    elif b in _TRAINER_PROGRAMS:
        launch = _parse_packaged(words)
    elif b in PACKAGED_PROGRAMS:
        # `fairseq-train data --fp16`: a packaged trainer's own command, wherever it is written (a container's
        # command too); read as a console script so a copy of the trainer resolves it through its packaging
        launch = _parse_program(words)
    elif _SHELL_FILE.search(b) and "=" not in words[0].text:
        launch = _shell_file(words, 0)  # `./train.sh --nodes 2`: the file runs itself
        if launch is not None:
            launch.value["args"] = [w.text for w in words[1:]]
    elif programs:
        launch = _parse_program(words)
    else:
        launch = None
    if launch is not None:
        launch.env = env + launch.env
        launch.prefix = launch.prefix or prefix
        if not launch.words:
            launch.words = all_words
        for more in launch.more:
            if not more.words:
                more.words = all_words
    return launch
