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
from gpulint.baseline import BaselineError
from gpulint.config import Config, ConfigError, UsageError, read_config
from gpulint.model import Severity
from gpulint.plugins import PluginHost

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # exit 2 with a one-line message, as argparse does, but never a traceback
        self.print_usage(sys.stderr)
        raise UsageError(f"{self.prog}: {message}")


def _codes(text: str) -> list[str]:
    return [c.strip().upper() for c in text.split(",") if c.strip()]


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="gpulint", description="Audit ML training repositories for GPU spend mistakes.")
    p.add_argument("--version", action="version", version=f"gpulint {__version__}")
    sub = p.add_subparsers(dest="command", parser_class=_Parser)

    scan = sub.add_parser("scan", help="scan directories and files (default: .)")
    scan.add_argument("paths", nargs="*", default=["."], help="directories or files; '-' reads one file from standard input")
    scan.add_argument("--format", default="text", help="text (default), json, sarif, github")
    scan.add_argument("--output", "-o", type=Path, help="write the report to this file")
    scan.add_argument("--select", type=_codes, help="codes or family prefixes to enable, comma separated (AMP,SPOT001)")
    scan.add_argument("--ignore", type=_codes, help="codes or family prefixes to disable, comma separated")
    scan.add_argument("--fail-on", choices=[s.value for s in Severity], help="lowest severity that fails the run (default warning)")
    scan.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    scan.add_argument("--config", type=Path, help="configuration file (default: looked up from the scanned path)")
    scan.add_argument("--baseline", type=Path, help="report only findings not recorded in this baseline")
    scan.add_argument("--write-baseline", type=Path, help="record today's findings in this baseline file")
    scan.add_argument("--no-cache", action="store_true", help="accepted for forward compatibility: gpulint keeps no result cache yet")
    scan.add_argument("--jobs", "-j", type=int, default=1, help="parse and extract facts in N worker processes (default 1)")
    scan.add_argument("--show-guidance", action="store_true", help="text format: guidance and cost under each finding")
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

    plugins = sub.add_parser("plugins", help="loaded and failed plugins")
    plugins.add_argument("--format", choices=["text", "json"], default="text")

    facts = sub.add_parser("facts", help="the fact vocabulary: what readers say about files, and rules read")
    facts.add_argument("--format", choices=["markdown", "json"], default="markdown")

    sub.add_parser("lsp", help="a Language Server Protocol server over stdio")

    from gpulint import catalogue_cli

    catalogue_cli.add_parser(sub)
    return p


def main(argv: list[str] | None = None, host: PluginHost | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
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


def cmd_scan(args, host: PluginHost) -> int:
    from gpulint.engine import ScanError, ScanRequest, Scanner
    from gpulint.reports import ReportError, ReportOptions, render

    stdin_text = None
    paths = [Path(p) for p in args.paths]
    if args.paths == ["-"]:
        if not args.stdin_filename:
            raise UsageError("'scan -' needs --stdin-filename PATH (the file the text belongs to)")
        stdin_text = sys.stdin.read()
        paths = [Path(args.stdin_filename)]
        if not paths[0].parent.exists():
            raise UsageError(f"{paths[0].parent}: no such directory")
    elif "-" in args.paths:
        raise UsageError("'-' (standard input) cannot be combined with other paths")
    for p in paths:
        if stdin_text is None and not p.exists():
            print(f"gpulint: {p}: no such file or directory", file=sys.stderr)
            return EXIT_ERROR
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1")
    if args.format not in host.registry.formats:
        raise UsageError(f"unknown format '{args.format}' (known: {', '.join(sorted(host.registry.formats))})")
    cfg = _config(args, paths[0] if stdin_text is None else paths[0].parent, host)
    scanner = Scanner(host, cfg)
    req = ScanRequest(
        paths=paths if stdin_text is None else [paths[0].parent if paths[0].parent != Path("") else Path(".")],
        select=args.select,
        ignore=args.ignore,
        baseline=args.baseline or (Path(cfg.root or ".") / cfg.baseline if cfg.baseline else None),
        write_baseline=args.write_baseline,
        stdin_filename=args.stdin_filename if stdin_text is not None else None,
        stdin_text=stdin_text,
        jobs=args.jobs,
    )
    try:
        result, _ = scanner.scan(req)
    except ScanError as exc:
        print(f"gpulint: {exc}", file=sys.stderr)
        return EXIT_ERROR
    for st in host.statuses:
        if not st.ok:  # its rules did not run: say so on every scan, not only in `gpulint plugins`
            print(f"gpulint: warning: plugin {st.name} ({st.module}) failed to load, its rules did not run: {st.error}",
                  file=sys.stderr)
    color = args.output is None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    opts = ReportOptions(show_guidance=args.show_guidance, color=color, quiet=args.quiet, verbose=args.verbose)
    try:
        text = render(result, args.format, opts, host.registry.formats)
    except ReportError as exc:
        raise UsageError(str(exc)) from None
    if args.output:
        args.output.write_text(text if text.endswith("\n") or not text else text + "\n", encoding="utf-8")
    elif text:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    if args.verbose and result.errors:
        for tb in result.errors:
            print(tb, file=sys.stderr)
    if args.exit_zero:
        return EXIT_OK
    fail_on = Severity(args.fail_on) if args.fail_on else cfg.fail_on
    return EXIT_FINDINGS if any(f.severity.rank >= fail_on.rank for f in result.findings) else EXIT_OK


def cmd_rules(args, host: PluginHost) -> int:
    from gpulint.config import is_enabled

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
    from gpulint.reports.explain import explain

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
    from gpulint.engine import ScanError, ScanRequest, Scanner
    from gpulint.workload_report import render_workloads

    path = Path(args.path)
    if not path.exists():
        print(f"gpulint: {path}: no such file or directory", file=sys.stderr)
        return EXIT_ERROR
    cfg = _config(args, path, host)
    try:
        result, _ = Scanner(host, cfg).scan(ScanRequest(paths=[path], select=["SYS"]))
    except ScanError as exc:
        print(f"gpulint: {exc}", file=sys.stderr)
        return EXIT_ERROR
    if args.format == "json":
        print(json.dumps({"version": __version__, "root": str(args.path), "workloads": result.workloads,
                          "computes": result.computes}, indent=2, default=str))
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
    from gpulint import facts

    host.registry  # plugins may register kinds of their own when they load
    if args.format == "json":
        print(json.dumps([{"kind": k.kind, "family": k.family, "schema": k.schema, "doc": k.doc, "targeted": k.targeted}
                          for k in sorted(facts.KINDS.values(), key=lambda k: k.kind)], indent=2))
    else:
        print(facts.document())
    return EXIT_OK


def cmd_catalogue(args, host: PluginHost) -> int:
    from gpulint.catalogue_cli import run

    return run(args, host)


COMMANDS = {"facts": cmd_facts, "scan": cmd_scan, "rules": cmd_rules, "explain": cmd_explain, "workloads": cmd_workloads, "plugins": cmd_plugins,
            "lsp": cmd_lsp, "catalogue": cmd_catalogue}
