"""com.microsoft (onnxruntime contrib) operators, checked against onnxruntime as the oracle.

Each case of tests/contrib_cases.py becomes a one-node model with seeded random inputs; onnxruntime
and the evaluator run it and every declared output is compared. Cases listed in
tests/data/contrib_known_failures.txt are expected to fail, strictly (a listed case that passes
fails, so the list cannot go stale).

onnxruntime runs with one intra-op thread: its DynamicQuantizeLSTM splits the batch between threads
and quantizes each part's hidden state with that part's own range, so its results depend on the
machine's core count; with one thread the whole batch shares one range, which is what onnxtext does.
"""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import helper

from onnxtext.evaluator import Evaluator
from onnxtext.evaluator.registry import registered

from contrib_cases import CASES
from reason_tables import read_table

ort = pytest.importorskip("onnxruntime")

KNOWN = {name: row[-1] for name, row in read_table("contrib_known_failures.txt").items()}


def make_value(spec, rng):
    if spec is None or isinstance(spec, np.ndarray) or np.isscalar(spec):
        return None if spec is None else np.asarray(spec)
    dtype = np.dtype(spec.dtype)
    if dtype.kind == "f":
        low = -3.0 if spec.low is None else spec.low
        high = 3.0 if spec.high is None else spec.high
        return rng.uniform(low, high, spec.shape).astype(dtype)
    info = np.iinfo(dtype)
    low = info.min if spec.low is None else spec.low
    high = info.max + 1 if spec.high is None else spec.high
    return rng.integers(low, high, spec.shape).astype(dtype)


def build(case, values):
    names = [f"in{i}" if v is not None else "" for i, v in enumerate(values)]
    while names and not names[-1]:
        names.pop()
    outs = ["" if i in case.unnamed else f"out{i}" for i in range(case.outputs)]
    node = helper.make_node(case.op, names, outs, domain=case.domain, **case.attrs)
    inputs = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape)
              for n, v in zip(names, values) if n]
    graph = helper.make_graph([node], case.id, inputs,
                              [helper.make_value_info(o, onnx.TypeProto()) for o in outs if o])
    opsets = [helper.make_opsetid("", case.opset), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 9
    feeds = {n: v for n, v in zip(names, values) if n}
    return model, feeds


def compare(case, expected, actual):
    rtol, atol = case.tol
    assert len(actual) == len(expected)
    for i, (e, a) in enumerate(zip(expected, actual)):
        where = f"{case.id} output {i}"
        a = np.asarray(a)
        assert a.shape == e.shape, f"{where}: shape {a.shape} != {e.shape}"
        assert a.dtype == e.dtype, f"{where}: dtype {a.dtype} != {e.dtype}"
        if e.dtype == object:
            assert a.tolist() == e.tolist(), where
        elif e.dtype.kind in "iub":
            diff = np.abs(a.astype(np.int64) - e.astype(np.int64))
            assert diff.size == 0 or diff.max() <= atol, f"{where}: integer outputs differ by up to {diff.max()}"
        else:
            np.testing.assert_allclose(a.astype(np.float64), e.astype(np.float64), rtol=rtol, atol=atol,
                                       err_msg=where)


def run_case(case):
    rng = np.random.default_rng(sum(map(ord, case.id)))
    values = [make_value(s, rng) for s in case.inputs]
    model, feeds = build(case, values)
    if case.expect is not None:
        expected = [np.asarray(e) for e in case.expect(*values)]
    else:
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
    actual = Evaluator(model).run(None, feeds)
    compare(case, expected, actual)


def test_case_ids_unique():
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))
    assert set(KNOWN) <= set(ids), f"known failures name unknown cases: {set(KNOWN) - set(ids)}"


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_contrib_case(case):
    if case.id in KNOWN:
        with pytest.raises(AssertionError):
            run_case(case)
        return
    run_case(case)


ISSUE_OPS = """Attention MultiHeadAttention GroupQueryAttention RotaryEmbedding SkipLayerNormalization
SkipSimplifiedLayerNormalization SimplifiedLayerNormalization EmbedLayerNormalization BiasGelu FastGelu Gelu
QuickGelu BiasAdd FusedMatMul FusedConv MatMulNBits DynamicQuantizeMatMul MatMulIntegerToFloat
DynamicQuantizeLSTM QLinearAdd QLinearMul QLinearConcat QLinearSigmoid QLinearLeakyRelu
QLinearGlobalAveragePool QLinearAveragePool QGemm Tokenizer""".split()


@pytest.mark.parametrize("op", ISSUE_OPS)
def test_every_listed_operator_has_a_kernel_and_cases(op):
    assert ("com.microsoft", op) in registered(), f"no kernel for com.microsoft::{op}"
    assert any(c.op == op for c in CASES), f"no case for {op} in tests/contrib_cases.py"


def test_matmul_nbits_weights_fed_as_inputs_are_not_kept_between_runs():
    """Dequantized weights are kept only for read-only (initializer) arrays: a fed B changed in place counts."""
    from contrib_cases import NBITS
    from onnxtext.evaluator.kernels.contrib.quant_matmul import matmul_nbits

    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 32)).astype(np.float32)
    b = rng.integers(0, 256, (6, 2, 8)).astype(np.uint8)
    s = np.full(12, 0.05, np.float32)
    first = matmul_nbits(a, b, s, bits=4, **NBITS)
    b[:] = 0x88  # every value 8, the default zero point: the product becomes 0
    assert np.abs(first).max() > 0 and np.all(matmul_nbits(a, b, s, bits=4, **NBITS) == 0)
    b.flags.writeable = False
    kept = matmul_nbits(a, b, s, bits=4, **NBITS)
    assert np.all(kept == 0) and np.all(matmul_nbits(a, b, s, bits=4, **NBITS) == 0)


@pytest.mark.parametrize("op,attrs,inputs,message", [
    ("Attention", dict(num_heads=2, do_rotary=1), 3, "do_rotary=1"),
    ("MultiHeadAttention", dict(num_heads=2), 1, "packed QKV"),
])
def test_unsupported_forms_are_clear_errors(op, attrs, inputs, message):
    from onnxtext.errors import EvalError

    rng = np.random.default_rng(0)
    values = [rng.normal(size=(2, 3, 16)).astype(np.float32), rng.normal(size=(16, 48)).astype(np.float32),
              rng.normal(size=48).astype(np.float32)][:inputs]
    names = [f"in{i}" for i in range(inputs)]
    node = helper.make_node(op, names, ["out0"], domain="com.microsoft", **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, 1, v.shape) for n, v in zip(names, values)],
                              [helper.make_value_info("out0", onnx.TypeProto())])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)])
    with pytest.raises(EvalError, match=message):
        Evaluator(model).run(None, dict(zip(names, values)))
