"""What a rule may consult besides the facts it is given.

``WorkloadContext`` is built once per scan, after linking and resolution: the
configuration, every file's facts, the catalogue, every compute target resolved
(``computes``), the workloads and the pairings the linker could not decide.
Rules read these; they never link or resolve anything themselves.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gpulint.core.config import Config
from gpulint.core.sources import Source
from gpulint.link.workloads import Ambiguity, Repo, Workload

if TYPE_CHECKING:  # pragma: no cover
    from gpulint.resolve.results import ResolvedCompute


@dataclass
class FileContext:
    config: Config
    source: Source


@dataclass
class WorkloadContext:
    config: Config
    repo: Repo
    catalogue_additions: list = field(default_factory=list)
    #: every compute target of the repository, resolved, by id ("path#target")
    computes: dict[str, "ResolvedCompute"] = field(default_factory=dict)
    workloads: list[Workload] = field(default_factory=list)
    ambiguities: list[Ambiguity] = field(default_factory=list)
    _users: dict[str, list[Workload]] | None = field(default=None, init=False, repr=False, compare=False)

    @cached_property
    def catalogue(self) -> Any:
        """The instance catalogue with the user's additions and price overrides."""
        from gpulint.pricing.catalogue import Catalogue

        return Catalogue.load(additions=list(self.catalogue_additions) + list(self.config.instances), pricing=self.config.pricing,
                              overlay=self.config.price_overlay)

    def workload_on(self, compute_id: str) -> Workload | None:
        """The workload that runs on a compute target, if one does."""
        for wl in self.workloads:
            if wl.compute is not None and wl.compute.id == compute_id:
                return wl
        return None

    def users_of(self, compute_id: str) -> list[Workload]:
        """The resolved workloads that run on a compute target: as their own compute or a job's, or on capacity one
        of their jobs is placed on (in turn), in workload order. Indexed on first use, once resolution is done: a
        rule asking per target used to scan every workload each time (quadratic on a file of thousands of groups)."""
        if self._users is None:
            index: dict[str, list[Workload]] = {}
            for wl in self.workloads:
                if wl.resolution is None:
                    continue
                ids = {c.id for c in wl.resolution.job_computes} | {p for c in wl.resolution.job_computes for p in c.placed_via}
                for cid in ids:
                    index.setdefault(cid, []).append(wl)
            self._users = index
        return list(self._users.get(compute_id, ()))
