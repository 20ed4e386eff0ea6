"""Census of launchers: every `launch` fact of a scan, counted by tool, and the
launchers `gpulint workloads` links to a workload.

    python scripts/launch_census.py DIR [DIR ...] [--json] [--list TOOL]

Measures reader coverage on real repositories (CI has no internet, so runs on
snapshots of public repositories are scripts, not tests). Counts are by
`value["tool"]`; `linked` counts the launchers attached to some workload.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from gpulint.core.config import load_config
from gpulint.run.engine import ScanRequest, Scanner
from gpulint.run.plugins import PluginHost


def census(path: Path, host: PluginHost) -> dict:
    cfg = load_config(None, path)
    scanner = Scanner(host, cfg)
    result, workloads = scanner.scan(ScanRequest([path]))
    facts = [f for r in scanner.last_results.values() for f in r.facts if f.kind == "launch" and isinstance(f.value, dict)]
    by_tool = Counter(str(f.value.get("tool")) for f in facts)
    linked = Counter(str(l.value.get("tool")) for wl in workloads for l in wl.launchers)
    sys_findings = Counter(f.code for f in result.findings if f.code.startswith("SYS00"))
    return {"path": str(path), "launch_facts": dict(sorted(by_tool.items())), "linked": dict(sorted(linked.items())),
            "workloads": len(workloads), "with_launcher": sum(1 for wl in workloads if wl.launchers),
            "sys": dict(sorted(sys_findings.items())),
            "_facts": facts}


def each_repository(paths, measure) -> Iterator[dict]:
    """``measure(path, host)`` of each repository, one plugin host for all; a repository whose scan crashes is
    said on stderr and left out, so it does not hide the others' counts (shared with launcher_recall.py)."""
    host = PluginHost()
    for p in map(Path, paths):
        try:
            yield measure(p, host)
        except Exception as exc:
            print(f"{p}: scan failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="+")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--list", metavar="TOOL", help="print every launch fact of this tool")
    args = ap.parse_args(argv)
    out = []
    for row in each_repository(args.paths, census):
        if args.list:
            for f in row["_facts"]:
                if str(f.value.get("tool")) == args.list:
                    print(f"{f.loc.short()}: {f.value.get('script') or f.value.get('module')} {f.target}")
        del row["_facts"]
        out.append(row)
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
    else:
        for row in out:
            print(f"{row['path']}: workloads={row['workloads']} with_launcher={row['with_launcher']} sys={row['sys']}")
            print(f"  launch facts: {row['launch_facts']}")
            print(f"  linked:       {row['linked']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
