"""``conv_fused.DepthwisePointwise`` (a depthwise Conv cropped straight into the column buffer of the
pointwise Conv reading it) against the Conv definition computed here in float64 (``reference_conv``
of test_conv_paths: nested sums over taps). To add a case, add a line to a table.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from onnx import helper
from test_conv_paths import reference_conv

from helpers import graph_model

from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.kernels.conv_fused import ConcatInto, ConvAdd, DepthwisePointwise
from onnxtext.evaluator.kernels.conv_prepared import PreparedConv

RNG = np.random.default_rng(5)

# (input shape, depthwise kernel, strides, dilations, pads, pointwise outputs, pointwise group)
CASES = [
    ((1, 8, 9, 9), (3, 3), [1, 1], [1, 1], [1, 1, 1, 1], 8, 4),  # ShuffleNet's shape of layer
    ((2, 6, 8, 7), (3, 3), [2, 2], [1, 1], [1, 1, 1, 1], 9, 3),
    ((1, 4, 10, 11), (3, 2), [1, 2], [2, 1], [2, 0, 1, 1], 2, 1),
    ((1, 6, 5, 5), (5, 5), [1, 1], [1, 1], [2, 2, 2, 2], 12, 2),
    ((2, 6, 18, 9), (5, 5), [1, 1], [1, 1], [2, 2, 2, 2], 12, 3),  # 5x5 on 16+ rows: shifted rows
    ((1, 4, 12, 12), (2, 2), [3, 3], [1, 1], [0, 0, 0, 0], 4, 4),  # phases no tap reads
    ((1, 5, 30, 28), (3, 3), [1, 1], [1, 1], [1, 1, 1, 1], 5, 1),  # a wider image
    ((2, 4, 13), (3,), [2], [1], [1, 1], 6, 2),  # 1-D
    ((1, 3, 4, 5, 6), (3, 3, 3), [1, 2, 2], [1, 1, 1], [1, 1, 1, 1, 1, 1], 6, 3),  # 3-D
]


def _pair(case, bias, relu):
    xs, kernel, strides, dilations, pads, m, group = case
    c = xs[1]
    dw_w = RNG.standard_normal((c, 1) + kernel).astype(np.float32)
    pw_w = RNG.standard_normal((m, c // group) + (1,) * len(kernel)).astype(np.float32)
    pw_b = RNG.standard_normal(m).astype(np.float32) if bias else None
    nd = len(kernel)
    dw_attrs = {"auto_pad": "NOTSET", "group": c, "strides": strides, "dilations": dilations, "pads": pads,
                "kernel_shape": list(kernel)}
    pw_attrs = {"auto_pad": "NOTSET", "group": group, "strides": [1] * nd, "dilations": [1] * nd,
                "pads": [0] * (2 * nd), "kernel_shape": [1] * nd}
    fused = DepthwisePointwise(PreparedConv(dw_w, None, dw_attrs), PreparedConv(pw_w, pw_b, pw_attrs, relu))

    def expected(x):
        a = reference_conv(x, dw_w, None, c, strides, dilations, pads)
        y = reference_conv(a, pw_w, pw_b, group, [1] * nd, [1] * nd, [0] * (2 * nd))
        return np.maximum(y, 0) if relu else y
    return fused, expected


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_fused_matches_the_definition(case, bias, relu):
    fused, expected = _pair(case, bias, relu)
    for _ in range(2):  # the second call runs on the prepared closure and buffers
        x = RNG.standard_normal(case[0]).astype(np.float32)
        want = expected(x)
        assert fused.output_shape(x.shape) == want.shape
        y = fused(x)
        assert y.shape == want.shape and y.flags.c_contiguous
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    assert x.shape in fused._fused and fused._fused[x.shape]  # (the fused closure ran, not the fallback)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_fused_writes_into_a_channel_slice(case):
    """As a part of a Concat: the result lands in its channel slice, the rest stays untouched."""
    fused, expected = _pair(case, True, True)
    x = RNG.standard_normal(case[0]).astype(np.float32)
    want = expected(x)
    n, m = want.shape[:2]
    buffer = np.full((n, m + 3) + want.shape[2:], 7.0, np.float32)
    fused(x, buffer[:, 2:2 + m])
    np.testing.assert_allclose(buffer[:, 2:2 + m], want, rtol=1e-4, atol=1e-4)
    assert (buffer[:, :2] == 7).all() and (buffer[:, 2 + m:] == 7).all()


def test_other_dtype_and_thread_fall_back():
    fused, expected = _pair(CASES[0], True, True)
    x = RNG.standard_normal(CASES[0][0])
    np.testing.assert_allclose(fused(x), expected(x), rtol=1e-4, atol=1e-4)  # float64: the two Convs
    x32 = x.astype(np.float32)
    results = []
    thread = threading.Thread(target=lambda: results.append(fused(x32)))
    thread.start()
    thread.join()
    np.testing.assert_allclose(results[0], expected(x32), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("after", ["add", "concat"])
def test_fused_inside_a_residual_add_or_a_concat(after):
    """ShuffleNet's units: depthwise (bias) -> grouped 1x1 (bias) -> Add of the unit's input, or Concat
    with it, then Relu; the plan fuses the pair and wraps it in ConvAdd / ConcatInto."""
    x = RNG.standard_normal((1, 8, 6, 6)).astype(np.float32)
    t = {"DW": RNG.standard_normal((8, 1, 3, 3)).astype(np.float32), "DB": RNG.standard_normal(8).astype(np.float32),
         "PW": RNG.standard_normal((8, 2, 1, 1)).astype(np.float32), "PB": RNG.standard_normal(8).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["X", "DW", "DB"], ["d"], group=8, pads=[1, 1, 1, 1]),
             helper.make_node("Conv", ["d", "PW", "PB"], ["p"], group=4)]
    nodes.append(helper.make_node("Add", ["p", "X"], ["s"]) if after == "add" else
                 helper.make_node("Concat", ["X", "p"], ["s"], axis=1))
    nodes.append(helper.make_node("Relu", ["s"], ["y"]))
    ev = Evaluator(graph_model(nodes, {"X": x}, ["y"], t))
    p = reference_conv(reference_conv(x, t["DW"], t["DB"], 8, [1, 1], [1, 1], [1, 1, 1, 1]), t["PW"], t["PB"], 4,
                       [1, 1], [1, 1], [0, 0, 0, 0])
    want = np.maximum(p + x if after == "add" else np.concatenate([x, p], axis=1), 0)
    for _ in range(2):
        np.testing.assert_allclose(ev.run(None, {"X": x})[0], want, rtol=1e-4, atol=1e-4)
    (step,) = [s[0] for s in ev._plan_for(None, ()).steps]
    fused = step.conv if after == "add" else step.parts[1]
    assert isinstance(step, ConvAdd if after == "add" else ConcatInto) and isinstance(fused, DepthwisePointwise)
