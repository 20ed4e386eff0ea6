"""Per-file work in supervised worker processes.

A native parser can crash (libcst's Rust parser overflows its stack on deep
nesting), stall, or allocate gigabytes on one hostile file. None of that may
cost the rest of the scan, so per-file work runs in worker processes that the
scan supervises: each worker is given one file at a time with a deadline;
a worker that dies, or is still busy at the deadline, is killed and replaced,
and its file becomes a ``failed(job, why)`` result (a SYS001 finding). The
other files' results are the same as in an undisturbed scan.

The unit of work is a pure function ``work(job) -> result`` over picklable
values (file bytes and configuration in, facts and findings out), so results
can be cached by content and computed in any process. ``--jobs 1`` is one
supervised worker, not an in-process call: isolation does not depend on how
many workers run.

Workers start by ``fork`` where that is safe (Linux, one thread: the CLI), so
a worker costs a few milliseconds and inherits the loaded plugins; otherwise
(threads, as in the language server, or no ``fork``) by ``forkserver`` or
``spawn``, and ``init`` rebuilds what a worker needs from picklable arguments.
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator


@dataclass(frozen=True)
class Budget:
    """Limits of one file's work in a worker."""

    timeout: float = 20.0  # seconds of CPU time per file (wall-clock time where the OS does not tell)
    stall_factor: float = 5.0  # a worker still busy after this many timeouts of wall-clock time is stalled
    memory_mb: int = 1024  # address space a worker may map beyond its start (Linux: RLIMIT_AS); 0 = no limit
    recycle_mb: int = 200  # a worker whose resident memory grew past this is replaced after its file


# -- the worker side -----------------------------------------------------------------------
_STATE: dict[str, Any] = {}


def _worker_main(conn, init: Callable[..., Any] | None, init_args: tuple, work: Callable[[Any], Any], budget: Budget) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the supervisor decides when a scan stops
    try:
        import faulthandler

        faulthandler.disable()  # a crash is reported as the file's SYS001, not as a dump on the user's terminal
    except (ImportError, RuntimeError):
        pass
    _limit_memory(budget.memory_mb)
    try:
        if init is not None:
            init(*init_args)
        while True:
            try:
                job = conn.recv()
            except (EOFError, OSError):
                return
            if job is None:
                return
            result = work(job)
            # memory a parse left behind (fragmented arenas) is returned by replacing the worker
            recycle = bool(budget.recycle_mb) and _statm_mb(1) > budget.recycle_mb
            try:
                conn.send(("ok", result, recycle))
            except Exception as exc:  # a result that does not pickle is a bug, not a crash
                conn.send(("error", f"{type(exc).__name__}: {exc}", recycle))
            if recycle:
                return
    except (EOFError, OSError, BrokenPipeError):
        return


def _limit_memory(mb: int) -> None:
    """At most `mb` more address space than the worker maps at start (a forked
    worker starts with its parent's mappings)."""
    if not mb:
        return
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        want = int((_statm_mb(0) + mb) * 1024 * 1024)
        if hard != resource.RLIM_INFINITY:
            want = min(want, hard)
        if soft == resource.RLIM_INFINITY or soft > want:
            resource.setrlimit(resource.RLIMIT_AS, (want, hard))
    except (ImportError, ValueError, OSError, AttributeError):
        pass  # no RLIMIT_AS here (macOS, Windows): the deadline and recycling still bound a worker


def _statm_mb(field: int) -> float:
    """Field of /proc/self/statm in MB: 0 = address space, 1 = resident (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            pages = int(fh.read().split()[field])
        return pages * os.sysconf("SC_PAGE_SIZE") / (1024 * 1024)
    except (OSError, ValueError, IndexError, AttributeError):
        return 0.0


# -- the supervisor side -------------------------------------------------------------------
def start_method() -> str:
    """``fork`` when it is safe and cheap, else ``forkserver`` or ``spawn``."""
    import multiprocessing as mp

    methods = mp.get_all_start_methods()
    if "fork" in methods and sys.platform.startswith("linux") and threading.active_count() == 1:
        return "fork"
    if "forkserver" in methods:
        return "forkserver"
    return "spawn"


class _Worker:
    def __init__(self, ctx, init, init_args, work, budget: Budget):
        parent, child = ctx.Pipe(duplex=True)
        self.conn = parent
        self.proc = ctx.Process(target=_worker_main, args=(child, init, init_args, work, budget), daemon=True)
        self.proc.start()
        child.close()
        self.job: Any = None
        self.started = 0.0
        self.cpu0: float | None = None

    def give(self, job: Any) -> None:
        self.job = job
        self.started = time.monotonic()
        self.cpu0 = self.cpu_seconds()
        self.conn.send(job)

    def cpu_seconds(self) -> float | None:
        """CPU time the worker has used (Linux /proc), or None where it cannot be read."""
        try:
            with open(f"/proc/{self.proc.pid}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError, AttributeError):
            return None

    def overrun(self, budget: "Budget", now: float) -> str | None:
        """Why this worker's file is past its budget, or None. CPU time is the
        budget (a machine shared with other work slows the wall clock, not the
        file); wall-clock time catches a worker that is stuck without using CPU."""
        wall = now - self.started
        cpu = self.cpu_seconds()
        if cpu is not None and self.cpu0 is not None:
            if cpu - self.cpu0 >= budget.timeout:
                return f"parsing took longer than {budget.timeout:g} s of CPU time (file-timeout)"
            if wall >= budget.timeout * budget.stall_factor:
                return f"parsing did not finish in {budget.timeout * budget.stall_factor:g} s ({budget.stall_factor:g} x file-timeout): stalled"
            return None
        if wall >= budget.timeout:
            return f"parsing took longer than {budget.timeout:g} s (file-timeout)"
        return None

    def stop(self, kill: bool = False) -> None:
        try:
            if kill:
                self.proc.kill()
            else:
                try:
                    self.conn.send(None)
                except (OSError, ValueError):
                    pass
                self.proc.join(1.0)
                if self.proc.is_alive():
                    self.proc.kill()
            self.proc.join(5.0)
        finally:
            self.conn.close()


def crash_reason(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        why = {"SIGSEGV": "a segmentation fault, usually a stack overflow on deeply nested input",
               "SIGABRT": "an abort, often memory exhausted", "SIGKILL": "killed, often by the out-of-memory killer"}.get(name)
        return f"the parser crashed ({name}{': ' + why if why else ''})"
    return f"the parser process exited unexpectedly (exit code {exitcode})"


class WorkersUnavailable(Exception):
    """No worker process could be started; `jobs` were taken but not done."""

    def __init__(self, jobs: list, why: str):
        super().__init__(why)
        self.jobs = jobs


def run_supervised(
    jobs: Iterable[Any],
    work: Callable[[Any], Any],
    failed: Callable[[Any, str], Any],
    *,
    workers: int = 1,
    budget: Budget = Budget(),
    init: Callable[..., Any] | None = None,
    init_args: tuple = (),
    spawn_init_args: tuple | None = None,
    method: str | None = None,
) -> Iterator[Any]:
    """Yield ``work(job)`` for every job, computed in up to `workers` processes,
    in completion order. A job whose worker crashes or overruns the budget
    yields ``failed(job, reason)`` instead, and the scan goes on.

    Jobs are taken from the iterable only when a worker is free, so a caller
    that reads files lazily never holds more than one file per worker.
    ``init(*init_args)`` runs once in every worker; when workers are not
    forked, ``spawn_init_args`` (picklable) are passed instead of `init_args`.
    Raises WorkersUnavailable when no worker can be started at all.
    """
    import multiprocessing as mp
    import multiprocessing.connection

    source = iter(jobs)
    todo: deque = deque()

    def more() -> bool:
        if todo:
            return True
        for job in source:
            todo.append(job)
            return True
        return False

    if not more():
        return
    method = method or start_method()
    ctx = mp.get_context(method)
    if method == "forkserver":
        # not libcst: Python is read with ast; libcst is imported only where a file needs it (newer syntax, a plugin)
        ctx.set_forkserver_preload(["gpulint.run.engine", "gpulint.read.parsers"])
    args = init_args if method == "fork" or spawn_init_args is None else spawn_init_args
    sup = _Pool(ctx, init, args, work, budget)
    try:
        if not sup.start():
            raise WorkersUnavailable(list(todo), sup.why)
        while True:
            # one more worker only while every worker is busy and work is waiting: a scan of
            # three files (or a warm scan that re-reads one) starts one process, not one per CPU
            while not sup.idle and len(sup.all) < max(1, workers) and more():
                if not sup.start():
                    break
            while sup.idle and more():
                w = sup.idle.pop()
                job = todo.popleft()
                try:
                    w.give(job)
                except (OSError, ValueError):  # the worker died before it was given work
                    todo.appendleft(job)
                    sup.retire(w)
                    sup.start()
                    continue
                sup.busy.append(w)
            if not sup.busy:
                if more():  # work left and no worker could be (re)started
                    raise WorkersUnavailable(list(todo), sup.why)
                return
            waitables = [w.conn for w in sup.busy] + [w.proc.sentinel for w in sup.busy]
            # CPU time cannot be waited for: look at the busy workers at least every half second
            ready = set(mp.connection.wait(waitables, timeout=min(0.5, budget.timeout)))
            for w in list(sup.busy):
                if w.conn not in ready and w.proc.sentinel not in ready:
                    continue
                sup.busy.remove(w)
                job, w.job = w.job, None
                msg = _receive(w)
                if msg is None:  # the process is gone without a result: it crashed on this job
                    w.proc.join(5.0)
                    reason = crash_reason(w.proc.exitcode)
                    sup.retire(w)
                    if more():
                        sup.start()
                    yield failed(job, reason)
                    continue
                if msg[2]:  # the worker exits after this file (its memory grew past the budget)
                    sup.retire(w)
                    if more():
                        sup.start()
                else:
                    sup.idle.append(w)
                yield msg[1] if msg[0] == "ok" else failed(job, f"its result could not be returned ({msg[1]})")
            now = time.monotonic()
            for w in list(sup.busy):
                why = w.overrun(budget, now)
                if why:
                    sup.busy.remove(w)
                    job, w.job = w.job, None
                    sup.retire(w)
                    if more():
                        sup.start()
                    yield failed(job, why)
    finally:
        sup.close()


class _Pool:
    def __init__(self, ctx, init, args, work, budget: Budget):
        self.ctx, self.init, self.args, self.work, self.budget = ctx, init, args, work, budget
        self.idle: list[_Worker] = []
        self.busy: list[_Worker] = []
        self.all: list[_Worker] = []
        self.why = ""

    def start(self) -> bool:
        try:
            w = _Worker(self.ctx, self.init, self.args, self.work, self.budget)
        except (OSError, ValueError, RuntimeError) as exc:  # no fork/pipe here, process limits ...
            self.why = f"{type(exc).__name__}: {exc}"
            return False
        self.all.append(w)
        self.idle.append(w)
        return True

    def retire(self, w: _Worker) -> None:
        if w in self.all:
            self.all.remove(w)
        try:
            w.stop(kill=True)
        except Exception:
            pass

    def close(self) -> None:
        for w in list(self.all):
            try:
                w.stop(kill=w.job is not None)
            except Exception:
                pass
        self.all.clear()


def _receive(w: _Worker):
    try:
        if w.conn.poll():
            return w.conn.recv()
    except (EOFError, OSError):
        return None
    return None
