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

import os
import posixpath
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

    for dirpath, dirnames, filenames in os.walk(root, onerror=unreadable):  # symlinked folders are not entered
        here = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not _skip_dir(d, here / d) and not os.path.islink(here / d))
        for f in filenames:
            out.append((here / f).relative_to(root).as_posix())
    return sorted(out)


#: extensions batch schedulers' job scripts go by besides .sh/.slurm/.sbatch (Slurm .slrm, HTCondor/PBS .sub, .job,
#: .pbs, LSF .lsf/.bsub): read as shell when their first line is a shell's shebang, as sbatch and qsub require
JOB_SCRIPT_EXTENSIONS = frozenset({"slrm", "sub", "job", "batch", "pbs", "qsub", "lsf", "bsub"})


class Classifier:
    def __init__(self, kinds):
        self.kinds = sorted(kinds, key=lambda k: -k.priority)

    def kind_of(self, path: Path) -> str | None:
        name = path.name
        for k in self.kinds:
            if k.claims(name):
                return k.name
        ext = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if ("." not in name or ext in JOB_SCRIPT_EXTENSIONS) and any(k.shebang for k in self.kinds):
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
    for rel in names:
        p = root / rel
        if spec is not None:
            try:
                rel_to_cfg = p.relative_to(base).as_posix()
            except ValueError:
                rel_to_cfg = rel
            if spec.match_file(rel_to_cfg):
                continue
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
        kind = classifier.kind_of(p)
        if kind:
            out.append(Candidate(display_name(rel), p, kind))
    return out
