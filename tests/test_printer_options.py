"""Printer options and the printer's fast paths.

* ``max_inline``: which tensors print as decimal literals and which as one base64 block.
* Block deferral: ``to_text`` lays out big base64 blocks as placeholders and fills them in at the end;
  the text must equal the one the Printer methods build directly, for every width and nesting.
* Fast paths proven equal to their reference: the per-type float text cache against the vectorized
  formatter over every bit pattern of the narrow float types, and name quoting against a table.

Add a case by adding a line to a table.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnx.helper as oh
import pytest
from onnx import TensorProto

import onnxtext
from onnxtext import dtypes, tensors
from onnxtext.printing.printer import Printer, _format_floats_exact, float_texts, format_floats, name, to_text


def _raw_tensor(count: int, dtype=np.float32, name_="w", seed=0) -> TensorProto:
    rng = np.random.default_rng(seed)
    return tensors.from_array(rng.standard_normal(count).astype(dtype), name_)


def _data_form(text: str) -> str:
    """How the data of the single tensor in ``text`` is written: base64, raw or typed."""
    data = text.split(" = ", 1)[1]
    return "base64" if data.startswith("base64") else "raw" if data.startswith("raw") else "typed"


# ---------------------------------------------------------------------------------------------- max_inline
# (max_inline, element count, raw_data?, expected form)
MAX_INLINE_CASES = [
    (256, 10, True, "raw"),
    (256, 256, True, "raw"),
    (256, 257, True, "base64"),
    (0, 1, True, "base64"),  # 0 forces blocks
    (None, 1000, True, "raw"),  # None forces decimals
    (4, 5, True, "base64"),
    (0, 10, False, "typed"),  # typed-field tensors keep their encoding: it is part of the proto
    (None, 10, False, "typed"),
]


@pytest.mark.parametrize("max_inline,count,raw,form", MAX_INLINE_CASES)
def test_max_inline_chooses_the_encoding(max_inline, count, raw, form):
    t = _raw_tensor(count)
    if not raw:
        t = tensors.from_array(tensors.to_array(t), "w", raw=False)
    assert _data_form(to_text(t, max_inline=max_inline)) == form
    g = oh.make_graph([], "g", [], [oh.make_tensor_value_info("w", t.data_type, [count])], [t])
    m = oh.make_model(g, opset_imports=[oh.make_opsetid("", 19)])
    back = onnxtext.parse_model(to_text(m, max_inline=max_inline))
    assert back.graph.initializer[0] == t  # exact: same bits, same encoding


def test_bytes_that_do_not_fit_the_shape_print_as_a_block():
    t = _raw_tensor(3)
    t.raw_data = t.raw_data[:-1]  # 11 bytes for float[3]: no decimal literal could carry them
    # ... nor a block, which must fit the shape: the bytes are kept as they are, marked unchecked (issue 23)
    assert to_text(t, max_inline=None).split(" = ", 1)[1].startswith('unchecked {raw_data: base64 "')


# ---------------------------------------------------------------------------------------------- deferral
def _model_with_blocks() -> onnx.ModelProto:
    """Big tensors in every place a tensor can be: initializer, Constant attribute, subgraph, sparse values."""
    big = _raw_tensor(3000, name_="w")
    const = oh.make_node("Constant", [], ["c"], value=_raw_tensor(500, name_="", seed=1))
    then = oh.make_graph([oh.make_node("Constant", [], ["t"], value=_raw_tensor(400, np.float64, "", 2))], "then",
                         [], [oh.make_tensor_value_info("t", TensorProto.DOUBLE, [400])])
    els = oh.make_graph([oh.make_node("Constant", [], ["e"], value=_raw_tensor(400, np.float64, "", 3))], "else",
                        [], [oh.make_tensor_value_info("e", TensorProto.DOUBLE, [400])])
    node_if = oh.make_node("If", ["cond"], ["y"], then_branch=then, else_branch=els)
    sparse = onnx.SparseTensorProto()
    sparse.values.CopyFrom(_raw_tensor(600, name_="s", seed=4))
    sparse.indices.CopyFrom(tensors.from_array(np.arange(600, dtype=np.int64) * 2, "s_idx"))
    sparse.dims.append(1200)
    g = oh.make_graph([const, node_if, oh.make_node("Add", ["x", "w"], ["z"])], "g",
                      [oh.make_tensor_value_info("x", TensorProto.FLOAT, [3000]),
                       oh.make_tensor_value_info("cond", TensorProto.BOOL, [])],
                      [oh.make_tensor_value_info("z", TensorProto.FLOAT, [3000]),
                       oh.make_tensor_value_info("y", TensorProto.DOUBLE, [400])], [big])
    g.sparse_initializer.append(sparse)
    return oh.make_model(g, opset_imports=[oh.make_opsetid("", 19)])


@pytest.mark.parametrize("width", [20, 40, 100, 4000, 10**9])
def test_deferred_blocks_give_the_direct_text(width):
    m = _model_with_blocks()
    direct = Printer(width=width).print_model(m)
    assert to_text(m, width=width) == direct
    assert onnxtext.parse_model(direct) == onnxtext.parse_model(to_text(m, width=width, max_inline=None))


def test_deferred_blocks_with_non_ascii_text():
    m = _model_with_blocks()
    m.graph.node[2].output[0] = "zé😀"  # the final buffer is UTF-8, not ASCII
    m.graph.output[0].name = "zé😀"
    m.graph.node[2].doc_string = "caf\u00e9 \u2028 \U0001f600"
    assert to_text(m) == Printer().print_model(m)


def test_a_nul_in_a_doc_comment_disables_deferral():
    m = _model_with_blocks()
    m.graph.node[2].doc_string = "a\x00b"
    assert to_text(m) == Printer().print_model(m)


@pytest.mark.parametrize("printable", [
    lambda m: m.graph.initializer[0],  # a tensor alone (to_text adds the final newline before filling)
    lambda m: m.graph.node[0],  # a node with a tensor attribute
    lambda m: m.graph,
])
def test_deferred_blocks_for_every_printable(printable):
    proto = printable(_model_with_blocks())
    method = {TensorProto: "print_tensor", onnx.NodeProto: "print_node", onnx.GraphProto: "print_graph"}
    direct = getattr(Printer(), method[type(proto)])(proto)
    assert to_text(proto) == direct + "\n"


# ---------------------------------------------------------------------------------------------- fast paths
def _every_bit_pattern(dt: dtypes.DType) -> np.ndarray:
    if dt.bits in (8, 16):
        return np.arange(1 << dt.bits, dtype=np.uint64).astype(dt.uint_view).view(dt.np)
    if dt.bits < 8:
        return np.arange(1 << dt.bits, dtype=np.uint8).view(dt.np)
    rng = np.random.default_rng(dt.enum)
    sample = rng.integers(0, 256, 4096 * dt.bits // 8, dtype=np.uint8).view(dt.np)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, 0.1, -2.5e-38, 3.4e38, 5e-324], np.float64)
    return np.concatenate([sample, specials.astype(dt.np)])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("dt", [d for d in dtypes.DTYPES if d.kind == "float"], ids=lambda d: d.name)
def test_float_text_cache_matches_the_reference(dt):
    values = _every_bit_pattern(dt)
    reference = _format_floats_exact(values, dt)
    for _ in range(2):  # cold cache, then warm
        small = [t for i in range(0, values.size, 7) for t in format_floats(values[i:i + 7], dt)]
        assert small == reference
    finite = values[~np.isnan(values.astype(np.float64))]
    assert float_texts(finite.tolist(), dt) == _format_floats_exact(finite, dt)
    if np.isnan(values.astype(np.float64)).any():
        assert float_texts([float("nan")], dt) is None  # a NaN's payload needs the bits


# (name, printed) — written by hand from the syntax's rules
NAME_CASES = [
    ("x", "x"),
    ("x_1", "x_1"),
    ("_", "_"),
    ("Float", "Float"),  # keywords are case-sensitive...
    ("float", '"float"'),
    ("raw", '"raw"'),
    ("tensor", '"tensor"'),
    ("Inf", '"Inf"'),  # ...special floats are not
    ("nAn", '"nAn"'),
    ("INFINITY", '"INFINITY"'),
    ("nanx", "nanx"),
    ("v.12", '"v.12"'),
    ("1a", '"1a"'),
    ("", '""'),
    ("é", '"é"'),
    ("a b", '"a b"'),
    ('a"b', '"a\\"b"'),
    ("a\\b", '"a\\\\b"'),
    ("a\nb", '"a\\nb"'),
    ("a\x00", '"a\\x00"'),
    ("a\x7f", '"a\\x7f"'),
]


@pytest.mark.parametrize("text,printed", NAME_CASES)
def test_name_quoting(text, printed):
    assert name(text) == printed
    p = Printer()
    assert p._name(text) == printed and p._name(text) == printed  # memoized: same answer twice


def test_names_that_are_not_utf8_print_as_escaped_bytes():
    """A .onnx file may hold invalid UTF-8 in a string field (protobuf hands it over as bytes): the text shows
    the bytes as \\xHH escapes instead of crashing, and parsing that text back gives the same bytes."""
    import onnx

    import onnxtext

    n = onnx.NodeProto()
    # name b"\xff", op_type "Relu", input b"\xc3(" (a truncated UTF-8 sequence), output "y"
    n.ParseFromString(b"\x1a\x01\xff\x22\x04Relu\x0a\x02\xc3\x28\x12\x01y")
    text = onnxtext.to_text(n)
    assert '"\\xff"' in text and '"\\xc3("' in text
    assert onnxtext.parse_node(text).SerializeToString() == n.SerializeToString()


# ---------------------------------------------------------------------------------------------- brief
def _documented_model():
    n = oh.make_node("Relu", ["x"], ["y"], doc_string="a short note")
    n.metadata_props.add(key="pkg.torch.onnx.stack_trace", value="File x.py, line 1\n" * 20)
    n.metadata_props.add(key="namespace", value="model/layer")
    n2 = oh.make_node("Neg", ["y"], ["z"], doc_string="a long explanation " * 10)
    g = oh.make_graph([n, n2], "g", [oh.make_tensor_value_info("x", 1, [2])], [oh.make_tensor_value_info("z", 1, [2])])
    return oh.make_model(g)


def test_brief_hides_metadata_values_and_long_docs_and_counts_them():
    text = to_text(_documented_model(), brief=True)
    assert text.startswith("# brief: 2 metadata entries and 1 doc strings hidden")
    assert "stack_trace" not in text and "@metadata_props elided {entries: 2}" in text
    assert "/// a short note" in text and "long explanation" not in text
    assert "@doc_string elided {characters: 190}" in text
    with pytest.raises(onnxtext.ParseError):  # a reading view: it never compiles into a poorer model
        onnxtext.parse_model(text)


def test_brief_of_a_model_with_nothing_to_hide_is_the_full_text():
    m = _documented_model()
    for n in m.graph.node:
        n.ClearField("metadata_props")
    m.graph.node[1].doc_string = "short"
    assert to_text(m, brief=True) == to_text(m)


def test_metadata_is_compact_and_indented_with_its_node():
    m = _documented_model()
    lines = to_text(m, width=100).split("\n")
    start = next(i for i, line in enumerate(lines) if "@metadata_props" in line)
    node = next(i for i, line in enumerate(lines) if "= Relu(x)" in line)
    # a first entry longer than the line starts on the next one; the bracket closes on the last entry
    assert node - start == 3 and lines[start] == "  @metadata_props ["
    assert lines[start + 1].startswith('    "pkg.torch.onnx.stack_trace"')
    assert lines[start + 2] == '    "namespace": "model/layer"]'
    assert lines[node].startswith("  y = Relu(x)")
