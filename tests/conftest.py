import os
import sys
from pathlib import Path

import pytest

try:  # property tests: a small search in CI, a long one with `pytest --hypothesis-profile=long`
    from hypothesis import HealthCheck, settings

    _quiet = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]
    settings.register_profile("ci", max_examples=40, deadline=None, suppress_health_check=_quiet, derandomize=True)
    settings.register_profile("long", max_examples=3000, deadline=None, suppress_health_check=_quiet)
    settings.load_profile("ci")
except ImportError:  # hypothesis is a test extra; test_properties.py says so when it is missing
    pass

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


@pytest.fixture(autouse=True)
def _own_result_cache(tmp_path_factory, monkeypatch):
    """Every test starts cold with a cache folder of its own (scans within one test share it):
    no result leaks from one test to another, and none is written into fixtures/."""
    monkeypatch.setenv("GPULINT_CACHE_DIR", str(tmp_path_factory.mktemp("gpulint-cache")))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "xdg-cache"))  # the signing key
    monkeypatch.setenv("GPULINT_NO_PROGRESS", "1")


@pytest.fixture(scope="session")
def host():
    from gpulint.testing import default_host

    return default_host()


def run_cli(*args, cwd=None, input_text=None, env=None):
    """Run the installed CLI as a user would, in a subprocess."""
    import subprocess

    full_env = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "gpulint", *map(str, args)], cwd=cwd, input=input_text,
                          capture_output=True, text=True, env=full_env, timeout=300)


def read_all(fd: int) -> bytes:
    """Everything a pseudo-terminal's master end yields until the child closes it."""
    chunks = []
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO: the child side is closed
            break
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks)


def assert_amp_or_tutorial(result, wl: dict, severity: str | None, tutorial: str) -> None:
    """AMP001 at `severity`; or, for None, no AMP001 because the workload is tutorial-sized by `tutorial` on no
    named GPU instance, as `gpulint workloads` states (resolved.tutorial_sized)."""
    amp = [f for f in result.findings if f.code == "AMP001"]
    if severity is None:
        assert amp == [] and tutorial in (wl["resolved"].get("tutorial_sized") or ""), wl["resolved"]
    else:
        (f,) = amp
        assert f.severity.value == severity, f.message
