"""``--diff-base REF``: only the findings a change introduces.

The tree at the merge base of REF and HEAD is checked out into a temporary
git worktree (the repository's own objects, no network), scanned with the
same configuration and options, and removed again. A finding is new when its
fingerprint is absent there; fingerprints are built from the file, the rule
and the judged symbol, never from line numbers, so code that merely moved is
not new.
"""
from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Iterator

from gpulint.core.config import Config


class DiffBaseError(Exception):
    """The merge base cannot be found or checked out (exit code 2)."""


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True, timeout=300)
    except FileNotFoundError:
        raise DiffBaseError("--diff-base needs git, which is not installed") from None
    except subprocess.SubprocessError as exc:
        raise DiffBaseError(f"git {' '.join(args)} failed: {exc}") from None


def _first_line(text: str) -> str:
    lines = [l.strip() for l in (text or "").splitlines() if l.strip()]
    return lines[0] if lines else "no message"


def repo_top(start: Path) -> Path:
    here = start if start.is_dir() else start.parent
    while not here.exists():
        here = here.parent
    top = _git(here, "rev-parse", "--show-toplevel")
    if top.returncode != 0:
        raise DiffBaseError(f"--diff-base needs a git repository, and {start} is not in one")
    return Path(top.stdout.strip()).resolve()


def merge_base(top: Path, ref: str) -> str:
    commit = _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if commit.returncode != 0:
        raise DiffBaseError(f"--diff-base {ref}: no such commit, branch or tag in {top}"
                            " (in CI, fetch it first: actions/checkout with fetch-depth: 0, or git fetch origin main)")
    base = _git(top, "merge-base", commit.stdout.strip(), "HEAD")
    if base.returncode != 0:
        raise DiffBaseError(f"--diff-base {ref}: no merge base with HEAD ({_first_line(base.stderr) if base.stderr.strip() else 'unrelated histories, or a shallow clone'});"
                            " in CI fetch the history: actions/checkout with fetch-depth: 0")
    return base.stdout.strip()


@contextlib.contextmanager
def worktree(top: Path, commit: str) -> Iterator[Path]:
    """A detached worktree of `commit`, removed (and pruned) afterwards whatever happens."""
    tmp = Path(tempfile.mkdtemp(prefix="gpulint-base-"))
    tree = tmp / "tree"
    add = _git(top, "worktree", "add", "--detach", "--quiet", str(tree), commit)
    if add.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise DiffBaseError(f"--diff-base: cannot check out {commit[:12]} into a temporary worktree: {_first_line(add.stderr)}")
    try:
        yield tree
    finally:
        _git(top, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(tmp, ignore_errors=True)
        _git(top, "worktree", "prune")


def map_path(p: Path, top: Path, tree: Path) -> Path:
    """A path of the working tree, as the same path in the base worktree."""
    rp = p.resolve()
    try:
        return tree / rp.relative_to(top)
    except ValueError:
        raise DiffBaseError(f"--diff-base: {p} is outside the repository {top}") from None


def map_config(cfg: Config, top: Path, tree: Path) -> Config:
    """The same configuration, with its folder (the base for globs and the project root) moved into the base tree."""
    changes = {}
    for key in ("path", "root"):
        value = getattr(cfg, key)
        if value is None:
            continue
        try:
            changes[key] = tree / Path(value).resolve().relative_to(top)
        except ValueError:
            pass  # a configuration outside the repository stays where it is
    return replace(cfg, **changes) if changes else cfg
