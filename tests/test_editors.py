"""Editor support under editors/: generated parts are current, manifests agree, and Vim, Emacs and
VS Code highlight and indent known positions of editors/samples/sample.onnxtext as expected.

Vim and Emacs run headless (``vim -es``, ``emacs --batch``); the VS Code grammar tests run through
``vscode-tmgrammar-test`` (npm). Each of those tests is skipped, saying why, when its tool is missing.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from onnxtext.lexer import OnnxTextLexer

sys.path.insert(0, os.path.dirname(__file__))
import corpus  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EDITORS = os.path.join(ROOT, "editors")
SAMPLE = os.path.join(EDITORS, "samples", "sample.onnxtext")
VSCODE = os.path.join(EDITORS, "vscode")

#: Printed corpus models with nested graphs and wrapped signatures, for the indentation tests.
INDENT_MODELS = ["test_if_opt", "test_loop13_seq", "test_scan9_sum", "test_range_float_type_positive_delta_expanded",
                 "test_affine_grid_2d_expanded"]


def _load_generator():
    spec = importlib.util.spec_from_file_location("gen_editors", os.path.join(ROOT, "tools", "gen_editors.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read()


# ----------------------------------------------------------------------------------- generated files
def test_generated_files_are_current():
    stale = _load_generator().stale()
    assert not stale, "stale generated editor files: " + ", ".join(stale) + "; run: python tools/gen_editors.py"


def test_textmate_regexes_compile():
    """Every pattern of the grammar is a valid regex (Python's re accepts the Oniguruma subset we use)."""
    grammar = json.loads(_read(os.path.join(VSCODE, "syntaxes", "onnxtext.tmLanguage.json")))
    seen = 0

    def walk(node):
        nonlocal seen
        if isinstance(node, dict):
            for key in ("match", "begin", "end"):
                if key in node:
                    re.compile(node[key])
                    seen += 1
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(grammar)
    assert seen > 20


def test_vscode_manifest_matches_lexer_and_grammar():
    package = json.loads(_read(os.path.join(VSCODE, "package.json")))
    (language,) = package["contributes"]["languages"]
    (grammar_ref,) = package["contributes"]["grammars"]
    grammar = json.loads(_read(os.path.join(VSCODE, grammar_ref["path"])))
    assert language["id"] == grammar_ref["language"] == "onnxtext"
    assert sorted(language["extensions"]) == sorted(p.lstrip("*") for p in OnnxTextLexer.filenames)
    assert grammar_ref["scopeName"] == grammar["scopeName"] == "source.onnxtext"
    config = json.loads(_read(os.path.join(VSCODE, language["configuration"])))
    assert config["comments"]["lineComment"] == "#"
    assert {"open": '"', "close": '"', "notIn": ["string", "comment"]} in config["autoClosingPairs"]
    for snippet_ref in package["contributes"]["snippets"]:
        snippets = json.loads(_read(os.path.join(VSCODE, snippet_ref["path"])))
        assert {"model", "node", "function"} <= {s["prefix"] for s in snippets.values()}


def test_vscode_client_settings_match_the_server():
    """The extension's settings are the ones the server reads and docs/editors.md describes."""
    pytest.importorskip("pygls", reason="the language server needs pygls (pip install 'onnxtext[lsp]')")
    from onnxtext.lsp import server

    package = json.loads(_read(os.path.join(VSCODE, "package.json")))
    settings = package["contributes"]["configuration"]["properties"]
    assert set(settings["onnxtext.lintLevel"]["enum"]) == {"lint", "warning", "error", "syntax"}
    assert server._settings({"onnxtext": {"lintLevel": "error", "width": 80, "strict": True}}) == \
        {"lintLevel": "error", "width": 80, "strict": True}
    docs = _read(os.path.join(ROOT, "docs", "editors.md"))
    for key in settings:
        assert f"`{key}`" in docs, f"{key} is not described in docs/editors.md"
    source = _read(os.path.join(VSCODE, "src", "extension.ts"))
    for request in ("onnxtext/print", "onnxtext/compile"):
        assert f'"{request}"' in source and f'"{request}"' in _read(server.__file__)
    assert package["main"] == "./out/extension.js" and "vscode-languageclient" in package["dependencies"]


def _snippet_text(body: list[str]) -> str:
    """A snippet body with its placeholders replaced by their defaults."""
    text = "\n".join(body)
    while re.search(r"\$\{\d+:([^{}]*)\}", text):
        text = re.sub(r"\$\{\d+:([^{}]*)\}", r"\1", text)
    return re.sub(r"\$\d+", "", text)


def test_snippets_expand_to_valid_text():
    import onnxtext

    snippets = json.loads(_read(os.path.join(VSCODE, "snippets", "onnxtext.json")))
    for name, snippet in snippets.items():
        text = _snippet_text(snippet["body"])
        if snippet["prefix"] == "init":
            text = f"g () => () <{text}> {{}}"
        elif snippet["prefix"] == "function":
            text = "g () => () {}\n\n" + text
        onnxtext.parse(text)  # raises on a snippet that expands to invalid text


def test_vscode_grammar_tests():
    tool = os.path.join(VSCODE, "node_modules", ".bin", "vscode-tmgrammar-test")
    if not os.path.exists(tool):
        pytest.skip("vscode-tmgrammar-test is not installed: run `npm install` in editors/vscode")
    result = subprocess.run([tool, "tests/*.onnxtext"], cwd=VSCODE, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr


# ----------------------------------------------------------------------------------- roles
#: (text to find in the sample, occurrence, role) for the character where the text starts.
ROLES = [
    ("A sample", 0, "comment"),
    ("trailing comment", 0, "comment"),
    ("/// A tiny", 0, "doc"),
    ("ir_version", 0, "keyword"),
    ("metadata_props", 0, "keyword"),
    ("algorithm", 0, "keyword"),
    ("raw {0.5", 0, "keyword"),
    ("base64", 0, "keyword"),
    ("hex \"", 0, "keyword"),
    ("sparse(", 0, "keyword"),
    ("training_info", 0, "keyword"),
    ("float[N", 0, "type"),
    ("complex64", 0, "type"),
    ("seq(", 0, "type"),
    ("map(", 0, "type"),
    ("opaque", 0, "type"),
    ("sparse_tensor", 0, "type"),
    ("tensor>", 0, "type"),
    ("string = \"relu\"", 0, "type"),
    ("\"onnxtext\"", 0, "string"),
    ("\"\": 21", 0, "string"),  # strings in the model header: keys of opset_import and values
    ("\"com.microsoft\"", 0, "string"),
    ("\"author\"", 0, "string"),
    ("\"me", 0, "string"),
    ("\"weird/name:0\"", 0, "string"),
    ("\\t", 0, "escape"),
    ("\\u00e9", 0, "escape"),
    ("10,", 0, "number"),
    ("0x7FC0", 0, "number"),
    ("-2.5", 0, "float"),
    ("3e-2", 0, "float"),
    (".5,", 0, "float"),
    ("-inf", 0, "float"),
    ("nan", 0, "float"),
    ("true", 0, "boolean"),
    ("main", 0, "function"),
    ("MatMul", 0, "function"),
    ("local.Activate:fast", 0, "function"),
    ("\"Optional\"", 0, "function"),
    ("then_g", 0, "function"),
    ("Activate <", 0, "function"),
    ("alpha = 0.5", 0, "attribute"),
    ("mode = \"relu\"", 0, "attribute"),
    ("axes", 0, "attribute"),
    ("alpha = 0.25", 0, "attribute"),  # an attribute list after the inputs: Op(x) <alpha = ...>
    ("then_branch", 0, "attribute"),
    ("\"type\"", 0, "attribute"),
    ("alpha, mode", 0, "attribute"),
    ("value_float", 0, "attribute"),
    ("@metadata_props", 0, "annotation"),
    ("@alpha", 0, "annotation"),
    ("=>", 0, "operator"),
    ("= MatMul", 0, "operator"),
    ("matmul]", 0, "label"),
    ("xw = MatMul", 0, "name"),
    ("x, w)", 0, "name"),
    ("t1 = \"Optional\"", 0, "name"),
]

VIM_GROUPS = {"comment": "Comment", "doc": "SpecialComment", "keyword": "Keyword", "type": "Type",
              "string": "String", "escape": "SpecialChar", "number": "Number", "float": "Float",
              "boolean": "Boolean", "function": "Function", "attribute": "Identifier", "annotation": "PreProc",
              "operator": "Operator", "label": "Label", "name": ""}
EMACS_FACES = {"comment": "font-lock-comment-face", "doc": "font-lock-doc-face", "keyword": "font-lock-keyword-face",
               "type": "font-lock-type-face", "string": "font-lock-string-face",
               "escape": "font-lock-constant-face", "number": "font-lock-constant-face",
               "float": "font-lock-constant-face", "boolean": "font-lock-constant-face",
               "function": "font-lock-function-name-face", "attribute": "font-lock-variable-name-face",
               "annotation": "font-lock-preprocessor-face", "operator": "font-lock-builtin-face",
               "label": "font-lock-constant-face", "name": "nil"}


def _positions(text: str) -> list[tuple[int, int]]:
    """(line, column), both 1-based, of each ROLES entry in text."""
    out = []
    for needle, n, _ in ROLES:
        starts = [m.start() for m in re.finditer(re.escape(needle), text)]
        assert len(starts) > n, f"{needle!r} occurs {len(starts)} times in the sample"
        offset = starts[n]
        line = text.count("\n", 0, offset) + 1
        out.append((line, offset - (text.rfind("\n", 0, offset) + 1) + 1))
    return out


def _check_roles(actual: list[str], table: dict[str, str], editor: str):
    wrong = [f"{needle!r}: {got!r}, expected {table[role]!r} ({role})"
             for (needle, _, role), got in zip(ROLES, actual) if got != table[role]]
    assert not wrong, f"{editor}: " + "; ".join(wrong)


def _need(tool: str, package: str) -> str:
    path = shutil.which(tool)
    if path is None:
        pytest.skip(f"{tool} is not installed (apt-get install -y {package})")
    return path


def _run_vim(vim: str, tmp_path, commands: list[str]) -> subprocess.CompletedProcess:
    script = tmp_path / "cmds.vim"
    script.write_text("\n".join(commands) + "\n", encoding="utf-8")
    args = [vim, "-es", "-u", "NONE", "-i", "NONE", "-N", "--cmd", f"set rtp^={os.path.join(EDITORS, 'vim')}",
            "-c", "filetype plugin indent on", "-c", "syntax on", "-S", str(script), "-c", "qa!"]
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def test_vim_highlight_groups(tmp_path):
    vim = _need("vim", "vim-nox")
    out = tmp_path / "groups.txt"
    positions = _positions(_read(SAMPLE))
    # the standard group an onnxtext syntax item links to (one link: synIDtrans would go on to the
    # colour scheme's own links, e.g. Function -> Identifier)
    result = _run_vim(vim, tmp_path, [
        f"edit {SAMPLE}",
        "let s:out = []",
        f"for [s:l, s:c] in {json.dumps(positions)}",
        "  let s:name = synIDattr(synID(s:l, s:c, 1), 'name')",
        "  let s:link = s:name ==# '' ? '' : matchstr(execute('hi ' . s:name), 'links to \\zs\\w\\+')",
        "  call add(s:out, s:link)",
        "endfor",
        f"call writefile(s:out, '{out}')",
    ])
    assert out.exists(), result.stdout + result.stderr
    _check_roles(out.read_text().split("\n")[:len(ROLES)], VIM_GROUPS, "vim")


def test_vim_filetype_and_settings(tmp_path):
    vim = _need("vim", "vim-nox")
    out = tmp_path / "settings.txt"
    for ext in ("onnxtext", "onnxtxt"):
        sample = tmp_path / f"m.{ext}"
        sample.write_text(_read(SAMPLE), encoding="utf-8")
        _run_vim(vim, tmp_path, [f"edit {sample}",
                                 f"call writefile([&filetype, &commentstring, &shiftwidth, &expandtab,"
                                 f" b:current_syntax], '{out}')"])
        assert out.read_text().split("\n")[:5] == ["onnxtext", "# %s", "2", "1", "onnxtext"]


def _indent_texts() -> list[tuple[str, str]]:
    import onnxtext

    models = dict(corpus.node_models())
    return [("sample", _read(SAMPLE))] + [(name, onnxtext.to_text(models[name])) for name in INDENT_MODELS]


def test_vim_indents_like_the_printer(tmp_path):
    vim = _need("vim", "vim-nox")
    for name, text in _indent_texts():
        flat = tmp_path / f"{name}.onnxtext"
        flat.write_text(re.sub(r"(?m)^[ \t]+", "", text), encoding="utf-8")
        out = tmp_path / f"{name}.out"
        _run_vim(vim, tmp_path, [f"edit {flat}", "normal! gg=G", f"write! {out}"])
        assert out.read_text(encoding="utf-8") == text, f"{name}: vim indentation differs from the printer's"


def _run_emacs(emacs: str, forms: str) -> subprocess.CompletedProcess:
    prelude = (f'(add-to-list \'load-path "{os.path.join(EDITORS, "emacs")}")'
               "(require 'onnxtext-mode)")
    return subprocess.run([emacs, "--batch", "-Q", "--eval", f"(progn {prelude} {forms})"],
                          capture_output=True, text=True, timeout=120)


def test_emacs_faces(tmp_path):
    emacs = _need("emacs", "emacs-nox")
    out = tmp_path / "faces.txt"
    positions = " ".join(f"({line} . {col})" for line, col in _positions(_read(SAMPLE)))
    result = _run_emacs(emacs, f"""
      (find-file "{SAMPLE}")
      (font-lock-ensure)
      (let (faces)
        (dolist (pos '({positions}))
          (goto-char (point-min))
          (forward-line (1- (car pos)))
          (forward-char (1- (cdr pos)))
          (let ((face (get-text-property (point) 'face)))
            (push (format "%s" (if (consp face) (car face) face)) faces)))
        (with-temp-file "{out}" (insert (mapconcat #'identity (nreverse faces) "\\n"))))""")
    assert out.exists(), result.stdout + result.stderr
    _check_roles(out.read_text().split("\n"), EMACS_FACES, "emacs")


def test_emacs_mode_settings(tmp_path):
    emacs = _need("emacs", "emacs-nox")
    out = tmp_path / "settings.txt"
    for ext in ("onnxtext", "onnxtxt"):
        sample = tmp_path / f"m.{ext}"
        sample.write_text(_read(SAMPLE), encoding="utf-8")
        _run_emacs(emacs, f"""(find-file "{sample}")
          (let ((settings (format "%s|%s|%s" major-mode comment-start indent-tabs-mode)))
            (with-temp-file "{out}" (insert settings)))""")
        assert out.read_text() == "onnxtext-mode|# |nil"


def test_emacs_indents_like_the_printer(tmp_path):
    emacs = _need("emacs", "emacs-nox")
    for name, text in _indent_texts():
        flat = tmp_path / f"{name}.onnxtext"
        flat.write_text(re.sub(r"(?m)^[ \t]+", "", text), encoding="utf-8")
        out = tmp_path / f"{name}.out"
        _run_emacs(emacs, f"""(find-file "{flat}")
          (indent-region (point-min) (point-max))
          (write-region (point-min) (point-max) "{out}")""")
        assert out.read_text(encoding="utf-8") == text, f"{name}: emacs indentation differs from the printer's"


def test_emacs_byte_compiles_cleanly(tmp_path):
    emacs = _need("emacs", "emacs-nox")
    target = tmp_path / "onnxtext-mode.el"
    shutil.copy(os.path.join(EDITORS, "emacs", "onnxtext-mode.el"), target)
    result = subprocess.run([emacs, "--batch", "-Q", "--eval", "(setq byte-compile-error-on-warn t)",
                             "-f", "batch-byte-compile", str(target)], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and (tmp_path / "onnxtext-mode.elc").exists(), result.stderr
