"""com.microsoft::DynamicQuantizeLSTM: an LSTM whose W and R are 8-bit integers.

W (dirs, input, 4H) and R (dirs, H, 4H) are int8/uint8 with per-direction (or per-column) scales and
zero points; gate order i, o, f, c as in ONNX LSTM. As onnxruntime does, every product with them
quantizes its float operand to uint8 on the fly with the range of the whole operand (see
:func:`..quantize.dynamic_uint8_parameters`), multiplies exactly in integers (BLAS, see
:func:`..linalg.integer_product`) and scales the result back to float32: the input projection once
for all time steps, the recurrence once per step and direction (each direction's hidden state with
its own range).

The usual case (default activations, no clip, peepholes, input_forget or shorter sequences) runs
:func:`_quantized_lstm_loop` between the fast path's :func:`..rnn_cells.begin` and ``finish``;
the weights are shifted by their zero points and converted to float32 once (kept between runs by
:mod:`..derived_cache` for initializers). The rest goes through :func:`..rnn._recurrent` with a
quantizing product, one direction at a time.
"""

from __future__ import annotations

import numpy as np

from ...registry import kernel
from .. import rnn_cells
from ..derived_cache import derived
from ..linalg import integer_product
from ..quantize import dynamic_quantize_uint8
from ..rnn import _recurrent
from . import MS

_F255 = np.float32(255)
_TINY = np.finfo(np.float32).tiny


@kernel("DynamicQuantizeLSTM", since=1, domain=MS)
def dynamic_quantize_lstm(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None,
                          W_scale=None, W_zero_point=None, R_scale=None, R_zero_point=None, *,
                          hidden_size, direction="forward", activations=None, activation_alpha=None,
                          activation_beta=None, clip=None, input_forget=0, prepared=None):
    sources = (W, W_scale, W_zero_point, R, R_scale, R_zero_point)
    lens = None if sequence_lens is None else np.asarray(sequence_lens).astype(np.int64)
    if lens is not None and np.all(lens >= X.shape[0]):
        lens = None
    if lens is not None and lens.size and int(lens.max()) < X.shape[0]:
        # onnxruntime runs max(sequence_lens) steps, so the input's on-the-fly quantization covers those
        # rows only; Y is zero beyond them (and every final state of an empty sequence is zero)
        steps = max(int(lens.max()), 0)
        y = np.zeros((X.shape[0], W.shape[0], X.shape[1], hidden_size), np.float32)
        if not steps:
            states = np.zeros((W.shape[0], X.shape[1], hidden_size), np.float32)
            return y, states, states.copy()
        y[:steps], h, c = dynamic_quantize_lstm(
            X[:steps], W, R, B, sequence_lens, initial_h, initial_c, P, W_scale, W_zero_point, R_scale,
            R_zero_point, hidden_size=hidden_size, direction=direction, activations=activations,
            activation_alpha=activation_alpha, activation_beta=activation_beta, clip=clip,
            input_forget=input_forget, prepared=prepared)
        return y, h, c
    if lens is None and X.dtype == np.float32 and _fast_attributes(clip, input_forget, P, activations, W.shape[0]):
        if prepared is None:  # kept between runs for read-only weights (initializers)
            prepared = derived(f"dq-lstm-fast-{hidden_size}", sources + (B,),
                               lambda: _FastWeights(W, W_scale, W_zero_point, R, R_scale, R_zero_point, B,
                                                    hidden_size), lambda p: p.nbytes, readonly_inputs=True)
        return prepared.run(X, [initial_h, initial_c], rnn_cells.REVERSE[direction])
    weights = derived("dq-lstm", sources, lambda: _lstm_weights(*sources),
                      lambda ws: sum(w.shifted.nbytes for w in ws.values()), readonly_inputs=True)
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


def _fast_attributes(clip, input_forget, P, activations, num_directions) -> bool:
    return (clip is None and not input_forget and (P is None or not P.any())
            and rnn_cells.default_activations("LSTM", activations, num_directions))


def fast_weights(W, R, B, P, W_scale, W_zero_point, R_scale, R_zero_point, attrs):
    """The fast path's weights for a node whose weights, biases, peepholes, scales and zero points are
    constants, prepared once by the plan (rule ``prepared_recurrent``, which passes them back as the
    kernel's ``prepared`` attribute), or None when the node takes the general path."""
    if W_scale is None or R_scale is None or not _fast_attributes(
            attrs.get("clip"), attrs.get("input_forget", 0), P, attrs.get("activations"), W.shape[0]):
        return None
    return _FastWeights(W, W_scale, W_zero_point, R, R_scale, R_zero_point, B, attrs["hidden_size"])


def prepared_call(attrs: dict, prepared: "_FastWeights"):
    """``call(args) -> outputs or None``: the fast path straight from the node's input list for weights
    the plan prepared (see rnn.prepared_call); None when sequence_lens is given or X is not float32."""
    reverse = rnn_cells.REVERSE[attrs.get("direction", "forward")]

    def call(args):
        n = len(args)
        if (n > 4 and args[4] is not None) or args[0].dtype != np.float32:
            return None
        return prepared.run(args[0], [args[5] if n > 5 else None, args[6] if n > 6 else None], reverse)
    return call


def _shifted(w, zero_point):
    """(w - zero point as float32, its largest magnitude); w is [dirs, in, out] with zero points per
    direction or per (direction, column)."""
    dirs = w.shape[0]
    shifted = w.astype(np.float32)
    if zero_point is not None:
        shifted -= np.asarray(zero_point, np.float32).reshape(dirs, 1, -1)
    return shifted, float(np.abs(shifted).max(initial=0))


class _FastWeights:
    """The quantized weights in the fast loop's layout: zero points subtracted, W as it is [dirs, input,
    4H] for X @ W, R transposed to [dirs, 4H, H] for R^T @ h (gates as rows, see rnn_cells), the
    scales per gate (sigmoid gates halved), biases summed and scaled."""

    def __init__(self, W, W_scale, W_zero_point, R, R_scale, R_zero_point, B, hidden):
        dirs = W.shape[0]
        gate_scale = rnn_cells.sigmoid_scale("LSTM", hidden, np.float32)
        self.w_shifted, self.w_bound = _shifted(W, W_zero_point)  # [dirs, input, 4H]
        r_shifted, self.r_bound = _shifted(R, R_zero_point)
        self.r_rows = np.ascontiguousarray(np.swapaxes(r_shifted, 1, 2))  # [dirs, 4H, H]
        scales = np.asarray(W_scale, np.float32).reshape(dirs, -1) * gate_scale
        self.w_scales = scales[:, None, :]  # [dirs, 1, 4H]: per column of X @ W
        self.r_scales = (np.asarray(R_scale, np.float32).reshape(dirs, -1) * gate_scale)[:, :, None]  # per row
        if B is None:
            bias = np.zeros((dirs, 4 * hidden), np.float32)
        else:
            B = np.asarray(B, np.float32)
            bias = B[:, : 4 * hidden] + B[:, 4 * hidden:]
        self.cells = rnn_cells.Prepared.external(bias * gate_scale, hidden)
        self.nbytes = self.w_shifted.nbytes + self.r_rows.nbytes

    def run(self, X, initial_states, reverse):
        steps, batch, inputs = X.shape
        x_shifted, x_scale = quantized_input(X.reshape(1, steps * batch, inputs))
        acc = integer_product(x_shifted, self.w_shifted, 255.0, self.w_bound)
        projected = np.multiply(acc, x_scale * self.w_scales, dtype=np.float32)  # [dirs, T*B, 4H]
        ws = rnn_cells.begin("LSTM", X, self.cells, initial_states, reverse, projected=projected)
        _quantized_lstm_loop(ws, self.r_rows, self.r_bound, self.r_scales)
        return rnn_cells.finish(ws, reverse, self.cells.hidden)


def quantized_input(x: np.ndarray):
    """:func:`..quantize.dynamic_quantize_uint8` of a float32 array (the same codes minus the zero point,
    and scale) in fewer calls: the range by two reductions, the scale and zero point in numpy float32
    scalars, the codes by a division and a rounding, and a clamp only where a range end's code can
    leave [0, 255] (4 array calls instead of 7). Arrays with NaN or infinities, or all zeros, take
    dynamic_quantize_uint8 itself."""
    low = float(np.minimum.reduce(x, None, None, None, False, 0.0))
    high = float(np.maximum.reduce(x, None, None, None, False, 0.0))
    if not (low - low == 0 and high - high == 0) or low == high:
        return dynamic_quantize_uint8(x)
    low, high = np.float32(low), np.float32(high)
    scale = np.float32((high - low) / _F255)
    zero_point = min(255, max(0, round(float(-(low / scale)))))
    codes = np.divide(x, np.array(scale), dtype=np.float32)
    np.rint(codes, out=codes)
    if round(float(low / scale)) < -zero_point:
        np.maximum(codes, np.float32(-zero_point), out=codes)
    if round(float(high / scale)) > 255 - zero_point:
        np.minimum(codes, np.float32(255 - zero_point), out=codes)
    return codes, scale


def _quantized_lstm_loop(ws, r_rows, r_bound, r_scales):
    """rnn_cells' LSTM loop (see its _lstm_loop) with the recurrent product R h of each step taken as
    onnxruntime takes it: the [dirs*hidden, batch] state h quantized per direction (uint8, range of the
    direction's whole state including 0), multiplied exactly in integers and scaled back.

    The quantization is :func:`..quantize.dynamic_quantize_uint8` written out for every direction at
    once, with the same float32 arithmetic. Two of its steps drop out: the lower clamp of the codes (the
    zero point is round(-low / scale), so the smallest value's code is exactly 0) and the all-zero
    special case (a zero range gets the smallest normal scale instead of 1: every code is 0 either way).
    Each direction's scale and zero point are numpy float32 scalars (the same operations); every array
    call writes into buffers of the run's workspace (rnn_cells.Workspace), over contiguous memory: the
    integer product and its scaling run direction-major, and two directions are copied into the
    gate-major rows (one call; scaling through the strided gate-major view cost three times more). 17
    numpy array calls a step (2 reductions, 2 for the codes, the product, 2 scalings, the copy, the LSTM
    cell's 9)."""
    dirs, rows, hidden = r_rows.shape
    xs, hs, c = ws.x_steps, ws.h_states, ws.c
    steps, batch = len(xs), c.shape[-1]
    block = dirs * hidden
    add, multiply, divide, tanh, rint, matmul, copyto = (
        np.add, np.multiply, np.divide, np.tanh, np.rint, np.matmul, np.copyto)
    minimum, low_reduce, high_reduce = np.minimum, np.minimum.reduce, np.maximum.reduce
    # codes - zero point are within [-255, 255]: one float32 product is exact when every partial sum is
    exact = hidden * 255.0 * r_bound < 2 ** 24
    bufs = ws.extra.get("quantized")
    if bufs is None:
        g = np.empty((4 * block, batch), np.float32)  # gate rows i, o, f, c (gate-major across directions)
        acc = g if dirs == 1 else np.empty((dirs, rows, batch), np.float32)
        acc3 = acc.reshape(dirs, rows, batch)
        codes = np.empty((dirs, hidden * batch), np.float32)
        low, high, scale, zero_point = (np.empty((dirs, 1), np.float32) for _ in range(4))
        bufs = ws.extra["quantized"] = (
            g, g[: 3 * block], *(g[k * block:(k + 1) * block] for k in range(4)), np.empty(c.shape, np.float32),
            acc, acc3, g.reshape(4, dirs, hidden, batch), acc3.reshape(dirs, 4, hidden, batch).transpose(1, 0, 2, 3),
            [h.reshape(dirs, hidden * batch) for h in hs], codes, codes.reshape(dirs, hidden, batch),
            low, high, scale, zero_point, scale.reshape(dirs, 1, 1), np.empty((dirs, rows, batch), np.float32),
            list(zip(low, high)))
    (g, sig, gi, go, gf, gc, tmp, acc, acc3, g_rows, acc_rows, flat_states, codes, codes3, low, high, scale,
     zero_point, scale3, row_scales, ranges) = bufs
    half = np.array(0.5, np.float32)  # (a 0-d array: numpy converts a scalar operand at every call)
    # the rows' scales repeated over the batch: the product's scaling is then a plain elementwise call
    # (broadcasting one scale per row over a short batch took 1.9 us against 0.5 us at batch 3)
    r_scales = np.ascontiguousarray(np.broadcast_to(r_scales.reshape(dirs, -1, 1), (dirs, rows, batch)))
    single = r_rows[0] if dirs == 1 else None
    # ranges: per direction, views of the [1] rows the reductions write
    for k in range(steps):
        flat = flat_states[k]
        low_reduce(flat, 1, None, low, True, 0.0)  # axis 1, out, keepdims, initial 0
        high_reduce(flat, 1, None, high, True, 0.0)
        # per direction, in numpy float32 scalars (the same operations as on arrays, a tenth of the
        # cost): scale, 255 - zero point, and whether any code can exceed it (then the codes are
        # clamped; the largest code is the range's top divided by the scale, rounded)
        clamp = False
        for d, (lo, hi) in enumerate(ranges):
            lo, hi = lo[0], hi[0]
            step = (hi - lo) / _F255
            if step < _TINY:  # (False for NaN: such a range stays NaN, as on arrays)
                step = _TINY
            below, above = float(lo / step), float(hi / step)
            if below - below == 0 and above - above == 0:  # finite
                top = 255 + round(below)  # 255 - zero point: round() ties to even, as np.rint
                clamp = clamp or round(above) > top
            else:
                top, clamp = _F255 + np.rint(np.float32(below)), True
            scale[d, 0] = step
            zero_point[d, 0] = top
        divide(flat, scale, codes)
        rint(codes, codes)
        if clamp:
            minimum(codes, zero_point, out=codes)  # codes - zero point <= 255 - zero point
        if not exact:
            acc3[...] = integer_product(r_rows, codes3, r_bound, 255.0)
        elif single is not None:
            matmul(single, codes3[0], acc)
        else:
            matmul(r_rows, codes3, acc)
        multiply(r_scales, scale3, row_scales)
        multiply(acc3, row_scales, acc3)
        if single is None:
            copyto(g_rows, acc_rows)
        add(g, xs[k], g)
        tanh(g, g)
        multiply(sig, half, sig)
        add(sig, half, sig)
        multiply(gf, c, c)
        multiply(gi, gc, gi)
        add(c, gi, c)
        tanh(c, tmp)
        multiply(go, tmp, hs[k + 1])


# ------------------------------------------------------------------ the general path (rnn._recurrent)
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
