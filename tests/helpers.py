"""Scanning helpers shared by the tests (import them as ``from helpers import codes, findings``, beside
``from conftest import run_cli``): one in-process scan (gpulint.testing) and one way to turn its findings into the
tuples a test compares.

    findings(files, prefix="", path=None, **scan_kwargs)      the Finding objects whose code starts with prefix
                                                              (and, given path, that are in that file)
    codes(files, prefix="", fields=("code",), sort=False, path=None, **scan_kwargs)
                                                              the same findings as values (one field) or tuples
    rows(found, fields=("code",), prefix="", sort=False, unique=False)
                                                              that shaping alone, for Finding objects or the
                                                              JSON report's finding dicts (CLI tests)
    reported(proc, returncodes=(0, 1))                        the finding dicts of the JSON report a
                                                              `gpulint scan --format json` process printed

``files`` is a repository as {path: text}, written to a temporary folder (gpulint.testing.scan_files), or a folder
already on disk (gpulint.testing.scan_tree, its own .gpulint.toml read as a scan would). ``scan_kwargs`` are
scan_files's: ``select`` (a list of codes or families, or one comma-separated string), ``config_text``, ``host``.
Findings come in the scan's own order (by path, line, column, code, message); ``sort=True`` sorts the rows instead,
``unique=True`` keeps each distinct row once, sorted.
"""
from __future__ import annotations

import json
from pathlib import Path

from gpulint.core.model import Finding
from gpulint.testing import scan_files, scan_tree

#: the fields of a row: what each one reads from a Finding (a JSON finding has them as keys)
FIELDS = {
    "code": lambda f: f.code,
    "severity": lambda f: f.severity.value,
    "path": lambda f: f.loc.path,
    "line": lambda f: f.loc.line,
    "column": lambda f: f.loc.column,
    "message": lambda f: f.message,
    "guidance": lambda f: f.guidance,
}
#: shapes the tests use
AT = ("code", "path", "line")
SEVERITY_AT = ("code", "severity", "path", "line")
AT_MESSAGE = ("code", "path", "line", "message")


def findings(files: dict[str, str] | Path, prefix: str | tuple[str, ...] = "", path: str | None = None,
             **scan_kwargs) -> list[Finding]:
    """The findings of a scan of ``files`` whose code starts with ``prefix`` (a string or a tuple of them) and, given
    ``path``, that are in that file."""
    select = scan_kwargs.pop("select", None)
    if isinstance(select, str):
        select = select.split(",")
    if isinstance(files, Path):
        result, _ = scan_tree(files, select=select, **scan_kwargs)
    else:
        result = scan_files(files, select=select, **scan_kwargs)
    return [f for f in result.findings if f.code.startswith(prefix) and (path is None or f.loc.path == path)]


def rows(found, fields: tuple[str, ...] = ("code",), prefix: str | tuple[str, ...] = "", sort: bool = False,
         unique: bool = False) -> list:
    """One value per finding for a single field, a tuple of the fields for several; only the findings whose code
    starts with ``prefix``; sorted with ``sort``, each distinct row once (sorted) with ``unique``."""
    def value(f, field):
        return f[field] if isinstance(f, dict) else FIELDS[field](f)

    found = [f for f in found if value(f, "code").startswith(prefix)]
    if len(fields) == 1:
        out = [value(f, fields[0]) for f in found]
    else:
        out = [tuple(value(f, field) for field in fields) for f in found]
    if unique:
        return sorted(set(out))
    return sorted(out) if sort else out


def codes(files: dict[str, str] | Path, prefix: str | tuple[str, ...] = "", fields: tuple[str, ...] = ("code",),
          sort: bool = False, path: str | None = None, **scan_kwargs) -> list:
    """``findings(files, prefix, path, **scan_kwargs)`` as rows of ``fields``: ["AMP001", ...] by default,
    [("AMP001", "warning", "train.py", 12), ...] with ``fields=SEVERITY_AT``."""
    return rows(findings(files, prefix, path, **scan_kwargs), fields, sort=sort)


def reported(proc, returncodes: tuple[int, ...] = (0, 1)) -> list[dict]:
    """The finding dicts of the JSON report a ``gpulint scan --format json`` process printed, once its exit status
    is one of ``returncodes`` (0 clean, 1 findings at the failing severity)."""
    assert proc.returncode in returncodes, proc.stderr
    return json.loads(proc.stdout)["findings"]


def cli_findings(repo: Path, select: str) -> list[dict]:
    """The finding dicts of ``gpulint scan REPO --select SELECT --exit-zero`` through the CLI, run in REPO."""
    from conftest import run_cli

    return reported(run_cli("scan", repo, "--format", "json", "--select", select, "--exit-zero", cwd=repo), (0,))


def cli_scan(path, *args, cwd=None) -> tuple[int, list[tuple[str, str, int]], dict]:
    """``gpulint scan PATH --format json ARGS`` through the CLI: its exit status (0 or 1), its findings as sorted
    (code, path, line) rows and the whole JSON report."""
    from conftest import run_cli

    proc = run_cli("scan", path, "--format", "json", *args, cwd=cwd)
    found = reported(proc)
    return proc.returncode, rows(found, AT, sort=True), json.loads(proc.stdout)


def only_workload(result) -> dict:
    """The one workload of a scan result (``scan_files``), failing with the names of all when there are more or none."""
    assert len(result.workloads) == 1, [w["name"] for w in result.workloads]
    return result.workloads[0]


# -- one reader's facts (the reader tests: a fact of a kind and target, the line a needle is on) ------------------------

def facts_of_kind(facts: list, kind: str, target: str | None = None) -> list:
    """The facts of ``kind`` (of ``target``, when given)."""
    return [f for f in facts if f.kind == kind and (target is None or f.target == target)]


def only_fact(facts: list, kind: str, target: str | None = None):
    """The one fact of ``kind`` (of ``target``); fails when there is none or more than one."""
    found = facts_of_kind(facts, kind, target)
    assert len(found) == 1, (kind, target, found)
    return found[0]


def line_of(text: str, needle: str, nth: int = 0) -> int:
    """The 1-based line of the ``nth`` line of ``text`` containing ``needle``."""
    hits = [i for i, line in enumerate(text.splitlines(), 1) if needle in line]
    assert len(hits) > nth, (needle, hits)
    return hits[nth]


def p4d_job(name: str, command: list[str]) -> str:
    """A Kubernetes Job of one container that runs ``command`` (the image's trainer) on a p4d.24xlarge node with its 8
    GPUs; the command is line 14."""
    return f"""\
apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
spec:
  template:
    spec:
      restartPolicy: OnFailure
      nodeSelector:
        node.kubernetes.io/instance-type: p4d.24xlarge
      containers:
        - name: train
          image: registry.example.com/fairseq:0.12
          command: {json.dumps(command)}
          resources:
            limits:
              nvidia.com/gpu: 8
"""
