"""Corpus round trip: parse(to_text(m)) == m for every ONNX backend test model, encodings included,
and printing is idempotent."""

import pytest

import onnxtext
from corpus import all_models, cleared

CASES = all_models()


@pytest.mark.parametrize("name,load", CASES, ids=[c[0] for c in CASES])
def test_roundtrip(name, load):
    m = load()
    text = onnxtext.to_text(m)
    back = onnxtext.parse_model(text)
    assert cleared(back) == cleared(m)
    # the encoding of every tensor is kept: raw_data stays raw_data with the same bytes
    for a, b in zip(m.graph.initializer, back.graph.initializer):
        assert a.HasField("raw_data") == b.HasField("raw_data")
        assert a.raw_data == b.raw_data
    assert onnxtext.to_text(back) == text  # idempotent


def test_corpus_size():
    # 1884 node models plus the folder models: the corpus, not a subset
    assert sum(1 for n, _ in CASES if n.startswith("test_")) >= 1884
    assert len(CASES) >= 2000
