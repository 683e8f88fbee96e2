"""The ``light_*`` CNN models with random weights, onnxtext against onnxruntime.

The light models generate every weight with ConstantOfShape, so all weights of a tensor are equal:
such a model cannot tell a transposed kernel, a wrong tap order or a swapped group apart. Here each
ConstantOfShape node is replaced by a seeded random initializer of the same shape and dtype (scaled
so activations keep their magnitude through the depth), the input is random too, and the outputs
must match onnxruntime's.
"""

from __future__ import annotations

import glob
import os

import numpy as np
import onnx
import pytest

from conformance import replace_constant_of_shape
from helpers import run_onnxruntime
from onnxtext.evaluator import Evaluator

pytest.importorskip("onnxruntime")

LIGHT = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
MODELS = sorted(os.path.basename(p)[len("light_"):-len(".onnx")] for p in glob.glob(os.path.join(LIGHT, "*.onnx")))
# the models with big fully connected layers or many layers, whose runs take seconds
SLOW = {"vgg19", "zfnet512", "bvlc_alexnet", "densenet121"}


def randomized(model: onnx.ModelProto, seed: int) -> onnx.ModelProto:
    """A copy of ``model`` whose ConstantOfShape nodes (with constant shapes) are random initializers."""
    rng = np.random.default_rng(seed)

    def random_array(shape, value):
        if len(shape) >= 2:  # a weight: He-style scaling by its fan-in keeps activations O(1)
            array = rng.standard_normal(shape, dtype=np.float32)
            return array * np.float32(np.sqrt(2.0 / max(1, int(np.prod(shape[1:])))))
        return rng.uniform(0.5, 1.5, shape)  # per-channel parameters (BN scale, variance...): around 1

    return replace_constant_of_shape(model, random_array)


def _feeds(model, seed):
    rng = np.random.default_rng(seed + 1)
    init = {t.name for t in model.graph.initializer}
    feeds = {}
    for vi in model.graph.input:
        if vi.name in init:
            continue
        shape = [d.dim_value or 1 for d in vi.type.tensor_type.shape.dim]
        feeds[vi.name] = rng.standard_normal(shape).astype(np.float32)
    return feeds


@pytest.mark.parametrize("name", [pytest.param(m, marks=pytest.mark.slow) if m in SLOW else m for m in MODELS])
def test_light_model_with_random_weights(name):
    model = randomized(onnx.load(os.path.join(LIGHT, f"light_{name}.onnx")), seed=len(name))
    replaced = sum(n.op_type == "ConstantOfShape" for n in model.graph.node)
    assert replaced == 0, "every ConstantOfShape weight should have been replaced"
    feeds = _feeds(model, seed=len(name))
    expected = run_onnxruntime(model, feeds)
    got = Evaluator(model).run(None, feeds)
    for i, (e, g) in enumerate(zip(expected, got)):
        assert g.dtype == e.dtype and g.shape == e.shape, f"output {i}"
        # the outputs are softmax probabilities: compare relative to their scale
        np.testing.assert_allclose(g, e, rtol=1e-3, atol=1e-3 * float(np.abs(e).max()), err_msg=f"output {i}")
        # and random weights must give a non-degenerate result (not every class equal)
        assert np.ptp(e) > 1e-6
