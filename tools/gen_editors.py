"""Generate the editor grammars from onnxtext's own tables (one source of truth for keywords).

Writes:

* ``editors/vscode/syntaxes/onnxtext.tmLanguage.json``: the whole TextMate grammar (VS Code, GitHub
  linguist, and most TextMate-compatible highlighters);
* ``editors/sublime/onnxtext.tmLanguage``: the same grammar as a plist, the format Sublime Text loads;
* the regions between ``GENERATED BEGIN`` / ``GENERATED END`` markers in
  ``editors/vim/syntax/onnxtext.vim`` and ``editors/emacs/onnxtext-mode.el`` (the rest is hand-written).

The word lists come from :mod:`onnxtext.lexer` (element types from ``onnxtext.dtypes``, header keys from
the builder); ``tests/test_editors.py`` fails when a generated file is stale.

Usage: ``python tools/gen_editors.py`` (write) or ``python tools/gen_editors.py --check`` (exit 1 if stale).
"""

from __future__ import annotations

import json
import os
import plistlib
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from onnxtext import lexer  # noqa: E402

BEGIN, END = "GENERATED BEGIN", "GENERATED END"
NOTE = "by tools/gen_editors.py from onnxtext/lexer.py: do not edit, run python tools/gen_editors.py"

# TextMate (Oniguruma) building blocks
_IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
_QUOTED = r'"(?:[^"\\]|\\.)*"'
_NAME = f"(?:{_IDENT}|{_QUOTED})"
_KEYS = "|".join(lexer.HEADER_KEYS + lexer.TRAINING_KEYS)
_OPREF = rf"(?!(?:{_KEYS})\s*:){_NAME}(?:\.{_NAME})*(?::{_NAME})?"
_NUM_START = r"(?<![A-Za-z0-9_.])"


def _alt(words) -> str:
    return "|".join(sorted(words, key=lambda w: (-len(w), w)))


def textmate_grammar() -> dict:
    """The TextMate grammar. Brackets are only tracked inside attribute lists, where an entry's name
    must be told apart from names in nested values ([...], (...), {...}, graph bodies)."""
    def nested(name, open_, close):
        return {"begin": open_, "end": close, "name": f"meta.{name}.onnxtext",
                "beginCaptures": {"0": {"name": "punctuation.section.bracket.begin.onnxtext"}},
                "endCaptures": {"0": {"name": "punctuation.section.bracket.end.onnxtext"}},
                "patterns": [{"include": "$self"}]}

    repo = {
        "comments": {"patterns": [
            {"match": "///.*$", "name": "comment.block.documentation.onnxtext"},
            {"match": "(//).*$", "name": "comment.line.double-slash.onnxtext",
             "captures": {"1": {"name": "punctuation.definition.comment.onnxtext"}}},
            {"match": "(#).*$", "name": "comment.line.number-sign.onnxtext",
             "captures": {"1": {"name": "punctuation.definition.comment.onnxtext"}}},
        ]},
        "strings": {"begin": '"', "end": '"', "name": "string.quoted.double.onnxtext",
                    "beginCaptures": {"0": {"name": "punctuation.definition.string.begin.onnxtext"}},
                    "endCaptures": {"0": {"name": "punctuation.definition.string.end.onnxtext"}},
                    "patterns": [{"match": r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)",
                                  "name": "constant.character.escape.onnxtext"}]},
        "numbers": {"patterns": [
            {"match": _NUM_START + r"-?(?i:" + _alt(lexer.SPECIAL_FLOATS) + r")(?![A-Za-z0-9_])",
             "name": "constant.numeric.float.onnxtext"},
            {"match": _NUM_START + r"0[xX][0-9a-fA-F]+(?![A-Za-z0-9_])", "name": "constant.numeric.hex.onnxtext"},
            {"match": _NUM_START + r"-?(?:[0-9]+\.[0-9]*(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
                                   r"|[0-9]+[eE][+-]?[0-9]+)(?![A-Za-z0-9_])",
             "name": "constant.numeric.float.onnxtext"},
            {"match": _NUM_START + r"-?[0-9]+(?![A-Za-z0-9_.])", "name": "constant.numeric.integer.onnxtext"},
        ]},
        "types": {"patterns": [
            {"match": r"\b(?:" + _alt(lexer.DATA_TYPES) + r")\b(?![.:])", "name": "support.type.primitive.onnxtext"},
            {"match": r"\b(?:" + _alt(c for c in lexer.TYPE_CONSTRUCTORS if c != "tensor") + r")(?=\s*\()",
             "name": "support.type.onnxtext"},
            {"match": r"\btensor\b(?![.:(])", "name": "support.type.onnxtext"},
        ]},
        "keywords": {"patterns": [
            {"match": r"\b(?:" + _alt(lexer.HEADER_KEYS + lexer.TRAINING_KEYS) + r")(?=\s*:)",
             "name": "keyword.other.header.onnxtext"},
            {"match": r"\btraining_info(?=\s*\{)", "name": "keyword.other.section.onnxtext"},
            {"match": r"\b(?:raw|elided)(?=\s*\{)", "name": "keyword.other.data.onnxtext"},
            {"match": r'\b(?:base64|hex)(?=\s*")', "name": "keyword.other.data.onnxtext"},
            {"match": r"\bsparse(?=\s*\()", "name": "keyword.other.data.onnxtext"},
            {"match": r"\b(?:" + _alt(lexer.CONSTANTS) + r")\b", "name": "constant.language.boolean.onnxtext"},
        ]},
        "annotations": {"match": rf"@{_IDENT}|@(?=\s*\")", "name": "storage.type.annotation.onnxtext"},
        "label": {"match": rf"^\s*(\[)\s*({_NAME})?\s*(\])(?=\s*[A-Za-z_\"=,])",
                  "captures": {"1": {"name": "punctuation.definition.label.begin.onnxtext"},
                               "2": {"name": "entity.name.label.onnxtext"},
                               "3": {"name": "punctuation.definition.label.end.onnxtext"}}},
        # op(...) or op <attributes>: an operator call, a function definition or a graph name
        "attribute-list": {
            "begin": rf"({_OPREF})\s*(<)", "end": "(?<!=)>", "name": "meta.attributes.onnxtext",
            "beginCaptures": {"1": {"name": "entity.name.function.onnxtext"},
                              "2": {"name": "punctuation.section.attributes.begin.onnxtext"}},
            "endCaptures": {"0": {"name": "punctuation.section.attributes.end.onnxtext"}},
            "patterns": [{"include": "#attribute-name"}, {"include": "#comments"},
                         {"include": "#nested-paren"}, {"include": "#nested-bracket"},
                         {"include": "#nested-brace"}, {"include": "#nested-angle"}, {"include": "$self"}]},
        # y = Loop (m, c) <body = ...>: the attribute list after the call's inputs
        "call-then-attributes": {
            "begin": rf"({_OPREF})\s*(\()([^()]*)(\))\s*(<)", "end": "(?<!=)>", "name": "meta.attributes.onnxtext",
            "beginCaptures": {"1": {"name": "entity.name.function.onnxtext"},
                              "2": {"name": "punctuation.section.bracket.onnxtext"},
                              "3": {"patterns": [{"include": "#strings"}, {"include": "#names"},
                                                 {"include": "#punctuation"}]},
                              "4": {"name": "punctuation.section.bracket.onnxtext"},
                              "5": {"name": "punctuation.section.attributes.begin.onnxtext"}},
            "endCaptures": {"0": {"name": "punctuation.section.attributes.end.onnxtext"}},
            "patterns": [{"include": "#attribute-name"}, {"include": "#comments"},
                         {"include": "#nested-paren"}, {"include": "#nested-bracket"},
                         {"include": "#nested-brace"}, {"include": "#nested-angle"}, {"include": "$self"}]},
        "attribute-name": {
            "match": rf"(?:(?<=<)|(?<=,)|^)\s*({_NAME})(?:\s*(:)\s*({_IDENT}))?(?=\s*(?:=(?!>)|,|>))",
            "captures": {"1": {"name": "entity.other.attribute-name.onnxtext"},
                         "2": {"name": "punctuation.separator.colon.onnxtext"},
                         "3": {"name": "support.type.attribute.onnxtext"}}},
        "nested-paren": nested("parens", r"\(", r"\)"),
        "nested-bracket": nested("brackets", r"\[", r"\]"),
        "nested-brace": nested("braces", r"\{", r"\}"),
        "nested-angle": nested("angles", "<", "(?<!=)>"),
        "call": {"match": rf"{_OPREF}(?=\s*\()", "name": "entity.name.function.onnxtext"},
        "field": {"match": rf"\b{_IDENT}(?=\s*:(?!\s*\"))", "name": "variable.other.property.onnxtext"},
        "operators": {"patterns": [
            {"match": "=>", "name": "keyword.operator.arrow.onnxtext"},
            {"match": "=", "name": "keyword.operator.assignment.onnxtext"},
        ]},
        "punctuation": {"patterns": [
            {"match": ",", "name": "punctuation.separator.comma.onnxtext"},
            {"match": ":", "name": "punctuation.separator.colon.onnxtext"},
            {"match": r"\.", "name": "punctuation.accessor.onnxtext"},
            {"match": r"\?", "name": "punctuation.other.unknown-dimension.onnxtext"},
            {"match": r"[()\[\]{}<>]", "name": "punctuation.section.bracket.onnxtext"},
        ]},
        "names": {"match": _IDENT, "name": "variable.other.onnxtext"},
    }
    order = ["comments", "label", "keywords", "types", "attribute-list", "call-then-attributes", "call", "strings",
             "annotations", "numbers", "operators", "field", "names", "punctuation"]
    return {
        "$schema": "https://raw.githubusercontent.com/martinring/tmlanguage/master/tmlanguage.json",
        "name": "ONNX text",
        "scopeName": "source.onnxtext",
        "fileTypes": [p.lstrip("*.") for p in lexer.OnnxTextLexer.filenames],
        "comment": "Generated " + NOTE,
        "patterns": [{"include": f"#{k}"} for k in order],
        "repository": repo,
    }


# ------------------------------------------------------------------------------------------------- vim
def _vim_words(group: str, words, width: int = 100) -> list[str]:
    lines, line = [], f"syn keyword {group}"
    for w in words:
        if len(line) + 1 + len(w) > width:
            lines.append(line)
            line = f"syn keyword {group}"
        line += " " + w
    return lines + [line]


def vim_region() -> list[str]:
    keys = r"\|".join(lexer.HEADER_KEYS + lexer.TRAINING_KEYS)
    return [
        *_vim_words("onnxtextType", lexer.DATA_TYPES),
        *_vim_words("onnxtextTypeCtor", lexer.TYPE_CONSTRUCTORS),
        *_vim_words("onnxtextSection", lexer.SECTION_WORDS),
        *_vim_words("onnxtextBoolean", lexer.CONSTANTS),
        f'syn match onnxtextHeaderKey "\\<\\%({keys}\\)\\>\\ze\\s*:"',
        'syn match onnxtextAttrType contained "\\%(\\%(\\h\\w*\\|\\"[^\\"]*\\"\\)\\s*:\\s*\\)\\@<=\\<\\%('
        + r"\|".join(lexer.ATTRIBUTE_TYPES) + '\\)\\>\\ze\\s*="',
    ]


# ------------------------------------------------------------------------------------------------- emacs
def _elisp_list(name: str, words, doc: str) -> list[str]:
    body = " ".join(f'"{w}"' for w in words)
    return [f"(defconst {name}", f"  '({body})", f'  "{doc}")']


def emacs_region() -> list[str]:
    return [
        *_elisp_list("onnxtext-data-types", lexer.DATA_TYPES, "Element types (onnxtext/dtypes.py)."),
        *_elisp_list("onnxtext-type-constructors", lexer.TYPE_CONSTRUCTORS, "Words that build a type."),
        *_elisp_list("onnxtext-section-words", lexer.SECTION_WORDS, "Section and tensor data keywords."),
        *_elisp_list("onnxtext-constants", lexer.CONSTANTS, "Boolean literals."),
        *_elisp_list("onnxtext-header-keys", lexer.HEADER_KEYS + lexer.TRAINING_KEYS,
                     "Header keys of models and functions, and training_info fields."),
        *_elisp_list("onnxtext-attribute-types", lexer.ATTRIBUTE_TYPES, "Declared attribute types."),
        *_elisp_list("onnxtext-special-floats", lexer.SPECIAL_FLOATS, "Float literals spelled as words."),
    ]


# ------------------------------------------------------------------------------------------------- files
def splice(text: str, region: list[str], comment: str, path: str) -> str:
    """Replace the lines between the BEGIN and END marker lines of ``text`` by ``region``."""
    pattern = re.compile(rf"(^[^\n]*{BEGIN}[^\n]*\n).*?(^[^\n]*{END}[^\n]*$)", re.S | re.M)
    if not pattern.search(text):
        raise SystemExit(f"{path}: no '{comment} {BEGIN}' ... '{comment} {END}' markers")
    body = "\n".join(region) + "\n"
    return pattern.sub(lambda m: m.group(1) + body + m.group(2), text, count=1)


def outputs() -> dict[str, str]:
    """Relative path -> the content the file must have."""
    grammar = textmate_grammar()
    out = {
        "editors/vscode/syntaxes/onnxtext.tmLanguage.json": json.dumps(grammar, indent=2) + "\n",
        "editors/sublime/onnxtext.tmLanguage": plistlib.dumps(
            {k: v for k, v in grammar.items() if k != "$schema"}, sort_keys=False).decode("utf-8"),
    }
    for rel, region, comment in (("editors/vim/syntax/onnxtext.vim", vim_region(), '"'),
                                 ("editors/emacs/onnxtext-mode.el", emacs_region(), ";;")):
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            out[rel] = splice(f.read(), region, comment, rel)
    return out


def stale() -> list[str]:
    """Generated files whose content differs from what the generator produces now."""
    bad = []
    for rel, content in outputs().items():
        path = os.path.join(ROOT, rel)
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != content:
            bad.append(rel)
    return bad


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        bad = stale()
        for rel in bad:
            print(f"stale: {rel} (run: python tools/gen_editors.py)")
        return 1 if bad else 0
    for rel, content in outputs().items():
        path = os.path.join(ROOT, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(content)
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
