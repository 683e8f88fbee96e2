"""Rule ``float16_in_float32``: its operator tables checked against onnxruntime, and float16 models
computed like onnxruntime's CPU provider computes them.

* every ONNX-domain operator of ``FLOAT32_OPS`` is one onnxruntime's CPU provider runs in float32 (its
  optimized model has Casts around the node); the operators with a float16 kernel listed here are not
  in the table;
* every operator of ``EXACT_OPS`` gives the same values in float16 as in float32 then rounded;
* small float16 models give onnxruntime's values (to float16 rounding of the output), closer than
  float16 computed node by node.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from helpers import run_onnxruntime, text_model
from onnx import TensorProto, helper

from onnxtext import Evaluator
from onnxtext.evaluator.optimizer.float16_in_float32 import EXACT_OPS, FLOAT32_OPS

ort = pytest.importorskip("onnxruntime")
H = TensorProto.FLOAT16

X = (2, 4, 4, 4)
C = (4,)
# op -> (shapes of its float16 inputs, attributes)
PROBES = {
    "Abs": ([X], {}), "Add": ([X, X], {}), "AveragePool": ([X], dict(kernel_shape=[2, 2])),
    "BatchNormalization": ([X, C, C, C, C], {}), "Conv": ([X, X], {}), "ConvTranspose": ([X, X], {}),
    "Div": ([X, X], {}), "Elu": ([X], {}), "Erf": ([X], {}), "Exp": ([X], {}), "Gemm": ([(4, 4), (4, 4), C], {}),
    "GlobalAveragePool": ([X], {}), "GlobalMaxPool": ([X], {}), "HardSigmoid": ([X], {}), "HardSwish": ([X], {}),
    "InstanceNormalization": ([X, C, C], {}), "LeakyRelu": ([X], {}), "Log": ([X], {}), "MatMul": ([X, X], {}),
    "MaxPool": ([X], dict(kernel_shape=[2, 2])), "Mul": ([X, X], {}), "Neg": ([X], {}), "Pow": ([X, X], {}),
    "Reciprocal": ([X], {}), "ReduceMean": ([X], {}), "ReduceSum": ([X], {}), "Relu": ([X], {}),
    "Sigmoid": ([X], {}), "Softmax": ([X], {}), "Sqrt": ([X], {}), "Sub": ([X, X], {}), "Tanh": ([X], {}),
}
# operators onnxruntime has float16 kernels for: outside the region
FLOAT16_KERNELS = {"LayerNormalization": ([C, C], {}), "Clip": ([X], {}), "Max": ([X, X], {}), "Min": ([X, X], {}),
                   "Transpose": ([X], {}), "Concat": ([X, X], dict(axis=1)), "Identity": ([X], {})}


def _inserted_casts(op, shapes, attrs) -> bool:
    """Whether onnxruntime's optimized model of one float16 ``op`` node has Casts (computed in float32)."""
    import os
    import tempfile

    ins = [helper.make_tensor_value_info(f"x{i}", H, list(shape)) for i, shape in enumerate(shapes)]
    node = helper.make_node(op, [i.name for i in ins], ["y"], **attrs)
    graph = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", H, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    with tempfile.TemporaryDirectory() as tmp:
        options.optimized_model_filepath = os.path.join(tmp, "optimized.onnx")
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return any(n.op_type == "Cast" for n in onnx.load(options.optimized_model_filepath).graph.node)


@pytest.mark.parametrize("op", sorted(op for domain, op in FLOAT32_OPS if not domain))
def test_onnxruntime_computes_the_table_in_float32(op):
    assert _inserted_casts(op, *PROBES[op]), f"onnxruntime has a float16 kernel for {op}: not a float32 operator"


@pytest.mark.parametrize("op", sorted(FLOAT16_KERNELS))
def test_operators_with_a_float16_kernel_are_not_in_the_table(op):
    assert ("", op) not in FLOAT32_OPS
    assert not _inserted_casts(op, *FLOAT16_KERNELS[op])


@pytest.mark.parametrize("op", ["Clip", "Max", "Min"])
def test_exact_ops_round_like_float32(op):
    """The order operations of EXACT_OPS: float16 results equal float32 results rounded to float16."""
    assert ("", op) in EXACT_OPS
    rng = np.random.default_rng(3)
    a, b = (rng.standard_normal((5, 40)) * 3).astype(np.float32), (rng.standard_normal((5, 40)) * 3).astype(np.float32)
    from onnxtext.evaluator.registry import lookup

    fn = lookup(op, "", 17).fn
    args = (a, np.float32(-0.3), np.float32(2.1)) if op == "Clip" else (a, b)
    half = fn(*[np.asarray(x).astype(np.float16) for x in args])
    wide = fn(*[np.asarray(x).astype(np.float16).astype(np.float32) for x in args])
    assert half.dtype == np.float16 and np.array_equal(half, wide.astype(np.float16))


_W = (np.random.default_rng(1).standard_normal((8, 8, 3, 3)) * 0.2).astype(np.float16)
MODEL = """<ir_version: 8, opset_import: ["": 17]>
g (float16[2, 8, 8, 8] x, float16[8] s) => (float16[2, 8] y) {
  w = Constant <value = float16[8, 8, 3, 3] {%s}> ()
  axes = Constant <value = int64[2] {1, 2}> ()
  c = Conv <pads = [1, 1, 1, 1]> (x, w)
  r = Relu(c)
  s4 = Unsqueeze(s, axes)
  m = Mul(r, s4)
  e = Add(m, x)
  t = Tanh(e)
  p = GlobalAveragePool(t)
  y = Flatten(p)
}""" % ", ".join(repr(float(v)) for v in _W.reshape(-1))


def test_float16_model_matches_onnxruntime_closer_than_node_by_node():
    model = text_model(MODEL)
    rng = np.random.default_rng(4)
    feeds = {"x": rng.standard_normal((2, 8, 8, 8)).astype(np.float16),
             "s": rng.standard_normal(8).astype(np.float16)}
    want = run_onnxruntime(model, feeds)[0].astype(np.float32)
    region = np.abs(Evaluator(model).run(None, feeds)[0].astype(np.float32) - want).max()
    node_by_node = np.abs(Evaluator(model, disable=("float16_in_float32",)).run(None, feeds)[0].astype(np.float32)
                          - want).max()
    assert region <= 2 ** -11 * np.abs(want).max()  # at most one float16 rounding step from onnxruntime
    assert region < node_by_node


def test_half_conv_at_level_1():
    """Without the region (level 1), a float16 Conv with constant weights is a HalfConv: float32 inside,
    rounded once, equal to the plain kernel's float32-accumulated result."""
    from pathlib import Path

    model = text_model((Path(__file__).parent / "fixtures" / "optimizer" / "prepared_conv.half.onnxtext").read_text())
    ev = Evaluator(model, optimize=1)
    assert [type(st.fn).__name__ for st in ev._plan_for(None, ()).steps][0] == "HalfConv"
    x = np.random.default_rng(2).standard_normal((2, 2, 5, 6)).astype(np.float16)
    np.testing.assert_array_equal(ev.run(None, {"x": x})[0], Evaluator(model, optimize=0).run(None, {"x": x})[0])


def test_mixed_float_types_keep_their_types():
    """Pow's float16 exponent does not make a float32 base float16; a float16 BatchNormalization with
    float32 statistics (opset 15) is float16 and computed in float32."""
    text = """<ir_version: 8, opset_import: ["": 17]>
g (float[2, 3, 4, 4] x, float16[2, 3, 4, 4] h) => (float[2, 3, 4, 4] p, float16[2, 3, 4, 4] b) {
  e = Constant <value = float16 {2.0}> ()
  p = Pow(x, e)
  s = Constant <value = float[3] {1.5, 0.5, 2.0}> ()
  z = Constant <value = float[3] {0.1, -0.2, 0.3}> ()
  m = Constant <value = float[3] {0.0, 0.5, -0.5}> ()
  v = Constant <value = float[3] {1.0, 2.0, 0.5}> ()
  b = BatchNormalization(h, s, z, m, v)
}"""
    model = text_model(text)
    rng = np.random.default_rng(5)
    feeds = {"x": rng.standard_normal((2, 3, 4, 4)).astype(np.float32),
             "h": rng.standard_normal((2, 3, 4, 4)).astype(np.float16)}
    got = Evaluator(model).run(None, feeds)
    want = run_onnxruntime(model, feeds)
    assert got[0].dtype == np.float32 and got[1].dtype == np.float16
    np.testing.assert_allclose(got[0], want[0], rtol=1e-6)
    np.testing.assert_allclose(got[1].astype(np.float32), want[1].astype(np.float32), rtol=2e-3, atol=2e-3)


def test_float16_to_float32_bit_path_is_numpys_conversion_for_every_half():
    """The bit path of large float16 -> float32 conversions (kernels/cast.py) against numpy's own loop on
    all 65,536 half values (infinities and NaN: numpy's loop), and on a non-contiguous view."""
    from onnxtext.evaluator.kernels.cast import float16_to_float32

    every = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16)
    finite = every[np.isfinite(every)]
    for x in (finite, every, finite[::-1].reshape(-1, 2)[:, 0]):
        got, want = float16_to_float32(x), x.astype(np.float32)
        assert got.dtype == np.float32 and got.shape == want.shape
        assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


_W2 = np.random.default_rng(6).standard_normal((6, 8, 3, 3)) * 0.2
_G = np.random.default_rng(7).standard_normal((5, 6)) * 0.5
HEAD = """<ir_version: 8, opset_import: ["": 17]>
g (%(t)s[2, 8, 9, 7] x) => (%(t)s[2, 5] y) {
  w = Constant <value = %(t)s[6, 8, 3, 3] {%(w)s}> ()
  lo = Constant <value = %(t)s {0.0}> ()
  hi = Constant <value = %(t)s {6.0}> ()
  gw = Constant <value = %(t)s[5, 6] {%(g)s}> ()
  gb = Constant <value = %(t)s[5] {0.5, -0.25, 0.125, 1.0, -1.0}> ()
  c = Conv <pads = [1, 1, 1, 1], strides = [2, 2]> (x, w)
  r = Clip(c, lo, hi)
  p = GlobalAveragePool(r)
  f = Flatten(p)
  y = Gemm <transB = 1> (f, gw, gb)
}"""


def _head(t):
    halves = lambda a: ", ".join(repr(float(v)) for v in a.astype(np.float16).reshape(-1))  # noqa: E731
    return text_model(HEAD % dict(t=t, w=halves(_W2), g=halves(_G)))


def test_region_steps_take_the_float32_fusions():
    """Inside the region a Clip with constant bounds fuses into the conv before it and a Gemm with constant
    weights becomes a product, as in the float32 twin of the model: the same steps between the
    conversions; values within one float16 rounding of onnxruntime's, with NaN and infinities."""
    half, single = _head("float16"), _head("float")
    labels = [type(st.fn).__name__ for st in Evaluator(half)._plan_for(None, ()).steps]
    assert labels == ["ToFloat32"] + [type(st.fn).__name__ for st in Evaluator(single)._plan_for(None, ()).steps] + \
        ["ToFloat16"]
    assert "ActivatedConv" in labels and "MatMulAdd" in labels
    x = np.random.default_rng(8).standard_normal((2, 8, 9, 7)).astype(np.float16) * 4
    x[0, 1, 2, 3], x[1, 2, 0, 0], x[1, 5, 8, 6] = np.nan, np.inf, -np.inf
    got = Evaluator(half).run(None, {"x": x})[0]
    want = run_onnxruntime(half, {"x": x})[0]
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float32), want.astype(np.float32), rtol=2 ** -10, atol=2 ** -10,
                               equal_nan=True)
    level0 = Evaluator(half, optimize=0).run(None, {"x": x})[0]
    np.testing.assert_allclose(got.astype(np.float32), level0.astype(np.float32), rtol=4e-3, atol=4e-3,
                               equal_nan=True)
