"""The fused CNN stem (Conv stride 2 [-> Relu] -> MaxPool 3x3 stride 2, ``kernels/conv_stem.py``).

The fused step is compared with a float64 reference written here from the operator definitions (a
loop over the kernel taps, -inf padding for the pool), over the geometries of the light models'
stems and odd, even, tiny and batched variants; the fusion pass must choose the step for the six
light models' stems and leave chains whose intermediate values are read elsewhere alone. To add a
geometry, add a line to ``CASES``; a model shape, a line to ``CHAINS``.
"""

from __future__ import annotations

import os
import sys
import threading

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from helpers import graph_model

from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.kernels import conv_stem
from onnxtext.evaluator.kernels.conv_prepared import PreparedConv
from onnxtext.evaluator.kernels.conv_stem import ConvStem, stem_geometry
from onnxtext.evaluator.kernels.pool import max_pool

RNG = np.random.default_rng(0)


def reference(x, w, b, conv_pads, pool_pads, relu):
    """MaxPool(3x3, stride 2, pool_pads)(Relu?(Conv(stride 2, conv_pads)(x))) in float64."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (conv_pads[0], conv_pads[2]), (conv_pads[1], conv_pads[3])))
    ho, wo = (xp.shape[2] - kh) // 2 + 1, (xp.shape[3] - kw) // 2 + 1
    y = np.zeros((n, m, ho, wo))
    for ky in range(kh):
        for kx in range(kw):
            patch = xp[:, :, ky:ky + 2 * ho - 1:2, kx:kx + 2 * wo - 1:2]
            y += np.einsum("mc,ncij->nmij", w[:, :, ky, kx], patch)
    if b is not None:
        y += b.astype(np.float64).reshape(1, m, 1, 1)
    if relu:
        y = np.maximum(y, 0)
    yp = np.pad(y, ((0, 0), (0, 0), (pool_pads[0], pool_pads[2]), (pool_pads[1], pool_pads[3])),
                constant_values=-np.inf)
    po, pw = (yp.shape[2] - 3) // 2 + 1, (yp.shape[3] - 3) // 2 + 1
    out = np.full((n, m, po, pw), -np.inf)
    for dy in range(3):
        for dx in range(3):
            out = np.maximum(out, yp[:, :, dy:dy + 2 * po - 1:2, dx:dx + 2 * pw - 1:2])
    return out


# (input shape, weight shape, conv pads, pool pads, relu, bias)
CASES = [
    ((1, 3, 224, 224), (16, 3, 3, 3), [0, 0, 0, 0], [0, 0, 0, 0], True, True),  # squeezenet
    ((1, 3, 224, 224), (8, 3, 3, 3), [1, 1, 1, 1], [1, 1, 1, 1], True, True),  # shufflenet
    ((1, 3, 224, 224), (16, 3, 7, 7), [3, 3, 3, 3], [1, 1, 1, 1], True, True),  # resnet50, densenet121
    ((1, 3, 224, 224), (16, 3, 7, 7), [3, 3, 3, 3], [0, 0, 0, 0], True, True),  # inception_v1
    ((1, 3, 224, 224), (16, 3, 7, 7), [3, 3, 3, 3], [0, 0, 1, 1], True, True),  # inception_v2
    ((1, 3, 37, 41), (5, 3, 7, 7), [3, 3, 3, 3], [1, 1, 1, 1], True, True),  # odd sizes
    ((1, 3, 30, 29), (5, 3, 3, 3), [1, 1, 1, 1], [0, 0, 1, 1], True, False),
    ((2, 3, 28, 28), (6, 3, 3, 3), [0, 0, 0, 0], [1, 1, 1, 1], True, True),  # batch, sizes multiple of 4
    ((2, 3, 33, 30), (6, 3, 7, 7), [3, 3, 3, 3], [0, 0, 0, 0], True, True),
    ((1, 1, 20, 23), (4, 1, 5, 5), [2, 1, 2, 0], [1, 0, 0, 1], True, True),  # asymmetric pads, 5x5
    ((1, 4, 16, 16), (4, 4, 2, 3), [0, 1, 1, 0], [1, 1, 1, 1], True, True),  # even kernel
    ((1, 3, 12, 12), (4, 3, 1, 1), [0, 0, 0, 0], [0, 0, 0, 0], True, True),  # 1x1 kernel
    ((1, 3, 7, 7), (4, 3, 3, 3), [1, 1, 1, 1], [1, 1, 1, 1], True, True),  # 4x4 conv output
    ((1, 3, 9, 9), (4, 3, 3, 3), [0, 0, 0, 0], [0, 0, 0, 0], True, True),  # one pooled position
    ((1, 3, 31, 31), (5, 3, 7, 7), [3, 3, 3, 3], [1, 1, 1, 1], False, True),  # no Relu: -inf padding
    ((1, 3, 26, 26), (5, 3, 3, 3), [1, 1, 1, 1], [1, 1, 2, 2], False, True),
]


def _attrs(w, pads):
    return {"auto_pad": "NOTSET", "group": 1, "kernel_shape": list(w.shape[2:]), "pads": pads,
            "strides": [2, 2], "dilations": None}


def _pool_attrs(pads, **extra):
    return {"auto_pad": "NOTSET", "kernel_shape": [3, 3], "strides": [2, 2], "pads": pads, "storage_order": 0,
            **extra}


def _pool_info():
    """What the fallback's kernel context reads of a plan step's info."""
    return type("Info", (), {"node": helper.make_node("MaxPool", ["y"], ["z"]),
                             "prep": type("Prep", (), {"evaluator": None})})()


def _stem(w, b, conv_pads, pool_pads, relu, **pool_extra):
    info = _pool_info()
    return ConvStem(PreparedConv(w, b, _attrs(w, conv_pads)), relu, max_pool, _pool_attrs(pool_pads, **pool_extra),
                    info)


def _data(x_shape, w_shape, bias):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    w = RNG.standard_normal(w_shape).astype(np.float32)
    b = RNG.standard_normal(w_shape[0]).astype(np.float32) if bias else None
    return x, w, b


def _check(got, want):
    assert got.shape == want.shape and got.dtype == np.float32
    finite = np.isfinite(want)
    assert np.array_equal(np.isfinite(got), finite) and np.array_equal(got[~finite], want[~finite])
    scale = float(np.abs(want[finite]).max(initial=1.0))
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize("x_shape, w_shape, conv_pads, pool_pads, relu, bias", CASES)
def test_fused_stem_matches_reference(x_shape, w_shape, conv_pads, pool_pads, relu, bias):
    x, w, b = _data(x_shape, w_shape, bias)
    stem = _stem(w, b, conv_pads, pool_pads, relu)
    assert stem_geometry(stem.conv, stem.pool_attrs, x_shape) is not None  # the fast path, not the fallback
    want = reference(x, w, b, conv_pads, pool_pads, relu)
    _check(stem(x), want)
    _check(stem(x + 0), want)  # the second call reuses the prepared buffers
    assert stem._shapes[x_shape] is not None


@pytest.mark.parametrize("view", ["reversed columns", "channel slice", "empty batch"])
def test_inputs_that_are_views_or_empty(view):
    x, w, b = _data((2, 5, 30, 31), (6, 3, 7, 7), True)
    x = {"reversed columns": x[:, :3, :, ::-1], "channel slice": x[:, 1:4], "empty batch": x[:0, :3]}[view]
    _check(_stem(w, b, [3, 3, 3, 3], [1, 1, 1, 1], True)(x), reference(x, w, b, [3, 3, 3, 3], [1, 1, 1, 1], True))


@pytest.mark.parametrize("case", [CASES[2], CASES[5], CASES[8], CASES[14]])
def test_columns_in_bands(monkeypatch, case):
    """Large layers build and multiply each phase's columns in bands of positions."""
    monkeypatch.setattr(conv_stem, "_BAND", 1 << 11)
    x_shape, w_shape, conv_pads, pool_pads, relu, bias = case
    x, w, b = _data(x_shape, w_shape, bias)
    _check(_stem(w, b, conv_pads, pool_pads, relu)(x), reference(x, w, b, conv_pads, pool_pads, relu))


def test_oversized_planes_run_the_separate_kernels(monkeypatch):
    monkeypatch.setattr(conv_stem, "_PLANE_LIMIT", 1000)
    x, w, b = _data((1, 3, 40, 40), (8, 3, 7, 7), True)
    stem = _stem(w, b, [3, 3, 3, 3], [1, 1, 1, 1], True)
    _check(stem(x), reference(x, w, b, [3, 3, 3, 3], [1, 1, 1, 1], True))
    assert stem._shapes[x.shape] is None


# geometries the stem does not handle: the separate kernels run, with the same result
# (input shape, weight shape, conv attributes, pool attributes)
FALLBACKS = [
    ((1, 3, 20, 20), (4, 3, 3, 3), {"strides": [1, 1]}, {}),
    ((1, 3, 20, 20), (4, 3, 3, 3), {"dilations": [2, 2]}, {}),
    ((1, 3, 20, 20), (4, 3, 3, 3), {}, {"kernel_shape": [2, 2]}),
    ((1, 3, 20, 20), (4, 3, 3, 3), {}, {"strides": [1, 1]}),
    ((1, 3, 21, 21), (4, 3, 3, 3), {}, {"ceil_mode": 1}),
    ((1, 3, 20, 20), (4, 3, 3, 3), {}, {"pads": [2, 2, 0, 0]}),
    ((1, 3, 5, 5), (4, 3, 3, 3), {}, {}),  # a 2x2 conv output: no pooling window fits
    ((1, 40, 12, 12), (4, 40, 5, 5), {}, {}),  # many input channels: not a stem
]


@pytest.mark.parametrize("x_shape, w_shape, conv_extra, pool_extra", FALLBACKS)
def test_other_geometries_run_the_separate_kernels(x_shape, w_shape, conv_extra, pool_extra):
    x, w, b = _data(x_shape, w_shape, True)
    attrs = {**_attrs(w, [0, 0, 0, 0]), **conv_extra}
    pool = {**_pool_attrs([0, 0, 0, 0]), **pool_extra}
    stem = ConvStem(PreparedConv(w, b, attrs), True, max_pool, pool, _pool_info())
    assert stem_geometry(stem.conv, pool, x_shape) is None
    y = PreparedConv(w, b, attrs, True)(x)
    want = max_pool(type("Ctx", (), {"num_outputs": 1})(), y, **pool)
    got = stem(x)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


# auto_pad on the Conv and/or the MaxPool: (input shape, weight shape, conv auto_pad, pool auto_pad)
AUTO_PADS = [
    ((1, 3, 30, 30), (4, 3, 3, 3), "SAME_UPPER", "SAME_UPPER"),
    ((1, 3, 31, 29), (4, 3, 7, 7), "SAME_LOWER", "SAME_UPPER"),
    ((1, 3, 31, 29), (4, 3, 3, 3), "VALID", "SAME_LOWER"),
    ((1, 3, 32, 32), (4, 3, 7, 7), "SAME_UPPER", "VALID"),
]


@pytest.mark.parametrize("x_shape, w_shape, conv_auto_pad, pool_auto_pad", AUTO_PADS)
def test_auto_pad_stems_match_the_separate_kernels(x_shape, w_shape, conv_auto_pad, pool_auto_pad):
    x, w, b = _data(x_shape, w_shape, True)
    attrs = {**_attrs(w, None), "auto_pad": conv_auto_pad}
    pool = {**_pool_attrs(None), "auto_pad": pool_auto_pad}
    stem = ConvStem(PreparedConv(w, b, attrs), True, max_pool, pool, _pool_info())
    assert stem_geometry(stem.conv, pool, x_shape) is not None
    y = np.maximum(PreparedConv(w, b, attrs)(x).astype(np.float64), 0)
    want = max_pool(type("Ctx", (), {"num_outputs": 1})(), y, **pool)
    _check(stem(x), want)


def test_other_thread_and_dtype_use_the_separate_kernels():
    x, w, b = _data((1, 3, 30, 30), (4, 3, 7, 7), True)
    stem = _stem(w, b, [3, 3, 3, 3], [1, 1, 1, 1], True)
    want = reference(x, w, b, [3, 3, 3, 3], [1, 1, 1, 1], True)
    _check(stem(x), want)
    results = []
    worker = threading.Thread(target=lambda: results.append(stem(x)))
    worker.start()
    worker.join()
    _check(results[0], want)
    got = stem(x.astype(np.float64))  # the Conv kernel's dtype rules apply, not the stem's
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


# ----------------------------------------------------------------------------------- fusion pass
# node chains after Conv (reading X, constant W and B) -> ... ; "extra" outputs and readers
# (chain name, nodes, graph outputs, fused)
CHAINS = [
    ("conv relu pool", [("Relu", ["y"], ["r"]), ("MaxPool", ["r"], ["z"])], ["z"], True),
    ("conv pool", [("MaxPool", ["y"], ["z"])], ["z"], True),
    ("relu read elsewhere", [("Relu", ["y"], ["r"]), ("MaxPool", ["r"], ["z"]), ("Neg", ["r"], ["q"])],
     ["z", "q"], False),
    ("conv read elsewhere", [("Relu", ["y"], ["r"]), ("MaxPool", ["r"], ["z"]), ("Neg", ["y"], ["q"])],
     ["z", "q"], False),
    ("pool input is an output", [("Relu", ["y"], ["r"]), ("MaxPool", ["r"], ["z"])], ["z", "r"], False),
    ("conv output is an output", [("MaxPool", ["y"], ["z"])], ["z", "y"], False),
    ("pool indices", [("Relu", ["y"], ["r"]), ("MaxPool", ["r"], ["z", "i"])], ["z", "i"], False),
]


def _chain_model(chain, outputs, x_shape=(1, 3, 29, 31), w_shape=(6, 3, 7, 7)):
    w = RNG.standard_normal(w_shape).astype(np.float32)
    b = RNG.standard_normal(w_shape[0]).astype(np.float32)
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["y"], kernel_shape=list(w_shape[2:]), pads=[3, 3, 3, 3],
                              strides=[2, 2])]
    for op, ins, outs in chain:
        attrs = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]} if op == "MaxPool" else {}
        nodes.append(helper.make_node(op, ins, outs, **attrs))
    model = graph_model(nodes, {"X": tuple(x_shape)}, [(o, TensorProto.UNDEFINED) for o in outputs],
                        {"W": w, "B": b}, ir_version=10)
    return model, w, b


def _unfused(model):
    """The same model with W and B fed as inputs: nothing is constant, so nothing is fused."""
    fed = onnx.ModelProto()
    fed.CopyFrom(model)
    inits = {t.name: numpy_helper.to_array(t) for t in fed.graph.initializer}
    del fed.graph.initializer[:]
    for name, value in inits.items():
        fed.graph.input.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, value.shape))
    return fed, inits


@pytest.mark.parametrize("name, chain, outputs, fused", CHAINS, ids=[c[0] for c in CHAINS])
def test_fusion_chooses_the_stem_only_for_private_chains(name, chain, outputs, fused):
    model, w, b = _chain_model(chain, outputs)
    ev = Evaluator(model)
    assert any(type(s[0]) is ConvStem for s in ev._main.steps) == fused
    x = RNG.standard_normal((1, 3, 29, 31)).astype(np.float32)
    fed, inits = _unfused(model)
    want = Evaluator(fed).run(None, {"X": x, **inits})
    got = ev.run(None, {"X": x})
    for g, e in zip(got, want):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(e).max())))


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "benchmarks"))
STEM_MODELS = ["squeezenet", "shufflenet", "resnet50", "densenet121", "inception_v1", "inception_v2"]


@pytest.mark.parametrize("name", STEM_MODELS)
def test_light_model_stems_are_fused(name):
    """The first step of each light model with a stem is a ConvStem prepared for its input shape
    (the light models' outputs are checked by ``tests/conformance.py --folders``)."""
    from eval_light import load_case

    _, model, feeds, _ = load_case(name)
    ev = Evaluator(model)
    first = ev._main.steps[0][0]
    assert type(first) is ConvStem
    (x,) = feeds.values()
    assert stem_geometry(first.conv, first.pool_attrs, x.shape) is not None
