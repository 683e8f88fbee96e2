"""Parser API: text -> onnx protobufs (``parse_model``, ``parse_graph``, ``parse_function``, ``parse_node``,
``parse``). Every failure is an :class:`onnxtext.ParseError` with line, column and what was expected.
"""

from __future__ import annotations

import gc
import re

from ..errors import OnnxTextError, ParseError, position
from ..protodepth import deep_messages

# Human words for the grammar's terminals (used in "expected ..." messages).
_WORDS = {
    "IDENT": "a name", "STRING": "a string", "INT": "an integer", "FLOAT": "a number", "HEX": "a hex number",
    "SPECIAL": "a number", "DTYPE": "a data type", "ANNOT": "an @annotation", "DOC": "a /// doc comment",
    "QMARK": "'?'", "LPAR": "'('", "RPAR": "')'", "LSQB": "'['", "RSQB": "']'", "LBRACE": "'{'", "RBRACE": "'}'",
    "LESSTHAN": "'<'", "MORETHAN": "'>'", "COMMA": "','", "COLON": "':'", "EQUAL": "'='", "DOT": "'.'",
    "$END": "end of input", "AT": "'@'",
}


def _word(terminal: str) -> str:
    if terminal in _WORDS:
        return _WORDS[terminal]
    try:
        from .grammar import get_parser

        for t in get_parser().terminals:
            if t.name == terminal:
                if t.pattern.type == "str":
                    return repr(t.pattern.value)
                break
    except Exception:
        pass
    return terminal.lower()


def _expected_words(expected) -> list[str]:
    return sorted({_word(t) for t in expected})


def _token_desc(tok) -> str:
    if tok is None:
        return "end of input"
    if getattr(tok, "type", None) == "$END":
        return "end of input"
    text = str(tok)
    if len(text) > 30:
        text = text[:27] + "..."
    return repr(text)


def _convert(e, text: str, filename: str | None) -> ParseError:
    """A lark exception -> ParseError with human-readable message."""
    import lark

    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        ch = text[e.pos_in_stream] if e.pos_in_stream < len(text) else ""
        msg = f"unexpected character {ch!r}"
        if ch == '"':
            msg = "unterminated string (no closing quote)"
        exp = _expected_words(e.allowed or [])
        if exp and ch != '"':
            msg += "; expected " + _join(exp)
        return ParseError(msg, line=e.line, column=e.column, expected=exp, source=text, filename=filename)
    if isinstance(e, lark.exceptions.UnexpectedToken):
        tok = e.token
        exp = _expected_words(e.accepts or e.expected or [])  # accepts: exact for the parser state
        msg = f"unexpected {_token_desc(tok)}"
        if exp:
            msg += "; expected " + _join(exp)
        line = tok.line if getattr(tok, "line", None) is not None else e.line
        col = tok.column if getattr(tok, "column", None) is not None else e.column
        if getattr(tok, "type", None) == "$END" or line is None or line < 0:
            line, col = _end_position(text)
        return ParseError(msg, line=line, column=col, expected=exp, source=text, filename=filename)
    if isinstance(e, lark.exceptions.UnexpectedEOF):
        line, col = _end_position(text)
        exp = _expected_words(e.expected or [])
        return ParseError("unexpected end of input" + ("; expected " + _join(exp) if exp else ""), line=line,
                          column=col, expected=exp, source=text, filename=filename)
    if isinstance(e, lark.exceptions.VisitError):
        inner = e.orig_exc
        if isinstance(inner, ParseError):
            inner.source = text
            inner.filename = filename
            if inner.line is None:
                tok = getattr(e.obj, "meta", None)
                inner.line = getattr(tok, "line", None)
            return ParseError(inner.message, line=inner.line, column=inner.column, hint=inner.hint, source=text,
                              filename=filename, expected=inner.expected)
        return ParseError(f"{type(inner).__name__}: {inner}", source=text, filename=filename)
    return ParseError(str(e), source=text, filename=filename)


def _join(words):
    if len(words) <= 1:
        return "".join(words)
    if len(words) > 8:
        words = words[:8] + ["..."]
    return ", ".join(words[:-1]) + " or " + words[-1]


_LONE_CR = re.compile(r"\r(?!\n)")


def fix_position(error: ParseError, text: str) -> ParseError:
    """Move ``error`` from Lark's coordinates (lines end at LF only) to the text's own lines, which a lone CR
    also ends (:data:`onnxtext.errors.LINE_BREAK`); only texts with a lone CR differ."""
    if error.line is None or error.column is None or not isinstance(text, str) or not _LONE_CR.search(text):
        return error
    start = 0
    for _ in range(error.line - 1):
        nl = text.find("\n", start)
        if nl < 0:
            return error
        start = nl + 1
    offset = start + error.column - 1
    width = None if error.end_column is None else error.end_column - error.column
    error.line, error.column = position(text, offset)
    if width is not None:
        error.end_column = error.column + width
    return error


def _end_position(text: str):
    lines = text.split("\n")
    return len(lines), len(lines[-1]) + 1


def _parse(text: str, start: str, filename: str | None = None, fast: bool = True):
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as e:
            shown = text[:e.start].decode("utf-8") + text[e.start:].decode("utf-8", "replace")
            line, column = position(shown, len(text[:e.start].decode("utf-8")))
            raise ParseError(f"the text is not valid UTF-8 (byte 0x{text[e.start]:02x} at offset {e.start})",
                             line=line, column=column, source=shown, filename=filename,
                             hint="save the file as UTF-8") from None
    with deep_messages():  # the builder copies nested parts into their parents (onnxtext/protodepth.py)
        return _parse_text(text, start, filename, fast)


def _parse_text(text: str, start: str, filename: str | None, fast: bool):
    from .fastlex import FailedAt

    failure = None
    if fast:  # the accelerated scanner (docs/performance.md); None when Lark must parse the text
        result = _fast(text, start)
        if isinstance(result, FailedAt):
            failure = result  # most likely the text's first error: Lark looks there first
        elif result is not None:
            return result
    import lark

    from .builder import Builder
    from .grammar import get_parser
    from .statement import locate_error

    parser = get_parser(Builder(), key="build")
    enabled = gc.isenabled()
    gc.disable()  # building many small protos: the cyclic GC only costs time here
    try:
        if failure is not None:
            locate_error(text, start, failure)  # raises what parser.parse would raise, or finds nothing
        return parser.parse(text, start=start)
    except (lark.exceptions.LarkError, ParseError) as e:
        from .hints import improve
        from .recovery import attach  # e.errors: the errors after this one (found lazily)

        if isinstance(e, ParseError):
            e.source, e.filename = text, filename
            raise attach(fix_position(ParseError(e.message, line=e.line, column=e.column, hint=e.hint, source=text,
                                                 filename=filename, expected=e.expected), text), text, start) from None
        raise attach(fix_position(improve(_convert(e, text, filename), text), text), text, start, e) from None
    except RecursionError:
        raise ParseError("input nested too deeply", source=text, filename=filename) from None
    except OnnxTextError:
        raise
    except (ValueError, TypeError, OverflowError) as e:  # protobuf range checks (e.g. int64 overflow)
        raise ParseError(f"invalid value: {e}", source=text, filename=filename) from None
    finally:
        if enabled:
            gc.enable()


def _fast(text: str, start: str):
    from .fastparse import scan

    enabled = gc.isenabled()
    gc.disable()
    try:
        return scan(text, start)
    finally:
        if enabled:
            gc.enable()


def parse_model(text, *, filename: str | None = None, fast: bool = True):
    """Parse a model (optional ``<header>``, a graph, functions) into an ``onnx.ModelProto``.

    ``fast=False`` skips the accelerated scanner and parses with the Lark grammar only (same result).
    """
    return _parse(text, "model", filename, fast)


def parse_graph(text, *, filename: str | None = None, fast: bool = True):
    """Parse a graph ``name (inputs) => (outputs) <values> {nodes}`` into an ``onnx.GraphProto``."""
    return _parse(text, "graph", filename, fast)


def parse_function(text, *, filename: str | None = None, fast: bool = True):
    """Parse a function into an ``onnx.FunctionProto``."""
    return _parse(text, "function", filename, fast)


def parse_node(text, *, filename: str | None = None):
    """Parse one node statement into an ``onnx.NodeProto``."""
    return _parse(text, "node", filename)


def parse(text, *, filename: str | None = None, fast: bool = True):
    """Parse any onnxtext text, detecting its kind: ModelProto, GraphProto, FunctionProto or NodeProto.

    A text with a ``<...>`` header is a model when its header has model keys (ir_version, producer_name...)
    or is followed by a graph, else a function; a bare ``name (...) => (...) {...}`` is a graph; a
    statement with ``=`` is a node.
    """
    errors = []
    for start in _guess_order(text):
        try:
            return _parse(text, start, filename, fast)
        except ParseError as e:
            errors.append(e)
    # report the error that got furthest into the text
    raise max(errors, key=lambda e: ((e.line or 0), (e.column or 0)))


def _guess_order(text):
    s = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
    body = "\n".join(line for line in s.splitlines() if not line.lstrip().startswith(("#", "//")))
    stripped = body.lstrip()
    if stripped.startswith("<"):
        return ["model", "function"]
    head = stripped.split("{", 1)[0]
    if "=>" not in head:
        return ["node", "graph", "model", "function"]
    return ["graph", "model", "function", "node"]
