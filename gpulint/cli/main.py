"""The command line: scan, rules, explain, workloads, plugins, catalogue, lsp.

Exit codes: 0 nothing at or above --fail-on (or --exit-zero); 1 findings at or
above it; 2 the scan could not be done as asked (bad option, bad config, a
path that does not exist, or a crash of gpulint itself).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from gpulint import __version__
from gpulint.run.baseline import BaselineError
from gpulint.core.config import Config, ConfigError, UsageError, read_config
from gpulint.core.model import Severity
from gpulint.run.plugins import PluginHost

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # exit 2 with a one-line message, as argparse does, but never a traceback
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: {message}")


def _codes(text: str) -> list[str]:
    return [c.strip().upper() for c in text.split(",") if c.strip()]


def _usd(text: str) -> float:
    try:
        value = float(text.strip().lstrip("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a dollar amount per hour (like 5 or 12.50)") from None
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: the limit must be a finite amount of at least 0")
    return value


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpulint", description="Audit ML training repositories for GPU spend mistakes.")
    p.add_argument("--version", action="version", version=f"gpulint {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    scan = sub.add_parser("scan", help="scan directories and files (default: .)")
    scan.add_argument("paths", nargs="*", default=["."], help="directories or files; '-' reads one file from standard input")
    scan.add_argument("--format", "--output-format", dest="format", default="text", metavar="FORMAT",
                      help="text (default), json, sarif, github, gitlab, junit, markdown")
    scan.add_argument("--output", "-o", type=Path, help="write the report to this file")
    scan.add_argument("--select", type=_codes, help="codes or family prefixes to enable, comma separated (AMP,SPOT001)")
    scan.add_argument("--extend-select", type=_codes, help="codes or family prefixes to enable on top of the selection")
    scan.add_argument("--ignore", type=_codes, help="codes or family prefixes to disable, comma separated")
    scan.add_argument("--fail-on", choices=[s.value for s in Severity], help="lowest severity that fails the run (default warning)")
    scan.add_argument("--fail-on-cost", type=_usd, metavar="USD",
                      help="also fail when the reported findings' avoidable spend is more than USD per hour, whatever --fail-on says")
    scan.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings (a --fail-on-cost gate still applies)")
    scan.add_argument("--diff-base", metavar="REF",
                      help="report only findings that are new since the merge base of REF and HEAD (scanned in a temporary git worktree)")
    scan.add_argument("--fix", action="store_true", help="apply the safe fixes, then report what is left")
    scan.add_argument("--unsafe-fixes", action="store_true", help="with --fix or --diff: also apply fixes that may change behaviour")
    scan.add_argument("--diff", action="store_true", help="print the fixes as a unified diff instead of writing them (exit 1 if there is one)")
    scan.add_argument("--statistics", action="store_true", help="print the number of findings per rule instead of the findings")
    scan.add_argument("--config", type=Path, help="configuration file (default: looked up from the scanned path)")
    scan.add_argument("--baseline", type=Path, help="report only findings not recorded in this baseline")
    scan.add_argument("--write-baseline", type=Path, help="record today's findings in this baseline file")
    scan.add_argument("--no-cache", action="store_true",
                      help="neither read nor write the per-file result cache (.gpulint_cache at the project root, or $GPULINT_CACHE_DIR)")
    scan.add_argument("--jobs", "-j", type=int, default=0,
                      help="parse and extract facts in N worker processes (default 0: one per usable CPU)")
    scan.add_argument("--show-guidance", action="store_true", help="text format: guidance and cost under each finding")
    scan.add_argument("--color", choices=["auto", "always", "never"], default="auto",
                      help="colour the text format: auto (default: on a terminal, FORCE_COLOR forces it, NO_COLOR turns it off)")
    scan.add_argument("--stdin-filename", help="with '-': the path the text read from standard input belongs to")
    scan.add_argument("--quiet", "-q", action="store_true", help="findings only, no summary")
    scan.add_argument("--verbose", "-v", action="store_true", help="tracebacks of rule errors and more detail")

    rules = sub.add_parser("rules", help="the rule table")
    rules.add_argument("--format", choices=["text", "json"], default="text")
    rules.add_argument("--config", type=Path)
    rules.add_argument("--select", type=_codes)
    rules.add_argument("--ignore", type=_codes)

    explain = sub.add_parser("explain", help="a rule's full guidance")
    explain.add_argument("code")
    explain.add_argument("--format", choices=["text", "markdown"], default="text")

    wl = sub.add_parser("workloads", help="what the scan inferred about each workload")
    wl.add_argument("path", nargs="?", default=".")
    wl.add_argument("--format", choices=["text", "json"], default="text")
    wl.add_argument("--config", type=Path)
    wl.add_argument("--no-cache", action="store_true",
                    help="neither read nor write the per-file result cache (.gpulint_cache at the project root, or $GPULINT_CACHE_DIR)")

    plugins = sub.add_parser("plugins", help="loaded and failed plugins")
    plugins.add_argument("--format", choices=["text", "json"], default="text")

    facts = sub.add_parser("facts", help="the fact vocabulary: what readers say about files, and rules read")
    facts.add_argument("--format", choices=["markdown", "json"], default="markdown")

    clean = sub.add_parser("clean", help="remove the result cache (.gpulint_cache at the project root, or $GPULINT_CACHE_DIR)")
    clean.add_argument("path", nargs="?", default=".", help="a path inside the project (default: .)")

    sub.add_parser("lsp", help="a Language Server Protocol server over stdio")

    from gpulint.cli import catalogue as catalogue_cli
    catalogue_cli.add_parser(sub)
    p.subcommands = dict(sub.choices)  # for usage messages of the subcommand a bad option was given to
    return p


def main(argv: list[str] | None = None, host: PluginHost | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:  # answered with the usage of the subcommand it was given to, not the top level's
            target = parser.subcommands.get(getattr(args, "command", None) or "", parser)
            target.error(f"unrecognized arguments: {' '.join(extra)}")
    except UsageError as exc:
        print(exc, file=sys.stderr)
        return EXIT_ERROR
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    if not args.command:
        parser.print_help()
        return EXIT_ERROR
    host = host or PluginHost()
    try:
        return COMMANDS[args.command](args, host)
    except (ConfigError, BaselineError, UsageError) as exc:
        print(f"gpulint: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `gpulint ... | head`: the reader left, nothing to report
        try:
            sys.stdout = open(os.devnull, "w")
        except OSError:
            pass
        return EXIT_OK
    except Exception as exc:  # a crash of gpulint itself: one line, traceback with --verbose
        print(f"gpulint: internal error: {type(exc).__name__}: {exc} (run with --verbose for the traceback; please report it)", file=sys.stderr)
        if getattr(args, "verbose", False):
            import traceback

            traceback.print_exc()
        return EXIT_ERROR


def _config(args, start: Path, host: PluginHost) -> Config:
    return read_config(start, host, getattr(args, "config", None), getattr(args, "select", None), getattr(args, "ignore", None))


def _stdin_context(filename: str) -> Path:
    """The folder whose project gives an editor buffer its context: the buffer's own
    folder, or its nearest existing parent for a file not saved yet into a new folder."""
    here = Path(filename).parent
    if here == Path(""):
        return Path(".")
    while not here.exists() and here != here.parent:
        here = here.parent
    return here


def _color(args) -> bool:
    """--color always/never wins; auto: FORCE_COLOR forces colour, NO_COLOR turns it off (as ruff does),
    else colour only on a terminal."""
    if args.color == "always":
        return True
    if args.color == "never":
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("NO_COLOR"):
        return False
    return args.output is None and sys.stdout.isatty()


class _Progress:
    """Files done / total on standard error (tqdm), shown only on a terminal and only once the
    scan has run for a second; ``--quiet``, a pipe or standard input show nothing."""

    def __init__(self):
        from tqdm import tqdm

        delay = float(os.environ.get("GPULINT_PROGRESS_DELAY") or 1.0)  # seconds before it shows (tests set 0)
        self.bar = tqdm(total=0, unit="file", desc="gpulint", file=sys.stderr, delay=delay, leave=False,
                        dynamic_ncols=True, mininterval=0.2)

    def update(self, done: int, total: int) -> None:
        if self.bar.total != total:
            self.bar.total = total
        self.bar.update(done - self.bar.n)

    def close(self) -> None:
        self.bar.close()


def _progress_bar(args, from_stdin: bool) -> _Progress | None:
    if args.quiet or from_stdin or not sys.stderr.isatty() or os.environ.get("GPULINT_NO_PROGRESS"):
        return None
    try:
        return _Progress()
    except ImportError:  # tqdm is a dependency; a vendored install without it still scans
        return None


def _missing(path: Path) -> bool:
    if path.exists():
        return False
    print(f"gpulint: {path}: no such file or directory", file=sys.stderr)
    return True


def cmd_clean(args, host: PluginHost) -> int:
    from gpulint.run import cache
    from gpulint.run.engine import Scanner

    start = Path(args.path)
    if _missing(start):
        return EXIT_ERROR
    cfg = _config(args, start, host)
    root = Scanner(host, cfg)._project_root(Path(os.path.realpath(start)))
    try:
        removed = cache.remove(root)
    except OSError as exc:
        print(f"gpulint: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"removed {removed}" if removed else f"no cache at {cache.cache_dir(root)}")
    return EXIT_OK


def cmd_scan(args, host: PluginHost) -> int:
    from dataclasses import replace

    from gpulint.run.engine import ScanError, ScanRequest, Scanner
    from gpulint.report import ReportError, ReportOptions, render

    stdin_text = None
    paths = [Path(p) for p in args.paths]
    if args.paths == ["-"]:
        if not args.stdin_filename:
            raise UsageError("'scan -' needs --stdin-filename PATH (the file the text belongs to)")
        stdin_text = sys.stdin.read()
        paths = [Path(args.stdin_filename)]
    elif "-" in args.paths:
        raise UsageError("'-' (standard input) cannot be combined with other paths")
    for p in paths:
        if stdin_text is None and _missing(p):
            return EXIT_ERROR
    if args.jobs < 0:
        raise UsageError("--jobs must be at least 1 (or 0: one per usable CPU)")
    if args.format not in host.registry.formats:
        raise UsageError(f"unknown format '{args.format}' (known: {', '.join(sorted(host.registry.formats))})")
    if args.unsafe_fixes and not (args.fix or args.diff):
        raise UsageError("--unsafe-fixes only means something with --fix or --diff")
    if args.diff_base and (args.fix or args.diff):
        raise UsageError("--fix/--diff cannot be combined with --diff-base: fix the tree, then compare it")
    if args.diff_base and stdin_text is not None:
        raise UsageError("--diff-base cannot be used with standard input")
    context = _stdin_context(args.stdin_filename) if stdin_text is not None else None
    cfg = _config(args, paths[0] if context is None else context, host)
    if args.extend_select:
        for code in args.extend_select:
            if code != "ALL" and not any(r.startswith(code) for r in host.registry.rules):
                raise UsageError(f"--extend-select: unknown rule code or prefix '{code}' (see `gpulint rules`)")
        cfg = replace(cfg, extend_select=list(cfg.extend_select) + list(args.extend_select))
    scanner = Scanner(host, cfg)
    req = ScanRequest(
        paths=paths if context is None else [context],
        select=args.select,
        ignore=args.ignore,
        baseline=args.baseline or (Path(cfg.root or ".") / cfg.baseline if cfg.baseline else None),
        write_baseline=args.write_baseline,
        stdin_filename=args.stdin_filename if stdin_text is not None else None,
        stdin_text=stdin_text,
        jobs=args.jobs,
        cache=not args.no_cache,
    )
    bar = _progress_bar(args, stdin_text is not None)
    try:
        result, _ = scanner.scan(replace(req, progress=bar.update if bar else None))
        if args.diff_base:
            result = _against_base(args.diff_base, result, paths, cfg, host, req)
    except ScanError as exc:
        print(f"gpulint: {exc}", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if bar:
            bar.close()
    for st in host.statuses:
        if not st.ok:  # its rules did not run: say so on every scan, not only in `gpulint plugins`
            print(f"gpulint: warning: plugin {st.name} ({st.module}) failed to load, its rules did not run: {st.error}",
                  file=sys.stderr)
    fail_on = Severity(args.fail_on) if args.fail_on else cfg.fail_on
    if args.fix or args.diff:
        outcome = _run_fixes(args, scanner, req, result)
        if args.diff:
            return outcome
        result = outcome
    opts = ReportOptions(show_guidance=args.show_guidance, color=_color(args), quiet=args.quiet, verbose=args.verbose)
    reads_fixes = getattr(host.registry.formats.get(args.format), "reads_fixes", None)  # a plugin's may lack it
    if args.statistics or reads_fixes is None or reads_fixes(opts):
        # checking each fix against the files costs a libcst import and parses: only for output that shows fixes
        result.fixable = _fixable(scanner, req, result)
    result.fail_on = fail_on
    if args.fail_on_cost is not None:
        from gpulint.core.result import CostGate

        if result.diff_base is not None:  # against the base: the new spend, with the increase of costlier findings
            d = result.diff_base
            result.cost_gate = CostGate(args.fail_on_cost, d.usd_per_hour_new, [f for f in d.priced if usd_of(f) > 0])
        else:
            result.cost_gate = CostGate(args.fail_on_cost, result.avoidable_total(), result.priced())
    if args.statistics:
        text = _statistics(result, args.format)
    else:
        try:
            text = render(result, args.format, opts, host.registry.formats)
        except ReportError as exc:
            raise UsageError(str(exc)) from None
    out = sys.stderr if (args.fix and stdin_text is not None and not args.output) else sys.stdout
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text if text.endswith("\n") or not text else text + "\n", encoding="utf-8")
    elif text:
        out.write(text if text.endswith("\n") else text + "\n")
    if args.verbose and result.errors:
        for tb in result.errors:
            print(tb, file=sys.stderr)
    if args.verbose and scanner.last_cache is not None:
        c = scanner.last_cache
        whole = " (nothing changed, so the last scan's result was reused)" if c.scan_reused else ""
        print(f"gpulint: cache {c.directory}: {c.hits} file results reused, {c.misses} files read{whole}", file=sys.stderr)
    if req.write_baseline and not args.diff:
        # recording today's findings is the job asked for, not a failed check: say what was written and exit 0
        written = _baseline_entries(req.write_baseline)
        print(f"gpulint: wrote {written} finding{'' if written == 1 else 's'} to {req.write_baseline}", file=sys.stderr)
        return EXIT_OK
    gate = result.cost_gate
    if gate is not None and gate.failed:
        # the text summary on standard output says it already; without it (--quiet, --statistics, another format,
        # --output) the exit 1 would have no reason anywhere
        if args.format != "text" or args.output or args.quiet or args.statistics:
            print(f"gpulint: cost gate failed: {gate.total:.2f} USD/h avoidable is more than the --fail-on-cost limit "
                  f"of {gate.limit:g} USD/h ({len(gate.contributors)} priced finding(s))", file=sys.stderr)
        return EXIT_FINDINGS
    if args.exit_zero:
        return EXIT_OK
    return EXIT_FINDINGS if any(f.severity.rank >= fail_on.rank for f in result.findings) else EXIT_OK


def _baseline_entries(path: Path) -> int:
    """How many findings the baseline file just written records."""
    import json

    try:
        return len(json.loads(path.read_text(encoding="utf-8"))["findings"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0


def _against_base(ref: str, result, paths: list[Path], cfg: Config, host: PluginHost, req):
    """Keep only the findings whose fingerprints the merge base of `ref` and HEAD does not have."""
    from dataclasses import replace

    from gpulint.run import diffbase
    from gpulint.run.engine import Scanner
    from gpulint.core.result import DiffBase, ScanResult

    try:
        top = diffbase.repo_top(paths[0])
        commit = diffbase.merge_base(top, ref)
        with diffbase.worktree(top, commit) as tree:
            base_paths = [diffbase.map_path(p, top, tree) for p in paths]
            existing = [p for p in base_paths if p.exists()]
            if existing:
                base_req = replace(req, paths=existing, write_baseline=None, buffers={}, progress=None,
                                   cache=False)  # a temporary tree: its cache would never be hit again
                base, _ = Scanner(host, diffbase.map_config(cfg, top, tree)).scan(base_req)
            else:  # every path given is new since the base
                base = ScanResult(root=str(tree))
    except diffbase.DiffBaseError as exc:
        raise UsageError(str(exc)) from None
    was = {f.fingerprint: usd_of(f) for f in base.findings}
    now = {f.fingerprint for f in result.findings}
    reported, priced, costlier = [], [], {}
    for f in result.findings:
        if f.fingerprint not in was:
            reported.append(f)
            priced.append(f)
        elif usd_of(f) - was[f.fingerprint] >= 0.01:
            # the same finding, more expensive now (a bigger instance): the increase is new spend
            reported.append(f)
            costlier[f.fingerprint] = was[f.fingerprint]
            priced.append(f.with_(cost_impact=replace(f.cost_impact, usd_per_hour=round(usd_of(f) - was[f.fingerprint], 2))))
    head_total = result.avoidable_total()
    new_spend = ScanResult(root=result.root, findings=priced, workloads=result.workloads).avoidable_total()
    result.findings = reported
    result.diff_base = DiffBase(ref, commit, len(base.findings), len(reported) - len(costlier), len(set(was) - now),
                                base.avoidable_total(), head_total, new_spend, costlier, priced)
    return result


def usd_of(f) -> float:
    v = f.cost_impact.usd_per_hour
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _fix_io(scanner, req):
    """How fixes read files (unsaved buffers and standard input first), learn their kind and check they still parse."""
    from gpulint.run.engine import analyze_file

    root = Path(scanner.last_root)
    stdin_rel = _stdin_rel(req, root)

    def read(rel: str) -> str | None:
        if stdin_rel is not None and rel == stdin_rel:
            return req.stdin_text
        buf = req.buffers.get(str(root / rel))
        if buf is not None:
            return buf
        try:
            return (root / rel).read_bytes().decode("utf-8-sig")
        except (OSError, UnicodeDecodeError):
            return None

    def kind_of(rel: str) -> str | None:
        r = scanner.last_results.get(rel)
        if r is not None:
            return r.kind
        from gpulint.run.discover import Classifier

        return Classifier(scanner.registry.file_kinds).kind_of(root / rel)

    def check(rel: str, text: str) -> str | None:
        kind = kind_of(rel)
        if not kind:
            return None
        res = analyze_file(rel, text, kind, scanner.registry, scanner.config, [], force=True)
        broken = [f for f in res.findings if f.code in ("SYS001", "SYS002")]
        return broken[0].message if broken else None

    return read, kind_of, check, stdin_rel


def _stdin_rel(req, root: Path) -> str | None:
    if not req.stdin_filename:
        return None
    from gpulint.run.engine import _rel

    return _rel(Path(req.stdin_filename), root)


def _fixable(scanner, req, result) -> tuple[int, int]:
    """Count the findings whose fix applies to the text as it is now, and drop the
    fix from those where it does not (a value computed at run time, code that moved),
    so no report offers a fix that --fix would refuse."""
    from gpulint.core.fixes import FixError, Materializer

    if not any(f.fix is not None for f in result.findings):
        return (0, 0)
    read, kind_of, _, _ = _fix_io(scanner, req)
    mat = Materializer(read, kind_of)
    safe = unsafe = 0
    kept = []
    for f in result.findings:
        if f.fix is not None:
            try:
                mat.edits(f.fix)
            except FixError:
                f = f.with_(fix=None)
            else:
                if f.fix.safe:
                    safe += 1
                else:
                    unsafe += 1
        kept.append(f)
    result.findings = kept
    return safe, unsafe


MAX_FIX_PASSES = 4


def _run_fixes(args, scanner, req, result):
    """--fix / --diff: apply fixes in passes (each pass re-scans the fixed text in memory,
    so fixes that touched the same code land in the next pass), then write the files,
    or print the diff. Returns the final result (--fix) or the exit code (--diff)."""
    from dataclasses import replace

    from gpulint.core.fixes import plan_fixes, unified_diff

    read, kind_of, check, stdin_rel = _fix_io(scanner, req)
    root = Path(scanner.last_root)
    originals: dict[str, str] = {}
    current: dict[str, str] = {}
    applied = []
    refused: list = []
    unsafe_left = 0
    for _ in range(MAX_FIX_PASSES):
        plan = plan_fixes(result.findings, read, kind_of, check, unsafe=args.unsafe_fixes,
                          only_paths={stdin_rel} if stdin_rel is not None else None)
        refused = plan.refused
        unsafe_left = plan.unsafe_available
        if not plan.texts:
            break
        buffers = dict(req.buffers)
        for rel, text in plan.texts.items():
            originals.setdefault(rel, plan.originals[rel])
            current[rel] = text
            buffers[str(root / rel)] = text
        applied += plan.applied
        req = replace(req, buffers=buffers, write_baseline=None if args.diff else req.write_baseline,
                      stdin_text=current.get(stdin_rel, req.stdin_text) if stdin_rel is not None else None)
        result, _ = scanner.scan(req)
        read, kind_of, check, stdin_rel = _fix_io(scanner, req)
    left = {f.fingerprint for f in result.findings}
    stuck = [f for f in applied if f.fingerprint in left and f.code not in ("SYS004",)]
    files = sorted(p for p in current if current[p] != originals[p])
    verb = "Would fix" if args.diff else "Fixed"
    n = len(applied)
    msg = f"gpulint: {verb} {n} finding{'s' if n != 1 else ''} in {len(files)} file{'s' if len(files) != 1 else ''}"
    if unsafe_left and not args.unsafe_fixes:
        msg += f" ({unsafe_left} more with --unsafe-fixes)"
    print(msg + ".", file=sys.stderr)
    for f, why in refused:
        print(f"gpulint: not fixed: {f.code} {f.loc.path}:{f.loc.line}: {why}", file=sys.stderr)
    for f in stuck:
        print(f"gpulint: the fix of {f.code} at {f.loc.path}:{f.loc.line} did not remove the finding; please report it", file=sys.stderr)
    if args.diff:
        diff = unified_diff(originals, {p: current[p] for p in files})
        if diff:
            sys.stdout.write(diff)
        return EXIT_FINDINGS if diff else EXIT_OK
    for rel in files:
        if rel == stdin_rel:
            continue
        path = root / rel
        data = current[rel]
        raw = path.read_bytes()
        if raw.startswith(b"\xef\xbb\xbf"):  # keep a byte-order mark the file had
            path.write_bytes(b"\xef\xbb\xbf" + data.encode("utf-8"))
        else:
            path.write_bytes(data.encode("utf-8"))
    if stdin_rel is not None:
        sys.stdout.write(current.get(stdin_rel, req.stdin_text or ""))
    return result


def _statistics(result, fmt: str) -> str:
    """Findings per rule, most frequent first, as `ruff --statistics` prints them."""
    from collections import Counter

    counts = Counter(f.code for f in result.findings)
    names = {f.code: f.name for f in result.findings}
    fixable = {}
    for f in result.findings:
        if f.fix is not None:
            fixable[f.code] = "safe" if f.fix.safe or fixable.get(f.code) == "safe" else "unsafe"
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if fmt == "json":
        return json.dumps([{"code": c, "name": names[c], "count": n, "fixable": c in fixable,
                            "applicability": fixable.get(c)} for c, n in rows], indent=2)
    if not rows:
        return ""
    width = max(len(str(n)) for _, n in rows)
    cw = max(len(c) for c, _ in rows)
    mark = {"safe": "[*]", "unsafe": "[-]"}
    return "\n".join(f"{n:>{width}}\t{c:<{cw}}\t{mark.get(fixable.get(c), '[ ]')} {names[c]}" for c, n in rows)


def cmd_rules(args, host: PluginHost) -> int:
    from gpulint.core.config import is_enabled

    cfg = _config(args, Path("."), host)
    rows = []
    for code, cls in sorted(host.registry.rules.items()):
        rows.append({
            "code": code,
            "name": cls.name,
            "severity": cfg.severity.get(code, cls.severity).value,
            "family": cls.family,
            "since": cls.since,
            "enabled": is_enabled(code, cls.default_enabled, cfg, args.select, args.ignore),
            "summary": cls.summary(),
            "plugin": host.registry.rule_plugin.get(code, ""),
        })
    if args.format == "json":
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    width = max((len(r["name"]) for r in rows), default=10)
    for r in rows:
        mark = "on " if r["enabled"] else "off"
        print(f"{r['code']:<8} {mark} {r['severity']:<7} {r['name']:<{width}}  {r['summary']}")
    failed = [s for s in host.statuses if not s.ok]
    if failed:
        print(f"\n{len(failed)} plugin(s) failed to load; see `gpulint plugins`.", file=sys.stderr)
    return EXIT_OK


def cmd_explain(args, host: PluginHost) -> int:
    from gpulint.report.explain import explain

    code = args.code.upper()
    cls = host.registry.rules.get(code)
    if cls is None:
        close = [c for c in host.registry.rules if c.startswith(code[:3])]
        hint = f" (rules of that family: {', '.join(sorted(close))})" if close else ""
        print(f"gpulint: no rule {args.code}{hint}; `gpulint rules` lists them", file=sys.stderr)
        return EXIT_ERROR
    print(explain(cls, args.format))
    return EXIT_OK


def cmd_workloads(args, host: PluginHost) -> int:
    from gpulint.run.engine import ScanError, ScanRequest, Scanner
    from gpulint.report.workloads_text import render_workloads

    path = Path(args.path)
    if _missing(path):
        return EXIT_ERROR
    cfg = _config(args, path, host)
    try:
        result, _ = Scanner(host, cfg).scan(ScanRequest(paths=[path], select=["SYS"], cache=not args.no_cache))
    except ScanError as exc:
        print(f"gpulint: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.format == "json":
        print(json.dumps({"version": __version__, "root": str(args.path), "workloads": result.workloads,
                          "computes": result.computes, "launchers": result.launchers}, indent=2, default=str))
    else:
        sys.stdout.write(render_workloads(result))
    return EXIT_OK


def cmd_plugins(args, host: PluginHost) -> int:
    reg = host.registry
    rows = []
    for st in host.statuses:
        provides = sorted(c for c, p in reg.rule_plugin.items() if p == st.name)
        rows.append({"name": st.name, "module": st.module, "distribution": st.distribution, "ok": st.ok, "error": st.error, "rules": provides})
    if args.format == "json":
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            state = "loaded" if r["ok"] else "FAILED"
            extra = f" rules: {', '.join(r['rules'])}" if r["rules"] else ""
            dist = f" ({r['distribution']})" if r["distribution"] else ""
            print(f"{r['name']:<12} {state:<7} {r['module']}{dist}{extra}")
            if r["error"]:
                print(f"{'':<12} reason: {r['error']}")
    return EXIT_OK


def cmd_lsp(args, host: PluginHost) -> int:
    try:
        from gpulint.lsp.server import serve
    except ImportError as exc:
        print(f"gpulint: the language server needs pygls: pip install 'gpulint[lsp]' ({exc})", file=sys.stderr)
        return EXIT_ERROR
    return serve(host) or EXIT_OK


def cmd_facts(args, host: PluginHost) -> int:
    from gpulint.core import facts
    host.registry  # plugins may register kinds of their own when they load
    if args.format == "json":
        print(json.dumps([{"kind": k.kind, "family": k.family, "schema": k.schema, "doc": k.doc, "targeted": k.targeted}
                          for k in sorted(facts.KINDS.values(), key=lambda k: k.kind)], indent=2))
    else:
        print(facts.document())
    return EXIT_OK


def cmd_catalogue(args, host: PluginHost) -> int:
    from gpulint.cli.catalogue import run

    return run(args, host)


COMMANDS = {"facts": cmd_facts, "scan": cmd_scan, "rules": cmd_rules, "explain": cmd_explain, "workloads": cmd_workloads, "plugins": cmd_plugins,
            "lsp": cmd_lsp, "catalogue": cmd_catalogue, "clean": cmd_clean}
