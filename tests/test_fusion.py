"""Plan-time fusion and prepared convolutions give the results of running the nodes one by one.

Each case builds a small model twice: once with constant weights (so the plan folds BatchNormalization
and Mul/Add into the Conv, runs Relu in place and prepares the Conv per input shape) and once with
the same tensors fed as graph inputs (nothing is constant, so nothing is fused). Both must agree.
To add a case, add a line to a table.
"""

from __future__ import annotations

import numpy as np
import pytest
from onnx import helper

from helpers import graph_model

from onnxtext.evaluator import Evaluator

RNG = np.random.default_rng(0)

# (input shape, weight shape, Conv attributes)
CONVS = [
    ((1, 4, 6, 6), (8, 4, 1, 1), {}),
    ((2, 4, 6, 6), (8, 2, 1, 1), {"group": 2}),
    ((1, 4, 6, 6), (8, 4, 1, 1), {"strides": [2, 2]}),
    ((1, 3, 9, 9), (5, 3, 3, 3), {"pads": [1, 1, 1, 1]}),
    ((2, 3, 9, 7), (5, 3, 3, 2), {"pads": [1, 0, 2, 1], "strides": [2, 1], "dilations": [1, 2]}),
    ((1, 6, 8, 8), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1]}),
    ((2, 6, 8, 8), (6, 1, 3, 3), {"group": 6, "pads": [1, 1, 1, 1], "strides": [2, 2]}),
    ((1, 6, 9, 8), (6, 1, 3, 3), {"group": 6, "pads": [2, 2, 2, 2], "dilations": [2, 2]}),
    ((1, 4, 8, 8), (12, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}),  # depth multiplier 3
    ((1, 8, 7, 7), (8, 2, 3, 3), {"group": 4, "auto_pad": "SAME_UPPER"}),
    ((1, 16, 128, 128), (40, 16, 3, 3), {"pads": [1, 1, 1, 1]}),  # im2col in bands of output rows
    ((1, 16, 64, 64), (4, 16, 3, 3), {"pads": [1, 1, 1, 1]}),  # few outputs: shifted matmuls
    ((1, 16, 130, 128), (6, 8, 3, 3), {"group": 2, "pads": [0, 1, 2, 1], "strides": [1, 1]}),
    ((1, 2, 10), (4, 2, 3), {"pads": [1, 1]}),  # 1-D
    ((1, 2, 4, 5, 5), (3, 2, 2, 3, 3), {}),  # 3-D
]

# the node chain after the Conv: (op, per-channel constant or None)
CHAINS = [
    [],
    [("Relu", None)],
    [("BatchNormalization", None)],
    [("BatchNormalization", None), ("Relu", None)],
    [("BatchNormalization", None), ("Mul", "channel"), ("Add", "channel"), ("Relu", None)],
    [("Mul", "scalar"), ("Add", "channel")],
]


def _chain_nodes(chain, x, channels, rank, tensors):
    """Nodes applying ``chain`` to ``x``; their constant operands go into ``tensors``."""
    nodes = []
    for i, (op, kind) in enumerate(chain):
        y = f"c{i}"
        if op == "BatchNormalization":
            names = [f"bn{i}_{p}" for p in ("scale", "bias", "mean", "var")]
            for p in names:
                tensors[p] = RNG.uniform(0.5, 1.5, channels).astype(np.float32)
            nodes.append(helper.make_node(op, [x] + names, [y], epsilon=1e-3))
        elif kind is not None:
            shape = (channels,) + (1,) * (rank - 2) if kind == "channel" else (1,)
            tensors[f"k{i}"] = RNG.uniform(-1, 1, shape).astype(np.float32)
            nodes.append(helper.make_node(op, [x, f"k{i}"], [y]))
        else:
            nodes.append(helper.make_node(op, [x], [y]))
        x = y
    return nodes, x


def _model(nodes, inputs, output, initializers, ints=None):
    """ints: int64 initializers (Reshape targets), never fed as inputs."""
    return graph_model(nodes, inputs, [output], {**initializers, **(ints or {})})


def _run_both(nodes, x, tensors, output):
    fused = Evaluator(_model(nodes, {"X": x}, output, tensors))
    plain = Evaluator(_model(nodes, {"X": x, **tensors}, output, {}))
    got = fused.run(None, {"X": x})[0]
    want = plain.run(None, {"X": x, **tensors})[0]
    assert got.dtype == want.dtype == np.float32
    # folding changes float32 rounding: sums of up to 144 unit-scale products differ by ~1e-5 absolute
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    return fused


@pytest.mark.parametrize("x_shape, w_shape, attrs", CONVS)
@pytest.mark.parametrize("chain", CHAINS, ids=lambda c: "-".join(op for op, _ in c) or "conv")
def test_conv_chain_matches_unfused(x_shape, w_shape, attrs, chain):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    tensors = {"W": RNG.standard_normal(w_shape).astype(np.float32),
               "B": RNG.standard_normal(w_shape[0]).astype(np.float32)}
    conv = helper.make_node("Conv", ["X", "W", "B"], ["y"], **attrs)
    more, out = _chain_nodes(chain, "y", w_shape[0], len(x_shape), tensors)
    fused = _run_both([conv] + more, x, tensors, out)
    assert len(fused._plan_for(None, ()).steps) == 1  # the whole chain is one prepared conv step
    fused.run(None, {"X": x[:, :, ::-1].copy()})  # a second call reuses the prepared shape


@pytest.mark.parametrize("chain", CHAINS[2:], ids=lambda c: "-".join(op for op, _ in c))
def test_standalone_normalization_chain_matches_unfused(chain):
    x = RNG.standard_normal((2, 5, 4, 3)).astype(np.float32)
    tensors = {}
    nodes, out = _chain_nodes(chain, "s", 5, 4, tensors)
    nodes.insert(0, helper.make_node("Sigmoid", ["X"], ["s"]))  # a producer that is not a Conv
    _run_both(nodes, x, tensors, out)


def test_intermediate_read_twice_is_not_fused():
    x = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)
    tensors = {"W": RNG.standard_normal((4, 3, 1, 1)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["X", "W"], ["y"]), helper.make_node("Relu", ["y"], ["r"]),
             helper.make_node("Add", ["y", "r"], ["z"])]
    _run_both(nodes, x, tensors, "z")


def test_conv_input_shape_change_and_other_thread():
    import threading

    x = RNG.standard_normal((1, 3, 8, 8)).astype(np.float32)
    tensors = {"W": RNG.standard_normal((4, 3, 3, 3)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["X", "W"], ["y"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["y"], ["z"])]
    graph = _model(nodes, {"X": x}, "z", tensors)
    graph.graph.input[0].type.tensor_type.shape.dim[2].dim_param = "H"
    ev = Evaluator(graph)
    results = {}
    for h in (8, 5, 8):
        xi = x[:, :, :h]
        want = Evaluator(_model(nodes, {"X": xi, **tensors}, "z", {})).run(None, {"X": xi, **tensors})[0]
        np.testing.assert_allclose(ev.run(None, {"X": xi})[0], want, rtol=1e-4, atol=1e-5)
        results[h] = want
    thread = threading.Thread(target=lambda: results.__setitem__("thread", ev.run(None, {"X": x})[0]))
    thread.start()
    thread.join()
    np.testing.assert_allclose(results["thread"], results[8], rtol=1e-4, atol=1e-5)


# Concat along channels of Conv results: each part is a Conv (weight shape, attributes) or "value"
# (a Sigmoid of X, copied in); the Convs write straight into their slices of the Concat result
CONCATS = [
    ((1, 4, 6, 6), [((8, 4, 1, 1), {}), ((6, 4, 3, 3), {"pads": [1, 1, 1, 1]})], 1),  # a fire module
    ((2, 4, 6, 6), [((8, 4, 1, 1), {}), ((6, 4, 3, 3), {"pads": [1, 1, 1, 1]})], 1),  # batch: strided slices
    ((1, 4, 6, 6), [((4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1]}), "value"], -3),  # depthwise + copy
    ((1, 4, 9, 9), [((5, 4, 3, 3), {"pads": [1, 1, 1, 1], "strides": [2, 2]}),
                    ((4, 1, 3, 3), {"group": 4, "pads": [1, 1, 1, 1], "strides": [2, 2]})], 1),  # strided depthwise
    ((1, 16, 128, 128), [((40, 16, 3, 3), {"pads": [1, 1, 1, 1]}), ((8, 16, 1, 1), {})], 1),  # banded im2col
]


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("x_shape, parts, axis", CONCATS)
def test_convs_written_into_concat_match_unfused(x_shape, parts, axis, relu):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    tensors, nodes, names = {}, [], []
    for i, part in enumerate(parts):
        if part == "value":
            nodes.append(helper.make_node("Sigmoid", ["X"], [f"p{i}"]))
        else:
            w_shape, attrs = part
            tensors[f"W{i}"] = RNG.standard_normal((w_shape[0],) + (x_shape[1] // attrs.get("group", 1),) +
                                                   w_shape[2:]).astype(np.float32)
            tensors[f"B{i}"] = RNG.standard_normal(w_shape[0]).astype(np.float32)
            nodes.append(helper.make_node("Conv", ["X", f"W{i}", f"B{i}"], [f"p{i}"], **attrs))
        names.append(f"p{i}")
    nodes.append(helper.make_node("Concat", names, ["c"], axis=axis))
    out = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        out = "r"
    fused = _run_both(nodes, x, tensors, out)
    steps = fused._plan_for(None, ()).steps
    assert len(steps) == 1 + parts.count("value")  # the Convs run inside the Concat step
    x2 = x[:, :, ::-1].copy()  # a second call reuses the prepared slices
    plain = Evaluator(_model(nodes, {"X": x, **tensors}, out, {}))
    np.testing.assert_allclose(fused.run(None, {"X": x2})[0], plain.run(None, {"X": x2, **tensors})[0],
                               rtol=1e-4, atol=1e-4)


def test_conv_result_read_elsewhere_is_not_written_into_concat():
    x = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)
    tensors = {"W": RNG.standard_normal((4, 3, 1, 1)).astype(np.float32),
               "V": RNG.standard_normal((2, 3, 1, 1)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["X", "W"], ["y"]), helper.make_node("Conv", ["X", "V"], ["v"]),
             helper.make_node("Concat", ["y", "v"], ["c"], axis=1), helper.make_node("Concat", ["c", "y"], ["z"], axis=1)]
    fused = _run_both(nodes, x, tensors, "z")
    assert len(fused._plan_for(None, ()).steps) == 3  # conv y stays a step of its own


# Conv then Reshape -> Transpose -> Reshape: (input shape, weight shape, Conv attributes, first
# Reshape target, Transpose perm, second Reshape target). A true channel shuffle is fused into the
# Conv; any other chain must still give the chain's result.
SHUFFLES = [
    ((1, 8, 5, 5), (8, 2, 1, 1), {"group": 4}, [1, 4, 2, 5, 5], [0, 2, 1, 3, 4], [1, 8, 5, 5]),  # matmul writes
    ((2, 8, 5, 5), (8, 2, 1, 1), {"group": 4}, [0, 4, -1, 5, 5], [0, 2, 1, 3, 4], [0, -1, 5, 5]),  # batch, 0/-1
    ((1, 6, 6, 6), (6, 3, 3, 3), {"group": 2, "pads": [1, 1, 1, 1]}, [1, 2, 3, 6, 6], [0, 2, 1, 3, 4],
     [1, 6, 6, 6]),  # im2col writes
    ((1, 8, 5, 5), (8, 2, 1, 1), {"group": 4}, [1, 2, 4, 5, 5], [0, 2, 1, 3, 4], [1, 8, 5, 5]),  # g != group
    ((1, 6, 7, 7), (6, 1, 3, 3), {"group": 6, "strides": [2, 2]}, [1, 3, 2, 3, 3], [0, 2, 1, 3, 4],
     [1, 6, 3, 3]),  # depthwise: shuffled by a copy
    ((1, 8, 5, 5), (8, 2, 1, 1), {"group": 4}, [1, 4, 2, 5, 5], [0, 1, 2, 4, 3], [1, 8, 5, 5]),  # not a shuffle
    ((1, 8, 4, 4), (8, 2, 1, 1), {"group": 4}, [1, 4, 2, 16], [0, 2, 1, 3], [1, 8, 4, 4]),  # not a shuffle
]


@pytest.mark.parametrize("relu", [False, True])
@pytest.mark.parametrize("x_shape, w_shape, attrs, first, perm, second", SHUFFLES)
def test_channel_shuffle_after_conv_matches_unfused(x_shape, w_shape, attrs, first, perm, second, relu):
    x = RNG.standard_normal(x_shape).astype(np.float32)
    tensors = {"W": RNG.standard_normal(w_shape).astype(np.float32),
               "B": RNG.standard_normal(w_shape[0]).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["X", "W", "B"], ["y"], **attrs)]
    if relu:
        nodes.append(helper.make_node("Relu", ["y"], ["ry"]))
    nodes += [helper.make_node("Reshape", ["ry" if relu else "y", "S1"], ["a"]),
              helper.make_node("Transpose", ["a"], ["t"], perm=perm),
              helper.make_node("Reshape", ["t", "S2"], ["z"])]
    ints = {"S1": np.array(first, np.int64), "S2": np.array(second, np.int64)}
    fused = Evaluator(_model(nodes, {"X": x}, "z", tensors, ints))
    plain = Evaluator(_model(nodes, {"X": x, **tensors}, "z", {}, ints))
    for xi in (x, x[:, :, ::-1].copy()):  # the second call reuses the prepared shape
        np.testing.assert_allclose(fused.run(None, {"X": xi})[0], plain.run(None, {"X": xi, **tensors})[0],
                                   rtol=1e-4, atol=1e-4)
    assert len(fused._plan_for(None, ()).steps) == 1


# Conv result + a residual: (op, conv result first?, residual shape or None for X itself, Relu after?)
RESIDUALS = [
    ("Add", True, None, True),  # ResNet: Conv -> BN -> Add(., shortcut) -> Relu
    ("Add", False, None, False),
    ("Sum", True, None, True),  # ShuffleNet
    ("Sum", False, None, False),
    ("Add", True, (1, 4, 1, 1), True),  # a constant that broadcasts: the original Add kernel
    ("Add", False, (2, 1, 1, 6, 6), False),  # broadcast to a larger result
]


@pytest.mark.parametrize("op, conv_first, other_shape, relu", RESIDUALS)
def test_residual_add_after_conv_matches_unfused(op, conv_first, other_shape, relu):
    x = RNG.standard_normal((1, 4, 6, 6)).astype(np.float32)
    tensors = {"W": RNG.standard_normal((4, 4, 3, 3)).astype(np.float32),
               "B": RNG.standard_normal(4).astype(np.float32)}
    nodes = [helper.make_node("Sigmoid", ["X"], ["s"])]  # the residual exists before the Conv runs
    other = "s"
    if other_shape is not None:
        tensors["R"] = RNG.standard_normal(other_shape).astype(np.float32)
        other = "R"
    nodes.append(helper.make_node("Conv", ["X", "W", "B"], ["y"], pads=[1, 1, 1, 1]))
    nodes.append(helper.make_node(op, ["y", other] if conv_first else [other, "y"], ["z"]))
    if relu:
        nodes.append(helper.make_node("Relu", ["z"], ["r"]))
    fused = _run_both(nodes, x, tensors, "r" if relu else "z")
    assert len(fused._plan_for(None, ()).steps) == 2  # the Sigmoid, and the Conv doing the Add (and Relu)


def test_residual_computed_after_the_conv_is_not_fused():
    x = RNG.standard_normal((1, 3, 5, 5)).astype(np.float32)
    tensors = {"W": RNG.standard_normal((3, 3, 1, 1)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["X", "W"], ["y"]), helper.make_node("Sigmoid", ["X"], ["s"]),
             helper.make_node("Add", ["y", "s"], ["z"])]
    fused = _run_both(nodes, x, tensors, "z")
    assert len(fused._plan_for(None, ()).steps) == 3


# Relu then MaxPool: (producer, MaxPool attributes, whether the Relu moves after the pool)
RELU_POOLS = [
    ("conv", {"kernel_shape": [3, 3], "strides": [2, 2]}, True),
    ("conv", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1}, True),
    ("conv", {"kernel_shape": [2, 2], "auto_pad": "SAME_UPPER"}, True),
    ("conv", {"kernel_shape": [2, 2], "pads": [2, 2, 2, 2]}, False),  # windows all padding: -inf stays
    ("concat", {"kernel_shape": [3, 3], "strides": [2, 2]}, True),  # SqueezeNet's fire module
    ("add", {"kernel_shape": [2, 2], "strides": [1, 1]}, True),  # an in-place Relu of another step
]


@pytest.mark.parametrize("producer, pool_attrs, moved", RELU_POOLS)
def test_relu_moves_after_max_pool(producer, pool_attrs, moved):
    from onnxtext.evaluator.fused.affine import InPlaceRelu

    x = RNG.standard_normal((1, 3, 9, 9)).astype(np.float32)
    tensors = {"W": RNG.standard_normal((4, 3, 3, 3)).astype(np.float32),
               "V": RNG.standard_normal((2, 3, 1, 1)).astype(np.float32)}
    nodes = [helper.make_node("Conv", ["X", "W"], ["a"], pads=[1, 1, 1, 1])]
    if producer == "concat":
        nodes += [helper.make_node("Relu", ["a"], ["ra"]), helper.make_node("Conv", ["X", "V"], ["b"]),
                  helper.make_node("Relu", ["b"], ["rb"]), helper.make_node("Concat", ["ra", "rb"], ["r"], axis=1)]
    elif producer == "add":
        nodes += [helper.make_node("Add", ["a", "a"], ["s"]), helper.make_node("Relu", ["s"], ["r"])]
    else:
        nodes.append(helper.make_node("Relu", ["a"], ["r"]))
    nodes.append(helper.make_node("MaxPool", ["r"], ["p"], **pool_attrs))
    fused = _run_both(nodes, x, tensors, "p")
    pool_step = fused._plan_for(None, ()).steps[-1]
    assert isinstance(pool_step[0], InPlaceRelu) == moved
