"""Which files are the repository's own workloads, and which are only context.

Test code (``tests/``, ``test_*.py``, ``*_test.py``, ``conftest.py``,
``testing/``, ``test_utils/`` ...) and vendored copies (``third_party/``,
``vendor/``, ``external/``, ``dependencies/``, ``submodules/`` ..., and a folder whose own setup.py or
pyproject.toml declares a known library: a fork carried in the repository) are read like every other file, so their facts
and imports still inform the workloads that use them, but by default they are
never workloads of their own and no finding is reported in them: a platform
team does not rent GPUs for a unit test or for a copy of someone else's
example. ``include-tests`` / ``include-vendored`` in the configuration bring
them back; ``extend-exclude`` adds globs to what is skipped entirely.
Code under a folder its repository names as retired (``archived/``, ``legacy/``,
``deprecated/``, ``retired_benchmarks/``) stays in scope, with its findings at info.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import Path

TEST_DIRS = frozenset({"tests", "test", "testing", "test_utils", "testutils", "test_helpers", "__tests__", "unittests",
                       "unit_tests", "integration_tests", "functional_tests", "e2e_tests", "tests_integration",
                       "testdata"})  # Go's convention: inputs of a package's tests, invalid files included
VENDOR_DIRS = frozenset({"third_party", "third-party", "thirdparty", "3rdparty", "vendor", "vendored", "_vendor",
                         "external", "externals", "extern", "dependencies", "deps", "submodules"})


def test_reason(path: str) -> str | None:
    parts = path.split("/")
    for d in parts[:-1]:
        if d.lower() in TEST_DIRS:
            return f"under a test folder ({d}/)"
    name = parts[-1]
    stem = name.rsplit(".", 1)[0]
    if name == "conftest.py" or stem.startswith("test_") or stem.endswith("_test") or stem in ("tests", "test"):
        return f"a test module ({name})"
    return None


#: folders a repository names as no longer run: ``archived/`` notebooks, ``legacy/`` trainers, MLPerf's
#: ``retired_benchmarks/`` and ``never-adopted/``. Findings there are advice (info): the repository says itself
#: that nobody rents a GPU for this code any more, and its fixes would land in code nobody maintains
RETIRED_DIRS = frozenset({"archive", "archived", "archives", "deprecated", "legacy", "obsolete", "retired", "unmaintained",
                          "never-adopted", "never_adopted", "attic"})
_RETIRED_PREFIX = re.compile(r"^(retired|deprecated|archived|legacy)[-_]", re.I)


def retired_reason(path: str) -> str | None:
    """Why ``path`` is code its repository marks as retired (a folder so named), or None."""
    for d in path.split("/")[:-1]:
        if d.lower() in RETIRED_DIRS or _RETIRED_PREFIX.match(d):
            return f"{d}/ marks it as retired"
    return None


def vendored_reason(path: str) -> str | None:
    for d in path.split("/")[:-1]:
        if d.lower() in VENDOR_DIRS:
            return f"vendored code ({d}/)"
    return None


#: libraries repositories copy into a folder of their own (a fork to patch, an old release to pin): a nested
#: package manifest that declares one of these names is that library's code, not the repository's workloads
KNOWN_LIBRARIES = frozenset({
    "transformers", "diffusers", "accelerate", "peft", "trl", "deepspeed", "torch", "torchvision", "torchaudio",
    "fairseq", "timm", "mmcv", "mmdet", "mmengine", "mmsegmentation", "detectron2", "apex", "megatron-core",
    "lightning", "pytorch-lightning", "datasets", "tokenizers", "vllm", "flash-attn", "xformers", "bitsandbytes",
    "open-clip-torch", "ultralytics", "sentence-transformers", "jax", "flax", "keras", "tensorflow", "triton",
    "nemo-toolkit", "colossalai", "fschat", "lm-eval", "evaluate", "optimum", "auto-gptq", "autoawq", "sglang",
    "text-generation", "ray", "horovod", "fairscale", "torchtune", "torchtitan", "litgpt", "axolotl", "llama-recipes",
})
_MANIFESTS = ("setup.py", "pyproject.toml", "setup.cfg")
_NAME_IN_SETUP = re.compile(r"""\bname\s*=\s*["']([A-Za-z0-9_.\-]+)["']""")
_NAME_IN_CONFIG = re.compile(r"""^\s*name\s*=\s*["']?([A-Za-z0-9_.\-]+)""", re.M)


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def vendored_libraries(root: Path, files: list[str]) -> tuple[tuple[str, str], ...]:
    """(folder, library) for each folder below the root whose own package manifest declares a known library the
    root's manifest does not (``examples/NLU/setup.py`` with ``name="transformers"``: a fork of transformers 4.4
    carried inside the repository). The manifests are read as text, never run."""
    def declared(rel: str) -> str | None:
        try:
            with open(root / rel, "rb") as fh:
                text = fh.read(200_000).decode("utf-8", "replace")
        except OSError:
            return None
        m = (_NAME_IN_SETUP if rel.endswith(".py") else _NAME_IN_CONFIG).search(text)
        return _normalized(m.group(1)) if m else None

    # every folder that holds a scanned file, and their parents: the same answer for a whole-tree scan and for a
    # pre-commit run on a few changed files
    folders: set[str] = set()
    for f in files:
        d = posixpath.dirname(f)
        while d and d not in folders:
            folders.add(d)
            d = posixpath.dirname(d)
    own = {declared(m) for m in _MANIFESTS if (root / m).is_file()}
    out = []
    for folder in folders:
        for m in _MANIFESTS:
            if (root / folder / m).is_file():
                name = declared(f"{folder}/{m}")
                if name in KNOWN_LIBRARIES and name not in own:
                    out.append((folder, name))
                break
    return tuple(sorted(set(out)))


@dataclass(frozen=True)
class Scope:
    include_tests: bool = False
    include_vendored: bool = False
    #: folders holding a copy of a known library (vendored_libraries), with its name
    libraries: tuple[tuple[str, str], ...] = ()

    def outside(self, path: str) -> str | None:
        """Why ``path`` is context only (not a workload, not reported), or None when it is in scope."""
        path = posixpath.normpath(path)
        if not self.include_tests:
            why = test_reason(path)
            if why:
                return why
        if not self.include_vendored:
            for folder, name in self.libraries:
                if path.startswith(folder + "/"):
                    return f"vendored code (a copy of {name}: {folder}/ declares it)"
            return vendored_reason(path)
        return None

    @classmethod
    def of(cls, config, root: Path | None = None, files: list[str] | None = None) -> "Scope":
        libraries = vendored_libraries(root, files) if root is not None and files and not config.include_vendored else ()
        return cls(config.include_tests, config.include_vendored, libraries)
