"""Exception hierarchy of onnxtext. Every error a user can cause is an OnnxTextError.

ParseError carries the position (1-based line and column), what was expected and an optional hint,
and knows how to render itself as ``file:line:col: message`` followed by the source line and a caret.
"""

from __future__ import annotations

import re

#: What ends a line in onnxtext text, as in editors and Python: CRLF, a lone CR or LF. Nothing else does: a form
#: feed, NEL (U+0085) or U+2028 inside a line is shown as a space so that the caret stays under the column.
LINE_BREAK = re.compile(r"\r\n|\r|\n")
_INVISIBLE = str.maketrans({c: " " for c in "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"})


def text_lines(text: str) -> list[str]:
    """The lines of ``text`` split at :data:`LINE_BREAK` (unlike ``str.splitlines``, which splits at more)."""
    return LINE_BREAK.split(text)


def position(text: str, offset: int) -> tuple[int, int]:
    """1-based (line, column) of character ``offset`` in ``text``, lines ending at :data:`LINE_BREAK`."""
    if "\r" not in text:
        return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1
    line, start = 1, 0
    for m in LINE_BREAK.finditer(text, 0, offset):
        line, start = line + 1, m.end()
    return line, offset - start + 1


class OnnxTextError(Exception):
    """Base class of every error onnxtext raises on bad input."""


class ParseError(OnnxTextError):
    """A syntax or semantic error in onnxtext source text."""

    def __init__(self, message: str, *, line: int | None = None, column: int | None = None,
                 expected: list[str] | None = None, hint: str | None = None,
                 source: str | None = None, filename: str | None = None, end_column: int | None = None):
        self.message = message
        self.line = line
        self.column = column
        self.end_column = end_column
        self.expected = list(expected or [])
        self.hint = hint
        self.source = source
        self.filename = filename
        self._further: list | None = []  # errors after this one in the same text (see ``errors``)
        self._find_further = None
        super().__init__(self.format())

    def set_further(self, find) -> None:
        """Register ``find() -> list[ParseError]``, called once when the errors after this one are wanted."""
        self._find_further, self._further = find, None

    @property
    def errors(self) -> list[ParseError]:
        """Every error found in the text, in text order (several when the parser could recover; capped)."""
        if self._further is None:
            find, self._find_further = self._find_further, None
            self._further = list(find()) if find is not None else []
        return sorted([self, *self._further], key=lambda e: (e.line or 0, e.column or 0))

    def source_line(self) -> str | None:
        if self.source is None or self.line is None:
            return None
        lines = text_lines(self.source)
        if 1 <= self.line <= len(lines):
            return lines[self.line - 1].translate(_INVISIBLE)
        return ""

    def format(self, filename: str | None = None) -> str:
        """``file:line:col: message``, the source line with a caret, and the hint if any; then the same for
        each further error of the text (``errors``)."""
        return "\n".join(e.format_one(filename) for e in self.errors)

    def format_one(self, filename: str | None = None) -> str:
        """This error alone: ``file:line:col: message``, the source line with a caret, the hint if any."""
        name = filename or self.filename or "<text>"
        where = f"{name}:{self.line}:{self.column}" if self.line is not None else name
        out = [f"{where}: {self.message}"]
        src = self.source_line()
        if src is not None and self.column is not None:
            shown = src.expandtabs(1)
            if len(shown) > 200:  # keep huge single-line inputs readable
                start = max(0, self.column - 100)
                shown = shown[start:start + 200]
                col = self.column - start
            else:
                col = self.column
            width = max(1, (self.end_column or self.column + 1) - self.column)
            out.append("  " + shown)
            out.append("  " + " " * (col - 1) + "^" * min(width, 60))
        if self.hint:
            out.append(f"hint: {self.hint}")
        return "\n".join(out)

    def __str__(self) -> str:
        return self.format()


class ModelFileError(OnnxTextError):
    """A model file that is missing, unreadable, truncated or not an ONNX model."""


class ExternalDataError(OnnxTextError):
    """External tensor data that cannot be resolved safely (missing file, path escaping the model dir...)."""


class CheckError(OnnxTextError):
    """Raised when a model has diagnostics of severity error and the caller asked to raise."""


class EvalError(OnnxTextError):
    """An error while evaluating a model: names the node, its op and the input shapes/types."""
