"""The printer's fast path (onnxtext/fastprint.py) prints exactly what the reference methods print.

Differential: every model is printed with the fast path forced on every graph (``MIN_ELEMENTS = 0``) and
with it disabled, under several option sets, and the texts must be byte-identical. Add an option set to
OPTIONS, a hand-made case to EDGE_CASES.
"""

from __future__ import annotations

import os
import struct
import sys

import numpy as np
import onnx
import onnx.helper as oh
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import strategies as S
from corpus import all_models
from onnxtext.printing import fastprint
from onnxtext.printing.printer import Printer, to_text

OPTIONS = [{}, {"style": "onnx"}, {"width": 40}, {"max_inline": 0}, {"indent": "    "}, {"max_inline": None},
           {"elide": True}]


def both(model, **options):
    """(fast text, reference text)."""
    saved = fastprint.ENABLED, fastprint.MIN_ELEMENTS
    try:
        fastprint.ENABLED, fastprint.MIN_ELEMENTS = True, 0
        fast = _text(model, options)
        fastprint.ENABLED = False
        ref = _text(model, options)
    finally:
        fastprint.ENABLED, fastprint.MIN_ELEMENTS = saved
    return fast, ref


def _text(model, options):
    try:
        return to_text(model, **options)
    except Exception as e:  # the same error either way is the same behaviour
        return f"error {type(e).__name__}: {e}"


@pytest.mark.parametrize("loader", [pytest.param(load, id=name) for name, load in all_models()])
def test_corpus_fast_equals_reference(loader):
    model = loader()
    for options in OPTIONS:
        fast, ref = both(model, **options)
        assert fast == ref, options


@settings(max_examples=50, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(S.models())
def test_generated_fast_equals_reference(model):
    for options in OPTIONS[:3]:
        fast, ref = both(model, **options)
        assert fast == ref, options


# Plain records only (the fast path's own forms and their near misses), with arbitrary names and bits.
_names = st.text(st.characters(codec="utf-8"), max_size=6) | st.sampled_from(["x", "v.1", "graph", "a b", ""])


@st.composite
def plain_graphs(draw):
    nodes = [oh.make_node(draw(st.sampled_from(["Relu", "Add", "float", "Op"])),
                          draw(st.lists(_names, max_size=4)), draw(st.lists(_names, min_size=1, max_size=3)),
                          name=draw(_names), domain=draw(st.sampled_from(["", "com.x", "a b"])))
             for _ in range(draw(st.integers(1, 6)))]
    inits = []
    for i in range(draw(st.integers(0, 6))):
        dims = draw(st.lists(st.integers(0, 4), max_size=3))
        count = int(np.prod(dims))
        bits = draw(st.lists(st.integers(0, 2**32 - 1) | st.sampled_from([0, 1, 0x80000000, 0x7FC00000]),
                             min_size=count, max_size=count + draw(st.sampled_from([0, 0, 1]))))
        values = np.array(bits, np.uint32).view(np.float32)
        t = onnx.TensorProto(name=draw(_names), data_type=1, dims=dims)
        if draw(st.booleans()):
            t.raw_data = values.tobytes()
        else:
            t.float_data.extend(values.tolist())
        inits.append(t)
    return _graph(nodes, inits)


@settings(max_examples=150, derandomize=True, database=None, deadline=None,
          suppress_health_check=list(HealthCheck))
@given(plain_graphs())
def test_generated_plain_records_fast_equals_reference(model):
    for options in OPTIONS:
        fast, ref = both(model, **options)
        assert fast == ref, options


# ---------------------------------------------------------------------------------------------- edge cases
def _f32(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def _graph(nodes, inits=(), name="g"):
    g = oh.make_graph(nodes, name, [oh.make_tensor_value_info("x", 1, ["N"])],
                      [oh.make_tensor_value_info("y", 1, ["N"])], list(inits))
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 19)])


def _raw(name, values, dims=None, dtype=np.float32):
    arr = np.asarray(values, dtype)
    t = onnx.TensorProto(name=name, data_type=1 if dtype == np.float32 else 10, raw_data=arr.tobytes())
    t.dims.extend(arr.shape if dims is None else dims)
    return t


def _rawt(name, arr):
    """A raw_data initializer of any numpy array (its element type and shape)."""
    from onnxtext import dtypes

    t = onnx.TensorProto(name=name, data_type=dtypes.from_numpy(arr.dtype).enum, raw_data=arr.tobytes())
    t.dims.extend(arr.shape)
    return t


def _typed(name, values, dims=None):
    return oh.make_tensor(name, onnx.TensorProto.FLOAT, [len(values)] if dims is None else dims, values)


EDGE_CASES = {
    "names needing quotes": _graph([oh.make_node("Add", ["x", "a b"], ["v.1"], name="n 1"),
                                    oh.make_node("Relu", ['q"uote'], ["back\\slash"], name="graph"),
                                    oh.make_node("Relu", ["tab\there"], ["y"], name="")]),
    "non-ASCII names": _graph([oh.make_node("Relu", ["x"], ["é"], name="nœud"),
                               oh.make_node("Relu", ["é"], ["y"], name="\u2028")]),
    "empty inputs": _graph([oh.make_node("Clip", ["x", "", "m"], ["y"]), oh.make_node("Relu", [""], [""])]),
    "no outputs, no inputs": _graph([oh.make_node("Relu", ["x"], []), oh.make_node("Foo", [], ["y"])]),
    "4 inputs, 3 outputs": _graph([oh.make_node("Concat", ["x", "x", "x", "x"], ["c"], axis=0),
                                   oh.make_node("Split", ["c"], ["a", "b", "y"])]),
    "127/128/200-byte names": _graph([oh.make_node("Relu", ["x"], ["a" * 127], name="n" * 128),
                                      oh.make_node("Relu", ["a" * 127], ["b" * 128]),
                                      oh.make_node("Relu", ["b" * 128], ["y"], name="m" * 200)]),
    "attributes interleaved": _graph([oh.make_node("Relu", ["x"], ["a"], name="r"),
                                      oh.make_node("LeakyRelu", ["a"], ["b"], alpha=0.5),
                                      oh.make_node("Relu", ["b"], ["c"], doc_string="doc"),
                                      oh.make_node("Relu", ["c"], ["y"], domain="com.x", name="d")]),
    "type-name attributes": _graph([oh.make_node("Cast", ["x"], ["a"], to=7),
                                    oh.make_node("Cast", ["a"], ["b"], to=7, domain="ai.onnx"),
                                    oh.make_node("Cast", ["b"], ["c"], to=7, domain="com.x"),
                                    oh.make_node("Cast", ["c"], ["d"], to=99),
                                    oh.make_node("EyeLike", ["d"], ["y"], dtype=7)]),
    "set empty domain and name": _graph([oh.make_node("Relu", ["x"], ["a"], domain="", name=""),
                                         oh.make_node("Relu", ["a"], ["y"], name="")]),
    "domains and keywords": _graph([oh.make_node("float", ["x"], ["graph"], domain="ai.onnx.ml"),
                                    oh.make_node("Relu", ["graph"], ["y"], domain="")]),
    "special floats": _graph([oh.make_node("Relu", ["x"], ["y"])], [
        _typed("nan", [float("nan")]), _typed("negzero", [-0.0]), _typed("sub", [_f32(1)]),
        _typed("inf", [float("inf"), -float("inf")]), _raw("rnan", [_f32(0x7FC00001)]), _raw("rz", [-0.0, 0.0]),
        _raw("rsub", [_f32(0x80000001), _f32(0x007FFFFF)]), _typed("max", [_f32(0x7F7FFFFF)], [1, 1]),
        _typed("payload", [_f32(0x7FA00000)])]),
    "initializer shapes": _graph([oh.make_node("Relu", ["x"], ["y"])], [
        _typed("scalar", [1.5], []), _raw("rscalar", [2.5], []), _typed("six", [0.1] * 6, [2, 3]),
        _raw("mismatch", [1.0, 2.0], [3]), _raw("empty", [], [0]), _typed("e", [], [0]), _raw("d", [1.0], [1]),
        _raw("big", np.arange(40, dtype=np.float32) / 7), _typed("many", list(np.arange(31) / 3.0)),
        _typed("wrap", [1 / 3] * 20), _raw("d127", [1.0] * 2, [2] + [1] * 5),
        _raw("dbl", [0.1], dtype=np.float64), _typed("", [1.0]), _raw("dim200", [0.0] * 200, [200])]),
    "initializer annotations": _graph([oh.make_node("Relu", ["x"], ["y"])], [
        oh.make_tensor("doc", onnx.TensorProto.FLOAT, [1], [1.0]), _typed("both", [1.0])]),
    "keyword-like names": _graph([
        oh.make_node("Relu", ["x"], ["float"], name="seq"), oh.make_node("Add", ["float", "inf"], ["NaN"], name="t1"),
        oh.make_node("Relu", ["NaN"], ["infinitY"], name="training_info"),
        oh.make_node("Relu", ["infinitY"], ["float8e4m3fnuz"], name="floatx"),
        oh.make_node("Relu", ["float8e4m3fnuz"], ["y"], name="tensor")], [_typed("true", [1.0]), _typed("raw", [2.0])]),
    "6/7 inputs, 3/4 outputs": _graph([oh.make_node("Concat", ["x"] * 6, ["c"], axis=0),
                                       oh.make_node("Concat", ["c"] * 7, ["d"], axis=0),
                                       oh.make_node("Foo", ["d"], ["e", "f", "g"], domain="com.x"),
                                       oh.make_node("Foo", ["e"], ["h", "i", "j", "y"], domain="com.x")]),
    "op and domain spellings": _graph([oh.make_node("my-op", ["x"], ["a"]), oh.make_node("Relu", ["a"], ["b"], domain="a-b"),
                                       oh.make_node("Relu", ["b"], ["c"], domain="com.x.y"),
                                       oh.make_node("Relu", ["c"], ["y"], domain="com..x")]),
    "initializer dims": _graph([oh.make_node("Relu", ["x"], ["y"])], [
        _typed("d8", [1.0], [1] * 8), _typed("d9", [1.0], [1] * 9), _raw("r127", [0.5] * 127, [127]),
        _raw("z", [], [0, 5]), _typed("nd", [1.0, 2.0], [2, 1, 1])]),
    "raw int and double initializers": _graph([oh.make_node("Relu", ["x"], ["y"])], [
        _rawt("i64", np.array([1, -1, 2**62, -2**63], np.int64)), _rawt("i32", np.array([[0, -7], [3, 2**31 - 1]], np.int32)),
        _rawt("f64", np.array([0.1, -0.0, 1e300, 5e-324], np.float64)), _rawt("f64nan", np.array([np.nan, 1.0])),
        _rawt("shape", np.array([1, 3, 224, 224], np.int64)), _rawt("same", np.array([1, 3, 224, 224], np.int32)),
        _rawt("i64s", np.array(7, np.int64)), _rawt("many", np.arange(15, dtype=np.int64)),
        _rawt("toomany", np.arange(16, dtype=np.int64)), _rawt("u8", np.array([1, 2], np.uint8)),
        _rawt("f16", np.array([1.5], np.float16)), oh.make_tensor("typed64", onnx.TensorProto.INT64, [2], [5, -5])]),
    "value_info": _graph([oh.make_node("Relu", ["x"], ["a"]), oh.make_node("Relu", ["a"], ["y"])]),
    "graph metadata (two-byte tag)": None,  # filled below
    "non-UTF-8 names": None,  # filled below (helper cannot build them)
}


def _non_utf8():
    m = _graph([oh.make_node("Relu", ["x"], ["a"], name="n"), oh.make_node("Relu", ["a"], ["y"])],
               [_typed("c", [1.0])])
    data = m.SerializeToString().replace(b"\x12\x01a", b"\x12\x01\xff").replace(b"\x0a\x01a", b"\x0a\x01\xff")
    data = data.replace(b"B\x01c", b"B\x01\xfe")
    return onnx.ModelProto.FromString(data)


EDGE_CASES["non-UTF-8 names"] = _non_utf8()
EDGE_CASES["graph metadata (two-byte tag)"] = _graph([oh.make_node("Relu", ["x"], ["a"], name="n"),
                                                     oh.make_node("Relu", ["a"], ["y"])], [_typed("c", [1.0])])
EDGE_CASES["graph metadata (two-byte tag)"].graph.metadata_props.add(key="k", value="v")
_vi = EDGE_CASES["value_info"].graph.value_info
_vi.extend([oh.make_tensor_value_info("a", 1, ["N", 3]), oh.make_tensor_value_info("v.1", 7, [2, "a b"]),
            oh.make_tensor_value_info("float", 10, None), oh.make_tensor_value_info("", 1, [1]),
            oh.make_tensor_value_info("long", 1, [f"dim{i}" for i in range(40)]),
            oh.make_value_info("s", oh.make_sequence_type_proto(oh.make_tensor_type_proto(1, [1]))),
            oh.make_tensor_value_info("é", 1, [1]),
            oh.make_tensor_value_info("doc", 1, [1], doc_string="a doc"),
            oh.make_sparse_tensor_value_info("sp", 1, [4, 4]), onnx.ValueInfoProto(name="untyped"),
            oh.make_tensor_value_info("den", 1, [1])])
_vi[-1].type.denotation = "TENSOR"
_vi.add(name="bad").type.tensor_type.elem_type = 99
EDGE_CASES["graph inputs and outputs"] = _graph([oh.make_node("Relu", ["x"], ["y"])])
EDGE_CASES["graph inputs and outputs"].graph.input.extend(list(_vi)[:-1])  # all but the bad type
EDGE_CASES["graph inputs and outputs"].graph.output.extend(list(_vi)[:3] + [_vi[-1]])  # the bad type last
EDGE_CASES["initializer annotations"].graph.initializer[0].doc_string = "a doc"
EDGE_CASES["initializer annotations"].graph.initializer[1].raw_data = struct.pack("<f", 2.0)


@pytest.mark.parametrize("model", list(EDGE_CASES.values()), ids=list(EDGE_CASES))
@pytest.mark.parametrize("options", OPTIONS, ids=[str(o) for o in OPTIONS])
def test_edge_case_fast_equals_reference(model, options):
    fast, ref = both(model, **options)
    assert fast == ref


# found by the generated test above: an initializer whose name column the wire decoder reads past the buffer
# (float_data zeros, three input-less nodes with empty outputs) must go to the reference printer, not raise
MISREAD_NAME = ("CA462wEKChIAIgRSZWx1OgAKChIAIgRSZWx1OgAKChIAIgRSZWx1OgASAWcqjQEIAggECAQQASKAAQ" + "A" * 170
                + "QgBaEAoBeBILCgkIARIFCgMSAU5iEAoBeRILCgkIARIFCgMSAU5CBAoAEBM=")


def test_misread_name_column_falls_back_to_reference():
    import base64

    model = onnx.load_from_string(base64.b64decode(MISREAD_NAME))
    fast, ref = both(model)
    assert fast == ref


@pytest.mark.parametrize("chunk", [1, 2, 3])
def test_chunked_fast_equals_reference(chunk, monkeypatch):
    """Records are decoded in chunks of CHUNK: chunk boundaries change nothing (slow rows included)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    from text_speed import chain_model

    monkeypatch.setattr(fastprint, "CHUNK", chunk)
    for model in [chain_model(20)] + [m for m in EDGE_CASES.values()]:
        fast, ref = both(model)
        assert fast == ref


def test_subgraphs_fast_equals_reference():
    body = _graph([oh.make_node("Relu", ["x"], [f"v.{i}"], name=f"n{i}") for i in range(3)]
                  + [oh.make_node("Relu", ["v.2"], ["y"])], [_typed("k", [0.5])]).graph
    outer = _graph([oh.make_node("If", ["x"], ["y"], then_branch=body, else_branch=body),
                    oh.make_node("Relu", ["x"], ["z"])])
    for options in OPTIONS:
        fast, ref = both(outer, **options)
        assert fast == ref


# ---------------------------------------------------------------------------------------------- coverage
def test_chain_plain_records_skip_the_reference_methods(monkeypatch):
    """On the benchmark's node-heavy chain every node and initializer is printed from the wire bytes."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks"))
    from text_speed import chain_model

    model = chain_model(300)
    _, ref = both(model)
    for method in ("print_node", "print_initializer", "print_nodes"):
        monkeypatch.setattr(Printer, method, lambda *a, **k: pytest.fail("reference method called"))
    assert fastprint.ENABLED and 300 >= fastprint.MIN_ELEMENTS
    assert to_text(model) == ref
