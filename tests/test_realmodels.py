"""Sanity of the real-model corpus (tools/build_corpus.py, docs/corpus.md), judged by oracles only: every
model loads with onnx, onnx.checker accepts it or the corpus table says why not, its feeds fit its inputs,
and onnxruntime runs them when the manifest says it does. Tests of onnxtext itself on these models live
beside the features they test and use tests/realmodels.py the same way."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import realmodels

ROOT = Path(__file__).resolve().parents[1]
MODELS = realmodels.params()

REQUIRED = {"name": str, "source": str, "kind": str, "bytes": int, "external_data": bool, "ort_runs": bool,
            "notes": str}


def _build_corpus():
    """tools/build_corpus.py as a module (its table of models and its tensor walker)."""
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import build_corpus
    finally:
        sys.path.pop(0)
    return build_corpus


def _table():
    return _build_corpus().MODELS


@realmodels.requires_corpus
def test_every_table_model_is_built():
    """A model of the table missing from the cache means that its build failed (see logs/<name>.log)."""
    built = {m.name for m in realmodels.corpus_models()}
    missing = [e.name for e in _table() if e.name not in built]
    assert not missing, f"not in the corpus (run python tools/build_corpus.py --only {' '.join(missing)})"


@realmodels.requires_corpus
def test_manifest_records():
    import json

    records = json.loads((realmodels.corpus_dir() / "manifest.json").read_text())
    kinds = {e.name: e.kind for e in _table()}
    for r in records:
        for key, typ in REQUIRED.items():
            assert isinstance(r[key], typ), (r["name"], key, r[key])
        assert r["kind"] == kinds.get(r["name"], r["kind"]), r["name"]
    assert len({r["name"] for r in records}) == len(records)


@pytest.mark.parametrize("model", MODELS)
def test_files_and_sizes(model):
    files = sorted(p.name for p in model.path.parent.glob(model.name + ".onnx*"))
    assert files == sorted(model.files)
    assert sum((model.path.parent / f).stat().st_size for f in files) == model.bytes
    proto = model.load(load_external_data=False)
    external = [t for t in _build_corpus().all_tensors(proto.graph) if t.data_location == onnx.TensorProto.EXTERNAL]
    locations = {e.value for t in external for e in t.external_data if e.key == "location"}
    assert model.external_data == bool(locations)
    assert locations <= set(files), "external data the producer wrote must sit beside the model"
    assert model.nodes == len(proto.graph.node)


@pytest.mark.parametrize("model", MODELS)
def test_onnx_checker(model):
    """onnx.checker accepts the model, or the table of tools/build_corpus.py says why not (strict)."""
    try:
        onnx.checker.check_model(str(model.path), full_check=False)
    except onnx.checker.ValidationError as e:
        assert model.checker, f"onnx.checker rejects {model.name} and the corpus table gives no reason: {e}"
    else:
        assert not model.checker, f"onnx.checker accepts {model.name}: remove the reason from the table"


@pytest.mark.parametrize("model", MODELS)
def test_feeds_fit_inputs(model):
    """Every graph input has a feed of its declared element type and rank, fixed dimensions kept, and every
    symbolic dimension set above 1 (batch > 1, sequence > 1) unless another feed pins it to 1."""
    proto = model.load(load_external_data=False)
    feeds = model.feeds()
    inits = {t.name for t in proto.graph.initializer}
    inputs = [i for i in proto.graph.input if i.name not in inits]
    assert sorted(feeds) == sorted(i.name for i in inputs)
    symbols = {}
    for i in inputs:
        tt = i.type.tensor_type
        value = feeds[i.name]
        if tt.elem_type == onnx.TensorProto.STRING:
            assert value.dtype.kind == "U", (i.name, value.dtype)
        else:
            assert value.dtype == onnx.helper.tensor_dtype_to_np_dtype(tt.elem_type), (i.name, value.dtype)
        if not tt.HasField("shape"):
            continue
        assert value.ndim == len(tt.shape.dim), (i.name, value.shape)
        for d, n in zip(tt.shape.dim, value.shape):
            if d.HasField("dim_value") and d.dim_value > 0:
                assert n == d.dim_value, (i.name, value.shape)
            elif d.HasField("dim_param") and d.dim_param not in ("?", ""):  # "?": an exporter's "unknown"
                symbols.setdefault(d.dim_param, set()).add(n)
    for symbol, sizes in symbols.items():
        assert len(sizes) == 1, f"symbol {symbol} fed with sizes {sizes}"
    if symbols:
        assert max(n for sizes in symbols.values() for n in sizes) > 1, "all symbolic dimensions fed as 1"


@pytest.mark.parametrize("model", MODELS)
def test_onnxruntime_runs_feeds(model):
    """onnxruntime runs what the manifest says it runs, and its outputs are finite numbers."""
    if not model.ort_runs:
        with pytest.raises(Exception):
            realmodels.run_onnxruntime(model)
        assert "onnxruntime" in model.notes
        return
    outputs = realmodels.run_onnxruntime(model)
    for name, value in outputs.items():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            assert np.isfinite(value).all(), f"output {name} has NaN or Inf"
        elif isinstance(value, list):  # ZipMap: a list of {label: probability}
            assert all(math.isfinite(p) for row in value for p in row.values()), name

