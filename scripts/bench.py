"""Benchmark: a full gpulint scan against the libcst parse time of the same files.

    python scripts/bench.py [DIR ...] [--repeat N]

Both are measured in the same run on the same machine, so the ratio is
meaningful even where absolute times are noisy (shared CI machines). The
libcst baseline parses every Python file the scan would consider (the code
kinds, whatever the text gate later decides).
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import libcst

from gpulint.config import load_config
from gpulint.discover import Classifier, discover
from gpulint.engine import ScanRequest, Scanner
from gpulint.plugins import PluginHost


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("paths", nargs="*", default=["fixtures"])
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    host = PluginHost()
    _ = host.registry  # plugin loading is start-up cost, not per-file cost
    parse_times, scan_times = [], []
    files_total = 0
    for path in map(Path, args.paths):
        cfg = load_config(None, path)
        cands = discover(path, Classifier(host.registry.file_kinds), cfg.exclude, cfg.root)
        texts = [c.abs.read_text(encoding="utf-8", errors="replace") for c in cands if c.kind == "python"]
        files_total += len(cands)
        scanner = Scanner(host, cfg)
        scanner.scan(ScanRequest(paths=[path]))  # warm-up: imports, catalogue load
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            for t in texts:
                try:
                    libcst.parse_module(t)
                except Exception:
                    pass
            t1 = time.perf_counter()
            scanner.scan(ScanRequest(paths=[path]))
            t2 = time.perf_counter()
            parse_times.append(t1 - t0)
            scan_times.append(t2 - t1)
    p, s = statistics.median(parse_times), statistics.median(scan_times)
    print(f"files discovered: {files_total}; python files parsed by the baseline: measured per run")
    print(f"libcst parse of the Python files: median {p * 1000:.1f} ms")
    print(f"gpulint scan (discover, parse, facts, workloads, rules, report data): median {s * 1000:.1f} ms")
    print(f"ratio scan / parse: {s / p:.2f}x" if p else "no Python files parsed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
