"""Debugging a run: ``onnxtext run --trace/--dump/--dim/--compare``, the debugging API, error locations
and the refusal of bad feeds.

The models are onnxtext text written to a temporary file, so node lines are known from the text
itself (the line of ``name = Op(...)``), not from the code under test. Expected values are computed
here with numpy from the dumped inputs. The planted divergence replaces one operator's kernel in the
registry with a perturbed copy (monkeypatch) and checks that ``--compare`` names that node's line.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from onnxtext.cli import main
from onnxtext.errors import EvalError
from onnxtext.evaluator import Evaluator, debugging, registry

MLP = """\
<
  ir_version: 9,
  opset_import: ["": 17]
>

mlp (float[N, 4] x, float[N, S] mask) => (float[N, 3] y, float[N, S] masked)
<
  float[4, 3] w = {0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1},
  float[3] b = {1.0, -2.0, 0.5}
>
{
  h = MatMul(x, w)
  a = Add(h, b)
  y = Relu(a)
  masked = Mul(mask, mask)
}
"""


def line_of(text: str, start: str) -> int:
    """1-based line of the first line of ``text`` that starts (after indentation) with ``start``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.strip().startswith(start))


@pytest.fixture
def mlp(tmp_path):
    path = tmp_path / "mlp.onnxtext"
    path.write_text(MLP)
    return str(path)


def run_cli(capsys, *argv):
    rc = main(["run", *map(str, argv)])
    out = capsys.readouterr()
    return rc, out.out, out.err


# ---------------------------------------------------------------------------------------------- --dim
def test_random_symbolic_dims_default_to_distinct_sizes_not_one(mlp, tmp_path, capsys):
    rc, out, _ = run_cli(capsys, mlp, "--random", "--seed", "0", "--dump", tmp_path / "d")
    assert rc == 0
    x, mask = np.load(tmp_path / "d" / "x.npy"), np.load(tmp_path / "d" / "mask.npy")
    assert x.shape == (3, 4) and mask.shape == (3, 4)  # N -> 3, then S -> 4: both not 1, and different


@pytest.mark.parametrize("dims,shape_x,shape_mask", [
    (["N=4", "S=7"], (4, 4), (4, 7)),
    (["S=2"], (3, 4), (3, 2)),
    (["N=3"], (3, 4), (3, 4)),  # S skips 3, already taken by N
    (["N=1"], (1, 4), (1, 3)),
])
def test_dim_sizes_symbols(mlp, tmp_path, capsys, dims, shape_x, shape_mask):
    argv = [mlp, "--random", "--dump", tmp_path / "d"]
    for d in dims:
        argv += ["--dim", d]
    rc, _, err = run_cli(capsys, *argv)
    assert rc == 0, err
    assert np.load(tmp_path / "d" / "x.npy").shape == shape_x
    assert np.load(tmp_path / "d" / "mask.npy").shape == shape_mask


@pytest.mark.parametrize("dim,message", [
    ("Q=3", "no input has a dimension named 'Q' (symbols: N, S)"),
    ("N=-1", "expected SYMBOL=SIZE"),
    ("N", "expected SYMBOL=SIZE"),
])
def test_bad_dim_is_a_clear_error(mlp, capsys, dim, message):
    rc, _, err = run_cli(capsys, mlp, "--random", "--dim", dim)
    assert rc == 1 and message in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------- --trace
def test_trace_prints_every_node_with_its_line_and_statistics(mlp, tmp_path, capsys):
    rc, out, _ = run_cli(capsys, mlp, "--random", "--seed", "5", "--trace", "--dump", tmp_path / "d")
    assert rc == 0
    x = np.load(tmp_path / "d" / "x.npy")
    w = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    h = x @ w
    a = h + np.array([1.0, -2.0, 0.5], np.float32)
    lines = out.splitlines()
    for value_name, op, expected in [("h", "MatMul", h), ("a", "Add", a), ("y", "Relu", np.maximum(a, 0))]:
        head = next(i for i, line in enumerate(lines) if line.endswith(f"  {op}"))
        assert lines[head].startswith(f"{mlp}:{line_of(MLP, f'{value_name} = {op}(')}  graph.node[")
        stats = lines[head + 1].strip()
        assert stats.startswith(f"{value_name}: float32[3, 3] min ")
        numbers = [float(t) for t in stats.split()[4:9:2]]  # min, max, mean
        np.testing.assert_allclose(numbers, [expected.min(), expected.max(), expected.mean()], rtol=1e-5, atol=1e-6)


def test_trace_counts_nan_and_inf():
    s = debugging.summarize(np.array([1.0, np.nan, np.inf, -2.0, np.nan], np.float32))
    assert (s.nan, s.inf, s.min, s.max, s.mean) == (2, 1, -2.0, 1.0, -0.5)
    assert s.text() == "float32[5] min -2 max 1 mean -0.5 nan 2 inf 1"
    assert debugging.summarize(np.zeros((0, 3), np.float32)).text() == "float32[0, 3]"
    assert debugging.summarize([np.zeros(2)]).text() == "sequence of 1"


# ---------------------------------------------------------------------------------------------- --dump
NAMES = """\
<
  ir_version: 9,
  opset_import: ["": 17]
>

names (float[2] x) => (float[2] "a/b", float[2] a_b, float[2] "A_b", float[2] "index.json")
{
  "a/b" = Neg(x)
  a_b = Abs(x)
  "A_b" = Relu(x)
  "index.json" = Identity(x)
}
"""


def test_dump_names_are_sanitized_without_collisions(tmp_path, capsys):
    path = tmp_path / "names.onnxtext"
    path.write_text(NAMES)
    rc, _, err = run_cli(capsys, path, "--input", "x=[1.5,-2]", "--dump", tmp_path / "d")
    assert rc == 0, err
    index = json.loads((tmp_path / "d" / "index.json").read_text())
    assert set(index) == {"x", "a/b", "a_b", "A_b", "index.json"}
    files = list(index.values())
    assert len({f.lower() for f in files}) == len(files) and "index.json" not in files
    expected = {"x": [1.5, -2], "a/b": [-1.5, 2], "a_b": [1.5, 2], "A_b": [1.5, 0], "index.json": [1.5, -2]}
    for name, values in expected.items():
        assert np.load(tmp_path / "d" / index[name]).tolist() == values, name


# ---------------------------------------------------------------------------------------------- --compare
def test_compare_with_onnxruntime_and_reference_match(mlp, capsys):
    pytest.importorskip("onnxruntime")
    for engine, label in [("onnxruntime", "onnxruntime"), ("reference", "onnx.reference")]:
        rc, out, err = run_cli(capsys, mlp, "--random", "--seed", "1", "--compare", engine)
        assert rc == 0, err
        assert f"compared 4 values of 4 nodes with {label} (rtol 0.0001, atol 1e-05): all match" in out


def _perturb(monkeypatch, op: str, delta: float):
    """Make every registered kernel of ``op`` add ``delta`` to its (first) output."""
    key = ("", op)
    entries = registry.registered()[key]

    def wrap(fn):
        def perturbed(*args, **kwargs):
            out = fn(*args, **kwargs)
            return (out[0] + delta, *out[1:]) if isinstance(out, tuple) else out + np.asarray(delta, out.dtype)
        return perturbed

    monkeypatch.setitem(registry._KERNELS, key,
                        [registry.Kernel(k.op, k.domain, k.since, wrap(k.fn), k.context) for k in entries])


@pytest.mark.parametrize("engine", ["onnxruntime", "reference"])
def test_compare_names_the_line_of_a_planted_divergence(mlp, monkeypatch, capsys, engine):
    pytest.importorskip("onnxruntime")
    _perturb(monkeypatch, "Add", 1e-3)
    rc, out, _ = run_cli(capsys, mlp, "--random", "--seed", "2", "--compare", engine)
    assert rc == 1
    report = out[out.index("first divergence at"):].splitlines()
    assert report[1].strip().startswith(f"{mlp}:{line_of(MLP, 'a = Add(')}  graph.node[1]  Add")
    assert report[2].strip().startswith("a: max abs diff 0.001")
    assert "1 later node differs too" in out or "later node" in out  # the Relu after it


def test_compare_tolerances_decide(mlp, monkeypatch, capsys):
    pytest.importorskip("onnxruntime")
    _perturb(monkeypatch, "Add", 1e-3)
    rc, out, _ = run_cli(capsys, mlp, "--random", "--seed", "2", "--compare", "onnxruntime", "--atol", "2e-3")
    assert rc == 0 and "all match" in out


def test_compare_api_reports_every_value():
    pytest.importorskip("onnxruntime")
    feeds = {"x": np.ones((2, 4), np.float32), "mask": np.ones((2, 5), np.float32)}
    cmp = debugging.compare(MLP, feeds, "onnxruntime")
    assert cmp.matches and cmp.compared == 4 and [n.path for n in cmp.nodes] == [f"graph.node[{i}]" for i in range(4)]
    np.testing.assert_allclose(cmp.graph_outputs[0], np.maximum(np.ones((2, 4)) @ (np.arange(12).reshape(4, 3) / 10)
                                                                + [1.0, -2.0, 0.5], 0), rtol=1e-6)


def test_compare_values_rules():
    d = debugging.compare_values("v", np.array([1.0, 2.0, np.nan]), np.array([1.0, 2.5, np.nan]), 0.0, 0.1)
    assert not d.matches and d.worst_index == (1,) and d.max_abs == 0.5 and (d.ours, d.theirs) == (2.0, 2.5)
    assert debugging.compare_values("v", np.zeros(2), np.zeros(3), 0, 0).reason == "shape [2] vs [3]"
    assert debugging.compare_values("v", np.zeros(2, np.int64), np.zeros(2, np.int32), 0, 0).reason == \
        "dtype int64 vs int32"
    assert debugging.compare_values("v", np.array(["a"], object), np.array(["a"], object), 0, 0).matches
    assert not debugging.compare_values("v", np.array([np.inf]), np.array([1.0]), 0, 1e9).matches


# ---------------------------------------------------------------------------------------------- API
def test_trace_run_callback_and_intermediates():
    feeds = {"x": np.arange(8, dtype=np.float32).reshape(2, 4), "mask": np.full((2, 1), 3, np.float32)}
    seen = []
    outputs, records = debugging.trace_run(MLP, feeds, seen.append)
    assert seen == records and [r.node.op_type for r in records] == ["MatMul", "Add", "Relu", "Mul"]
    values = debugging.intermediates(MLP, feeds)
    assert list(values) == ["x", "mask", "h", "a", "y", "masked"]
    np.testing.assert_allclose(values["h"], feeds["x"] @ (np.arange(12, dtype=np.float32).reshape(4, 3) / 10),
                               rtol=1e-6)
    assert values["masked"].tolist() == [[9.0], [9.0]]
    np.testing.assert_array_equal(values["y"], outputs[0])


def test_source_lines_for_text_and_binary(mlp, tmp_path):
    lines = debugging.SourceLines(mlp)
    assert lines.where("graph.node[2]") == f"{mlp}:{line_of(MLP, 'y = Relu(')}"
    import onnxtext

    binary = tmp_path / "m.onnx"
    onnxtext.save(onnxtext.parse_model(MLP), str(binary))
    assert debugging.SourceLines(str(binary)).where("graph.node[2]") == ""


# ---------------------------------------------------------------------------------------------- errors
BAD_RESHAPE = """\
<
  ir_version: 9,
  opset_import: ["": 17]
>

bad (float[2, 3] x) => (float[7] y)
{
  s = Constant <value = int64[1] {7}> ()
  y = Reshape(x, s)
}
"""


def test_evaluator_error_names_file_line_node_and_inputs(tmp_path, capsys):
    path = tmp_path / "bad.onnxtext"
    path.write_text(BAD_RESHAPE)
    rc, _, err = run_cli(capsys, path, "--input", "x=[[1,2,3],[4,5,6]]")
    assert rc == 1 and "Traceback" not in err
    assert err.startswith(f"{path}:{line_of(BAD_RESHAPE, 'y = Reshape(')}: ")
    assert "(ai.onnx::Reshape)" in err and "x: float32[2, 3]" in err


@pytest.mark.parametrize("feeds,message", [
    ({"x": np.zeros((2, 4), np.float32)}, "missing input 'mask'"),
    ({"x": np.zeros((2, 4), np.float64), "mask": np.zeros((2, 3), np.float32)},
     "input 'x': expected element type float, got float64"),
    ({"x": np.zeros((2, 4, 1), np.float32), "mask": np.zeros((2, 3), np.float32)}, "input 'x': expected rank 2"),
    ({"x": np.zeros((2, 5), np.float32), "mask": np.zeros((2, 3), np.float32)},
     "input 'x': dimension 1 is 5, but the model declares 4"),
    ({"x": np.zeros((2, 4), np.float32), "mask": np.zeros((3, 3), np.float32)},
     "input 'mask': dimension 0 (N) is 3, but input 'x' dimension 0 gives N = 2"),
])
def test_bad_feeds_are_refused_naming_the_input(feeds, message):
    with pytest.raises(EvalError) as info:
        Evaluator(MLP).run(None, feeds)
    assert message in str(info.value)


def test_unknown_dims_are_not_checked():
    text = MLP.replace("float[N, 4] x, float[N, S] mask", 'float[N, 4] x, float["?", "?"] mask')
    ev = Evaluator(text)
    assert ev.run(None, {"x": np.zeros((2, 4), np.float32), "mask": np.zeros((3, 5), np.float32)})[1].shape == (3, 5)


def test_symbol_shared_within_one_input_is_checked():
    text = MLP.replace("float[N, S] mask", "float[N, N] mask").replace("float[N, S] masked", "float[N, N] masked")
    with pytest.raises(EvalError, match=r"input 'mask': dimension 1 \(N\) is 3, but input 'x' dimension 0 gives N = 2"):
        Evaluator(text).run(None, {"x": np.zeros((2, 4), np.float32), "mask": np.zeros((2, 3), np.float32)})


@pytest.mark.parametrize("body,rule,culprit", [
    ("  y = Neg(x)\n  y = Abs(x)\n", "graph.ssa", "  y = Abs(x)"),
    ("  y = Neg(t)\n  t = Abs(x)\n", "graph.topological", "  y = Neg(t)"),
    ("  y = Neg(nowhere)\n", "graph.undefined", "  y = Neg(nowhere)"),
])
def test_invalid_graph_is_refused_with_the_checkers_line(tmp_path, capsys, body, rule, culprit):
    text = '<\n  ir_version: 9,\n  opset_import: ["": 17]\n>\n\ng (float[2] x) => (float[2] y)\n{\n' + body + "}\n"
    path = tmp_path / "invalid.onnxtext"
    path.write_text(text)
    rc, out, err = run_cli(capsys, path, "--input", "x=[1,2]")
    assert rc == 1 and out == "" and "Traceback" not in err
    first = err.splitlines()[0]
    assert first.startswith(f"{path}:{line_of(text, culprit.strip())}:") and f"error[{rule}]" in first
    assert "the graph is invalid, so it was not run" in err


BRANCHY = """\
<
  ir_version: 9,
  opset_import: ["": 17]
>

branchy (bool c, float[2] x) => (float[2] y, seq(float[2]) s) {
  y = If <
    then_branch = g1 () => (float[2] t) {
      t = Neg(x)
    },
    else_branch = g2 () => (float[2] e) {
      e = Abs(x)
    }
  > (c)
  s = SequenceConstruct(x, y)
}
"""


def test_trace_shows_subgraph_nodes_with_their_lines_and_dump_saves_sequences(tmp_path, capsys):
    path = tmp_path / "branchy.onnxtext"
    path.write_text(BRANCHY)
    rc, out, err = run_cli(capsys, path, "--input", "c=true", "--input", "x=[1,-2]", "--trace", "--dump", tmp_path / "d")
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0] == f"{path}:{line_of(BRANCHY, 't = Neg(')}  graph.node[0].attribute[then_branch].g.node[0]  Neg"
    assert lines[1].strip() == "t: float32[2] min -1 max 2 mean 0.5"
    assert lines[2] == f"{path}:{line_of(BRANCHY, 'y = If <')}  graph.node[0]  If"
    assert "    s: sequence of 2" in lines
    index = json.loads((tmp_path / "d" / "index.json").read_text())
    assert index["s"] == "s.pb" and "t" not in index  # subgraph values are traced, not dumped
    import onnx
    from onnx import numpy_helper

    seq = onnx.SequenceProto()
    seq.ParseFromString((tmp_path / "d" / "s.pb").read_bytes())
    assert [numpy_helper.to_array(t).tolist() for t in seq.tensor_values] == [[1.0, -2.0], [-1.0, 2.0]]


@pytest.mark.parametrize("body,path", [
    ("  y = Neg(x)\n  y = Abs(x)\n", "graph.node[1].output[0]"),
    ("  x = Neg(x)\n  y = Abs(x)\n", "graph.node[0].output[0]"),
    ("  y = If <then_branch = g1 () => (float[2] t) {\n      t = Neg(x)\n      t = Abs(x)\n    }, "
     "else_branch = g2 () => (float[2] e) {\n      e = Abs(x)\n    }> (c)\n",
     "graph.node[0].attribute[then_branch].g.node[1].output[0]"),
])
def test_evaluator_refuses_a_value_assigned_twice_at_construction(body, path):
    text = '<\n  ir_version: 9,\n  opset_import: ["": 17]\n>\n\ng (bool c, float[2] x) => (float[2] y)\n{\n' + body + "}\n"
    with pytest.raises(EvalError, match="is assigned twice") as info:
        Evaluator(text)
    assert info.value.path == path
