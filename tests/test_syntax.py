"""Syntax tables: onnx-compatible texts (checked against onnx.parser as oracle), onnxtext extensions,
literal rules, and parser robustness. Add a case by adding a line."""

import math

import numpy as np
import onnx.parser
import pytest

import onnxtext
from corpus import cleared
from onnxtext import ParseError

# Texts onnx's parser accepts: ours must give the same proto, up to field presence: onnx's parser sets
# empty fields it was not given (every node's domain, a constant's name), ours leaves them unset
# (test_presence_* below), so both sides are compared with explicit defaults cleared.
COMPAT_NODES = [
    "y = Op(,x)", "y = Op(x,)", "y = Op(,)", 'y = Op("")', "y, = Op(x)", ", y = Op(x)", "= Op(x)",
    "y = com.ms.Op:ov(x)", "[lab] y = Op<a=1>(x)", 'y = Op(x)<a=1,b=2.0,c="s",d=[1,2],e=[1.0],f:ints=[],g=@h, k: float = 2>',
    "y = Op(x)<t = float[2] {1,2}>", "y = Op(x)<t = float[2] name {1,2}>", "y = Op(x)<t = float[2] = {1,2}>",
    "y = Op(x)<tp = float[N]>", "y = Op(x)<f = inf, g=-inf, h = nan, j=1e3, k=1.,l=-0.0, m=1E+2, n=Infinity>",
    'y = Op("a b", x)', '["a b"] y = Op(x)', 'y = Op(x)<a = "x\\"y\\\\">', "y = Op(x) <g = gg (float x) => (float y) { y = Relu(x) }>",
    "y = a.b.Op(x)", 'y = Op(x) <s:string = "q">', "y = Op(x) <i = 007>", "y = Op(x) <a = -3>", "y = Op(x) <a = 3000000000>",
    "y = Op(x) <x = bfloat16[2] {1, 2}>", "y = Op (x) <a = 1, b = 2>",
    # onnx's printer writes -0.0 as `-0`, which its parser reads as -0.0 in float and double tensors
    "y = Constant <value: tensor = float[2] {-0, 0}> ()", "y = Constant <value: tensor = double[1] {-0}> ()",
    "y = Constant <value: tensor = float16[1] {-0}> ()", "y = Constant <value: tensor = int32[2] {-0, 0}> ()",
    "y = Constant <value: tensor = float[18] {0, -0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -00}> ()",
]
COMPAT_GRAPHS = [
    "g (x) => (y) { y = Relu(x) }",
    "g (float[N, ?, 3] x, float[] z, float s, seq(float[2]) q, map(int64, float) mm, optional(float) o, "
    "sparse_tensor(float[2]) st, opaque(a.b, c) op) => (float y) { y = Relu(x) }",
    'g (float[2] x = {1,2}) => (y) <float[2] w = {1,2}, float[3] vi, int64[2] e = ["location": "a.bin", "offset": "0"]> '
    "{ y = Relu(x) # comment\n }",
    'g (float["a b"] x, float[-1] z) => (y) { y = Relu(x) }',
    'g (float[2] x) => (y) <bool[2] b = {1, 0}, float16[1] h = {15360}, string[2] s = {"a", "b"}, '
    "uint64[1] u = {18446744073709551615}, complex64[1] c = {1.0, 2.0}, float[2] ff = {1, -2.5e3}> { y = Relu(x) }",
]
COMPAT_MODELS = [
    '<ir_version: 7, opset_import: ["":13, "ai.onnx.ml": 2], producer_name: "p", producer_version: "1", domain: "d", '
    'model_version: 3, doc_string: "doc", metadata_props: ["a": "b", "c": "d"]> g (x) => (y) { y = Relu(x) } '
    '<domain: "local", opset_import: ["": 13], doc_string: "fd", overload: "o1"> foo <a, b: float = 1.0, c = 2> '
    "(float x, y) => (z) <float[2] t> { z = Relu(x) }",
]


def _bytes(proto) -> bytes:
    """Serialized, explicit defaults cleared: bytes tell -0.0 from 0.0, which proto equality does not."""
    return cleared(proto).SerializeToString(deterministic=True)


@pytest.mark.parametrize("text", COMPAT_NODES)
def test_compat_node(text):
    assert _bytes(onnxtext.parse_node(text)) == _bytes(onnx.parser.parse_node(text))


@pytest.mark.parametrize("text", COMPAT_GRAPHS)
def test_compat_graph(text):
    assert _bytes(onnxtext.parse_graph(text)) == _bytes(onnx.parser.parse_graph(text))


@pytest.mark.parametrize("text", COMPAT_MODELS)
def test_compat_model(text):
    assert _bytes(onnxtext.parse_model(text)) == _bytes(onnx.parser.parse_model(text))


# Literal rules: (element type, literal text, expected value as float64, or None for "bits equal")
LITERALS = [
    ("float", "0.1", np.float32(0.1)), ("float", "1", 1.0), ("float", "-0.0", -0.0), ("float", "-inf", -math.inf),
    ("float16", "15360", 1.0),          # a bare integer is a bit pattern (onnx's rule)
    ("float16", "1.0", 1.0),            # a decimal point makes it a value
    ("bfloat16", "0x3f80", 1.0),        # hex literals are always bit patterns
    ("float8e4m3fn", "1e0", 1.0), ("int4", "-8", -8.0), ("uint2", "3", 3.0), ("double", "1e-300", 1e-300),
]


@pytest.mark.parametrize("dtype,literal,expected", LITERALS)
def test_literal_rules(dtype, literal, expected):
    g = onnxtext.parse_graph(f"g () => () <{dtype}[1] w = {{{literal}}}> {{}}")
    from onnxtext.tensors import to_array

    value = to_array(g.initializer[0]).astype(np.float64)[0]
    assert value == expected and math.copysign(1, value) == math.copysign(1, expected)


STRINGS = [("a\nb", '"a\\nb"'), ('q"uo\\te', '"q\\"uo\\\\te"'), ("tab\there", '"tab\\there"'), ("é✓", '"é✓"')]


@pytest.mark.parametrize("value,literal", STRINGS)
def test_string_escapes(value, literal):
    a = onnxtext.parse_node(f"y = Op(x) <s = {literal}>").attribute[0]
    assert a.s == value.encode("utf-8")
    assert onnxtext.to_text(a).strip() == f"s = {literal}"


def test_non_utf8_bytes_roundtrip():
    a = onnxtext.parse_node('y = Op(x) <s = "\\xff\\x00ok">').attribute[0]
    assert a.s == b"\xff\x00ok"
    assert onnxtext.parse_node("y = Op(x) <" + onnxtext.to_text(a).strip() + ">").attribute[0].s == a.s


def test_float32_prints_shortest_float32_repr():
    a = onnxtext.parse_node("y = Op(x) <f = 0.1, fs = [0.1, 1e-45, 3.4028235e38]>")
    text = onnxtext.to_text(a.attribute[0]) + onnxtext.to_text(a.attribute[1])
    assert "0.1" in text and "0.10000000149" not in text and "1e-45" in text and "3.4028235e38" in text


@pytest.mark.parametrize("text", ["(" * 5000, "g (x) => (y) {" + "y = Op<a = [" * 3000, "[" * 10000, "<" * 10000])
def test_deep_nesting_is_a_parse_error(text):
    with pytest.raises(ParseError):
        onnxtext.parse(text)


@pytest.mark.parametrize("text", ["", "   ", "\x00", '"unterminated', "g (x) => (y) { y = Relu(x) ", "y = Op(x) <a = []>",
                                  "g () => () <float[2] w = {1.0}> {}", "y = Op(x) <a = 99999999999999999999>"])
def test_bad_input_raises_only_parse_error(text):
    with pytest.raises(ParseError) as e:
        onnxtext.parse(text)
    assert e.value.line is not None or e.value.message


def test_extensions_doc_comments_and_annotations():
    text = """<ir_version: 10, opset_import: ["": 21]>
/// graph doc
@metadata_props ["k": "v"]
g (
  /// input doc
  float[N] x
) => (float[N] y) {
  /// node doc
  @metadata_props ["author": "me"]
  y = Relu(x)
}
"""
    m = onnxtext.parse_model(text)
    assert m.graph.doc_string == "graph doc"
    assert m.graph.metadata_props[0].key == "k"
    assert m.graph.input[0].doc_string == "input doc"
    assert m.graph.node[0].doc_string == "node doc" and m.graph.node[0].metadata_props[0].value == "me"
    assert onnxtext.parse_model(onnxtext.to_text(m)) == m


# Field presence (proto2): a field the text does not write stays unset; a marking sets it to its default.
# (text of a node, field path, expected: True = set to its default, False = unset)
PRESENCE = [
    ("y = Relu(x)", "domain", False), ('y = "".Relu(x)', "domain", True),
    ("y = Relu(x)", "name", False), ("[] y = Relu(x)", "name", True),
    ("y = Relu(x)", "overload", False), ('y = Relu:""(x)', "overload", True),
    ("y = Relu(x)", "doc_string", False), ("///\ny = Relu(x)", "doc_string", True),
    ("y = Constant <value = float[1] {1.0}> ()", "attribute[0].t.name", False),
    ('y = Constant <value = float[1] "" = {1.0}> ()', "attribute[0].t.name", True),
    ("y = Op <a = 1> (x)", "attribute[0].f", False), ("y = Op <@f 0.0 a = 1> (x)", "attribute[0].f", True),
]


def _field(msg, path):
    *parents, last = path.split(".")
    for p in parents:
        field, _, index = p.partition("[")
        msg = getattr(msg, field)[int(index[:-1])] if index else getattr(msg, field)
    return msg, last


@pytest.mark.parametrize("text,path,is_set", PRESENCE)
def test_presence(text, path, is_set):
    for parse in (onnxtext.parse_node, lambda t: onnxtext.parse_graph(f"g () => () {{\n{t}\n}}").node[0]):
        msg, field = _field(parse(text), path)
        assert msg.HasField(field) == is_set
        if is_set:
            assert getattr(msg, field) == msg.DESCRIPTOR.fields_by_name[field].default_value


@pytest.mark.parametrize("header,is_set", [('["": 21]', True), ("[{version: 21}]", False)])
def test_presence_opset_domain(header, is_set):
    m = onnxtext.parse_model(f"<opset_import: {header}> g () => () {{}}")
    assert m.opset_import[0].HasField("domain") == is_set and m.opset_import[0].version == 21


def test_onnx_parser_sets_every_domain():
    # why the compat tables above compare with defaults cleared: onnx's parser sets fields it was not given
    assert onnx.parser.parse_node("y = Relu(x)").HasField("domain")
    assert not onnxtext.parse_node("y = Relu(x)").HasField("domain")


# Element-type attributes as type names: (node text, its INT value, its canonical text). Operators documenting
# the attribute as a TensorProto.DataType read and print a type name; others, and custom domains, integers.
TYPE_NAME_ATTRIBUTES = [
    ("y = Cast <to = float> (x)", 1, "y = Cast <to = float> (x)"),
    ("y = Cast <to = 7> (x)", 7, "y = Cast <to = int64> (x)"),
    ("y = ai.onnx.Cast <to = bfloat16> (x)", 16, "y = ai.onnx.Cast <to = bfloat16> (x)"),
    ("y = Cast <to = 99> (x)", 99, "y = Cast <to = 99> (x)"),  # no such element type: the number
    ("y = EyeLike <dtype = double> (x)", 11, "y = EyeLike <dtype = double> (x)"),
    ("y = RandomNormal <dtype = float16, shape = [2]> ()", 10, "y = RandomNormal <dtype = float16, shape = [2]> ()"),
    ("y = QuantizeLinear <output_dtype = int4> (x, s)", 22, "y = QuantizeLinear <output_dtype = int4> (x, s)"),
    ("y = LayerNormalization <stash_type = float> (x, s)", 1, "y = LayerNormalization <stash_type = float> (x, s)"),
    ("y = Multinomial <dtype = int64> (x)", 7, "y = Multinomial <dtype = int64> (x)"),
    ("y = Bernoulli <dtype = bool> (x)", 9, "y = Bernoulli <dtype = bool> (x)"),
    ("y = com.x.Cast <to = 7> (x)", 7, "y = com.x.Cast <to = 7> (x)"),
    ("y = Cast <saturate = 1> (x)", 1, "y = Cast <saturate = 1> (x)"),
]


@pytest.mark.parametrize("text,value,canonical", TYPE_NAME_ATTRIBUTES)
def test_type_name_attributes(text, value, canonical):
    n = onnxtext.parse_node(text)
    a = n.attribute[0]
    assert a.type == onnx.AttributeProto.INT and a.i == value
    assert onnxtext.to_text(n).strip() == canonical
    assert onnxtext.parse_node(canonical).SerializeToString() == n.SerializeToString()
    # onnx style keeps the integer, and onnx's parser reads it to the same attribute
    onnx_text = onnxtext.to_text(n, style="onnx")
    assert f"= {value}" in onnx_text
    if "com.x" not in text:
        assert onnx.parser.parse_node(onnx_text).attribute[0] == a


def test_type_proto_attribute_stays_a_type():
    # a TYPE_PROTO where an element type is documented (invalid, but printable): declared, so it reads back
    n = onnx.helper.make_node("Cast", ["x"], ["y"])
    n.attribute.add().CopyFrom(onnx.helper.make_attribute("to", onnx.helper.make_tensor_type_proto(1, [])))
    text = onnxtext.to_text(n)
    assert "to: type_proto = float" in text
    assert onnxtext.parse_node(text).SerializeToString() == n.SerializeToString()


def test_type_name_attributes_come_from_the_schemas():
    from onnxtext.schemas import element_type_attributes

    for op, attr in [("Cast", "to"), ("EyeLike", "dtype"), ("RandomNormal", "dtype"), ("RandomUniform", "dtype"),
                     ("RandomNormalLike", "dtype"), ("RandomUniformLike", "dtype"), ("Multinomial", "dtype"),
                     ("QuantizeLinear", "output_dtype"), ("Bernoulli", "dtype"), ("BitCast", "to")]:
        assert attr in element_type_attributes("", op), (op, attr)
    assert "saturate" not in element_type_attributes("", "Cast")
    assert "qk_matmul_output_mode" not in element_type_attributes("", "Attention")
    assert element_type_attributes("com.microsoft", "Cast") == frozenset()


@pytest.mark.parametrize("word", sorted(__import__("onnxtext.printing.atoms", fromlist=["_QUOTED_WORDS"])._QUOTED_WORDS)
                         [::7] + ["seq", "float", "raw", "nan", "true", "training_info", "elided"])
def test_keyword_names_print_bare_in_node_statements(word):
    # only names stand in a statement's label, outputs and inputs: no quotes needed there (fmt kept `seq`)
    g = onnxtext.parse_graph(f"g (float[2] x) => (float[2] y) {{\n  [{word}] {word} = Relu(x)\n  y = Neg({word})\n}}")
    assert g.node[0].name == word and g.node[0].output[0] == word and g.node[1].input[0] == word
    text = onnxtext.to_text(g)
    assert f"[{word}] {word} = Relu(x)" in text and f"y = Neg({word})" in text
    assert onnxtext.parse_graph(text).SerializeToString() == g.SerializeToString()
