"""One analysis of a document's text: its parse, its index, its diagnostics (as LSP diagnostics).

:func:`analyse` is what the server runs after an edit (debounced, off the event loop). It parses the text
with the public API (``onnxtext.parse``), collects every parse error when that fails (the parser's first
error, then the ones recovery finds), and otherwise runs ``onnxtext.check``. The
:class:`~.index.DocumentIndex` that navigation, hover and completion read is built on first use (the
server builds it right after publishing the diagnostics), so it does not delay them. Each diagnostic carries its rule
id as ``code`` and a range covering the culprit token; related information points at the other location:
the opener of an unclosed bracket, or the first definition of a name defined twice.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field

from lsprotocol import types as lsp

from .index import DocumentIndex, Span, build_index

_WORD = re.compile(r'"(?:[^"\\\n]|\\.)*"|@?[A-Za-z_][A-Za-z0-9_.]*|-?[0-9][0-9.eE+-]*|\S')
_OPENED_AT = re.compile(r"the '(.)' opened at line (\d+), column (\d+) is not closed")
#: rules whose diagnostic sits on the second definition of a name
_DUPLICATE_RULES = ("graph.ssa", "graph.unique-names", "graph.shadowing", "fn.unique")


@dataclass
class Analysis:
    uri: str
    version: int | None
    text: str
    model: object = None  # the parsed proto (ModelProto, GraphProto, ...) or None
    diagnostics: list = field(default_factory=list)  # lsp.Diagnostic
    _inferred: dict | None = None
    _index: DocumentIndex | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def index(self) -> DocumentIndex | None:
        """The text's index (built on first use: diagnostics rarely need it), None when the text does not
        parse."""
        if self.model is None:
            return None
        with self._lock:
            if self._index is None:
                self._index = build_index(self.text)
            return self._index

    def inferred_types(self, path: str) -> dict:
        """Value name -> inferred TypeProto in the graph at checker ``path`` (``graph``,
        ``graph.node[3].attribute[body].g``), as ``onnxtext check`` infers them (cached; {} when inference
        fails or for function bodies)."""
        if self._inferred is None:
            self._inferred = {}
            model = as_model(self.model)
            if model is not None:
                from ..checker.shapes import infer_types

                try:
                    self._inferred = infer_types(model, subgraphs=True)
                except Exception:  # noqa: BLE001 - inference is a bonus for hover; a model it rejects has none
                    pass
        return self._inferred.get(path, {})


def to_range(line: int, column: int, end_line: int | None = None, end_column: int | None = None) -> lsp.Range:
    """A 1-based (line, column) span as an LSP range (0-based; columns counted in code points)."""
    start = lsp.Position(max(line - 1, 0), max(column - 1, 0))
    if end_line is None:
        return lsp.Range(start, lsp.Position(start.line, start.character + 1))
    return lsp.Range(start, lsp.Position(max(end_line - 1, 0), max(end_column - 1, 0)))


def span_range(span: Span) -> lsp.Range:
    return to_range(span.line, span.column, span.end_line, span.end_column)


def word_range(lines: list[str], line: int | None, column: int | None) -> lsp.Range:
    """The range of the token starting at (line, column): a name, a quoted string, a number, or one char."""
    if line is None:
        return to_range(1, 1)
    column = column or 1
    src = lines[line - 1] if 0 < line <= len(lines) else ""
    m = _WORD.match(src, column - 1)
    end = m.end() + 1 if m and m.start() == column - 1 else column + 1
    return to_range(line, column, line, end)


def as_model(obj):
    """The parsed proto as a ModelProto (a graph, function or node is wrapped), or None."""
    if obj is None:
        return None
    import onnx

    if isinstance(obj, onnx.ModelProto):
        return obj
    m = onnx.ModelProto(ir_version=onnx.IR_VERSION)
    if isinstance(obj, onnx.GraphProto):
        m.graph.CopyFrom(obj)
    elif isinstance(obj, onnx.FunctionProto):
        m.functions.append(obj)
        m.opset_import.extend(obj.opset_import)
    elif isinstance(obj, onnx.NodeProto):
        m.graph.node.append(obj)
    if not m.opset_import:
        m.opset_import.add(domain="", version=onnx.defs.onnx_opset_version())
    return m


def analyse(uri: str, version, text: str, filename: str | None = None, *, lint: bool = False,
            strict: bool = False) -> Analysis:
    """Parse, index and check ``text`` (``lint``, ``strict``: as for ``onnxtext.check``)."""
    import onnxtext

    out = Analysis(uri, version, text)
    lines = text.split("\n")
    try:
        out.model = onnxtext.parse(text, filename=filename)
    except onnxtext.ParseError as first:
        out.diagnostics = [_parse_diagnostic(e, lines, uri) for e in first.errors]
        return out
    except RecursionError:
        out.diagnostics = [lsp.Diagnostic(to_range(1, 1), "input nested too deeply", lsp.DiagnosticSeverity.Error,
                                          code="parse.syntax", source="onnxtext")]
        return out
    import onnx

    # a model is checked as parsed (its text gives the positions); a bare graph, function or node as text
    checked = (out.model, {"text": text}) if isinstance(out.model, onnx.ModelProto) else (text, {})
    for d in onnxtext.check(checked[0], filename=filename, lint=lint, strict=strict, **checked[1]):
        out.diagnostics.append(_check_diagnostic(d, lines, uri, out))
    return out


def _parse_diagnostic(e, lines, uri) -> lsp.Diagnostic:
    rng = word_range(lines, e.line, e.column)
    if e.end_column and e.line:
        rng = to_range(e.line, e.column or 1, e.line, e.end_column)
    message = e.message + (f" (hint: {e.hint})" if e.hint else "")
    related = []
    m = _OPENED_AT.search(message)
    if m:
        line, col = int(m.group(2)), int(m.group(3))
        related.append(lsp.DiagnosticRelatedInformation(
            lsp.Location(uri, to_range(line, col)), f"the {m.group(1)!r} opened here is not closed"))
    return lsp.Diagnostic(rng, message, lsp.DiagnosticSeverity.Error, code="parse.syntax", source="onnxtext",
                          related_information=related or None)


def _culprit(index: DocumentIndex, d):
    """The name token a diagnostic is about: the one at its position, or the first name quoted in its message
    at or after its position on its line (a rule may point at a whole value entry: ``float[2] 'x'``)."""
    occ = index.at(d.line, d.column)
    if occ is not None:
        return occ
    for o in index.occurrences:
        if o.span.line == d.line and o.span.column >= d.column and f"'{o.name}'" in d.message:
            return o
    return None


_QUOTED = re.compile(r"'([^']*)'")


def _needs_index(d, lines) -> bool:
    """Whether a diagnostic's range or related location needs the index: a rule about a name defined twice,
    or a position that is not at the name the message quotes."""
    if d.line is None:
        return False
    if d.rule in _DUPLICATE_RULES:
        return True
    names = _QUOTED.findall(d.message)
    if not names:
        return False
    src = lines[d.line - 1] if 0 < d.line <= len(lines) else ""
    m = _WORD.match(src, (d.column or 1) - 1)
    return not (m and m.group(0).strip('"') in names)


def _check_diagnostic(d, lines, uri, an: Analysis) -> lsp.Diagnostic:
    rng = word_range(lines, d.line, d.column)
    related = []
    index = an.index if _needs_index(d, lines) else None
    occ = _culprit(index, d) if index is not None else None
    if occ is not None:
        rng = span_range(occ.span)
        if d.rule in _DUPLICATE_RULES:
            scope = occ.scope.parent if d.rule == "graph.shadowing" else occ.scope
            first = (scope.resolve(occ.name) if scope is not None else None) if occ.kind == "value" \
                else index.functions.get(occ.name)
            if first is not None and first is not occ:
                related.append(lsp.DiagnosticRelatedInformation(
                    lsp.Location(uri, span_range(first.span)), f"{occ.name!r} is first defined here"))
    severity = lsp.DiagnosticSeverity.Error if d.severity == "error" else lsp.DiagnosticSeverity.Warning
    return lsp.Diagnostic(rng, d.message, severity, code=d.rule, source="onnxtext",
                          related_information=related or None)
