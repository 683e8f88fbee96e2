"""``print --elide``: big tensors become one-line summaries for reading, and such text never parses.

Parsing elided text must fail with a ParseError naming the tensor and its line (never silent zeros), through
the API and through ``onnxtext compile`` (exit 1, message, no output file). Add a case to CASES: a model
builder and the name the error must mention (None for a tensor without a name).
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxtext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIG = np.linspace(-1.5, 2.5, 100, dtype=np.float32).reshape(10, 10)
OUT = [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [10, 10])]


def _model(nodes, inits=(), sparse=(), functions=()):
    graph = helper.make_graph(nodes, "g", [], OUT, list(inits), sparse_initializer=list(sparse))
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid("local", 1)] if functions else [])
    return helper.make_model(graph, opset_imports=opsets, functions=list(functions))


def _branch(tensor):
    return helper.make_graph([helper.make_node("Constant", [], ["c"], value=tensor)], "b", [],
                             [helper.make_tensor_value_info("c", TensorProto.FLOAT, list(tensor.dims))])


def _cond():
    return helper.make_node("Constant", [], ["cond"], value=numpy_helper.from_array(np.array(True)))


CASES = {  # name -> (model, the tensor name the error must mention, or None)
    "initializer": (lambda: _model([helper.make_node("Identity", ["W"], ["Y"])],
                                   [numpy_helper.from_array(BIG, "W")]), "W"),
    "named-attribute": (lambda: _model([helper.make_node("Constant", [], ["Y"],
                                                         value=numpy_helper.from_array(BIG, "K"))]), "K"),
    "sparse-initializer": (lambda: _model(
        [helper.make_node("Identity", ["S"], ["Y"])],
        sparse=[helper.make_sparse_tensor(numpy_helper.from_array(BIG.ravel()[:50], "S"),
                                          numpy_helper.from_array(np.arange(50, dtype=np.int64) * 2, ""),
                                          [10, 10])]), "S"),
    "subgraph-initializer": (lambda: _model([_cond(), helper.make_node(
        "If", ["cond"], ["Y"], then_branch=helper.make_graph(
            [helper.make_node("Identity", ["V"], ["c"])], "t", [],
            [helper.make_tensor_value_info("c", TensorProto.FLOAT, [10, 10])], [numpy_helper.from_array(BIG, "V")]),
        else_branch=_branch(numpy_helper.from_array(BIG[:2, :2])))]), "V"),
    "unnamed-attribute": (lambda: _model([helper.make_node("Constant", [], ["Y"],
                                                           value=numpy_helper.from_array(BIG))]), None),
    "subgraph-constant": (lambda: _model([_cond(), helper.make_node(
        "If", ["cond"], ["Y"], then_branch=_branch(numpy_helper.from_array(BIG)),
        else_branch=_branch(numpy_helper.from_array(BIG)))]), None),
    "function-constant": (lambda: _model(
        [helper.make_node("F", [], ["Y"], domain="local")],
        functions=[helper.make_function("local", "F", [], ["y"], [helper.make_node(
            "Constant", [], ["y"], value=numpy_helper.from_array(BIG))], [helper.make_opsetid("", 17)])]), None),
}

def _first_elided_line(text: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if re.search(r"\belided \{", line))


def _elided(case) -> str:
    text = onnxtext.to_text(CASES[case][0](), elide=True)
    assert "elided {" in text
    return text


@pytest.mark.parametrize("case", CASES)
def test_elided_text_fails_to_parse_naming_the_tensor(case):
    text = _elided(case)
    with pytest.raises(onnxtext.ParseError, match="elided") as e:
        onnxtext.parse_model(text)
    name = CASES[case][1]
    if name is not None:
        assert repr(name) in e.value.message or f"tensor {name} " in e.value.message
    assert "without --elide" in (e.value.hint or "")


@pytest.mark.parametrize("case", CASES)
def test_elided_error_points_at_the_line(case):
    text = _elided(case)
    with pytest.raises(onnxtext.ParseError) as e:
        onnxtext.parse_model(text)
    assert e.value.line == _first_elided_line(text)


@pytest.mark.parametrize("case", ["initializer", "unnamed-attribute"])
def test_compile_of_elided_text_fails_with_no_output(tmp_path, case):
    src = tmp_path / "elided.onnxtext"
    src.write_text(_elided(case))
    out = tmp_path / "out.onnx"
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-m", "onnxtext", "compile", str(src), "-o", str(out)],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 1
    assert str(src) in r.stderr and "elided" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert sorted(os.listdir(tmp_path)) == ["elided.onnxtext"]  # no output, no temp file


def test_cli_print_elide_then_compile(tmp_path, monkeypatch, capsys):
    from onnxtext.cli import main

    model = CASES["initializer"][0]()
    onnxtext.save(model, tmp_path / "m.onnx")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "out.onnx").write_bytes(b"previous")
    assert main(["print", "m.onnx", "--elide", "-o", "r.onnxtext"]) == 0
    assert main(["compile", "r.onnxtext", "-o", "out.onnx"]) == 1
    err = capsys.readouterr().err
    assert f"r.onnxtext:{_first_elided_line((tmp_path / 'r.onnxtext').read_text())}:" in err
    assert (tmp_path / "out.onnx").read_bytes() == b"previous"


def test_summary_shows_dtype_shape_and_statistics():
    text = _elided("initializer")
    line = text.splitlines()[_first_elided_line(text) - 1]
    assert "float[10, 10] W = elided {" in line
    stats = dict(re.findall(r"(min|max|mean): ([-+0-9.e]+)", line))
    # 4 significant digits
    assert all(len(re.sub(r"e.*|[-.]|^0*", "", v)) <= 4 for v in stats.values()), stats
    assert float(stats["min"]) == pytest.approx(float(BIG.min()), rel=1e-3)
    assert float(stats["max"]) == pytest.approx(float(BIG.max()), rel=1e-3)
    assert float(stats["mean"]) == pytest.approx(float(BIG.astype(np.float64).mean()), rel=1e-3, abs=1e-6)


def test_digest_tells_tensors_apart():
    other = BIG.copy()
    other[3, 3] += 1
    digests = []
    for arr in (BIG, BIG.copy(), other):
        m = _model([helper.make_node("Identity", ["W"], ["Y"])], [numpy_helper.from_array(arr, "W")])
        digests.append(re.search(r'sha256: "([0-9a-f]+)"', onnxtext.to_text(m, elide=True)).group(1))
    assert digests[0] == digests[1] != digests[2]


def test_small_tensors_stay_exact():
    small = np.array([1.25, -2.0], np.float32)
    m = _model([helper.make_node("Identity", ["W"], ["Y"])], [numpy_helper.from_array(small, "W")])
    back = onnxtext.parse_model(onnxtext.to_text(m, elide=True))
    np.testing.assert_array_equal(numpy_helper.to_array(back.graph.initializer[0]), small)
