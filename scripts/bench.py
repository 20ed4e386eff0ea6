"""Benchmark: gpulint against the parse of the same Python files, side by side in one run.

    python scripts/bench.py [PROJECT==VERSION ...] [--large] [--cache DIR] [--keep DIR]
    python scripts/bench.py --terraform [1000,2000,4000,8000]

Builds a corpus from pinned source distributions of large ML projects (downloaded
once from the package index with pip, through ``scripts/corpus.py``, into
~/.cache/gpulint-corpus), copies them into one temporary folder and measures, on
the same machine in the same run:

- two floors: parsing every Python file of the corpus with libcst, and with the
  standard library's ``ast``, each in this one process (ratios to both are shown:
  a ratio, so a busy machine still compares);
- gpulint cold (``--no-cache``), then with the cache: the run that fills it, a
  warm rerun with nothing changed, and a rerun after appending a comment to one
  Python file; each with ``--jobs 1`` and with the default number of jobs.

Each gpulint run is a fresh ``python -m gpulint scan --format json`` subprocess
(start-up included, as a user or CI sees it) with ``GPULINT_CACHE_DIR`` in a
temporary folder, so no cache of an earlier run is ever read. Bytecode is written
(``PYTHONDONTWRITEBYTECODE`` is unset for the runs), as an installed package has
it. The table gives wall seconds, the ratios to the floors and to the cold run of
the same ``--jobs``, files per second, and the peak resident memory of gpulint's
whole process tree (the scan process and its workers, summed, sampled every 20 ms
from /proc). It also says whether every run printed the same bytes (they must:
the cache and the number of jobs change nothing; the one-file run appends only a
comment).

``--terraform`` measures instead how a scan grows with the resources of one
Terraform file: files of 1,000 to 8,000 resources (GPU launch templates on spot
that start torchrun, each with its autoscaling group), each scanned cold, with
seconds per thousand resources (flat when the cost is linear). Not a test: it
needs the network once and minutes of CPU.
"""
from __future__ import annotations

import argparse
import ast
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


def floor(files: list[Path], parse=None) -> float:
    """Seconds `parse` (libcst's by default) takes over `files`, one process (reading is not timed)."""
    if parse is None:
        import libcst

        parse = libcst.parse_module
    total = 0.0
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        t0 = time.perf_counter()
        try:
            parse(text)
        except Exception:  # noqa: BLE001 - a file the parser rejects still cost its parse
            pass
        total += time.perf_counter() - t0
    return total


def _env(cache_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "GPULINT_CACHE_DIR": str(cache_dir)}


def run_gpulint(root: Path, jobs: int | None, cache_dir: Path, no_cache: bool) -> dict:
    cmd = [sys.executable, "-m", "gpulint", "scan", str(root), "--format", "json", "--exit-zero", "--quiet"]
    if jobs is not None:
        cmd += ["--jobs", str(jobs)]
    if no_cache:
        cmd.append("--no-cache")
    proc, seconds, peak_mb = run_measured(cmd, env=_env(cache_dir), cwd=root)
    row = {"seconds": seconds, "peak_mb": peak_mb, "rc": proc.returncode, "stderr": proc.stderr.strip()[-500:]}
    if proc.returncode == 0:
        data = json.loads(proc.stdout)
        row["files"] = data["summary"]["files"]
        row["findings"] = len(data["findings"])
        row["output"] = proc.stdout
    return row


def touch_target(files: list[Path]) -> Path:
    """The Python file the one-file run changes: the first (in path order) that gpulint reads for facts."""
    for path in sorted(files):
        if "import torch" in path.read_text(encoding="utf-8", errors="replace"):
            return path
    return sorted(files)[0]


_TF_PAIR = """\
resource "aws_launch_template" "trainer_{i}" {{
  name_prefix   = "trainer-{i}-"
  image_id      = "ami-0123456789abcdef0"
  instance_type = "{instance}"
  instance_market_options {{
    market_type = "spot"
  }}
  user_data = base64encode(<<-EOT
    #!/bin/bash
    torchrun --nnodes=2 --nproc_per_node=4 /opt/job/train.py --epochs 10
  EOT
  )
}}

resource "aws_autoscaling_group" "trainer_{i}" {{
  min_size         = 1
  max_size         = 4
  desired_capacity = 2
  launch_template {{
    id      = aws_launch_template.trainer_{i}.id
    version = "$Latest"
  }}
}}
"""


def identity(roots: list[Path]) -> int:
    """Cold, cache-filling, warm and one-file-changed scans of each tree (a copy: the change is made to it) print
    the same bytes, with their findings and times."""
    work = Path(tempfile.mkdtemp(prefix="gpulint-bench-id-"))
    bad = 0
    try:
        print("| tree | files | findings | cold s | warm s | one changed s | identical |")
        print("|---|---|---|---|---|---|---|")
        for i, src in enumerate(roots):
            root = work / f"t{i}" / src.name
            shutil.copytree(src, root, symlinks=True)
            runs = [run_gpulint(root, None, work / f"cache-{i}", no_cache) for no_cache in (True, False, False)]
            files = python_files(root)
            target = touch_target(files) if files else None
            if target is not None:
                target.write_bytes(target.read_bytes() + b"\n# gpulint bench: one file changed\n")
                runs.append(run_gpulint(root, None, work / f"cache-{i}", False))
            ok = all(r["rc"] == 0 for r in runs) and len({r["output"].replace(str(root), "ROOT") for r in runs}) == 1
            bad += not ok
            cold, _, warm, *changed = runs
            print(f"| {src.name} | {cold.get('files', '-')} | {cold.get('findings', '-')} | {cold['seconds']:.2f} | {warm['seconds']:.2f} "
                  f"| {changed[0]['seconds'] if changed else float('nan'):.2f} | {'yes' if ok else 'NO'} |", flush=True)
        return 1 if bad else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


def terraform_scaling(sizes: list[int]) -> int:
    """One generated Terraform file per size (resources: half launch templates, half their groups), scanned cold."""
    work = Path(tempfile.mkdtemp(prefix="gpulint-bench-tf-"))
    instances = ("g5.12xlarge", "p4d.24xlarge", "g6.12xlarge", "p5.48xlarge")
    rows = []
    try:
        for n in sizes:
            root = work / f"tf-{n}"
            root.mkdir()
            text = "\n".join(_TF_PAIR.format(i=i, instance=instances[i % len(instances)]) for i in range(n // 2))
            (root / "main.tf").write_text(text, encoding="utf-8")
            # the file is past the default max-file-size-kb from about 4,000 resources
            (root / "pyproject.toml").write_text("[tool.gpulint]\nmax-file-size-kb = 65536\n", encoding="utf-8")
            print(f"{n} resources ({len(text) // 1024:,} KB) ...", flush=True)
            r = run_gpulint(root, None, work / f"cache-{n}", True)
            rows.append((n, len(text), r))
        print()
        print("| resources in one .tf file | KB | wall s | s per 1,000 resources | findings | peak RSS MB |")
        print("|---|---|---|---|---|---|")
        for n, size, r in rows:
            if r["rc"] != 0:
                print(f"| {n:,} | {size // 1024:,} | failed (exit {r['rc']}): {r['stderr'][-200:]} | | | |")
                continue
            print(f"| {n:,} | {size // 1024:,} | {r['seconds']:.1f} | {1000 * r['seconds'] / n:.2f} | {r['findings']:,} | {r['peak_mb']:.0f} |")
        return 0 if all(r["rc"] == 0 for _, _, r in rows) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("projects", nargs="*", help=f"NAME==VERSION sdists (default: {' '.join(CORPUS)})")
    ap.add_argument("--large", action="store_true", help=f"add {' '.join(LARGE)}")
    ap.add_argument("--cache", type=Path, default=Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gpulint-corpus")
    ap.add_argument("--keep", type=Path, help="build the corpus in this folder and keep it (default: a temporary folder)")
    ap.add_argument("--terraform", nargs="?", const="1000,2000,4000,8000", metavar="N,N,...",
                    help="measure one Terraform file of N resources per size instead (default sizes: %(const)s)")
    ap.add_argument("--identity", nargs="+", type=Path, metavar="DIR",
                    help="check instead that cold, warm and one-file-changed scans of each DIR print the same bytes")
    args = ap.parse_args(argv)
    if args.identity:
        return identity(args.identity)
    if args.terraform:
        return terraform_scaling([int(n) for n in args.terraform.split(",")])
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
        print(f"Python files gpulint discovers: {len(files)}; parsing them with libcst and with ast ...", flush=True)
        base = floor(files)
        ast_base = floor(files, ast.parse)
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
        print("| run | jobs | wall s | x libcst parse | x ast parse | % of cold | files/s | peak RSS MB |")
        print("|---|---|---|---|---|---|---|---|")
        print(f"| libcst parse of {len(files)} .py files, 1 process | - | {base:.1f} | 1.00 | {base / ast_base:.2f} | - | {len(files) / base:.0f} | - |")
        print(f"| ast parse of the same files, 1 process | - | {ast_base:.1f} | {ast_base / base:.2f} | 1.00 | - | {len(files) / ast_base:.0f} | - |")
        cold = {label: r["seconds"] for name, label, r in rows if name.startswith("cold") and r["rc"] == 0}
        for name, label, r in rows:
            if r["rc"] != 0:
                print(f"| {name} | {label} | failed (exit {r['rc']}) | | | | | |")
                continue
            share = f"{100 * r['seconds'] / cold[label]:.1f}%" if label in cold else "-"
            print(f"| {name} | {label} | {r['seconds']:.2f} | {r['seconds'] / base:.2f} | {r['seconds'] / ast_base:.2f} | {share} "
                  f"| {r['files'] / r['seconds']:.0f} | {r['peak_mb']:.0f} |")
        ok = [r for _, _, r in rows if r["rc"] == 0]
        same = len({r["output"] for r in ok}) <= 1  # a comment appended changes no byte of the report either
        print()
        print(f"files scanned (every kind): {ok[0]['files'] if ok else '-'}; findings: {ok[0]['findings'] if ok else '-'}; "
              f"changed file: {target.relative_to(corpus)}")
        print(f"output identical in every run (cold, warm, one file changed, each --jobs): {'yes' if same else 'NO'}")
        for name, label, r in rows:
            if r["rc"] != 0:
                print(f"{name} --jobs {label}: exit {r['rc']}: {r['stderr']}", file=sys.stderr)
        return 0 if same and len(ok) == len(rows) else 1
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
