"""MaxPool, AveragePool and LpPool against a plain nested-loop reference written from the operator spec.

The evaluator reduces windows separably, without a padded copy, with strided or flat passes chosen
by geometry; the reference below visits every window and every tap one by one. Each geometry runs
through a one-node model. To add a case, add a line to ``GEOMETRIES`` (attributes as in the model).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from helpers import node_model

from onnxtext.evaluator import Evaluator

RNG = np.random.default_rng(7)

# (input shape, attributes)
GEOMETRIES = [
    ((1, 3, 9, 9), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}),
    ((1, 4, 12, 12), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1]}),
    ((1, 4, 11, 11), {"kernel_shape": [3, 3], "strides": [2, 2]}),
    ((1, 4, 10, 10), {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}),
    ((1, 4, 11, 10), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    ((2, 3, 8, 8), {"kernel_shape": [2, 2], "strides": [2, 2]}),
    ((1, 5, 14, 14), {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}),  # flat passes
    ((2, 5, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ((1, 3, 7, 7), {"kernel_shape": [7, 7]}),  # one window over the whole image
    ((1, 3, 6, 6), {"kernel_shape": [7, 7], "pads": [0, 0, 1, 1]}),
    ((1, 2, 9, 9), {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]}),
    ((1, 2, 16, 16), {"kernel_shape": [5, 5], "pads": [2, 2, 2, 2]}),
    ((1, 2, 12, 13), {"kernel_shape": [3, 3], "pads": [2, 2, 2, 2], "dilations": [2, 2]}),
    ((1, 2, 12, 13), {"kernel_shape": [3, 2], "strides": [2, 3], "pads": [2, 1, 0, 2], "dilations": [2, 3]}),
    ((1, 2, 10, 9), {"kernel_shape": [3, 3], "strides": [3, 2], "dilations": [2, 1], "ceil_mode": 1}),
    ((1, 2, 5, 5), {"kernel_shape": [3, 3], "pads": [2, 2, 2, 2]}),  # windows entirely in the padding
    ((1, 2, 4, 4), {"kernel_shape": [2, 2], "strides": [3, 3], "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    ((1, 3, 10, 11), {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 3, 10, 11), {"kernel_shape": [4, 3], "strides": [1, 2], "auto_pad": "SAME_LOWER"}),
    ((1, 3, 10, 11), {"kernel_shape": [3, 3], "strides": [2, 1], "auto_pad": "VALID"}),
    ((1, 3, 9, 9), {"kernel_shape": [1, 1], "strides": [2, 2]}),
    ((1, 3, 9, 9), {"kernel_shape": [1, 3], "pads": [0, 1, 0, 1]}),
    ((2, 3, 17), {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),  # 1-D
    ((2, 3, 17), {"kernel_shape": [4], "pads": [1, 2], "dilations": [2]}),
    ((1, 2, 6, 7, 8), {"kernel_shape": [3, 3, 3], "strides": [1, 2, 2], "pads": [1, 1, 1, 1, 1, 1]}),  # 3-D
    ((1, 2, 8, 8, 8), {"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1]}),
    # 3-wide unit-stride windows padded by one (pair passes with copied edges on narrow images)
    ((1, 4, 3, 3), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # the shortest line
    ((3, 4, 6, 6), {"kernel_shape": [3, 3], "strides": [1, 1], "pads": [1, 1, 1, 1]}),
    ((1, 6, 16, 16), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # the widest image for them
    ((1, 3, 17, 17), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # just wider: flat passes
    ((2, 3, 21, 5), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # tall and narrow
    ((1, 3, 5, 20), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # wide and short
    ((1, 3, 2, 9), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # a line of two
    ((2, 3, 8, 7), {"kernel_shape": [3, 1], "pads": [1, 0, 1, 0]}),
    ((2, 3, 8, 7), {"kernel_shape": [1, 3], "pads": [0, 1, 0, 1]}),
    ((1, 3, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 0, 0]}),
    ((1, 3, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "ceil_mode": 1}),
    ((1, 3, 7, 7), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "auto_pad": "NOTSET", "strides": [1, 2]}),
    ((2, 3, 9), {"kernel_shape": [3], "pads": [1, 1]}),
    ((1, 2, 5, 6, 7), {"kernel_shape": [3, 3, 3], "pads": [1, 1, 1, 1, 1, 1]}),
    ((0, 3, 5, 5), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),  # an empty batch
    # strided axes longer than stride * outputs (odd images), every window inside
    ((2, 3, 13, 13), {"kernel_shape": [3, 3], "strides": [2, 2]}),
    ((2, 3, 9, 7), {"kernel_shape": [3, 2], "strides": [2, 3]}),  # the last column read by no window
    ((1, 3, 11, 11), {"kernel_shape": [3, 3], "strides": [2, 2], "dilations": [2, 2]}),
    ((1, 3, 12, 11), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 0]}),
    ((1, 3, 7, 11), {"kernel_shape": [1, 3], "strides": [1, 2]}),
    ((1, 2, 7, 7, 9), {"kernel_shape": [3, 3, 3], "strides": [2, 2, 2]}),
    # disjoint tiles (stride = kernel, no padding): MaxPool's strided maximums straight on the input
    ((2, 16, 32, 32), {"kernel_shape": [2, 2], "strides": [2, 2], "pads": [0, 0, 0, 0], "dilations": [1, 1]}),
    ((1, 3, 9, 7), {"kernel_shape": [2, 2], "strides": [2, 2]}),  # the last row and column in no tile
    ((1, 2, 9, 10), {"kernel_shape": [3, 3], "strides": [3, 3]}),
    ((1, 2, 8, 9), {"kernel_shape": [2, 1], "strides": [2, 1]}),
    ((1, 2, 8, 9), {"kernel_shape": [1, 3], "strides": [1, 3]}),
    ((1, 2, 9, 9), {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1}),  # a partial last tile
    ((1, 2, 9, 9), {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "VALID"}),
    ((1, 2, 8, 8), {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((1, 2, 7, 8), {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"}),  # padded: no tiles
    ((2, 3, 10), {"kernel_shape": [2], "strides": [2]}),  # 1-D tiles: the separable passes
    # unit-stride max windows of 7 taps or more: doubling passes (YOLOv5's SPP pools)
    ((1, 3, 13, 13), {"kernel_shape": [13, 13], "pads": [6, 6, 6, 6]}),
    ((2, 4, 10, 11), {"kernel_shape": [9, 9], "pads": [4, 4, 4, 4]}),
    ((1, 2, 9, 12), {"kernel_shape": [8, 7], "pads": [3, 2, 4, 4]}),  # a power of two, uneven pads
    ((1, 2, 12, 12), {"kernel_shape": [7, 7]}),  # no padding: straight on the input
    ((1, 2, 5, 5), {"kernel_shape": [7, 7], "pads": [7, 7, 7, 7]}),  # windows entirely in the padding
    ((1, 2, 10, 10), {"kernel_shape": [7, 7], "pads": [3, 3, 3, 3], "ceil_mode": 1}),
    ((1, 2, 10, 10), {"kernel_shape": [8, 8], "auto_pad": "SAME_UPPER"}),
    ((2, 3, 20), {"kernel_shape": [9], "pads": [4, 4]}),  # 1-D
    ((1, 1, 8, 8, 8), {"kernel_shape": [7, 7, 7], "pads": [3, 3, 3, 3, 3, 3]}),  # 3-D
    ((1, 2, 11, 11), {"kernel_shape": [9, 3], "strides": [1, 2], "pads": [4, 1, 4, 1]}),  # one axis of each
    ((1, 2, 16, 16), {"kernel_shape": [7, 7], "dilations": [2, 2], "pads": [6, 6, 6, 6]}),  # dilated: per tap
]


# ---------------------------------------------------------------------------------- the reference
def geometry(shape, kernel_shape, strides=None, pads=None, dilations=None, auto_pad="NOTSET", ceil_mode=0):
    """(pads_begin, pads_end, output shape) per the pooling operators' shape rules."""
    nd = len(kernel_shape)
    strides = strides or [1] * nd
    dilations = dilations or [1] * nd
    spatial = shape[2:]
    extent = [(k - 1) * d + 1 for k, d in zip(kernel_shape, dilations)]
    if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
        out = [math.ceil(i / s) for i, s in zip(spatial, strides)]
        total = [max(0, (o - 1) * s + e - i) for o, s, e, i in zip(out, strides, extent, spatial)]
        small = [t // 2 for t in total]
        big = [t - h for t, h in zip(total, small)]
        return (small, big, out) if auto_pad == "SAME_UPPER" else (big, small, out)
    pads = [0] * (2 * nd) if auto_pad == "VALID" or not pads else pads
    begin, end = pads[:nd], pads[nd:]
    out = []
    for i, b, e, x, s in zip(spatial, begin, end, extent, strides):
        span = i + b + e - x
        o = (math.ceil(span / s) if ceil_mode else span // s) + 1
        if ceil_mode and (o - 1) * s >= i + b:  # a last window starting in the end padding is dropped
            o -= 1
        out.append(o)
    return begin, end, out


def reference_pool(x, kind, count_include_pad=0, p=2, **attrs):
    """Visit every window and tap: max (padding ignored), average, or Lp norm."""
    begin, end, out = geometry(x.shape, **attrs)
    kernel_shape = attrs["kernel_shape"]
    nd = len(kernel_shape)
    strides = attrs.get("strides") or [1] * nd
    dilations = attrs.get("dilations") or [1] * nd
    spatial = x.shape[2:]
    y = np.zeros(x.shape[:2] + tuple(out), dtype=np.float64)
    for n, c in itertools.product(range(x.shape[0]), range(x.shape[1])):
        for pos in itertools.product(*[range(o) for o in out]):
            inside, padded = [], 0
            for tap in itertools.product(*[range(k) for k in kernel_shape]):
                idx = [o * s + t * d - b for o, s, t, d, b in zip(pos, strides, tap, dilations, begin)]
                if all(0 <= i < size for i, size in zip(idx, spatial)):
                    inside.append(float(x[(n, c) + tuple(idx)]))
                elif all(-b <= i < size + e for i, b, size, e in zip(idx, begin, spatial, end)):
                    padded += 1  # a tap on the declared padding (not on ceil_mode's overhang)
            if kind == "max":
                v = max(inside) if inside else -np.inf
            elif kind == "avg":
                count = len(inside) + (padded if count_include_pad else 0)
                v = sum(inside) / count if count else np.nan
            else:
                v = sum(abs(t) ** p for t in inside) ** (1.0 / p)
            y[(n, c) + pos] = v
    return y


# ---------------------------------------------------------------------------------- running
def run_pool(op, x, attrs, opset=19):
    return Evaluator(node_model(op, {"x": x}, attrs, opset=opset)).run(None, {"x": x})[0]


def windows_fit(attrs):
    """Whether every output window holds an input tap (else a max is -inf / an average NaN by spec)."""
    return not (attrs.get("pads") and max(attrs["pads"]) >= min(attrs["kernel_shape"]))


@pytest.mark.parametrize("shape,attrs", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_max_pool(shape, attrs, dtype):
    x = RNG.standard_normal(shape).astype(dtype)
    got = run_pool("MaxPool", x, attrs)
    want = reference_pool(x, "max", **attrs)
    assert got.dtype == dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want.astype(dtype))


@pytest.mark.parametrize("shape,attrs", GEOMETRIES)
@pytest.mark.parametrize("dtype", [np.int8, np.uint8])
def test_max_pool_integers(shape, attrs, dtype):
    info = np.iinfo(dtype)
    x = RNG.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    got = run_pool("MaxPool", x, attrs)
    want = reference_pool(x, "max", **attrs)
    # a window entirely in the padding has no tap: its max is the padding value, the type's minimum
    np.testing.assert_array_equal(got, np.where(np.isinf(want), info.min, want).astype(dtype))


@pytest.mark.parametrize("shape,attrs", GEOMETRIES)
@pytest.mark.parametrize("count_include_pad", [0, 1])
def test_average_pool(shape, attrs, count_include_pad):
    x = RNG.standard_normal(shape).astype(np.float32)
    got = run_pool("AveragePool", x, dict(attrs, count_include_pad=count_include_pad))
    want = reference_pool(x, "avg", count_include_pad=count_include_pad, **attrs)
    assert got.dtype == np.float32 and got.shape == want.shape
    if count_include_pad == 0 and not windows_fit(attrs):
        want = np.where(np.isnan(want), got, want)  # windows of padding only: 0/0, left to the kernel
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shape,attrs", GEOMETRIES[:8])
def test_average_pool_float16(shape, attrs):
    x = RNG.standard_normal(shape).astype(np.float16)
    got = run_pool("AveragePool", x, attrs)
    want = reference_pool(x, "avg", **attrs)
    assert got.dtype == np.float16
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("shape,attrs", [g for g in GEOMETRIES if "ceil_mode" not in g[1]])
@pytest.mark.parametrize("p", [1, 2, 3])
def test_lp_pool(shape, attrs, p):
    x = RNG.standard_normal(shape).astype(np.float32)
    got = run_pool("LpPool", x, dict(attrs, p=p), opset=18)
    want = reference_pool(x, "lp", p=p, **attrs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_input_is_left_unchanged():
    x = RNG.standard_normal((1, 3, 9, 9)).astype(np.float32)
    before = x.copy()
    for op in ("MaxPool", "AveragePool"):
        run_pool(op, x, {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})
    np.testing.assert_array_equal(x, before)


# geometries whose passes read across the border of one line or image into the next and repair it
ISOLATION = [
    ((2, 3, 6, 6), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ((2, 3, 20, 20), {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}),
    ((2, 3, 12, 12), {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [0, 0, 1, 1]}),
    ((2, 3, 11, 11), {"kernel_shape": [3, 3], "strides": [2, 2]}),
]


@pytest.mark.parametrize("shape,attrs", ISOLATION)
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_images_do_not_leak_into_each_other(shape, attrs, op):
    """NaN and infinities on every image's border rows and columns stay in their own image: the
    pool of the whole batch equals the pools of its images run one at a time."""
    x = RNG.standard_normal(shape).astype(np.float32)
    x[:, 0, 0, :] = np.nan
    x[:, 1, -1, :] = np.inf
    x[:, 2, :, 0] = -np.inf
    x[1, :, :, -1] = np.nan
    whole = run_pool(op, x, attrs)
    for n, c in itertools.product(range(shape[0]), range(shape[1])):
        alone = run_pool(op, np.ascontiguousarray(x[n:n + 1, c:c + 1]), attrs)
        np.testing.assert_array_equal(whole[n:n + 1, c:c + 1], alone)


@pytest.mark.parametrize("shape,attrs", ISOLATION[:2] + [GEOMETRIES[2], ((2, 3, 10, 12), {"kernel_shape": [2, 2], "strides": [2, 2]})])
@pytest.mark.parametrize("op", ["MaxPool", "AveragePool"])
def test_transposed_input(shape, attrs, op):
    """An input that is a transposed view (not contiguous) gives the same result as its copy."""
    x = RNG.standard_normal(shape).astype(np.float32).swapaxes(2, 3)
    np.testing.assert_array_equal(run_pool(op, x, attrs), run_pool(op, np.ascontiguousarray(x), attrs))


@pytest.mark.parametrize("shape,attrs", [g for g in GEOMETRIES if max(g[1]["kernel_shape"]) >= 7])
@pytest.mark.parametrize("dtype", [np.float32, np.int8])
def test_doubling_passes_equal_per_tap_passes(shape, attrs, dtype, monkeypatch):
    """Unit-stride max windows of 7 taps or more are reduced by doubling windows; the per-tap passes
    (switched on here by raising the threshold) give the same values bit for bit, NaN and
    infinities included."""
    from onnxtext.evaluator.kernels import pool

    if dtype == np.float32:
        x = RNG.choice(np.array([np.nan, -np.inf, np.inf, -1.0, -0.0, 0.0, 2.0], np.float32), size=shape)
        x = np.where(RNG.random(shape) < 0.8, RNG.standard_normal(shape).astype(np.float32), x)
    else:
        x = RNG.integers(-128, 127, shape, endpoint=True).astype(dtype)
    pool._passes.cache_clear()
    try:
        doubled = run_pool("MaxPool", x, attrs)
        monkeypatch.setattr(pool, "_DOUBLING_MIN_TAPS", 1 << 30)
        pool._passes.cache_clear()
        per_tap = run_pool("MaxPool", x, attrs)
    finally:
        pool._passes.cache_clear()
    np.testing.assert_array_equal(doubled, per_tap)
    assert np.signbit(doubled).tolist() == np.signbit(per_tap).tolist()
