"""The Pygments lexer (onnxtext/lexer.py): lossless, no Error tokens on valid text, the right token roles.

Valid text comes from every printed backend test model (tests/corpus.py), the examples/ folder, the
editor sample and the VS Code grammar test files; each must parse (so the input really is valid) and lex
without ``Error`` tokens into tokens whose values concatenate back to the input.
"""

from __future__ import annotations

import glob
import os
import re
import sys
import tomllib

import pytest
from pygments.token import Comment, Error, Keyword, Name, Number, Operator, Punctuation, String

import onnxtext
from onnxtext import lexer as lexmod
from onnxtext.syntax.grammar import get_parser
from onnxtext.lexer import OnnxTextLexer

sys.path.insert(0, os.path.dirname(__file__))
import corpus  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TEXT_FILES = sorted(glob.glob(os.path.join(ROOT, "examples", "**", "*.onnxtext"), recursive=True)
                    + glob.glob(os.path.join(ROOT, "editors", "samples", "*.onnxtext"))
                    + glob.glob(os.path.join(ROOT, "editors", "vscode", "tests", "*.onnxtext")))

CORPUS = corpus.all_models()
_LEXER = OnnxTextLexer(stripnl=False, ensurenl=False)


def lex(text: str) -> list[tuple[int, object, str]]:
    return list(_LEXER.get_tokens_unprocessed(text))


def assert_lexes_cleanly(text: str, where: str) -> None:
    tokens = lex(text)
    assert "".join(v for _, _, v in tokens) == text, f"{where}: tokens do not reproduce the input"
    for pos, tok, value in tokens:
        if tok in Error:
            line = text.count("\n", 0, pos) + 1
            context = text[max(0, pos - 60):pos + 20]
            pytest.fail(f"{where}:{line}: Error token {value!r} in ...{context!r}")


# ------------------------------------------------------------------------------------- whole texts
@pytest.mark.parametrize("path", TEXT_FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_files_lex_cleanly(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    onnxtext.parse(text)  # the input is valid text
    assert_lexes_cleanly(text, path)


@pytest.mark.parametrize("name,load", CORPUS, ids=[n for n, _ in CORPUS])
def test_printed_corpus_lexes_cleanly(name, load):
    assert_lexes_cleanly(onnxtext.to_text(load()), name)


@pytest.mark.parametrize("path", corpus.file_models()[-30:], ids=os.path.basename)
def test_elided_and_onnx_style_lex_cleanly(path):
    """The printer's reading form (elided tensors) and its onnx-compatible style are highlighted too."""
    import onnx

    model = onnx.load(path, load_external_data=False)
    assert_lexes_cleanly(onnxtext.to_text(model, elide=True), path + " (elide)")
    assert_lexes_cleanly(onnxtext.to_text(model, style="onnx"), path + " (style=onnx)")


# ------------------------------------------------------------------------------------- token roles
SNIPPET = r'''# comment
/// doc line
<ir_version: 8, opset_import: ["": 18, "com.microsoft": 1], producer_name: "p\n\"q\"", doc_string: "# not // a comment">
g (float[N, "batch", ?] x, seq(bfloat16[2]) s) => (int4[2] y) <float[2] w = raw {1.5e-3, -inf}, int64 k = {0x1F}> {
  [lbl] y = com.microsoft.Fused:v2 <alpha: float = -2.0, "odd name" = @ref, g = body () => () {}> (x, w) // tail
  @metadata_props ["k": "v"]
  z = "Optional" <type = optional(tensor)> ()
  t = Constant <value = uint8[2] = hex "00ff", v2 = float = base64 "AACAPw==", b = bool[2] = {true, false}> ()
  m = Foo <e = float[2] = elided {min: -1.0, max: NaN}, s = sparse_tensor(float[2]) = sparse(float[1] = {1.0}, int64[1] = {0})> ()
}
training_info { algorithm: a () => () {} }
'''

#: (substring, occurrence index, expected token type): the token at the substring's first character.
ROLES = [
    ("# comment", 0, Comment.Single),
    ("// tail", 0, Comment.Single),
    ("# not", 0, String.Double),
    ("// a comment", 0, String.Double),
    ("/// doc line", 0, String.Doc),
    ("ir_version", 0, Keyword),
    ("opset_import", 0, Keyword),
    ("producer_name", 0, Keyword),
    ("training_info", 0, Keyword),
    ("raw", 0, Keyword),
    ("hex", 0, Keyword),
    ("base64", 0, Keyword),
    ("elided", 0, Keyword),
    ("sparse(", 0, Keyword),
    ("true", 0, Keyword.Constant),
    ("false", 0, Keyword.Constant),
    ("float[N", 0, Keyword.Type),
    ("bfloat16", 0, Keyword.Type),
    ("int4", 0, Keyword.Type),
    ("seq", 0, Keyword.Type),
    ("optional(", 0, Keyword.Type),
    ("tensor)", 0, Keyword.Type),
    ("sparse_tensor", 0, Keyword.Type),
    ("float =", 0, Keyword.Type),  # declared attribute type
    ("\"p\\n", 0, String.Double),
    ("\\n", 0, String.Escape),
    ("\\\"q", 0, String.Escape),
    ("8,", 0, Number.Integer),
    ("1.5e-3", 0, Number.Float),
    ("-inf", 0, Number.Float),
    ("NaN", 0, Number.Float),
    ("-2.0", 0, Number.Float),
    ("0x1F", 0, Number.Hex),
    ("g (", 0, Name.Function),
    ("body", 0, Name.Function),
    ("com.microsoft.Fused:v2", 0, Name.Function),
    ("\"Optional\"", 0, Name.Function),
    ("Constant", 0, Name.Function),
    ("alpha", 0, Name.Attribute),
    ("\"odd name\"", 0, Name.Attribute),
    ("g = body", 0, Name.Attribute),
    ("type =", 0, Name.Attribute),
    ("value =", 0, Name.Attribute),
    ("v2 =", 0, Name.Attribute),
    ("b = bool", 0, Name.Attribute),
    ("e = float", 0, Name.Attribute),
    ("s = sparse", 0, Name.Attribute),
    ("min", 0, Name.Attribute),
    ("@ref", 0, Name.Decorator),
    ("@metadata_props", 0, Name.Decorator),
    ("lbl", 0, Name.Label),
    ("N,", 0, Name.Variable),
    ("x, w)", 0, Name),
    ("w =", 0, Name),
    ("y = com", 0, Name),
    ("=>", 0, Operator),
    ("= com", 0, Operator),
    ("{", 0, Punctuation),
    ("<", 0, Punctuation),
    ("?", 0, Punctuation),
]


def _token_at(tokens, offset):
    for pos, tok, value in tokens:
        if pos <= offset < pos + len(value):
            return tok, value
    raise AssertionError(f"no token at {offset}")


def _nth(text, sub, n):
    starts = [m.start() for m in re.finditer(re.escape(sub), text)]
    assert len(starts) > n, f"{sub!r} occurs {len(starts)} times"
    return starts[n]


def test_snippet_is_valid_and_clean():
    # syntax only: the snippet holds an elided tensor, which the grammar reads but the builder refuses
    get_parser().parse(SNIPPET, start="model")
    assert_lexes_cleanly(SNIPPET, "SNIPPET")


@pytest.mark.parametrize("sub,n,expected", ROLES, ids=[f"{s}#{n}" for s, n, _ in ROLES])
def test_token_roles(sub, n, expected):
    tok, value = _token_at(lex(SNIPPET), _nth(SNIPPET, sub, n))
    # exact type: a subtype (e.g. Keyword.Type where Keyword is expected) is a different role
    assert tok is expected, f"{sub!r}: {tok} ({value!r}), expected {expected}"


# comments may sit anywhere whitespace may: inside shapes and annotation values too
COMMENT_PLACES = [
    "g (float[N, # batch\n 3] x) => (float[N, 3] y) { y = Relu(x) }",
    "g (float[N, // batch\n 3] x) => (float[N, 3] y) { y = Relu(x) }",
    "g (float[2] x) => (float[2] y) { y = Relu <\n @doc_string # why\n \"d\" alpha = 1.0>(x) }",
]


@pytest.mark.parametrize("text", COMMENT_PLACES)
def test_comments_inside_shapes_and_data_lex_cleanly(text):
    get_parser().parse(text, start="graph")  # valid syntax
    assert_lexes_cleanly(text, "comment placement")
    assert any(tok in Comment for _, tok, _ in lex(text))


# a lone CR ends a comment, as it ends a line for the grammar (and for editors and Python)
@pytest.mark.parametrize("comment", ["# note", "// note", "/// note"])
def test_lone_cr_ends_a_comment(comment):
    text = f"g (float[2] x) => (float[2] y) {{\r  t = Relu(x)  {comment}\r  y = Neg(t)\r}}"
    get_parser().parse(text, start="graph")
    tokens = [(tok, value) for _, tok, value in lex(text)]
    assert any(value == "Neg" and tok not in Comment for tok, value in tokens), tokens
    assert not any("Neg" in value for tok, value in tokens if tok in Comment or tok in String.Doc), tokens


# ------------------------------------------------------------------------------------- registration
def test_entry_point_names_the_lexer():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        eps = tomllib.load(f)["project"]["entry-points"]["pygments.lexers"]
    module, _, attr = eps["onnxtext"].partition(":")
    assert getattr(__import__(module, fromlist=[attr]), attr) is OnnxTextLexer


def test_lexer_metadata():
    assert {"onnxtext", "onnx-text"} <= set(OnnxTextLexer.aliases)
    assert {"*.onnxtext", "*.onnxtxt"} <= set(OnnxTextLexer.filenames)
    assert OnnxTextLexer.mimetypes


ANALYSE = [
    ("<\n  ir_version: 9,\n  opset_import: [\"\": 18]\n>\ng (float x) => (float y) {\n}\n", 1.0),
    ("# leading comment\n<ir_version: 7>\ng () => () {}\n", 1.0),
    ("agraph (float[N] X) => (float[N] Y) {\n  Y = Relu(X)\n}\n", 0.6),
    ("def f(x):\n    return x\n", 0.0),
    ("int main(void) { return 0; }\n", 0.0),
]


@pytest.mark.parametrize("text,score", ANALYSE)
def test_analyse_text(text, score):
    assert OnnxTextLexer.analyse_text(text) == score


# ------------------------------------------------------------------------------------- tables
def _grammar_keywords() -> set[str]:
    """Every quoted word of the grammar (keywords the LALR lexer knows)."""
    with open(os.path.join(ROOT, "grammar", "onnxtext.lark"), encoding="utf-8") as f:
        text = re.sub(r"//[^\n]*", "", f.read())
    # and the keywords written as a regex with a lookahead (`raw` is a keyword only before `{`)
    return set(re.findall(r'"([A-Za-z_][A-Za-z0-9_]*)"', text)) | set(re.findall(r"/([A-Za-z_]+)\(\?=", text))


def test_tables_cover_the_grammar_keywords():
    tables = set(lexmod.TYPE_CONSTRUCTORS) | set(lexmod.SECTION_WORDS) | set(lexmod.CONSTANTS)
    assert tables == _grammar_keywords()


def test_data_types_are_the_dtype_table():
    from onnxtext import dtypes

    assert lexmod.DATA_TYPES == dtypes.NAMES
    with open(os.path.join(ROOT, "grammar", "lexical.lark"), encoding="utf-8") as f:
        dtype_rule = re.search(r"DTYPE[^:]*:\s*/\(\?:([^)]*)\)", f.read()).group(1)
    assert set(dtype_rule.split("|")) == set(lexmod.DATA_TYPES)
