"""Benchmark: gpulint against the libcst parse of the same Python files, side by side in one run.

    python scripts/bench.py [PROJECT==VERSION ...] [--large] [--cache DIR] [--keep DIR]

Builds a corpus from pinned source distributions of large ML projects (downloaded
once from the package index with pip, through ``scripts/corpus.py``, into
~/.cache/gpulint-corpus), copies them into one temporary folder and measures, on
the same machine in the same run:

- the floor: parsing every Python file of the corpus with libcst in this one
  process (what gpulint cost when it parsed everything with libcst; 1.00x);
- gpulint cold (``--no-cache``), then with the cache: the run that fills it, a
  warm rerun with nothing changed, and a rerun after appending a comment to one
  Python file; each with ``--jobs 1`` and with the default number of jobs.

Each gpulint run is a fresh ``python -m gpulint scan --format json`` subprocess
(start-up included, as a user or CI sees it) with ``GPULINT_CACHE_DIR`` in a
temporary folder, so no cache of an earlier run is ever read. The table gives
wall seconds, the ratio to the floor (a ratio, so a busy machine still
compares), files per second, and the peak resident memory of gpulint's whole
process tree (the scan process and its workers, summed, sampled every 20 ms from
/proc). It also says whether every run reported the same findings (they must: the
cache and the number of jobs change nothing). Not a test: it needs the network
once and minutes of CPU.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import fetch, run_measured  # noqa: E402  (scripts/corpus.py, next to this file)

#: large ML projects at fixed versions (the sdists a run months from now downloads are these)
CORPUS = ("accelerate==1.15.0", "peft==0.21.2", "trl==1.16.0", "lightning==2.6.6", "timm==1.0.31", "deepspeed==0.19.8")
#: added by --large: the two biggest (about 4,000 more Python files)
LARGE = ("diffusers==0.42.1", "transformers==5.24.0")


def build_corpus(specs: list[str], cache: Path, into: Path) -> list[tuple[str, int]]:
    """Copy each pinned project into `into` (copies, not links: the one-file run edits a file)."""
    rows = []
    for spec in specs:
        name, _, version = spec.partition("==")
        src = fetch(name, cache, "sdist", version or None)
        dest = into / (f"{name}-{version}" if version else name)
        shutil.copytree(src, dest, symlinks=True)
        rows.append((spec, sum(1 for _ in dest.rglob("*.py"))))
    return rows


def python_files(root: Path) -> list[Path]:
    """The Python files gpulint considers (its own discovery: excluded folders stay excluded)."""
    from gpulint.core.config import load_config
    from gpulint.run.discover import Classifier, discover
    from gpulint.run.plugins import PluginHost

    host = PluginHost()
    cfg = load_config(None, root)
    return [c.abs for c in discover(root, Classifier(host.registry.file_kinds), cfg.exclude, cfg.root) if c.kind == "python"]


def floor(files: list[Path]) -> float:
    """Seconds libcst takes to parse `files`, one process (reading is not timed)."""
    import libcst

    total = 0.0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        t0 = time.perf_counter()
        try:
            libcst.parse_module(text)
        except Exception:  # noqa: BLE001 - a file libcst rejects still cost its parse
            pass
        total += time.perf_counter() - t0
    return total


def run_gpulint(root: Path, jobs: int | None, cache_dir: Path, no_cache: bool) -> dict:
    cmd = [sys.executable, "-m", "gpulint", "scan", str(root), "--format", "json", "--exit-zero", "--quiet"]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    if no_cache:
        cmd.append("--no-cache")
    env = {**os.environ, "GPULINT_CACHE_DIR": str(cache_dir)}
    proc, seconds, peak_mb = run_measured(cmd, env=env, cwd=root)
    row = {"seconds": seconds, "peak_mb": peak_mb, "rc": proc.returncode, "stderr": proc.stderr.strip()[-500:]}
    if proc.returncode == 0:
        data = json.loads(proc.stdout)
        row["files"] = data["summary"]["files"]
        row["findings"] = sorted((f["code"], f["path"], f["line"], f["column"], f["message"]) for f in data["findings"])
    return row


def touch_target(files: list[Path]) -> Path:
    """The Python file the one-file run changes: the first (in path order) that gpulint reads for facts."""
    for path in sorted(files):
        if "import torch" in path.read_text(encoding="utf-8", errors="replace"):
            return path
    return sorted(files)[0]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("projects", nargs="*", help=f"NAME==VERSION sdists (default: {' '.join(CORPUS)})")
    ap.add_argument("--large", action="store_true", help=f"add {' '.join(LARGE)}")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpulint-corpus")
    ap.add_argument("--keep", type=Path, help="build the corpus in this folder and keep it (default: a temporary folder)")
    args = ap.parse_args(argv)
    specs = list(args.projects or CORPUS) + (list(LARGE) if args.large else [])
    work = Path(tempfile.mkdtemp(prefix="gpulint-bench-"))
    corpus = args.keep or work / "corpus"
    try:
        if corpus.exists():
            shutil.rmtree(corpus)
        corpus.mkdir(parents=True)
        made = build_corpus(specs, args.cache, corpus)
        files = python_files(corpus)
        from importlib.metadata import version

        print(f"corpus: {', '.join(f'{s} ({n} .py)' for s, n in made)}")
        print(f"machine: {os.cpu_count()} CPUs (usable {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}), "
              f"Python {platform.python_version()}, gpulint {version('gpulint')}, libcst {version('libcst')}")
        print(f"Python files gpulint discovers: {len(files)}; parsing them with libcst ...", flush=True)
        base = floor(files)
        target = touch_target(files)
        rows: list[tuple[str, str, dict]] = []
        for jobs in (1, None):
            label = "1" if jobs == 1 else "default"
            cache_dir = work / f"cache-{label}"
            for name, no_cache in (("cold (--no-cache)", True), ("first run, filling the cache", False), ("warm, nothing changed", False)):
                print(f"gpulint --jobs {label}: {name} ...", flush=True)
                rows.append((name, label, run_gpulint(corpus, jobs, cache_dir, no_cache)))
            original = target.read_bytes()
            try:
                target.write_bytes(original + b"\n# gpulint bench: one file changed\n")
                print(f"gpulint --jobs {label}: one file changed ...", flush=True)
                rows.append(("one file changed", label, run_gpulint(corpus, jobs, cache_dir, False)))
            finally:
                target.write_bytes(original)
        print()
        print("| run | jobs | wall s | x libcst parse | files/s | peak RSS MB |")
        print("|---|---|---|---|---|---|")
        print(f"| libcst parse of {len(files)} .py files, 1 process (floor) | - | {base:.1f} | 1.00 | {len(files) / base:.0f} | - |")
        for name, label, r in rows:
            if r["rc"] != 0:
                print(f"| {name} | {label} | failed (exit {r['rc']}) | | | |")
                continue
            print(f"| {name} | {label} | {r['seconds']:.1f} | {r['seconds'] / base:.2f} | {r['files'] / r['seconds']:.0f} | {r['peak_mb']:.0f} |")
        ok = [r for _, _, r in rows if r["rc"] == 0]
        same = len({json.dumps(r["findings"]) for r in ok}) <= 1  # a comment appended changes no finding either
        print()
        print(f"files scanned (every kind): {ok[0]['files'] if ok else '-'}; changed file: {target.relative_to(corpus)}")
        print(f"findings identical in every run (cold, warm, one file changed, each --jobs): {'yes' if same else 'NO'}")
        for name, label, r in rows:
            if r["rc"] != 0:
                print(f"{name} --jobs {label}: exit {r['rc']}: {r['stderr']}", file=sys.stderr)
        return 0 if same and len(ok) == len(rows) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
