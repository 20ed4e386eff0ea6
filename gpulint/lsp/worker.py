"""One background thread that runs scans, debounced, the latest request winning.

The event loop only hands over a snapshot (the text of every open document)
and returns at once, so the editor is never blocked by a scan. While a scan
runs, newer snapshots replace each other; only the newest is scanned next,
and the result of a scan that was overtaken by a newer snapshot is dropped
(it describes text the editor no longer shows).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable, Generic, TypeVar

log = logging.getLogger(__name__)

S = TypeVar("S")
R = TypeVar("R")


class LatestWins(Generic[S, R]):
    def __init__(self, scan: Callable[[S], R], deliver: Callable[[S, R], None], name: str = "gpulint-scan"):
        self._scan = scan
        self._deliver = deliver
        self._cond = threading.Condition()
        self._pending: S | None = None
        self._has_pending = False
        self._due = 0.0
        self._stopped = False
        self._busy = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, snapshot: S, delay: float = 0.0) -> None:
        """Ask for a scan of `snapshot` after `delay` seconds without newer requests."""
        with self._cond:
            self._pending = snapshot
            self._has_pending = True
            self._due = time.monotonic() + max(0.0, delay)
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def idle(self) -> bool:
        with self._cond:
            return not self._busy and not self._has_pending

    def _next(self) -> tuple[bool, S | None]:
        with self._cond:
            while True:
                if self._stopped:
                    return False, None
                if self._has_pending:
                    wait = self._due - time.monotonic()
                    if wait <= 0:
                        snap = self._pending
                        self._pending, self._has_pending, self._busy = None, False, True
                        return True, snap
                    self._cond.wait(wait)
                else:
                    self._cond.wait()

    def _run(self) -> None:
        while True:
            ok, snap = self._next()
            if not ok:
                return
            try:
                result = self._scan(snap)  # type: ignore[arg-type]
                with self._cond:
                    overtaken = self._has_pending
                if not overtaken:
                    self._deliver(snap, result)  # type: ignore[arg-type]
            except Exception:  # the server must outlive any scan
                log.exception("scan failed")
            finally:
                with self._cond:
                    self._busy = False
