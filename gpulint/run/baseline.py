"""Fingerprints and baselines.

A fingerprint is built from the file, the rule and the judged symbol or key
(plus an occurrence number among identical ones), never from line numbers, so
it survives inserting lines above a finding.
"""
from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

from gpulint.core.model import Finding


class BaselineError(Exception):
    pass


def assign_fingerprints(findings: list[Finding]) -> list[Finding]:
    seen: Counter = Counter()
    out = []
    for f in sorted(findings, key=lambda f: f.sort_key()):
        ident = f.symbol or _normalise(f.message)
        key = (f.loc.path, f.code, ident)
        seen[key] += 1
        raw = "\x1f".join([f.loc.path, f.code, ident, str(seen[key])])
        out.append(f.with_(fingerprint=hashlib.sha256(raw.encode("utf-8")).hexdigest()[:20]))
    return out


def _normalise(message: str) -> str:
    import re

    return re.sub(r"\d+(\.\d+)?", "#", message)


def write_baseline(path: Path, findings: list[Finding]) -> None:
    data = {
        "gpulint_baseline": 1,
        "findings": [{"fingerprint": f.fingerprint, "code": f.code, "path": f.loc.path, "message": f.message} for f in findings],
    }
    path.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")


def read_baseline(path: Path) -> set[str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(f"{path}: baseline file not found") from None
    except (OSError, ValueError) as exc:
        raise BaselineError(f"{path}: not a gpulint baseline ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("findings"), list):
        raise BaselineError(f"{path}: not a gpulint baseline (no 'findings' list)")
    return {str(item.get("fingerprint")) for item in data["findings"] if isinstance(item, dict)}
