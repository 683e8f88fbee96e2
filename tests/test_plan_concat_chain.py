"""Chains of Concat steps (each extending the previous result, as in DenseNet) share one buffer per run.

The plan turns such chains into links writing after the previous prefix instead of copying it again;
these tests check that results, and values handed out earlier, are exactly those of separate
concatenations, across runs and for the cases the sharing must refuse (branches, batches > 1,
graph outputs held by the caller). Expected values are computed here with plain numpy. To add a
case, add a line to ``CASES``.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from helpers import graph_model

from onnxtext.evaluator import Evaluator

F = TensorProto.FLOAT


def dense_block(layers, axis=1, branch=False, outputs=("out",)):
    """x -> c0 = Concat(x, Neg(x)) -> c1 = Concat(c0, Sin(c0)) -> ... -> out = Sqrt(Abs(c_last)).

    With ``branch`` a second Concat also extends ``c0``: ``b = Concat(c0, Cos(c0))`` -> ``bout``.
    """
    nodes = [helper.make_node("Neg", ["x"], ["n0"]), helper.make_node("Concat", ["x", "n0"], ["c0"], axis=axis)]
    for i in range(1, layers):
        nodes.append(helper.make_node("Sin", [f"c{i - 1}"], [f"s{i}"]))
        nodes.append(helper.make_node("Concat", [f"c{i - 1}", f"s{i}"], [f"c{i}"], axis=axis))
    nodes.append(helper.make_node("Abs", [f"c{layers - 1}"], ["a"]))
    nodes.append(helper.make_node("Sqrt", ["a"], ["out"]))
    if branch:
        nodes.append(helper.make_node("Cos", ["c0"], ["k"]))
        nodes.append(helper.make_node("Concat", ["c0", "k"], ["b"], axis=axis))
        nodes.append(helper.make_node("Neg", ["b"], ["bout"]))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", F, None)],
                              [helper.make_tensor_value_info(o, F, None) for o in outputs])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)], ir_version=9)


def expected(x, layers, axis=1, names=("out",)):
    values = {"c0": np.concatenate([x, -x], axis=axis)}
    for i in range(1, layers):
        c = values[f"c{i - 1}"]
        values[f"c{i}"] = np.concatenate([c, np.sin(c)], axis=axis)
    values["out"] = np.sqrt(np.abs(values[f"c{layers - 1}"]))
    values["bout"] = -np.concatenate([values["c0"], np.cos(values["c0"])], axis=axis)
    return [values[n] for n in names]


# (input shape, layers, axis, branch, outputs)
CASES = [
    ((1, 3, 4, 4), 4, 1, False, ("out",)),
    ((1, 3, 4, 4), 4, 1, True, ("out", "bout")),  # two concats extend c0: only one may write after it
    ((2, 3, 4, 4), 3, 1, False, ("out",)),  # batch of 2: a channel prefix is not contiguous, no sharing
    ((1, 3, 4, 4), 3, -3, False, ("out",)),
    ((1, 1, 4, 5), 3, 2, False, ("out",)),  # leading dimensions of 1 before the axis
    ((1, 3, 4, 4), 5, 1, False, ("out", "c1", "c3")),  # intermediate prefixes are graph outputs
    ((6,), 3, 0, False, ("out", "c2")),
]


@pytest.mark.parametrize("shape,layers,axis,branch,outputs", CASES)
def test_chain_matches_separate_concatenations(shape, layers, axis, branch, outputs):
    ev = Evaluator(dense_block(layers, axis, branch, outputs))
    rng = np.random.default_rng(0)
    held = []
    for _ in range(3):  # the first run learns the final length, later runs share (and reuse) the buffer
        x = rng.standard_normal(shape).astype(np.float32)
        got = ev.run(None, {"x": x})
        for g, w in zip(got, expected(x, layers, axis, outputs)):
            np.testing.assert_array_equal(g, w)
        held.append((got, [g.copy() for g in got]))
    for got, copies in held:  # values returned by earlier runs were not overwritten by later ones
        for g, c in zip(got, copies):
            np.testing.assert_array_equal(g, c)


def test_input_shape_change_between_runs():
    ev = Evaluator(dense_block(4))
    rng = np.random.default_rng(1)
    for shape in [(1, 3, 4, 4), (1, 3, 4, 4), (1, 5, 2, 3), (1, 3, 4, 4), (1, 5, 2, 3), (1, 5, 2, 3)]:
        x = rng.standard_normal(shape).astype(np.float32)
        np.testing.assert_array_equal(ev.run(None, {"x": x})[0], expected(x, 4)[0])


def test_chain_steps_are_linked_in_the_plan():
    from onnxtext.evaluator.kernels.shape import ConcatLink

    ev = Evaluator(dense_block(4, branch=True, outputs=("out", "bout")))
    links = [st[0] for st in ev._main.steps if isinstance(st[0], ConcatLink)]
    assert [link.position for link in links] == [0, 1, 2, 3]  # the branch's Concat stays a plain one


def test_prefixes_share_the_buffer_after_the_first_run():
    ev = Evaluator(dense_block(5, outputs=("c1", "c3")))
    x = np.ones((1, 2, 3, 3), np.float32)
    c1, c3 = ev.run(None, {"x": x})
    assert not np.shares_memory(c1, c3)  # first run: plain concatenations, final length learnt
    c1, c3 = ev.run(None, {"x": x})
    assert np.shares_memory(c1, c3) and c1.flags.c_contiguous
    np.testing.assert_array_equal(c3[:, :c1.shape[1]], c1)


def conv_reference(x, w, pad):
    """Plain 2-D convolution (one image, zero padding, unit strides): a sum over kernel taps."""
    m, c, kh, kw = w.shape
    xp = np.pad(x[0].astype(np.float64), ((0, 0), (pad, pad), (pad, pad)))
    h, wd = xp.shape[1] - kh + 1, xp.shape[2] - kw + 1
    y = np.zeros((m, h, wd))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("mc,chw->mhw", w[:, :, i, j], xp[:, i:i + h, j:j + wd])
    return y[None]


def conv_block(layers, growth, kernel):
    """A DenseNet block: c_i = Concat(c_{i-1}, Conv_i(Relu(c_{i-1}))) with constant weights, so the
    plan computes each Conv straight into the Concat (and the chain into one buffer)."""
    rng = np.random.default_rng(2)
    nodes, inits, weights, channels = [], {}, [], 3
    previous = "x"
    for i in range(layers):
        w = rng.standard_normal((growth, channels, kernel, kernel)).astype(np.float32)
        weights.append(w)
        inits[f"w{i}"] = w
        nodes.append(helper.make_node("Relu", [previous], [f"r{i}"]))
        nodes.append(helper.make_node("Conv", [f"r{i}", f"w{i}"], [f"y{i}"], pads=[kernel // 2] * 4))
        nodes.append(helper.make_node("Concat", [previous, f"y{i}"], [f"c{i}"], axis=1))
        previous, channels = f"c{i}", channels + growth
    return graph_model(nodes, {"x": None}, [previous], inits, opset=18, ir_version=9), weights


@pytest.mark.parametrize("layers,growth,kernel", [(4, 2, 1), (3, 4, 3), (5, 1, 3)])
def test_chain_of_convs_written_into_the_buffer(layers, growth, kernel):
    model, weights = conv_block(layers, growth, kernel)
    ev = Evaluator(model)
    rng = np.random.default_rng(3)
    for shape in [(1, 3, 6, 5), (1, 3, 6, 5), (1, 3, 6, 5), (1, 3, 4, 4), (2, 3, 4, 4)]:
        x = rng.standard_normal(shape).astype(np.float32)
        want = x.astype(np.float64)
        for w in weights:
            parts = [conv_reference(np.maximum(want[n:n + 1], 0), w, kernel // 2) for n in range(len(want))]
            want = np.concatenate([want, np.concatenate(parts)], axis=1)
        np.testing.assert_allclose(ev.run(None, {"x": x})[0], want, rtol=1e-5, atol=1e-5)


def test_runs_in_several_threads_share_nothing():
    import threading

    ev = Evaluator(dense_block(6))
    ev.run(None, {"x": np.zeros((1, 3, 4, 4), np.float32)})  # learn the final length
    failures = []

    def worker(seed):
        rng = np.random.default_rng(seed)
        for _ in range(40):
            x = rng.standard_normal((1, 3, 4, 4)).astype(np.float32)
            if not np.array_equal(ev.run(None, {"x": x})[0], expected(x, 6)[0]):
                failures.append(seed)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
