"""Friendlier parse errors: hints for misspelled data types and operators, unclosed brackets; the list of
several errors of one text (found by :mod:`.recovery`).

Functions the parser calls (see the report / docs/checker.md for the call sites):

* :func:`improve(error, text)` -> ParseError: rewrites a converted lark error: a misspelled element type
  (``floot[N] x``) becomes "unknown data type 'floot'" at the typo with the hint "did you mean 'float'?"; an
  error after an unclosed ``(``/``[``/``{``/``<`` points at it in the hint. Idempotent.
* :func:`collect_parse_errors(text)` -> list[ParseError]: up to 20 errors (the parser's first, then the
  syntax errors :mod:`.recovery` finds after it).
* :func:`nearest_dtype(word)`, :func:`nearest_op(name, opsets)`: difflib suggestions.
"""

from __future__ import annotations

import difflib
import re

from .. import dtypes
from ..errors import ParseError

from .recovery import MAX_ERRORS  # noqa: E402,F401 - one cap for every error list
_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {v: k for k, v in _OPEN.items()}
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def nearest_dtype(word: str) -> str | None:
    """The element type name closest to ``word`` (``floot`` -> ``float``), or None."""
    if word in dtypes.NAMES:
        return None
    m = difflib.get_close_matches(word.lower(), dtypes.NAMES, n=1, cutoff=0.75)
    return m[0] if m else None


from ..schemas import nearest_op  # noqa: E402,F401 - re-exported: hints name the nearest operator


def _offset(text: str, line: int, column: int) -> int:
    """The offset of Lark's (line, column) (lines end at LF: the error has not been moved yet)."""
    start = 0
    for _ in range(line - 1):
        start = text.find("\n", start) + 1
        if start == 0:
            return len(text)
    return start + column - 1


def _line_col(text: str, offset: int):
    """The (line, column) a user sees for ``offset`` (a lone CR ends a line too), for the hint's words."""
    from ..errors import position

    return position(text, offset)


# what open_brackets looks at: strings, comments and bracket characters (everything else is skipped by the regex
# engine, which keeps this linear and fast on multi-megabyte texts)
_BRACKET_SCAN = re.compile(r'"(?:[^"\\]|\\.)*"?|#[^\r\n]*|//[^\r\n]*|[()\[\]{}<>]')


def open_brackets(text: str, end: int):
    """Brackets still open at ``end``: a list of (char, offset), innermost last. Strings and comments skipped.

    ``<`` counts only where it opens a header/attribute/value list: directly after a name, ``=``, ``)`` or at the
    start of the text (elsewhere, as in ``=>``, it is not a bracket).
    """
    stack = []
    n = min(end, len(text))
    for m in _BRACKET_SCAN.finditer(text, 0, n):
        c = m.group(0)
        if c[0] in "\"#/":
            continue  # a string or a comment
        i = m.start()
        if c in "([{<":
            stack.append((c, i))
        elif c == ">" and i > 0 and text[i - 1] == "=":
            pass  # '=>'
        else:
            want = _CLOSE[c]
            for k in range(len(stack) - 1, -1, -1):
                if stack[k][0] == want:
                    del stack[k:]
                    break
    return stack


def unclosed_hint(text: str, error: ParseError) -> str | None:
    """'the '(' opened at 3:11 is not closed' when the error follows an unclosed bracket of an earlier line."""
    if error.line is None or error.column is None:
        return None
    stack = open_brackets(text, _offset(text, error.line, error.column))
    for ch, off in reversed(stack):
        line, col = _line_col(text, off)
        # an earlier line: compared in Lark's lines (the error's), the hint's words in the user's lines
        if ch in "([<" and line < _line_col(text, _offset(text, error.line, error.column))[0]:
            return f"the {ch!r} opened at line {line}, column {col} is not closed"
        if ch == "{":
            break
    if error.message.startswith("unexpected end of input") and stack:
        ch, off = stack[-1]
        line, col = _line_col(text, off)
        return f"the {ch!r} opened at line {line}, column {col} is not closed"
    return None


def _word_before(text: str, line: int, column: int):
    """The identifier just before Lark's (line, column) on the same line (a lone CR ends it too), with its
    column."""
    src = text.split("\n")[line - 1] if 0 < line <= text.count("\n") + 1 else ""
    head = src[:column - 1]
    begin = head.rfind("\r") + 1  # the user's line starts after a lone CR
    m = re.search(r"[A-Za-z_][A-Za-z0-9_]*$", head[begin:].rstrip())
    return (m.group(0), begin + m.start() + 1) if m else (None, None)


def _word_at(text: str, line: int, column: int):
    src = text.split("\n")[line - 1] if 0 < line <= text.count("\n") + 1 else ""
    m = _WORD.match(src, column - 1)
    return m.group(0) if m else None


def improve(error: ParseError, text: str) -> ParseError:
    """A better version of a syntax error (same object kind, more precise message/position/hint)."""
    if error.line is None or error.column is None or getattr(error, "_improved", False):
        return error
    msg, line, col, hint = _anon_words(error.message), error.line, error.column, error.hint
    # 'floot[N] x': the typo is the word before the error, or the word at the error (only for raw syntax
    # errors: a builder message such as "unknown attribute type 'flot'" is already precise)
    candidates = (_word_before(text, line, col), (_word_at(text, line, col), col)) \
        if msg.startswith("unexpected") else ()
    for word, wcol in candidates:
        near = nearest_dtype(word) if word else None
        if near:
            msg, col, hint = f"unknown data type {word!r}", wcol, f"did you mean {near!r}?"
            break
    else:
        h = unclosed_hint(text, error)
        if h:  # the real mistake is the missing closer: say so instead of listing expected tokens
            opener = h.split("'")[1]
            msg = f"{msg.split(';')[0]}: missing {_OPEN[opener]!r}, {h}"
    out = ParseError(msg, line=line, column=col, expected=error.expected, hint=hint, source=error.source or text,
                     filename=error.filename)
    out._improved = True
    return out


def _anon_words(message: str) -> str:
    """Spell lark's anonymous terminals (``__ANON_0``) as their text (``'=>'``)."""
    if "__ANON_" not in message:
        return message
    from .grammar import get_parser

    names = {t.name: repr(t.pattern.value) for t in get_parser().terminals if t.name.startswith("__ANON_")}
    return re.sub(r"__ANON_\d+", lambda m: names.get(m.group(0), m.group(0)), message)


def explain(text: str, filename: str | None = None) -> ParseError | None:
    """The first error a user sees for ``text`` (the parser's, refined), or None if it parses."""
    from .parser import parse

    try:
        parse(text, filename=filename)
    except ParseError as e:
        return improve(e, text)
    return None


def collect_parse_errors(text: str, start: str = "auto", filename: str | None = None,
                         limit: int = MAX_ERRORS) -> list[ParseError]:
    """Every error ``onnxtext.parse`` reports for ``text`` (up to ``limit``): the first one, then the syntax
    errors found by recovering from it (:mod:`.recovery`). ``start``: a grammar start symbol, or "auto" for the
    kind of text ``onnxtext.parse`` detects."""
    from .parser import _parse, parse

    try:
        if start == "auto":
            parse(text, filename=filename)
        else:
            _parse(text, start, filename)
    except ParseError as e:
        return e.errors[:limit]
    return []
