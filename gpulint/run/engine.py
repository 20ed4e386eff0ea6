"""The scan: discover -> parse once -> facts -> workloads -> rules -> findings.

``analyze_file`` is the per-file unit of work: file text and configuration in,
facts, file-level findings and suppression directives out, as plain picklable
records (what a content-hash cache or a worker pool needs). Everything that
looks across files happens after it, in ``Scanner.scan``.
"""
from __future__ import annotations

import fnmatch
import gc
import hashlib
import os
import re
import posixpath
import subprocess
from dataclasses import dataclass, field, replace as dataclass_replace
from pathlib import Path
from typing import Callable, Iterable, Iterator

import pathspec

from gpulint.run import baseline as bl
from gpulint.core import limits
from gpulint.run.cache import FileCache, cache_dir, content_digest, settings_fingerprint, text_digest
from gpulint.core.config import Config, is_enabled
from gpulint.run.context import FileContext, WorkloadContext
from gpulint.core.decoding import decode
from gpulint.run.discover import Candidate, Classifier, discover
from gpulint.run.isolation import Budget, WorkersUnavailable, run_supervised
from gpulint.core.model import Fact, Finding, Location, Severity
from gpulint.run.plugins import PluginHost, Registry, format_traceback
from gpulint.read.errors import PartialRead, ReadError
from gpulint.core.result import ScanResult
from gpulint.rule import Rule
from gpulint.core.sources import NewerSyntax, ParseError, Source
from gpulint.run.suppressions import Suppression, find_suppressions, is_suppressed
from gpulint.resolve.resolver import resolve_scan
from gpulint.link.scope import Scope, retired_reason
from gpulint.link.workloads import CODE_KINDS, Repo, Workload, link


class ScanError(Exception):
    """The scan cannot be done as asked (exit code 2)."""


# -- per file ----------------------------------------------------------------------------
@dataclass
class FileResult:
    path: str
    kind: str
    facts: list[Fact] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    suppressions: list[tuple[int, int, bool, tuple[str, ...]]] = field(default_factory=list)
    parsed: bool = False
    skipped: str = ""  # why the file was not parsed (text gate, size)
    errors: list[str] = field(default_factory=list)  # tracebacks for --verbose
    transient: bool = False  # the worker crashed or ran out of time: not a result of the file alone, never cached


def sys_finding(code: str, name: str, loc: Location, message: str, guidance: str, symbol: str) -> Finding:
    return Finding(code, name, Severity.ERROR if code in ("SYS001", "SYS002") else Severity.INFO, loc, message, guidance, symbol=symbol)


def analyze_file(rel: str, data: bytes | str, kind: str, registry: Registry, config: Config, rules: list[Rule],
                 force: bool = False) -> FileResult:
    """Parse one file once and run every extractor and file-level rule on it.

    A pure function of the file's bytes (or an editor's text), its kind and the
    configuration: nothing is kept but facts, findings and suppressions."""
    res = FileResult(rel, kind)
    fk = next((k for k in registry.file_kinds if k.name == kind), None)
    if fk is None:
        return res
    text, problem = decode(data, kind)
    if text is None:
        res.findings.append(_read_error(rel, problem))
        return res
    del data
    extractors = [e for e in registry.extractors if kind in e.kinds]
    file_rules = [r for r in rules if kind in r.kinds]
    if kind in CODE_KINDS and not force:
        # text gate: code that mentions no ML framework cannot hold a fact or a finding
        needs = {n for e in extractors for n in e.needs} | {n for r in file_rules for n in r.requires_text}
        if needs and not any(n in text for n in needs):
            res.skipped = _GATED
            res.suppressions = find_suppressions(text, fk.comment, python=kind == "python")
            return res
    with limits.using(limits.Limits.of(config)):
        try:
            source = fk.parse(text, rel)
        except ParseError as exc:
            finding = _parse_error(rel, getattr(exc, "location", None) or Location(rel, exc.line, exc.column), exc.message,
                                   _OVER_BUDGET if isinstance(exc, limits.LimitExceeded) else
                                   _NEWER_PYTHON if isinstance(exc, NewerSyntax) else _FIX_SYNTAX)
            # valid code of a newer Python than gpulint's, or a file past one of gpulint's own parse budgets: nothing
            # to fix in the file, so never an error
            res.findings.append(finding.with_(severity=Severity.INFO) if isinstance(exc, (NewerSyntax, limits.LimitExceeded))
                                else finding)
            res.suppressions = find_suppressions(text, fk.comment, python=False)
            return res
        except (RecursionError, MemoryError) as exc:  # a parser of a plugin without its own guard
            what = "nested too deeply" if isinstance(exc, RecursionError) else "too large"
            res.findings.append(_parse_error(rel, Location(rel, 1, 1), f"{what} to parse", _OVER_BUDGET).with_(severity=Severity.INFO))
            res.suppressions = find_suppressions(text, fk.comment, python=False)
            return res
        except Exception as exc:
            res.findings.append(sys_finding("SYS002", "rule-error", Location(rel, 1, 1),
                                            f"the {kind} parser failed on {rel}: {type(exc).__name__}: {exc}"[:300],
                                            "This is a bug in gpulint or a plugin; run with --verbose for the traceback and report it.",
                                            symbol=f"parser:{kind}"))
            res.errors.append(format_traceback(exc))
            return res
        res.parsed = True
        cell_errors = getattr(source, "cell_errors", ())
        if cell_errors:
            # cells that do not parse were read as empty and the other cells were read (Jupyter runs each cell on its
            # own): one info finding for the notebook, at its first bad cell, naming the others
            exc = cell_errors[0]
            loc = getattr(exc, "location", None) or Location(rel, exc.line, exc.column)
            more = [str(getattr(getattr(e, "location", None), "cell", "?")) for e in cell_errors[1:]]
            message = exc.message + (f" (and cell{'s' if len(more) > 1 else ''} {', '.join(more[:5])}"
                                     f"{' ...' if len(more) > 5 else ''}); the other cells were read" if more else
                                     "; the other cells were read")
            res.findings.append(_parse_error(rel, loc, message, _NEWER_PYTHON if isinstance(exc, NewerSyntax) else _CELL_SYNTAX
                                             ).with_(severity=Severity.INFO))
        if kind == "notebook":
            res.suppressions = _notebook_suppressions(source)
        else:
            res.suppressions = find_suppressions(source.text, fk.comment, python=kind == "python")
        for ex in extractors:
            # a file read past the text gate (a launcher starts it, it imports the repository's training) is read by
            # every extractor of its kind: its imports and main guard are what links it, whatever words it uses
            if not ex.wants(source) and not (force and source.kind in ex.kinds):
                continue
            try:
                res.facts += ex.extract(source)
            except (ParseError, ReadError) as exc:  # readers parse their own text (Terraform, shell ...)
                res.findings.append(_parse_error(rel, source.loc(exc.line or 1, exc.column or 1), exc.message))
            except PartialRead as exc:  # the other parts' facts are kept; each failed part is reported
                res.facts += exc.facts
                for b in exc.failures:
                    res.findings.append(sys_finding("SYS002", "rule-error", source.loc(b.line, b.column),
                                                    f"fact extractor '{ex.name}' failed on {b.what} in {rel}: {b.error}"[:300],
                                                    "This is a bug in gpulint; the file's other blocks were read. "
                                                    "Run with --verbose for details and report it.",
                                                    symbol=f"extractor:{ex.name}:{b.what}"))
                res.errors.append(f"{rel}: {exc}")
            except (RecursionError, MemoryError) as exc:
                what = "nested too deeply" if isinstance(exc, RecursionError) else "too large"
                res.findings.append(_parse_error(rel, source.loc(1, 1), f"{what} for the '{ex.name}' reader", _OVER_BUDGET)
                                    .with_(severity=Severity.INFO))
            except Exception as exc:
                res.findings.append(sys_finding("SYS002", "rule-error", source.loc(1, 1),
                                                f"fact extractor '{ex.name}' failed on {rel}: {type(exc).__name__}: {exc}"[:300],
                                                "This is a bug in gpulint or a plugin; run with --verbose for the traceback and report it.",
                                                symbol=f"extractor:{ex.name}"))
                res.errors.append(format_traceback(exc))
        ctx = FileContext(config, source)
        for rule in file_rules:
            if rule.requires_text and not any(n in text for n in rule.requires_text):
                continue
            try:
                res.findings += list(rule.check_file(source, ctx) or ())
            except Exception as exc:
                res.findings.append(rule_error(rule, source.loc(1, 1), rel, exc))
                res.errors.append(format_traceback(exc))
    return res


def _read_error(rel: str, problem: str) -> Finding:
    too_big = problem.startswith(TOO_BIG)
    finding = sys_finding("SYS001", "parse-error", Location(rel, 1, 1), f"{rel} could not be read: {problem}",
                          _OVER_BUDGET if too_big else "Save the file as UTF-8 text, or exclude it in [tool.gpulint] exclude.",
                          "read")
    # past gpulint's own size budget: nothing is wrong with the file (most are data), so never an error
    return finding.with_(severity=Severity.INFO) if too_big else finding


#: how a read problem past the size budget starts
TOO_BIG = "larger than "


_FIX_SYNTAX = "Fix the syntax error; until then gpulint cannot check this file, and workloads that use it may be incomplete."
_CELL_SYNTAX = ("Fix the cell (or mark it as text); gpulint read the notebook's other cells and skipped this one, so "
                "whatever it sets up is missing from the checks.")
_NEWER_PYTHON = ("The file is valid for a newer Python than the one gpulint runs on, so gpulint did not read it; run gpulint on "
                 "that Python (for example in CI) to check it.")
_OVER_BUDGET = ("The file is past a parse budget, so gpulint did not read it (the rest of the scan is complete). If it is real "
                "code or configuration, raise the limit named in the message in [tool.gpulint]; otherwise exclude it.")
_CRASHED = ("gpulint's parser could not finish this file; the rest of the scan is complete and unaffected. Exclude the file in "
            "[tool.gpulint] exclude, or raise file-timeout if it is a large real file; please report a crash.")


def _parse_error(rel: str, where: Location, message: str, guidance: str = _FIX_SYNTAX) -> Finding:
    return sys_finding("SYS001", "parse-error", where, f"{rel} could not be parsed: {message}", guidance, symbol="parse")


def _notebook_suppressions(source: Source):
    out = []
    for line, col, wide, codes in find_suppressions(source.text, ("#",), python=True):
        out.append((source.loc(line, col).line, col, wide, codes))
    return out


def rule_error(rule: Rule, loc: Location, where: str, exc: BaseException) -> Finding:
    return sys_finding("SYS002", "rule-error", loc, f"rule {rule.code} failed on {where}: {type(exc).__name__}: {exc}"[:300],
                       "This is a bug in the rule; the other rules still ran. Run with --verbose for the traceback and report it.",
                       symbol=f"rule:{rule.code}")


# -- the whole scan ------------------------------------------------------------------------
@dataclass
class ScanRequest:
    paths: list[Path]
    select: list[str] | None = None
    ignore: list[str] | None = None
    baseline: Path | None = None
    write_baseline: Path | None = None
    stdin_filename: str | None = None
    stdin_text: str | None = None
    buffers: dict[str, str] = field(default_factory=dict)  # absolute path -> unsaved text (editors)
    jobs: int = 0  # worker processes; 0: one per usable CPU
    cache: bool = True  # per-file results in the project's .gpulint_cache (gpulint.run.cache)
    #: called with (files done, files in all) as results come in (a progress bar); never changes a result
    progress: Callable[[int, int], None] | None = None


def default_jobs() -> int:
    """The CPUs this process may run on (a container's or taskset's limit, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class Scanner:
    def __init__(self, host: PluginHost, config: Config):
        self.host = host
        self.config = config
        #: per-file results and the root of the last scan (the language server maps findings back to buffers); after a
        #: scan the cache reused whole, each file's kind only (no facts): scan with cache=False to read every file's facts
        self.last_results: dict[str, FileResult] = {}
        self.last_root: Path | None = None
        self.last_cache: FileCache | None = None  # the cache the last scan used (hits and misses), None without one

    @property
    def registry(self) -> Registry:
        return self.host.registry

    def rules(self, select: list[str] | None = None, ignore: list[str] | None = None) -> list[Rule]:
        out = []
        for code, cls in sorted(self.registry.rules.items()):
            if is_enabled(code, cls.default_enabled, self.config, select, ignore):
                out.append(cls(self.config.rule_options.get(code)))
        return out

    def scan(self, req: ScanRequest) -> tuple[ScanResult, list[Workload]]:
        tune_gc()
        root, report_only = self._root(req)
        rules = self.rules(req.select, req.ignore)
        classifier = Classifier(self.registry.file_kinds)
        excludes = list(self.config.exclude)
        problems: list[tuple[str, str]] = []
        given = self._given(req)
        if given is None:
            cands = discover(root, classifier, excludes, self.config.root, problems=problems)
        else:  # several paths, one a folder: exactly those paths, named from the project root
            report_only = None
            cands = self._discover_given(given, root, classifier, excludes, problems)
        if req.stdin_filename:
            rel = _rel(Path(req.stdin_filename), root)
            kind = classifier.kind_of(Path(req.stdin_filename)) or ""
            cands = [c for c in cands if c.rel != rel]
            if kind:
                cands.append(Candidate(rel, root / rel, kind))
            report_only = {rel}
        results: dict[str, FileResult] = {}
        for rel, problem in problems:  # folders discovery could not enter
            results[rel] = FileResult(rel, "", findings=[_unreadable_dir(rel, problem)])
        max_bytes = self.config.max_file_size_kb * 1024
        errors: list[str] = []
        # infrastructure and launchers first: they say which scripts must be parsed whatever their imports
        order = sorted(cands, key=lambda c: (c.kind in CODE_KINDS, c.rel))
        launched: set[str] = set()
        cache = self._cache(root, rules) if req.cache else None
        scan_key = self._scan_key(req, root, report_only, rules, cache, cands, problems, max_bytes) if cache is not None else None
        if scan_key is not None:
            stored = cache.get_scan(scan_key)
            if stored is not None:  # nothing the result depends on changed since the scan that stored it
                return self._stored(stored, req, root, cache)
        digests: dict[str, str] = {}  # files to analyse whose result goes into the cache
        code_digests: dict[str, str] = {}  # each code file's content digest: a byte-identical copy of a launched script is no workload
        total = len(order) + len(problems)

        def take(res: FileResult) -> None:
            results[res.path] = res
            if req.progress is not None:
                req.progress(len(results), total)
            for f in res.facts:
                if f.kind == "launch" and isinstance(f.value, dict) and isinstance(f.value.get("script"), str):
                    launched.add(posixpath.basename(f.value["script"]))

        def analyse(phase: list, forced: frozenset = frozenset()) -> None:
            def jobs() -> Iterator[tuple[str, bytes | str, str, bool]]:
                # read one file at a time, as workers take them: the scan never holds every file's bytes
                for cand in phase:
                    data, problem = self._read(cand, req, root, max_bytes)
                    if data is None:
                        take(FileResult(cand.rel, cand.kind, findings=[_read_error(cand.rel, problem)]))
                        continue
                    force = cand.kind in CODE_KINDS and (posixpath.basename(cand.rel) in launched or cand.rel in forced)
                    if cand.kind in CODE_KINDS:
                        code_digests[cand.rel] = text_digest(data)
                    if cache is not None and isinstance(data, bytes):  # an editor's unsaved text is not kept
                        digest = content_digest(data, cand.kind, force)
                        hit = cache.get(cand.rel, digest)
                        if hit is not None:
                            take(hit)
                            continue
                        digests[cand.rel] = digest
                    yield cand.rel, data, cand.kind, force

            for res in self._analyze_all(jobs(), rules, req.jobs or default_jobs()):
                take(res)
                if cache is not None and res.path in digests and not res.errors and not res.transient:
                    cache.put(res.path, digests[res.path], res)

        # two phases: what launchers name must be known before the text gate judges code files
        code = [c for c in order if c.kind in CODE_KINDS]
        analyse([c for c in order if c.kind not in CODE_KINDS])
        analyse(code)
        # then the thin entry scripts the gate skipped that import a repository module which trains
        thin = _thin_entries(code, results, lambda c: self._read(c, req, root, max_bytes)[0])
        if thin:
            analyse(thin, frozenset(c.rel for c in thin))
        errors += [e for r in results.values() for e in r.errors]
        self.last_cache = cache
        repo = Repo({p: r.facts for p, r in results.items()}, {c.rel: c.kind for c in cands}, digests=code_digests)
        scope = Scope.of(self.config, root, [c.rel for c in cands])
        linked = link(repo, self.config.workloads, scope)
        workloads = linked.workloads
        wctx = WorkloadContext(self.config, repo, list(self.registry.catalogue), workloads=workloads,
                               ambiguities=linked.ambiguities)
        wctx.computes = resolve_scan(workloads, linked.computes, repo, wctx.catalogue, self.config)
        findings: list[Finding] = _sys001_severity(_without_chart_templates([f for r in results.values() for f in r.findings], results),
                                                   workloads)
        for rule in rules:
            if type(rule).check_workload is Rule.check_workload:
                continue
            for wl in workloads:
                if wl.role not in rule.roles or (rule.reads_code and not wl.code_known):
                    continue
                try:
                    for f in rule.check_workload(wl, wctx) or ():
                        findings.append(f if f.workload else f.with_(workload=wl.name))
                except Exception as exc:
                    findings.append(rule_error(rule, Location(wl.entrypoint, 1, 1), f"workload {wl.name}", exc).with_(workload=wl.name))
                    errors.append(format_traceback(exc))
        for rule in rules:
            if type(rule).check_repo is Rule.check_repo:
                continue
            try:
                findings += list(rule.check_repo(workloads, wctx) or ())
            except Exception as exc:
                findings.append(rule_error(rule, Location(".", 1, 1), "the repository", exc))
                errors.append(format_traceback(exc))
        findings = [_in_retired_code(f) for f in findings if not scope.outside(f.loc.path)]
        findings = self._post(merge_repeats(findings), results, rules, report_only, root)
        findings = bl.assign_fingerprints(findings)
        hidden = 0
        if req.baseline:
            known = bl.read_baseline(req.baseline)
            kept = [f for f in findings if f.fingerprint not in known]
            hidden, findings = len(findings) - len(kept), kept
        result = ScanResult(
            root=str(req.paths[0]) if len(req.paths) == 1 and Path(req.paths[0]).is_dir() else str(root),
            findings=sorted(findings, key=lambda f: f.sort_key()),
            workloads=[workload_json(w) for w in workloads],
            computes=[c.to_json() for _, c in sorted(wctx.computes.items())],
            launchers={"named": linked.launches_named, "joined": linked.launches_joined,
                       "unjoined": [{"where": u.loc.short(), "path": u.loc.path, "line": u.loc.line,
                                     "command": u.command, "why": u.why} for u in linked.unjoined]},
            hours_per_month=wctx.catalogue.hours_per_month,
            files_scanned=len(results),
            rules=[self.registry.rules[c] for c in sorted(self.registry.rules)],
            enabled={r.code for r in rules},
            errors=errors,
            baseline=str(req.baseline) if req.baseline else None,
            baseline_hidden=hidden,
        )
        if cache is not None:
            # a result with a crash, a timeout or a traceback in it is not stored: the next scan tries again
            if scan_key is not None and not errors and not any(r.transient or r.errors for r in results.values()):
                cache.put_scan(scan_key, (result, workloads, {p: r.kind for p, r in results.items()}))
            cache.save()
        if req.write_baseline:
            bl.write_baseline(req.write_baseline, result.findings)
        self.last_results = results
        self.last_root = root
        return result, workloads

    def _scan_key(self, req: ScanRequest, root: Path, report_only: set[str] | None, rules: list[Rule], cache: FileCache,
                  cands: list[Candidate], problems: list[tuple[str, str]], max_bytes: int) -> str | None:
        """The key of the whole scan's result: the cache's settings (gpulint's code, plugins, configuration), every
        enabled rule, the request, the baseline's bytes, and every discovered file's path, kind and bytes. Equal keys
        mean equal results, so an unchanged tree is answered from the scan record. None where a scan's input is not
        all on disk (an editor's buffers, standard input)."""
        if req.stdin_text is not None or req.buffers:
            return None
        h = hashlib.blake2b(digest_size=20)
        h.update(repr((cache.settings, sorted(r.code for r in rules), [str(p) for p in req.paths], req.select, req.ignore,
                       str(root), sorted(report_only) if report_only is not None else None, sorted(problems))).encode())
        if req.baseline:
            try:
                h.update(b"baseline\0" + Path(req.baseline).read_bytes())
            except OSError:
                return None  # the scan reports the missing baseline itself
        for cand in sorted(cands, key=lambda c: c.rel):
            data, problem = self._read(cand, req, root, max_bytes)
            h.update(f"\0{cand.rel}\0{cand.kind}\0{problem}\0".encode("utf-8", "surrogatepass"))
            if isinstance(data, bytes):
                h.update(text_digest(data).encode())
        return h.hexdigest()

    def _stored(self, stored: tuple, req: ScanRequest, root: Path, cache: FileCache) -> tuple[ScanResult, list[Workload]]:
        """A stored scan's result, as the scan would have returned it."""
        result, workloads, kinds = stored
        if req.baseline:  # the same baseline bytes may sit at another path than the stored scan's
            result = dataclass_replace(result, baseline=str(req.baseline))
        if req.progress is not None:
            req.progress(result.files_scanned, result.files_scanned)
        if req.write_baseline:
            bl.write_baseline(req.write_baseline, result.findings)
        cache.hits, cache.scan_reused = len(kinds), True
        self.last_cache = cache
        self.last_results = {p: FileResult(p, k) for p, k in kinds.items()}  # what --fix asks of them: each file's kind
        self.last_root = root
        return result, workloads

    # -- helpers --------------------------------------------------------------------------
    def _analyze_all(self, jobs: Iterable[tuple[str, bytes | str, str, bool]], rules: list[Rule], workers: int) -> Iterator[FileResult]:
        """Every job's FileResult, computed in supervised worker processes
        (gpulint.run.isolation): a crash or overrun of one file is a SYS001 for it."""
        budget = Budget(timeout=self.config.file_timeout)
        codes = [r.code for r in rules]
        pending = iter(jobs)
        try:
            yield from run_supervised(pending, _worker_analyze, _worker_failed, workers=workers, budget=budget,
                                      init=_worker_init, init_args=(self.config, rules, self.registry),
                                      spawn_init_args=(self.config, codes, None))
        except WorkersUnavailable as exc:  # no processes can be started here: same work, in this process
            for job in (*exc.jobs, *pending):
                yield analyze_file(job[0], job[1], job[2], self.registry, self.config, rules, force=job[3])

    @staticmethod
    def _given(req: ScanRequest) -> list[Path] | None:
        """The paths to scan when they are several and one is a folder (``gpulint scan src/ infra/``).
        Files alone (what pre-commit passes) are scanned with the whole repository as context instead,
        and only their findings reported."""
        if len(req.paths) < 2 or req.stdin_filename:
            return None
        paths = [Path(os.path.realpath(p)) for p in req.paths]
        return paths if any(p.is_dir() for p in paths) else None

    def _discover_given(self, given: list[Path], root: Path, classifier: Classifier, excludes: list[str],
                        problems: list[tuple[str, str]]) -> list[Candidate]:
        out: dict[str, Candidate] = {}
        for p in given:
            if p.is_dir():
                prefix = _rel(p, root)
                found: list[tuple[str, str]] = []
                for c in discover(p, classifier, excludes, self.config.root or root, problems=found):
                    rel = c.rel if prefix == "." else f"{prefix}/{c.rel}"
                    out.setdefault(rel, Candidate(rel, c.abs, c.kind))
                problems += [(r if prefix == "." else f"{prefix}/{r}", why) for r, why in found]
            else:
                kind = classifier.kind_of(p)
                if kind:
                    rel = _rel(p, root)
                    out.setdefault(rel, Candidate(rel, p, kind))
        return [out[k] for k in sorted(out)]

    def _cache(self, root: Path, rules: list[Rule]) -> FileCache | None:
        """The cache of this scan root, or None when it cannot be used here (no writable key, ...)."""
        try:
            # only file-level rules shape a file's result: `gpulint workloads` (SYS only) and a full scan share entries
            file_rules = [r.code for r in rules if type(r).check_file is not Rule.check_file]
            settings = settings_fingerprint(self.config, file_rules, self.host.pm.get_plugins())
            cache = FileCache(cache_dir(self._project_root(root)), root, settings)
        except (OSError, ValueError):
            return None
        return cache if cache.usable else None

    def _root(self, req: ScanRequest) -> tuple[Path, set[str] | None]:
        paths = [Path(os.path.realpath(p)) for p in req.paths]
        for p in paths:
            if not p.exists():
                raise ScanError(f"{p}: no such file or directory")
        if len(paths) == 1 and paths[0].is_dir() and not req.stdin_filename:
            return paths[0], None
        root = self._project_root(paths[0] if paths else Path.cwd())
        report: set[str] = set()
        for p in paths:
            if not p.is_relative_to(root):
                root = Path(_common(paths))
                break
        for p in paths:
            rel = _rel(p, root)
            if p.is_dir():
                report |= {rel + "/"} if rel != "." else set()
            else:
                report.add(rel)
        return root, (report or None)

    def _project_root(self, start: Path) -> Path:
        if self.config.path is not None and self.config.root:
            return self.config.root
        here = start if start.is_dir() else start.parent
        try:
            top = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel"], capture_output=True, text=True, timeout=20)
            if top.returncode == 0 and top.stdout.strip():
                return Path(top.stdout.strip()).resolve()
        except (OSError, subprocess.SubprocessError):
            pass
        return Path.cwd().resolve() if here.is_relative_to(Path.cwd().resolve()) else here

    def _read(self, cand: Candidate, req: ScanRequest, root: Path, max_bytes: int) -> tuple[bytes | str | None, str]:
        """The file's bytes (an editor's or standard input's text), or None and why not."""
        if req.stdin_filename and cand.rel == _rel(Path(req.stdin_filename), root) and req.stdin_text is not None:
            return req.stdin_text, ""
        buf = req.buffers.get(str(cand.abs))
        if buf is not None:
            return buf, ""
        if cand.kind == "notebook":
            # a notebook's bytes are mostly its outputs (embedded images): the limit applies to its code cells once
            # parsed (gpulint.read.parsers), the raw file may be a few times larger
            max_bytes *= NOTEBOOK_OUTPUT_ALLOWANCE
        too_big = f"{TOO_BIG}max-file-size-kb ({max_bytes // 1024:,} KB); not read" if cand.kind != "notebook" else \
            f"{TOO_BIG}{NOTEBOOK_OUTPUT_ALLOWANCE} x max-file-size-kb ({max_bytes // 1024:,} KB) with its outputs; not read"
        try:
            if cand.abs.stat().st_size > max_bytes:
                return None, too_big
            with open(cand.abs, "rb") as fh:
                data = fh.read(max_bytes + 1)  # the file may have grown since stat
        except OSError as exc:
            return None, exc.strerror or str(exc)
        if len(data) > max_bytes:
            return None, too_big
        return data, ""

    def _post(self, findings: list[Finding], results: dict[str, FileResult], rules: list[Rule], report_only: set[str] | None,
              root: Path) -> list[Finding]:
        cfg = self.config
        enabled = {r.code for r in rules}
        spec_cache: dict[str, pathspec.PathSpec] = {}
        sups: dict[str, list[Suppression]] = {}
        for path, r in results.items():
            sups[path] = [Suppression(l, c, w, codes, Location(path, l, c)) for (l, c, w, codes) in r.suppressions]

        def keep(f: Finding) -> Finding | None:
            if f.code not in enabled:
                return None
            if f.code in cfg.severity:
                f = f.with_(severity=cfg.severity[f.code])
            if _per_file_ignored(f, cfg, spec_cache, root):
                return None
            return f

        out = []
        for f in findings:
            kept = keep(f)
            if kept is None:
                continue
            s = is_suppressed(kept.code, kept.loc.line, sups.get(kept.loc.path, []))
            if s is not None:
                s.used.add(kept.code)
                continue
            out.append(kept)
        if "SYS004" in enabled:
            known = set(self.registry.rules)
            for path, entries in sups.items():
                r = results[path]
                if not r.parsed and not r.skipped:
                    continue
                for s in entries:
                    out += [k for k in map(keep, _unused(s, enabled, known)) if k is not None]
        if report_only is not None:
            def given(path: str) -> bool:
                return path in report_only or any(path.startswith(d) for d in report_only if d.endswith("/"))

            # a given infrastructure, launcher or config file also reports the findings that name it as
            # evidence (the main.tf that turns on spot for train.py); a given script reports its own
            evidence = {p for p in report_only if p in results and results[p].kind not in CODE_KINDS}
            out = [f for f in out if given(f.loc.path) or any(r.loc.path in evidence for r in f.related)]
        return out


_WORKER: dict = {}
_GC_TUNED: list[bool] = []


def tune_gc() -> None:
    """Collect garbage less often, once per process. Parsers build millions of small objects that all live until
    their file is read, and CPython's default (a young collection every 700 allocations, each older one walking
    every survivor) spent about half of a large Terraform file's parse walking them. The objects alive now (modules,
    the registry) are frozen out of collection; young collections run at 50,000 allocations, old ones rarely."""
    if _GC_TUNED:
        return
    _GC_TUNED.append(True)
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def _worker_init(config: Config, rules: list, registry: Registry | None) -> None:
    """Once per worker process. A forked worker inherits the parent's registry
    and rules; a spawned one loads the plugins again and builds the rules from
    their codes. The per-file work is then pure."""
    if registry is None:
        registry = PluginHost().registry
        rules = [registry.rules[c](config.rule_options.get(c)) for c in rules if c in registry.rules]
    _WORKER.update(registry=registry, config=config, rules=rules)
    tune_gc()


def _worker_analyze(job: tuple[str, bytes | str, str, bool]) -> FileResult:
    rel, data, kind, force = job
    return analyze_file(rel, data, kind, _WORKER["registry"], _WORKER["config"], _WORKER["rules"], force=force)


def _worker_failed(job: tuple[str, bytes | str, str, bool], reason: str) -> FileResult:
    """The result of a file whose worker crashed or ran out of time."""
    rel, _, kind, _ = job
    return FileResult(rel, kind, findings=[_parse_error(rel, Location(rel, 1, 1), reason, _CRASHED)], transient=True)


def _unreadable_dir(rel: str, problem: str) -> Finding:
    return sys_finding("SYS001", "parse-error", Location(rel, 1, 1), f"folder {rel} could not be read: {problem}; its files were not scanned",
                       "Make the folder readable to the user running gpulint, or exclude it in [tool.gpulint] exclude.", "read")


def fed_files(workloads: list[Workload]) -> set[str]:
    """Every file a workload is built from: its code, configs, launchers and compute."""
    out: set[str] = set()
    for wl in workloads:
        out.add(wl.entrypoint)
        out.update(wl.code_files)
        out.update(wl.configs)
        out.update(f.loc.path for f in (*wl.launchers, *wl.env))
        for c in (wl.compute, *getattr(wl, "job_computes", ())):
            if c is not None:
                out.add(c.path)
                out.update(j.path for j in getattr(c, "joined", ()))
    return out


#: a path with a placeholder of a project generator in it (cookiecutter, copier): the files below are templates
_TEMPLATED_PATH = re.compile(r"\{\{[^/{}]*\}\}|\{%[^/]*%\}")
#: file names that say the file is a template to render (Terraform templatefile, Jinja, Go templates)
_TEMPLATE_NAME = re.compile(r"\.(tftpl|tpl|j2|jinja2?|gotmpl)(\.|$)", re.I)


def _without_chart_templates(findings: list[Finding], results: dict) -> list[Finding]:
    """A Helm chart's templates/ (and other files beside its Chart.yaml) are Go templates rendered by helm, not YAML
    gpulint can read, as are files named as templates (``*.tftpl.*``, ``*.j2``) and files under a generator's
    placeholder folder (``{{cookiecutter.name}}/``): one that could not be read (does not
    parse even with placeholders, or is over a size limit, as generated CRDs are) is skipped in silence: it holds no
    fact of its own either way."""
    charts = {posixpath.dirname(p) for p in results if posixpath.basename(p) == "Chart.yaml"}

    def in_chart_templates(path: str) -> bool:
        if _TEMPLATE_NAME.search(posixpath.basename(path)):
            return True  # named as a template (kustomization.tftpl.yaml, values.yaml.j2): rendered before any tool reads it
        if _TEMPLATED_PATH.search(path):
            return True  # a project generator's tree (cookiecutter-template-{{cookiecutter.name}}/...): rendered first
        d = posixpath.dirname(path)
        if d in charts and posixpath.basename(path) not in ("Chart.yaml", "values.yaml"):
            return True  # a chart's own folder keeps templates too (k8s_templates/peft/peft.yaml beside Chart.yaml)
        while d:
            parent, name = posixpath.split(d)
            if name == "templates" and parent in charts:
                return True
            d = parent
        return False

    return [f for f in findings if not (f.code == "SYS001" and in_chart_templates(f.loc.path))]


def _sys001_severity(findings: list[Finding], workloads: list[Workload]) -> list[Finding]:
    """SYS001 is an error for a file that feeds a workload (its facts are
    missing from a workload's checks) and info for one that feeds none (a Helm
    chart, a data file, a broken script nothing runs): it must not fail CI."""
    if not any(f.code == "SYS001" for f in findings):
        return findings
    fed = fed_files(workloads)
    # a JSON file past the size budget that feeds nothing is data (a tokenizer vocabulary, a dataset, a generated
    # schema): no configuration gpulint reads is megabytes of JSON, so skipping it is not worth a line of output
    findings = [f for f in findings if not (f.code == "SYS001" and f.loc.path not in fed and _oversized_json(f))]
    return [f.with_(severity=Severity.INFO) if f.code == "SYS001" and f.loc.path not in fed and f.severity is Severity.ERROR else f
            for f in findings]


def _in_retired_code(f: Finding) -> Finding:
    """A warning or error in code the repository marks as retired (``archived/``, ``legacy/``) is advice: info,
    saying why, so that it neither fails CI nor ranks beside the code that runs."""
    why = retired_reason(f.loc.path) if f.severity is not Severity.INFO else None
    return f.with_(severity=Severity.INFO, message=f"{f.message} ({why})") if why else f


def _oversized_json(f: Finding) -> bool:
    return f.loc.path.lower().endswith(".json") and f.message.startswith(f"{f.loc.path} could not be read: {TOO_BIG}")


def _unused(s: Suppression, enabled: set[str], known: set[str]) -> list[Finding]:
    from gpulint.core.model import Finding as F

    guidance = "Remove the comment, or correct the code it names; an unused suppression hides nothing today and may hide a real finding tomorrow."
    msgs = []
    if not s.codes:
        if not s.used:
            msgs.append(("*", "suppression comment 'gpulint: ignore' suppresses nothing here"))
    for code in s.codes:
        if code in s.used or any(u.startswith(code) for u in s.used):
            continue
        if not any(k.startswith(code) for k in known):
            msgs.append((code, f"suppression names unknown rule code {code}"))
        elif any(k.startswith(code) for k in enabled):
            msgs.append((code, f"suppression of {code} suppresses nothing: {code} does not fire {'in this file' if s.file_wide else 'on this line or the next'}"))
    return [F("SYS004", "unused-suppression", Severity.INFO, s.loc, m, guidance, symbol=f"suppression:{c}") for c, m in msgs]


def _per_file_ignored(f: Finding, cfg: Config, cache: dict, root: Path) -> bool:
    if not cfg.per_file_ignores:
        return False
    path = f.loc.path
    if cfg.root is not None:  # globs are relative to the configuration's folder, like exclude
        try:
            path = (root / f.loc.path).resolve().relative_to(cfg.root.resolve()).as_posix()
        except ValueError:
            pass
    for glob, codes in cfg.per_file_ignores.items():
        spec = cache.get(glob)
        if spec is None:
            spec = cache[glob] = pathspec.PathSpec.from_lines("gitwildmatch", [glob])
        if (spec.match_file(path) or fnmatch.fnmatch(path, glob)) and any(f.code.startswith(c) or c == "ALL" for c in codes):
            return True
    return False


def _rel(p: Path, root: Path) -> str:
    try:  # os.path.realpath, unlike Path.resolve on Python < 3.13, never raises on a symlink loop
        return Path(os.path.realpath(p)).relative_to(os.path.realpath(root)).as_posix()
    except ValueError:
        return p.as_posix()


_GATED = "no ML framework mentioned"
#: how much larger than max-file-size-kb a notebook file may be, outputs included (its code cells must fit the limit)
NOTEBOOK_OUTPUT_ALLOWANCE = 8


def _thin_entries(code: list, results: dict, read) -> list:
    """Entry scripts (a ``__main__`` guard) and plain modules the text gate skipped that import a module of the
    repository which trains (a ``train.py`` of three lines calling ``trainer.run()``, a factory module between an
    entry and its pipeline trainer): their imports decide whether a workload trains, so they are read after all.
    Only the skipped files are read again, and only when some repository module trains."""
    trainers = {posixpath.splitext(posixpath.basename(p))[0] for p, r in results.items()
                if any(f.kind == "trains" for f in r.facts)} - {"__init__", "__main__"}
    if not trainers:
        return []
    names = "|".join(map(re.escape, sorted(trainers)))
    wanted = re.compile(rf"^\s*(?:from\s+[\w.]*\b(?:{names})\b[\w.]*\s+import|import\s+[\w.]*\b(?:{names})\b)", re.M)
    out = []
    for cand in code:
        res = results.get(cand.rel)
        if res is None or res.skipped != _GATED:
            continue
        data = read(cand)
        text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
        # an entry script (a __main__ guard), or a module between the entry and the trainer (dist_pp_utils.py: one
        # ``from .dist_gpipe_pipeline_async import GpipeAsync`` and a factory); not a package's __init__ that
        # re-exports the trainer: reading those would pull every module a package holds into each workload
        if text and ("__main__" in text or posixpath.basename(cand.rel) != "__init__.py") and wanted.search(text):
            out.append(cand)
    return out


def _common(paths: Iterable[Path]) -> str:
    return os.path.commonpath([str(p if p.is_dir() else p.parent) for p in paths])


def merge_repeats(findings: list[Finding]) -> list[Finding]:
    """One finding per code, file and line: a helper imported by three workloads is one finding that
    names the three (the most severe, then costliest, message is kept; every affected workload is listed). Findings of
    one workload at one line stay apart (two settings missing on one estimator are two problems):
    the i-th finding of each workload there is merged with the i-th of the others."""
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.code, f.loc.path, f.loc.line, f.loc.cell), []).append(f)
    out = []
    for group in groups.values():
        if len(group) == 1:
            out.append(group[0])
            continue
        per_workload: dict[str | None, list[Finding]] = {}
        for f in group:
            per_workload.setdefault(f.workload, []).append(f)
        lanes = [sorted(fs, key=lambda f: (f.symbol, f.message)) for fs in per_workload.values()]
        for i in range(max(len(l) for l in lanes)):
            same = [l[i] for l in lanes if i < len(l)]
            # the most severe reading wins: a helper that one sized job runs is a warning whatever a demo sibling is
            best = max(same, key=lambda f: (f.severity.rank, f.cost_impact.usd_per_hour or 0.0, -same.index(f)))
            names = tuple(sorted({n for f in same for n in f.affected}))
            out.append(best.with_(workloads=names) if len(names) > 1 else best)
    return out


def workload_json(wl: Workload) -> dict:
    res = wl.resolution
    compute = None
    rc = res.compute if res is not None else None
    if rc is not None:
        compute = {**rc.to_json(), "facts": [f.to_json() for f in rc.facts]}
    return {
        "name": wl.name,
        "entrypoint": wl.entrypoint,
        "role": wl.role,
        "code_files": wl.code_files,
        **({} if wl.code_known else {"code_known": False}),
        "launchers": [f.to_json() for f in wl.launchers],
        "configs": wl.configs,
        "compute": compute,
        "job_computes": [c.to_json() for c in (res.job_computes[1:] if res is not None else ())],
        "facts": [f.to_json() for f in wl.facts if f.kind != "import"],
        "env": [f.to_json() for f in wl.env],
        "resolved": res.to_json() if res is not None else {},
        "links": wl.reasons,
        "unknown": wl.unknown,
    }
