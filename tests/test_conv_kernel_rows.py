"""Kernel-row convolutions (``kernels/conv_kernel_rows``) against the direct nested-sum definition of
Conv (``test_conv_paths.reference_conv``, float64) and, at real sizes, onnxruntime.

The closure is forced on every geometry of ``GEOMETRIES`` (whatever the selector's rule says), with and
without bias and Relu, called twice (the second call runs on the prepared buffers), in one band and in
bands of one output row, and writing into a channel slice of a larger buffer. ``TAKEN`` lists
geometries the selector must give to the kernel-row path, ``NOT_TAKEN`` near misses it must not.
To add a case, add a line to a table.
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_matches_onnxruntime, node_model
from onnxtext.evaluator.kernels import conv_kernel_rows, conv_prepared
from onnxtext.evaluator.kernels.conv_prepared import PreparedConv
from test_conv_paths import reference_conv

RNG = np.random.default_rng(19)

# (input shape, weight shape, dilations, pads): unit strides, one group
GEOMETRIES = [
    ((1, 3, 9, 10), (3, 3, 3, 3), [1, 1], [1, 1, 1, 1]),
    ((2, 4, 7, 11), (4, 4, 3, 3), [1, 1], [1, 1, 1, 1]),  # a batch
    ((1, 4, 8, 9), (6, 4, 3, 3), [1, 1], [1, 1, 1, 1]),  # more outputs than inputs
    ((1, 3, 9, 8), (2, 3, 2, 3), [1, 1], [1, 0, 2, 1]),  # rectangular kernel, uneven pads
    ((1, 2, 12, 10), (3, 2, 3, 3), [2, 1], [2, 1, 2, 1]),  # dilated rows
    ((1, 2, 10, 12), (3, 2, 3, 3), [1, 2], [1, 2, 1, 2]),  # dilated columns
    ((1, 3, 11, 9), (3, 3, 5, 5), [1, 1], [2, 2, 2, 2]),  # 5x5
    ((1, 2, 8, 9), (2, 2, 3, 3), [1, 1], [0, 0, 0, 0]),  # no padding
    ((1, 2, 3, 7), (4, 2, 3, 3), [1, 1], [0, 1, 0, 1]),  # one output row
    ((1, 2, 5, 5), (2, 2, 3, 3), [1, 1], [3, 3, 3, 3]),  # padding wider than the kernel
    ((1, 3, 6, 7), (2, 3, 1, 3), [1, 1], [0, 1, 0, 1]),  # one kernel row: no adds
    ((2, 1, 9, 9), (1, 1, 4, 2), [1, 1], [2, 1, 1, 0]),  # one channel, even kernel
]

TAKEN = [  # (input shape, weight shape): 3x3, pads 1, the rule picks kernel rows
    ((1, 16, 24, 24), (16, 16, 3, 3)),
    ((2, 32, 20, 30), (24, 32, 3, 3)),
    ((1, 8, 40, 20), (8, 8, 3, 3)),
    ((1, 64, 21, 21), (64, 64, 3, 3)),
]

NOT_TAKEN = [  # (input shape, weight shape, extra attributes)
    ((1, 16, 24, 24), (32, 16, 3, 3), {}),  # more outputs than inputs
    ((1, 96, 24, 24), (96, 96, 3, 3), {}),  # more than 64 channels
    ((1, 16, 12, 12), (16, 16, 3, 3), {}),  # too few positions (short rows: flat columns)
    ((1, 8, 40, 12), (8, 8, 3, 3), {}),  # rows of at most 16, at most 32 outputs: flat columns
    ((1, 16, 24, 24), (16, 16, 3, 3), {"strides": [2, 2]}),  # strided
    ((1, 16, 24, 24), (16, 8, 3, 3), {"group": 2}),  # grouped
    ((1, 16, 24, 24), (16, 16, 1, 3), {"pads": [0, 1, 0, 1]}),  # one kernel row
]


def _case(geometry, with_bias=True):
    xs, ws, dilations, pads = geometry
    x = RNG.standard_normal(xs).astype(np.float32)
    w = RNG.standard_normal(ws).astype(np.float32)
    b = RNG.standard_normal(ws[0]).astype(np.float32) if with_bias else None
    attrs = {"auto_pad": "NOTSET", "group": 1, "strides": [1, 1], "dilations": dilations, "pads": pads,
             "kernel_shape": list(ws[2:])}
    return x, w, b, attrs


@pytest.fixture
def forced(monkeypatch):
    """The selector gives every eligible shape to the kernel-row path (short rows too)."""
    monkeypatch.setattr(conv_prepared, "use_kernel_rows", lambda c, m, kshape, out: len(kshape) == 2)
    monkeypatch.setattr(conv_prepared, "_FLAT_MAX_WIDTH", 0)


@pytest.mark.parametrize("band", [None, 1], ids=["one band", "bands of one row"])
@pytest.mark.parametrize("with_bias, relu", [(True, False), (False, False), (True, True)])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_kernel_rows_match_the_definition(geometry, with_bias, relu, band, forced, monkeypatch):
    if band is not None:
        monkeypatch.setattr(conv_kernel_rows, "_BAND", band)
    x, w, b, attrs = _case(geometry, with_bias)
    prepared = PreparedConv(w, b, attrs, relu)
    for _ in range(2):  # the second call runs on the buffers prepared by the first
        expected = reference_conv(x, w, b, 1, attrs["strides"], attrs["dilations"], attrs["pads"])
        if relu:
            expected = np.maximum(expected, 0)
        y = prepared(x)
        assert prepared._shapes[x.shape].__name__ == "kernel_rows_conv"
        assert y.shape == expected.shape and y.flags.c_contiguous
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
        x = RNG.standard_normal(x.shape).astype(np.float32)


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=str)
def test_kernel_rows_write_into_a_channel_slice(geometry, forced):
    """With ``out`` (a channel slice of a Concat's buffer) the result lands there, the rest untouched."""
    x, w, b, attrs = _case(geometry)
    expected = reference_conv(x, w, b, 1, attrs["strides"], attrs["dilations"], attrs["pads"])
    prepared = PreparedConv(w, b, attrs)
    for _ in range(2):
        wide = np.full((x.shape[0], expected.shape[1] + 2) + expected.shape[2:], np.nan, np.float32)
        y = prepared(x, wide[:, 1:-1])
        assert np.shares_memory(y, wide)
        np.testing.assert_allclose(wide[:, 1:-1], expected, rtol=1e-4, atol=1e-4)
        assert np.isnan(wide[:, 0]).all() and np.isnan(wide[:, -1]).all()


def test_float64_weights_stay_float64(forced):
    x, w, b, attrs = _case(GEOMETRIES[1])
    x, w, b = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    y = PreparedConv(w, b, attrs)(x)
    assert y.dtype == np.float64
    np.testing.assert_allclose(y, reference_conv(x, w, b, 1, [1, 1], [1, 1], attrs["pads"]), rtol=1e-12, atol=1e-12)


def _model(xs, ws, extra=None):
    attrs = {"kernel_shape": list(ws[2:]), "pads": [1, 1, 1, 1]}
    attrs.update(extra or {})
    constants = {"w": RNG.standard_normal(ws).astype(np.float32) * 0.1,
                 "b": RNG.standard_normal(ws[0]).astype(np.float32)}
    x = RNG.standard_normal(xs).astype(np.float32)
    return node_model("Conv", {"x": x}, attrs, constants=constants), x


@pytest.fixture
def taken(monkeypatch):
    """The input shapes the kernel-row path was prepared for, in this test."""
    shapes = []
    real = conv_prepared.prepare_kernel_rows

    def spy(w, b, shape, *args):
        shapes.append(tuple(shape))
        return real(w, b, shape, *args)
    monkeypatch.setattr(conv_prepared, "prepare_kernel_rows", spy)
    return shapes


@pytest.mark.parametrize("xs, ws", TAKEN, ids=str)
def test_rule_takes_kernel_rows_and_matches_onnxruntime(xs, ws, taken):
    model, x = _model(xs, ws)
    for _ in range(2):
        assert_matches_onnxruntime(model, {"x": x}, rtol=1e-4, atol=1e-4)
        x = RNG.standard_normal(xs).astype(np.float32)
    assert tuple(xs) in taken


@pytest.mark.parametrize("xs, ws, extra", NOT_TAKEN, ids=str)
def test_near_misses_take_other_paths(xs, ws, extra, taken):
    model, x = _model(xs, ws, extra)
    assert_matches_onnxruntime(model, {"x": x}, rtol=1e-4, atol=1e-4)
    assert taken == []
