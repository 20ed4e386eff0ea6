"""How often gpulint prints a dollar figure: per repository tree, warnings with and without one, and why not.

    python scripts/dollar_coverage.py TREE [TREE ...]                 # folders already extracted (scripts/realworld.py)
    python scripts/dollar_coverage.py --gpulint "python -m gpulint" TREES...
    python scripts/dollar_coverage.py -o run.json TREES...            # keep the counts for --compare
    python scripts/dollar_coverage.py --compare BEFORE.json AFTER.json

Not part of CI (the trees are snapshots of public repositories). For each tree it runs ``gpulint scan --format json
--exit-zero --no-cache`` and ``gpulint workloads --format json`` and counts: findings and warnings, those whose
cost_impact has a usd_per_hour, workloads, workloads whose compute has a price, and for the unpriced GPU workloads
the first words of ``resolved.to_price`` (the fact that would price them). Only the standard library is used.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path


def run(cmd: list[str], cwd: Path, cache: str) -> dict:
    env = {**os.environ, "GPULINT_CACHE_DIR": cache, "NO_COLOR": "1", "GPULINT_NO_PROGRESS": "1"}
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env, timeout=1800)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} in {cwd}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout)


def count(tree: Path, gpulint: list[str]) -> dict:
    with tempfile.TemporaryDirectory(prefix="gpulint-dollars-") as cache:
        scan = run(gpulint + ["scan", ".", "--format", "json", "--exit-zero", "--no-cache"], tree, cache)
        wls = run(gpulint + ["workloads", ".", "--format", "json"], tree, cache)
    findings = scan.get("findings", [])
    warnings = [f for f in findings if f.get("severity") in ("warning", "error")]

    def priced(f: dict) -> bool:
        return bool((f.get("cost_impact") or {}).get("usd_per_hour"))

    workloads = wls.get("workloads", [])
    priced_wl = [w for w in workloads if (w.get("compute") or {}).get("usd_per_hour")]
    reasons = Counter(" ".join(str((w.get("resolved") or {}).get("to_price", "")).split(":")[0].split()[:4])
                      for w in workloads if (w.get("resolved") or {}).get("to_price"))
    return {"findings": len(findings), "warnings": len(warnings), "warnings_priced": sum(map(priced, warnings)),
            "findings_priced": sum(map(priced, findings)), "workloads": len(workloads), "workloads_priced": len(priced_wl),
            "per_gpu_hour": sum(1 for w in workloads if (w.get("compute") or {}).get("priced_per_gpu_hour")),
            "to_price": dict(reasons),
            "priced_examples": [f"{f['code']} {f['path']}:{f['line']} ${f['cost_impact']['usd_per_hour']}/h: "
                                f"{f['cost_impact'].get('basis', '')[:160]}" for f in findings if priced(f)][:5]}


def table(runs: dict[str, dict], other: dict[str, dict] | None = None) -> str:
    rows = ["repository                               warnings  with $  workloads  priced  per-GPU-h"
            + ("   (before: warnings with $, priced workloads)" if other else "")]
    total = Counter()
    for name, c in sorted(runs.items()):
        for k in ("warnings", "warnings_priced", "workloads", "workloads_priced", "per_gpu_hour"):
            total[k] += c[k]
        extra = ""
        if other and name in other:
            extra = f"   ({other[name]['warnings_priced']}/{other[name]['warnings']}, {other[name]['workloads_priced']})"
        rows.append(f"{name[:40]:40} {c['warnings']:8} {c['warnings_priced']:7} {c['workloads']:10} {c['workloads_priced']:7}"
                    f" {c['per_gpu_hour']:10}{extra}")
    share = total["warnings_priced"] / total["warnings"] if total["warnings"] else 0.0
    rows.append(f"{'total':40} {total['warnings']:8} {total['warnings_priced']:7} {total['workloads']:10} "
                f"{total['workloads_priced']:7} {total['per_gpu_hour']:10}   ({share:.0%} of warnings carry a figure)")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trees", nargs="*", type=Path)
    ap.add_argument("--gpulint", default=f"{shlex.quote(sys.executable)} -m gpulint")
    ap.add_argument("-o", "--output", type=Path)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        print(table(after, before))
        return 0
    runs = {tree.name: count(tree.resolve(), shlex.split(args.gpulint)) for tree in args.trees}
    print(table(runs))
    for name, c in sorted(runs.items()):
        if c["to_price"]:
            print(f"{name}: unpriced GPU workloads need {c['to_price']}")
    if args.output:
        args.output.write_text(json.dumps(runs, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
