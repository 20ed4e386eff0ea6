"""Large-corpus run: scan the source distributions of real ML projects.

    python scripts/corpus.py [--cache DIR] [--format sdist|wheel] [--jobs N] [PROJECT ...]

Downloads each project's latest sdist (or wheel) from the package index with
pip (``pip download --no-deps``) into a cache folder outside the repository
(default ~/.cache/gpulint-corpus), unpacks it once, scans it with the
installed gpulint as a user would (``gpulint scan --format json``) and prints
one row per project: files scanned, findings per code, SYS001/SYS002 counts,
wall time and the peak resident memory of the scan (its own process plus its
workers, sampled from /proc every 20 ms; Linux). Not a test: CI has no
network. A crash, an exit code 2 or a SYS002 is printed as such.
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from pathlib import Path
from typing import Any

PROJECTS = ("transformers", "diffusers", "deepspeed", "accelerate", "lightning", "peft", "trl", "timm", "vllm", "torchvision",
            "datasets", "bitsandbytes")


def fetch(name: str, cache: Path, fmt: str, version: str | None = None) -> Path:
    """The unpacked distribution of `name` (downloaded once); of exactly `version` when given
    (``scripts/bench.py`` pins its corpus so that runs months apart read the same files)."""
    only = ["--no-binary", ":all:"] if fmt == "sdist" else ["--only-binary", ":all:"]
    if version is not None:
        stem = f"{name}-{version}"
        legacy = cache / "src" / name / stem  # where an unpinned fetch of that version unpacked it
        if legacy.is_dir():
            return legacy
        target = cache / "src" / stem
        if target.is_dir() and any(target.iterdir()):
            return target
        dl = cache / "dl" / name
        dl.mkdir(parents=True, exist_ok=True)
        archive = next((p for p in dl.iterdir() if _is_version(p.name, name, version)), None)
        if archive is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", *only, "-d", str(dl),
                            f"{name}=={version}"], check=True)
            archive = next(p for p in dl.iterdir() if _is_version(p.name, name, version))
        return _unpack(archive, target)
    target = cache / "src" / name
    if target.is_dir() and any(target.iterdir()):
        return target
    dl = cache / "dl" / name
    dl.mkdir(parents=True, exist_ok=True)
    if not any(dl.iterdir()):
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", *only, "-d", str(dl), name], check=True)
    return _unpack(next(dl.iterdir()), target)


def _is_version(filename: str, name: str, version: str) -> bool:
    """Is `filename` an sdist or wheel of `name` `version` (names compared as pip normalises them)?"""
    norm = filename.lower().replace("_", "-")
    stem = f"{name}-{version}".lower().replace("_", "-")
    return norm.startswith(stem) and norm[len(stem):len(stem) + 1] in (".", "-")


def _unpack(archive: Path, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    if archive.suffix in (".whl", ".zip"):
        with zipfile.ZipFile(archive) as z:
            z.extractall(target)
    else:
        with tarfile.open(archive) as t:
            t.extractall(target, filter="data") if sys.version_info >= (3, 12) else t.extractall(target)  # noqa: S202
    return target


def _tree_rss_kb(pid: int) -> int:
    """Resident memory of `pid` and every descendant, in KB (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as fh:
                for line in fh:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
            with open(f"/proc/{p}/task/{p}/children") as fh:
                todo += [int(c) for c in fh.read().split()]
        except (OSError, ValueError):
            continue
    return total


def run_measured(cmd: list[str], **popen: Any) -> tuple[subprocess.CompletedProcess, float, float]:
    """Run `cmd` to the end: its result, wall seconds and the peak resident memory (MB) of its whole process
    tree (the process and its workers, summed, sampled every 20 ms from /proc)."""
    peak = [0]
    done = threading.Event()
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **popen)

    def sample() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], _tree_rss_kb(proc.pid))
            done.wait(0.02)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    seconds = time.perf_counter() - t0
    done.set()
    sampler.join()
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), seconds, peak[0] / 1024


def scan(path: Path, jobs: int) -> dict:
    cmd = [shutil.which("gpulint") or "gpulint", "scan", str(path), "--format", "json", "--exit-zero", "--jobs", str(jobs)]
    proc, elapsed, peak_mb = run_measured(cmd)
    out, err = proc.stdout, proc.stderr
    row = {"rc": proc.returncode, "seconds": elapsed, "peak_mb": peak_mb, "stderr": err.strip()[-300:]}
    if proc.returncode == 0:
        data = json.loads(out)
        codes = collections.Counter(f["code"] for f in data["findings"])
        row.update(files=data.get("summary", {}).get("files"), codes=codes,
                   findings=sum(codes.values()))
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("projects", nargs="*", default=list(PROJECTS))
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpulint-corpus")
    ap.add_argument("--format", choices=["sdist", "wheel"], default="sdist")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--report", action="store_true", help="print the table of the rows saved by earlier runs, scan nothing")
    args = ap.parse_args(argv)
    saved = args.cache / "results.jsonl"
    if args.report:
        rows = [json.loads(line) for line in saved.read_text().splitlines() if line.strip()] if saved.exists() else []
        rows = [r for r in rows if r["project"] in args.projects]
        return _table(rows)
    rows = []
    for name in args.projects:
        try:
            path = fetch(name, args.cache, args.format)
        except (subprocess.CalledProcessError, OSError, tarfile.TarError, zipfile.BadZipFile, StopIteration) as exc:
            print(f"{name}: download failed: {exc}", file=sys.stderr)
            continue
        n_files = sum(1 for _ in path.rglob("*") if _.is_file())
        row = scan(path, args.jobs)
        row.update(project=name, on_disk=n_files)
        rows.append(row)
        saved.parent.mkdir(parents=True, exist_ok=True)
        with saved.open("a") as fh:  # one row per scan, as it finishes: --report prints them again
            fh.write(json.dumps({**row, "codes": dict(row.get("codes", {}))}) + "\n")
        print(f"{name}: rc={row['rc']} {row['seconds']:.1f}s peak {row['peak_mb']:.0f} MB", file=sys.stderr)
    return _table(rows)


def _base_mb() -> float:
    """Peak RSS of a scan of one small training script: what every scan costs (the
    scan process, one worker with libcst and the readers loaded) before the repository's size counts."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "train.py").write_text("import torch\nfor x in loader:\n    model(x).sum().backward()\n")
        return scan(Path(tmp), 1)["peak_mb"]


def _table(rows: list[dict]) -> int:
    base = _base_mb() if rows else 0.0
    print(f"(peak RSS of a scan of one small script, scan process and worker: {base:.0f} MB)")
    codes = sorted({c for r in rows for c in r.get("codes", {})})
    print("| project | files in dist | files scanned | findings | " + " | ".join(codes) + " | SYS001 | SYS002 | exit | time s | peak RSS MB | MB above that per 1,000 files |")
    print("|---" * (9 + len(codes)) + "|")
    total = collections.Counter()
    for r in rows:
        c = r.get("codes", {})
        per_k = max(0.0, r["peak_mb"] - base) / max(1, (r.get("files") or 0)) * 1000
        print(f"| {r['project']} | {r['on_disk']} | {r.get('files', '-')} | {r.get('findings', '-')} | "
              + " | ".join(str(c.get(k, 0)) for k in codes)
              + f" | {c.get('SYS001', 0)} | {c.get('SYS002', 0)} | {r['rc']} | {r['seconds']:.1f} | {r['peak_mb']:.0f} | {per_k:.0f} |")
        total.update(c)
        total["files"] += r.get("files") or 0
        total["seconds"] += r["seconds"]
    if rows:
        print(f"| total | {sum(r['on_disk'] for r in rows)} | {total['files']} | {sum(v for k, v in total.items() if k in codes)} | "
              + " | ".join(str(total.get(k, 0)) for k in codes)
              + f" | {total.get('SYS001', 0)} | {total.get('SYS002', 0)} | {max(r['rc'] for r in rows)} | {total['seconds']:.1f} | "
              f"{max(r['peak_mb'] for r in rows):.0f} | |")
    bad = [r for r in rows if r["rc"] != 0 or r.get("codes", {}).get("SYS002")]
    for r in bad:
        print(f"{r['project']}: exit {r['rc']} {r['stderr']}", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
