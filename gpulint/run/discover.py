"""Which files to scan, and of what kind.

Inside a git work tree the file list comes from git itself (tracked plus
untracked-but-not-ignored), which honours every .gitignore, .git/info/exclude
and the global excludes exactly. Elsewhere the tree is walked. Virtualenvs,
node_modules, build output and VCS folders are always skipped, and the
configuration's ``exclude`` globs apply on top.

Whatever the tree holds, discovery never fails: a symlink is followed only
to a regular file inside the root (never out of it, git or not; loops are
skipped), file names that are not UTF-8 are kept (shown with ``%XX``
escapes), and folders that cannot be read are reported in ``problems`` and
skipped.
"""
from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec

SKIP_DIRS = {
    ".git", ".hg", ".svn", ".venv", "venv", ".env", "env", "node_modules", "__pycache__", ".tox", ".nox", ".mypy_cache",
    ".pytest_cache", ".ruff_cache", "build", "dist", ".eggs", "site-packages", ".terraform", ".ipynb_checkpoints",
    ".idea", ".vscode", "wandb", "mlruns", "lightning_logs", ".gpulint_cache",
}


@dataclass(frozen=True)
class Candidate:
    rel: str  # posix path relative to the scan root
    abs: Path
    kind: str


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a folder that cannot be entered (permission), a name too long ...
        return False


def _skip_dir(name: str, path: Path) -> bool:
    if name in SKIP_DIRS or name.endswith(".egg-info"):
        # a folder named env/venv that is not a virtualenv may be real code
        if name in ("env", ".env") and not _exists(path / "pyvenv.cfg"):
            return False
        return True
    return _exists(path / "pyvenv.cfg")


def display_name(rel: str) -> str:
    """A path as reports show it: bytes that are not UTF-8 (kept by Python as
    surrogate escapes) become ``%XX``, as in a URL, so every report (text,
    JSON, SARIF, an editor) can print it and no backslash is taken for a
    Windows separator."""
    try:
        rel.encode("utf-8")
        return rel
    except UnicodeEncodeError:
        raw = rel.encode("utf-8", "surrogateescape")
        out, i = [], 0
        while i < len(raw):
            for end in range(min(len(raw), i + 4), i, -1):  # the longest valid UTF-8 sequence here
                try:
                    out.append(raw[i:end].decode("utf-8"))
                    i = end
                    break
                except UnicodeDecodeError:
                    continue
            else:
                out.append(f"%{raw[i]:02X}")
                i += 1
        return "".join(out)


def _inside(path: Path, root: str) -> bool:
    """Whether `path`, with every symlink resolved, is a regular file under `root` (resolved).
    os.path.realpath never raises on a loop; a loop does not resolve to a file."""
    real = os.path.realpath(path)
    if not (real == root or real.startswith(root.rstrip(os.sep) + os.sep)):
        return False
    try:
        return stat.S_ISREG(os.stat(real).st_mode)
    except (OSError, ValueError):
        return False


def git_files(root: Path) -> list[str] | None:
    """Files git would track under root (relative posix), or None outside a work tree."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if proc.returncode != 0:
        return None
    names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return sorted(set(names))


def walk_files(root: Path, problems: list[tuple[str, str]] | None = None) -> list[str]:
    out = []

    def unreadable(err: OSError) -> None:
        if problems is not None and err.filename is not None:
            rel = Path(err.filename).relative_to(root).as_posix() if Path(err.filename).is_relative_to(root) else str(err.filename)
            problems.append((display_name(rel), err.strerror or str(err)))

    top = os.fspath(root)
    for dirpath, dirnames, filenames in os.walk(top, onerror=unreadable):  # symlinked folders are not entered
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not _skip_dir(d, here / d) and not os.path.islink(os.path.join(dirpath, d)))
        # names joined as strings: a Path per file was most of a warm scan's discovery
        prefix = os.path.relpath(dirpath, top).replace(os.sep, "/") + "/" if dirpath != top else ""
        out += [prefix + f for f in filenames]
    return sorted(out)


#: extensions batch schedulers' job scripts go by besides .sh/.slurm/.sbatch (Slurm .slrm, HTCondor/PBS .sub, .job,
#: .pbs, LSF .lsf/.bsub): read as shell when their first line is a shell's shebang, as sbatch and qsub require
JOB_SCRIPT_EXTENSIONS = frozenset({"slrm", "sub", "job", "batch", "pbs", "qsub", "lsf", "bsub"})


#: the extensions of shell and job scripts whose variants (``.sbatch_shifter``) are read by their shebang too
_SCRIPT_STEMS = frozenset({"sh", "bash", "sbatch", "slurm"})


class Classifier:
    """A file's kind: by its name (the kinds' globs, highest priority first), else for a name without an extension
    or with a job-script one by its shebang. Names are classified once per Classifier (``__init__.py`` and
    ``README.md`` recur in every folder), with each kind's globs compiled into one pattern."""

    def __init__(self, kinds):
        self.kinds = sorted(kinds, key=lambda k: -k.priority)
        self._patterns = [(k.name, re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(g))})" for g in k.globs)))
                          for k in self.kinds if k.globs]
        self._any_shebang = any(k.shebang for k in self.kinds)
        self._by_name: dict[str, str | None] = {}

    def kind_of_name(self, name: str) -> str | None:
        """The kind a file's name alone gives it (as ``fnmatch``, so case-insensitive where the OS is)."""
        try:
            return self._by_name[name]
        except KeyError:
            pass
        norm = os.path.normcase(name)
        kind = next((k for k, pattern in self._patterns if pattern.match(norm)), None)
        self._by_name[name] = kind
        return kind

    def may_have_shebang(self, name: str) -> bool:
        """Could the file's first line decide its kind (no extension, or a batch scheduler's)?"""
        ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        # and a variant of a job script's extension (NERSC's submit.sbatch_shifter, run.slurm-gpu)
        stem = re.split(r"[_\-]", ext, maxsplit=1)[0]
        return ("." not in name or ext in JOB_SCRIPT_EXTENSIONS or stem in JOB_SCRIPT_EXTENSIONS
                or (stem != ext and stem in _SCRIPT_STEMS)) and self._any_shebang

    def kind_of(self, path: Path) -> str | None:
        name = path.name
        kind = self.kind_of_name(name)
        if kind is not None or not self.may_have_shebang(name):
            return kind
        return self.kind_of_shebang(path)

    def kind_of_shebang(self, path: Path | str) -> str | None:
        try:
            with open(path, "rb") as fh:
                head = fh.read(128)
        except OSError:
            return None
        if head.startswith(b"#!"):
            first = head.split(b"\n", 1)[0].decode("latin-1")
            interp = first.rsplit("/", 1)[-1].split()
            words = interp[1:] if interp and interp[0] == "env" else interp[:1]
            for k in self.kinds:
                if any(w.startswith(s) for w in words for s in k.shebang):
                    return k.name
        return None


def _unreadable_ancestor(root: Path, rel: str) -> str:
    """The outermost folder on the way to `rel` that cannot be listed (the one to report)."""
    parts = PurePosixPath(rel).parts[:-1]
    for i in range(1, len(parts) + 1):
        try:
            os.listdir(root.joinpath(*parts[:i]))
        except PermissionError:
            return "/".join(parts[:i])
        except OSError:
            break
    return posixpath.dirname(rel) or "."


def discover(root: Path, classifier: Classifier, exclude: list[str], exclude_base: Path | None = None,
             problems: list[tuple[str, str]] | None = None) -> list[Candidate]:
    """Files to scan under `root`, with their kinds. Folders that could not be
    read are appended to `problems` as (relative path, reason)."""
    root = Path(os.path.realpath(root))
    names = git_files(root)
    if names is None:
        names = walk_files(root, problems)
    else:
        always = SKIP_DIRS - {"env", ".env"}
        venv_cache: dict[str, bool] = {}

        def in_venv(rel: str) -> bool:
            # a virtualenv under any name (py311-cuda/) that .gitignore does not cover
            parts = PurePosixPath(rel).parts[:-1]
            for i in range(1, len(parts) + 1):
                d = "/".join(parts[:i])
                if d not in venv_cache:
                    venv_cache[d] = _exists(root / d / "pyvenv.cfg") or (parts[i - 1] in ("env", ".env") and _skip_dir(parts[i - 1], root / d))
                if venv_cache[d]:
                    return True
            return False

        names = [n for n in names if not any(part in always or part.endswith(".egg-info") for part in PurePosixPath(n).parts[:-1])
                 and not in_venv(n)]
    spec = pathspec.PathSpec.from_lines("gitwildmatch", exclude) if exclude else None
    base = Path(os.path.realpath(exclude_base or root))
    real_root = str(root)
    out = []
    # excludes are written relative to the configuration's folder, which may be above the scanned one
    base_prefix = root.relative_to(base).as_posix() + "/" if root != base and root.is_relative_to(base) else ""
    for rel in names:
        name = rel.rsplit("/", 1)[-1]
        kind = classifier.kind_of_name(name)
        if kind is None and not classifier.may_have_shebang(name):
            continue  # no kind claims it: neither an exclude pattern nor a stat is worth asking
        if spec is not None:
            rel_to_cfg = base_prefix + rel if root == base or base_prefix else _relative_to(root / rel, base, rel)
            if spec.match_file(rel_to_cfg):
                continue
        p = root / rel
        try:
            if os.path.islink(p):
                if not _inside(p, real_root):  # out of the root, a loop, or not a regular file
                    continue
            elif not stat.S_ISREG(os.lstat(p).st_mode):
                continue
        except PermissionError as exc:  # a tracked file in a folder that cannot be entered
            if problems is not None:
                folder = display_name(_unreadable_ancestor(root, rel))
                if all(f != folder for f, _ in problems):
                    problems.append((folder, exc.strerror or str(exc)))
            continue
        except (OSError, ValueError):
            continue
        kind = kind or classifier.kind_of_shebang(p)
        if kind:
            out.append(Candidate(display_name(rel), p, kind))
    return out


def _relative_to(p: Path, base: Path, default: str) -> str:
    try:
        return p.relative_to(base).as_posix()
    except ValueError:
        return default
