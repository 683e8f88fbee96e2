"""Depthwise prepared convolutions sharing their scratch buffers, against the definition of Conv.

``conv_depthwise`` keeps its columns, padded images and products in per-thread buffers shared by every
layer (``conv.scratch``, ``conv.shared_image``), and the columns closure writes a row of ones under
each block of columns once per call (the bias as one more weight). Here depthwise layers of different
geometries run interleaved, as a network runs them, so each call finds the buffers last written by
another layer; every result is compared with ``test_conv_paths.reference_conv``. To add a network's
run of layers, add a line to ``SEQUENCES``.
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxtext.evaluator.kernels import conv_depthwise
from onnxtext.evaluator.kernels.conv_prepared import PreparedConv
from test_conv_paths import reference_conv

# each sequence: layers (input shape, kernel, strides, pads) run in this order, twice
SEQUENCES = {
    "unit then strided then unit": [((1, 6, 9, 9), 3, [1, 1], [1, 1, 1, 1]),
                                    ((1, 6, 9, 9), 3, [2, 2], [1, 1, 1, 1]),
                                    ((1, 12, 5, 5), 3, [1, 1], [1, 1, 1, 1])],
    "bigger block first": [((2, 8, 12, 10), 3, [1, 1], [1, 1, 1, 1]),
                           ((1, 3, 4, 4), 3, [1, 1], [1, 1, 1, 1]),
                           ((2, 8, 12, 10), 3, [2, 1], [1, 1, 1, 1])],
    "5x5 short rows between 3x3 columns": [((1, 4, 8, 8), 3, [1, 1], [1, 1, 1, 1]),
                                           ((1, 4, 2, 8), 5, [1, 1], [2, 2, 2, 2]),
                                           ((1, 4, 8, 8), 3, [2, 2], [0, 0, 1, 1])],
}


def _layer(shape, k, strides, pads, rng):
    c = shape[1]
    w = rng.standard_normal((c, 1, k, k)).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32)
    attrs = {"auto_pad": "NOTSET", "group": c, "strides": strides, "dilations": [1, 1], "pads": pads,
             "kernel_shape": [k, k]}
    return PreparedConv(w, b, attrs), w, b, attrs


@pytest.mark.parametrize("bias_by_ones", [True, False])
@pytest.mark.parametrize("name", list(SEQUENCES))
def test_interleaved_depthwise_layers_match_the_definition(name, bias_by_ones, monkeypatch):
    monkeypatch.setattr(conv_depthwise, "BIAS_BY_ONES", bias_by_ones)
    monkeypatch.setattr(conv_depthwise, "BLOCK", 64)  # several blocks per layer
    rng = np.random.default_rng(3)
    layers = [(_layer(shape, k, strides, pads, rng), shape) for shape, k, strides, pads in SEQUENCES[name]]
    for _ in range(2):
        for (conv, w, b, attrs), shape in layers:
            x = rng.standard_normal(shape).astype(np.float32)
            expected = reference_conv(x, w, b, attrs["group"], attrs["strides"], attrs["dilations"], attrs["pads"])
            np.testing.assert_allclose(conv(x), expected, rtol=1e-4, atol=1e-4)


# row-band closure (unit strides, outputs at least BAND_MIN_WIDTH wide), as (input shape, kernel shape,
# dilations, pads): bands that do and do not divide the output rows, 4x3, 3x2, dilations, no padding,
# end padding cut off by the output size
BANDS = [
    ((1, 3, 9, 30), (3, 3), [1, 1], [1, 1, 1, 1]),
    ((2, 2, 16, 28), (3, 3), [1, 1], [1, 1, 1, 1]),
    ((1, 3, 11, 29), (3, 2), [1, 1], [1, 0, 1, 1]),
    ((1, 2, 13, 32), (4, 3), [1, 1], [2, 1, 1, 1]),
    ((1, 2, 10, 33), (3, 3), [2, 2], [2, 2, 2, 2]),
    ((1, 3, 7, 31), (3, 3), [1, 1], [0, 0, 0, 0]),
    ((1, 2, 6, 30), (3, 3), [1, 1], [1, 2, 0, 1]),
    ((1, 4, 3, 40), (3, 3), [1, 1], [1, 1, 1, 1]),  # fewer rows than a band
]


@pytest.mark.parametrize("with_bias", [True, False])
@pytest.mark.parametrize("geometry", BANDS, ids=str)
def test_row_bands_match_the_definition(geometry, with_bias, monkeypatch):
    monkeypatch.setattr(conv_depthwise, "BAND_MIN_WIDTH", 28)
    shape, kshape, dilations, pads = geometry
    rng = np.random.default_rng(5)
    c = shape[1]
    w = rng.standard_normal((c, 1) + kshape).astype(np.float32)
    b = rng.standard_normal(c).astype(np.float32) if with_bias else None
    attrs = {"auto_pad": "NOTSET", "group": c, "strides": [1, 1], "dilations": dilations, "pads": pads,
             "kernel_shape": list(kshape)}
    conv = PreparedConv(w, b, attrs)
    for _ in range(2):
        x = rng.standard_normal(shape).astype(np.float32)
        expected = reference_conv(x, w, b, c, [1, 1], dilations, pads)
        assert expected.shape[-1] >= 28
        np.testing.assert_allclose(conv(x), expected, rtol=1e-4, atol=1e-4)
        assert conv._shapes[x.shape].__name__ == "depthwise_bands"
        # into a channel slice of a bigger buffer, and into a (N, G, C / G, H, W) view of one
        buffer = np.full((shape[0], c + 2) + expected.shape[2:], 7.0, np.float32)
        conv(x, buffer[:, 1:1 + c])
        np.testing.assert_allclose(buffer[:, 1:1 + c], expected, rtol=1e-4, atol=1e-4)
        assert (buffer[:, 0] == 7).all() and (buffer[:, -1] == 7).all()
        if c % 2 == 0:
            cols = np.full((shape[0], 2, c // 2 + 1) + expected.shape[2:], 7.0, np.float32)
            run = conv_depthwise.prepare_depthwise(w, shape, pads[:2], [1, 1], dilations, expected.shape[2:], b)
            run(x, cols[:, :, :c // 2])
            np.testing.assert_allclose(cols[:, :, :c // 2].reshape(expected.shape), expected, rtol=1e-4, atol=1e-4)
            assert (cols[:, :, -1] == 7).all()
