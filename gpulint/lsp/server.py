"""``gpulint lsp``: the language server, built on pygls.

Every scan covers whole workspace roots, because findings cross files (the
Terraform decides whether a training script runs on GPUs). Events hand a
snapshot of the open documents' unsaved text to a single worker thread
(``worker.LatestWins``): didChange after a 300 ms pause, didOpen/didSave/
didClose at once. When a scan finishes, the event loop publishes the
diagnostics of every file whose diagnostics changed and clears those that
disappeared. A configuration the CLI would refuse is shown with
window/showMessage and leaves the last good diagnostics in place.
"""
from __future__ import annotations

import asyncio
import logging
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import from_fs_path, to_fs_path
from pygls.workspace.position_codec import PositionCodec

from gpulint import __version__
from gpulint.lsp import actions, convert
from gpulint.lsp.worker import LatestWins
from gpulint.core.model import Finding
from gpulint.run.plugins import PluginHost

log = logging.getLogger("gpulint.lsp")

CHANGE_DELAY = 0.3  # seconds of quiet typing before a re-scan
OPEN_DELAY = 0.05  # editors open several files at once: one scan for all of them


@dataclass(frozen=True)
class Snapshot:
    roots: tuple[Path, ...]  # workspace folders (resolved)
    loose: tuple[Path, ...]  # open files outside every root, scanned on their own
    buffers: dict[str, str]  # resolved absolute path -> unsaved text of the open document
    versions: dict[str, int | None]
    uris: dict[str, str]  # resolved absolute path -> the URI the client opened it as
    codec: PositionCodec


@dataclass
class Entry:
    """A published diagnostic and what hover and code actions need about it."""

    finding: Finding
    diagnostic: types.Diagnostic
    path: str  # resolved absolute path
    kind: str


@dataclass
class Outcome:
    entries: dict[str, list[Entry]] = field(default_factory=dict)  # uri -> entries
    scanned: list[Path] = field(default_factory=list)  # roots whose diagnostics are now authoritative
    failed: list[Path] = field(default_factory=list)  # roots that keep their last good diagnostics
    problems: list[str] = field(default_factory=list)  # shown to the user once each


def _under(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _cli_config(start: Path, host: PluginHost):
    """The configuration exactly as `gpulint scan` reads it (lookup, schema, rule codes)."""
    from gpulint.core.config import read_config

    return read_config(start, host)


class Analyzer:
    """Runs in the worker thread: snapshot in, diagnostics per URI out."""

    def __init__(self, host: PluginHost):
        self.host = host

    def __call__(self, snap: Snapshot) -> Outcome:
        out = Outcome()
        jobs = [(root, root) for root in snap.roots] + [(p, p.parent) for p in snap.loose]
        for target, start in jobs:
            self._scan_one(target, start, snap, out)
        return out

    def _scan_one(self, target: Path, start: Path, snap: Snapshot, out: Outcome) -> None:
        from gpulint.run.baseline import BaselineError
        from gpulint.core.config import UsageError
        from gpulint.core.config import ConfigError
        from gpulint.run.engine import ScanError, ScanRequest, Scanner

        try:
            cfg = _cli_config(start, self.host)
        except (ConfigError, UsageError) as exc:
            out.failed.append(target)
            out.problems.append(f"gpulint: configuration error, diagnostics are not updated: {exc}")
            return
        baseline = None
        if cfg.baseline:
            candidate = Path(cfg.root or start) / cfg.baseline
            baseline = candidate if candidate.is_file() else None
        scanner = Scanner(self.host, cfg)
        try:
            result, _ = scanner.scan(ScanRequest(paths=[target], buffers=snap.buffers, baseline=baseline))
        except (ScanError, BaselineError) as exc:
            out.failed.append(target)
            out.problems.append(f"gpulint: {exc}")
            return
        except Exception as exc:  # a bug in gpulint: keep serving, keep the last good diagnostics
            log.exception("scan of %s failed", target)
            out.failed.append(target)
            out.problems.append(f"gpulint: internal error while scanning {target}: {type(exc).__name__}: {exc}")
            return
        root = Path(scanner.last_root or result.root).resolve()
        results = scanner.last_results
        kinds = {rel: r.kind for rel, r in results.items()}
        texts: dict[str, list[str] | None] = {}

        def lines_of(rel: str) -> list[str] | None:
            if rel not in texts:
                texts[rel] = _read_lines(root / rel, snap.buffers)
            return texts[rel]

        def uri_of(rel: str) -> str:
            p = (root / rel).resolve()
            return snap.uris.get(str(p)) or from_fs_path(str(p)) or p.as_uri()

        for f in result.findings:
            abs_path = (root / f.loc.path).resolve()
            uri = uri_of(f.loc.path)
            diag = convert.diagnostic(f, lines_of(f.loc.path), snap.codec, lines_of, uri_of)
            kind = kinds.get(f.loc.path) or self._kind_of(abs_path)
            out.entries.setdefault(uri, []).append(Entry(f, diag, str(abs_path), kind))
        out.scanned.append(target)

    def _kind_of(self, path: Path) -> str:
        from gpulint.run.discover import Classifier

        return Classifier(self.host.registry.file_kinds).kind_of(path) or ""


def _read_lines(path: Path, buffers: dict[str, str]) -> list[str] | None:
    text = buffers.get(str(path))
    if text is None:
        try:
            text = path.read_bytes().decode("utf-8-sig", errors="replace")
        except OSError:
            return None
    return text.splitlines()


class GpulintLanguageServer(LanguageServer):
    def __init__(self, host: PluginHost):
        super().__init__("gpulint", __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.host = host
        self.entries: dict[str, list[Entry]] = {}  # uri -> what is published for it
        self.published: dict[str, list[types.Diagnostic]] = {}
        self.versions: dict[str, int | None] = {}  # uri -> document version the entries were computed for
        self.shown: set[str] = set()  # problems already shown (not repeated on every keystroke)
        self.shut_down = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.worker = LatestWins(Analyzer(host), self._deliver)

    # -- snapshots (event loop thread) -------------------------------------------------
    def roots(self) -> list[Path]:
        ws = self.workspace
        uris = [f.uri for f in ws.folders.values()] or ([ws.root_uri] if ws.root_uri else [])
        out = []
        for uri in uris:
            p = to_fs_path(uri)
            if p:
                rp = Path(p).resolve()
                if rp.is_dir() and rp not in out:
                    out.append(rp)
        return out

    def snapshot(self) -> Snapshot:
        roots = self.roots()
        buffers, versions, uris, loose = {}, {}, {}, []
        for uri, doc in list(self.workspace.text_documents.items()):
            p = to_fs_path(uri)
            if not p or not uri.startswith("file:"):
                continue
            rp = Path(p).resolve()
            key = str(rp)
            buffers[key] = doc.source
            versions[key] = doc.version
            uris[key] = uri
            if not any(_under(rp, r) for r in roots) and rp.parent.is_dir():
                loose.append(rp)
        return Snapshot(tuple(roots), tuple(loose), buffers, versions, uris, self.workspace.position_codec)

    def request_scan(self, delay: float) -> None:
        if self.loop is None:
            try:
                self.loop = asyncio.get_running_loop()
            except RuntimeError:
                self.loop = None
        self.worker.submit(self.snapshot(), delay)

    # -- results (worker thread -> event loop thread) -----------------------------------
    def _deliver(self, snap: Snapshot, outcome: Outcome) -> None:
        if self.loop is None or self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self._publish, snap, outcome)

    def _publish(self, snap: Snapshot, outcome: Outcome) -> None:
        for msg in outcome.problems:
            if msg not in self.shown:
                self.shown.add(msg)
                self.window_show_message(types.ShowMessageParams(type=types.MessageType.Error, message=msg))
        if outcome.scanned and not outcome.failed:
            self.shown.clear()  # a fixed config that breaks again is shown again

        def authoritative(uri: str) -> bool:
            p = to_fs_path(uri)
            rp = Path(p).resolve() if p else None
            if rp is None:
                return False
            if any(_under(rp, r) for r in outcome.failed):
                return False
            return any(_under(rp, r) for r in outcome.scanned)

        open_uris = set(snap.uris.values())
        for uri in sorted(set(self.published) | set(outcome.entries) | open_uris):
            if not authoritative(uri):
                continue
            entries = outcome.entries.get(uri, [])
            diags = [e.diagnostic for e in entries]
            path = next((k for k, v in snap.uris.items() if v == uri), None)
            version = snap.versions.get(path) if path else None
            self.entries[uri] = entries
            self.versions[uri] = version
            if uri in self.published and self.published[uri] == diags:
                continue
            self.published[uri] = diags
            self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=version))

    # -- lookups for hover and code actions ---------------------------------------------
    def current(self, uri: str) -> list[Entry]:
        """Entries of a document, only if they describe the text the editor has now."""
        entries = self.entries.get(uri, [])
        if not entries:
            return []
        doc = self.workspace.text_documents.get(uri)
        if doc is not None and self.versions.get(uri) is not None and doc.version != self.versions.get(uri):
            return []  # the text moved on; a re-scan is on its way
        return entries


def _doc_text(ls: GpulintLanguageServer, uri: str, path: str) -> str | None:
    doc = ls.workspace.text_documents.get(uri)
    if doc is not None:
        return doc.source
    try:
        return Path(path).read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None


def _text_edit(lines: list[str], edit: actions.Edit, codec: PositionCodec) -> types.TextEdit:
    def pos(line: int, char: int) -> types.Position:
        if line >= len(lines):
            return types.Position(line, 0)
        return codec.position_to_client_units(lines, types.Position(line, char))

    return types.TextEdit(types.Range(pos(edit.start_line, edit.start_char), pos(edit.end_line, edit.end_char)), edit.text)


def build_server(host: PluginHost) -> GpulintLanguageServer:
    ls = GpulintLanguageServer(host)

    @ls.feature(types.INITIALIZED)
    def initialized(ls: GpulintLanguageServer, params: types.InitializedParams):
        ls.request_scan(0.0)  # workspace-wide diagnostics from the start

    @ls.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GpulintLanguageServer, params: types.DidOpenTextDocumentParams):
        ls.request_scan(OPEN_DELAY)

    @ls.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GpulintLanguageServer, params: types.DidChangeTextDocumentParams):
        ls.request_scan(CHANGE_DELAY)

    @ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: GpulintLanguageServer, params: types.DidSaveTextDocumentParams):
        ls.request_scan(0.0)  # a saved config file changes what every later scan reads

    @ls.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GpulintLanguageServer, params: types.DidCloseTextDocumentParams):
        ls.request_scan(OPEN_DELAY)  # unsaved text is gone: back to the file on disk

    @ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched(ls: GpulintLanguageServer, params: types.DidChangeWatchedFilesParams):
        ls.request_scan(CHANGE_DELAY)

    @ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    def configuration(ls: GpulintLanguageServer, params: types.DidChangeConfigurationParams):
        ls.request_scan(0.0)

    @ls.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: GpulintLanguageServer, params: types.HoverParams) -> types.Hover | None:
        hits = [e for e in ls.current(params.text_document.uri) if convert.contains(e.diagnostic.range, params.position)]
        if not hits:
            return None
        md = convert.hover_markdown([e.finding for e in hits])
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=md), range=hits[0].diagnostic.range)

    @ls.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=False))
    def code_action(ls: GpulintLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
        return _code_actions(ls, params) or None

    @ls.feature(types.SHUTDOWN)
    def shutdown(ls: GpulintLanguageServer, *args: Any):
        ls.shut_down = True
        ls.worker.stop()

    return ls


def _code_actions(ls: GpulintLanguageServer, params: types.CodeActionParams) -> list[types.CodeAction]:
    uri = params.text_document.uri
    only = params.context.only
    if only and not any(str(k).startswith(str(types.CodeActionKind.QuickFix)) for k in only):
        return []
    entries = [e for e in ls.current(uri) if convert.overlaps_lines(e.diagnostic.range, params.range)]
    if not entries:
        return []
    text = _doc_text(ls, uri, entries[0].path)
    if text is None:
        return []
    lines = text.splitlines()
    codec = ls.workspace.position_codec
    comment_of = {k.name: tuple(k.comment) for k in ls.host.registry.file_kinds}
    out: list[types.CodeAction] = []
    seen: set[tuple[str, int | None]] = set()
    for e in entries:
        f = e.finding
        fix = _quick_fix(ls, e)
        if fix is not None:
            root = _root_of(e)
            changes: dict[str, list[types.TextEdit]] = {}
            for fe in fix.edits:
                target_path = str((root / fe.path).resolve())
                target = uri if fe.path == f.loc.path else ls_uri(ls, target_path)
                target_text = text if fe.path == f.loc.path else (_doc_text(ls, target, target_path) or "")
                changes.setdefault(target, []).append(_text_edit(
                    target_text.splitlines(), actions.Edit(fe.start_line, fe.start_char, fe.end_line, fe.end_char, fe.text), codec))
            if changes:
                out.append(types.CodeAction(title=fix.title, kind=types.CodeActionKind.QuickFix, diagnostics=[e.diagnostic],
                                            is_preferred=fix.safe, edit=types.WorkspaceEdit(changes=changes)))
        comment = comment_of.get(e.kind, ("#",))
        line = e.diagnostic.range.start.line
        if (f.code, line) not in seen:
            seen.add((f.code, line))
            edit = actions.line_suppression(e.kind, comment, text, line, f.code)
            if edit is not None:
                out.append(types.CodeAction(title=f"Suppress {f.code} on this line", kind=types.CodeActionKind.QuickFix,
                                            diagnostics=[e.diagnostic],
                                            edit=types.WorkspaceEdit(changes={uri: [_text_edit(lines, edit, codec)]})))
        if (f.code, None) not in seen:
            seen.add((f.code, None))
            edit = actions.file_suppression(e.kind, comment, text, f.code)
            if edit is not None:
                out.append(types.CodeAction(title=f"Suppress {f.code} in this file", kind=types.CodeActionKind.QuickFix,
                                            diagnostics=[e.diagnostic],
                                            edit=types.WorkspaceEdit(changes={uri: [_text_edit(lines, edit, codec)]})))
    return out


def _root_of(e: Entry) -> Path:
    """The scan root of an entry: its file's absolute path minus the finding's root-relative path."""
    p = Path(e.path)
    for _ in Path(e.finding.loc.path).parts:
        p = p.parent
    return p


def ls_uri(ls: GpulintLanguageServer, path: str) -> str:
    for uri in ls.workspace.text_documents:
        fs = to_fs_path(uri)
        if fs and str(Path(fs).resolve()) == path:
            return uri
    return from_fs_path(path) or Path(path).as_uri()


def _quick_fix(ls: GpulintLanguageServer, e: Entry) -> actions.QuickFix | None:
    """The entry's fix, worked out against the documents as the editor has them now."""
    if e.finding.fix is None:
        return None
    root = _root_of(e)

    def read(rel: str) -> str | None:
        path = str((root / rel).resolve())
        return _doc_text(ls, ls_uri(ls, path), path)

    def kind_of(rel: str) -> str | None:
        if rel == e.finding.loc.path:
            return e.kind
        from gpulint.run.discover import Classifier

        return Classifier(ls.host.registry.file_kinds).kind_of(root / rel)

    return actions.finding_fix(e.finding, read, kind_of)


def serve(host: PluginHost | None = None) -> int:
    """Run the server over stdio until the client says exit; 0 after a clean shutdown."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="gpulint-lsp %(levelname)s %(name)s: %(message)s")
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # anything printed by accident must not corrupt the JSON-RPC stream
    ls = build_server(host or PluginHost())
    try:
        ls.start_io(stdin, stdout)
    finally:
        ls.worker.stop()
        sys.stdout = real_stdout
    return 0 if ls.shut_down else 1
