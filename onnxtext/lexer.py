"""Pygments lexer for onnxtext (``.onnxtext`` files), also used by the REPL for highlighting.

The lexer mirrors ``grammar/lexical.lark`` for tokens and tracks brackets with a state stack so that
the few context-dependent roles come out right without parsing:

* an identifier (or quoted name, or dotted ``domain.Op:overload``) followed by ``(`` or ``<`` is a call,
  a function definition or a graph name: ``Name.Function``;
* inside a node's (or function's) attribute list ``<...>``, the name at the start of each entry is an
  attribute: ``Name.Attribute`` (a ``,`` inside nested ``[]``/``()``/``{}`` does not start an entry);
* ``key:`` where key is a model/function header key or a training_info field is a ``Keyword``.

Besides the lexer class, this module holds the keyword tables the editor grammars are generated from
(``tools/gen_editors.py``): element types come from :mod:`onnxtext.dtypes`, header keys from the builder,
the grammar's own keywords are checked against ``grammar/onnxtext.lark`` by the tests.
"""

from __future__ import annotations

import re

from pygments.lexer import RegexLexer, bygroups, default, include, words
from pygments.token import (Comment, Keyword, Name, Number, Operator, Punctuation, String, Text)

from . import dtypes
from .vocabulary import ATTR_TYPE_NAMES, FUNCTION_HEADER, MODEL_HEADER

__all__ = ["OnnxTextLexer", "DATA_TYPES", "TYPE_CONSTRUCTORS", "SECTION_WORDS", "CONSTANTS", "HEADER_KEYS",
           "TRAINING_KEYS", "ATTRIBUTE_TYPES", "SPECIAL_FLOATS"]

# ------------------------------------------------------------------------------------------- keyword tables
#: Element types (``float``, ``bfloat16``, ``int4``...), in enum order.
DATA_TYPES: tuple[str, ...] = dtypes.NAMES
#: Words that build a type: ``seq(...)``, ``map(K, V)``, ``optional(...)``, ``sparse_tensor(...)``,
#: ``opaque(...)``, ``type()`` and the untyped ``tensor``.
TYPE_CONSTRUCTORS: tuple[str, ...] = ("seq", "map", "optional", "sparse_tensor", "opaque", "tensor", "type")
#: Words that open a section or a tensor data block.
SECTION_WORDS: tuple[str, ...] = ("training_info", "raw", "base64", "hex", "sparse", "elided", "unchecked")
#: Boolean literals.
CONSTANTS: tuple[str, ...] = ("true", "false")
#: Keys of the ``<...>`` header of a model or a function (the builder accepts exactly these).
HEADER_KEYS: tuple[str, ...] = tuple(sorted(MODEL_HEADER | FUNCTION_HEADER))
#: Fields of a ``training_info { ... }`` section (TrainingInfoProto).
TRAINING_KEYS: tuple[str, ...] = ("initialization", "algorithm", "initialization_binding", "update_binding")
#: Declared attribute types (``<alpha: float = 1.0>``); some coincide with element types.
ATTRIBUTE_TYPES: tuple[str, ...] = tuple(sorted(ATTR_TYPE_NAMES.values()))
#: Float literals spelled as words (any case, optional leading ``-``).
SPECIAL_FLOATS: tuple[str, ...] = ("infinity", "inf", "nan")

# ------------------------------------------------------------------------------------------- token regexes
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_NAME = rf"(?:{_IDENT}|{_QUOTED})"
_END = r"(?![A-Za-z0-9_])"  # a word ends here (lark's DTYPE/SPECIAL use the same lookahead)
_KEYS = "|".join(HEADER_KEYS + TRAINING_KEYS)
# domain.Op:overload; a header/training key followed by ':' is never an op with an overload
_OPREF = rf"(?!(?:{_KEYS})\s*:){_NAME}(?:\.{_NAME})*(?::{_NAME})?"
_DTYPE = "(?:" + "|".join(sorted(DATA_TYPES, key=len, reverse=True)) + ")" + _END
_SPECIAL = r"-?(?i:infinity|inf|nan)" + _END
_FLOAT = r"-?(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|[0-9]+[eE][+-]?[0-9]+)"


class OnnxTextLexer(RegexLexer):
    """Lexer for onnxtext, the textual form of ONNX models, graphs, functions and nodes."""

    name = "ONNX text"
    url = "https://github.com/onnx/onnx/blob/main/docs/Syntax.md"
    aliases = ["onnxtext", "onnx-text"]
    filenames = ["*.onnxtext", "*.onnxtxt"]
    mimetypes = ["text/x-onnxtext"]
    flags = re.MULTILINE

    tokens = {
        "common": [
            (r"\s+", Text.Whitespace),
            (r"///[^\r\n]*", String.Doc),
            (r"//[^\r\n]*", Comment.Single),
            (r"#[^\r\n]*", Comment.Single),
            # keywords come before calls: 'seq(' is a type, not a call of an op named seq
            (rf"({_DTYPE})(\s*)(\[)", bygroups(Keyword.Type, Text.Whitespace, Punctuation), "shape"),
            (_DTYPE, Keyword.Type),
            (words(TYPE_CONSTRUCTORS[:-1], suffix=r"(?=\s*\()"), Keyword.Type),
            (r"tensor(?![A-Za-z0-9_.:(])", Keyword.Type),
            (words(CONSTANTS, suffix=_END), Keyword.Constant),
            (r"training_info(?=\s*\{)", Keyword),
            (r"(?:raw|elided|unchecked)(?=\s*\{)", Keyword),
            (r'(?:base64|hex)(?=\s*")', Keyword),
            (r"sparse(?=\s*\()", Keyword),
            (rf"(?:{_KEYS})(?=\s*:)", Keyword),
            # calls, function definitions and graph names: the bracket that follows decides the state
            (rf"({_OPREF})(\s*)(<)", bygroups(Name.Function, Text.Whitespace, Punctuation), ("attrs", "attrname")),
            (rf"({_OPREF})(\s*)(\()", bygroups(Name.Function, Text.Whitespace, Punctuation), "callargs"),
            (r'"', String.Double, "string"),
            (rf"@{_IDENT}", Name.Decorator),
            (r"@", Name.Decorator),  # '@ "quoted ref"'
            (_SPECIAL, Number.Float),
            (r"0[xX][0-9a-fA-F]+", Number.Hex),
            (_FLOAT, Number.Float),
            (r"-?[0-9]+", Number.Integer),
            (r"=>", Operator),
            (r"=", Operator),
            (rf"{_IDENT}(?=\s*:)", Name.Attribute),  # record fields: {min: 0, max: 1}
            # a node label: [name] before the node's outputs
            (rf"(\[)(\s*)({_NAME})?(\s*)(\])(?=\s*(?:[A-Za-z_\"=]|$))",
             bygroups(Punctuation, Text.Whitespace, Name.Label, Text.Whitespace, Punctuation)),
            (_IDENT, Name),
            (r"\(", Punctuation, "paren"),
            (r"\[", Punctuation, "bracket"),
            (r"\{", Punctuation, "brace"),
            (r"<", Punctuation, "angle"),
            (r"[,:.?]", Punctuation),
        ],
        "root": [include("common")],
        "paren": [(r"\)", Punctuation, "#pop"), include("common")],
        "bracket": [(r"\]", Punctuation, "#pop"), include("common")],
        "brace": [(r"\}", Punctuation, "#pop"), include("common")],
        "angle": [(r">", Punctuation, "#pop"), include("common")],
        # the inputs of a call; attributes may also follow them: y = Op(x) <alpha = 1.0>
        "callargs": [
            (r"(\))(\s*)(<)", bygroups(Punctuation, Text.Whitespace, Punctuation), ("#pop", "attrs", "attrname")),
            (r"\)", Punctuation, "#pop"),
            include("common"),
        ],
        "attrs": [
            (r">", Punctuation, "#pop"),
            (r",", Punctuation, "attrname"),
            include("common"),
        ],
        # the start of an attribute entry: annotations, then the name and an optional declared type
        "attrname": [
            (r"\s+", Text.Whitespace),
            (r"///[^\r\n]*", String.Doc),
            (r"//[^\r\n]*", Comment.Single),
            (r"#[^\r\n]*", Comment.Single),
            (rf"@{_IDENT}(?=\s)", Name.Decorator, "datum"),
            (rf"({_NAME})(\s*)(:)(\s*)({_IDENT})",
             bygroups(Name.Attribute, Text.Whitespace, Punctuation, Text.Whitespace, Keyword.Type), "#pop"),
            (_NAME, Name.Attribute, "#pop"),
            default("#pop"),
        ],
        # the value of an annotation inside an attribute list: one datum, then back to the attribute name
        "datum": [
            (r"\s+", Text.Whitespace),
            (r"//[^\r\n]*", Comment.Single),
            (r"#[^\r\n]*", Comment.Single),
            (r'"', String.Double, ("#pop", "string")),
            (r"\[", Punctuation, ("#pop", "bracket")),
            (r"\{", Punctuation, ("#pop", "brace")),
            (_SPECIAL, Number.Float, "#pop"),
            (r"0[xX][0-9a-fA-F]+", Number.Hex, "#pop"),
            (_FLOAT, Number.Float, "#pop"),
            (r"-?[0-9]+", Number.Integer, "#pop"),
            (words(CONSTANTS, suffix=_END), Keyword.Constant, "#pop"),
            (_IDENT, Name, "#pop"),
            default("#pop"),
        ],
        "shape": [
            (r"\]", Punctuation, "#pop"),
            (r"\s+", Text.Whitespace),
            (r"//[^\r\n]*", Comment.Single),
            (r"#[^\r\n]*", Comment.Single),
            (r"-?[0-9]+", Number.Integer),
            (_IDENT, Name.Variable),  # a symbolic dimension
            (r'"', String.Double, "string"),
            (r"[,:?]", Punctuation),
        ],
        "string": [
            (r'"', String.Double, "#pop"),
            (r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[\s\S])", String.Escape),
            (r'[^"\\]+', String.Double),
        ],
    }

    def analyse_text(text):
        """1.0 for a model header ``<ir_version: ...``; 0.6 for a graph signature ``name (...) => (...)``."""
        head = re.sub(r"^(?:\s+|#[^\n]*|//[^\n]*)*", "", text[:4000])
        if re.match(r"<\s*ir_version\s*:", head):
            return 1.0
        if re.search(rf"^\s*{_NAME}\s*\([^()]*\)\s*=>\s*\(", text[:20000], re.MULTILINE):
            return 0.6
        return 0.0
