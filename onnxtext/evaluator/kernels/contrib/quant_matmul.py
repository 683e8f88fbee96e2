"""com.microsoft weight-only and dynamic quantization: MatMulNBits, DynamicQuantizeMatMul,
MatMulIntegerToFloat, DynamicQuantizeLSTM.

MatMulNBits holds ``B`` as N rows of ``K`` 2/4/8-bit values in blocks of ``block_size`` along K, each
block with its scale and (packed, or float) zero point (default: the middle of the range,
``2**(bits-1)``); ``Y = A @ dequantized(B)^T (+ bias)``. Values are packed lowest bits first. The
dequantized float32 matrix is kept between runs (bounded, see :mod:`..derived_cache`).

The dynamic kernels quantize the float activation to uint8 on the fly with the range of the whole
tensor (see :func:`..quantize.dynamic_uint8_parameters`), multiply exactly in integers (BLAS, see
:func:`..linalg.integer_product`) and scale the int32 result back to float32, as onnxruntime does;
DynamicQuantizeLSTM does this for the input projection (all time steps at once) and for the
recurrence (once per step).
"""

from __future__ import annotations

import numpy as np

from ....errors import EvalError
from ...registry import kernel
from ..derived_cache import derived
from ..linalg import integer_product, shifted_operand
from ..quantize import dynamic_quantize_uint8
from ..rnn import _recurrent
from . import MS


def _unpack(packed: np.ndarray, bits: int) -> np.ndarray:
    """uint8 bytes -> their 8/bits values each, lowest bits first (last axis grows by 8/bits)."""
    if bits == 8:
        return packed
    per_byte = 8 // bits
    shifts = np.arange(per_byte, dtype=np.uint8) * bits
    values = (packed[..., None] >> shifts) & np.uint8((1 << bits) - 1)
    return values.reshape(packed.shape[:-1] + (packed.shape[-1] * per_byte,))


def _nbits_weights(B, scales, zero_points, g_idx, K, N, bits, block_size):
    """The dequantized float32 weight matrix (N, K) of MatMulNBits."""
    blocks = (K + block_size - 1) // block_size
    q = _unpack(B.reshape(N, blocks, -1), bits).reshape(N, blocks, block_size).astype(np.float32)
    scales = scales.astype(np.float32).reshape(N, blocks)
    if zero_points is None:
        zp = np.full((N, blocks), float(1 << (bits - 1)), np.float32)
    elif zero_points.dtype == np.uint8:
        zp = _unpack(zero_points.reshape(N, -1), bits)[:, :blocks].astype(np.float32)
    else:  # float zero points, in the scale's type: w = (q - zp) * scale as well
        zp = zero_points.astype(np.float32).reshape(N, blocks)
    if g_idx is not None and g_idx.size and not np.array_equal(g_idx, np.arange(K) // block_size):
        # act-order: column k uses the scale and zero point of block g_idx[k]
        flat = q.reshape(N, -1)[:, :K]
        idx = g_idx.astype(np.int64)
        return (flat - zp[:, idx]) * scales[:, idx]
    w = (q - zp[:, :, None]) * scales[:, :, None]
    return w.reshape(N, -1)[:, :K]


@kernel("MatMulNBits", since=1, domain=MS)
def matmul_nbits(A, B, scales, zero_points=None, g_idx=None, bias=None, *, K, N, bits=4, block_size,
                 accuracy_level=0):
    if bits not in (2, 4, 8):
        raise EvalError(f"MatMulNBits: bits={bits} is not supported (2, 4 or 8)")
    # dequantized once per (B, scales, zero points) when they are constants (see derived_cache)
    wt = derived(f"nbits-{K}-{N}-{bits}-{block_size}", (B, scales, zero_points, g_idx),
                 lambda: np.ascontiguousarray(_nbits_weights(B, scales, zero_points, g_idx, K, N, bits,
                                                             block_size).T), lambda w: w.nbytes,
                 readonly_inputs=True)
    y = np.matmul(A.astype(np.float32), wt)
    if bias is not None:
        y = y + bias.astype(np.float32)
    return y.astype(A.dtype)


@kernel("DynamicQuantizeMatMul", since=1, domain=MS)
def dynamic_quantize_matmul(A, B, b_scale, b_zero_point=None, bias=None):
    a_shifted, a_scale = dynamic_quantize_uint8(A)
    b_shifted, b_bound = shifted_operand(B, b_zero_point)
    acc = integer_product(a_shifted, b_shifted, None, b_bound)
    y = acc.astype(np.float32) * (a_scale * np.asarray(b_scale, np.float32))
    if bias is not None:
        y = y + bias.astype(np.float32)
    return y.astype(np.float32)


@kernel("MatMulIntegerToFloat", since=1, domain=MS)
def matmul_integer_to_float(A, B, a_scale, b_scale, a_zero_point=None, b_zero_point=None, bias=None):
    a_shifted, a_bound = shifted_operand(A, a_zero_point)
    b_shifted, b_bound = shifted_operand(B, b_zero_point)
    acc = integer_product(a_shifted, b_shifted, a_bound, b_bound)
    scale = np.asarray(a_scale).astype(np.float32) * np.asarray(b_scale).astype(np.float32)
    y = acc.astype(np.float32) * scale
    if bias is not None:
        y = y + bias.astype(np.float32)
    return y.astype(np.asarray(a_scale).dtype)


class _DynamicQuantizedWeight:
    """A quantized weight matrix W (in, out) whose products with float rows quantize the rows on the fly."""

    def __init__(self, w, scale, zero_point):
        self.shifted = w.astype(np.float32) - np.asarray(zero_point, np.float32).reshape(1, -1)
        self.bound = float(np.abs(self.shifted).max(initial=0))
        self.scale = np.asarray(scale, np.float32).reshape(1, -1)

    def multiply(self, x):
        rows = x.reshape(-1, x.shape[-1])
        x_shifted, x_scale = dynamic_quantize_uint8(rows)
        acc = integer_product(x_shifted, self.shifted, None, self.bound).astype(np.float32)
        return (acc * (x_scale * self.scale)).reshape(x.shape[:-1] + (acc.shape[-1],))


def _lstm_weights(W, W_scale, W_zero_point, R, R_scale, R_zero_point) -> dict:
    weights = {}
    for d in range(W.shape[0]):
        weights[("W", d)] = _DynamicQuantizedWeight(W[d], W_scale[d], W_zero_point[d])
        weights[("R", d)] = _DynamicQuantizedWeight(R[d], R_scale[d], R_zero_point[d])
    return weights


class _Keys:
    """Stands for a weight tensor in rnn._recurrent: ``keys[d]`` is the key of direction d's matrix."""

    def __init__(self, shape, name):
        self.shape = shape
        self.name = name

    def __getitem__(self, d):
        return (self.name, d)


@kernel("DynamicQuantizeLSTM", since=1, domain=MS)
def dynamic_quantize_lstm(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None,
                          W_scale=None, W_zero_point=None, R_scale=None, R_zero_point=None, *,
                          hidden_size, direction="forward", activations=None, activation_alpha=None,
                          activation_beta=None, clip=None, input_forget=0):
    """LSTM whose W (dirs, input, 4H) and R (dirs, H, 4H) are int8/uint8 with per-direction (or per
    column) scales and zero points; gate order i, o, f, c as in ONNX LSTM."""
    sources = (W, W_scale, W_zero_point, R, R_scale, R_zero_point)
    weights = derived("dq-lstm", sources, lambda: _lstm_weights(*sources),
                      lambda ws: sum(w.shifted.nbytes for w in ws.values()), readonly_inputs=True)
    lens = None if sequence_lens is None else np.asarray(sequence_lens).astype(np.int64)
    if lens is not None and np.all(lens >= X.shape[0]):
        lens = None
    common = dict(hidden_size=hidden_size, layout=0, clip=clip, activation_alpha=activation_alpha,
                  activation_beta=activation_beta, input_forget=input_forget)
    if lens is None or direction == "forward" or (activations and direction == "bidirectional"):
        product = _FinishedRowsZeroed(weights, lens, direction)
        return _recurrent("LSTM", X, _Keys(W.shape, "W"), _Keys(R.shape, "R"), B, sequence_lens,
                          [initial_h, initial_c], P, direction=direction, activations=activations,
                          product=product, **common)
    # Sequences of different lengths running backwards: onnxruntime reverses each one within its length
    # and runs forward, so its time steps (and the rows quantized together at each) are those of the
    # reversed sequences. Do the same, one direction at a time.
    outputs = []
    for d in range(W.shape[0]):
        reverse = direction == "reverse" or d == 1
        one = {("W", 0): weights[("W", d)], ("R", 0): weights[("R", d)]}
        x = _reverse_within(X, lens) if reverse else X
        y, h, c = _recurrent("LSTM", x, _Keys((1,) + W.shape[1:], "W"), _Keys((1,) + R.shape[1:], "R"),
                             None if B is None else B[d:d + 1], sequence_lens,
                             [None if initial_h is None else initial_h[d:d + 1],
                              None if initial_c is None else initial_c[d:d + 1]],
                             None if P is None else P[d:d + 1], direction="forward",
                             activations=activations, product=_FinishedRowsZeroed(one, lens, "forward"), **common)
        outputs.append((_reverse_within(y[:, 0], lens)[:, None] if reverse else y, h, c))
    return tuple(np.concatenate([o[k] for o in outputs], axis=1 if k == 0 else 0) for k in range(3))


def _reverse_within(x: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """ReverseSequence on axis 0 with batch axis 1: each batch's first lens[b] steps in reverse order."""
    steps = x.shape[0]
    t = np.arange(steps)[:, None]
    source = np.where(t < lens[None, :], lens[None, :] - 1 - t, t)  # [T, B]
    return x[source, np.arange(x.shape[1])[None, :]]


class _FinishedRowsZeroed:
    """The product for rnn._recurrent, quantizing the recurrent input as onnxruntime does.

    onnxruntime multiplies R by the previous step's output, in which a forward sequence that has ended
    is a row of zeros (rnn._recurrent keeps its last state there, which gives the same outputs but a
    different range for the on-the-fly quantization). The recurrent products of each forward direction
    come once per time step in order, so counting them gives the step and the rows to zero."""

    def __init__(self, weights, lens, direction):
        self.weights = weights
        self.lens = lens
        self.forward = {0: direction != "reverse", 1: False}
        self.step = {}

    def __call__(self, x, key):
        kind, d = key
        if kind == "R" and self.lens is not None and self.forward[d]:
            t = self.step.get(d, 0)
            self.step[d] = t + 1
            x = np.where((self.lens < t)[:, None], np.float32(0), x)
        return self.weights[key].multiply(x)
