import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


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
