"""The onnxtext language server (``onnxtext lsp``): pygls wiring for every feature, over stdio.

Each open document has an :class:`~.analysis.Analysis` (parse, index, diagnostics). Opening a document
analyses it at once; edits are debounced (:data:`DEBOUNCE` seconds after the last change). Analyses run in
a worker thread, so the event loop keeps answering while a large model is checked; a result is published
only if no newer edit arrived meanwhile. Requests that need positions (hover, definition, rename...) wait
for the analysis of the current text: the one running for it, or one started at once (skipping the
debounce).

Beyond the standard features, two requests let an editor show a binary model as text and save it back:

* ``onnxtext/print`` ``{"uri"}`` -> ``{"text"}``: the onnxtext of a ``.onnx`` file (external data kept as
  references);
* ``onnxtext/compile`` ``{"uri", "text"}`` -> ``{"ok", "message", "written"}``: writes the binary model
  atomically (``onnxtext.save``); a text with errors is refused and the message says why; a text equal to
  the file's model leaves the file untouched.

Settings (``initializationOptions`` or ``workspace/didChangeConfiguration`` under ``onnxtext``): ``width``
(line width of printed models), ``lintLevel`` (``"lint"``: also the style advice of ``check --lint``,
``"warning"``: errors and warnings, the default; ``"error"``: errors only; ``"syntax"``: parse errors only),
``strict`` (``check --strict``: spec rules runtimes tolerate become errors).
"""

from __future__ import annotations

import asyncio
import os

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from . import tokens
from .analysis import Analysis, analyse, span_range, to_range
from .completion import complete
from .hover import hover_text

DEBOUNCE = 0.15  # seconds of quiet after an edit before the text is analysed

_SYMBOL_KINDS = {"graph": lsp.SymbolKind.Module, "function": lsp.SymbolKind.Function,
                 "initializer": lsp.SymbolKind.Constant, "input": lsp.SymbolKind.Variable,
                 "output": lsp.SymbolKind.Field, "node": lsp.SymbolKind.Operator,
                 "header": lsp.SymbolKind.Namespace}
_FOLD_KINDS = {"imports": lsp.FoldingRangeKind.Imports, "region": lsp.FoldingRangeKind.Region}


class OnnxTextServer(LanguageServer):
    """A LanguageServer that keeps one Analysis per open document."""

    def __init__(self):
        super().__init__("onnxtext", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.analyses: dict[str, Analysis] = {}
        self.last_parsed: dict = {}  # uri -> analysis of the last text that parsed (completion while typing)
        self.pending: dict[str, asyncio.Task] = {}  # uri -> debounced analysis waiting to start
        self.running: dict[str, tuple] = {}  # uri -> (text, future) of the analysis running in a worker
        self.settings = {"width": 100, "lintLevel": "warning"}

    # ------------------------------------------------------------------------------------------ analysis
    def _store(self, an: Analysis) -> None:
        self.analyses[an.uri] = an
        if an.model is not None:
            self.last_parsed[an.uri] = an

    def _start(self, uri: str) -> asyncio.Future:
        """Analyse the document's current text in a worker thread (or join the run already doing so)."""
        doc = self.workspace.get_text_document(uri)
        text, version = doc.source, doc.version
        run = self.running.get(uri)
        if run is not None and run[0] == text:
            return run[1]
        options = self.check_options()
        future = asyncio.get_running_loop().run_in_executor(
            None, lambda: analyse(uri, version, text, filename=_filename(uri), **options))
        self.running[uri] = (text, future)
        future.add_done_callback(lambda f: self._finished(uri, text, f))
        return future

    def _finished(self, uri: str, text: str, future) -> None:
        if self.running.get(uri, (None,))[0] == text:
            del self.running[uri]
        if future.cancelled() or future.exception() is not None:
            return
        an = future.result()
        if self.workspace.get_text_document(uri).source == text and self.analyses.get(uri) is not an:
            self._store(an)
            self.publish(an)

    async def current(self, uri: str) -> Analysis:
        """The analysis of the document's current text: the stored one, the one running for this text, or a
        new one started now (a debounced analysis still waiting is then not needed)."""
        an = self.analyses.get(uri)
        doc = self.workspace.get_text_document(uri)
        if an is None or an.text != doc.source:
            task = self.pending.pop(uri, None)
            if task is not None:
                task.cancel()
            an = await self._start(uri)
            self._finished(uri, an.text, _done(an))
        await asyncio.get_running_loop().run_in_executor(None, lambda: an.index)  # built off the event loop
        return an

    def check_options(self) -> dict:
        return {"lint": self.settings.get("lintLevel") == "lint", "strict": bool(self.settings.get("strict"))}

    def publish(self, an: Analysis) -> None:
        level = self.settings.get("lintLevel", "warning")
        shown = [d for d in an.diagnostics
                 if level in ("lint", "warning") or (level == "error" and d.severity == lsp.DiagnosticSeverity.Error)
                 or d.code == "parse.syntax"]
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(an.uri, shown, an.version))

    async def schedule(self, uri: str, delay: float) -> None:
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self.pending[uri] = asyncio.ensure_future(self._later(uri, delay))

    async def _later(self, uri: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        an = await self._start(uri)
        if self.pending.get(uri) is asyncio.current_task():
            del self.pending[uri]
        await asyncio.get_running_loop().run_in_executor(None, lambda: an.index)  # ready for hover, completion


def _done(value) -> asyncio.Future:
    """A finished future holding ``value``."""
    f = asyncio.get_running_loop().create_future()
    f.set_result(value)
    return f


def _filename(uri: str) -> str | None:
    return to_fs_path(uri) if uri.startswith("file:") else uri


def _pos(p: lsp.Position) -> tuple[int, int]:
    """LSP position (0-based) -> 1-based line and column."""
    return p.line + 1, p.character + 1


server = OnnxTextServer()


@server.feature(lsp.INITIALIZE)
def _initialize(ls: OnnxTextServer, params: lsp.InitializeParams):
    ls.settings.update(_settings(params.initialization_options))


def _settings(options) -> dict:
    if not isinstance(options, dict):
        return {}
    options = options.get("onnxtext", options)
    return {k: options[k] for k in ("width", "lintLevel", "strict") if k in options}


@server.feature(lsp.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def _configuration(ls: OnnxTextServer, params: lsp.DidChangeConfigurationParams):
    ls.settings.update(_settings(params.settings))
    for uri in list(ls.analyses):
        del ls.analyses[uri]
        await ls.schedule(uri, 0)


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
async def _did_open(ls: OnnxTextServer, params: lsp.DidOpenTextDocumentParams):
    await ls.schedule(params.text_document.uri, 0)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
async def _did_change(ls: OnnxTextServer, params: lsp.DidChangeTextDocumentParams):
    await ls.schedule(params.text_document.uri, DEBOUNCE)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def _did_close(ls: OnnxTextServer, params: lsp.DidCloseTextDocumentParams):
    uri = params.text_document.uri
    task = ls.pending.pop(uri, None)
    if task is not None:
        task.cancel()
    ls.analyses.pop(uri, None)
    ls.last_parsed.pop(uri, None)
    ls.running.pop(uri, None)
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri, []))


@server.feature(lsp.TEXT_DOCUMENT_HOVER)
async def _hover(ls: OnnxTextServer, params: lsp.HoverParams):
    an = await ls.current(params.text_document.uri)
    found = hover_text(an, *_pos(params.position))
    if found is None:
        return None
    text, span = found
    return lsp.Hover(lsp.MarkupContent(lsp.MarkupKind.Markdown, text), span_range(span))


@server.feature(lsp.TEXT_DOCUMENT_COMPLETION,
                lsp.CompletionOptions(trigger_characters=["=", "<", "(", ",", ":", " "]))
def _completion(ls: OnnxTextServer, params: lsp.CompletionParams):
    uri = params.text_document.uri
    doc = ls.workspace.get_text_document(uri)
    parsed = ls.last_parsed.get(uri)
    index = parsed.index if parsed is not None else None
    stale = parsed is None or parsed.text != doc.source
    opsets = index.opsets if index is not None else {}
    items = complete(doc.source, *_pos(params.position), index, opsets, stale)
    return lsp.CompletionList(is_incomplete=False, items=items)


async def _occurrence(ls, params):
    an = await ls.current(params.text_document.uri)
    if an.index is None:
        return an, None
    return an, an.index.at(*_pos(params.position))


@server.feature(lsp.TEXT_DOCUMENT_DEFINITION)
async def _definition(ls: OnnxTextServer, params: lsp.DefinitionParams):
    an, occ = await _occurrence(ls, params)
    target = an.index.definition(occ) if occ is not None else None
    if target is None:
        return None
    return lsp.Location(an.uri, span_range(target.span))


@server.feature(lsp.TEXT_DOCUMENT_REFERENCES)
async def _references(ls: OnnxTextServer, params: lsp.ReferenceParams):
    an, occ = await _occurrence(ls, params)
    if occ is None:
        return None
    return [lsp.Location(an.uri, span_range(o.span))
            for o in an.index.references(occ, params.context.include_declaration)]


@server.feature(lsp.TEXT_DOCUMENT_PREPARE_RENAME)
async def _prepare_rename(ls: OnnxTextServer, params: lsp.PrepareRenameParams):
    an, occ = await _occurrence(ls, params)
    if occ is None or (occ.kind == "function" and an.index.definition(occ) is None):
        return None  # schema operators are not renamed
    return span_range(occ.span)


@server.feature(lsp.TEXT_DOCUMENT_RENAME)
async def _rename(ls: OnnxTextServer, params: lsp.RenameParams):
    from ..printing.atoms import name as quoted

    an, occ = await _occurrence(ls, params)
    if occ is None or (occ.kind == "function" and an.index.definition(occ) is None):
        return None
    new = params.new_name[1:] if occ.kind == "fattr" and params.new_name.startswith("@") else params.new_name
    edits = []
    for o in an.index.references(occ):
        text = quoted(new)
        if o.role == "attr-ref":
            text = "@" + text
        edits.append(lsp.TextEdit(span_range(o.span), text))
    return lsp.WorkspaceEdit(changes={an.uri: edits})


@server.feature(lsp.TEXT_DOCUMENT_DOCUMENT_SYMBOL)
async def _symbols(ls: OnnxTextServer, params: lsp.DocumentSymbolParams):
    index = await _index_for_outline(ls, params.text_document.uri)
    if index is None:
        return []

    def convert(s):
        return lsp.DocumentSymbol(s.name or "(unnamed)", _SYMBOL_KINDS.get(s.kind, lsp.SymbolKind.Object),
                                  span_range(s.span), span_range(s.selection), detail=s.detail or None,
                                  children=[convert(c) for c in s.children] or None)

    return [convert(s) for s in index.symbols]


async def _index_for_outline(ls, uri):
    """The current index, or while the text does not parse, the last one that did (outline and folds
    should not vanish while a line is being typed)."""
    an = await ls.current(uri)
    if an.index is not None:
        return an.index
    parsed = ls.last_parsed.get(uri)
    return parsed.index if parsed is not None else None


@server.feature(lsp.TEXT_DOCUMENT_FOLDING_RANGE)
async def _folding(ls: OnnxTextServer, params: lsp.FoldingRangeParams):
    index = await _index_for_outline(ls, params.text_document.uri)
    if index is None:
        return []
    seen = set()
    out = []
    for start, end, kind in index.folds:
        if (start, end) not in seen:
            seen.add((start, end))
            out.append(lsp.FoldingRange(start - 1, end - 1, kind=_FOLD_KINDS.get(kind)))
    return out


@server.thread()
@server.feature(lsp.TEXT_DOCUMENT_FORMATTING)
def _formatting(ls: OnnxTextServer, params: lsp.DocumentFormattingParams):
    import onnxtext

    doc = ls.workspace.get_text_document(params.text_document.uri)
    try:
        formatted = onnxtext.format_text(doc.source, filename=_filename(doc.uri))
    except onnxtext.OnnxTextError as e:
        ls.window_show_message(lsp.ShowMessageParams(lsp.MessageType.Warning,
                                                     f"onnxtext: not formatted: {str(e).splitlines()[0]}"))
        return None
    if formatted == doc.source:
        return []
    lines = doc.source.split("\n")
    return [lsp.TextEdit(to_range(1, 1, len(lines), len(lines[-1]) + 1), formatted)]


@server.thread()  # lexing a large model takes a while: keep the event loop answering meanwhile
@server.feature(lsp.TEXT_DOCUMENT_SEMANTIC_TOKENS_FULL,
                lsp.SemanticTokensLegend(token_types=tokens.TOKEN_TYPES, token_modifiers=tokens.TOKEN_MODIFIERS))
def _semantic_tokens(ls: OnnxTextServer, params: lsp.SemanticTokensParams):
    doc = ls.workspace.get_text_document(params.text_document.uri)
    return lsp.SemanticTokens(data=tokens.semantic_tokens(doc.source))


# ---------------------------------------------------------------------------- binary models as text
def _param(params, key):
    if isinstance(params, dict):
        return params.get(key)
    return getattr(params, key, None)


def _model_path(params) -> str:
    uri = _param(params, "uri") or ""
    path = _param(params, "path") or (to_fs_path(uri) if uri.startswith("file:") else uri)
    if not path:
        raise ValueError("onnxtext: the request names no file (uri or path)")
    return path


@server.feature("onnxtext/print")
def _print(ls: OnnxTextServer, params):
    """The onnxtext of a binary (or text) model file."""
    import onnxtext

    path = _model_path(params)
    model = onnxtext.load(path, load_external_data=False)
    return {"text": onnxtext.to_text(model, width=int(ls.settings.get("width", 100)))}


@server.feature("onnxtext/compile")
def _compile(ls: OnnxTextServer, params):
    """Write ``text`` as the binary model at ``uri`` (atomically); refuse a text with errors."""
    import onnxtext

    path = _model_path(params)
    text = _param(params, "text") or ""
    an = analyse(path, None, text, filename=path)
    errors = [d for d in an.diagnostics if d.severity == lsp.DiagnosticSeverity.Error]
    if an.model is None or errors:
        first = errors[0] if errors else None
        where = f" (line {first.range.start.line + 1}: {first.message})" if first else ""
        return {"ok": False, "written": False,
                "message": f"not saved: the text has {len(errors)} error(s){where}; {path} is unchanged"}
    try:
        model = onnxtext.parse_model(text, filename=path)
    except onnxtext.ParseError as e:  # a graph or function alone is not a model file
        return {"ok": False, "written": False, "message": f"not saved: {e.message}; {path} is unchanged"}
    if os.path.exists(path):
        try:
            if onnxtext.load(path, load_external_data=False) == model:
                return {"ok": True, "written": False, "message": f"{path} is unchanged"}
        except onnxtext.OnnxTextError:
            pass  # an unreadable file is replaced
    onnxtext.save(model, path, base_dir=os.path.dirname(os.path.abspath(path)))
    return {"ok": True, "written": True, "message": f"saved {path}"}


def serve() -> None:
    """Run the server on stdin/stdout until the client exits."""
    server.start_io()
