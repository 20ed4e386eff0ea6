"""Joining the facts of many files into workloads: the only place that looks
across files.

A workload is one entrypoint (a training or serving script, or a serving
target with no script of its own) with what launches it, the configs it reads
and the compute it runs on. Links are made, in order:

1. explicitly: a launcher names the script (shell/Slurm/Makefile/Dockerfile
   lines, Kubernetes containers, SkyPilot ``run:``, SageMaker ``entry_point``,
   Terraform ``user_data``, DVC stages), directly or through the launcher files
   it runs (``bash scripts/train.sh``, ``dvc repro``): a compute that holds the
   outer launcher holds the inner ones; configs named by a launcher
   (``--config_file``, ``--deepspeed``) or by the code
   (``TrainingArguments(deepspeed="ds.json")``, ``@hydra.main(config_path=..., config_name=...)`` with
   its defaults list, gpulint.link.hydra);
2. by the ``workloads`` table of the configuration;
3. by unambiguous repo-level pairing: one accelerate config in the repo, one
   GPU compute target left and one workload without compute (preferring the
   one script a launcher starts). When that cannot be decided the ambiguity is
   recorded (SYS005 reports it) rather than dropped.

An entrypoint launched on the compute of two different jobs (two estimators,
two PyTorchJobs) is two workloads, each on its own compute. Test and vendored
code is context (its facts and imports are read) but never a workload of its
own (``gpulint.link.scope``). Every link records why it was made; what stays
unknown is listed.
"""
from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Iterable

from gpulint.core.families import looks_like_gpu_instance
from gpulint.core.model import Fact, Location
from gpulint.link import byname, hydra
from gpulint.link.placement import place
from gpulint.read import packaged

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.resolve.results import WorkloadResolution
    from gpulint.link.scope import Scope

CODE_KINDS = ("python", "notebook")
__all__ = ["CODE_KINDS", "Ambiguity", "Compute", "Linked", "Repo", "Unjoined", "Workload", "compute_targets", "link",
           "looks_like_gpu_instance"]
#: launcher files followed through a chain of launches at most this deep
_MAX_CHAIN = 6


@dataclass
class Compute:
    """One compute target (a Terraform resource, a Kubernetes job, a SkyPilot task ...): its facts."""

    id: str  # "path#target"
    path: str
    target: str
    facts: list[Fact] = field(default_factory=list)
    joined: list["Compute"] = field(default_factory=list)  # launch templates an autoscaling group starts
    #: the cluster capacity a job runs on (gpulint.link.placement): a Slurm queue, a node group ...
    placed_on: "Compute | None" = None
    placement: str | None = None  # why it was placed there
    placement_unknown: str | None = None  # why it could not be placed (candidates that differ)

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
    def job(self) -> tuple[str, str]:
        """Targets of one job share this key: a PyTorchJob's Master and Worker, an MPIJob's Launcher and Worker."""
        resource = (self.value("compute.target") or {}).get("resource")
        return (self.path, str(resource or self.target))

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
            if f.kind in ("compute.accelerator", "compute.gpus_per_node") and (f.value or (f.attrs or {}).get("all")):
                return True  # ("all": a Compose service that reserves every GPU of its host)
            if f.kind == "compute.gpu_only":
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
    job_computes: list[Compute] = field(default_factory=list)  # other targets of the same job
    #: False for a job whose script is not a file of the repository (in its image, fetched at run time): rules that
    #: read training code skip it (gpulint.rule.Rule.reads_code)
    code_known: bool = True
    #: why the launcher alone says it trains (``torchrun ... pretrain_gpt.py --train-iters``), for such a job
    launch_training: str | None = None
    #: set by gpulint.resolve.resolver before any rule runs
    resolution: "WorkloadResolution | None" = None

    def of(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind]

    def has(self, kind: str) -> bool:
        return any(f.kind == kind for f in self.facts)

    def code_facts(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind and f.loc.path in self.code_files]

    def device_facts(self, kind: str) -> list[Fact]:
        """Facts of the code and of the configs it runs with: a trainer config's ``accelerator`` / ``devices``
        say what the run uses as a Trainer call's arguments would (``Trainer(**cfg.trainer)``)."""
        return [f for f in self.facts if f.kind == kind and (f.loc.path in self.code_files or f.loc.path in self.configs)]

    @property
    def trains(self) -> bool:
        return self.has("trains") or bool(self.launch_training)

    @property
    def role(self) -> str:
        if self.resolution is not None:
            return self.resolution.role
        return "training" if self.code_facts("trains") else "batch"


@dataclass(frozen=True)
class Ambiguity:
    """A pairing the linker could not decide: ``subject`` (a compute target or a workload) and its candidates."""

    loc: Location
    subject: str
    candidates: tuple[str, ...]
    workloads: tuple[str, ...]  # the workloads left without compute because of it


@dataclass(frozen=True)
class Unjoined:
    """A launch that names a script of the repository (by file name, or through a variable) and is joined to none:
    where it is, the command, and why (what `gpulint workloads` lists under "launchers not joined")."""

    loc: Location
    command: str
    why: str


@dataclass
class Linked:
    workloads: list[Workload]
    computes: dict[str, Compute]
    ambiguities: list[Ambiguity] = field(default_factory=list)
    unjoined: list[Unjoined] = field(default_factory=list)
    #: launches that name a script of the repository, and how many of them are joined to it
    launches_named: int = 0
    launches_joined: int = 0

    def __iter__(self):  # `for wl in link(repo)` reads the workloads
        return iter(self.workloads)

    def __len__(self) -> int:
        return len(self.workloads)


@dataclass
class Repo:
    """Facts of every scanned file, by path, plus what each file is."""

    facts: dict[str, list[Fact]]
    kinds: dict[str, str]
    #: content digest of each code file (byte-identical copies share one)
    digests: dict[str, str] = field(default_factory=dict)
    #: repository files each code file imports, computed once per file (import closures overlap heavily)
    imports: dict[str, list[str]] = field(default_factory=dict, init=False, repr=False, compare=False)
    _heads: set[str] | None = field(default=None, init=False, repr=False, compare=False)
    #: kind -> path -> that file's facts of the kind, built on first use (see `of_kind`)
    _by_kind: dict[str, dict[str, list[Fact]]] | None = field(default=None, init=False, repr=False, compare=False)
    _by_name: dict[str, list[str]] | None = field(default=None, init=False, repr=False, compare=False)
    _dockerfiles: dict[str, list[str]] | None = field(default=None, init=False, repr=False, compare=False)

    def files_of_kind(self, *kinds: str) -> list[str]:
        return sorted(p for p, k in self.kinds.items() if k in kinds)

    def has_module_head(self, path: str) -> bool:
        """Could an import resolve at `path` (``pkg`` of ``pkg.mod`` under some folder)? A folder or a
        ``.py`` file of that name exists: most imports (torch, transformers) are rejected by one lookup."""
        if self._heads is None:
            heads: set[str] = set()
            for p in self.kinds:
                stem = p[:-3] if p.endswith(".py") else None
                if stem is not None:
                    heads.add(stem)
                d = posixpath.dirname(p)
                while d and d not in heads:
                    heads.add(d)
                    d = posixpath.dirname(d)
            self._heads = heads
        return path in self._heads

    def named(self, name: str) -> list[str]:
        """Code files whose file name is ``name``, indexed once per scan (a launch names its script by name)."""
        if self._by_name is None:
            by_name: dict[str, list[str]] = {}
            for p in self.files_of_kind(*CODE_KINDS):
                by_name.setdefault(posixpath.basename(p), []).append(p)
            self._by_name = by_name
        return self._by_name.get(name, [])

    def dockerfiles_by_folder(self) -> dict[str, list[str]]:
        """Dockerfiles by the folder that holds them (their assumed build context)."""
        if self._dockerfiles is None:
            out: dict[str, list[str]] = {}
            for p, k in sorted(self.kinds.items()):
                if k == "dockerfile":
                    out.setdefault(posixpath.dirname(p), []).append(p)
            self._dockerfiles = out
        return self._dockerfiles

    def all(self, kind: str) -> Iterable[Fact]:
        by_path = self._index().get(kind, {})
        for path in sorted(by_path):
            yield from by_path[path]

    def of_kind(self, path: str, kind: str) -> list[Fact]:
        """One file's facts of one kind. Indexed once per scan: a Terraform file of thousands of resources is
        asked once per job it holds, and scanning all its facts each time made linking quadratic."""
        return self._index().get(kind, {}).get(path, [])

    def set_facts(self, path: str, facts: list[Fact]) -> None:
        self.facts[path] = facts
        self._by_kind = None

    def _index(self) -> dict[str, dict[str, list[Fact]]]:
        if self._by_kind is None:
            index: dict[str, dict[str, list[Fact]]] = {}
            for path, facts in self.facts.items():
                for f in facts:
                    index.setdefault(f.kind, {}).setdefault(path, []).append(f)
            self._by_kind = index
        return self._by_kind


def _module_to_paths(module: str, base_dir: str) -> list[str]:
    rel = module.replace(".", "/")
    cands = [f"{rel}.py", f"{rel}/__main__.py", f"{rel}/__init__.py"]
    return [posixpath.normpath(posixpath.join(base_dir, c)) for c in cands]


def _cwd_bases(cwd: dict | None, launcher_path: str) -> list[str]:
    """Folders a launch runs in after a `cd` the shell reader followed (attrs.cwd): the launcher's folder joined
    with it, and for a folder relative to the caller's working folder also the repository root joined with it."""
    if not isinstance(cwd, dict) or not isinstance(cwd.get("path"), str):
        return []
    here = posixpath.dirname(launcher_path)
    rel = cwd["path"]
    bases = [posixpath.normpath(posixpath.join(here, rel))]
    if cwd.get("relative_to") != "launcher":
        bases.append(posixpath.normpath(rel))
    return [b if b != "." else "" for b in bases if not b.startswith("..")]


def _import_roots(cwd: dict | None, launcher_path: str) -> list[str]:
    """Where ``python -m pkg.mod`` finds its module: the folder a `cd` leads to, the launcher's folder, the root,
    or a src/ layout's package root."""
    return _cwd_bases(cwd, launcher_path) + [posixpath.dirname(launcher_path), "", "src"]


def _resolve_script(script: str | None, launcher_path: str, repo: Repo, module: str | None = None,
                    cwd: dict | None = None) -> str | None:
    first = _cwd_bases(cwd, launcher_path)
    if module:
        for base in _import_roots(cwd, launcher_path):
            for cand in _module_to_paths(module, base):
                if cand in repo.kinds:
                    return cand
        return None
    if not script or "$" in script or "{" in script:
        return None
    s = _strip_container(script)
    here = posixpath.dirname(launcher_path)
    candidates = [posixpath.normpath(posixpath.join(b, s)) for b in first] + \
        [posixpath.normpath(posixpath.join(here, s)), posixpath.normpath(s)]
    if s.startswith("/"):
        candidates = [s.lstrip("/")]
    for c in candidates:
        if c in repo.kinds and repo.kinds[c] in CODE_KINDS:
            return c
    # a container path such as /workspace/project/train.py: match the unique file ending like it
    tail = posixpath.basename(s)
    last_two = "/".join(s.split("/")[-2:])
    matches = [p for p in repo.files_of_kind(*CODE_KINDS)
               if p == s or p.endswith("/" + s) or (s.count("/") >= 1 and (p == last_two or p.endswith("/" + last_two)))]
    if matches:
        if len(matches) == 1:
            return matches[0]
        if "/" in s:
            return _nearest(matches, launcher_path)  # a path with folders: its copy in the launcher's own tree
        # a bare name (train.py) names many files: only the one beside the launcher or in its parent folder (a
        # scripts/ or bash_script/ folder next to the code), never some namesake deeper in the tree
        here = posixpath.dirname(launcher_path)
        close = [p for p in matches if posixpath.dirname(p) in (here, posixpath.dirname(here))]
        if len(close) == 1:
            return close[0]
        # or the one copy under the launcher's folder that a Dockerfile beside it builds into an image (a job that runs
        # `python imagenet.py` in the image container-imagenet/Dockerfile COPYs it into, a namesake elsewhere)
        imaged = [p for p in matches if p.startswith(here + "/" if here else "") and _in_image(p, repo)]
        return imaged[0] if not close and len(imaged) == 1 else None
    same_name = [p for p in repo.files_of_kind(*CODE_KINDS) if posixpath.basename(p) == tail]
    if len(same_name) > 1:
        same_name = [p for p in [_nearest(same_name, launcher_path)] if p]
    # a bare file-name match only for a path relative to the launcher, or for a file beside the launcher (the
    # source_dir SageMaker uploads with its script.sh): an absolute container path whose folders match nothing
    # here is otherwise a file of the image (kubeflow/...-example:latest), not the repository's namesake
    if len(same_name) == 1 and "/" in s and (not script.startswith("/") or _beside(same_name[0], launcher_path)):
        return same_name[0]
    return None


def _in_image(path: str, repo: Repo) -> bool:
    """Does a Dockerfile in the script's folder COPY or ADD it (by its name, or the whole folder) into its image?"""
    folder, name = posixpath.split(path)
    for df, kind in repo.kinds.items():
        if kind != "dockerfile" or posixpath.dirname(df) != folder:
            continue
        for f in repo.facts.get(df, []):
            if f.kind == "image.copy" and posixpath.normpath(str(f.value.get("src"))) in (name, "."):
                return True
    return False


def _nearest(paths: list[str], launcher_path: str) -> str | None:
    """The one of several same-named scripts that sits under the launcher's nearest folder holding any of them
    (``internvl_chat/shell/run.sh`` runs ``internvl/train/finetune.py`` from ``internvl_chat/``, not the copy under
    ``internvl_chat_gpt_oss/``); None when that folder holds more than one, or only the root holds them."""
    near = byname.nearest_under(paths, launcher_path)
    return near[1][0] if near is not None and len(near[1]) == 1 else None


def _beside(path: str, launcher_path: str) -> bool:
    """Is `path` in the launcher's own folder or below it (a SageMaker source_dir uploaded with its script.sh)?"""
    here = posixpath.dirname(launcher_path)
    return not here or path.startswith(here + "/")


_CONTAINER_PREFIXES = ("./", "/workspace/", "/app/", "/opt/ml/code/", "/opt/ml/input/config/", "/code/", "/src/")


def _strip_container(path: str) -> str:
    for prefix in _CONTAINER_PREFIXES:
        if path.startswith(prefix):
            return path[len(prefix):]
    return path


#: a path written as a placeholder for the reader's own (``/path/to/textvqa/train.json``, ``<data-dir>/x.yaml``,
#: ``YOUR_BUCKET/conf.json``): whatever file of the repository it ends like, it is not that file
_PLACEHOLDER_PATH = re.compile(r"(?:^|/)path/to/|<[^<>/]+>|(?:^|/)your[_-]", re.I)
#: flags whose value is data the script reads (a dataset, annotations, a vocabulary), not a configuration of the run
_DATA_FLAG = re.compile(r"data|annotation|question|answer|caption|vocab|token|label|(?:train|valid|validation|test|eval)_file|"
                        r"meta_path|json_path|jsonl|corpus|manifest|prompt", re.I)


def _resolve_config(path: str | None, near: str, repo: Repo, entry: str | None = None) -> str | None:
    if not isinstance(path, str) or "$" in path or _PLACEHOLDER_PATH.search(path):
        return None
    path = _strip_container(path)
    for c in (posixpath.normpath(posixpath.join(posixpath.dirname(near), path)), posixpath.normpath(path.lstrip("./")) if path.startswith("./") else posixpath.normpath(path)):
        if c in repo.kinds:
            return c
    tail = "/".join(path.split("/")[-2:])
    matches = [p for p in repo.kinds if (p == tail or p.endswith("/" + tail)) and repo.kinds[p] in ("json", "yaml", "toml")]
    if "/" not in path:
        # a bare name (``--deepspeed ds_config.json``) is a file of the folder the job runs in: beside the launcher or
        # the script it starts (a SageMaker source_dir), or one folder up; not a namesake anywhere (a launcher that
        # writes its own config would link to a test's copy)
        homes = {d for f in (near, entry) if f for d in (posixpath.dirname(f), posixpath.dirname(posixpath.dirname(f)))}
        matches = [p for p in matches if posixpath.dirname(p) in homes]
    return matches[0] if len(matches) == 1 else None


def _local_modules(path: str, repo: Repo) -> list[str]:
    """Repository files a code file imports (absolute imports from the repo root
    or the file's folder, and relative imports)."""
    known = repo.imports.get(path)
    if known is None:
        known = repo.imports[path] = _find_local_modules(path, repo)
    return known


def _find_local_modules(path: str, repo: Repo) -> list[str]:
    out = []
    for f in repo.facts.get(path, []):
        if f.kind == "import":
            found = _resolve_import(f.value, f.attrs.get("relative", 0) if f.attrs else 0, path, repo)
            if found is not None:
                out.append(found)
    return sorted(set(out))


def _resolve_import(mod: str, level: int, path: str, repo: Repo) -> str | None:
    """The repository file an import of `mod` in `path` reads, or None (a package installed elsewhere)."""
    here = posixpath.dirname(path)
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
        return None
    head = mod.split(".", 1)[0]
    for b in bases:
        if not repo.has_module_head(posixpath.normpath(posixpath.join(b, head))):
            continue
        for cand in _module_to_paths(mod, b):
            if cand in repo.kinds and cand != path:
                return cand
    return None


def _invoked_training(path: str, facts: list[Fact], repo: Repo) -> str | None:
    """Why a script runs training it does not hold: it calls a function or class of a repository module
    whose training step sits in that function or class ("calls train_one_epoch, which trains at engine.py:41")."""
    for inv in (f for f in facts if f.kind == "invokes"):
        target = _resolve_import(inv.value.get("module") or "", (inv.attrs or {}).get("relative", 0), path, repo)
        if target is None:
            continue
        name = inv.value.get("name")
        for t in repo.facts.get(target, []):
            # the function or class holding the step, or one of the module's functions that leads to it (main.py calling
            # train_and_evaluate, which builds the jitted step in make_update_fn)
            if t.kind == "trains" and name and name in ((t.attrs or {}).get("function"), (t.attrs or {}).get("cls"),
                                                        *((t.attrs or {}).get("reached_from") or ())):
                return f"script: {path} calls {name} ({inv.loc.short()}), which trains at {t.loc.short()}"
    return None


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
    """Every compute target of the repository (facts grouped by file and target id)."""
    out: dict[str, Compute] = {}
    for path in sorted(repo.facts):
        for f in repo.facts[path]:
            if f.target and (f.kind.startswith("compute.") or f.kind in ("env", "launch", "storage.mount")):
                cid = f"{path}#{f.target}"
                out.setdefault(cid, Compute(cid, path, f.target)).facts.append(f)
    computes = {cid: c for cid, c in out.items() if c.first("compute.target") is not None}
    for c in computes.values():
        c.joined = [computes[t] for t in _template_ids(c, computes) if t != c.id]
    place(computes, list(repo.all("cluster.partition_map")))
    return computes


@dataclass(frozen=True)
class _Use:
    """A launch fact as it runs: from its own file, or reached through the launcher files that run it."""

    fact: Fact
    path: str  # the file the launch is written in
    holder: str | None  # the compute target that runs it (its own, or the outer launcher's)
    via: tuple[str, ...] = ()  # outer launches, outermost first ("k8s/job.yaml:14 runs scripts/train.sh")
    env_files: tuple[tuple[str, str], ...] = ()  # (file, target) whose env applies: outer launchers' too
    why: str = ""  # how the script was decided, when not written as one literal word (a default, a console script)
    others: tuple[str, ...] = ()  # what the launcher may run instead (other values of its script variable)


def _console_scripts(repo: Repo) -> dict[str, tuple[str, Fact] | None]:
    """Each console script the repository's packaging declares, with the module file it runs; None for a name
    declared twice with different modules, or whose module is no file of the repository."""
    out: dict[str, tuple[str, Fact] | None] = {}
    for f in repo.all("package.console_script"):
        name, module = f.value.get("name"), f.value.get("module")
        if not isinstance(name, str) or not isinstance(module, str):
            continue
        base = posixpath.dirname(f.loc.path)
        rel = module.replace(".", "/")
        found = next((c for b in (base, posixpath.join(base, "src")) for c in
                      (posixpath.normpath(posixpath.join(b, rel + ".py")), posixpath.normpath(posixpath.join(b, rel, "__init__.py")))
                      if repo.kinds.get(c) == "python"), None)
        if name not in out:
            out[name] = (found, f) if found else None
        elif out[name] is None or out[name][0] != found:
            out[name] = None
    return out


def _vendored_trainer(program: Any, consoles: dict) -> str | None:
    """The packaging file (``fairseq/setup.py``) when a packaged trainer's console script is declared by a copy of the
    trainer the repository vendors in a subfolder, for the trainer's own module (``fairseq-hydra-train =
    fairseq_cli.hydra_train``): the command runs that trainer, read by its documented config and flags, as an
    installed one is. The trainer's own repository (packaging at the root) keeps its code."""
    trainer = packaged.PROGRAMS.get(program) if isinstance(program, str) else None
    declared = consoles.get(program) if trainer is not None else None
    if not declared:
        return None
    decl = declared[1]
    if decl.value.get("module") != trainer.module or "/" not in decl.loc.path:
        return None
    return decl.loc.path


def _default_why(var: str) -> str:
    return f"default of ${{{var}}} (the environment may override it)"


def _resolve_use(u: _Use, repo: Repo, consoles: dict, undecided: dict[str, list[str]],
                 scope: "Scope") -> tuple[str | None, _Use]:
    """The repository file a launch runs (and the use, with why when that took more than reading one word):
    its script or module; else the one of its script candidates (``attrs.script_candidates``) that is a file,
    the default's when several are; else, for a ``program`` launch, the module of the console script the
    packaging declares. Several candidate files and no default: nothing, noted in `undecided` by file."""
    v, attrs = u.fact.value, u.fact.attrs or {}
    cwd = attrs.get("cwd")
    script = _resolve_script(v.get("script"), u.path, repo, v.get("module"), cwd)
    if script:
        over = attrs.get("overridable") or {}
        var = over.get("module" if v.get("module") else "script")
        return script, (replace(u, why=_default_why(var)) if var else u)
    assumed = _assumed_script(v.get("script"), u, repo)
    if assumed:
        return assumed[0], replace(u, why=assumed[1])
    cands = [c for c in attrs.get("script_candidates") or [] if isinstance(c, dict)]
    if cands:
        files: dict[str, dict] = {}
        for c in cands:
            found = _resolve_script(c.get("script"), u.path, repo, c.get("module"), cwd)
            if found and not scope.outside(found):
                files.setdefault(found, c)
        var = cands[0].get("var")
        said = ", ".join(f"{c.get('script') or c.get('module')} (line {c.get('line')})" for c in cands)
        open_ = f"; the environment may set ${var} instead" if attrs.get("script_candidates_open") else ""
        if len(files) == 1:
            [(found, c)] = files.items()
            why = _default_why(c["default_of"]) if c.get("default_of") else \
                f"one of the values of ${var}: {said}; the only one that is a file of the repository{open_}"
            return found, replace(u, why=why)
        defaults = [f for f, c in files.items() if c.get("default_of")]
        if len(defaults) == 1:
            found = defaults[0]
            others = tuple(f"launcher: {u.fact.loc.short()} may run {f} instead (${var} = "
                           f"{c.get('script') or c.get('module')} at line {c.get('line')})" for f, c in files.items() if f != found)
            return found, replace(u, why=_default_why(files[found]["default_of"]), others=others)
        for f in files:
            undecided.setdefault(f, []).append(
                f"launcher: {u.fact.loc.short()} runs one of {', '.join(files)} (the values of ${var}: {said}{open_}); "
                "which one is decided at run time, so it is linked to none")
        return None, u
    if v.get("tool") == "program" and isinstance(v.get("program"), str):
        declared = consoles.get(v["program"])
        if declared and not _vendored_trainer(v["program"], consoles):
            found, decl = declared
            fn = decl.value.get("function")
            return found, replace(u, why=f"console script {v['program']} declared in {decl.loc.short()} "
                                         f"({decl.value['module']}{':' + fn if fn else ''})")
    return None, u


def _assumed_script(script: Any, u: _Use, repo: Repo) -> tuple[str, str] | None:
    """The code file a launch runs by a cluster or container path (gpulint.link.byname), with the assumption."""
    if not isinstance(script, str) or not script or u.fact.value.get("module"):
        return None
    ok = lambda p: repo.kinds.get(p) in CODE_KINDS  # noqa: E731
    named = repo.named(posixpath.basename(script))
    return byname.by_path_tail(script, named) or byname.through_image(script, u.path, repo, ok) or \
        (byname.in_project(script, u.path, named) if (u.fact.attrs or {}).get("container") else None)


def _launcher_file(script: str | None, launcher_path: str, repo: Repo,
                   launches_in: dict[str, list[Fact]]) -> tuple[str | None, str]:
    """A non-code file of the repository with launches of its own that this launch runs (a shell
    script, a DVC pipeline ...), or None; and the assumption the join rests on ("" when none)."""
    if not isinstance(script, str) or not script or "$" in script or "{" in script:
        return None, ""
    s = _strip_container(script)
    here = posixpath.dirname(launcher_path)

    def other_launcher(p: str) -> bool:
        return p != launcher_path and (repo.kinds.get(p) not in CODE_KINDS or _python_launcher(p, repo))

    cands = [s.lstrip("/")] if s.startswith("/") else [posixpath.normpath(posixpath.join(here, s)), posixpath.normpath(s)]
    for c in cands:
        if c in launches_in and other_launcher(c):
            return c, ""
    matches = [p for p in launches_in if "/" in s and p.endswith("/" + "/".join(s.split("/")[-2:])) and other_launcher(p)]
    if len(matches) == 1:
        return matches[0], ""
    # `shell /fsx/<clone>/.../finetune.sh`: the launcher file the cluster path ends like
    tail = byname.by_path_tail(script, [p for p in launches_in if other_launcher(p)])
    return tail if tail else (None, "")


def _python_launcher(path: str, repo: Repo) -> bool:
    """A Python file that only starts launchers (``subprocess.run(["torchrun", ..., "train.py"])``) and trains nothing
    itself: a launch of it runs what it launches, as a shell script's does (gpulint.read.python.subprocesses)."""
    facts = repo.facts.get(path, [])
    return repo.kinds.get(path) == "python" and not any(f.kind in ("trains", "trainer_call", "serves") for f in facts)


def _holder_of(fact: Fact, path: str, computes: dict[str, Compute]) -> str | None:
    if fact.target:
        cid = f"{path}#{fact.target}"
        return cid if cid in computes else None
    in_file = [cid for cid, c in computes.items() if c.path == path]
    return in_file[0] if len(in_file) == 1 else None  # a batch script's #SBATCH allocation


def _launch_uses(repo: Repo, computes: dict[str, Compute]) -> list[_Use]:
    launches_in: dict[str, list[Fact]] = defaultdict(list)
    for path in sorted(repo.facts):
        for f in repo.facts[path]:
            if f.kind == "launch" and isinstance(f.value, dict):
                launches_in[path].append(f)
    uses: list[_Use] = []
    reached: set[str] = set()  # launcher files some outer launch runs on a compute
    # a launch template's launches run on the one group that starts it (an ASG's nodes), not on the template
    starters: dict[str, list[str]] = defaultdict(list)
    for c in computes.values():
        for j in c.joined:
            starters[j.id].append(c.id)

    def holder_of(f: Fact, path: str) -> str | None:
        h = _holder_of(f, path, computes)
        group = starters.get(h) if h else None
        return group[0] if group and len(group) == 1 else h

    def walk(use: _Use, depth: int) -> None:
        inner, assumed = _launcher_file(use.fact.value.get("script"), use.path, repo, launches_in)
        if inner is None or depth >= _MAX_CHAIN or any(inner == p for p, _ in use.env_files[1:]):
            uses.append(use)
            return
        if repo.kinds.get(inner) not in CODE_KINDS:
            uses.append(use)  # a shell script or pipeline: not code, so never an entrypoint of its own
        # (a Python launcher is not a workload: what it launches is, on this launch's compute)
        if use.holder:
            reached.add(inner)
        step = f"{use.fact.loc.short()} runs {inner}" + (f" ({assumed})" if assumed else "")
        stage = use.fact.value.get("stage")
        for g in launches_in[inner]:
            if stage and (g.attrs or {}).get("stage") not in (None, stage):
                continue  # `dvc repro train` runs that stage only
            holder = holder_of(g, inner) or use.holder
            walk(_Use(g, inner, holder, use.via + (step,), use.env_files + ((inner, g.target),)), depth + 1)

    for path, facts in launches_in.items():
        for f in facts:
            walk(_Use(f, path, holder_of(f, path), (), ((path, f.target),)), 0)
    # a launch inside a launcher file that a compute runs is not also a launch of its own without one
    seen: set[tuple] = set()
    out = []
    for u in uses:
        if u.holder is None and u.path in reached and not u.via:
            continue
        key = (u.fact.loc, u.fact.key, u.holder)
        if key in seen:
            continue
        seen.add(key)
        out.append(u)
    return out


#: folders of a repository's examples: code that uses the package the repository ships as its users would
EXAMPLE_DIRS = frozenset({"examples", "example", "demos", "demo", "tutorials", "tutorial", "samples", "sample"})
#: what a shipped package's code says about precision and devices: the library's own choices (a branch its caller
#: may or may not take, a CUDA check of its own), not an example's, which installs and imports the package as a user does
LIBRARY_EVIDENCE = frozenset({"precision", "tf32", "grad_scaler", "uses_gpu", "cpu_only", "other_accelerator"})
_PACKAGING = ("setup.py", "pyproject.toml", "setup.cfg")


def shipped_package(path: str, repo: Repo) -> str | None:
    """The folder of the package `path` belongs to when the repository ships it: the outermost folder of its
    ``__init__.py`` chain, with a setup.py, pyproject.toml or setup.cfg beside it. (A ``src/`` layout's package is
    not importable from an examples folder by the linker's import resolution, so it never reaches an example.)"""
    parts = path.split("/")
    top = None
    for i in range(len(parts) - 1, 0, -1):
        folder = "/".join(parts[:i])
        if f"{folder}/__init__.py" not in repo.kinds:
            break
        top = folder
    if top is None:
        return None
    parent = posixpath.dirname(top)
    return top if any(posixpath.join(parent, name) in repo.kinds for name in _PACKAGING) else None


def _library_of(entry: str, module: str, repo: Repo) -> str | None:
    """The shipped package `module` is in, when `entry` is an example of it (in an examples folder, outside it)."""
    if not any(d.lower() in EXAMPLE_DIRS for d in entry.split("/")[:-1]):
        return None
    package = shipped_package(module, repo)
    return package if package is not None and not entry.startswith(package + "/") else None


def _new_workload(name: str, entry: str, repo: Repo, code: list[str]) -> Workload:
    wl = Workload(name=name, entrypoint=entry, code_files=code)
    libraries: dict[str, list[str]] = {}
    for p in code:
        facts = repo.facts.get(p, [])
        # a module the entrypoint imports never runs its ``__main__`` block (a demo or self-test of the module)
        blocks = [] if p == entry else [b for f in facts if f.kind == "script" for b in f.value.get("main_lines") or ()]
        # an example judged on its own code, as a scan of its folder alone (or of the installed package) judges it
        library = _library_of(entry, p, repo) if p != entry else None
        kept = [f for f in facts if not f.target and f.kind != "import"
                and not any(lo <= f.loc.line <= hi for lo, hi in blocks)]
        if library is not None:
            dropped = sorted({f.kind for f in kept if f.kind in LIBRARY_EVIDENCE})
            kept = [f for f in kept if f.kind not in LIBRARY_EVIDENCE]
            if dropped:
                libraries.setdefault(library, []).extend(k for k in dropped if k not in libraries[library])
        wl.facts += kept
    for library, kinds in sorted(libraries.items()):
        wl.reasons.append(f"code: {library}/ is the package the repository ships; {entry} is one of its examples, so the "
                          f"package's own {', '.join(kinds)} facts are not taken as the example's")
    # the training step of an imported module sits in a function or class that neither that module nor any code of
    # the workload calls (a script importing ``evaluate`` from the module that also holds ``train``): not this
    # workload's training
    invoked = {f.value.get("name") for f in wl.facts if f.kind == "invokes"}
    # (likewise a DataLoader built in such a function: a package ``__init__`` importing every loader module)
    wl.facts = [f for f in wl.facts if not (f.kind in ("trains", "dataloader") and f.loc.path != entry
                                           and "reached_from" in (f.attrs or {}) and not invoked & set(f.attrs["reached_from"]))]
    if len(code) > 1:
        wl.reasons.append(f"code: {entry} imports {', '.join(code[1:])}")
    return wl


#: what a framework trainer's training call is, by the framework class a repository trainer subclasses
_TRAINER_VIA = {"fit": "lightning", "train": "hf_trainer"}


def _resolve_trainer_calls(repo: Repo) -> None:
    """``LLaVATrainer(...).train()`` where ``LLaVATrainer`` is a class of another repository module that subclasses
    ``transformers.Trainer``: a training call of that framework, as if the file had called it (a ``trains`` fact,
    and the framework's GPU use). Done once per scan, before workloads are built."""
    for path, facts in list(repo.facts.items()):
        calls = [f for f in facts if f.kind == "trainer_call"]
        if not calls:
            continue
        added = []
        for call in calls:
            if any(f.kind == "trains" and f.loc == call.loc for f in facts):
                continue  # resolved by an earlier pass of the scan
            target = _resolve_import(call.value["module"], 0, path, repo)
            base = next((t.value["base"] for t in repo.facts.get(target, []) if t.kind == "trainer_class"
                         and t.value.get("name") == call.value["name"]), None) if target else None
            via = _TRAINER_VIA.get(call.value["method"])
            lightning = base is not None and "lightning" in base
            if base is None and target and (call.attrs or {}).get("keras"):
                # ``model = common.get_model(...)`` then ``model.fit(...)`` in a Keras file: a model a function of the
                # repository builds, trained by Keras' fit (its GPU use is the compute's or launcher's to say, as for
                # any Keras fit)
                added.append(Fact("trains", {"via": "keras"}, call.loc, call.key, "",
                                  {**(call.attrs or {}), "built_by": f"{call.value['module']}.{call.value['name']}"}))
                continue
            if base is None or via is None or (via == "lightning") != lightning:
                continue
            added.append(Fact("trains", {"via": via}, call.loc, call.key, "", {**(call.attrs or {}), "subclass_of": base}))
            if not any(f.kind == "uses_gpu" for f in facts + added):
                added.append(Fact("uses_gpu", {"via": base, "auto": True}, call.loc, base, "", {}))
        if added:
            repo.set_facts(path, facts + added)


def link(repo: Repo, table: list[dict] | None = None, scope: "Scope | None" = None) -> Linked:
    """Build workloads from the facts of every file."""
    from gpulint.link.scope import Scope

    scope = scope or Scope()
    _resolve_trainer_calls(repo)
    computes = compute_targets(repo)
    uses = _launch_uses(repo, computes)
    # 1. entrypoints: code that trains, and code a launcher starts (test and vendored code is context only)
    entries: dict[str, list[_Use]] = {}
    for path in repo.files_of_kind(*CODE_KINDS):
        facts = repo.facts.get(path, [])
        if scope.outside(path):
            continue
        # training code that nothing runs as a script (a Trainer class of the package the repository is)
        # is library code: a workload only where a launcher starts it or a script imports it
        runs = repo.kinds.get(path) == "notebook" or any(f.kind == "script" for f in facts)
        if any(f.kind == "serves" for f in facts) or (runs and any(f.kind == "trains" for f in facts)):
            entries.setdefault(path, [])
    # a script whose training is a function or class of a repository module it calls (main.py calling
    # engine.train_one_epoch, chargpt.py running mingpt's Trainer)
    runs_training: dict[str, str] = {}
    for path in repo.files_of_kind(*CODE_KINDS):
        facts = repo.facts.get(path, [])
        if path in entries or scope.outside(path) or not any(f.kind == "script" for f in facts):
            continue
        why = _invoked_training(path, facts, repo)
        if why:
            entries.setdefault(path, [])
            runs_training[path] = why
    consoles = _console_scripts(repo)
    undecided: dict[str, list[str]] = {}  # file -> launches that run it or another file, decided at run time
    census = _JoinCensus(repo)
    for u in uses:
        if (u.fact.attrs or {}).get("fetched"):
            continue  # the launcher downloads or clones the script it runs: not the repository's file of that name
        said = sum(map(len, undecided.values()))
        script, u = _resolve_use(u, repo, consoles, undecided, scope)
        if script and not scope.outside(script) and not scope.outside(u.path):
            entries.setdefault(script, []).append(u)
        if not scope.outside(u.path):
            census.count(u, script, undecided=sum(map(len, undecided.values())) > said)
    pinned = {row.get("entrypoint") for row in table or []}
    copies = _stray_copies(entries, repo, pinned)
    for path in copies:
        del entries[path]
    # a module only imported by another entrypoint is part of it, not a workload of its own
    imported_by_other = {m for entry in entries for m in _closure(entry, repo)[1:]}
    workloads: dict[str, Workload] = {}
    for entry in sorted(entries):
        if entry in imported_by_other and not entries[entry] and entry not in pinned:
            continue
        code = _closure(entry, repo)
        groups: dict[tuple, list[_Use]] = defaultdict(list)
        loose: list[_Use] = []
        for u in entries[entry]:
            if u.holder:
                groups[computes[u.holder].job].append(u)
            else:
                loose.append(u)
        if len(groups) <= 1:
            wl = _new_workload(entry, entry, repo, code)
            for u in [u for g in groups.values() for u in g] + loose:
                _attach_launcher(wl, u, repo, computes)
            workloads[wl.name] = wl
            continue
        for key in sorted(groups):  # one workload per job that runs this entrypoint
            first = computes[groups[key][0].holder]
            wl = _new_workload(f"{entry} [{key[0]}#{key[1]}]", entry, repo, code)
            wl.reasons.append(f"job: {entry} runs on {len(groups)} jobs; this workload is the one on {first.id}")
            for u in groups[key] + loose:
                _attach_launcher(wl, u, repo, computes)
            workloads[wl.name] = wl
    for wl in workloads.values():
        if wl.entrypoint in runs_training:
            wl.reasons.append(runs_training[wl.entrypoint])
        for copy in sorted(c for c, twin in copies.items() if twin == wl.entrypoint):
            wl.reasons.append(f"copy: {copy} is a byte-identical copy of {wl.entrypoint} that nothing launches; "
                              "it is this workload, not one of its own")
        # a notebook whose metadata names its kernel's instance (SageMaker Studio) trains on that instance
        kernel = computes.get(f"{wl.entrypoint}#kernel")
        if wl.compute is None and kernel is not None and repo.kinds.get(wl.entrypoint) == "notebook":
            wl.compute = kernel
            wl.reasons.append(f"notebook: {wl.entrypoint}'s kernel runs on the instance its metadata names ({kernel.loc.short()})")
    # configs named by code or passed by launchers
    for wl in workloads.values():
        for f in list(wl.facts):
            if f.kind == "config_ref" and f.value.get("kind") == "hydra":
                _attach_hydra(wl, f, repo)
            elif f.kind == "config_ref":
                _attach_config(wl, _resolve_config(f.value.get("path"), f.loc.path, repo), repo, f"code: {f.loc.short()} names it")
        for f in wl.launchers:
            args = f.value.get("args") or []
            for i, arg in enumerate(args):
                if not isinstance(arg, str):
                    continue
                if arg.startswith("-") and "=" in arg:
                    flag, _, value = arg.partition("=")  # --config=ds.json
                else:  # --config ds.json (the flag is the word before), or a positional path
                    before = args[i - 1] if i else None
                    flag, value = (before if isinstance(before, str) and before.startswith("-") else ""), arg
                if flag and _DATA_FLAG.search(flag.lstrip("-")):
                    continue  # --train_file data/train.json, --meta_path shell/data/mix.json: data the script reads
                if value.endswith((".json", ".yaml", ".yml", ".toml")) and not value.startswith("-"):
                    _attach_config(wl, _resolve_config(value, f.loc.path, repo, wl.entrypoint), repo, f"launcher: {f.loc.short()} passes it")
    # 2. the configuration's workloads table
    for row in table or []:
        entry = row.get("entrypoint")
        matching = [w for w in workloads.values() if w.entrypoint == entry]
        if not matching and entry in repo.kinds:
            wl = _new_workload(entry, entry, repo, _closure(entry, repo))
            workloads[wl.name] = wl
            matching = [wl]
        for wl in matching:
            wl.overrides = dict(row)
            if row.get("name") and len(matching) == 1:
                del workloads[wl.name]
                wl.name = row["name"]
                workloads[wl.name] = wl
            cid = row.get("compute")
            if cid and cid in computes:
                wl.compute = computes[cid]
                wl.job_computes = []
                wl.reasons.append(f"config: workloads table pins compute {cid}")
    # 3. unambiguous repo-level pairing
    _pair_accelerate(workloads, repo)
    ambiguities = _pair_compute(workloads, computes)
    # serving targets that run no script of the repository (a vLLM image) are workloads of their own
    claimed = {c.id for wl in workloads.values() for c in [wl.compute, *wl.job_computes] if c is not None}
    for cid, c in computes.items():
        if cid in claimed or c.role() != "serving" or not (c.has_gpu_hint() or any(j.has_gpu_hint() for j in c.joined)):
            continue
        if not _runs_a_server(c):
            continue  # a node pool named for inference is capacity, judged as such, not a workload
        if scope.outside(c.path):
            continue
        wl = Workload(name=cid, entrypoint=c.path, compute=c)
        wl.reasons.append(f"serving: {cid} serves a model with no script of this repository")
        wl.launchers = [f for f in c.facts if f.kind == "launch"]
        wl.env = [f for f in c.facts if f.kind == "env"]
        wl.facts = [f for f in repo.facts.get(c.path, []) if f.target == c.target and f.kind.startswith(("model.", "precision", "serves", "quantized_load"))]
        workloads[wl.name] = wl
    _infrastructure_jobs(workloads, uses, computes, repo, scope)
    for wl in workloads.values():
        wl.unknown += [n for n in undecided.get(wl.entrypoint, []) if n not in wl.unknown]
        if wl.compute is None and not any("compute: ambiguous" in u for u in wl.unknown):
            wl.unknown.append("compute: no launcher, infrastructure file or config names the instance this runs on")
        if not wl.launchers and wl.code_files:
            wl.unknown.append("launcher: nothing in the repository starts this script")
    return Linked([workloads[k] for k in sorted(workloads)], computes, ambiguities, census.unjoined(),
                  census.named, census.joined)


class _JoinCensus:
    """Counts the launches that name a script of the repository and keeps those joined to none, with why."""

    def __init__(self, repo: Repo):
        self.repo = repo
        self.named = self.joined = 0
        self._missed: list[tuple[_Use, str, bool]] = []
        self._seen: set = set()

    def count(self, u: _Use, script: str | None, undecided: bool = False) -> None:
        """One launch and the file it was joined to (None); ``undecided``: its script variable's values are
        several files of the repository, so it was joined to none of them."""
        key = (u.fact.loc.path, u.fact.loc.line, u.fact.key)
        if key in self._seen:
            return  # one launch reached through several chains
        v, attrs = u.fact.value, u.fact.attrs or {}
        written = v.get("script") if isinstance(v.get("script"), str) else attrs.get("script_unresolved")
        cands = [c.get("script") for c in attrs.get("script_candidates") or [] if isinstance(c, dict)]
        names = [posixpath.basename(n) for n in [written, *cands] if isinstance(n, str) and n]
        held = bool(written and "$" in written)
        if not (held or any(n.endswith(".py") and self.repo.named(n) for n in names)):
            return  # a launch of a file no repository file is named like (an installed tool, a file of the image)
        self._seen.add(key)
        self.named += 1
        if script:
            self.joined += 1
        else:
            self._missed.append((u, written or (cands[0] if cands else ""), undecided))

    def unjoined(self) -> list[Unjoined]:
        out = []
        for u, written, undecided in self._missed:
            v = u.fact.value
            command = f"{v.get('tool')} {written or v.get('module') or ''}".strip()
            if undecided:
                why = "runs one of several repository files, chosen at run time (the values of its script variable)"
            elif "$" in written or "{" in written:
                why = f"the script path {written} holds a variable the launcher does not set"
            else:
                named = self.repo.named(posixpath.basename(written))
                shown = ", ".join(named[:2]) + (f" and {len(named) - 2} more" if len(named) > 2 else "")
                why = (f"not a path of the repository; {shown} {'has' if len(named) == 1 else 'have'} that name "
                       "(if it runs one, say which in [[tool.gpulint.workloads]])")
            out.append(Unjoined(u.fact.loc, command, why))
        return sorted(out, key=lambda x: (x.loc.path, x.loc.line))


#: launchers that start distributed training processes (python alone counts with training evidence only)
_TRAINING_LAUNCHERS = ("torchrun", "hyperpodrun", "deepspeed", "accelerate", "composer", "python")
#: a script or module named for training (pretrain_gpt.py, finetune.py, train_sft.py, run_dpo.py ...)
_TRAINING_NAME = re.compile(r"(?:^|[/_\-.])(?:pre)?train(?:ing|er)?(?:[_\-.]|$)|fine[_-]?tun|(?:^|[/_\-.])(?:sft|dpo|ppo|grpo|rlhf|orpo|kto)"
                            r"(?:[_\-.]|$)", re.I)
#: flags only a training run takes
_TRAINING_FLAGS = ("--max_steps", "--max-steps", "--num_train_epochs", "--train_iters", "--train-iters", "--train-samples",
                   "--learning_rate", "--learning-rate", "--lr", "--save_steps", "--save-interval", "--micro-batch-size",
                   "--micro_batch_size", "--global-batch-size", "--global_batch_size", "--per_device_train_batch_size",
                   "--gradient_accumulation_steps", "--num-epochs", "--num_epochs", "--epochs")


def _launch_training(fact: Fact) -> str | None:
    """Why a launch alone says it runs training: a distributed launcher with a script named for training or a
    training flag. None when the launch does not say (an evaluation, a server, a shell script)."""
    v = fact.value if isinstance(fact.value, dict) else {}
    tool = v.get("tool")
    trainer = packaged.trainer_of_launch(v)
    if trainer is not None:
        return f"{v.get('program') or tool} runs {trainer.label}'s trainer"
    if tool not in _TRAINING_LAUNCHERS:
        return None
    name = str(v.get("script") or v.get("module") or "")
    flags = [a.split("=", 1)[0] for a in v.get("args") or [] if isinstance(a, str) and a.startswith("--")]
    hit = next((f for f in flags if f in _TRAINING_FLAGS), None)
    if _TRAINING_NAME.search(posixpath.basename(name) or name.rsplit(".", 1)[-1]):
        return f"{tool} runs {name}, named for training"
    if hit:
        return f"{tool} runs {name or 'its program'} with {hit}, a training flag"
    return None


def _not_in_repository(fact: Fact, code_names: set[str], code_paths: frozenset[str], consoles: dict) -> str | None:
    """Where the launch's code lives when it is not a file of the repository ("fetched at run time", "in the image"),
    or None when it may be one (a literal name some file of the repository has, a script held in a variable).
    ``code_names``: the file names of the repository's code; ``code_paths``: their paths; ``consoles``: the
    console scripts its packaging declares (a ``program`` launch of a packaged trainer that is not one of them runs
    the installed trainer)."""
    v = fact.value if isinstance(fact.value, dict) else {}
    if (fact.attrs or {}).get("fetched"):
        return "fetched at run time"
    if v.get("tool") == "program":
        trainer = packaged.trainer_of_launch(v)
        if trainer is None:
            return None
        vendored = _vendored_trainer(v.get("program"), consoles)
        if vendored:
            return (f"{v['program']} runs the copy of {trainer.label} the repository vendors ({vendored} declares it), "
                    "read as the trainer documents it")
        if v.get("program") in consoles:
            return None
        return f"{v['program']} is {trainer.label}'s command, not a console script of the repository (in the image)"
    script, module = v.get("script"), v.get("module")
    if module:
        # a module is the file its dotted path names under some source root (pkg/mod.py, pkg/mod/__main__.py);
        # a file of the same name elsewhere (a torchtune copy's recipes/x.py for torchtune.recipes.x) is another
        # module, whatever the installed package maps it to
        rel = module.replace(".", "/")
        cands = (rel + ".py", rel + "/__main__.py")
        found = sorted(p for p in code_paths if any(p == c or p.endswith("/" + c) for c in cands))
        if not found:
            return f"module {module} is not a file of the repository (in the image)"
        trainer = packaged.trainer_of_launch(v)
        roots = _import_roots((fact.attrs or {}).get("cwd"), fact.loc.path)
        if trainer is not None and not any(posixpath.normpath(posixpath.join(b, c)) in found for b in roots for c in cands):
            # a copy of the trainer vendored in a subfolder (llama_factory/src/llamafactory/...), installed from
            # there: its CLI runs that trainer, read by its documented config as an installed one is. A copy at
            # the import roots (the trainer's own repository or a fork) keeps its code.
            return f"module {module} runs the copy of {trainer.label} the repository vendors ({found[0]}), read as the trainer documents it"
        return None
    if not isinstance(script, str) or not script.endswith(".py") or "$" in script or "{" in script:
        return None
    tail = posixpath.basename(script)
    if tail in code_names:
        return None
    return f"{script} is not a file of the repository (in the image)"


#: launch flags that name where a training program writes its checkpoints, by the conventions of the trainers that
#: take them (fairseq/Megatron --save, HF --output_dir, torchtitan/timm --checkpoint.folder / --output ...): read only
#: for a job whose code is not in the repository, where the launch line is all there is to read
CHECKPOINT_DIR_FLAGS = frozenset({"--save", "--save-dir", "--save_dir", "--checkpoint-dir", "--checkpoint_dir",
                                  "--checkpoint.folder", "--ckpt-dir", "--ckpt_dir", "--checkpoint-path",
                                  "--checkpoint_path", "--output_dir", "--output-dir"})
RESUME_FLAGS = frozenset({"--resume", "--resume_from_checkpoint", "--resume-from-checkpoint", "--resume-from",
                          "--resume_from", "--load", "--load-dir", "--load_dir", "--auto-resume", "--auto_resume"})


def _launch_checkpoints(launch: Fact) -> list[Fact]:
    """The checkpoint saves and resumes a launch line states by its flags (a literal folder for a save)."""
    args = [a for a in (launch.value.get("args") or []) if isinstance(a, str)]
    out: list[Fact] = []
    for i, arg in enumerate(args):
        flag, eq, value = arg.partition("=")
        if not eq:
            value = args[i + 1] if i + 1 < len(args) and not args[i + 1].startswith("-") else ""
        if flag in CHECKPOINT_DIR_FLAGS and value:
            literal = value if "$" not in value and "{" not in value else None
            out.append(Fact("checkpoint.save", {"via": "launch_flag", "dir": literal}, launch.loc, flag, "",
                            {"flag": flag, "written": value}))
        elif flag in RESUME_FLAGS and value.lower() not in ("false", "0", "no", "none"):
            out.append(Fact("checkpoint.resume", {"via": "launch_flag", "value": value or True}, launch.loc, flag, "",
                            {"flag": flag}))
    return out


def _infrastructure_jobs(workloads: dict[str, Workload], uses: list["_Use"], computes: dict[str, Compute], repo: Repo,
                         scope: "Scope") -> None:
    """A training launcher on GPU compute whose script is not in the repository is a workload whose code is unknown:
    the checks that need only its launcher, compute and environment (RDMA, idle GPUs, cost) still apply to it.
    A packaged trainer's launch (gpulint.read.packaged) is one wherever it runs, on compute the repository defines or
    not (``CUDA_VISIBLE_DEVICES=0 fairseq-train ...`` in a script run by hand), once its config or flags are read:
    its code is then known, and the trainer takes the GPU there is."""
    claimed = {c.id for wl in workloads.values() for c in [wl.compute, *wl.job_computes] if c is not None}
    code_paths = frozenset(repo.files_of_kind(*CODE_KINDS))
    code_names = {posixpath.basename(p) for p in code_paths}
    consoles = _console_scripts(repo)
    held = {u.fact.loc for u in uses if u.holder}  # launches some use runs on a compute target: judged there
    loose_done: set = set()
    for u in uses:
        if scope.outside(u.path) or (u.holder and u.holder in claimed):
            continue
        c = computes[u.holder] if u.holder else None
        trainer = packaged.trainer_of_launch(u.fact.value)
        if c is None:
            if trainer is None or u.fact.loc in held or u.fact.loc in loose_done:
                continue
        elif not (c.has_gpu_hint() or any(j.has_gpu_hint() for j in c.joined)
                  or (c.placed_on is not None and c.placed_on.has_gpu_hint())):
            continue
        where = _not_in_repository(u.fact, code_names, code_paths, consoles)
        trains = _launch_training(u.fact) if where else None
        if not trains:
            continue
        shown = u.fact.value.get("script") or u.fact.value.get("module") or u.fact.value.get("program")
        name = f"{c.id} ({shown})" if c is not None else f"{u.fact.loc.short()} ({shown})"
        wl = Workload(name=name, entrypoint=u.path, code_known=False, launch_training=trains)
        wl.reasons.append(f"infrastructure: {u.fact.loc.short()} runs {shown}"
                          f"{' on ' + c.id if c is not None else ''}: {where}")
        _attach_launcher(wl, u, repo, computes)
        if trainer is None or not _attach_packaged(wl, trainer, u, repo):
            if c is None:
                continue  # neither compute nor code: nothing a check could read
            wl.unknown.append(f"code: {where}: checks that read the training code (precision, data loading, checkpoints, "
                              "model size) do not apply; those of its launcher, compute and environment do")
        if c is None:
            # the trainer runs on the GPU the machine has (fairseq, LLaMA-Factory, axolotl and torchtune train on CUDA
            # when it is there): a framework's word, as an HF Trainer's is, not a GPU the repository names
            # placed with the trainer's own fact (its config, or the launch line its flags are on): a fact of the code
            own = next((f.loc for f in wl.facts if f.kind == "trains"), u.fact.loc)
            wl.facts.append(Fact("uses_gpu", {"via": f"{trainer.label}'s trainer", "auto": True}, own, trainer.name))
            loose_done.add(u.fact.loc)
        stated = [] if any(f.kind == "checkpoint.save" and f.value.get("via") == "packaged_config" for f in wl.facts) \
            else _launch_checkpoints(u.fact)  # what the trainer's own reading of the line says already
        if stated:
            wl.facts += stated
            wl.reasons.append(f"checkpoint: {u.fact.loc.short()} passes {', '.join(sorted({f.key for f in stated}))}")
        workloads[wl.name] = wl
        if c is not None:
            claimed.add(c.id)


#: launch-line overrides of a packaged trainer's config that decide its precision (axolotl ``--bf16``, torchtune and
#: LLaMA-Factory ``dtype=bf16`` / ``bf16=true``)
_PRECISION_OVERRIDE = re.compile(r"^-*(?:bf16|fp16|pure_bf16|dtype|mixed_precision)(?:=|$)")


def _packaged_config_arg(trainer: "packaged.PackagedTrainer", args: list[str]) -> tuple[str | None, int]:
    """The config a packaged trainer's launch passes and the index of the word after it: torchtune's ``--config``,
    the others' first positional YAML file."""
    if not trainer.config_arg:
        return None, 0  # configured by flags alone (fairseq-train)
    for i, a in enumerate(args):
        if trainer.config_arg == "--config":
            if a.startswith("--config="):
                return a.split("=", 1)[1], i + 1
            if a == "--config" and i + 1 < len(args):
                return args[i + 1], i + 2
        elif not a.startswith("-") and a.endswith((".yml", ".yaml")):
            return a, i + 1
        elif trainer is packaged.LLAMA_FACTORY:
            break  # LLaMA-Factory reads a config only as its first argument (else the arguments are flags)
    return None, 0


def _builtin_config(trainer: "packaged.PackagedTrainer", cfg: str | None, repo: Repo) -> str | None:
    """A torchtune config named without a file extension (``llama3_3/70B_full_multinode``) is one of torchtune's own,
    which its source tree keeps as recipes/configs/<name>.yaml: a file of the repository only in a copy of torchtune
    (https://pytorch.org/torchtune/stable/deep_dives/configs.html, "tune ls" and "tune cp")."""
    if trainer is not packaged.TORCHTUNE or not cfg or cfg.endswith((".yaml", ".yml")) or "$" in cfg:
        return None
    rel = f"recipes/configs/{cfg}.yaml"
    matches = [p for p in repo.kinds if p == rel or p.endswith("/" + rel)]
    return matches[0] if len(matches) == 1 else None


def _attach_packaged(wl: Workload, trainer: "packaged.PackagedTrainer", use: "_Use", repo: Repo) -> bool:
    """A packaged trainer (gpulint.read.packaged) launched with a config of the repository: its code is that config
    (the trainer's documented behaviour under these keys), so the checks that read training code read it. False
    when the config is not a file of the repository or not one of this trainer."""
    args = [a for a in use.fact.value.get("args") or [] if isinstance(a, str)]
    if trainer.config_arg == "hydra":
        return _attach_hydra_program(wl, trainer, use, args, repo)
    cfg, after = _packaged_config_arg(trainer, args)
    if cfg is None and trainer.reads_flags and any(a.startswith("--") for a in args):
        return _attach_flags(wl, trainer, use, args, repo)
    path = _resolve_config(cfg, use.path, repo, None) or _builtin_config(trainer, cfg, repo)
    own = next((f for f in repo.facts.get(path, []) if f.kind == "config.packaged_trainer"
                and f.value.get("trainer") == trainer.name), None) if path else None
    if own is None:
        article = "an" if trainer.label[:1].lower() in "aeiou" else "a"
        if cfg and ("$" in cfg or "{" in cfg):
            what = f"its config {cfg}, a name decided at run time"
        elif cfg:
            what = f"its config {cfg}, which is not {article} {trainer.label} config of the repository"
        else:
            what = "no config file named on its launch line"
        wl.unknown.append(f"config: {trainer.label} runs with {what}: what it sets (precision, checkpoints) is unknown")
        return False
    _attach_config(wl, path, repo, f"launcher: {use.fact.loc.short()} passes it to {trainer.label}")
    overrides = [a for a in args[after:] if _PRECISION_OVERRIDE.match(a)]
    if overrides:
        # the launch line sets precision over the file's keys: what it sets is read nowhere else
        wl.facts = [f for f in wl.facts if not (f.kind == "precision" and f.loc.path == path)]
        wl.facts.append(Fact("precision", {"mechanism": "packaged_config", "trainer": trainer.name, "dtype": None,
                                           "enabled": None, "undecided": f"the launch line sets {overrides[0]}"},
                             use.fact.loc, overrides[0].lstrip("-").split("=", 1)[0]))
        wl.unknown.append(f"precision: {use.fact.loc.short()} overrides {path} with {overrides[0]}")
    _runs_as(wl, trainer, path, own.loc, f"{path} configures it")
    recipe = str(use.fact.value.get("module") or "")
    if trainer is packaged.TORCHTUNE and recipe.endswith("_distributed"):
        # torchtune's *_distributed recipes shard parameters, gradients and optimizer state with FSDP (full shard)
        wl.facts.append(Fact("sharding", {"via": "fsdp", "stage": 3, "offload": bool(own.value.get("cpu_offload"))}, own.loc,
                             recipe.rsplit(".", 1)[-1]))
    return True


def _runs_as(wl: Workload, trainer: "packaged.PackagedTrainer", code: str, at: Location, how: str) -> None:
    """The workload's code is what configures the packaged trainer (its config file, or the launch line of its
    flags), where its ``trains`` fact is placed: the checks that read training code read it."""
    wl.code_known, wl.launch_training = True, None
    wl.code_files = [code]
    wl.facts.append(Fact("trains", {"via": trainer.name}, at, trainer.name))
    wl.reasons.append(f"code: {trainer.label}'s trainer (a package, not a file of the repository) runs as {how} "
                      f"({trainer.docs})")


def _attach_hydra_program(wl: Workload, trainer: "packaged.PackagedTrainer", use: "_Use", args: list[str],
                          repo: Repo) -> bool:
    """fairseq-hydra-train with a config of the repository (``--config-dir conf --config-name base``): its code is
    that config with the launch line's key overrides (``common.fp16=true``) merged over it (gpulint.link.hydra)."""
    launch = use.fact
    bases = _cwd_bases((launch.attrs or {}).get("cwd"), use.path) + [posixpath.dirname(use.path), ""]
    path, why = hydra.program_config(args, list(dict.fromkeys(bases)), repo.files_of_kind("yaml"))
    own = next((f for f in repo.of_kind(path, "config.packaged_trainer") if f.value.get("trainer") == trainer.name),
               None) if path else None
    if own is None:
        what = why if path is None else f"{path} is not a {trainer.label} config (no task and optimizer)"
        wl.unknown.append(f"config: {trainer.label} at {launch.loc.short()}: {what}; what it sets (precision, "
                          "checkpoints) is unknown")
        return False
    _attach_config(wl, path, repo, f"launcher: {launch.loc.short()} passes {why} to {trainer.label}")
    for group_file, reason in hydra.composed(path, lambda p: repo.facts.get(p, []), [launch], lambda p: p in repo.kinds):
        _attach_config(wl, group_file, repo, reason)
    given = hydra.overrides(args)
    replaced, kinds = packaged.fairseq_overridden(own.value.get("settings") or {}, packaged.fairseq_settings(given),
                                                  launch.loc)
    if kinds:
        wl.facts = [f for f in wl.facts if not (f.kind in kinds and f.loc.path == path)] + replaced
        read = sorted(f"{g}.{k}" for g, keys in given.items() for k in keys if f"{g}.{k}" in packaged.FAIRSEQ_READ)
        wl.reasons.append(f"overrides: {launch.loc.short()} sets {', '.join(read)} over {path}")
    if launch.value.get("args_open") and "precision" not in kinds:
        # words that may expand to more overrides (``"$@"``): a precision the config leaves at fairseq's default
        # may be set on the command line
        for i, f in enumerate(wl.facts):
            if f.kind == "precision" and f.loc.path == path and f.value.get("default"):
                wl.facts[i] = packaged.left_open(f, f"{launch.loc.short()} passes words that may expand to more "
                                                    "overrides (common.fp16=true)")
    _runs_as(wl, trainer, path, own.loc, f"{path} configures it")
    return True


def _attach_flags(wl: Workload, trainer: "packaged.PackagedTrainer", use: "_Use", args: list[str], repo: Repo) -> bool:
    """A packaged trainer configured by its launch line's flags (fairseq-train, LLaMA-Factory without a config file):
    its code is that line, read by the trainer's documented defaults (gpulint.read.packaged.flag_facts)."""
    launch = use.fact
    complete = not launch.value.get("args_open")
    facts = packaged.flag_facts(args, trainer, launch.loc, complete)
    wl.facts += [f for f in facts if f.kind != "config_ref"]
    for ref in (f for f in facts if f.kind == "config_ref"):  # --deepspeed ds_z3.json
        _attach_config(wl, _resolve_config(ref.value.get("path"), use.path, repo, None), repo,
                       f"launcher: {launch.loc.short()} passes it to {trainer.label}")
    if not complete:
        wl.unknown.append(f"flags: {launch.loc.short()} passes words that may expand to more flags of {trainer.label} "
                          "(its precision is not read from the line)")
    _runs_as(wl, trainer, launch.loc.path, launch.loc, f"the flags of {launch.loc.short()} configure it")
    return True


def _stray_copies(entries: dict[str, list[_Use]], repo: Repo, pinned: set) -> dict[str, str]:
    """Entrypoints nothing launches that are byte-identical to one of the same name a launcher starts,
    each with that launched twin: a script copied into another folder (an older layout, a second image's
    build context) runs as that job if it runs at all, and reporting it again charges one workload twice."""
    launched: dict[tuple[str, str], str] = {}
    for path in sorted(entries):
        digest = repo.digests.get(path)
        if entries[path] and digest:
            launched.setdefault((posixpath.basename(path), digest), path)
    copies: dict[str, str] = {}
    for path in sorted(entries):
        twin = launched.get((posixpath.basename(path), repo.digests.get(path) or ""))
        if not twin or twin == path or entries[path] or path in pinned:
            continue
        # a launcher of the twin that sits in the copy's own folder tree (scripts/run.sh running a relative
        # finetune.py) may have been linked to the wrong namesake: the copy is not known to be stray then
        home = posixpath.dirname(path)
        if any(not home or u.path.startswith(home + "/") for u in entries[twin]):
            continue
        copies[path] = twin
    return copies


def _runs_a_server(c: Compute) -> bool:
    """A serving target that runs something itself: a container or task with a command, a Kubernetes
    pod object, a SageMaker endpoint (not a node pool or a VM that is merely named for inference)."""
    if any(f.kind == "launch" for f in c.facts):
        return True
    v = c.value("compute.target") or {}
    resource = str(v.get("resource") or "")
    if v.get("source") == "kubernetes":
        return not resource.startswith(("NodePool/", "Provisioner/"))
    if v.get("source") == "compose":
        return v.get("role") == "serving"  # a model server's image (vLLM, TGI, Triton ...) runs its own entrypoint
    return v.get("source") in ("sagemaker", "vertex", "azureml") or "sagemaker_endpoint" in resource


def _pair_accelerate(workloads: dict[str, Workload], repo: Repo) -> None:
    accel = [p for p in sorted(repo.facts) if any(f.kind == "config.accelerate" for f in repo.facts[p])]
    for wl in workloads.values():
        uses_accel = any(f.kind == "precision" and f.value.get("mechanism") == "accelerate" for f in wl.facts) or any(
            (l.value.get("tool") == "accelerate") for l in wl.launchers)
        if uses_accel and not any(c for c in wl.configs if c in accel):
            explicit = [l for l in wl.launchers if l.value.get("config_file")]
            if not explicit and len(accel) == 1:
                _attach_config(wl, accel[0], repo, f"repo: {accel[0]} is the only accelerate config")


def _pair_compute(workloads: dict[str, Workload], computes: dict[str, Compute]) -> list[Ambiguity]:
    """One GPU compute target left and one training workload without compute: they go together.
    Among several workloads, the only one a launcher starts is preferred (the others are run by
    hand, if at all). Anything else is an ambiguity, recorded with its candidates."""
    claimed = {c.id for wl in workloads.values() for c in [wl.compute, *wl.job_computes] if c is not None}
    claimed |= {c.placed_on.id for c in computes.values() if c.placed_on is not None}  # a queue some job runs on
    templates = _templates_in_use(computes)  # a launch template an ASG starts is that group's compute
    free = [c for cid, c in computes.items()
            if cid not in claimed and cid not in templates and _is_standalone(c) and c.role() not in ("serving", "notebook")
            and (c.has_gpu_hint() or any(j.has_gpu_hint() for j in c.joined))]
    waiting = [wl for wl in workloads.values() if wl.compute is None and wl.trains]
    if not free or not waiting:
        return []
    launched = [wl for wl in waiting if wl.launchers]
    if len(free) == 1 and (len(waiting) == 1 or len(launched) == 1):
        wl = waiting[0] if len(waiting) == 1 else launched[0]
        wl.compute = free[0]
        why = "the only training workload without one" if len(waiting) == 1 else \
            f"the only training workload a launcher starts ({len(waiting) - 1} other(s) are started by nothing in the repository)"
        wl.reasons.append(f"repo: {free[0].id} is the only GPU compute target and {wl.entrypoint} {why}")
        return []
    names = tuple(wl.entrypoint for wl in waiting)
    for wl in waiting:
        wl.unknown.append(
            f"compute: ambiguous: {len(free)} GPU compute targets ({', '.join(c.id for c in free[:4])}) and "
            f"{len(waiting)} training workloads without one. Pin it in pyproject.toml:\n"
            f"    [[tool.gpulint.workloads]]\n    entrypoint = \"{wl.entrypoint}\"\n    compute = \"<one of the targets above>\""
        )
    return [Ambiguity(c.loc, c.id, names, names) for c in free]


def _attach_launcher(wl: Workload, use: _Use, repo: Repo, computes: dict[str, Compute]) -> None:
    fact = use.fact
    wl.launchers.append(fact)
    chain = "".join(f"{v}; " for v in use.via)
    if wl.code_known:
        wl.reasons.append(f"launcher: {chain}{fact.loc.short()} runs {wl.entrypoint}" + (f" ({use.why})" if use.why else ""))
    wl.unknown += [o for o in use.others if o not in wl.unknown]
    if use.holder:
        c = computes[use.holder]
        if wl.compute is None:
            wl.compute = c
            how = "runs the launcher chain" if use.via else "holds the launcher" if fact.target else "(#SBATCH) runs the launcher"
            wl.reasons.append(f"compute: {c.id} {how}")
        elif c.id != wl.compute.id and all(c.id != j.id for j in wl.job_computes):
            wl.job_computes.append(c)
    # environment set in the launcher's file (or its container / task), and in the outer launchers'
    for lpath, target in use.env_files + ((use.path, fact.target),):
        for f in repo.of_kind(lpath, "env"):
            if (not f.target or f.target == target) and f not in wl.env:
                wl.env.append(f)
    for key in ("config_file", "deepspeed_config"):
        cfg = fact.value.get(key)
        if cfg:
            _attach_config(wl, _resolve_config(cfg, use.path, repo, wl.entrypoint), repo, f"launcher: {fact.loc.short()} passes {key} {cfg}")


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
    """Capacity that runs nothing of its own and so may be paired with a script: Terraform resources,
    Karpenter NodePools, Azure ML compute clusters. A job, pod, batch script or task runs what its own
    command says (a benchmark, a container's entrypoint, an environment check), even when gpulint cannot
    read that command: pairing it with some other script of the repository would be a guess."""
    if any(f.kind == "launch" for f in c.facts):
        return False
    v = c.value("compute.target") or {}
    source, resource = v.get("source"), str(v.get("resource") or "")
    # a cluster definition's capacity (a queue, a node group) runs the jobs its scheduler places on it
    # (gpulint.link.placement), not whichever script of the repository is left over: pairing them is a guess
    if source == "terraform":
        return True
    if source == "kubernetes":
        return resource.startswith(("NodePool/", "Provisioner/"))
    return source == "azureml" and "compute" in resource.lower()


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


def _attach_hydra(wl: Workload, ref: Fact, repo: Repo) -> None:
    """The config a Hydra entry point composes and the group files of its defaults list (gpulint.link.hydra)."""
    exists = lambda p: repo.kinds.get(p) == "yaml"  # noqa: E731
    primary, why = hydra.primary_config(ref, wl.launchers, exists)
    if primary is None:
        wl.unknown.append(f"config: {why}: what it sets (trainer.precision, devices ...) is unknown")
        return
    _attach_config(wl, primary, repo, why)
    for path, reason in hydra.composed(primary, lambda p: repo.facts.get(p, []), wl.launchers, exists):
        _attach_config(wl, path, repo, reason)
