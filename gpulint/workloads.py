"""Joining the facts of many files into workloads: the only place that looks
across files.

A workload is one training (or serving) entrypoint with what launches it, the
configs it reads and the compute it runs on. Links are made, in order:

1. explicitly: a launcher names the script (shell/Slurm/Makefile/Dockerfile
   lines, Kubernetes containers, SkyPilot ``run:``, SageMaker ``entry_point``);
   configs named by a launcher (``--config_file``, ``--deepspeed``) or by the
   code (``TrainingArguments(deepspeed="ds.json")``); compute that holds the
   launcher (the Kubernetes job, the SkyPilot task, the estimator, #SBATCH);
2. by the ``workloads`` table of the configuration;
3. by unambiguous repo-level pairing: one accelerate config in the repo, one
   GPU compute target left and one workload without compute.

Every link records why it was made; what stays unknown is listed.
"""
from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Iterable

from gpulint.model import Fact, Location

CODE_KINDS = ("python", "notebook")

# Instance families that carry accelerators; anything else (m5.xlarge, n2-standard-8,
# Standard_D8s_v5) is CPU compute and never a GPU workload's target.
_GPU_FAMILIES = re.compile(
    r"^(ml\.)?(p\d+[a-z]*|g\d+[a-z]*|trn\d+[a-z]*|inf\d+[a-z]*|dl\d+[a-z]*)\.|"  # AWS / SageMaker
    r"^(a2|a3|a4|g2|g4|ct\d)-|^n1\+|"  # GCP (n1 with a GPU is spelled n1+... in the catalogue)
    r"^(standard_)?n[cdvg]\d*[a-z]*",  # Azure N-series
    re.IGNORECASE,
)


def looks_like_gpu_instance(name: str) -> bool:
    return bool(_GPU_FAMILIES.match(name.strip()))


@dataclass
class Compute:
    """One compute target (a Terraform resource, a Kubernetes job, a SkyPilot task ...)."""

    id: str  # "path#target"
    path: str
    target: str
    facts: list[Fact] = field(default_factory=list)
    joined: list["Compute"] = field(default_factory=list)  # launch templates an autoscaling group starts

    @property
    def all_facts(self) -> list[Fact]:
        return self.facts + [f for j in self.joined for f in j.facts]

    def first(self, kind: str) -> Fact | None:
        for f in self.facts:
            if f.kind == kind:
                return f
        return None

    def value(self, kind: str, default: Any = None) -> Any:
        f = self.first(kind)
        return f.value if f is not None else default

    def role(self) -> str | None:
        return (self.value("compute.target") or {}).get("role")

    @property
    def loc(self) -> Location:
        f = self.first("compute.target")
        return f.loc if f else self.facts[0].loc

    def has_gpu_hint(self) -> bool:
        for f in self.facts:
            if f.kind == "compute.instance_type" and isinstance(f.value, str) and looks_like_gpu_instance(f.value):
                return True
            if f.kind == "compute.instance_type" and isinstance(f.value, dict) and "ref" in f.value:
                return True  # decided later from the module's variables
            if f.kind in ("compute.accelerator", "compute.gpus_per_node") and f.value:
                return True
        return False


@dataclass
class Workload:
    name: str
    entrypoint: str
    code_files: list[str] = field(default_factory=list)
    launchers: list[Fact] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)
    compute: Compute | None = None
    facts: list[Fact] = field(default_factory=list)  # code + linked config facts
    env: list[Fact] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    overrides: dict = field(default_factory=dict)  # from the config's workloads table
    resolved: dict = field(default_factory=dict)  # filled by gpulint.resolve (instance, price, model size ...)

    def of(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind]

    def has(self, kind: str) -> bool:
        return any(f.kind == kind for f in self.facts)

    def code_facts(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind and f.loc.path in self.code_files]

    @property
    def trains(self) -> bool:
        return self.has("trains")


@dataclass
class Repo:
    """Facts of every scanned file, by path, plus what each file is."""

    facts: dict[str, list[Fact]]
    kinds: dict[str, str]

    def files_of_kind(self, *kinds: str) -> list[str]:
        return sorted(p for p, k in self.kinds.items() if k in kinds)

    def all(self, kind: str) -> Iterable[Fact]:
        for path in sorted(self.facts):
            for f in self.facts[path]:
                if f.kind == kind:
                    yield f


def _module_to_paths(module: str, base_dir: str) -> list[str]:
    rel = module.replace(".", "/")
    cands = [f"{rel}.py", f"{rel}/__main__.py", f"{rel}/__init__.py"]
    return [posixpath.normpath(posixpath.join(base_dir, c)) for c in cands]


def _resolve_script(script: str | None, launcher_path: str, repo: Repo, module: str | None = None) -> str | None:
    if module:
        for base in (posixpath.dirname(launcher_path), ""):
            for cand in _module_to_paths(module, base):
                if cand in repo.kinds:
                    return cand
        return None
    if not script or "$" in script or "{" in script:
        return None
    s = _strip_container(script)
    here = posixpath.dirname(launcher_path)
    candidates = [posixpath.normpath(posixpath.join(here, s)), posixpath.normpath(s)]
    if s.startswith("/"):
        candidates = [s.lstrip("/")]
    for c in candidates:
        if c in repo.kinds and repo.kinds[c] in CODE_KINDS:
            return c
    # a container path such as /workspace/project/train.py: match the unique file ending like it
    tail = posixpath.basename(s)
    matches = [p for p in repo.files_of_kind(*CODE_KINDS) if p == s or p.endswith("/" + s) or (s.count("/") >= 1 and p.endswith("/" + "/".join(s.split("/")[-2:])))]
    if len(matches) == 1:
        return matches[0]
    same_name = [p for p in repo.files_of_kind(*CODE_KINDS) if posixpath.basename(p) == tail]
    if len(same_name) == 1 and "/" in s:
        return same_name[0]
    return None


_CONTAINER_PREFIXES = ("./", "/workspace/", "/app/", "/opt/ml/code/", "/opt/ml/input/config/", "/code/", "/src/")


def _strip_container(path: str) -> str:
    for prefix in _CONTAINER_PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


def _resolve_config(path: str | None, near: str, repo: Repo) -> str | None:
    if not isinstance(path, str) or "$" in path:
        return None
    path = _strip_container(path)
    for c in (posixpath.normpath(posixpath.join(posixpath.dirname(near), path)), posixpath.normpath(path.lstrip("./")) if path.startswith("./") else posixpath.normpath(path)):
        if c in repo.kinds:
            return c
    tail = "/".join(path.split("/")[-2:])
    matches = [p for p in repo.kinds if p.endswith(tail) and repo.kinds[p] in ("json", "yaml")]
    return matches[0] if len(matches) == 1 else None


def _local_modules(path: str, repo: Repo) -> list[str]:
    """Repository files a code file imports (absolute imports from the repo root
    or the file's folder, and relative imports)."""
    out = []
    here = posixpath.dirname(path)
    for f in repo.facts.get(path, []):
        if f.kind != "import":
            continue
        mod = f.value
        level = f.attrs.get("relative", 0) if f.attrs else 0
        if level:
            base = here
            for _ in range(level - 1):
                base = posixpath.dirname(base)
            mod = mod.lstrip(".")
            bases = [base]
        else:
            # the file's folder and each ancestor up to the root (src/ layouts, scripts/ next to a package)
            bases, b = [], here
            while True:
                bases.append(b)
                if not b:
                    break
                b = posixpath.dirname(b)
        if not mod:
            continue
        for b in bases:
            for cand in _module_to_paths(mod, b):
                if cand in repo.kinds and cand != path:
                    out.append(cand)
                    break
    return sorted(set(out))


def _closure(entry: str, repo: Repo, limit: int = 50) -> list[str]:
    seen = [entry]
    todo = [entry]
    while todo and len(seen) < limit:
        cur = todo.pop()
        for m in _local_modules(cur, repo):
            if m not in seen:
                seen.append(m)
                todo.append(m)
    return seen


def compute_targets(repo: Repo) -> dict[str, Compute]:
    out: dict[str, Compute] = {}
    for path in sorted(repo.facts):
        for f in repo.facts[path]:
            if f.target and (f.kind.startswith("compute.") or f.kind in ("env", "launch", "storage.mount")):
                cid = f"{path}#{f.target}"
                out.setdefault(cid, Compute(cid, path, f.target)).facts.append(f)
    computes = {cid: c for cid, c in out.items() if c.first("compute.target") is not None}
    for c in computes.values():
        c.joined = [computes[t] for t in _template_ids(c, computes) if t != c.id]
    return computes


def link(repo: Repo, table: list[dict] | None = None) -> list[Workload]:
    """Build workloads from the facts of every file."""
    computes = compute_targets(repo)
    # 1. entrypoints: code that trains, and code a launcher starts
    entry_facts: dict[str, list[Fact]] = defaultdict(list)
    for path in repo.files_of_kind(*CODE_KINDS):
        if any(f.kind == "trains" for f in repo.facts.get(path, [])):
            entry_facts[path]
    launches: dict[str, list[tuple[Fact, str]]] = defaultdict(list)
    for path in sorted(repo.facts):
        for f in repo.facts[path]:
            if f.kind != "launch" or not isinstance(f.value, dict):
                continue
            script = _resolve_script(f.value.get("script"), path, repo, f.value.get("module"))
            if script:
                launches[script].append((f, path))
                entry_facts[script]
    # a module only imported by another entrypoint is part of it, not a workload of its own
    imported_by_other = set()
    for entry in list(entry_facts):
        for m in _closure(entry, repo)[1:]:
            imported_by_other.add(m)
    workloads: dict[str, Workload] = {}
    for entry in sorted(entry_facts):
        if entry in imported_by_other and entry not in launches:
            continue
        code = _closure(entry, repo)
        wl = Workload(name=entry, entrypoint=entry, code_files=code)
        for p in code:
            wl.facts += [f for f in repo.facts.get(p, []) if not f.target and f.kind not in ("import",)]
        if len(code) > 1:
            wl.reasons.append(f"code: {entry} imports {', '.join(code[1:])}")
        for fact, lpath in launches.get(entry, []):
            wl.launchers.append(fact)
            wl.reasons.append(f"launcher: {fact.loc.short()} runs {entry}")
            _attach_launcher(wl, fact, lpath, repo, computes)
        workloads[entry] = wl
    # configs named by code
    for wl in workloads.values():
        for f in list(wl.facts):
            if f.kind == "config_ref":
                _attach_config(wl, _resolve_config(f.value.get("path"), f.loc.path, repo), repo, f"code: {f.loc.short()} names it")
        for f in wl.launchers:
            for arg in f.value.get("args") or []:
                if not isinstance(arg, str):
                    continue
                value = arg.split("=", 1)[1] if arg.startswith("-") and "=" in arg else arg
                if value.endswith((".json", ".yaml", ".yml")) and not value.startswith("-"):
                    _attach_config(wl, _resolve_config(value, f.loc.path, repo), repo, f"launcher: {f.loc.short()} passes it")
    # 2. the configuration's workloads table
    for row in table or []:
        entry = row.get("entrypoint")
        wl = workloads.get(entry)
        if wl is None and entry in repo.kinds:
            wl = workloads[entry] = Workload(name=entry, entrypoint=entry, code_files=_closure(entry, repo))
            for p in wl.code_files:
                wl.facts += [f for f in repo.facts.get(p, []) if not f.target and f.kind != "import"]
        if wl is None:
            continue
        wl.overrides = dict(row)
        if row.get("name"):
            wl.name = row["name"]
        cid = row.get("compute")
        if cid and cid in computes:
            wl.compute = computes[cid]
            wl.reasons.append(f"config: workloads table pins compute {cid}")
    # 3. unambiguous repo-level pairing
    accel = [p for p in sorted(repo.facts) if any(f.kind == "config.accelerate" for f in repo.facts[p])]
    for wl in workloads.values():
        uses_accel = any(f.kind == "precision" and f.value.get("mechanism") == "accelerate" for f in wl.facts) or any(
            (l.value.get("tool") == "accelerate") for l in wl.launchers)
        if uses_accel and not any(c for c in wl.configs if c in accel):
            explicit = [l for l in wl.launchers if l.value.get("config_file")]
            if not explicit and len(accel) == 1:
                _attach_config(wl, accel[0], repo, f"repo: {accel[0]} is the only accelerate config")
    claimed = {wl.compute.id for wl in workloads.values() if wl.compute}
    # a launch template started by an autoscaling group is that group's compute, not a target of its own
    templates = _templates_in_use(computes)
    free_compute = [c for cid, c in computes.items()
                    if cid not in claimed and cid not in templates and _is_standalone(c) and c.role() not in ("serving", "notebook")
                    and (c.has_gpu_hint() or any(j.has_gpu_hint() for j in c.joined))]
    no_compute = [wl for wl in workloads.values() if wl.compute is None and wl.trains]
    if len(free_compute) == 1 and len(no_compute) == 1:
        wl = no_compute[0]
        wl.compute = free_compute[0]
        wl.reasons.append(f"repo: {free_compute[0].id} is the only GPU compute target and {wl.entrypoint} the only training workload without one")
    elif free_compute and no_compute:
        for wl in no_compute:
            wl.unknown.append(
                f"compute: ambiguous: {len(free_compute)} GPU compute targets ({', '.join(c.id for c in free_compute[:4])}) and "
                f"{len(no_compute)} training workloads without one. Pin it in pyproject.toml:\n"
                f"    [[tool.gpulint.workloads]]\n    entrypoint = \"{wl.entrypoint}\"\n    compute = \"<one of the targets above>\""
            )
    for wl in workloads.values():
        if wl.compute is None and not any("compute: ambiguous" in u for u in wl.unknown):
            wl.unknown.append("compute: no launcher, infrastructure file or config names the instance this runs on")
        if not wl.launchers:
            wl.unknown.append("launcher: nothing in the repository starts this script")
    return [workloads[k] for k in sorted(workloads)]


def _template_ids(c: Compute, computes: dict[str, Compute]) -> list[str]:
    out = []
    for f in c.facts:
        lt = (f.attrs or {}).get("launch_template")
        if isinstance(lt, str):
            cid = f"{c.path}#{lt}"
            if cid not in computes:  # another file of the same module
                folder = posixpath.dirname(c.path)
                cid = next((k for k, v in computes.items() if v.target == lt and posixpath.dirname(v.path) == folder), "")
            if cid:
                out.append(cid)
    return out


def _templates_in_use(computes: dict[str, Compute]) -> set[str]:
    return {t for c in computes.values() for t in _template_ids(c, computes)}


def _is_standalone(c: Compute) -> bool:
    """Compute not already tied to a launcher of its own (Terraform, node pools)."""
    return not any(f.kind == "launch" for f in c.facts)


def _attach_launcher(wl: Workload, fact: Fact, lpath: str, repo: Repo, computes: dict[str, Compute]) -> None:
    v = fact.value
    if fact.target:
        cid = f"{lpath}#{fact.target}"
        if cid in computes and wl.compute is None:
            wl.compute = computes[cid]
            wl.reasons.append(f"compute: {cid} holds the launcher")
    else:
        slurm = [c for cid, c in computes.items() if c.path == lpath]
        if len(slurm) == 1 and wl.compute is None:
            wl.compute = slurm[0]
            wl.reasons.append(f"compute: {slurm[0].id} (#SBATCH) runs the launcher")
    # environment set in the launcher's file (or its container / task)
    for f in repo.facts.get(lpath, []):
        if f.kind == "env" and (not f.target or f.target == fact.target):
            wl.env.append(f)
    for key in ("config_file", "deepspeed_config"):
        cfg = v.get(key)
        if cfg:
            _attach_config(wl, _resolve_config(cfg, lpath, repo), repo, f"launcher: {fact.loc.short()} passes {key} {cfg}")


def _attach_config(wl: Workload, path: str | None, repo: Repo, reason: str) -> None:
    if not path or path in wl.configs:
        return
    wl.configs.append(path)
    wl.reasons.append(f"config: {path} ({reason})")
    wl.facts += [f for f in repo.facts.get(path, []) if not f.target]
    # a config that names another (accelerate -> deepspeed json)
    for f in repo.facts.get(path, []):
        if f.kind == "config_ref":
            _attach_config(wl, _resolve_config(f.value.get("path"), path, repo), repo, f"named by {path}")
