"""Patch convolutions (strides equal to the kernel, no padding: ViT's patch embedding) against
onnxruntime, through the evaluator and through both layouts of ``conv_patches`` directly.

To add a geometry, add a line to ``PATCHES`` (taken by the patch path) or ``NOT_PATCHES`` (near
misses that must take another path and still be right).
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import numpy_helper

from helpers import assert_matches_onnxruntime, node_model, run_onnxruntime
from onnxtext.evaluator.kernels import conv_patches, conv_prepared

RNG = np.random.default_rng(18)

PATCHES = [  # (input shape, weight shape): strides = kernel, no padding, one group
    ((2, 3, 32, 32), (64, 3, 8, 8)),  # a small ViT, batch of 2 (patch-major rows)
    ((1, 3, 64, 64), (48, 3, 16, 16)),  # 16x16 patches (patch-major rows)
    ((1, 3, 96, 96), (64, 3, 8, 8)),  # larger result: kernel-major columns
    ((1, 3, 56, 56), (24, 3, 4, 4)),  # Swin / ConvNeXt stem
    ((2, 16, 14, 14), (32, 16, 2, 2)),  # ConvNeXt downsampling
    ((1, 3, 28, 42), (8, 3, 14, 14)),  # 14x14 patches, not square input
    ((1, 2, 12, 20), (5, 2, 3, 5)),  # rectangular kernel
    ((1, 2, 12, 20), (5, 2, 1, 5)),  # 1 x K
    ((3, 4, 24), (6, 4, 8)),  # 1-D (audio frames)
    ((1, 2, 8, 8, 12), (4, 2, 4, 4, 4)),  # 3-D (video tubelets)
    ((1, 1, 16, 16), (1, 1, 16, 16)),  # one patch, one output channel
]

NOT_PATCHES = [  # (input shape, weight shape, extra attributes): other paths
    ((1, 3, 34, 35), (16, 3, 8, 8), {}),  # sizes not multiples of the kernel: the tail is dropped
    ((1, 3, 32, 32), (16, 3, 8, 8), {"pads": [1, 1, 1, 1]}),  # padded
    ((1, 4, 32, 32), (8, 2, 8, 8), {"group": 2}),  # grouped
    ((1, 3, 32, 32), (16, 3, 8, 8), {"strides": [4, 4]}),  # overlapping windows
]


def _model(xs, ws, bias, extra=None):
    w = RNG.standard_normal(ws).astype(np.float32)
    constants = {"w": w}
    if bias:
        constants["b"] = RNG.standard_normal(ws[0]).astype(np.float32)
    attrs = {"kernel_shape": list(ws[2:]), "strides": list(ws[2:])}
    attrs.update(extra or {})
    x = RNG.standard_normal(xs).astype(np.float32)
    return node_model("Conv", {"x": x}, attrs, constants=constants), x


@pytest.fixture
def taken(monkeypatch):
    """The input shapes the patch path was prepared for, in this test."""
    shapes = []
    real = conv_prepared.prepare_patches

    def spy(w, b, shape, relu, rows_layout=None):
        shapes.append(tuple(shape))
        return real(w, b, shape, relu, rows_layout)
    monkeypatch.setattr(conv_prepared, "prepare_patches", spy)
    return shapes


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xs, ws", PATCHES, ids=str)
def test_patch_conv_matches_onnxruntime(xs, ws, bias, taken):
    model, x = _model(xs, ws, bias)
    assert_matches_onnxruntime(model, {"x": x}, rtol=1e-4, atol=1e-4)
    x2 = RNG.standard_normal(xs).astype(np.float32)  # a second call runs on the prepared closure
    assert_matches_onnxruntime(model, {"x": x2}, rtol=1e-4, atol=1e-4)
    assert tuple(xs) in taken


@pytest.mark.parametrize("xs, ws, extra", NOT_PATCHES, ids=str)
def test_near_misses_take_other_paths(xs, ws, extra, taken):
    model, x = _model(xs, ws, True, extra)
    assert_matches_onnxruntime(model, {"x": x}, rtol=1e-4, atol=1e-4)
    assert taken == []


@pytest.mark.parametrize("owned", [True, False])
@pytest.mark.parametrize("rows_layout", [False, True])
@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("xs, ws", PATCHES, ids=str)
def test_both_layouts_match_onnxruntime(xs, ws, relu, rows_layout, owned, monkeypatch):
    """Each layout on every geometry, whatever the size rule picks; with a fused Relu, and writing
    into a channel slice of a bigger buffer (as a Concat does); with the layer's own work arrays
    (small layers) and with the shared scratch buffers (large ones)."""
    if not owned:
        monkeypatch.setattr(conv_patches, "OWNED_LIMIT", 0)
    model, x = _model(xs, ws, True)
    expected = run_onnxruntime(model, {"x": x})[0]
    if relu:
        expected = np.maximum(expected, 0)
    w, b = (numpy_helper.to_array(t) for t in model.graph.initializer)
    run = conv_patches.prepare_patches(w, b, xs, relu, rows_layout=rows_layout)
    np.testing.assert_allclose(run(x, None), expected, rtol=1e-4, atol=1e-4)
    m = ws[0]
    buffer = np.full((xs[0], m + 3) + expected.shape[2:], 7.0, np.float32)
    conv_patches.scratch((1 << 16,), np.float32, slot="patches")[...] = np.nan  # (stale scratch)
    result = run(x, buffer[:, 1:1 + m])
    assert np.shares_memory(result, buffer)
    np.testing.assert_allclose(buffer[:, 1:1 + m], expected, rtol=1e-4, atol=1e-4)
    assert (buffer[:, :1] == 7).all() and (buffer[:, 1 + m:] == 7).all()


def test_non_contiguous_input():
    """A transposed (non C-contiguous) input is still read right."""
    model, x = _model((1, 3, 32, 32), (16, 3, 8, 8), True)
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    assert not xt.flags.c_contiguous
    w, b = (numpy_helper.to_array(t) for t in model.graph.initializer)
    for layout in (False, True):
        got = conv_patches.prepare_patches(w, b, x.shape, False, rows_layout=layout)(xt, None)
        np.testing.assert_allclose(got, run_onnxruntime(model, {"x": x})[0], rtol=1e-4, atol=1e-4)
