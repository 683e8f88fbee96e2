"""A synchronous LSP test client: ``onnxtext lsp`` in a subprocess, driven over stdio by pygls's client.

pygls's ``LanguageClient`` is asyncio-based; :class:`Client` runs its event loop in a background thread and
exposes blocking calls (``request``, ``notify``, ``wait_diagnostics``) so tests read like a script of what
an editor does. Also used by ``benchmarks/lsp_speed.py``.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient


class Client:
    def __init__(self, init_options: dict | None = None, cwd: str | None = None):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.client = LanguageClient("onnxtext-tests", "1")
        self.diagnostics: dict[str, list[tuple[int | None, list]]] = {}
        self.messages: list[str] = []
        self._cond = threading.Condition()

        @self.client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def _diags(params: lsp.PublishDiagnosticsParams):
            with self._cond:
                self.diagnostics.setdefault(params.uri, []).append((params.version, list(params.diagnostics),
                                                                    time.perf_counter()))
                self._cond.notify_all()

        @self.client.feature(lsp.WINDOW_SHOW_MESSAGE)
        def _message(params: lsp.ShowMessageParams):
            self.messages.append(params.message)

        self.run(self.client.start_io(sys.executable, "-m", "onnxtext", "lsp", cwd=cwd,
                                      env={**os.environ, "PYTHONUNBUFFERED": "1"}))
        self.init = self.run(self.client.initialize_async(lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(), initialization_options=init_options)))
        self.client.initialized(lsp.InitializedParams())
        self.versions: dict[str, int] = {}

    def run(self, coro, timeout: float = 60):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def call(self, fn, *args):
        """Run a plain (notification) method of the pygls client on its loop."""
        async def go():
            return fn(*args)
        return self.run(go())

    # ------------------------------------------------------------------------------------- documents
    def open(self, uri: str, text: str, language: str = "onnxtext") -> None:
        self.versions[uri] = 1
        self.call(self.client.text_document_did_open, lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri, language, 1, text)))

    def change(self, uri: str, text: str) -> int:
        """Replace the whole text (a full-content change event); returns the new version."""
        self.versions[uri] += 1
        self.call(self.client.text_document_did_change, lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=self.versions[uri], uri=uri),
            [lsp.TextDocumentContentChangeWholeDocument(text)]))
        return self.versions[uri]

    def edit(self, uri: str, line: int, character: int, end_line: int, end_character: int, new: str) -> int:
        """An incremental change of one range (0-based LSP positions)."""
        self.versions[uri] += 1
        rng = lsp.Range(lsp.Position(line, character), lsp.Position(end_line, end_character))
        self.call(self.client.text_document_did_change, lsp.DidChangeTextDocumentParams(
            lsp.VersionedTextDocumentIdentifier(version=self.versions[uri], uri=uri),
            [lsp.TextDocumentContentChangePartial(rng, new)]))
        return self.versions[uri]

    def wait_diagnostics(self, uri: str, version: int | None = None, timeout: float = 60) -> list:
        """The diagnostics published for ``uri`` (for ``version`` when given), waiting for them."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for v, diags, _t in reversed(self.diagnostics.get(uri, [])):
                    if version is None or v == version:
                        return diags
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"no diagnostics for {uri} version {version}")
                self._cond.wait(left)

    def published_at(self, uri: str, version: int) -> float | None:
        for v, _d, t in self.diagnostics.get(uri, []):
            if v == version:
                return t
        return None

    # ------------------------------------------------------------------------------------- requests
    def request(self, method: str, params):
        """A request by its LSP method name (``textDocument/hover``) or a custom one (``onnxtext/print``)."""
        async def go():
            return await self.client.protocol.send_request_async(method, params)
        result = self.run(go())
        return result._asdict() if hasattr(result, "_asdict") else result  # custom results come as namedtuples

    def position(self, uri: str, line: int, character: int):
        return lsp.TextDocumentIdentifier(uri), lsp.Position(line, character)

    def close(self) -> None:
        try:
            self.run(self.client.shutdown_async(None), timeout=10)
            self.call(self.client.exit, None)
            self.run(self.client.stop(), timeout=10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)

    @property
    def process(self):
        return self.client._server
