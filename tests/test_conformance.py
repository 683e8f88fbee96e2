"""The ONNX backend suites through the evaluator, one test per case (see tests/conformance.py).

Cases listed in tests/data/known_failures.txt are expected to fail, strictly: a listed case that
passes fails the test too, so the list stays honest. Random-valued operators are listed there and
checked by distribution and shape in test_random_operators instead of by the suite's exact values.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.dirname(__file__))
import conformance  # noqa: E402


@functools.lru_cache(maxsize=None)
def _node_cases() -> dict:
    return {c[0]: c for c in conformance.node_cases()}


@functools.lru_cache(maxsize=None)
def _folder_cases() -> dict:
    return {c[0]: c for c in conformance.folder_cases()}


KNOWN = conformance.known_failures()


def _check(case):
    name, model, sets, rtol, atol = case
    reason = KNOWN.get(name)
    try:
        conformance.run_case(model, sets, rtol, atol)
    except Exception as e:  # noqa: BLE001 - any failure kind is a failure of the case
        if reason is not None:
            pytest.xfail(reason)
        raise AssertionError(f"{type(e).__name__}: {e}") from e
    if reason is not None:
        pytest.fail(f"{name} passes now: remove it from tests/data/known_failures.txt ({reason})")


@pytest.mark.parametrize("name", sorted(_node_cases()))
def test_node(name):
    _check(_node_cases()[name])


@pytest.mark.parametrize("name", sorted(_folder_cases()))
def test_folder(name):
    _check(_folder_cases()[name])


@functools.lru_cache(maxsize=None)
def _function_body_cases() -> dict:
    """Node cases whose operator has a schema function body at the case's opset (name -> op)."""
    from onnxtext.evaluator.functions import _function_versions
    from onnxtext.evaluator.plan import find_schema
    from onnxtext.evaluator.registry import normalize_domain

    out = {}
    for name, case in _node_cases().items():
        model = case[1]
        if "_expanded" in name or not model.graph.node:
            continue
        node = model.graph.node[0]
        domain = normalize_domain(node.domain)
        opset = {normalize_domain(o.domain): o.version for o in model.opset_import}.get(domain)
        schema = find_schema(node.op_type, domain, opset) if opset else None
        if schema is not None and any(v <= opset for versions in _function_versions(schema) for v in versions):
            out[name] = node.op_type
    return out


@pytest.mark.parametrize("name", sorted(_function_body_cases()))
def test_node_through_function_body(name, monkeypatch):
    """The case's operator run through its schema function body instead of its kernel (the fallback
    for operators without a kernel, and a cross-check of the kernel against the body)."""
    from onnxtext.evaluator import plan

    op = _function_body_cases()[name]
    real_lookup = plan.lookup
    monkeypatch.setattr(plan, "lookup", lambda o, d, v: None if o == op else real_lookup(o, d, v))
    _check(_node_cases()[name])


def test_known_failures_exist():
    """Every name in the known-failures file is a real case (typos would silently never run)."""
    names = set(_node_cases()) | set(_folder_cases())
    unknown = sorted(n for n in KNOWN if n not in names)
    assert not unknown, f"known_failures.txt names cases that do not exist: {unknown[:10]}"


# ---------------------------------------------------------------------------------------------- random ops
def _run_single(op, inputs, attrs, opset, seed=0, n_out=1):
    from onnx import TensorProto, helper

    from onnxtext.evaluator import Evaluator

    names = [f"x{i}" for i in range(len(inputs))]
    node = helper.make_node(op, names, [f"y{i}" for i in range(n_out)], **attrs)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(
        v.dtype), v.shape) for n, v in zip(names, inputs)],
        [helper.make_tensor_value_info(f"y{i}", TensorProto.UNDEFINED, None) for i in range(n_out)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    return Evaluator(model, seed=seed).run(None, dict(zip(names, inputs)))


RANDOM_CASES = [
    # op, inputs, attrs, opset, check(outputs)
    ("RandomUniform", [], dict(shape=[200, 50], low=2.0, high=5.0), 22,
     lambda y: y.shape == (200, 50) and y.dtype == np.float32 and 2 <= y.min() and y.max() < 5
     and abs(y.mean() - 3.5) < 0.05),
    ("RandomNormal", [], dict(shape=[200, 50], mean=1.0, scale=2.0), 22,
     lambda y: y.shape == (200, 50) and y.dtype == np.float32 and abs(y.mean() - 1) < 0.1
     and abs(y.std() - 2) < 0.1),
    ("RandomUniformLike", [np.zeros((100, 100), np.float64)], dict(low=-1.0, high=1.0), 22,
     lambda y: y.shape == (100, 100) and y.dtype == np.float64 and -1 <= y.min() and y.max() < 1
     and abs(y.mean()) < 0.05),
    ("RandomNormalLike", [np.zeros((100, 100), np.float32)], dict(mean=0.0, scale=1.0), 22,
     lambda y: y.shape == (100, 100) and y.dtype == np.float32 and abs(y.mean()) < 0.05 and abs(y.std() - 1) < 0.05),
    ("Bernoulli", [np.full((100, 100), 0.25, np.float32)], {}, 22,
     lambda y: y.shape == (100, 100) and y.dtype == np.float32 and set(np.unique(y)) <= {0, 1}
     and abs(y.mean() - 0.25) < 0.03),
    ("Bernoulli", [np.full((100, 100), 0.7, np.float64)], dict(dtype=9), 22,
     lambda y: y.dtype == np.bool_ and abs(y.mean() - 0.7) < 0.03),
    ("Multinomial", [np.log(np.array([[0.2, 0.8], [0.9, 0.1]], np.float32))], dict(sample_size=4000), 22,
     lambda y: y.shape == (2, 4000) and y.dtype == np.int32 and abs(y[0].mean() - 0.8) < 0.03
     and abs(y[1].mean() - 0.1) < 0.03),
]


@pytest.mark.parametrize("op,inputs,attrs,opset,check", RANDOM_CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(RANDOM_CASES)])
def test_random_operators(op, inputs, attrs, opset, check):
    (y,) = _run_single(op, inputs, attrs, opset)
    assert check(y), f"{op}: {y.dtype}{list(y.shape)} mean {float(np.mean(y)):.4f}"


def test_random_operators_are_seeded():
    a = _run_single("RandomUniform", [], dict(shape=[5]), 22, seed=7)[0]
    b = _run_single("RandomUniform", [], dict(shape=[5]), 22, seed=7)[0]
    c = _run_single("RandomUniform", [], dict(shape=[5]), 22, seed=8)[0]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
