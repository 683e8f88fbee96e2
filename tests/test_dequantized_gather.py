"""Rule ``dequantized_gather`` (optimizer/dequantized_gather.py) beyond its fixture: every code type, the
float-table and lookup-table forms, negative ids, out-of-range ids, bit for bit against ``optimize=0`` and
against onnxruntime. To add a case: one line in ``_CASES``.
"""

from __future__ import annotations

import numpy as np
import pytest
from helpers import assert_close, graph_model, run_onnxruntime
from onnx import helper

from onnxtext import Evaluator
from onnxtext.errors import EvalError
from onnxtext.evaluator.fused.quantization import DequantizedGather
from onnxtext.evaluator.optimizer import dequantized_gather

# (code type, table shape, gather axis, ids shape, zero point or None)
_CASES = [
    (np.uint8, (50, 8), 0, (2, 7), 131),
    (np.int8, (50, 8), 0, (3, 5), -9),
    (np.uint8, (6, 30), 1, (4,), None),
    (np.int16, (40, 3, 2), -3, (2, 2, 3), 1000),
    (np.uint16, (9, 40), 1, (2, 6), 40000),
    (np.int8, (20, 4), 0, (), 0),  # a scalar id: one row, rank reduced
]


def _model(dtype, shape, axis, ids_shape, zero_point, rng):
    info = np.iinfo(dtype)
    table = rng.integers(info.min, info.max, shape, endpoint=True).astype(dtype)
    constants = {"table": table, "scale": np.array(0.0173, np.float32)}
    dq_inputs = ["g", "scale"]
    if zero_point is not None:
        constants["zp"] = np.array(zero_point, dtype)
        dq_inputs.append("zp")
    n = shape[axis]
    ids = rng.integers(-n, n, ids_shape).astype(np.int64)  # negative ids count from the end
    nodes = [helper.make_node("Gather", ["table", "ids"], ["g"], axis=axis),
             helper.make_node("DequantizeLinear", dq_inputs, ["y"])]
    return graph_model(nodes, {"ids": ids}, ["y"], constants, opset=21, ir_version=10), {"ids": ids}


@pytest.mark.parametrize("lookup", [False, True], ids=["float_table", "lookup_table"])
@pytest.mark.parametrize("dtype, shape, axis, ids_shape, zero_point", _CASES)
def test_dequantized_gather_equals_the_nodes(monkeypatch, lookup, dtype, shape, axis, ids_shape, zero_point):
    if lookup:  # every table above the limit: the codes and the lookup table of dequantized codes
        monkeypatch.setattr(dequantized_gather, "FLOAT_TABLE_LIMIT", 0)
    model, feeds = _model(dtype, shape, axis, ids_shape, zero_point, np.random.default_rng(len(shape) + axis))
    ev = Evaluator(model)
    fused = [st.fn for st in ev._plan_for(None, ()).steps]
    assert len(fused) == 1 and isinstance(fused[0], DequantizedGather)
    assert (fused[0].lookup is not None) == lookup
    got = ev.run(None, feeds)
    want = Evaluator(model, optimize=0).run(None, feeds)
    assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape
    np.testing.assert_array_equal(got[0], want[0])  # bit for bit: the dequantization is elementwise
    assert_close(got, run_onnxruntime(model, feeds), 0, 0, "vs onnxruntime:")


def test_out_of_range_id_is_refused_as_gather_refuses_it():
    model, _ = _model(np.uint8, (10, 4), 0, (3,), 7, np.random.default_rng(0))
    for optimize in (0, 2):
        with pytest.raises(EvalError, match="Gather|index"):
            Evaluator(model, optimize=optimize).run(None, {"ids": np.array([0, 10, 1], np.int64)})


def test_per_axis_dequantization_is_not_rewritten():
    model, feeds = _model(np.uint8, (10, 4), 0, (3,), None, np.random.default_rng(0))
    model.graph.initializer[1].CopyFrom(helper.make_tensor("scale", 1, [4], [0.5, 0.25, 2.0, 1.0]))
    model.graph.node[1].attribute.extend([helper.make_attribute("axis", 1)])
    ev = Evaluator(model)
    assert [type(st.fn) for st in ev._plan_for(None, ()).steps].count(DequantizedGather) == 0
    np.testing.assert_array_equal(ev.run(None, feeds)[0], Evaluator(model, optimize=0).run(None, feeds)[0])
