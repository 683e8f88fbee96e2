"""The language server's index over real texts: every model the onnx backend suite ships, printed.

In a valid model every value a node reads is defined in its graph or an enclosing one (or is a graph input
of a subgraph, an initializer, an earlier node's output), so each use the index finds must resolve to a
definition with the same name, and references from any occurrence must include that definition. Function
calls resolve to the model's functions. No server process: the index is plain Python.
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
