"""The price overlay: prices a user imported from a price list they downloaded.

``gpulint catalogue import FILE`` (``gpulint.pricing.price_import``) writes it; every scan
reads it, offline: gpulint never fetches prices itself.  It is found at
``[tool.gpulint.pricing] overlay`` (a path relative to the configuration's
directory) or, by default, at ``.gpulint-prices.json`` in the directory of the
configuration (the scanned directory when there is none), so a team commits it
next to ``pyproject.toml`` and everyone's scan prices the same way.

The file is JSON, validated against ``schemas/price-overlay.schema.json``; each
row carries its date and source, and rows replace the bundled prices of the
instances they name (``Catalogue.load(overlay=...)``).
"""
from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["OVERLAY_NAME", "OverlayError", "empty_overlay", "merge", "overlay_path", "read_overlay", "validate", "write_overlay"]

OVERLAY_NAME = ".gpulint-prices.json"


class OverlayError(ValueError):
    """The overlay file cannot be used; the message names the file and the problem."""


def overlay_path(root: Path | None, pricing: Mapping | None) -> Path:
    """Where the overlay of a project lives: ``pricing.overlay`` relative to ``root``, else ``root/.gpulint-prices.json``."""
    base = Path(root) if root else Path.cwd()
    configured = (pricing or {}).get("overlay")
    if isinstance(configured, str) and configured.strip():
        p = Path(configured).expanduser()
        return p if p.is_absolute() else base / p
    return base / OVERLAY_NAME


@lru_cache(maxsize=1)
def _validator():
    import jsonschema
    from referencing import Registry, Resource

    def load(name: str) -> dict:
        return json.loads(resources.files("gpulint").joinpath("schemas", name).read_text("utf-8"))

    overlay, catalogue = load("price-overlay.schema.json"), load("catalogue.schema.json")
    registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in (overlay, catalogue)])
    return jsonschema.Draft202012Validator(overlay, registry=registry)


def validate(data: Any, where: str) -> None:
    """Raise OverlayError naming the first schema problem of ``data`` (read from ``where``)."""
    errors = sorted(_validator().iter_errors(data), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        err = errors[0]
        path = ".".join(str(p) for p in err.absolute_path) or "(top level)"
        raise OverlayError(f"{where}: {path}: {err.message}")


def read_overlay(path: Path) -> dict:
    """The validated overlay at ``path`` with ``path`` recorded in it; OverlayError when it is unusable."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise OverlayError(f"{path}: cannot read the price overlay: {exc}") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise OverlayError(f"{path}: the price overlay is not valid JSON: {exc}") from None
    validate(data, str(path))
    return {**data, "path": str(path)}


def empty_overlay() -> dict:
    return {"format": "gpulint-price-overlay", "version": 1, "imports": [], "prices": [], "commitments": []}


def merge(existing: Mapping | None, imported: Mapping, prices: Iterable[Mapping], commitments: Iterable[Mapping],
          today: _dt.date, sagemaker: Iterable[Mapping] = ()) -> dict:
    """``existing`` updated by one import: a new price row replaces the row of the same provider and instance,
    a new commitment row the one of the same provider, instance, term and plan, a new SageMaker row the one of the
    same ml.* instance and use; every other row is kept."""
    out = empty_overlay()
    base = dict(existing or {})
    new_prices = list(prices)
    new_commits = list(commitments)
    replaced = {(r["provider"], r["instance"]) for r in new_prices}
    out["prices"] = [r for r in base.get("prices", []) if (r["provider"], r["instance"]) not in replaced] + new_prices

    def ckey(r: Mapping) -> tuple:
        return (r["provider"], r.get("instance"), r.get("family"), r["term"], r["plan"])

    creplaced = {ckey(r) for r in new_commits}
    out["commitments"] = [r for r in base.get("commitments", []) if ckey(r) not in creplaced] + new_commits
    new_sm = list(sagemaker)
    sm_replaced = {(r["instance"], r["use"]) for r in new_sm}
    kept_sm = [r for r in base.get("sagemaker", []) if (r["instance"], r["use"]) not in sm_replaced] + new_sm
    if kept_sm:  # absent, not empty, in overlays that never imported a SageMaker list (older readers accept them)
        out["sagemaker"] = sorted(kept_sm, key=lambda r: (r["instance"], r["use"]))
    out["imports"] = list(base.get("imports", [])) + [dict(imported)]
    out["prices"].sort(key=lambda r: (r["provider"], r["instance"]))
    out["commitments"].sort(key=lambda r: (r["provider"], r.get("instance") or "", r["term"], r["plan"]))
    out["written"] = today.isoformat()
    return out


def write_overlay(path: Path, data: Mapping) -> None:
    """Validate ``data`` and write it to ``path`` (parent directories must exist), atomically."""
    clean = {k: v for k, v in data.items() if k != "path"}
    validate(clean, str(path))
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(clean, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)
