"""Which files are the repository's own workloads, and which are only context.

Test code (``tests/``, ``test_*.py``, ``*_test.py``, ``conftest.py``,
``testing/``, ``test_utils/`` ...) and vendored copies (``third_party/``,
``vendor/``, ``external/``, ``dependencies/``, ``submodules/`` ...) are read like every other file, so their facts
and imports still inform the workloads that use them, but by default they are
never workloads of their own and no finding is reported in them: a platform
team does not rent GPUs for a unit test or for a copy of someone else's
example. ``include-tests`` / ``include-vendored`` in the configuration bring
them back; ``extend-exclude`` adds globs to what is skipped entirely.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass

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


def vendored_reason(path: str) -> str | None:
    for d in path.split("/")[:-1]:
        if d.lower() in VENDOR_DIRS:
            return f"vendored code ({d}/)"
    return None


@dataclass(frozen=True)
class Scope:
    include_tests: bool = False
    include_vendored: bool = False

    def outside(self, path: str) -> str | None:
        """Why ``path`` is context only (not a workload, not reported), or None when it is in scope."""
        path = posixpath.normpath(path)
        if not self.include_tests:
            why = test_reason(path)
            if why:
                return why
        if not self.include_vendored:
            return vendored_reason(path)
        return None

    @classmethod
    def of(cls, config) -> "Scope":
        return cls(config.include_tests, config.include_vendored)
