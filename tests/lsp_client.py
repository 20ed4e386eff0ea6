"""A small JSON-RPC-over-stdio LSP client for tests: starts a server process,
sends requests and notifications, records every notification the server sends.

Waiting is by condition with generous timeouts (machines are shared); no test
asserts on how long anything takes.
"""
from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable

TIMEOUT = 120.0


class LspError(Exception):
    pass


class LspClient:
    def __init__(self, cmd: list[str], cwd: str | Path | None = None, env: dict | None = None):
        self.proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self._cond = threading.Condition()
        self._next_id = 0
        self._responses: dict[int, dict] = {}
        self.notifications: list[dict] = []
        self.server_requests: list[dict] = []
        self.diagnostics: dict[str, list[dict]] = {}  # uri -> latest published
        self.publish_count: dict[str, int] = {}
        self.stderr_lines: list[str] = []
        self._write_lock = threading.Lock()
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    # -- wire ---------------------------------------------------------------------------
    def _send(self, msg: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **msg}).encode("utf-8")
        with self._write_lock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read_stdout(self) -> None:
        out = self.proc.stdout
        while True:
            headers = {}
            while True:
                line = out.readline()
                if not line:
                    with self._cond:
                        self._cond.notify_all()
                    return
                line = line.strip()
                if not line:
                    break
                k, _, v = line.decode("ascii").partition(":")
                headers[k.strip().lower()] = v.strip()
            body = out.read(int(headers["content-length"]))
            msg = json.loads(body)
            self._handle(msg)

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr_lines.append(line.decode("utf-8", "replace"))

    def _handle(self, msg: dict) -> None:
        if "method" in msg and "id" in msg:  # a request from the server: accept it
            self.server_requests.append(msg)
            self._send({"id": msg["id"], "result": None})
            return
        with self._cond:
            if "method" in msg:
                self.notifications.append(msg)
                if msg["method"] == "textDocument/publishDiagnostics":
                    uri = msg["params"]["uri"]
                    self.diagnostics[uri] = msg["params"]["diagnostics"]
                    self.publish_count[uri] = self.publish_count.get(uri, 0) + 1
            else:
                self._responses[msg["id"]] = msg
            self._cond.notify_all()

    # -- API ----------------------------------------------------------------------------
    def request(self, method: str, params: Any = None, timeout: float = TIMEOUT) -> Any:
        with self._cond:
            self._next_id += 1
            rid = self._next_id
        self._send({"id": rid, "method": method, "params": params})
        with self._cond:
            if not self._cond.wait_for(lambda: rid in self._responses or self.proc.poll() is not None, timeout):
                raise LspError(f"no response to {method} within {timeout}s; stderr: {''.join(self.stderr_lines)[-2000:]}")
            if rid not in self._responses:
                raise LspError(f"server exited ({self.proc.returncode}) during {method}; stderr: {''.join(self.stderr_lines)[-2000:]}")
            resp = self._responses.pop(rid)
        if "error" in resp:
            raise LspError(f"{method}: {resp['error']}")
        return resp.get("result")

    def notify(self, method: str, params: Any = None) -> None:
        self._send({"method": method, "params": params})

    def wait_until(self, predicate: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: predicate() or self.proc.poll() is not None, timeout) or not predicate():
                raise LspError(f"timed out waiting for {what}; diagnostics: {json.dumps(self.diagnostics)[:3000]}; "
                               f"stderr: {''.join(self.stderr_lines)[-2000:]}")

    def wait_diagnostics(self, uri: str, predicate: Callable[[list[dict]], bool], what: str = "", timeout: float = TIMEOUT) -> list[dict]:
        self.wait_until(lambda: uri in self.diagnostics and predicate(self.diagnostics[uri]), what or f"diagnostics of {uri}", timeout)
        return self.diagnostics[uri]

    def messages(self, method: str) -> list[dict]:
        with self._cond:
            return [n["params"] for n in self.notifications if n["method"] == method]

    # -- session helpers ------------------------------------------------------------------
    def initialize(self, root: Path, capabilities: dict | None = None) -> dict:
        result = self.request("initialize", {
            "processId": None,
            "rootUri": root.resolve().as_uri(),
            "workspaceFolders": [{"uri": root.resolve().as_uri(), "name": root.name}],
            "capabilities": capabilities or {
                "textDocument": {"publishDiagnostics": {"relatedInformation": True},
                                 "hover": {"contentFormat": ["markdown", "plaintext"]},
                                 "codeAction": {"codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["quickfix"]}}}},
            },
        })
        self.notify("initialized", {})
        return result

    def open(self, path: Path, language: str = "python", version: int = 1) -> str:
        uri = path.resolve().as_uri()
        self.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": language, "version": version,
                                                              "text": path.read_text(encoding="utf-8")}})
        return uri

    def change_full(self, uri: str, text: str, version: int) -> None:
        self.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]})

    def shutdown(self, timeout: float = TIMEOUT) -> int:
        self.request("shutdown", None, timeout=timeout)
        self.notify("exit", None)
        try:
            return self.proc.wait(timeout=timeout)
        finally:
            self._close_pipes()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=TIMEOUT)
        self._close_pipes()

    def _close_pipes(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            try:
                stream.close()
            except Exception:
                pass
