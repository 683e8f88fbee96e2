"""Every fast convolution path against a direct nested-sum convolution written here, independently.

The reference below is the definition of Conv: for each output position, the sum over input channels
of the group and kernel taps of ``x[padded position] * w``, positions outside the input being zero.
It runs in float64 on small random inputs. The paths under test are the general ``Conv`` kernel and
:class:`PreparedConv` (the plan's per-shape prepared conv: pointwise, im2col, banded and blocked
depthwise closures), called twice per shape (the second call reuses the prepared buffers).
To add a geometry, add a line to ``GEOMETRIES``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from onnxtext.evaluator.kernels import conv as conv_module
from onnxtext.evaluator.kernels import conv_depthwise
from onnxtext.evaluator.kernels.conv import conv, shared_image
from onnxtext.evaluator.kernels.conv_fused import ConvAdd
from onnxtext.evaluator.kernels.conv_prepared import PreparedConv
from onnxtext.evaluator.kernels.conv_relu import relu_inplace

RNG = np.random.default_rng(7)


def reference_conv(x, w, b, group, strides, dilations, pads):
    """Direct definition of ONNX Conv (NOTSET padding), float64, by nested sums."""
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    n, c = x.shape[:2]
    m = w.shape[0]
    nd = x.ndim - 2
    kshape = w.shape[2:]
    begin, end = pads[:nd], pads[nd:]
    out_shape = [(x.shape[2 + i] + begin[i] + end[i] - ((kshape[i] - 1) * dilations[i] + 1)) // strides[i] + 1
                 for i in range(nd)]
    cg, mg = c // group, m // group
    y = np.zeros((n, m) + tuple(out_shape))
    for bi, oc in itertools.product(range(n), range(m)):
        g = oc // mg
        for o in itertools.product(*[range(s) for s in out_shape]):
            total = 0.0
            for ic in range(cg):
                for k in itertools.product(*[range(s) for s in kshape]):
                    pos = [o[i] * strides[i] + k[i] * dilations[i] - begin[i] for i in range(nd)]
                    if all(0 <= p < x.shape[2 + i] for i, p in enumerate(pos)):
                        total += x[(bi, g * cg + ic) + tuple(pos)] * w[(oc, ic) + k]
            y[(bi, oc) + o] = total + (b[oc] if b is not None else 0.0)
    return y


# (input shape, weight shape, group, strides, dilations, pads)
GEOMETRIES = [
    # depthwise, unit strides
    ((1, 5, 7, 6), (5, 1, 3, 3), 5, [1, 1], [1, 1], [1, 1, 1, 1]),
    ((1, 3, 17, 6), (3, 1, 3, 3), 3, [1, 1], [1, 1], [1, 1, 1, 1]),
    ((2, 2, 19, 5), (2, 1, 3, 2), 2, [1, 1], [2, 1], [2, 1, 0, 0]),
    ((1, 3, 12, 9), (3, 1, 5, 5), 3, [1, 1], [1, 1], [2, 2, 2, 2]),  # 5x5, at most 15 rows: short rows
    ((2, 3, 5, 5), (3, 1, 3, 3), 3, [1, 1], [1, 1], [0, 0, 0, 0]),
    ((1, 4, 9, 8), (4, 1, 3, 3), 4, [1, 1], [2, 2], [2, 2, 2, 2]),
    ((1, 3, 6, 7), (3, 1, 2, 3), 3, [1, 1], [1, 2], [0, 1, 2, 1]),
    ((1, 4, 5, 5), (4, 1, 5, 5), 4, [1, 1], [1, 1], [2, 2, 2, 2]),
    # depthwise, strided (phase split)
    ((1, 5, 8, 8), (5, 1, 3, 3), 5, [2, 2], [1, 1], [1, 1, 1, 1]),
    ((2, 3, 9, 7), (3, 1, 3, 3), 3, [2, 2], [1, 1], [1, 1, 1, 1]),
    ((1, 4, 11, 10), (4, 1, 3, 3), 4, [3, 2], [1, 1], [1, 0, 2, 1]),
    ((1, 3, 10, 9), (3, 1, 3, 2), 3, [2, 3], [2, 1], [1, 1, 0, 0]),
    ((1, 2, 12, 12), (2, 1, 2, 2), 2, [4, 4], [1, 1], [0, 0, 0, 0]),  # phases no tap reads
    ((1, 3, 7, 7), (3, 1, 3, 3), 3, [2, 2], [1, 1], [0, 0, 0, 0]),
    ((1, 3, 6, 6), (3, 1, 3, 3), 3, [2, 1], [1, 1], [3, 3, 3, 3]),  # padding wider than the kernel
    # depthwise, 25 taps or more, unit strides, at least 4 output rows per padded row: row bands
    # (5x5 images of more than 15 rows: shorter ones take the short-rows closure)
    ((1, 3, 26, 11), (3, 1, 5, 5), 3, [1, 1], [1, 1], [2, 2, 2, 2]),
    ((2, 4, 27, 9), (4, 1, 5, 7), 4, [1, 1], [1, 1], [2, 3, 1, 2]),
    ((1, 2, 28, 13), (2, 1, 5, 5), 2, [1, 1], [1, 2], [0, 4, 4, 0]),
    ((1, 3, 31, 8), (3, 1, 6, 5), 3, [1, 1], [1, 1], [0, 0, 0, 0]),
    # depthwise, images of at most 3/4 the kernel's rows: short-rows closure (row-Toeplitz weights)
    ((3, 6, 2, 9), (6, 1, 5, 5), 6, [1, 1], [1, 1], [2, 2, 2, 2]),
    ((2, 5, 3, 11), (5, 1, 5, 5), 5, [2, 1], [1, 1], [2, 2, 2, 2]),
    ((1, 4, 2, 8), (4, 1, 3, 3), 4, [1, 2], [1, 1], [1, 1, 1, 1]),
    ((1, 3, 3, 10), (3, 1, 5, 3), 3, [1, 1], [2, 1], [4, 1, 4, 1]),  # dilated rows
    ((1, 2, 1, 6), (2, 1, 3, 3), 2, [1, 1], [1, 1], [3, 1, 3, 1]),  # output rows reading only padding
    ((1, 3, 2, 12), (3, 1, 5, 3), 3, [2, 3], [1, 2], [1, 0, 3, 0]),  # input columns no tap reads
    # depthwise, wider outputs
    ((1, 3, 9, 20), (3, 1, 3, 3), 3, [1, 1], [1, 1], [1, 1, 1, 1]),
    ((2, 2, 8, 33), (2, 1, 3, 3), 2, [2, 2], [1, 1], [1, 1, 1, 1]),
    ((1, 2, 7, 19), (2, 1, 3, 2), 2, [1, 1], [1, 2], [0, 3, 1, 0]),
    ((1, 4, 13), (4, 1, 3), 4, [2], [1], [1, 1]),  # 1-D
    ((1, 3, 4, 5, 6), (3, 1, 3, 3, 3), 3, [1, 2, 2], [1, 1, 1], [1, 1, 1, 1, 1, 1]),  # 3-D
    # not depthwise: pointwise, grouped, im2col, depth multiplier
    ((1, 6, 5, 5), (4, 6, 1, 1), 1, [1, 1], [1, 1], [0, 0, 0, 0]),
    ((2, 6, 5, 5), (6, 2, 1, 1), 3, [1, 1], [1, 1], [0, 0, 0, 0]),
    ((1, 3, 4, 5), (8, 3, 1, 1), 1, [1, 1], [1, 1], [0, 0, 0, 0]),  # more outputs: bias by the matmul
    ((1, 4, 7, 7), (6, 4, 1, 1), 1, [2, 2], [1, 1], [0, 0, 0, 0]),
    ((1, 3, 9, 9), (5, 3, 3, 3), 1, [2, 2], [1, 1], [1, 1, 1, 1]),
    ((1, 4, 8, 7), (6, 2, 3, 2), 2, [1, 2], [2, 1], [1, 0, 2, 1]),
    ((1, 4, 8, 8), (8, 1, 3, 3), 4, [1, 1], [1, 1], [1, 1, 1, 1]),
    ((1, 3, 8, 8), (6, 3, 1, 1), 1, [1, 1], [1, 1], [1, 1, 1, 1]),  # padded 1x1
    # patch convs, strides equal to the kernel (conv_patches): ViT-like, Swin-like stem, 1-D
    ((2, 3, 16, 16), (12, 3, 8, 8), 1, [8, 8], [1, 1], [0, 0, 0, 0]),
    ((1, 3, 12, 8), (5, 3, 4, 4), 1, [4, 4], [1, 1], [0, 0, 0, 0]),
    ((1, 2, 12), (3, 2, 4), 1, [4], [1], [0, 0]),
    # few outputs from many channels: shifted matmuls over a flat padded image (conv_shifted)
    ((1, 8, 6, 7), (3, 8, 3, 3), 1, [1, 1], [1, 1], [1, 1, 1, 1]),
    ((2, 10, 5, 6), (4, 10, 3, 3), 1, [1, 1], [1, 1], [0, 1, 2, 1]),
    ((1, 8, 9, 8), (2, 8, 3, 2), 1, [1, 1], [2, 1], [2, 1, 2, 1]),
    ((1, 8, 3, 3), (4, 8, 3, 3), 1, [1, 1], [1, 1], [0, 0, 0, 0]),  # one output position
    ((1, 6, 7), (3, 6, 5), 1, [1], [1], [2, 2]),  # 1-D
    ((1, 8, 4, 5, 6), (4, 8, 3, 3, 3), 1, [1, 1, 1], [1, 1, 1], [1, 1, 1, 1, 1, 1]),  # 3-D
    # short output rows, unit strides, one group: im2col over the flat padded image, cropped after
    ((2, 3, 8, 8), (5, 3, 3, 3), 1, [1, 1], [1, 1], [1, 1, 1, 1]),
    ((1, 4, 7, 9), (6, 4, 3, 2), 1, [1, 1], [2, 1], [1, 0, 2, 1]),
    ((1, 3, 5, 6), (4, 3, 3, 3), 1, [1, 1], [1, 1], [2, 1, 0, 2]),
    ((2, 3, 12), (4, 3, 3), 1, [1], [1], [1, 1]),  # 1-D
    ((1, 2, 4, 8, 8), (4, 2, 3, 3, 3), 1, [1, 1, 1], [1, 1, 1], [1, 1, 1, 1, 1, 1]),  # 3-D
]

# the geometries PreparedConv runs as shifted matmuls (one group, unit strides, at most half as many
# outputs as inputs)
SHIFTED = [g for g in GEOMETRIES if g[2] == 1 and set(g[3]) == {1} and 2 * g[1][0] <= g[0][1] and
           any(k > 1 for k in g[1][2:])]


# the geometries PreparedConv runs as im2col over the flat padded image (one group, unit strides,
# at most 32 outputs, output rows of at most 16 with padded rows at most 1.5x as long, not shifted)
FLAT = [g for g in GEOMETRIES if g[2] == 1 and set(g[3]) == {1} and g not in SHIFTED and
        any(k > 1 for k in g[1][2:]) and g[0][-1] + g[5][len(g[3]) - 1] + g[5][-1] <= 1.5 *
        (g[0][-1] + g[5][len(g[3]) - 1] + g[5][-1] - (g[1][-1] - 1) * g[4][-1])]


def _case(geometry, with_bias):
    xs, ws, group, strides, dilations, pads = geometry
    x = RNG.standard_normal(xs).astype(np.float32)
    w = RNG.standard_normal(ws).astype(np.float32)
    b = RNG.standard_normal(ws[0]).astype(np.float32) if with_bias else None
    attrs = {"auto_pad": "NOTSET", "group": group, "strides": strides, "dilations": dilations, "pads": pads,
             "kernel_shape": list(ws[2:])}
    return x, w, b, attrs, reference_conv(x, w, b, group, strides, dilations, pads)


@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_general_kernel_matches_the_definition(geometry, with_bias):
    x, w, b, attrs, expected = _case(geometry, with_bias)
    np.testing.assert_allclose(conv(x, w, b, **attrs), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_prepared_conv_matches_the_definition(geometry, relu):
    x, w, b, attrs, expected = _case(geometry, True)
    if relu:
        expected = np.maximum(expected, 0)
    prepared = PreparedConv(w, b, attrs, relu)
    for _ in range(2):  # the second call runs on the buffers prepared by the first
        x2 = RNG.standard_normal(x.shape).astype(np.float32)
        y = prepared(x)
        assert y.shape == expected.shape and y.flags.c_contiguous
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
        x = x2
        expected = reference_conv(x, w, b, attrs["group"], attrs["strides"], attrs["dilations"], attrs["pads"])
        if relu:
            expected = np.maximum(expected, 0)


@pytest.mark.parametrize("geometry", [g for g in GEOMETRIES if g[2] == g[0][1] and g[1][0] == g[2]], ids=str)
def test_depthwise_blocks_of_one_channel(geometry, monkeypatch):
    """The smallest block (one channel per copy and matmul) still covers every channel and batch."""
    monkeypatch.setattr(conv_depthwise, "BLOCK", 1)
    x, w, b, attrs, expected = _case(geometry, True)
    y = PreparedConv(w, b, attrs)(x)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_prepared_conv_writes_into_a_channel_slice(geometry):
    """With ``out`` (a slice of a bigger buffer along channels, as a Concat uses) the result lands in
    the slice and the rest of the buffer is untouched."""
    x, w, b, attrs, expected = _case(geometry, True)
    prepared = PreparedConv(w, b, attrs, relu=True)
    n, m = expected.shape[:2]
    for _ in range(2):
        buffer = np.full((n, m + 3) + expected.shape[2:], 7.0, np.float32)
        result = prepared(x, buffer[:, 2:2 + m])
        assert np.shares_memory(result, buffer)
        np.testing.assert_allclose(buffer[:, 2:2 + m], np.maximum(expected, 0), rtol=1e-4, atol=1e-4)
        assert (buffer[:, :2] == 7).all() and (buffer[:, 2 + m:] == 7).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("view", ["whole", "channel slice", "transposed"])
def test_relu_inplace_is_maximum_with_zero(dtype, view):
    values = np.array([np.nan, -np.inf, -1.5, -0.0, 0.0, 2.5, np.inf], dtype)
    y = RNG.choice(values, size=(3, 5, 4, 6)).astype(dtype)
    y = {"whole": y, "channel slice": y[:, 1:4], "transposed": y.transpose(0, 2, 1, 3)}[view]
    expected = np.maximum(y, dtype(0))
    result = relu_inplace(y)
    assert result is y
    np.testing.assert_array_equal(y, expected)  # NaN stays NaN
    np.testing.assert_array_equal(np.signbit(y), np.signbit(expected))  # the sign of zeros too


def test_shuffled_conv_writes_into_a_channel_slice():
    """A ShuffledConv given ``out`` (as a Concat chain may) fills it with the shuffled result."""
    from onnxtext.evaluator.kernels.conv_prepared import ShuffledConv

    class Shuffle:  # a channel shuffle of 2 groups, whatever the shape
        def groups(self, shape):
            return 2

        def run(self, y):
            raise AssertionError("the shuffle applies")

    x = RNG.standard_normal((1, 4, 5, 5)).astype(np.float32)
    w = RNG.standard_normal((6, 2, 1, 1)).astype(np.float32)
    attrs = {"auto_pad": "NOTSET", "group": 2, "kernel_shape": [1, 1]}
    expected = reference_conv(x, w, None, 2, [1, 1], [1, 1], [0, 0, 0, 0])
    expected = expected.reshape(1, 2, 3, 5, 5).transpose(0, 2, 1, 3, 4).reshape(1, 6, 5, 5)
    buffer = np.zeros((1, 8, 5, 5), np.float32)
    ShuffledConv(w, None, attrs, False, Shuffle())(x, buffer[:, 1:7])
    np.testing.assert_allclose(buffer[:, 1:7], expected, rtol=1e-4, atol=1e-4)
    assert (buffer[:, 0] == 0).all() and (buffer[:, 7] == 0).all()


def test_depthwise_layers_sharing_a_geometry_but_not_a_kernel():
    """Layers of the same input geometry share padded images; a different kernel (longer reads past
    the image) must get a buffer of its own size, not one sized for another kernel."""
    key = ((1, 4, 9, 9), (1, 1), (1, 1), ((0, 0),), (11, 11))
    first = shared_image((1, 4, 1, 145), np.float32, key)
    second = shared_image((1, 4, 1, 169), np.float32, key)
    assert first.shape == (1, 4, 1, 145) and second.shape == (1, 4, 1, 169) and not second.any()
    assert shared_image((1, 4, 1, 145), np.float32, key) is first
    x = RNG.standard_normal((1, 4, 9, 9)).astype(np.float32)
    for ws, dilations, pads in [((4, 1, 3, 3), [1, 1], [1, 1, 1, 1]), ((4, 1, 3, 3), [2, 2], [1, 1, 1, 1]),
                                ((4, 1, 5, 5), [1, 1], [1, 1, 1, 1])]:
        w = RNG.standard_normal(ws).astype(np.float32)
        attrs = {"auto_pad": "NOTSET", "group": 4, "strides": [1, 1], "dilations": dilations, "pads": pads}
        expected = reference_conv(x, w, None, 4, [1, 1], dilations, pads)
        np.testing.assert_allclose(PreparedConv(w, None, attrs)(x), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("geometry", SHIFTED, ids=str)
def test_few_outputs_run_as_shifted_matmuls(geometry):
    """The table's shifted geometries really take that path (the tests above then check its results)."""
    x, w, b, attrs, _ = _case(geometry, True)
    prepared = PreparedConv(w, b, attrs)
    prepared(x)
    assert prepared._shapes[x.shape].__name__ == "shifted_conv"


@pytest.mark.parametrize("geometry", FLAT, ids=str)
def test_short_rows_run_as_flat_image_columns(geometry):
    """The table's short-row geometries really take that path, also writing into a given result."""
    x, w, b, attrs, expected = _case(geometry, True)
    prepared = PreparedConv(w, b, attrs)
    prepared(x)
    assert prepared._shapes[x.shape].__name__ == "flat_columns_conv"
    _assert_writes_into_a_channel_slice(prepared, x, expected)


def _assert_writes_into_a_channel_slice(prepared, x, expected):
    """``prepared(x, out)`` with ``out`` a channel slice of a larger buffer (a Concat's) fills the
    slice with ``expected`` and leaves the other channels alone."""
    wide = np.full((x.shape[0], expected.shape[1] + 2) + expected.shape[2:], np.nan, np.float32)
    y = prepared(x, wide[:, 1:-1])
    assert np.shares_memory(y, wide)
    np.testing.assert_allclose(wide[:, 1:-1], expected, rtol=1e-4, atol=1e-4)
    assert np.isnan(wide[:, 0]).all() and np.isnan(wide[:, -1]).all()


@pytest.mark.parametrize("geometry", [g for g in GEOMETRIES if g[2] == g[0][1] == g[1][0] and g[1][1] == 1 and
                                      len(g[1]) == 4 and g[1][2] * g[1][3] >= 25 and set(g[3]) == {1} and
                                      len(g[0]) == 4 and 4 * (g[1][2] - 1) * g[4][0] <= g[0][2] + g[5][0] +
                                      g[5][2] - (g[1][2] - 1) * g[4][0]], ids=str)
def test_large_depthwise_kernels_run_as_row_bands(geometry):
    """The table's large-kernel depthwise geometries really take that path, also writing into a
    given result (a channel slice of a larger buffer)."""
    x, w, b, attrs, expected = _case(geometry, True)
    prepared = PreparedConv(w, b, attrs)
    np.testing.assert_allclose(prepared(x), expected, rtol=1e-4, atol=1e-4)
    assert prepared._shapes[x.shape].__name__ == "depthwise_bands"
    _assert_writes_into_a_channel_slice(prepared, x, expected)


@pytest.mark.parametrize("geometry", [g for g in GEOMETRIES if g[2] == g[0][1] == g[1][0] and g[1][1] == 1 and
                                      len(g[1]) == 4 and g[0][2] <= g[1][2] * (
                                          3 if set(g[3]) == {1} and g[1][2] >= 5 else 0.75)], ids=str)
def test_short_images_run_as_short_rows(geometry):
    """The table's depthwise geometries with at most 3/4 as many image rows as kernel rows, or with
    unit strides and kernels of 5 rows or more at most 3 per kernel row, take the short-rows
    closure, also writing into a given result (a channel slice of a larger buffer)."""
    x, w, b, attrs, expected = _case(geometry, True)
    prepared = PreparedConv(w, b, attrs)
    np.testing.assert_allclose(prepared(x), expected, rtol=1e-4, atol=1e-4)
    assert prepared._shapes[x.shape].__name__ == "depthwise_short_rows"
    _assert_writes_into_a_channel_slice(prepared, x, expected)
    x, w, _, attrs, expected = _case(geometry, False)  # no bias: no row of ones
    np.testing.assert_allclose(PreparedConv(w, None, attrs)(x), expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("geometry", SHIFTED, ids=str)
def test_general_kernel_shifted_matmuls(geometry, monkeypatch):
    """The general kernel's shifted path (taken for long rows; forced here on the table's small
    images) prepares the same closure for one call, in a per-call zeroed scratch image."""
    monkeypatch.setattr(conv_module, "_SHIFTED_MIN_LENGTH", 0)
    x, w, b, attrs, expected = _case(geometry, True)
    for _ in range(2):  # the scratch image is reused: its border must be zero again
        np.testing.assert_allclose(conv(x, w, b, **attrs), expected, rtol=1e-4, atol=1e-4)


# (ufunc, operand kind) for PreparedConv.combined: a residual Add's other operand of the result's
# shape, one broadcast over the batch, a requantization's per-channel multiplier, a scalar one
EPILOGUES = [(np.add, "result"), (np.add, "one sample"), (np.multiply, "per channel"), (np.multiply, "scalar")]


def _operand(kind, shape):
    if kind == "result":
        return RNG.standard_normal(shape).astype(np.float32)
    if kind == "one sample":
        return RNG.standard_normal((1,) + shape[1:]).astype(np.float32)
    if kind == "per channel":
        return RNG.uniform(0.01, 2, (shape[1],) + (1,) * (len(shape) - 2)).astype(np.float32)
    return np.float32(0.37)


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("epilogue", EPILOGUES, ids=lambda e: f"{e[0].__name__}-{e[1]}")
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_combined_applies_the_epilogue_after_the_conv(geometry, epilogue, relu):
    """``combined(x, ufunc, operand)`` is ``ufunc(conv(x), operand)`` on every path (the flat-image
    columns apply it in their crop, the others after the conv), on the first call and on the
    prepared buffers, bit for bit the prepared conv followed by the ufunc."""
    ufunc, kind = epilogue
    x, w, b, attrs, expected = _case(geometry, True)
    prepared = PreparedConv(w, b, attrs, relu)
    for _ in range(2):
        operand = _operand(kind, expected.shape)
        want = ufunc(np.maximum(expected, 0) if relu else expected, operand)
        y = prepared.combined(x, ufunc, operand)
        assert y.shape == expected.shape and y.dtype == np.float32
        np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(y, ufunc(prepared(x), operand))
        x = RNG.standard_normal(x.shape).astype(np.float32)
        expected = reference_conv(x, w, b, attrs["group"], attrs["strides"], attrs["dilations"], attrs["pads"])


@pytest.mark.parametrize("geometry", FLAT[:2], ids=str)
def test_combined_refuses_an_operand_that_widens_the_result(geometry):
    """An operand broadcasting the result to a larger shape raises (the caller runs the original
    kernel then), before anything is returned."""
    x, w, b, attrs, expected = _case(geometry, True)
    prepared = PreparedConv(w, b, attrs)
    prepared(x)
    wider = np.ones((3,) + expected.shape[1:] if expected.shape[0] == 1 else (2,) + expected.shape, np.float32)
    with pytest.raises(ValueError):
        prepared.combined(x, np.add, wider)


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("other", ["result", "one sample", "wider"])
@pytest.mark.parametrize("geometry", FLAT[:3] + GEOMETRIES[:2], ids=str)
def test_conv_add_matches_the_definition(geometry, other, relu):
    """ConvAdd (residual Add, then maybe Relu) over the conv's crop or after it; an operand that widens
    the result goes to the Add kernel (here numpy's add) with the original operand order."""
    x, w, b, attrs, expected = _case(geometry, True)
    shape = {"result": expected.shape, "one sample": (1,) + expected.shape[1:],
             "wider": (2,) + expected.shape}[other]
    fused = ConvAdd(PreparedConv(w, b, attrs), np.add, {}, relu, conv_first=False)
    for _ in range(2):
        addend = RNG.standard_normal(shape).astype(np.float32)
        want = addend + expected
        if relu:
            want = np.maximum(want, 0)
        np.testing.assert_allclose(fused(x, addend), want, rtol=1e-4, atol=1e-4)
        x = RNG.standard_normal(x.shape).astype(np.float32)
        expected = reference_conv(x, w, b, attrs["group"], attrs["strides"], attrs["dilations"], attrs["pads"])


def test_scratch_views_follow_the_shared_buffer():
    """A closure's scratch views are made once, and again over the new buffer when a larger request
    (another layer's) replaced the slot's buffer, so the layers keep sharing one buffer."""
    from onnxtext.evaluator.kernels.conv import scratch
    from onnxtext.evaluator.kernels.scratch_views import ScratchViews

    made = []

    def make():
        made.append(1)
        return (scratch((4, 8), np.float32, slot="test_views"),)
    views = ScratchViews(make, ("test_views",))
    first = views.get()
    assert views.get() is first and len(made) == 1
    larger = scratch((64, 64), np.float32, slot="test_views")  # replaces the slot's buffer
    again = views.get()
    assert len(made) == 2 and np.shares_memory(again[0], larger) and not np.shares_memory(again[0], first[0])
