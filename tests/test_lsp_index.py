"""The language server's analysis over texts nobody here wrote for it: models of the onnx backend suite
(printed), the checker's hand-marked case files, the invalid-text fixtures.

In a valid model every value a node reads is defined in its graph or an enclosing one (or is a graph input
of a subgraph, an initializer, an earlier node's output), so each use the index finds must resolve to a
definition with the same name, and references from any occurrence must include that definition. Function
calls resolve to the model's functions. The case files' ``# <- rule`` marks and the invalid fixtures'
``# error: LINE:COL`` lines give the diagnostics' codes and positions. No server process: plain Python.
"""

from __future__ import annotations

import pytest

pytest.importorskip("lsprotocol", reason="the language server needs lsprotocol (pip install 'onnxtext[lsp]')")

import corpus  # noqa: E402
import onnxtext  # noqa: E402
from onnxtext.lsp.index import build_index  # noqa: E402

MODELS = corpus.node_models()[::7]  # a seventh of the suite keeps this under a minute on a busy machine


@pytest.mark.parametrize("name, model", MODELS, ids=[n for n, _ in MODELS])
def test_every_use_resolves(name, model):
    text = onnxtext.to_text(model)
    idx = build_index(text)
    assert idx is not None
    uses = [o for o in idx.occurrences if o.kind == "value" and o.role == "use"]
    for use in uses:
        target = idx.definition(use)
        assert target is not None, f"{use.name!r} at line {use.span.line} resolves to nothing"
        assert target.name == use.name and target.defines
        assert use in idx.references(target)
    functions = {f"{f.domain}.{f.name}" for f in model.functions}
    for call in (o for o in idx.occurrences if o.role == "call"):
        assert (idx.definition(call) is not None) == (call.name in functions)
    # one graph scope for the main graph and for each subgraph, in the main graph and in function bodies
    graphs = 1 + len(list(_subgraphs(model.graph))) + sum(len(list(_subgraphs_of_nodes(f.node)))
                                                         for f in model.functions)
    assert sum(1 for s in idx.scopes if s.kind == "graph") == graphs
    assert sum(1 for s in idx.scopes if s.kind == "function") == len(model.functions)


def _subgraphs(graph):
    yield from _subgraphs_of_nodes(graph.node)


def _subgraphs_of_nodes(nodes):
    for node in nodes:
        for a in node.attribute:
            for g in ([a.g] if a.HasField("g") else []) + list(a.graphs):
                yield g
                yield from _subgraphs(g)


# ------------------------------------------------------------------------------ the checker's case files
def _cases():
    import glob
    import os

    return sorted(glob.glob(os.path.join(os.path.dirname(__file__), "checker_cases", "*.onnxtext")))


@pytest.mark.parametrize("path", _cases(), ids=lambda p: p.rsplit("/", 1)[-1][:-len(".onnxtext")])
def test_checker_cases_as_lsp_diagnostics(path):
    """Each ``# <- rule`` mark of tests/checker_cases (written by hand) comes out as an LSP diagnostic with
    that rule as its code, on that line, with a range that covers a token of the line."""
    import collections

    from test_checker import expected_marks

    from onnxtext.lsp.analysis import analyse

    text = open(path, encoding="utf-8").read()
    an = analyse("file:///case.onnxtext", 1, text, lint=True)
    got = collections.Counter((d.code, d.range.start.line + 1) for d in an.diagnostics)
    assert got == expected_marks(text), "\n".join(f"{d.range} {d.code} {d.message}" for d in an.diagnostics)
    lines = text.split("\n")
    for d in an.diagnostics:
        r = d.range
        assert r.end.line > r.start.line or r.end.character > r.start.character
        assert lines[r.start.line][r.start.character:r.start.character + 1].strip(), d


def _invalid():
    import glob
    import os

    return sorted(glob.glob(os.path.join(os.path.dirname(__file__), "fixtures", "invalid", "*.onnxtext")))


@pytest.mark.parametrize("path", _invalid(), ids=lambda p: p.rsplit("/", 1)[-1][:-len(".onnxtext")])
def test_invalid_texts_as_lsp_diagnostics(path):
    """The first diagnostic of each tests/fixtures/invalid text is at the ``# error: LINE:COL:`` its first
    line names (written by hand), as a ``parse.syntax`` error."""
    import re

    from onnxtext.lsp.analysis import analyse

    text = open(path, encoding="utf-8", errors="replace").read()
    line, col = map(int, re.match(r"# error: (\d+):(\d+):", text).groups())
    first = analyse("file:///invalid.onnxtext", 1, text).diagnostics[0]
    assert (first.range.start.line + 1, first.range.start.character + 1) == (line, col), first
    assert first.code == "parse.syntax" and first.severity == 1  # DiagnosticSeverity.Error
