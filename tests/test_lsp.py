"""End-to-end tests of ``onnxtext lsp``: a real server process driven over stdio by pygls's client.

Positions are written as (needle, occurrence, offset): the place where the n-th occurrence of ``needle``
starts in the document, plus ``offset`` characters, so the tables stay readable and survive edits of the
fixture (tests/fixtures/lsp/model.onnxtext). Expected values are what a reader of the fixture sees (which
name is defined where, which schema onnx documents), never copied from the server's output.
"""

from __future__ import annotations

import os
import re

import onnx
import onnx.helper as oh
import pytest

pytest.importorskip("pygls", reason="the language server needs pygls (pip install 'onnxtext[lsp]')")

from lsprotocol import types as lsp  # noqa: E402

import onnxtext  # noqa: E402
from lsp_client import Client  # noqa: E402

HERE = os.path.dirname(__file__)
MODEL = open(os.path.join(HERE, "fixtures", "lsp", "model.onnxtext")).read()
URI = "file:///virtual/model.onnxtext"


def at(text: str, needle: str, nth: int = 0, offset: int = 0) -> tuple[int, int]:
    """0-based (line, character) of the nth occurrence of ``needle`` (+ offset characters)."""
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(needle, pos + 1)
    pos += offset
    line = text.count("\n", 0, pos)
    return line, pos - (text.rfind("\n", 0, pos) + 1)


def span_text(text: str, rng: lsp.Range) -> str:
    lines = text.split("\n")
    assert rng.start.line == rng.end.line
    return lines[rng.start.line][rng.start.character:rng.end.character]


@pytest.fixture(scope="module")
def client():
    c = Client()
    yield c
    c.close()


@pytest.fixture(scope="module")
def model_doc(client):
    client.open(URI, MODEL)
    assert client.wait_diagnostics(URI, 1) == []  # the fixture is a valid model
    return URI


def pos(uri, text, needle, nth=0, offset=0):
    return lsp.TextDocumentIdentifier(uri), lsp.Position(*at(text, needle, nth, offset))


def _where(uri, text, needle, nth=0, offset=0) -> dict:
    doc, position = pos(uri, text, needle, nth, offset)
    return {"text_document": doc, "position": position}


# ------------------------------------------------------------------------------------------ diagnostics
BROKEN = [
    # (edit of the fixture, rule id, text under the range, related text under the related range)
    (("s = Add(a, w)", "s = Add(a, ww)"), "graph.undefined", "ww", None),
    (("s = Add(a, w)", "a = Add(a, w)"), "graph.ssa", "a", "a"),
    (("xi) => (bool co", "x) => (bool co"), "graph.shadowing", "x", "x"),
    (("Relu(x)", "Relu <alpah = 1.0> (x)"), "op.attribute", "alpah", None),
    (("Relu(x)", "Relu(x"), "parse.syntax", "s", "("),
    (("float[2, 4] y", "flaot[2, 4] y"), "parse.syntax", "flaot", None),
    # inferred types: an int64 initializer added to a float value, a shape that does not broadcast
    (("float[4] w = {1.0, 2.0, 3.0, -4.0}", "int64[4] w = {1, 2, 3, -4}"), "type.node", "Add", None),
    (("float[4] w = {1.0, 2.0, 3.0, -4.0}", "float[3] w = {1.0, 2.0, 3.0}"), "type.node", "Add", None),
]


@pytest.mark.parametrize("edit, rule, culprit, related", BROKEN, ids=[b[1] + ":" + b[0][1] for b in BROKEN])
def test_diagnostics_after_change(client, edit, rule, culprit, related):
    uri = f"file:///virtual/broken_{BROKEN.index((edit, rule, culprit, related))}.onnxtext"
    client.open(uri, MODEL)
    assert client.wait_diagnostics(uri, 1) == []
    text = MODEL.replace(*edit)
    version = client.change(uri, text)
    diags = client.wait_diagnostics(uri, version)
    found = [d for d in diags if d.code == rule]
    assert found, [(d.code, d.message) for d in diags]
    d = found[0]
    assert d.source == "onnxtext"
    assert span_text(text, d.range) == culprit, d
    if related is None:
        assert not d.related_information
    else:
        (info,) = d.related_information
        assert span_text(text, info.location.range) == related
        assert info.location.range.start.line < d.range.start.line or rule == "graph.shadowing"
    # fixing the text clears the diagnostics (an incremental edit back to the original)
    version = client.change(uri, MODEL)
    assert client.wait_diagnostics(uri, version) == []


def test_unclosed_bracket_points_at_opener(client):
    uri = "file:///virtual/unclosed.onnxtext"
    text = MODEL.replace("Relu(x)", "Relu(x")
    client.open(uri, text)
    (d,) = [d for d in client.wait_diagnostics(uri, 1) if d.code == "parse.syntax"]
    (info,) = d.related_information
    assert info.location.range.start == lsp.Position(*at(text, "Relu(", 0, 4))


def test_incremental_edit(client):
    uri = "file:///virtual/incremental.onnxtext"
    client.open(uri, MODEL)
    client.wait_diagnostics(uri, 1)
    line, ch = at(MODEL, "Add(a, w)", 0, 7)  # the 'w'
    version = client.edit(uri, line, ch, line, ch + 1, "unknown_value")
    (d,) = client.wait_diagnostics(uri, version)
    assert d.code == "graph.undefined" and "unknown_value" in d.message
    assert d.range.start == lsp.Position(line, ch)


def test_twenty_errors(client):
    lines = ['<ir_version: 10, opset_import: ["": 21]>', "main (float[2] x) => (float[2] y) {"]
    for i in range(20):
        lines.append(f"  v{i} = Relu(x,, )) )")  # an extra ')' on each line
    lines += ["  y = Identity(x)", "}"]
    text = "\n".join(lines) + "\n"
    uri = "file:///virtual/twenty.onnxtext"
    client.open(uri, text)
    diags = client.wait_diagnostics(uri, 1)
    assert [d.code for d in diags] == ["parse.syntax"] * 20
    assert [d.range.start.line for d in diags] == list(range(2, 22))


# two nodes with one name: a warning; no model domain: style advice (lint)
LINT_TEXT = MODEL.replace(', domain: "test.lsp"', "").replace("  a = Relu", "  [n] a = Relu").replace(
    "  s = Add", "  [n] s = Add")


@pytest.mark.parametrize("level, rules", [
    ("error", set()),
    ("warning", {"graph.unique-names"}),
    ("lint", {"graph.unique-names", "model.domain"}),
])
def test_lint_level(level, rules):
    c = Client(init_options={"onnxtext": {"lintLevel": level}})
    uri = "file:///virtual/lint.onnxtext"
    try:
        c.open(uri, LINT_TEXT)
        assert {d.code for d in c.wait_diagnostics(uri, 1)} == rules
    finally:
        c.close()


def test_malformed_message_does_not_kill_the_server(client, model_doc):
    body = b'{"jsonrpc": "2.0", "id": 99, "method": "textDocument/hover", "params": {not json'
    garbage = b"Content-Length: %d\r\n\r\n%s" % (len(body), body)

    async def send():
        client.process.stdin.write(garbage)
        await client.process.stdin.drain()

    client.run(send())
    h = client.request("textDocument/hover", lsp.HoverParams(*pos(model_doc, MODEL, "Relu(x)")))
    assert "Relu" in h.contents.value
    assert client.process.returncode is None


# ------------------------------------------------------------------------------------------ hover
HOVERS = [
    # (needle, nth, offset, words the hover must contain)
    ("Relu(x)", 0, 1, ["Relu(X: T) -> (Y: T)", "since opset 14"]),
    ("Loop (n", 0, 0, ["Loop", "`body`: `graph` (required)"]),
    ("alpha = 2.0", 0, 0, ["function attribute `alpha`, declared at line 16"]),  # set by a call
    ("body = body_g", 0, 0, ["attribute `body`", "graph", "required"]),
    ("Add(a, w)", 0, 7, ["`w`: `float[4]`", "initializer", "min -4", "max 3", "mean 0.5"]),
    ("Relu(x)", 0, 5, ["`x`: `float[2, 4]`", "graph input"]),
    ("Mul(xi, s)", 0, 4, ["`xi`: `float[2, 4]`", "graph `body_g`"]),
    ("Add(a, w)", 0, 4, ["`a`: `float[2, 4]` (inferred)", "node output of Relu, line 6"]),
    ("Identity(cc)", 0, 0, ["Identity(input: V) -> (output: V)"]),  # an operator inside a subgraph
    ("Mul(xi, s)", 0, 0, ["Mul(A: T, B: T) -> (C: T)"]),
    ("xo = Mul", 0, 0, ["`xo`: `float[2, 4]`", "node output of Mul, line 10", "graph `body_g`"]),
    ("local.Scale", 0, 7, ["Scale <alpha> (X) => (Y)", "model-local function"]),
    ("@alpha", 0, 1, ["function attribute `alpha`"]),
]


@pytest.mark.parametrize("needle, nth, offset, words", HOVERS, ids=[f"{h[0]}+{h[2]}" for h in HOVERS])
def test_hover(client, model_doc, needle, nth, offset, words):
    h = client.request("textDocument/hover", lsp.HoverParams(*pos(model_doc, MODEL, needle, nth, offset)))
    if not words:
        assert h is None
        return
    for w in words:
        assert w in h.contents.value, h.contents.value


def test_hover_doc_paragraph_matches_onnx(client, model_doc):
    h = client.request("textDocument/hover", lsp.HoverParams(*pos(model_doc, MODEL, "Relu(x)")))
    first_line = onnx.defs.get_schema("Relu", 21).doc.strip().splitlines()[0].strip()
    assert first_line in h.contents.value


# ------------------------------------------------------------------------------------------ completion
def _labels(client, uri, text, needle, nth=0, offset=0):
    r = client.request("textDocument/completion", lsp.CompletionParams(*pos(uri, text, needle, nth, offset)))
    return {i.label: i for i in r.items}


def test_completion_contexts(client):
    uri = "file:///virtual/completion.onnxtext"
    client.open(uri, MODEL)
    client.wait_diagnostics(uri, 1)
    # while these lines are being typed the text does not parse: names come from the last text that did
    text = MODEL.replace("  a = Relu(x)\n", "  a = Relu(x)\n  q = \n  r = Conv <\n  p = LeakyRelu (x) <\n  t = Add(\n")
    client.wait_diagnostics(uri, client.change(uri, text))
    ops = _labels(client, uri, text, "q = ", 0, 4)
    assert {"Relu", "Conv", "Loop", "local.Scale"} <= set(ops)
    assert "Scatter" not in ops  # deprecated before opset 21
    assert ops["Conv"].insert_text_format == lsp.InsertTextFormat.Snippet
    assert ops["Loop"].insert_text.startswith("Loop <body = ${1:graph}>")
    attrs = _labels(client, uri, text, "Conv <", 0, 6)
    assert {"kernel_shape", "strides", "pads", "group", "auto_pad", "dilations"} == set(attrs)
    assert set(_labels(client, uri, text, "LeakyRelu (x) <", 0, 15)) == {"alpha"}  # attributes after inputs
    values = _labels(client, uri, text, "Add(\n", 0, 4)
    assert {"x", "n", "c", "w", "a", "s"} <= set(values)
    assert "xi" not in values  # a name of the Loop body is not in scope in main


def test_completion_header_and_types(client, model_doc):
    keys = _labels(client, model_doc, MODEL, "ir_version", 0, 0)
    assert {"ir_version", "opset_import", "producer_name", "domain", "metadata_props"} <= set(keys)
    types = _labels(client, model_doc, MODEL, "int64 n", 0, 0)
    assert {"float", "int64", "bfloat16", "float8e4m3fn", "seq", "map"} <= set(types)


def test_completion_in_subgraph_sees_outer_values(client, model_doc):
    values = _labels(client, model_doc, MODEL, "Mul(xi, s)", 0, 4)
    assert {"xi", "cc", "i", "s", "a", "x"} <= set(values)


# ------------------------------------------------------------------------------------------ navigation
DEFINITIONS = [
    # (use: needle, nth, offset) -> (definition: needle, nth, offset)
    (("Relu(x)", 0, 5), ("float[2, 4] x", 0, 12)),
    (("Add(a, w)", 0, 7), ("w = {", 0, 0)),
    (("Mul(xi, s)", 0, 8), ("s = Add", 0, 0)),  # an outer value used in a subgraph
    (("Mul(xi, s)", 0, 4), ("float[2, 4] xi", 0, 12)),
    (("local.Scale", 0, 6), ("Scale <alpha> (X)", 0, 0)),
    (("@alpha", 0, 1), ("Scale <alpha>", 0, 7)),
    (("Mul(X, f)", 0, 4), ("(X) => (Y)", 0, 1)),
    (("=> (float[2, 4] y", 0, 16), ("y = Loop", 0, 0)),  # a graph output -> the node producing it
]


@pytest.mark.parametrize("use, target", DEFINITIONS, ids=[f"{u[0]}+{u[2]}" for u, _ in DEFINITIONS])
def test_definition(client, model_doc, use, target):
    loc = client.request("textDocument/definition", lsp.DefinitionParams(*pos(model_doc, MODEL, *use)))
    assert loc.range.start == lsp.Position(*at(MODEL, *target))


def test_definition_with_shadowing(client):
    uri = "file:///virtual/shadow.onnxtext"
    text = MODEL.replace("float[2, 4] xi", "float[2, 4] x").replace("Mul(xi, s)", "Mul(x, s)")
    client.open(uri, text)
    client.wait_diagnostics(uri, 1)
    inner = client.request("textDocument/definition", lsp.DefinitionParams(*pos(uri, text, "Mul(x, s)", 0, 4)))
    outer = client.request("textDocument/definition", lsp.DefinitionParams(*pos(uri, text, "Relu(x)", 0, 5)))
    assert inner.range.start == lsp.Position(*at(text, "float[2, 4] x)", 0, 12))
    assert outer.range.start == lsp.Position(*at(text, "float[2, 4] x,", 0, 12))
    refs = client.request("textDocument/references", lsp.ReferenceParams(
        **_where(uri, text, "Relu(x)", 0, 5), context=lsp.ReferenceContext(include_declaration=True)))
    assert len(refs) == 2  # the outer input and its use in Relu, not the Loop body's x


def test_references(client, model_doc):
    refs = client.request("textDocument/references", lsp.ReferenceParams(
        **_where(model_doc, MODEL, "s = Add"), context=lsp.ReferenceContext(include_declaration=True)))
    got = sorted((r.range.start.line, r.range.start.character) for r in refs)
    want = sorted([at(MODEL, "s = Add"), at(MODEL, "Mul(xi, s)", 0, 8), at(MODEL, "(s)\n}", 0, 1)])
    assert got == want


RENAMES = [
    # (position, new name, expected replacements: (needle, nth, offset, new text))
    (("s = Add", 0, 0), "summed", [("s = Add", 0, 0, "summed"), ("Mul(xi, s)", 0, 8, "summed"),
                                   ("(s)\n}", 0, 1, "summed")]),
    (("Relu(x)", 0, 5), "in/put", [("float[2, 4] x", 0, 12, '"in/put"'), ("Relu(x)", 0, 5, '"in/put"')]),
    (("local.Scale", 0, 6), "Scale2", [("local.Scale", 0, 6, "Scale2"), ("Scale <alpha> (X)", 0, 0, "Scale2")]),
    (("@alpha", 0, 1), "gain", [("Scale <alpha>", 0, 7, "gain"), ("@alpha", 0, 0, "@gain"),
                                ("alpha = 2.0", 0, 0, "gain")]),
]


@pytest.mark.parametrize("where, new, edits", RENAMES, ids=[r[1] for r in RENAMES])
def test_rename(client, model_doc, where, new, edits):
    result = client.request("textDocument/rename", lsp.RenameParams(*pos(model_doc, MODEL, *where), new_name=new))
    got = sorted((e.range.start.line, e.range.start.character, e.new_text) for e in result.changes[model_doc])
    assert got == sorted((*at(MODEL, n, k, o), t) for n, k, o, t in edits)
    renamed = _apply(MODEL, result.changes[model_doc])
    assert not [d for d in onnxtext.check(renamed) if d.severity == "error"]


def _apply(text, edits):
    lines = text.split("\n")
    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        ln = lines[e.range.start.line]
        lines[e.range.start.line] = ln[:e.range.start.character] + e.new_text + ln[e.range.end.character:]
    return "\n".join(lines)


def test_rename_refuses_schema_operators(client, model_doc):
    r = client.request("textDocument/prepareRename", lsp.PrepareRenameParams(*pos(model_doc, MODEL, "Relu(x)")))
    assert r is None


def test_document_symbols(client, model_doc):
    symbols = client.request("textDocument/documentSymbol", lsp.DocumentSymbolParams(
        lsp.TextDocumentIdentifier(model_doc)))
    assert [s.name for s in symbols] == ["header", "main", "Scale"]
    main = symbols[1]
    names = [c.name for c in main.children]
    assert names[:4] == ["x", "n", "c", "w"]
    assert "y = Loop" in names and "z = local.Scale" in names
    assert main.kind == lsp.SymbolKind.Module and symbols[2].kind == lsp.SymbolKind.Function


def test_folding_ranges(client, model_doc):
    folds = client.request("textDocument/foldingRange", lsp.FoldingRangeParams(lsp.TextDocumentIdentifier(model_doc)))
    got = {(f.start_line, f.end_line) for f in folds}
    main_start = at(MODEL, "main (")[0]
    assert (main_start, at(MODEL, "z = local")[0]) in got  # the main graph
    assert (at(MODEL, "y = Loop")[0], at(MODEL, "xo = Mul")[0]) in got  # the Loop body
    assert (at(MODEL, "Scale <alpha>")[0], at(MODEL, "Y = Mul")[0]) in got  # the function


def test_formatting_keeps_comments(client):
    uri = "file:///virtual/fmt.onnxtext"
    messy = MODEL.replace("a = Relu(x)", "a   =   Relu( x )   // why relu")
    client.open(uri, messy)
    client.wait_diagnostics(uri, 1)
    edits = client.request("textDocument/formatting", lsp.DocumentFormattingParams(
        lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(tab_size=2, insert_spaces=True)))
    (edit,) = edits
    out = edit.new_text
    assert re.search(r"\n  a = Relu\(x\) +// why relu\n", out) and "# a comment the formatter keeps" in out
    assert onnxtext.parse_model(out) == onnxtext.parse_model(messy)


def test_formatting_a_broken_text_changes_nothing(client):
    uri = "file:///virtual/fmt_broken.onnxtext"
    client.open(uri, MODEL.replace("Relu(x)", "Relu(x"))
    client.wait_diagnostics(uri, 1)
    edits = client.request("textDocument/formatting", lsp.DocumentFormattingParams(
        lsp.TextDocumentIdentifier(uri), lsp.FormattingOptions(tab_size=2, insert_spaces=True)))
    assert not edits


SEMANTIC = [
    # (needle, nth, offset, length, token type)
    ("Relu", 0, 0, 4, "function"),
    ("float[2, 4] x", 0, 0, 5, "type"),
    ("ir_version", 0, 0, 10, "keyword"),
    ('"onnxtext"', 0, 1, 8, "string"),
    ("# a comment", 0, 0, 31, "comment"),
    ("alpha = 2.0", 0, 0, 5, "property"),
    ("body = body_g", 0, 0, 4, "property"),  # the attribute list after the op: Loop (...) <body = ...>
    ("@alpha", 0, 0, 6, "decorator"),
    ("2.0", 0, 0, 3, "number"),
]


def test_semantic_tokens(client, model_doc):
    text = MODEL.replace("Loop (n, c, a) <body", "Loop (n, c, a) <body")
    r = client.request("textDocument/semanticTokens/full", lsp.SemanticTokensParams(lsp.TextDocumentIdentifier(model_doc)))
    legend = client.init.capabilities.semantic_tokens_provider.legend.token_types
    decoded = {}
    line = col = 0
    data = list(r.data)
    for i in range(0, len(data), 5):
        dl, dc, length, kind, _mods = data[i:i + 5]
        line += dl
        col = col + dc if dl == 0 else dc
        decoded[(line, col)] = (length, legend[kind])
    for needle, nth, offset, length, kind in SEMANTIC:
        assert decoded.get(at(text, needle, nth, offset)) == (length, kind), needle


# ------------------------------------------------------------------------------------------ binary models
def _binary_model(path):
    x = oh.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])
    y = oh.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])
    w = onnx.numpy_helper.from_array(__import__("numpy").array([0.5, -1.5], dtype="float32"), "w")
    g = oh.make_graph([oh.make_node("Mul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 21)])
    onnx.save(m, path)
    return m


def test_print_and_compile_binary(client, tmp_path):
    path = tmp_path / "m.onnx"
    original = _binary_model(path)
    before = path.read_bytes()
    uri = path.as_uri()
    text = client.request("onnxtext/print", {"uri": uri})["text"]
    assert onnxtext.parse_model(text) == original
    # unchanged text: the file is not rewritten
    r = client.request("onnxtext/compile", {"uri": uri, "text": text})
    assert r["ok"] and not r["written"] and path.read_bytes() == before
    # a text with an error is refused and the file is left as it was
    r = client.request("onnxtext/compile", {"uri": uri, "text": text.replace("Mul(x, w)", "Mul(x, ww)")})
    assert not r["ok"] and "error" in r["message"] and "line" in r["message"]
    assert path.read_bytes() == before
    r = client.request("onnxtext/compile", {"uri": uri, "text": text.replace("Mul(x, w)", "Mul(x")})
    assert not r["ok"] and path.read_bytes() == before
    # an edit is written as a binary model
    r = client.request("onnxtext/compile", {"uri": uri, "text": text.replace("Mul(x, w)", "Add(x, w)")})
    assert r["ok"] and r["written"]
    saved = onnx.load(str(path))
    assert [n.op_type for n in saved.graph.node] == ["Add"]
    assert saved.graph.initializer[0] == original.graph.initializer[0]
    assert not [f for f in os.listdir(tmp_path) if f != "m.onnx"]  # no temporary left behind


def test_print_of_a_missing_file_is_an_error(client, tmp_path):
    with pytest.raises(Exception, match="no such file|No such file|not found|does not exist"):
        client.request("onnxtext/print", {"uri": (tmp_path / "missing.onnx").as_uri()})


def test_binary_document_opened_as_text(client, tmp_path):
    """The VS Code extension opens the printed text under its own scheme: every feature works on it."""
    path = tmp_path / "m2.onnx"
    _binary_model(path)
    text = client.request("onnxtext/print", {"uri": path.as_uri()})["text"]
    uri = "onnxtext-binary:" + str(path)
    client.open(uri, text)
    assert client.wait_diagnostics(uri, 1) == [] or all(d.severity == lsp.DiagnosticSeverity.Warning
                                                        for d in client.wait_diagnostics(uri, 1))
    h = client.request("textDocument/hover", lsp.HoverParams(*pos(uri, text, "Mul(")))
    assert "Mul(A: T, B: T) -> (C: T)" in h.contents.value


# ------------------------------------------------------------------------------------------ size
def big_model(n: int) -> str:
    lines = ['<ir_version: 10, opset_import: ["": 21], domain: "test.big">', "main (float[1, 8] x) => (float[1, 8] y) {",
             "  v0 = Relu(x)"]
    for i in range(1, n):
        lines.append(f"  v{i} = Add(v{i - 1}, x)" if i % 2 else f"  v{i} = Relu(v{i - 1})")
    lines += [f"  y = Identity(v{n - 1})", "}"]
    return "\n".join(lines) + "\n"


def test_five_thousand_nodes(client):
    uri = "file:///virtual/big.onnxtext"
    text = big_model(5000)
    client.open(uri, text)
    assert client.wait_diagnostics(uri, 1) == []
    broken = text.replace("v4000 = Relu(v3999)", "v4000 = Relu(v3999x)")
    version = client.change(uri, broken)
    (d,) = client.wait_diagnostics(uri, version)
    assert d.code == "graph.undefined" and d.range.start.line == at(broken, "v3999x")[0]
    h = client.request("textDocument/hover", lsp.HoverParams(*pos(uri, broken, "Add(v4998", 0, 4)))
    assert "node output of Relu" in h.contents.value
    symbols = client.request("textDocument/documentSymbol", lsp.DocumentSymbolParams(lsp.TextDocumentIdentifier(uri)))
    assert len(symbols[1].children) == 5001 + 2  # nodes, the input, the output


def test_stdio_command_is_registered():
    from onnxtext.cli import COMMANDS

    assert COMMANDS["lsp"][0] == "lsp"
    assert re.search(r"\bLSP\b", COMMANDS["lsp"][1])


def test_missing_pygls_is_a_clear_error():
    """Without the lsp extra, `onnxtext lsp` says what to install instead of a traceback."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['pygls'] = None; from onnxtext.cli import main; "
            "sys.exit(main(['lsp']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    assert "pip install 'onnxtext[lsp]'" in r.stderr and "Traceback" not in r.stderr


def test_bare_graph_document(client):
    """A text holding a graph alone (no model header) gets the same features as a model."""
    uri = "file:///virtual/graph.onnxtext"
    text = "g (float[3] x) => (float[3] y) {\n  t = Relu(x)\n  y = Neg(t)\n}\n"
    client.open(uri, text)
    assert client.wait_diagnostics(uri, 1) == []
    h = client.request("textDocument/hover", lsp.HoverParams(*pos(uri, text, "Neg(t)", 0, 4)))
    assert "`t`: `float[3]` (inferred)" in h.contents.value
    loc = client.request("textDocument/definition", lsp.DefinitionParams(*pos(uri, text, "Neg(t)", 0, 4)))
    assert loc.range.start == lsp.Position(*at(text, "t = Relu"))


def test_close_clears_diagnostics(client):
    uri = "file:///virtual/closed.onnxtext"
    client.open(uri, MODEL.replace("Add(a, w)", "Add(a, nowhere)"))
    assert client.wait_diagnostics(uri, 1)
    client.call(client.client.text_document_did_close, lsp.DidCloseTextDocumentParams(lsp.TextDocumentIdentifier(uri)))
    assert _eventually_empty(client, uri)  # the server publishes an empty list for a closed document


def _eventually_empty(client, uri, timeout=30):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if client.diagnostics[uri][-1][1] == []:
            return True
        time.sleep(0.05)
    return False


def _shipped_models():
    import corpus

    wanted = ("light_squeezenet.onnx", "test_sequence_model1/", "test_gradient_of_add/", "test_single_relu_model/")
    return [p for p in corpus.file_models() if any(w in p for w in wanted)]


@pytest.mark.parametrize("source", _shipped_models(), ids=lambda p: os.path.relpath(p, os.path.dirname(
    os.path.dirname(os.path.dirname(p)))))
def test_binary_round_trip_through_the_editor(client, tmp_path, source):
    """A .onnx file shipped with onnx: its text, saved unchanged, leaves the file alone; saved with a header
    edit, the graph's bytes (weights included) are the original's."""
    import shutil

    path = tmp_path / "model.onnx"
    shutil.copy(source, path)
    before = path.read_bytes()
    text = client.request("onnxtext/print", {"uri": path.as_uri()})["text"]
    r = client.request("onnxtext/compile", {"uri": path.as_uri(), "text": text})
    assert r["ok"] and not r["written"] and path.read_bytes() == before
    edited = re.sub(r"producer_name: \"[^\"]*\"", 'producer_name: "edited in an editor"', text, count=1)
    if edited == text:
        edited = text.replace("<\n", '<\n  producer_name: "edited in an editor",\n', 1)
    r = client.request("onnxtext/compile", {"uri": path.as_uri(), "text": edited})
    assert r["ok"] and r["written"], r
    original, saved = onnx.load_model_from_string(before), onnx.load(str(path))
    assert saved.producer_name == "edited in an editor"
    assert saved.graph.SerializeToString() == original.graph.SerializeToString()


def test_configuration_change_republishes():
    c = Client()
    uri = "file:///virtual/config.onnxtext"
    try:
        c.open(uri, LINT_TEXT)
        assert {d.code for d in c.wait_diagnostics(uri, 1)} == {"graph.unique-names"}  # a warning
        c.call(c.client.workspace_did_change_configuration, lsp.DidChangeConfigurationParams(
            settings={"onnxtext": {"lintLevel": "error"}}))
        assert _eventually_empty(c, uri)
    finally:
        c.close()
