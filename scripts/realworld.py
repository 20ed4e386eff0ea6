"""Real-world evaluation: scan pinned snapshots of public repositories and count what gpulint says.

    python scripts/realworld.py                       # every repository of tests/realworld/repos.yaml
    python scripts/realworld.py --repos huggingface/trl,karpathy/nanoGPT --jobs 2
    python scripts/realworld.py -o /work/realworld-runs/main-abc1234.json   # keep the run for --compare
    python scripts/realworld.py --load RUN.json       # re-count a saved run (new labels, no rescan)
    python scripts/realworld.py --compare OLD.json NEW.json

Not part of CI: the snapshots come from outside (bare git directories under a mirror
folder, ``<mirror>/<owner>+<name>/repo``) and CI has no internet. Each pinned commit is
extracted with ``git cat-file --batch`` into a work folder outside this repository;
blobs the snapshot lacks (large files, LFS content) are skipped, as are symlinks and
submodules. Then ``gpulint scan --format json --exit-zero`` and ``gpulint workloads
--format json`` run on each copy, and the script prints, per repository and in total:

* per code: findings, findings in tests, repeats (findings beyond the first of one code
  at one file and line), cross-file findings, SYS001 by severity, SYS002;
* the workload model: workloads, workloads with any compute target, workloads whose
  compute resolved to a catalogue instance, and the reasons compute stays unresolved;
* with ``tests/realworld/labels.yaml`` (labels only: repo, commit, path, line, code,
  verdict right|debatable|wrong, reason): per code labelled/unlabelled findings and
  precision, and the labels no finding matches any more (fixed false positives, or
  lost true positives).

Only the standard library and PyYAML (a gpulint dependency) are used, so the script
runs in any environment where gpulint is installed, or with ``--gpulint CMD``.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterable

import yaml

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent
DEFAULT_MANIFEST = PROJECT / "tests" / "realworld" / "repos.yaml"
DEFAULT_LABELS = PROJECT / "tests" / "realworld" / "labels.yaml"
DEFAULT_MIRROR = Path("/work/.mirror")
DEFAULT_WORK = Path(os.environ.get("GPULINT_REALWORLD_WORK") or Path.home() / ".cache" / "gpulint-realworld")
VERDICTS = ("right", "debatable", "wrong")
SEVERITIES = ("error", "warning", "info")
RECORD_VERSION = 1


# -- classification of one finding ------------------------------------------------------------
TEST_DIRS = frozenset({"tests", "test", "testing", "test_utils"})


def in_tests(path: str) -> bool:
    """Test code by the conventions pytest and unittest projects use.

    A directory ``tests/``, ``test/``, ``testing/`` or ``test_utils/`` anywhere in the
    path, or a file ``test_*.py``, ``*_test.py`` or ``conftest.py``.
    """
    parts = PurePosixPath(path.strip().replace("\\", "/")).parts
    if any(p in TEST_DIRS for p in parts[:-1]):
        return True
    name = parts[-1] if parts else ""
    stem, _, ext = name.rpartition(".")
    if ext not in ("py", "ipynb"):
        return False
    return name == "conftest.py" or stem.startswith("test_") or stem.endswith("_test")


CROSS_FILE_CODES = ("NET001", "NET002", "NET003", "NET004", "SPOT001", "SPOT002", "SPOT004")


def is_cross_file(f: dict) -> bool:
    """A verdict that needs the compute target, or one that cites another file."""
    code = f.get("code", "")
    if code.startswith("MEM") or code in CROSS_FILE_CODES:
        return True
    return any(r.get("path") and r.get("path") != f.get("path") for r in f.get("related") or [])


def location(f: dict) -> tuple[str, str, int]:
    return (f.get("code", ""), f.get("path", ""), int(f.get("line") or 0))


def count_repeats(findings: Iterable[dict]) -> Counter:
    """Per code: findings beyond the first of that code at one file and line.

    Deduplicating every code/file/line would remove exactly this many findings.
    """
    seen = Counter(location(f) for f in findings)
    out: Counter = Counter()
    for (code, _path, _line), n in seen.items():
        if n > 1:
            out[code] += n - 1
    return out


def compact(f: dict, repo: str) -> dict:
    """What the evaluation keeps of one finding of gpulint's JSON report."""
    related_paths = sorted({r.get("path") for r in f.get("related") or [] if r.get("path")})
    wls = f.get("workloads")
    if wls is None:
        wls = [f["workload"]] if f.get("workload") else []
    cost = f.get("cost_impact") or {}
    return classify({
        "repo": repo,
        "code": f.get("code"),
        "severity": f.get("severity"),
        "path": f.get("path"),
        "line": f.get("line"),
        "fingerprint": f.get("fingerprint"),
        "message": f.get("message"),
        "workloads": [str(w.get("name", w)) if isinstance(w, dict) else str(w) for w in wls],
        "related_paths": related_paths,
        "usd_per_hour": cost.get("usd_per_hour"),
    })


def classify(f: dict) -> dict:
    """Set the derived flags of a compact finding (again, when a saved run is recounted)."""
    wls = f.get("workloads") or []
    f["in_tests"] = in_tests(f.get("path") or "")
    f["test_workload"] = bool(wls) and all(in_tests(w) for w in wls)
    f["cross_file"] = is_cross_file({"code": f.get("code", ""), "path": f.get("path"),
                                     "related": [{"path": p} for p in f.get("related_paths") or []]})
    return f


# -- the workload model -----------------------------------------------------------------------
def computes_of(wl: dict) -> list[dict]:
    """The compute targets of one workload, whatever the report's shape (one dict or a list)."""
    out: list[dict] = []
    for key in ("compute", "computes"):
        v = wl.get(key)
        if isinstance(v, dict):
            out.append(v)
        elif isinstance(v, list):
            out.extend(c for c in v if isinstance(c, dict))
    return out


def _instance(c: dict) -> str | None:
    for src in (c, c.get("resolution") or {}, c.get("resolved") or {}):
        if isinstance(src, dict) and src.get("instance"):
            return str(src["instance"])
    return None


_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_PATHISH = re.compile(r"[^\s,;()]*[/#][^\s,;()]*|\S+\.(?:py|ya?ml|tf|json|sh|ipynb|toml|sbatch|slurm)\b")
_NUMBER = re.compile(r"\b\d+\b")


def reason_group(text: str) -> str:
    """A reason with its names, paths and numbers replaced, so like reasons group together."""
    t = text.split("\n", 1)[0].split(". Pin it", 1)[0]
    t = re.sub(r"\([^()]*\)", "(...)", t)
    t = _QUOTED.sub("<name>", t)
    t = _PATHISH.sub("<where>", t)
    t = _NUMBER.sub("N", t)
    t = re.sub(r"(<where>\s*)+", "<where> ", t)
    t = re.sub(r"\s+", " ", t).strip()
    return t[:160]


def unresolved_reason(wl: dict) -> str | None:
    """Why this workload has no catalogue instance, or None when it has one."""
    comps = computes_of(wl)
    if any(_instance(c) for c in comps):
        return None
    for c in comps:
        if c.get("device") == "cpu":
            return "CPU compute: " + reason_group(str(c.get("device_reason") or "no reason given"))
    for c in comps:
        for key in ("why_no_instance", "why_unknown", "why_no_price"):
            if c.get(key):
                return reason_group(str(c[key]))
    for u in wl.get("unknown") or []:
        if isinstance(u, str) and (u.startswith("compute:") or u.startswith("instance:")):
            return reason_group(u)
    return "no compute target, and no reason given" if not comps else "compute without instance, and no reason given"


def compact_workload(wl: dict) -> dict:
    """What the evaluation keeps of one workload of `gpulint workloads --format json`."""
    comps = []
    for c in computes_of(wl):
        comps.append({k: c.get(k) for k in ("id", "source", "provider", "device", "device_reason", "capacity", "nodes",
                                            "gpus_per_node", "why_no_price", "why_no_instance", "why_unknown", "usd_per_hour")
                      if c.get(k) is not None} | ({"instance": _instance(c)} if _instance(c) else {}))
    return {
        "name": wl.get("name"),
        "entrypoint": wl.get("entrypoint"),
        "role": wl.get("role") or (wl.get("resolved") or {}).get("role"),
        "compute": comps,
        "launchers": [l.get("where") for l in wl.get("launchers") or [] if isinstance(l, dict)],
        "unknown": [u for u in wl.get("unknown") or [] if isinstance(u, str)],
    }


def workload_stats(workloads: list[dict]) -> dict:
    with_compute = sum(1 for w in workloads if computes_of(w))
    resolved = sum(1 for w in workloads if any(_instance(c) for c in computes_of(w)))
    devices = Counter(str(c.get("device") or "-") for w in workloads for c in computes_of(w)[:1])
    reasons = Counter(r for r in (unresolved_reason(w) for w in workloads) if r)
    tests = sum(1 for w in workloads if in_tests(str(w.get("entrypoint") or w.get("name") or "")))
    roles = Counter(str(w.get("role") or (w.get("resolved") or {}).get("role") or "-") for w in workloads)
    examples: dict[str, list[str]] = defaultdict(list)
    for w in workloads:
        r = unresolved_reason(w)
        if r and len(examples[r]) < 3:
            examples[r].append(str(w.get("entrypoint") or w.get("name")))
    return {
        "workloads": len(workloads),
        "with_compute": with_compute,
        "resolved": resolved,
        "test_entrypoints": tests,
        "devices": dict(devices),
        "unresolved_reasons": dict(reasons.most_common()),
        "unresolved_examples": dict(examples),
        "roles": dict(roles),
    }


# -- per-code tables ---------------------------------------------------------------------------
COLUMNS = ("findings", "tests", "test_wl", "repeats", "cross", "error", "warning", "info")


def code_table(findings: list[dict]) -> dict[str, dict[str, int]]:
    """Per code: findings, in tests, repeats, cross-file, and by severity."""
    table: dict[str, Counter] = defaultdict(Counter)
    for f in findings:
        row = table[f["code"]]
        row["findings"] += 1
        row["tests"] += bool(f.get("in_tests"))
        row["test_wl"] += bool(f.get("test_workload") and not f.get("in_tests"))
        row["cross"] += bool(f.get("cross_file"))
        row[f.get("severity") or "info"] += 1
    for code, n in count_repeats(findings).items():
        table[code]["repeats"] += n
    return {code: {c: int(row.get(c, 0)) for c in COLUMNS} for code, row in sorted(table.items())}


def headline(findings: list[dict]) -> dict[str, Any]:
    sys001 = Counter(f.get("severity") for f in findings if f["code"] == "SYS001")
    return {
        "findings": len(findings),
        "tests": sum(1 for f in findings if f.get("in_tests")),
        "test_workload_only": sum(1 for f in findings if f.get("test_workload") and not f.get("in_tests")),
        "repeats": sum(count_repeats(findings).values()),
        "cross_file": sum(1 for f in findings if f.get("cross_file")),
        "SYS001": {s: sys001.get(s, 0) for s in SEVERITIES},
        "SYS002": sum(1 for f in findings if f["code"] == "SYS002"),
        "usd_per_hour": round(sum(f.get("usd_per_hour") or 0 for f in findings), 2),
    }


# -- labels ------------------------------------------------------------------------------------
@dataclass
class Label:
    repo: str
    path: str
    code: str
    line: int | None
    verdict: str
    reason: str = ""
    commit: str | None = None
    fingerprint: str | None = None
    index: int = 0

    def key(self) -> tuple:
        return (self.repo, self.path, self.code, self.line)


def load_labels(path: Path) -> list[Label]:
    if not path.exists():
        return []
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    if isinstance(data, dict):
        data = data.get("labels") or []
    out = []
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise SystemExit(f"{path}: label {i + 1} is not a mapping")
        missing = [k for k in ("repo", "path", "code", "verdict") if not item.get(k)]
        if missing or (item.get("line") is None and not item.get("fingerprint")):
            raise SystemExit(f"{path}: label {i + 1} lacks {', '.join(missing) or 'line (or fingerprint)'}")
        if item["verdict"] not in VERDICTS:
            raise SystemExit(f"{path}: label {i + 1}: verdict {item['verdict']!r} is not one of {', '.join(VERDICTS)}")
        out.append(Label(repo=item["repo"], path=item["path"], code=item["code"],
                         line=int(item["line"]) if item.get("line") is not None else None,
                         verdict=item["verdict"], reason=item.get("reason") or "",
                         commit=str(item["commit"]) if item.get("commit") else None,
                         fingerprint=item.get("fingerprint"), index=i))
    return out


def match_labels(findings: list[dict], labels: list[Label], commits: dict[str, str]) -> tuple[list[Label | None], list[Label]]:
    """The label of each finding (or None), and the labels no finding matched.

    A finding matches a label by repository, path, code and line, or by fingerprint
    when the label has one. A label of another commit than the scanned one matches by
    fingerprint only: its line numbers belong to other code.
    """
    by_key: dict[tuple, Label] = {}
    by_fp: dict[tuple, Label] = {}
    for lab in labels:
        current = lab.commit is None or commits.get(lab.repo) is None or commits[lab.repo].startswith(lab.commit) or lab.commit.startswith(commits[lab.repo])
        if lab.fingerprint:
            by_fp[(lab.repo, lab.code, lab.fingerprint)] = lab
        if current and lab.line is not None:
            by_key[lab.key()] = lab
    out: list[Label | None] = []
    used: set[int] = set()
    for f in findings:
        lab = None
        if f.get("fingerprint"):
            lab = by_fp.get((f["repo"], f["code"], f["fingerprint"]))
        if lab is None:
            lab = by_key.get((f["repo"], f.get("path"), f["code"], f.get("line")))
        out.append(lab)
        if lab is not None:
            used.add(lab.index)
    unmatched = [lab for lab in labels if lab.index not in used and lab.repo in commits]
    return out, unmatched


def precision_table(findings: list[dict], matched: list[Label | None]) -> dict[str, dict[str, Any]]:
    """Per code: labelled and unlabelled findings, verdict counts and precision (right / labelled)."""
    rows: dict[str, Counter] = defaultdict(Counter)
    for f, lab in zip(findings, matched):
        row = rows[f["code"]]
        if lab is None:
            row["unlabelled"] += 1
        else:
            row["labelled"] += 1
            row[lab.verdict] += 1
    out = {}
    for code, row in sorted(rows.items()):
        n = row["labelled"]
        out[code] = {k: int(row.get(k, 0)) for k in ("labelled", "unlabelled", *VERDICTS)}
        out[code]["precision"] = round(row["right"] / n, 3) if n else None
    return out


def severity_precision(findings: list[dict], matched: list[Label | None]) -> dict[str, dict[str, Any]]:
    rows: dict[str, Counter] = defaultdict(Counter)
    for f, lab in zip(findings, matched):
        if lab is not None:
            rows[f.get("severity") or "info"][lab.verdict] += 1
    out = {}
    for sev in SEVERITIES:
        row = rows.get(sev, Counter())
        n = sum(row.values())
        out[sev] = {**{v: int(row.get(v, 0)) for v in VERDICTS}, "precision": round(row["right"] / n, 3) if n else None}
    return out


# -- manifest, snapshots, extraction ------------------------------------------------------------
@dataclass
class Repo:
    repo: str
    commit: str
    kinds: list[str] = field(default_factory=list)
    why: str = ""

    @property
    def slug(self) -> str:
        return self.repo.replace("/", "+")


def load_manifest(path: Path) -> list[Repo]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    items = data.get("repositories") if isinstance(data, dict) else data
    out = []
    for i, item in enumerate(items or []):
        if not isinstance(item, dict) or not item.get("repo") or not item.get("commit"):
            raise SystemExit(f"{path}: entry {i + 1} needs repo and commit")
        out.append(Repo(repo=item["repo"], commit=str(item["commit"]), kinds=list(item.get("kinds") or []), why=item.get("why") or ""))
    return out


def git_dir(mirror: Path, repo: Repo) -> Path | None:
    base = mirror / repo.slug / "repo"
    for cand in (base / ".git", base):
        if (cand / "HEAD").is_file() and (cand / "objects").is_dir():
            return cand
    return None


def extract(gitdir: Path, commit: str, dest: Path) -> dict[str, int]:
    """Write the tree of `commit` into `dest`, skipping what the snapshot lacks.

    `git archive` aborts on the first missing blob; ``git cat-file --batch`` reports
    it as missing and goes on. Symlinks and submodules are not followed (a snapshot's
    symlink may point anywhere on this machine).
    """
    listing = subprocess.run(["git", "--git-dir", str(gitdir), "ls-tree", "-r", "-z", "--full-tree", commit],
                             capture_output=True, check=True).stdout
    entries = []
    skipped_links = 0
    for rec in listing.split(b"\0"):
        if not rec:
            continue
        meta, raw_path = rec.split(b"\t", 1)
        mode, typ, sha = meta.split()
        if typ != b"blob" or mode == b"120000":
            skipped_links += 1
            continue
        entries.append((mode, sha, os.fsdecode(raw_path)))
    tmp = dest.with_name(dest.name + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    written = missing = unsafe = 0
    proc = subprocess.Popen(["git", "--git-dir", str(gitdir), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert proc.stdin and proc.stdout
    try:
        for mode, sha, rel in entries:
            proc.stdin.write(sha + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split()
            if len(header) < 3 or header[1] == b"missing":
                missing += 1
                continue
            size = int(header[2])
            data = proc.stdout.read(size)
            proc.stdout.read(1)  # the newline after the content
            parts = PurePosixPath(rel).parts
            if not parts or any(p in ("..", "") for p in parts) or rel.startswith("/"):
                unsafe += 1
                continue
            out = tmp.joinpath(*parts)
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(data)
            if mode == b"100755":
                out.chmod(0o755)
            written += 1
    finally:
        proc.stdin.close()
        proc.wait()
    shutil.rmtree(dest, ignore_errors=True)
    tmp.rename(dest)
    stats = {"written": written, "missing": missing, "links_or_submodules": skipped_links, "unsafe_paths": unsafe}
    (dest.parent / (dest.name + ".extracted.json")).write_text(json.dumps({"commit": commit, **stats}))
    return stats


def ensure_extracted(gitdir: Path, repo: Repo, work: Path) -> tuple[Path, dict]:
    dest = work / "trees" / f"{repo.slug}@{repo.commit[:12]}"
    marker = dest.parent / (dest.name + ".extracted.json")
    if dest.is_dir() and marker.is_file():
        info = json.loads(marker.read_text())
        if info.get("commit") == repo.commit:
            return dest, {k: v for k, v in info.items() if k != "commit"}
    return dest, extract(gitdir, repo.commit, dest)


def resolve_commit(gitdir: Path, commit: str) -> str | None:
    r = subprocess.run(["git", "--git-dir", str(gitdir), "rev-parse", "--verify", "--quiet", commit + "^{commit}"],
                       capture_output=True, text=True)
    return r.stdout.strip() or None


# -- running gpulint ---------------------------------------------------------------------------
def gpulint_command(given: str | None) -> list[str]:
    if given:
        return shlex.split(given)
    # the gpulint of this interpreter's environment first (``/venv/bin/python scripts/realworld.py`` measures that
    # venv's gpulint, whatever another activated venv puts first on PATH), then PATH
    beside = Path(sys.executable).with_name("gpulint")
    exe = str(beside) if beside.is_file() else shutil.which("gpulint")
    return [exe] if exe else [sys.executable, "-m", "gpulint"]


def gpulint_version(cmd: list[str]) -> str:
    r = subprocess.run(cmd + ["--version"], capture_output=True, text=True)
    return (r.stdout or r.stderr).strip()


def run_json(cmd: list[str], timeout: float, cwd: Path) -> tuple[dict | None, dict]:
    t0 = time.perf_counter()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, {"error": f"timed out after {timeout:.0f} s", "seconds": round(time.perf_counter() - t0, 2)}
    meta = {"rc": r.returncode, "seconds": round(time.perf_counter() - t0, 2)}
    if r.stderr.strip():
        meta["stderr"] = r.stderr.strip()[-4000:]
    try:
        return json.loads(r.stdout), meta
    except json.JSONDecodeError as e:
        meta["error"] = f"output is not JSON ({e}); rc {r.returncode}"
        return None, meta


def scan_repo(repo: Repo, tree: Path, cmd: list[str], jobs: int, timeout: float, raw_dir: Path | None,
              stamp: str | None = None, reuse: bool = False) -> dict:
    """Run gpulint scan and gpulint workloads on one tree (or reuse the raw outputs of the same gpulint)."""
    raw = {name: raw_dir / f"{repo.slug}.{name}.json" for name in ("scan", "workloads", "meta")} if raw_dir else {}
    meta_ok = False
    if reuse and raw and all(p.is_file() for p in raw.values()):
        m = json.loads(raw["meta"].read_text())
        meta_ok = m.get("commit") == repo.commit and stamp is not None and m.get("gpulint") == stamp
    if meta_ok:
        m = json.loads(raw["meta"].read_text())
        scan, wl_doc = json.loads(raw["scan"].read_text()), json.loads(raw["workloads"].read_text())
        scan_meta, wl_meta = m["scan"], m["workloads_run"]
    else:
        scan_cmd = cmd + ["scan", str(tree), "--format", "json", "--exit-zero"] + (["--jobs", str(jobs)] if jobs > 1 else [])
        scan, scan_meta = run_json(scan_cmd, timeout, tree)
        wl_doc, wl_meta = run_json(cmd + ["workloads", str(tree), "--format", "json"], timeout, tree)
        if raw:
            raw_dir.mkdir(parents=True, exist_ok=True)
            for name, doc in (("scan", scan), ("workloads", wl_doc)):
                if doc is not None:
                    raw[name].write_text(json.dumps(doc))
                else:
                    raw[name].unlink(missing_ok=True)
            raw["meta"].write_text(json.dumps({"commit": repo.commit, "gpulint": stamp, "scan": scan_meta, "workloads_run": wl_meta}))
    findings = [compact(f, repo.repo) for f in (scan or {}).get("findings", [])]
    workloads = (wl_doc or {}).get("workloads")
    if workloads is None:
        workloads = (scan or {}).get("workloads") or []
    return {
        "repo": repo.repo,
        "commit": repo.commit,
        "kinds": repo.kinds,
        "scan": scan_meta,
        "workloads_run": wl_meta,
        "findings": findings,
        "workloads": [compact_workload(w) for w in workloads],
    }


# -- the report --------------------------------------------------------------------------------
def build_record(results: list[dict], labels: list[Label], meta: dict) -> dict:
    findings = [classify(f) for r in results for f in r["findings"]]
    commits = {r["repo"]: r["commit"] for r in results}
    matched, unmatched = match_labels(findings, labels, commits)
    for f, lab in zip(findings, matched):
        f["verdict"] = lab.verdict if lab else None
    total_wl = Counter()
    reasons: Counter = Counter()
    roles: Counter = Counter()
    devices: Counter = Counter()
    for r in results:
        r["workload_model"] = workload_stats(r.get("workloads") or [])
        m = r["workload_model"]
        for k in ("workloads", "with_compute", "resolved", "test_entrypoints"):
            total_wl[k] += m[k]
        reasons.update(m["unresolved_reasons"])
        roles.update(m.get("roles") or {})
        devices.update(m.get("devices") or {})
    repos = []
    for r in results:
        repos.append({
            "repo": r["repo"], "commit": r["commit"], "kinds": r["kinds"], "scan": r["scan"],
            "workloads_run": r["workloads_run"], "extract": r.get("extract"),
            "headline": headline(r["findings"]), "codes": code_table(r["findings"]),
            "workload_model": r["workload_model"], "workloads": r.get("workloads") or [],
        })
    return {
        "record_version": RECORD_VERSION,
        **meta,
        "repos": repos,
        "total": {
            "headline": headline(findings),
            "codes": code_table(findings),
            "workload_model": {**dict(total_wl), "roles": dict(roles), "devices": dict(devices),
                               "unresolved_reasons": dict(reasons.most_common())},
        },
        "labels": {
            "file": meta.get("labels_file"),
            "count": len(labels),
            "per_code": precision_table(findings, matched),
            "per_severity": severity_precision(findings, matched),
            "unmatched": [{"repo": l.repo, "path": l.path, "line": l.line, "code": l.code, "verdict": l.verdict, "reason": l.reason} for l in unmatched],
        },
        "findings": findings,
    }


def relabel(record: dict, labels: list[Label], labels_file: str | None) -> dict:
    """Recount a saved run with (other) labels; the scan data stay as they were."""
    results = [{**r, "findings": [f for f in record["findings"] if f["repo"] == r["repo"]]} for r in record["repos"]]
    meta = {k: v for k, v in record.items() if k not in ("repos", "total", "labels", "findings", "record_version")}
    meta["labels_file"] = labels_file
    return build_record(results, labels, meta)


def _counts(c: dict | None) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted((c or {}).items(), key=lambda kv: -kv[1])) or "-"


def _table(rows: list[list[Any]], header: list[str]) -> str:
    cells = [header] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = []
    for j, r in enumerate(cells):
        lines.append("  ".join(c.ljust(widths[i]) if i == 0 else c.rjust(widths[i]) for i, c in enumerate(r)).rstrip())
        if j == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _codes_block(codes: dict[str, dict[str, int]]) -> str:
    rows = [[code, *(row[c] for c in COLUMNS)] for code, row in codes.items()]
    tot = [sum(row[c] for row in codes.values()) for c in COLUMNS]
    rows.append(["total", *tot])
    return _table(rows, ["code", *COLUMNS])


def render_text(record: dict, per_repo: bool = True, verbose: bool = False) -> str:
    out = [f"gpulint {record.get('gpulint_version', '?')} ({record.get('gpulint_commit') or 'commit unknown'}); "
           f"{len(record['repos'])} repositories; {record.get('started', '')}"]
    if per_repo:
        for r in record["repos"]:
            h, m = r["headline"], r["workload_model"]
            scan = r.get("scan") or {}
            note = f"  !! {scan['error']}" if scan.get("error") else ""
            out.append("")
            out.append(f"== {r['repo']} @ {r['commit'][:12]}  [{', '.join(r['kinds'])}]  {scan.get('seconds', '?')} s{note}")
            if scan.get("stderr") and verbose:
                out.append("   stderr: " + scan["stderr"].replace("\n", "\n           "))
            out.append(f"   findings {h['findings']}, in tests {h['tests']} (+{h['test_workload_only']} only for test workloads), repeats {h['repeats']}, cross-file {h['cross_file']}, "
                       f"SYS001 error/warning/info {h['SYS001']['error']}/{h['SYS001']['warning']}/{h['SYS001']['info']}, SYS002 {h['SYS002']}")
            out.append(f"   workloads {m['workloads']} ({m['test_entrypoints']} with a test entrypoint), with compute {m['with_compute']}, resolved to an instance {m['resolved']}")
            out.append(f"   roles {_counts(m.get('roles'))}; compute devices {_counts(m.get('devices'))}")
            for reason, n in m["unresolved_reasons"].items():
                ex = ", ".join(m.get("unresolved_examples", {}).get(reason, [])[:2])
                out.append(f"     {n:4d}  {reason}" + (f"   (e.g. {ex})" if verbose and ex else ""))
            if r["codes"]:
                out.append("   " + _codes_block(r["codes"]).replace("\n", "\n   "))
    t = record["total"]
    h, m = t["headline"], t["workload_model"]
    out.append("")
    out.append("== total")
    out.append(f"   findings {h['findings']}, in tests {h['tests']} (+{h['test_workload_only']} only for test workloads), repeats {h['repeats']}, cross-file {h['cross_file']}, "
               f"SYS001 error/warning/info {h['SYS001']['error']}/{h['SYS001']['warning']}/{h['SYS001']['info']}, SYS002 {h['SYS002']}")
    out.append(f"   workloads {m.get('workloads', 0)} ({m.get('test_entrypoints', 0)} with a test entrypoint), with compute {m.get('with_compute', 0)}, resolved to an instance {m.get('resolved', 0)}")
    out.append(f"   roles {_counts(m.get('roles'))}; compute devices {_counts(m.get('devices'))}")
    for reason, n in m["unresolved_reasons"].items():
        out.append(f"     {n:4d}  {reason}")
    out.append("   " + _codes_block(t["codes"]).replace("\n", "\n   "))
    lab = record["labels"]
    if lab["count"]:
        out.append("")
        out.append(f"== labels ({lab['count']} in {lab['file']})")
        rows = [[code, r["labelled"], r["unlabelled"], r["right"], r["debatable"], r["wrong"],
                 "-" if r["precision"] is None else f"{r['precision']:.0%}"] for code, r in lab["per_code"].items()]
        out.append("   " + _table(rows, ["code", "labelled", "unlabelled", "right", "debatable", "wrong", "precision"]).replace("\n", "\n   "))
        sev = lab["per_severity"]
        out.append("   by severity: " + "; ".join(
            f"{s} {v['right']}/{v['debatable']}/{v['wrong']} (right/debatable/wrong)"
            + ("" if v["precision"] is None else f" = {v['precision']:.0%}") for s, v in sev.items()))
        um = lab["unmatched"]
        if um:
            c = Counter(l["verdict"] for l in um)
            out.append(f"   labels no finding matches: {len(um)} (right {c['right']}: lost or moved true positives; "
                       f"debatable {c['debatable']}; wrong {c['wrong']}: gone false positives)")
            if verbose:
                for l in um:
                    out.append(f"     {l['verdict']:9s} {l['code']} {l['repo']} {l['path']}:{l['line']}  {l['reason']}")
    return "\n".join(out) + "\n"


# -- comparing two runs ------------------------------------------------------------------------
def compare(old: dict, new: dict) -> dict:
    """Per code, findings that appeared and vanished between two runs (by repo, code, path, line).

    Only repositories both runs scanned are compared; the multiset difference keeps
    repeats visible (five copies becoming one is four vanished findings).
    """
    common = {r["repo"] for r in old["repos"]} & {r["repo"] for r in new["repos"]}
    def keyed(rec):
        c = Counter()
        idx = {}
        for f in rec["findings"]:
            if f["repo"] in common:
                k = (f["repo"], f["code"], f["path"], f["line"])
                c[k] += 1
                idx.setdefault(k, f)
        return c, idx
    oc, oi = keyed(old)
    nc, ni = keyed(new)
    appeared = nc - oc
    vanished = oc - nc
    per_code: dict[str, Counter] = defaultdict(Counter)
    for k, n in oc.items():
        per_code[k[1]]["old"] += n
    for k, n in nc.items():
        per_code[k[1]]["new"] += n
    for k, n in appeared.items():
        per_code[k[1]]["appeared"] += n
    for k, n in vanished.items():
        per_code[k[1]]["vanished"] += n
        v = oi[k].get("verdict")
        if v:
            per_code[k[1]][f"vanished_{v}"] += n
    def listing(d, idx):
        return [{"repo": k[0], "code": k[1], "path": k[2], "line": k[3], "count": n,
                 "verdict": idx[k].get("verdict"), "message": idx[k].get("message")} for k, n in sorted(d.items(), key=lambda kv: (kv[0][1], kv[0][0], kv[0][2], kv[0][3] or 0))]
    cols = ("old", "new", "appeared", "vanished", "vanished_right", "vanished_debatable", "vanished_wrong")
    return {
        "repos": sorted(common),
        "only_old": sorted({r["repo"] for r in old["repos"]} - common),
        "only_new": sorted({r["repo"] for r in new["repos"]} - common),
        "per_code": {code: {c: int(row.get(c, 0)) for c in cols} for code, row in sorted(per_code.items())},
        "appeared": listing(appeared, ni),
        "vanished": listing(vanished, oi),
        "workloads": {r["repo"]: {"old": _wm(old, r["repo"]), "new": _wm(new, r["repo"])} for r in new["repos"] if r["repo"] in common},
    }


def _wm(rec: dict, repo: str) -> dict:
    for r in rec["repos"]:
        if r["repo"] == repo:
            m = r["workload_model"]
            return {k: m[k] for k in ("workloads", "with_compute", "resolved")}
    return {}


def render_compare(diff: dict, verbose: bool) -> str:
    out = [f"compared on {len(diff['repos'])} repositories"
           + (f"; only in old: {', '.join(diff['only_old'])}" if diff["only_old"] else "")
           + (f"; only in new: {', '.join(diff['only_new'])}" if diff["only_new"] else "")]
    rows = [[code, r["old"], r["new"], r["appeared"], r["vanished"], r["vanished_right"], r["vanished_debatable"], r["vanished_wrong"]]
            for code, r in diff["per_code"].items()]
    out.append(_table(rows, ["code", "old", "new", "appeared", "vanished", "lost right", "gone debatable", "gone wrong"]))
    out.append("")
    rows = [[repo, v["old"].get("workloads"), v["new"].get("workloads"), v["old"].get("with_compute"), v["new"].get("with_compute"),
             v["old"].get("resolved"), v["new"].get("resolved")] for repo, v in diff["workloads"].items()]
    rows.append(["total", *(sum(r[i] or 0 for r in rows) for i in range(1, 7))])
    out.append(_table(rows, ["repo", "workloads old", "new", "with compute old", "new", "resolved old", "new"]))
    if verbose:
        for name in ("appeared", "vanished"):
            out.append("")
            out.append(f"{name}:")
            for f in diff[name]:
                out.append(f"  {f['code']} {f['repo']} {f['path']}:{f['line']}" + (f" x{f['count']}" if f["count"] > 1 else "")
                           + (f" [{f['verdict']}]" if f.get("verdict") else "") + f"  {(f.get('message') or '')[:140]}")
    return "\n".join(out) + "\n"


# -- the command line --------------------------------------------------------------------------
def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except ValueError:
        return False


def _git(path: Path, *args: str) -> str | None:
    r = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True)
    return (r.stdout.strip() or None) if r.returncode == 0 else None


def gpulint_source(cmd: list[str]) -> Path | None:
    """The checkout the gpulint command runs from, when it is a Python entry point of one."""
    python = None
    if len(cmd) >= 3 and cmd[1:3] == ["-m", "gpulint"]:
        python = cmd[0]
    elif len(cmd) == 1 and Path(cmd[0]).is_file():
        with open(cmd[0], "rb") as fh:
            first = fh.readline().decode(errors="replace").strip()
        if first.startswith("#!") and "python" in first:
            python = first[2:].strip().split()[0]
    if not python:
        return None
    # -I: the module the command imports, not a gpulint/ folder of the current directory
    r = subprocess.run([python, "-I", "-c", "import gpulint, os; print(os.path.dirname(os.path.dirname(os.path.abspath(gpulint.__file__))))"],
                       capture_output=True, text=True)
    root = Path(r.stdout.strip()) if r.returncode == 0 and r.stdout.strip() else None
    return root if root and (root / ".git").exists() else None


def gpulint_identity(root: Path) -> tuple[str | None, str | None]:
    """(HEAD commit, a stamp of the code itself) of a gpulint checkout.

    The stamp is the tree of gpulint/, rules/ and pyproject.toml, plus the diff when the
    checkout has uncommitted changes there: commits that touch only scripts or tests
    keep it, so raw outputs can be reused across them.
    """
    head = _git(root, "rev-parse", "HEAD")
    trees = [_git(root, "rev-parse", f"HEAD:{p}") or "-" for p in ("gpulint", "rules", "pyproject.toml")]
    dirty = _git(root, "diff", "HEAD", "--", "gpulint", "rules", "pyproject.toml")
    stamp = "/".join(t[:12] for t in trees)
    if dirty:
        import hashlib

        stamp += "+dirty-" + hashlib.sha1(dirty.encode()).hexdigest()[:12]
    return head, stamp


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST, help="repositories and pinned commits (default tests/realworld/repos.yaml)")
    ap.add_argument("--labels", type=Path, default=DEFAULT_LABELS, help="judged findings (default tests/realworld/labels.yaml)")
    ap.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR, help="folder of bare snapshots <owner>+<name>/repo (default /work/.mirror)")
    ap.add_argument("--work", type=Path, default=DEFAULT_WORK, help="where pinned commits are extracted (outside this repository; "
                    "default $GPULINT_REALWORLD_WORK or ~/.cache/gpulint-realworld)")
    ap.add_argument("--gpulint", help="command that runs gpulint (default: the installed gpulint)")
    ap.add_argument("--repos", help="only these repositories (owner/name, comma separated)")
    ap.add_argument("--jobs", type=int, default=1, help="passed to gpulint scan --jobs")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per gpulint run")
    ap.add_argument("--json", action="store_true", help="print the run as JSON instead of text")
    ap.add_argument("-o", "--output", type=Path, help="also write the run's JSON here (for --compare and --load)")
    ap.add_argument("--load", type=Path, help="recount a saved run (for example with new labels) instead of scanning")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"), help="diff two saved runs per code")
    ap.add_argument("--reuse-raw", action="store_true", help="reuse the raw gpulint outputs kept in the work folder when they "
                    "come from the same gpulint commit and snapshot commit (to recount after changing this script)")
    ap.add_argument("--extract-only", action="store_true", help="extract the pinned commits and stop (prints each tree's folder)")
    ap.add_argument("--totals-only", action="store_true", help="text: the totals, not each repository")
    ap.add_argument("-v", "--verbose", action="store_true", help="text: examples, stderr, unmatched labels, every appeared/vanished finding")
    args = ap.parse_args(argv)

    if args.compare:
        old, new = (json.loads(p.read_text()) for p in args.compare)
        old, new = (relabel(r, load_labels(args.labels), str(args.labels)) for r in (old, new))
        diff = compare(old, new)
        sys.stdout.write(json.dumps(diff, indent=1) + "\n" if args.json else render_compare(diff, args.verbose))
        return 0

    labels = load_labels(args.labels)
    if args.load:
        record = relabel(json.loads(args.load.read_text()), labels, str(args.labels))
    else:
        if _inside(args.work, PROJECT):
            ap.error(f"--work {args.work} is inside the repository; extract snapshots elsewhere")
        repos = load_manifest(args.manifest)
        if args.repos:
            wanted = {r.strip() for r in args.repos.split(",") if r.strip()}
            unknown = wanted - {r.repo for r in repos}
            if unknown:
                ap.error(f"not in {args.manifest}: {', '.join(sorted(unknown))}")
            repos = [r for r in repos if r.repo in wanted]
        cmd = gpulint_command(args.gpulint)
        if not args.extract_only and subprocess.run(cmd + ["--version"], capture_output=True).returncode != 0:
            ap.error(f"cannot run gpulint as {' '.join(cmd)!r}; install it or pass --gpulint CMD")
        started = time.strftime("%Y-%m-%dT%H:%M:%S")
        version = gpulint_version(cmd)
        src = gpulint_source(cmd)
        gcommit, code_stamp = gpulint_identity(src) if src else (None, None)
        stamp = f"{version} {code_stamp}" if code_stamp else None
        results = []
        for repo in repos:
            gd = git_dir(args.mirror, repo)
            if gd is None:
                print(f"skip {repo.repo}: no snapshot at {args.mirror / repo.slug / 'repo'} (fetch it first)", file=sys.stderr)
                continue
            full = resolve_commit(gd, repo.commit)
            if full is None:
                print(f"skip {repo.repo}: the snapshot lacks commit {repo.commit}", file=sys.stderr)
                continue
            repo.commit = full
            print(f"{repo.repo} @ {full[:12]}: extracting", file=sys.stderr, flush=True)
            tree, ext = ensure_extracted(gd, repo, args.work)
            if args.extract_only:
                print(f"{tree}\t{ext['written']} files, {ext['missing']} blobs absent")
                continue
            print(f"{repo.repo}: scanning ({ext['written']} files, {ext['missing']} blobs absent)", file=sys.stderr, flush=True)
            res = scan_repo(repo, tree, cmd, args.jobs, args.timeout, args.work / "raw", stamp, args.reuse_raw)
            res["extract"] = ext
            for f in res["findings"]:
                f["path"] = _relative(f["path"], tree)
            results.append(res)
        if args.extract_only:
            return 0
        meta = {"started": started, "gpulint_command": " ".join(cmd), "gpulint_version": version,
                "gpulint_commit": gcommit, "gpulint_source": str(src) if src else None, "gpulint_code": code_stamp,
                "manifest": str(args.manifest), "labels_file": str(args.labels), "jobs": args.jobs}
        record = build_record(results, labels, meta)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(record, indent=1) + "\n")
    sys.stdout.write(json.dumps(record, indent=1) + "\n" if args.json else render_text(record, not args.totals_only, args.verbose))
    return 0


def _relative(path: str, tree: Path) -> str:
    """Finding paths relative to the snapshot's root (gpulint reports them relative to the scanned root already)."""
    p = path.replace("\\", "/")
    root = str(tree).rstrip("/") + "/"
    return p[len(root):] if p.startswith(root) else p


if __name__ == "__main__":
    sys.exit(main())
