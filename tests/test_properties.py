"""Property tests (issue 10): random valid protos across every field of onnx.proto round-trip exactly.

``tests/strategies.py`` generates models, graphs, functions, nodes, tensors and types with every
field in play (names and doc strings with arbitrary characters, all 28 element types in raw and
typed encodings with arbitrary bit patterns, external references, sparse tensors, training info,
device configurations...). The properties:

* ``parse(print(m)) == m`` (after clearing explicitly-set defaults, the round-trip equivalence),
* printing is idempotent: ``print(parse(print(m))) == print(m)``,
* the strategies really exercise every field of every message (a coverage check, so a field added
  to onnx.proto, or a strategy that stops setting one, fails here).

The default profile is derandomized so CI is reproducible; ``HYPOTHESIS_PROFILE=explore`` runs many
more random examples (``HYPOTHESIS_PROFILE=explore python -m pytest tests/test_properties.py``).
"""

from __future__ import annotations

import os

import onnx
from hypothesis import HealthCheck, given, settings

import onnxtext
import strategies as S
from corpus import cleared

settings.register_profile("ci", max_examples=100, deadline=None, derandomize=True, database=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("explore", max_examples=3000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def _roundtrip(msg, parse, **print_options):
    text = onnxtext.to_text(msg, **print_options)
    back = parse(text)
    assert cleared(back) == cleared(msg), text
    assert onnxtext.to_text(back, **print_options) == text
    return text


@given(S.models())
def test_models_roundtrip(m):
    _roundtrip(m, onnxtext.parse_model)


@given(S.models())
def test_models_roundtrip_with_blocks(m):
    """max_inline=0: every tensor's data as a base64 block instead of decimal literals."""
    _roundtrip(m, onnxtext.parse_model, max_inline=0)


@given(S.graphs(depth=2))
def test_graphs_roundtrip(g):
    _roundtrip(g, onnxtext.parse_graph)


@given(S.functions())
def test_functions_roundtrip(f):
    _roundtrip(f, onnxtext.parse_function)


@given(S.nodes(depth=2))
def test_nodes_roundtrip(n):
    _roundtrip(n, onnxtext.parse_node)


# ---------------------------------------------------------------------------------------------- coverage
def _messages(root):
    """Every message type reachable from ``root``'s descriptor."""
    out, todo = {}, [root]
    while todo:
        d = todo.pop()
        if d.full_name in out:
            continue
        out[d.full_name] = d
        todo.extend(f.message_type for f in d.fields if f.message_type is not None)
    return out


def _walk(msg, seen):
    for fd, value in msg.ListFields():
        seen.add((msg.DESCRIPTOR.name, fd.name))
        if fd.message_type is None:
            continue
        for v in (value if fd.is_repeated else [value]):
            _walk(v, seen)


def test_strategies_cover_every_field():
    seen: set[tuple[str, str]] = set()

    @settings(max_examples=400, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(S.models())
    def collect(m):
        _walk(m, seen)

    collect()
    every = {(d.name, f.name) for d in _messages(onnx.ModelProto.DESCRIPTOR).values() for f in d.fields}
    missing = sorted(every - seen)
    assert not missing, f"fields no generated model sets: {missing}"
