"""Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions against a direct float64 convolution.

The reference pads the input explicitly and sums the nine shifted products in float64; the
Winograd closures run in float32, so each case checks the largest error relative to the output's
scale (well below the folder suite's rtol 1e-3). Add a case by adding a line to ``CASES``.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxtext.evaluator.kernels.conv_prepared import PreparedConv
from onnxtext.evaluator.kernels.conv_winograd import prepare_winograd, use_winograd

# (batch, in channels, out channels, H, W, pads (top, left, bottom, right), bias, relu)
CASES = [
    (1, 8, 16, 7, 7, (1, 1, 1, 1), True, False),
    (1, 8, 16, 8, 8, (1, 1, 1, 1), False, True),
    (2, 5, 3, 6, 9, (0, 1, 1, 0), True, True),
    (3, 4, 6, 5, 4, (1, 0, 0, 1), False, False),
    (1, 16, 8, 13, 4, (0, 0, 0, 0), True, False),
    (1, 3, 2, 3, 3, (0, 0, 0, 0), True, True),  # a single output
    (1, 3, 2, 2, 2, (1, 1, 1, 1), False, False),  # smaller than a tile
    (2, 32, 24, 11, 10, (1, 1, 1, 1), True, True),
    (1, 64, 64, 28, 28, (1, 1, 1, 1), True, True),
    (1, 128, 256, 15, 15, (1, 1, 1, 1), True, False),
]
# largest error relative to max |y| per output tile size (F(4x4)'s larger coefficients cost digits)
TOLERANCE = {2: 1e-5, 4: 5e-5}


def direct(x, w, b, pads):
    """Conv2d of x by w (3x3, stride 1) in float64 over an explicitly padded input."""
    top, left, bottom, right = pads
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (top, bottom), (left, right)))
    ho, wo = xp.shape[2] - 2, xp.shape[3] - 2
    y = np.zeros((x.shape[0], w.shape[0], ho, wo))
    for i in range(3):
        for j in range(3):
            y += np.einsum("mc,nchw->nmhw", w[:, :, i, j].astype(np.float64), xp[:, :, i:i + ho, j:j + wo])
    if b is not None:
        y += b.astype(np.float64)[None, :, None, None]
    return y


def make(case, seed=0):
    n, c, mo, h, wd, pads, bias, relu = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, c, h, wd)).astype(np.float32)
    w = (rng.standard_normal((mo, c, 3, 3)) / np.sqrt(9 * c)).astype(np.float32)  # He-like scale
    b = rng.standard_normal(mo).astype(np.float32) if bias else None
    ref = direct(x, w, b, pads)
    return x, w, b, (np.maximum(ref, 0) if relu else ref)


def relative_error(y, ref):
    return np.abs(y.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30)


@pytest.mark.parametrize("m", [2, 4])
@pytest.mark.parametrize("case", CASES, ids=str)
def test_winograd_matches_direct(case, m):
    x, w, b, ref = make(case)
    run = prepare_winograd(w, b, x.shape, case[5][:2], ref.shape[2:], m=m, relu=case[7])
    for _ in range(2):  # the second call reuses the scratch buffers
        y = run(x, None)
        assert y.shape == ref.shape and y.dtype == np.float32
        assert relative_error(y, ref) < TOLERANCE[m]


@pytest.mark.parametrize("case", CASES[:4], ids=str)
def test_winograd_writes_into_a_channel_slice(case):
    x, w, b, ref = make(case, seed=1)
    n, mo = ref.shape[:2]
    buffer = np.full((n, mo + 5) + ref.shape[2:], 7, np.float32)  # a Concat buffer: 2 channels, y, 3 channels
    out = buffer[:, 2:2 + mo]
    assert prepare_winograd(w, b, x.shape, case[5][:2], ref.shape[2:], relu=case[7])(x, out) is out
    assert relative_error(out, ref) < TOLERANCE[2]
    assert (buffer[:, :2] == 7).all() and (buffer[:, 2 + mo:] == 7).all()


def test_prepared_conv_takes_winograd_for_wide_layers():
    """A layer the rule picks goes through Winograd inside PreparedConv, bias, Relu and ``out`` included."""
    case = (1, 256, 256, 16, 16, (1, 1, 1, 1), True, True)
    x, w, b, ref = make(case, seed=2)
    assert use_winograd(256, 256, (16, 16))
    attrs = dict(auto_pad="NOTSET", group=1, pads=[1, 1, 1, 1], strides=None, dilations=None, kernel_shape=[3, 3])
    conv = PreparedConv(w, b, attrs, relu=True)
    assert relative_error(conv(x), ref) < TOLERANCE[2]
    assert "winograd" in conv._shapes[x.shape].__qualname__
    buffer = np.zeros((1, 300, 16, 16), np.float32)
    conv(x, buffer[:, 10:266])
    assert relative_error(buffer[:, 10:266], ref) < TOLERANCE[2]
    assert not buffer[:, :10].any() and not buffer[:, 266:].any()


@pytest.mark.parametrize("c, m, out, expected", [
    (64, 64, (56, 56), False),  # few channels: the transforms cost more than the matmul saves
    (256, 256, (56, 56), True),
    (192, 192, (14, 14), False),  # as fast as im2col
    (512, 512, (14, 14), True),
    (512, 512, (7, 7), False),  # too few tiles
])
def test_rule(c, m, out, expected):
    assert use_winograd(c, m, out) is expected
