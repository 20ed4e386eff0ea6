"""The per-file result cache: a warm scan re-reads only the files that changed.

What is cached is what `gpulint.run.engine.analyze_file` returns for one file (its
facts, file-level findings and suppressions): a pure function of the file's
bytes, its kind, whether a launcher forced it past the text gate, the
configuration, the enabled rules and gpulint's own code. Linking, workload
resolution and workload rules rerun from the (cached) facts whenever any file
changed, so the catalogue and the cross-file verdicts are never stale.

Beside the entries, the file keeps one *scan record*: the last scan's whole
result, under a key of everything it depends on (the settings below, every
enabled rule, the request, the baseline's bytes, and every discovered file's
path, kind and bytes; `gpulint.run.engine.Scanner._scan_key`). A rerun whose key
is equal returns it without unpickling a single entry: the warm scan of an
unchanged tree costs discovery and one hash per file. A result with a crash, a
timeout or a traceback in it is never recorded.

An entry is used only when all of that is unchanged:

* the *settings* fingerprint: gpulint's version, the size and modification
  time of every module and data file of gpulint and of each loaded plugin (an
  edited rule or price table invalidates everything, also in a development
  checkout whose version did not move), the canonical form of the
  configuration and the enabled rule codes;
* the *content* digest of the file's bytes (BLAKE2b), with its kind and the
  force flag. Modification times of scanned files are not trusted: a checkout
  or a `git stash` keeps them or not at random.

Layout, as ruff and pytest keep theirs: ``.gpulint_cache/`` at the project
root (``GPULINT_CACHE_DIR`` overrides it), holding a ``.gitignore`` of ``*``
and a ``CACHEDIR.TAG`` so that neither git nor backup tools pick it up, and
one file per scanned root under ``v<version>/``. Entries of files that no
longer exist are dropped when the file is rewritten, so it stays the size of
the tree. `gpulint clean` removes the folder.

Cache files are pickles, and a pickle can run code when it is loaded. A cache
folder is inside the repository, where anyone who can commit could plant one,
so every cache file is signed with HMAC-SHA256 under a random key kept in the
user's own cache directory (``$XDG_CACHE_HOME/gpulint/cache-key``, created
0600), and a file whose signature does not verify is ignored, never
unpickled. A cache from another machine or user is therefore simply cold.
Any problem with the cache (read-only tree, no home directory, a corrupt
file) makes the scan run without it; the cache never changes a result.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import pickle
import secrets
import shutil
import sys
import tempfile
import zlib
from dataclasses import asdict, is_dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Iterable

from gpulint import __version__
CACHE_DIR_NAME = ".gpulint_cache"
ENV_DIR = "GPULINT_CACHE_DIR"
_MAGIC = b"gpulint-cache-2\n"  # 2: entries pickled one by one, and the scan record
_TAG = ("Signature: 8a477f597d28d172789f06886806bc55\n"
        "# This file is a cache directory tag created by gpulint.\n"
        "# For information about cache directory tags see https://bford.info/cachedir/\n")
_DATA_SUFFIXES = (".py", ".yaml", ".yml", ".json")


def cache_dir(project_root: Path) -> Path:
    """Where the cache lives: ``$GPULINT_CACHE_DIR`` or ``.gpulint_cache`` at the project root."""
    env = os.environ.get(ENV_DIR)
    return Path(env).expanduser() if env else project_root / CACHE_DIR_NAME


def remove(project_root: Path) -> Path | None:
    """Delete the cache folder; the folder removed, or None when there was none."""
    d = cache_dir(project_root)
    if not d.is_dir():
        return None
    if not (d / "CACHEDIR.TAG").is_file():  # never delete a folder gpulint did not make
        raise OSError(f"{d} does not look like a gpulint cache (no CACHEDIR.TAG); not removed")
    shutil.rmtree(d)
    return d


# -- fingerprints -----------------------------------------------------------------------
def _canonical(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return _canonical(asdict(obj))
    if isinstance(obj, dict):
        return {str(k): _canonical(v) for k, v in sorted(obj.items(), key=lambda kv: str(kv[0]))}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
    if isinstance(obj, (set, frozenset)):
        return sorted((_canonical(v) for v in obj), key=repr)
    if isinstance(obj, Enum):
        return obj.value
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    return str(obj)


def _code_files(modules: Iterable[Any]) -> list[Path]:
    """The source and data files of gpulint and of each plugin module (a package: all of it)."""
    out: set[Path] = set()
    for mod in modules:
        # a plugin is a module, or an object whose class's module holds its code
        m = mod if hasattr(mod, "__file__") else sys.modules.get(type(mod).__module__)
        f = getattr(m, "__file__", None)
        if not f:
            continue
        p = Path(f)
        if p.name == "__init__.py":
            out.update(x for x in p.parent.rglob("*") if x.suffix in _DATA_SUFFIXES and "__pycache__" not in x.parts)
        else:
            out.add(p)
    return sorted(out)


def settings_fingerprint(config: Any, rule_codes: Iterable[str], plugin_modules: Iterable[Any]) -> str:
    import gpulint
    import gpulint.rules

    h = hashlib.blake2b(digest_size=20)
    h.update(f"{__version__}\n{sys.version_info[:2]}\n".encode())
    for p in _code_files([gpulint, gpulint.rules, *plugin_modules]):
        try:
            st = p.stat()
        except OSError:
            continue
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    h.update(json.dumps(_canonical(config), sort_keys=True, default=str).encode())
    h.update(",".join(sorted(rule_codes)).encode())
    return h.hexdigest()


def text_digest(data: bytes | str) -> str:
    """The digest of a file's content alone (equal for byte-identical copies at two paths)."""
    return hashlib.blake2b(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data, digest_size=16).hexdigest()


def content_digest(data: bytes | str, kind: str, force: bool) -> str:
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{kind}\0{int(force)}\0{'t' if isinstance(data, str) else 'b'}\0".encode())
    h.update(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return h.hexdigest()


# -- the signing key ------------------------------------------------------------------------
def _key_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "gpulint" / "cache-key"


def _signing_key() -> bytes | None:
    path = _key_path()
    try:
        key = path.read_bytes()
        if len(key) >= 32:
            return key
    except OSError:
        pass
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another gpulint made it a moment ago
        try:
            key = path.read_bytes()
            return key if len(key) >= 32 else None
        except OSError:
            return None
    except OSError:
        return None
    key = secrets.token_bytes(32)
    with os.fdopen(fd, "wb") as fh:
        fh.write(key)
    return key


# -- the cache of one scanned root ------------------------------------------------------------
class FileCache:
    """Per-file results of one scan root: `get` before analysing a file, `put` after, `save` at the end.

    Each entry is kept as its own pickle, unpickled only when `get` asks for it and never re-pickled when the
    file did not change: a scan that re-reads one file rewrites the others' bytes as they were. Beside the
    entries, the *scan record* (`get_scan` / `put_scan`) keeps the whole result of the last scan, under a key
    of everything that result depends on; a rerun over an unchanged tree returns it without unpickling any
    entry. Both live in one signed file."""

    def __init__(self, directory: Path, scan_root: Path, settings: str):
        self.directory = directory
        self.settings = settings
        name = hashlib.blake2b(str(scan_root).encode("utf-8", "surrogatepass"), digest_size=10).hexdigest()
        self.path = directory / f"v{__version__}" / f"{name}.cache"
        self.scan_root = scan_root
        self._key = _signing_key()
        loaded = self._load() if self._key else {}
        self._old: dict[str, tuple[str, bytes]] = loaded.get("entries", {})
        self._scan: tuple[str, bytes] | None = loaded.get("scan")
        self._new: dict[str, tuple[str, bytes | Any]] = {}
        self._new_scan: tuple[str, bytes] | None = None
        self.hits = self.misses = 0
        self.scan_reused = False  # set by the scanner when the scan record answered the whole scan

    @property
    def usable(self) -> bool:
        return self._key is not None

    def get(self, rel: str, digest: str) -> Any | None:
        entry = self._old.get(rel)
        if entry is not None and entry[0] == digest:
            try:
                result = pickle.loads(entry[1])
            except Exception:  # an entry written by other code (same key, other gpulint): analysed again
                result = None
            if result is not None:
                self.hits += 1
                self._new[rel] = entry
                return result
        self.misses += 1
        return None

    def put(self, rel: str, digest: str, result: Any) -> None:
        self._new[rel] = (digest, result)

    def get_scan(self, key: str) -> Any | None:
        """The whole result the last scan stored under `key`, or None."""
        if self._scan is None or self._scan[0] != key:
            return None
        try:
            return pickle.loads(self._scan[1])
        except Exception:
            return None

    def put_scan(self, key: str, result: Any) -> None:
        try:
            self._new_scan = (key, pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        except (pickle.PicklingError, TypeError, AttributeError, RecursionError):
            self._new_scan = None

    def save(self) -> None:
        """Write the entries of this scan, plus earlier ones of files this scan did not look at
        that still exist (a scan of a few paths keeps the rest of the tree warm). Entries are
        let go of afterwards: the scan keeps its own results."""
        try:
            self._write()
        finally:
            self._old, self._new, self._new_scan = {}, {}, None

    def _write(self) -> None:
        if not self.usable:
            return
        unchanged = self.misses == 0 and set(self._new) == set(self._old)
        if unchanged and (self._new_scan is None or self._new_scan == self._scan):
            return
        entries: dict[str, tuple[str, bytes]] = {}
        try:
            for rel, (digest, result) in self._new.items():
                entries[rel] = (digest, result if isinstance(result, bytes) else pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
            for rel, entry in self._old.items():
                if rel not in entries and (self.scan_root / rel).exists():
                    entries[rel] = entry
            body: dict[str, Any] = {"entries": entries}
            if self._new_scan is not None:
                body["scan"] = self._new_scan
            payload = zlib.compress(pickle.dumps((self.settings, body), protocol=pickle.HIGHEST_PROTOCOL), 1)
            sig = hmac.new(self._key, payload, hashlib.sha256).digest()
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._mark(self.directory)
            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(_MAGIC + sig + payload)
            os.replace(tmp, self.path)
        except (OSError, pickle.PicklingError, TypeError, AttributeError, RecursionError):
            try:
                os.unlink(tmp)  # type: ignore[possibly-undefined]
            except (OSError, NameError, UnboundLocalError):
                pass

    def _load(self) -> dict[str, Any]:
        try:
            raw = self.path.read_bytes()
        except OSError:
            return {}
        if not raw.startswith(_MAGIC):
            return {}
        sig, payload = raw[len(_MAGIC):len(_MAGIC) + 32], raw[len(_MAGIC) + 32:]
        if not hmac.compare_digest(sig, hmac.new(self._key, payload, hashlib.sha256).digest()):
            return {}  # not written by this user's gpulint: never unpickled
        try:
            settings, body = pickle.loads(zlib.decompress(payload))
        except Exception:  # a cache written by other code (same key, other gpulint): cold
            return {}
        if settings != self.settings or not isinstance(body, dict) or not isinstance(body.get("entries"), dict):
            return {}
        return body

    @staticmethod
    def _mark(directory: Path) -> None:
        if not (directory / ".gitignore").exists():
            (directory / ".gitignore").write_text("# Created by gpulint automatically.\n*\n", encoding="utf-8")
        if not (directory / "CACHEDIR.TAG").exists():
            (directory / "CACHEDIR.TAG").write_text(_TAG, encoding="utf-8")
