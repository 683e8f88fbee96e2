"""String fields holding bytes that are not UTF-8 (issue 23): a .onnx file can hold them in any proto2 ``string``
field, protobuf loads it, and the text must bring the exact bytes back (``"\\xHH"`` escapes, set by the parser at
the wire level: onnxtext.syntax.raw_strings); ``check`` reports them (``proto.invalid-utf8``: the IR spec says
strings are UTF-8).

``CASES`` is one line per kind of string field: a name, and a function returning the message that holds the
field in a fresh model (it may add that message) and the field's name. The field is then set to ``RAW`` through
wire bytes, the way a binary holding it decodes. Each case runs on a small model and on a big one, whose graph the
printer's fast path prints. Add a case by adding a line.
"""

from __future__ import annotations

import onnx
import pytest
from onnx import TensorProto
from onnx import helper as h

import onnxtext
from onnxtext import cli
from onnxtext.wireformat import encode_field

from test_total_printer import _model

#: not UTF-8: a lone continuation byte, an invalid start byte, a valid 2-byte sequence and a truncated one
RAW = b"\x80a\xff\xc3\xa9\xe2\x82"


def _added(container, **fields):
    item = container.add()
    for k, v in fields.items():
        setattr(item, k, v)
    return item


def _attribute(node):
    node.attribute.add().CopyFrom(h.make_attribute("alpha", 0.5))
    return node.attribute[0]


def _ref_attribute(m):
    """A function attribute and a reference to it in the function's node (``alpha = @alpha``)."""
    f = m.functions[0]
    f.attribute.append("alpha")
    a = f.node[0].attribute.add()
    a.name, a.type, a.ref_attr_name = "alpha", onnx.AttributeProto.FLOAT, "alpha"
    return a


def _sparse_values(m):
    s = m.graph.sparse_initializer.add()
    s.dims.append(4)
    s.values.CopyFrom(h.make_tensor("sp", TensorProto.FLOAT, [1], [3.0]))
    s.indices.CopyFrom(h.make_tensor("", TensorProto.INT64, [1], [2]))
    return s.values


def _external(m):
    t = m.graph.initializer[0]
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    return _added(t.external_data, key="location", value="w.bin")


def _opaque(m):
    vi = m.graph.value_info.add()
    vi.name = "o"
    vi.type.opaque_type.domain, vi.type.opaque_type.name = "dom", "Thing"
    return vi.type.opaque_type


def _binding(m):
    t = m.training_info.add()
    t.algorithm.CopyFrom(m.graph)
    return _added(t.update_binding, key="w", value="y")


def _configuration(m):
    c = m.configuration.add()
    c.name, c.num_devices = "c", 2
    c.device.extend(["a", "b"])
    return c


def _quantization(m):
    q = m.graph.quantization_annotation.add()
    q.tensor_name = "y"
    q.quant_parameter_tensor_names.add(key="SCALE_TENSOR", value="w")
    return q


_G = lambda m: m.graph  # noqa: E731
_N0 = lambda m: m.graph.node[0]  # noqa: E731
_F = lambda m: m.functions[0]  # noqa: E731
_DIM = lambda m: m.graph.input[0].type.tensor_type.shape.dim[0]  # noqa: E731
_VI = lambda m: _added(m.graph.value_info, name="v")  # noqa: E731

# (what, the message holding the field, the field)
CASES = [
    ("node name", _N0, "name"),
    ("node input", _N0, "input"),
    ("node output", _N0, "output"),
    ("node op_type", _N0, "op_type"),
    ("node domain", _N0, "domain"),
    ("node overload", _N0, "overload"),
    ("node doc_string", _N0, "doc_string"),
    ("attribute name", lambda m: _attribute(m.graph.node[0]), "name"),
    ("attribute doc_string", lambda m: _attribute(m.graph.node[0]), "doc_string"),
    ("attribute ref_attr_name", _ref_attribute, "ref_attr_name"),
    ("graph name", _G, "name"),
    ("graph doc_string", _G, "doc_string"),
    ("graph input name", lambda m: m.graph.input[0], "name"),
    ("graph output name", lambda m: m.graph.output[0], "name"),
    ("value_info name", _VI, "name"),
    ("value_info doc_string", _VI, "doc_string"),
    ("initializer name", lambda m: m.graph.initializer[0], "name"),
    ("initializer doc_string", lambda m: m.graph.initializer[0], "doc_string"),
    ("sparse initializer name", _sparse_values, "name"),
    ("external data key", _external, "key"),
    ("external data value", _external, "value"),
    ("dim_param", _DIM, "dim_param"),
    ("dimension denotation", _DIM, "denotation"),
    ("type denotation", lambda m: m.graph.input[0].type, "denotation"),
    ("opaque type domain", _opaque, "domain"),
    ("opaque type name", _opaque, "name"),
    ("model producer_name", lambda m: m, "producer_name"),
    ("model producer_version", lambda m: m, "producer_version"),
    ("model domain", lambda m: m, "domain"),
    ("model doc_string", lambda m: m, "doc_string"),
    ("metadata key", lambda m: m.metadata_props[0], "key"),
    ("metadata value", lambda m: m.metadata_props[0], "value"),
    ("opset_import domain", lambda m: _added(m.opset_import, version=1), "domain"),
    ("function name", _F, "name"),
    ("function domain", _F, "domain"),
    ("function overload", _F, "overload"),
    ("function input", _F, "input"),
    ("function output", _F, "output"),
    ("function attribute", _F, "attribute"),
    ("function doc_string", _F, "doc_string"),
    ("function opset_import domain", lambda m: _added(m.functions[0].opset_import, version=1), "domain"),
    ("function value_info name", lambda m: _added(m.functions[0].value_info, name="v"), "name"),
    ("function node input", lambda m: m.functions[0].node[0], "input"),
    ("function metadata key", lambda m: _added(m.functions[0].metadata_props, key="k", value="v"), "key"),
    ("training binding key", _binding, "key"),
    ("training binding value", _binding, "value"),
    ("device configuration name", _configuration, "name"),
    ("device configuration device", _configuration, "device"),
    ("node device configuration id", lambda m: _added(m.graph.node[0].device_configurations),
     "configuration_id"),
    ("quantization annotation tensor_name", _quantization, "tensor_name"),
    ("quantization parameter name", lambda m: _quantization(m).quant_parameter_tensor_names[0], "value"),
]


def set_raw(msg, field: str, value: bytes = RAW) -> None:
    """Set (or append to) a string field through wire bytes, as decoding a binary holding them does."""
    msg.MergeFromString(encode_field("bytes", msg.DESCRIPTOR.fields_by_name[field].number, value))


def raw_model(get, field: str, big: bool) -> onnx.ModelProto:
    m = _model(big)
    set_raw(get(m), field)
    return m


def _connected(big: bool) -> onnx.ModelProto:
    """A value named by RAW: produced by a node, read by the next one and by a graph output."""
    m = _model(big)
    set_raw(m.graph.node[0], "output")
    n = m.graph.node.add()
    n.op_type = "Neg"
    set_raw(n, "input")
    n.output.append("z")
    set_raw(m.graph.output.add(), "name")
    m.graph.output[-1].type.tensor_type.elem_type = TensorProto.FLOAT
    return m


ALL = [(what, get, field, big) for what, get, field in CASES for big in (False, True)]


@pytest.mark.parametrize("what,get,field,big", ALL, ids=[f"{c[0]}-{'big' if c[3] else 'small'}" for c in ALL])
def test_prints_and_parses_back_to_the_same_bytes(what, get, field, big):
    m = raw_model(get, field, big)
    data = m.SerializeToString()
    assert RAW in data
    text = onnxtext.to_text(m)
    for fast in (True, False):  # the fast scanner (it hands such statements to the Lark builder) and Lark alone
        back = onnxtext.parse_model(text, fast=fast)
        assert back.SerializeToString() == data, text
    assert onnxtext.to_text(back) == text  # idempotent


@pytest.mark.parametrize("what,get,field", CASES, ids=[c[0] for c in CASES])
def test_check_reports_invalid_utf8_at_its_place(what, get, field):
    text = onnxtext.to_text(raw_model(get, field, False))
    hits = [d for d in onnxtext.check(text) if d.rule == "proto.invalid-utf8"]
    assert len(hits) == 1, [(d.rule, d.message) for d in onnxtext.check(text)]
    assert hits[0].severity == "error" and field in hits[0].message and "\\x80a\\xff" in hits[0].message
    assert hits[0].line is not None
    assert "\\x80a\\xff" in _line_and_annotations(text, hits[0].line), (hits[0], text)


def _line_and_annotations(text: str, line: int) -> str:
    """Line ``line`` of ``text`` and the lines right above it that belong to the same element: its ``@field value``
    annotations and a function's ``<...>`` header (a field written there is located at the element), up to the end
    of what comes before (a blank line, or a line ending an opening bracket, a list item or a statement)."""
    lines = text.splitlines()[:line]
    shown = [lines.pop()]
    while lines and lines[-1].strip() and not lines[-1].rstrip().endswith(("{", "<", "(", ",", ")")):
        shown.append(lines.pop())
    return "\n".join(shown)


@pytest.mark.parametrize("big", [False, True])
def test_a_value_named_by_such_bytes_stays_connected(big):
    m = _connected(big)
    text = onnxtext.to_text(m)
    back = onnxtext.parse_model(text)
    assert back.SerializeToString() == m.SerializeToString()
    assert back.graph.node[-1].input[0] == back.graph.node[0].output[-1] == back.graph.output[-1].name == RAW
    rules = {d.rule for d in onnxtext.check(text)}
    assert "proto.invalid-utf8" in rules and "graph.undefined" not in rules and "graph.output-produced" not in rules


# every fourth kind (external data aside: compile resolves it, and there is no data file)
CLI_CASES = [c for c in CASES if not c[0].startswith("external")][::4]


@pytest.mark.parametrize("what,get,field", CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_print_then_compile_gives_the_same_bytes(tmp_path, what, get, field):
    data = raw_model(get, field, False).SerializeToString()
    src, txt, out = tmp_path / "m.onnx", tmp_path / "m.onnxtext", tmp_path / "back.onnx"
    src.write_bytes(data)
    assert cli.main(["print", str(src), "-o", str(txt)]) == 0
    assert cli.main(["compile", str(txt), "-o", str(out), "--no-check"]) == 0
    assert out.read_bytes() == data
    assert cli.main(["compile", str(txt), "-o", str(tmp_path / "refused.onnx")]) == 1  # check's error
    assert not (tmp_path / "refused.onnx").exists()


# written by hand: escapes that are not UTF-8 where the syntax takes a name or a string field
FORMS = [
    ('["\\xff"] y = Relu(x)', lambda n: n.name == b"\xff"),
    ('y, "\\xfe" = "d\\x80".Op:"\\xc3" <"\\xff" = 1> ("x\\xff", z)',
     lambda n: (n.output[1], n.domain, n.op_type, n.overload, n.attribute[0].name, n.input[0], n.input[1]) ==
     (b"\xfe", b"d\x80", "Op", b"\xc3", b"\xff", b"x\xff", "z")),
    ('y = Relu <alpha: float = @"\\xff"> (x)', lambda n: n.attribute[0].ref_attr_name == b"\xff"),
    ('@doc_string "\\xff\\xfe"\ny = Relu(x)', lambda n: n.doc_string == b"\xff\xfe"),
    ('y = Relu(x, "\\u00e9", "\\xc3\\xa9")', lambda n: list(n.input) == ["x", "\u00e9", "\u00e9"]),  # UTF-8: a str
]


@pytest.mark.parametrize("text,holds", FORMS, ids=[f[0][:30] for f in FORMS])
def test_hand_written_forms(text, holds):
    n = onnxtext.parse_node(text)
    assert holds(n), n


# ---------------------------------------------------------------------------------------------- every command
def _everywhere() -> onnx.ModelProto:
    """RAW in every kind of string field of CASES at once (external data aside: see CLI_CASES)."""
    m = _model(False)
    for what, get, field in CASES:
        if not what.startswith("external"):
            set_raw(get(m), field)
    return m


def _runnable() -> onnx.ModelProto:
    """RAW where a model still runs: the node's name, doc strings, a dim_param, producer and metadata."""
    m = _model(False)
    for get, field in [(_N0, "name"), (_N0, "doc_string"), (_G, "doc_string"), (_DIM, "dim_param"),
                       (lambda m: m, "producer_name"), (lambda m: m.metadata_props[0], "value")]:
        set_raw(get(m), field)
    return m


def _raw_output() -> onnx.ModelProto:
    """A graph output named by RAW, computed by a Neg node."""
    m = _model(False)
    set_raw(m.graph.output.add(), "name")
    m.graph.output[-1].type.tensor_type.elem_type = TensorProto.FLOAT
    n = m.graph.node.add()
    n.op_type = "Neg"
    n.input.append("x")
    set_raw(n, "output")
    return m


# (model, command with B = the binary, T = its text, O = an output path; exit status)
COMMANDS = [
    (_everywhere, ["check", "B"], 1),
    (_everywhere, ["check", "T"], 1),
    (_everywhere, ["info", "B"], 0),
    (_everywhere, ["info", "--format", "json", "B"], 0),
    (_everywhere, ["diff", "B", "T", "-q"], 0),  # (the renamed input x leaves x undefined on both sides)
    (_everywhere, ["diff", "B", "T", "--html", "O.html", "-q"], 0),
    (_runnable, ["diff", "B", "T"], 0),
    (_runnable, ["diff", "B", "T", "--html", "O.html"], 0),
    (_everywhere, ["view", "B", "-o", "O.html"], 0),
    (_everywhere, ["fmt", "--check", "T"], 0),
    (_everywhere, ["print", "B", "--shapes"], 0),
    (_everywhere, ["run", "B", "--random"], 1),  # the graph's input x is renamed: a clear error
    (_runnable, ["run", "B", "--random"], 0),
    (_runnable, ["run", "T", "--random", "--trace"], 0),
    (_raw_output, ["run", "B", "--random", "--trace", "--dump", "O.dump"], 0),
]


@pytest.mark.parametrize("make,command,status", COMMANDS, ids=[f"{c[0].__name__}-{' '.join(c[1])}" for c in COMMANDS])
def test_every_command_handles_them(tmp_path, capsys, make, command, status):
    m = make()
    b, t = tmp_path / "m.onnx", tmp_path / "m.onnxtext"
    b.write_bytes(m.SerializeToString())
    t.write_text(onnxtext.to_text(m), encoding="utf-8")
    args = [str(b) if a == "B" else str(t) if a == "T" else str(tmp_path / a) if a.startswith("O.") else a
            for a in command]
    assert cli.main(args) == status
    err = capsys.readouterr().err
    assert "internal error" not in err and "bytes" not in err and "Traceback" not in err, err
    if status == 1 and command[0] not in ("check", "diff"):
        assert "error" in err, err


def test_run_saves_an_output_named_by_such_bytes(tmp_path, capsys):
    b = tmp_path / "m.onnx"
    b.write_bytes(_raw_output().SerializeToString())
    assert cli.main(["run", str(b), "--random", "--output-dir", str(tmp_path / "out")]) == 0
    shown = RAW.decode("utf-8", "backslashreplace")
    assert f"{shown}: float[" in capsys.readouterr().out
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["_x80a_xff\u00e9_xe2_x82.npy", "y.npy"]


@pytest.mark.parametrize("statement", ['"\\xff" = Relu(x)', 'y = Relu("\\xff")', '@doc_string "\\xfe"\ny = Relu(x)'])
def test_the_repl_refuses_them_with_a_clear_error(statement):
    from onnxtext.repl.session import Session

    s = Session()
    assert s.execute("x = Constant <value = float[2] = {1, -2}> ()").ok
    reply = s.execute(statement)
    assert not reply.ok and "not UTF-8" in reply.text, reply.text
    assert s.execute("y = Relu(x)").ok  # the session goes on


@pytest.mark.parametrize("seed", range(4))
def test_the_printers_fast_path_prints_them_as_the_reference_does(monkeypatch, seed):
    """Many nodes and initializers of a big graph (fastprint's chunks) with random bytes that are not UTF-8 in
    their string fields: the fast path's text is the reference printer's, and parses back to the same bytes."""
    import random

    from onnxtext.printing import fastprint

    rng = random.Random(seed)
    m = _model(True)
    for _ in range(15):
        field = rng.choice(["name", "input", "output", "doc_string", "domain", "op_type", "overload"])
        set_raw(rng.choice(m.graph.node), field, bytes([rng.randrange(128, 256), 65, rng.randrange(128, 256)]))
    for _ in range(5):
        set_raw(rng.choice(m.graph.initializer), rng.choice(["name", "doc_string"]), bytes([rng.randrange(128, 256)]))
    set_raw(m.graph.input[0], "name", b"\xfeA")
    fast = onnxtext.to_text(m)
    monkeypatch.setattr(fastprint, "ENABLED", False)
    assert onnxtext.to_text(m) == fast
    assert onnxtext.parse_model(fast).SerializeToString() == m.SerializeToString()


@pytest.mark.parametrize("optimize", [0, 2])
def test_the_evaluator_names_an_attribute_name_that_is_not_utf8(optimize):
    import numpy as np

    node = h.make_node("LeakyRelu", ["x"], ["y"], alpha=0.5)
    set_raw(node.attribute[0], "name")
    g = h.make_graph([node], "g", [h.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                     [h.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = h.make_model(g, opset_imports=[h.make_opsetid("", 18)])
    with pytest.raises(onnxtext.EvalError, match="LeakyRelu.*attribute name .* is not UTF-8"):
        onnxtext.Evaluator(m, optimize=optimize).run(None, {"x": np.ones(2, np.float32)})
