"""Pad with its geometry planned once per (shape, pads, mode, axes): one Evaluator runs a table of
calls whose shapes, pads, fill values and modes change from call to call, each compared with
onnxruntime on the same feeds (a stale plan would give a wrong shape or values).

To add a case: one line in ``_CALLS`` (mode, input shape, pads, constant value or None, axes or None).
"""

from __future__ import annotations

import numpy as np
import pytest

from helpers import assert_close, node_model, run_onnxruntime
from onnxtext import Evaluator

# each mode's calls run in order through one Evaluator
_CALLS = {
    "constant": [
        ((2, 3, 5), [0, 1, 2, 0, 0, 1], 0.0, None),
        ((2, 3, 5), [0, 1, 2, 0, 0, 1], -7.5, None),  # same geometry, another value
        ((2, 3, 5), [0, -1, 2, 1, 0, -3], 1.0, None),  # crops and pads
        ((2, 4, 5), [0, 1, 2, 0, 0, 1], 2.0, None),  # another shape
        ((2, 4, 5), [3, 1], 4.0, [-1]),
        ((2, 4, 5), [1, 0, 0, 2], 0.0, [0, 2]),
        ((1, 576), [0, 0, 0, 0], 3.0, None),  # nothing to pad: a copy
    ],
    "reflect": [
        ((1, 576), [0, 64, 0, 64], None, None),  # an STFT's centre padding
        ((1, 576), [0, 32, 0, 0], None, None),
        ((1, 1, 576), [0, 0, 64, 0, 0, 64], None, None),
        ((3, 7), [2, -1, 1, 3], None, None),
        ((3, 7), [2, 3], None, [1]),
    ],
    "edge": [
        ((2, 3, 4), [0, 2, 1, 1, 0, 3], None, None),
        ((2, 3, 4), [1, 0, 0, 0, 0, 2], None, None),
    ],
    "wrap": [
        ((2, 3, 4), [0, 2, 1, 1, 0, 3], None, None),
        ((4, 5), [1, -1, 2, 1], None, [-1, 0]),
    ],
}


@pytest.mark.parametrize("mode", list(_CALLS))
def test_pad_calls_in_a_row_match_onnxruntime(mode):
    rng = np.random.default_rng(3)
    with_axes = [c for c in _CALLS[mode] if c[3] is not None]
    without = [c for c in _CALLS[mode] if c[3] is None]
    for calls, has_axes in ((without, False), (with_axes, True)):
        if not calls:
            continue
        feeds0 = _feeds(calls[0], rng, has_axes)
        model = node_model("Pad", feeds0, {"mode": mode}, opset=19)
        for graph_input in model.graph.input:  # any shape, as the calls change it
            graph_input.type.tensor_type.ClearField("shape")
        evaluator = Evaluator(model)
        for call in calls:
            feeds = _feeds(call, rng, has_axes)
            assert_close(evaluator.run(None, feeds), run_onnxruntime(model, feeds), 0, 0, f"Pad {mode} {call}")


def _feeds(call, rng, has_axes):
    shape, pads, value, axes = call
    feeds = {"x": rng.standard_normal(shape).astype(np.float32), "pads": np.array(pads, np.int64),
             "value": np.array(0.0 if value is None else value, np.float32)}
    if has_axes:
        feeds["axes"] = np.array(axes, np.int64)
    return feeds
