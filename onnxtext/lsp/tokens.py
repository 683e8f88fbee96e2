"""Semantic tokens from the Pygments lexer, so that editors colour text exactly as ``onnxtext.lexer`` does.

:data:`LEGEND` lists the LSP token types used; :func:`semantic_tokens` runs :class:`OnnxTextLexer` over the
text and encodes each coloured token (multi-line ones split per line) in the LSP relative format:
(delta line, delta start, length, type, modifiers). Whitespace and punctuation are not sent.
"""

from __future__ import annotations

from pygments.token import Comment, Keyword, Name, Number, Operator, String

TOKEN_TYPES = ["keyword", "type", "function", "property", "decorator", "label", "typeParameter", "variable",
               "string", "number", "comment", "operator", "enumMember"]
TOKEN_MODIFIERS = ["documentation"]

#: Pygments token type -> (LSP token type, modifier bits); the most specific match wins.
_MAP = [
    (String.Doc, "comment", 1),
    (Keyword.Type, "type", 0),
    (Keyword.Constant, "enumMember", 0),
    (Keyword, "keyword", 0),
    (Name.Function, "function", 0),
    (Name.Attribute, "property", 0),
    (Name.Decorator, "decorator", 0),
    (Name.Label, "label", 0),
    (Name.Variable, "typeParameter", 0),
    (Name, "variable", 0),
    (String, "string", 0),
    (Number, "number", 0),
    (Comment, "comment", 0),
    (Operator, "operator", 0),
]


def classify(ttype):
    """(LSP token type index, modifier bits) of a Pygments token type, or None when it is not coloured."""
    try:
        return _CLASSES[ttype]
    except KeyError:
        pass
    found = None
    for ptype, name, mods in _MAP:
        if ttype in ptype:
            found = TOKEN_TYPES.index(name), mods
            break
    _CLASSES[ttype] = found
    return found


_CLASSES: dict = {}  # Pygments token type -> classify() result (a lexer has a few dozen token types)


def semantic_tokens(text: str) -> list[int]:
    """The LSP ``data`` array for the whole text (columns in UTF-16 code units, as LSP counts them)."""
    from ..lexer import OnnxTextLexer

    data: list[int] = []
    prev_line = prev_col = 0
    line = col = 0
    for _offset, ttype, value in OnnxTextLexer().get_tokens_unprocessed(text):
        kind = classify(ttype)
        pieces = value.split("\n")
        for k, piece in enumerate(pieces):
            if k:
                line += 1
                col = 0
            length = _utf16(piece)
            if kind is not None and length:
                dl = line - prev_line
                dc = col - prev_col if dl == 0 else col
                data += [dl, dc, length, kind[0], kind[1]]
                prev_line, prev_col = line, col
            col += length
    return data


def _utf16(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-16-le")) // 2
