"""What a rule may consult besides the facts it is given."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from gpulint.config import Config
from gpulint.sources import Source
from gpulint.workloads import Repo


@dataclass
class FileContext:
    config: Config
    source: Source


@dataclass
class WorkloadContext:
    config: Config
    repo: Repo
    catalogue_additions: list = field(default_factory=list)

    @cached_property
    def catalogue(self) -> Any:
        """The instance catalogue with the user's additions and price overrides."""
        from gpulint.catalogue import Catalogue

        return Catalogue.load(additions=list(self.catalogue_additions) + list(self.config.instances), pricing=self.config.pricing,
                              overlay=self.config.price_overlay)
