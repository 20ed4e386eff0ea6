"""Launcher recall: of the launcher files that run a script kept in the same repository, how many gpulint joins.

    python scripts/launcher_recall.py DIR [DIR ...] [--json] [--unjoined]

A *launcher file* is a file with at least one `launch` fact (shell, sbatch, job YAML, Python launcher). It *runs a
repository script* when one of its launches names a script (or, for a script held in a variable, a `*.py`/`*.sh`
word of the launcher's text) whose file name is a file of the repository. It is *joined* when some workload of
`gpulint workloads` lists a launch of that file, directly or through a chain of launchers.

This is a measuring script for real snapshots of public repositories (CI has no internet): the counts are the
measure of issue 46, and `--unjoined` lists what was missed, with the command, for reading by hand. Machines and
prices per target and workload are `scripts/platform_coverage.py`'s.
"""
from __future__ import annotations

import argparse
import json
import posixpath
import re
import sys
from pathlib import Path

from gpulint.core.config import load_config
from gpulint.run.engine import ScanRequest, Scanner
from gpulint.run.plugins import PluginHost
from launch_census import each_repository  # scripts/ is on sys.path when run as a script

_SCRIPT_WORD = re.compile(r"[\w./${}-]*?([\w.-]+\.(?:py|sh|slurm|sbatch))\b")
_SCRIPT_EXT = (".py", ".sh", ".slurm", ".sbatch")


def _named_scripts(fact, text: str) -> set[str]:
    """File names a launch runs: its script's name, or where the script is a variable, every script-like word."""
    script = fact.value.get("script") or ""
    names = {posixpath.basename(c["script"]) for c in fact.attrs.get("script_candidates") or ()
             if isinstance(c.get("script"), str)}
    if isinstance(script, str) and script:
        base = posixpath.basename(script.rstrip("/"))
        if "$" not in base and base.endswith(_SCRIPT_EXT):
            names.add(base)
        elif "$" in script:
            names.update(m.group(1) for m in _SCRIPT_WORD.finditer(text))
    return names


def recall(path: Path, host: PluginHost) -> dict:
    cfg = load_config(None, path)
    scanner = Scanner(host, cfg)
    _result, workloads = scanner.scan(ScanRequest([path], cache=False))  # every file read: its facts are counted
    files = {str(p.relative_to(path)) for p in path.rglob("*") if p.is_file() and ".git" not in p.parts}
    names = {posixpath.basename(f) for f in files}
    joined_files = {l.loc.path for wl in workloads for l in wl.launchers}
    rows: dict[str, dict] = {}
    launcher_rows: dict[str, set] = {}
    firsts: dict = {}
    for rel, res in scanner.last_results.items():
        launches = [f for f in res.facts if f.kind == "launch" and isinstance(f.value, dict)]
        if not launches:
            continue
        try:
            text = (path / rel).read_text("utf-8", errors="replace")
        except OSError:
            text = ""
        runs = set()
        for f in launches:
            runs |= {n for n in _named_scripts(f, text) if n in names and n != posixpath.basename(rel)}
        launcher_rows[rel] = runs
        firsts[rel] = launches[0]
    # a launcher counts when it runs a Python file of the repository, or a launcher of it that does (a chain);
    # shell utilities that run only other shell utilities (cluster set-up, health checks) are not workloads
    runs_code = {rel for rel, runs in launcher_rows.items() if any(n.endswith(".py") for n in runs)}
    names_code = {posixpath.basename(r) for r in runs_code}
    for _ in range(3):
        names_code |= {posixpath.basename(rel) for rel, runs in launcher_rows.items() if runs & names_code}
    for rel, runs in list(launcher_rows.items()):
        runs = {n for n in runs if n.endswith(".py") or n in names_code}
        if not runs:
            continue
        first = firsts[rel]
        rows[rel] = {"path": rel, "joined": rel in joined_files, "runs": sorted(runs),
                     "command": f"{first.value.get('tool')} {first.value.get('script') or first.value.get('module')}",
                     "line": first.loc.line}
    n = len(rows)
    j = sum(r["joined"] for r in rows.values())
    return {"path": str(path), "launcher_files": n, "joined": j, "ratio": round(j / n, 3) if n else None,
            "workloads": len(workloads), "rows": sorted(rows.values(), key=lambda r: r["path"])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--unjoined", action="store_true", help="list every launcher file not joined, with its command")
    args = ap.parse_args(argv)
    out = list(each_repository(args.paths, recall))
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
        return 0
    tot_n = tot_j = 0
    for row in out:
        tot_n += row["launcher_files"]
        tot_j += row["joined"]
        print(f"{row['path']}: {row['joined']}/{row['launcher_files']} launcher files joined; "
              f"{row['workloads']} workloads")
        if args.unjoined:
            for r in row["rows"]:
                if not r["joined"]:
                    print(f"    {r['path']}:{r['line']}  {r['command']}  (runs {', '.join(r['runs'])})")
    if tot_n:
        print(f"total: {tot_j}/{tot_n} = {tot_j / tot_n:.0%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
