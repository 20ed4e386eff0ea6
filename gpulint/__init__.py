"""gpulint: audit ML training repositories for GPU spend mistakes before they run."""

import os as _os

__version__ = "0.2.0"

# In a source checkout the built-in rule packs live in the top-level rules/
# folder and are mapped to gpulint.rules by the packaging (the wheel ships them
# inside gpulint/). When gpulint is imported straight from the checkout (the
# current directory comes first on sys.path, e.g. `python -m pytest`), the
# packaging map is bypassed, so make the same mapping here.
_here = _os.path.dirname(_os.path.abspath(__file__))
_top = _os.path.dirname(_here)
if not _os.path.isdir(_os.path.join(_here, "rules")) and _os.path.isfile(_os.path.join(_top, "rules", "__init__.py")):
    __path__.append(_top)  # type: ignore[name-defined]
