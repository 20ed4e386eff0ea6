"""The README's copy-and-paste snippets stay true to the package they document."""
from __future__ import annotations

import re

import gpulint
from conftest import ROOT


def test_readme_pins_the_action_the_install_and_the_hook_at_the_package_version():
    """Issue 50: the README pinned the Action and the pre-commit hook at v0.1.0 while the package was 0.2.0."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    pins = re.findall(r"gpulint@v(\S+?)[\"'\s]", readme) + re.findall(r"^\s*rev:\s*v(\S+)", readme, re.M)
    assert len(pins) >= 3, pins  # the Action's `uses:`, the pip install from git, the pre-commit `rev:`
    assert set(pins) == {gpulint.__version__}, pins
