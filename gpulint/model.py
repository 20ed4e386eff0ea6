"""Deprecated alias of :mod:`gpulint.core.model`, kept for plugins written against gpulint 0.2.

The records moved to ``gpulint.core.model``; rule authors import them from
:mod:`gpulint.rulekit` (``from gpulint.rulekit import Severity, Location``), the
stable API. This alias goes away in a later release.
"""
from __future__ import annotations

import warnings

from gpulint.core.model import NO_COST, CostImpact, Fact, Finding, Fix, Location, Related, Severity

__all__ = ["NO_COST", "CostImpact", "Fact", "Finding", "Fix", "Location", "Related", "Severity"]

warnings.warn("gpulint.model is deprecated: import from gpulint.rulekit (or gpulint.core.model)",
              DeprecationWarning, stacklevel=2)
