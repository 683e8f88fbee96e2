"""The one small-model builder and the comparisons that kernel and optimizer tests share.

* :func:`graph_model` builds a model from onnx.helper nodes, example inputs (arrays, or shapes of
  float32 inputs) and constants (initializers); :func:`node_model` is the one-node case;
  :func:`text_model` parses onnxtext text.
* :func:`run_onnxruntime` runs a model with onnxruntime (the numeric oracle, tests only);
  :func:`assert_matches_onnxruntime` compares the evaluator with it.
* :func:`assert_optimizer_equivalent` compares the evaluator at its highest optimization level with
  ``optimize=0`` (every node its own step, no rewrite): the differential test of every rewrite.
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper

from onnxtext import Evaluator, parse_model
from onnxtext.dtypes import from_numpy


F32 = onnx.TensorProto.FLOAT


def _input_info(name, value):
    """A graph input from an example array, or a float32 input of shape ``value`` (None: any)."""
    if isinstance(value, np.ndarray):
        return helper.make_tensor_value_info(name, from_numpy(value.dtype).enum, list(value.shape))
    return helper.make_tensor_value_info(name, F32, None if value is None else list(value))


def _output_info(output):
    """A graph output: a name (float32, any shape), or (name, element type enum)."""
    name, elem = (output, F32) if isinstance(output, str) else output
    return helper.make_tensor_value_info(name, elem, None)


def graph_model(nodes, inputs: dict, outputs, constants: dict | None = None, *, opset: int = 13,
                ir_version: int = 8, extra_opsets: dict | None = None) -> onnx.ModelProto:
    """A model of ``nodes`` (onnx.helper NodeProtos). ``inputs`` maps input names to example arrays
    or to shapes of float32 inputs (None: any shape); ``outputs`` are names (float32) or
    (name, element type) pairs; ``constants`` maps names to arrays, stored as initializers."""
    graph = helper.make_graph(
        list(nodes), "g", [_input_info(n, v) for n, v in inputs.items()], [_output_info(o) for o in outputs],
        [onnx.numpy_helper.from_array(np.asarray(v), n) for n, v in (constants or {}).items()])
    opsets = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in (extra_opsets or {}).items()]
    return helper.make_model(graph, opset_imports=opsets, ir_version=ir_version)


def node_model(op: str, inputs: dict, attrs: dict | None = None, *, outputs=("y",), constants: dict | None = None,
               opset: int = 18, domain: str = "", domain_opset: int = 1, ir_version: int = 9) -> onnx.ModelProto:
    """A model of one ``op`` node. ``inputs`` maps input names to example arrays (their element
    types and shapes become the graph inputs); ``constants`` maps further inputs to initializers.
    The node's inputs are ``inputs`` then ``constants``, in order; outputs are untyped."""
    constants = constants or {}
    node = helper.make_node(op, list(inputs) + list(constants), list(outputs), domain=domain, **(attrs or {}))
    model = graph_model([node], inputs, [], constants, opset=opset, ir_version=ir_version,
                        extra_opsets={domain: domain_opset} if domain else None)
    model.graph.output.extend(helper.make_value_info(o, onnx.TypeProto()) for o in outputs)
    return model


def text_model(text: str) -> onnx.ModelProto:
    """A model from onnxtext text (the fixtures' form)."""
    return parse_model(text)


def run_onnxruntime(model: onnx.ModelProto, feeds: dict, threads: int = 1) -> list:
    """The model's outputs computed by onnxruntime (the oracle; tests and benchmarks only)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def assert_close(got: list, want: list, rtol: float, atol: float, what: str = "") -> None:
    assert len(got) == len(want), (what, len(got), len(want))
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape, f"{what} output {i}: shape {g.shape} != {w.shape}"
        assert g.dtype == w.dtype, f"{what} output {i}: dtype {g.dtype} != {w.dtype}"
        if g.dtype.kind in "fc":
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{what} output {i}")
        else:
            np.testing.assert_array_equal(g, w, err_msg=f"{what} output {i}")


def assert_matches_onnxruntime(model, feeds: dict, rtol: float = 1e-5, atol: float = 1e-6, **evaluator_options):
    """The evaluator's outputs equal onnxruntime's (float outputs up to rtol/atol)."""
    got = Evaluator(model, **evaluator_options).run(None, feeds)
    assert_close(got, run_onnxruntime(model, feeds), rtol, atol, "evaluator vs onnxruntime:")
    return got


def assert_optimizer_equivalent(model, feeds: dict, rtol: float = 1e-5, atol: float = 1e-6, **evaluator_options):
    """The optimized evaluator's outputs equal those of ``optimize=0`` (up to float rounding);
    returns the optimized Evaluator for further checks on its plan."""
    optimized = Evaluator(model, **evaluator_options)
    reference = Evaluator(model, optimize=0)
    assert_close(optimized.run(None, feeds), reference.run(None, feeds), rtol, atol, "optimized vs optimize=0:")
    return optimized


def png_cycling_filters(samples: np.ndarray, color: int, depth: int = 8, palette: bytes | None = None) -> bytes:
    """A PNG whose rows cycle through all five filter types (None, Sub, Up, Average, Paeth)."""
    import struct
    import zlib

    height, width = samples.shape[:2]
    if depth == 16:
        rows = samples.astype(">u2").view(np.uint8).reshape(height, -1)
    elif depth < 8:
        bits = (samples.reshape(height, width, 1) >> np.arange(depth - 1, -1, -1)) & 1
        rows = np.packbits(bits.reshape(height, -1).astype(np.uint8), axis=1)
    else:
        rows = samples.reshape(height, -1).astype(np.uint8)
    bpp = max(samples.reshape(height, width, -1).shape[2] * depth // 8, 1)
    cur, prev = rows.astype(np.int64), np.vstack([np.zeros((1, rows.shape[1]), np.int64), rows[:-1]])
    left = np.hstack([np.zeros((height, bpp), np.int64), cur[:, :-bpp]])
    upleft = np.hstack([np.zeros((height, bpp), np.int64), prev[:, :-bpp]])
    p = left + prev - upleft
    pa, pb, pc = abs(p - left), abs(p - prev), abs(p - upleft)
    paeth = np.where((pa <= pb) & (pa <= pc), left, np.where(pb <= pc, prev, upleft))
    filtered = [cur, cur - left, cur - prev, cur - (left + prev) // 2, cur - paeth]
    body = b"".join(bytes([y % 5]) + (filtered[y % 5][y] % 256).astype(np.uint8).tobytes() for y in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, depth, color, 0, 0, 0)
    extra = chunk(b"PLTE", palette) if palette else b""
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + extra + chunk(b"IDAT", zlib.compress(body)) + \
        chunk(b"IEND", b"")
