"""``python -m gpulint``.

``-m`` puts the current directory first on sys.path, so from inside a scanned
repository its ``yaml.py`` or ``libcst/`` would be imported (and run) in
place of the real packages. gpulint never runs repository code: that entry
is dropped before anything else is imported, unless gpulint itself was
imported from there (a source checkout of gpulint).
"""
import os
import sys

if sys.path and os.path.realpath(sys.path[0] or os.curdir) == os.path.realpath(os.curdir):
    _here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    if os.path.realpath(sys.path[0] or os.curdir) != _here:
        del sys.path[0]

from gpulint.cli.main import main  # noqa: E402

sys.exit(main())
