"""Inference Dropout steps whose mask nobody reads pass their input on (``optimizer.dropout_passthrough``).

The reference is the operator's inference semantics written here: the output equals the input and
the mask, when asked for, is all ones (True from opset 10). To add a case, add a line to the table.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.optimizer.dropout_passthrough import _passthrough

RNG = np.random.default_rng(3)
F = TensorProto.FLOAT

# (opset, mask use: "none" = no mask output, "unread" = named but unused, "output" = a graph
#  output, "read" = read by a Not node; training_mode input: None = absent, else its constant value,
#  whether the step becomes a pass-through)
CASES = [
    (10, "none", None, True),
    (10, "unread", None, True),
    (10, "output", None, False),
    (10, "read", None, False),
    (9, "unread", None, True),
    (13, "none", None, True),
    (13, "unread", None, True),
    (13, "output", None, False),
    (13, "unread", False, False),  # an explicit training_mode input: the kernel decides
]


@pytest.mark.parametrize("opset, mask, training, passthrough", CASES)
def test_inference_dropout(opset, mask, training, passthrough):
    x = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    inputs, inits = ["X"], []
    if training is not None:
        inits = [helper.make_tensor("ratio", F, [], [0.5]), helper.make_tensor("tm", TensorProto.BOOL, [], [training])]
        inputs += ["ratio", "tm"]
    outputs = ["d"] if mask == "none" else ["d", "m"]
    nodes = [helper.make_node("Dropout", inputs, outputs),
             helper.make_node("Neg", ["d"], ["y"])]  # (the Dropout's output is not itself a graph output)
    graph_outputs = [helper.make_tensor_value_info("y", F, None)]
    if mask == "output":
        graph_outputs.append(helper.make_tensor_value_info("m", TensorProto.UNDEFINED, None))
    if mask == "read":
        nodes.append(helper.make_node("Not", ["m"], ["nm"]))
        graph_outputs.append(helper.make_tensor_value_info("nm", TensorProto.BOOL, None))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", F, list(x.shape))], graph_outputs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=7)
    ev = Evaluator(model)
    results = ev.run(None, {"X": x})
    np.testing.assert_array_equal(results[0], -x)
    if mask == "output":
        assert results[1].shape == x.shape and np.all(results[1])
    if mask == "read":
        assert results[1].shape == x.shape and not np.any(results[1])
    steps = [s for s in ev._plan_for(None, ()).steps if s[5].node.op_type == "Dropout"]
    assert (steps[0][0] is _passthrough) == passthrough
