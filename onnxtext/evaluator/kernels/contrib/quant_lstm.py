"""com.microsoft::DynamicQuantizeLSTM: an LSTM whose W and R are 8-bit integers.

W (dirs, input, 4H) and R (dirs, H, 4H) are int8/uint8 with per-direction (or per-column) scales and
zero points; gate order i, o, f, c as in ONNX LSTM. As onnxruntime does, every product with them
quantizes its float operand to uint8 on the fly with the range of the whole operand (see
:func:`..quantize.dynamic_uint8_parameters`): the input once for all time steps, the hidden state once
per step and direction (each direction's state with its own range).

The usual case (default activations, no clip, peepholes, input_forget or shorter sequences) runs
:class:`_FastWeights` and :func:`_quantized_lstm_loop`: the weights shifted by their zero points as
float32, prepared once (kept between runs by :mod:`..derived_cache` for initializers, or by the plan's
rule ``prepared_recurrent``), the codes multiplied by them exactly in float32 BLAS (in chunks by
:func:`..linalg.integer_product` when sums could exceed 2**24) and the products scaled as onnxruntime
scales its integer products. The rest goes through :func:`..rnn._recurrent` with a quantizing product
that multiplies exactly in integers too, one direction at a time.
"""

from __future__ import annotations

import struct

import numpy as np

from ...registry import kernel
from .. import rnn_cells
from ..derived_cache import derived
from ..linalg import integer_product
from ..quantize import dynamic_quantize_uint8, dynamic_uint8_codes
from ..rnn import _recurrent
from . import MS

_F255 = np.float32(255)
_TINY = np.finfo(np.float32).tiny
_TINY_FLOAT = float(_TINY)
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_F32_PAIR = struct.Struct("2f")  # float32 rounding of two Python floats: unpack(pack(x, y))
_F32_QUAD = struct.Struct("4f")


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
    """w - zero point as float32; w is [dirs, in, out] with zero points per direction or per (direction,
    column)."""
    shifted = w.astype(np.float32)
    if zero_point is not None:
        shifted -= np.asarray(zero_point, np.float32).reshape(w.shape[0], 1, -1)
    return shifted


# gate columns of the fast loop, from ONNX's i, o, f, c: o, i, f, c (the sigmoid gates o, i, f first; i and
# f next to each other, as c~ and the cell state are: see _quantized_lstm_loop)
_GATE_ORDER = (1, 0, 2, 3)
# float32 sums of integers (and half-integers, see _gate_columns) are exact below this
_EXACT = float(1 << 24)


def _gate_columns(m: np.ndarray, hidden: int, halve: bool = True) -> np.ndarray:
    """[..., 4H] in ONNX gate order -> the loop's gate order; ``halve``: the sigmoid gates' columns halved
    (sigmoid as tanh, see rnn_cells; a power of two: integers become exact half-integers)."""
    blocks = m.reshape(m.shape[:-1] + (4, hidden))[..., _GATE_ORDER, :]
    if halve:
        blocks = blocks * rnn_cells.sigmoid_scale("LSTM", hidden, np.float32).reshape(4, hidden)
    return np.ascontiguousarray(blocks).reshape(m.shape)


class _FastWeights:
    """The quantized weights in the fast loop's layout: shifted by their zero points as float32 (exact
    integers, the sigmoid gates' columns halved), gate columns in the loop's order (o, i, f, c). ``w_all``
    [input, dirs*4H]: W of every direction side by side, with ``w_scales`` per column; ``r_t`` [dirs, H,
    4H]: R as it is (h @ R), with R's scale per direction (``r_direction_scales``, Python floats) or per
    column (``r_column_scales`` [gate, dirs, 1, H]); ``bias`` [dirs*4H]: the summed biases."""

    def __init__(self, W, W_scale, W_zero_point, R, R_scale, R_zero_point, B, hidden):
        dirs, inputs = W.shape[0], W.shape[1]
        w, r = _shifted(W, W_zero_point), _shifted(R, R_zero_point)
        self.w_bound = float(np.abs(w).max(initial=0))
        self.w_exact = inputs * 255.0 * self.w_bound < _EXACT
        self.r_bound = float(np.abs(r).max(initial=0))
        self.r_exact = hidden * 255.0 * self.r_bound < _EXACT
        self.w_all = np.ascontiguousarray(_gate_columns(w, hidden).transpose(1, 0, 2).reshape(inputs, -1))
        w_scales = np.broadcast_to(np.asarray(W_scale, np.float32).reshape(dirs, -1), (dirs, 4 * hidden))
        self.w_scales = _gate_columns(w_scales, hidden, halve=False).reshape(-1)
        self.r_t = _gate_columns(r, hidden)
        r_scales = np.asarray(R_scale, np.float32).reshape(dirs, -1)
        self.r_direction_scales = None
        self.r_column_scales = None
        if r_scales.shape[1] == 1:
            self.r_direction_scales = [float(v) for v in r_scales[:, 0]] + [1.0] * (2 - dirs)
        else:
            self.r_column_scales = np.ascontiguousarray(
                _gate_columns(r_scales, hidden, halve=False).reshape(dirs, 1, 4, hidden).transpose(2, 0, 1, 3))
        if B is None:
            bias = np.zeros((dirs, 4 * hidden), np.float32)
        else:
            B = np.asarray(B, np.float32)
            bias = B[:, : 4 * hidden] + B[:, 4 * hidden:]
        self.bias = _gate_columns(bias, hidden).reshape(-1)
        self.hidden, self.dirs = hidden, dirs
        self.nbytes = self.w_all.nbytes + self.r_t.nbytes

    def run(self, X, initial_states, reverse):
        steps, batch, inputs = X.shape
        ws = rnn_cells.kept_for_thread(("DynamicQuantizeLSTM", steps, batch, inputs, self.dirs, self.hidden),
                                       lambda: _Workspace(steps, batch, inputs, self.dirs, self.hidden))
        # the input projection of every step and direction: X quantized with the range of the whole input
        # (as onnxruntime does), the exact integer product with W, times x's scale * W's (as onnxruntime
        # rounds them), plus the biases
        # (X quantized where it lies, the codes written in step order: a strided X is not copied first)
        _, scale = quantized_input(X, ws.x_codes)
        codes = ws.x_rows
        if self.w_exact:
            np.matmul(codes, self.w_all, ws.projected)
        else:
            ws.projected[...] = integer_product(codes, self.w_all, 255.0, self.w_bound)
        np.multiply(ws.projected, np.multiply(self.w_scales, scale, ws.column_factors), ws.projected)
        # (in place, contiguous: 3 us a layer, where adding them on the way into step order took 14)
        np.add(ws.projected, self.bias, ws.projected)
        # into step order: at step k a forward direction reads time k, a reverse one time T-1-k
        p5 = ws.projected.reshape(steps, batch, self.dirs, 4, self.hidden).transpose(0, 3, 2, 1, 4)
        if not any(reverse):
            np.copyto(ws.x_steps, p5)
        else:
            for d, backwards in enumerate(reverse):
                np.copyto(ws.x_steps[:, :, d], p5[::-1, :, d] if backwards else p5[:, :, d])
        for state, initial in zip((ws.h_states[0], ws.cell), initial_states):
            if initial is None:
                state.fill(0)
            else:
                np.copyto(state, initial)
        _quantized_lstm_loop(ws, self, steps)
        hs = ws.hs[:, 0]
        # Y [T, dirs, B, H] over batch-major memory (see rnn_cells.finish)
        y = np.empty((steps, batch, self.dirs, self.hidden), np.float32).transpose(0, 2, 1, 3)
        for d, backwards in enumerate(reverse):
            np.copyto(y[:, d], hs[:0:-1, d] if backwards else hs[1:, d])
        return y, np.array(hs[steps]), np.array(ws.cell)


class _Workspace:
    """The fast loop's buffers for one shape, kept per thread (rnn_cells.kept_for_thread); everything
    batch-major as ONNX lays out states ([dirs, B, H]), gates gate-major ([gate, dirs, B, H]) so that
    every gate of both directions is one contiguous block."""

    def __init__(self, steps, batch, inputs, dirs, hidden):
        self.x_codes = np.empty((steps, batch, inputs), np.float32)
        self.x_rows = self.x_codes.reshape(steps * batch, inputs)
        self.column_factors = np.empty(dirs * 4 * hidden, np.float32)  # x's scale * W's per column
        self.projected = np.empty((steps * batch, dirs * 4 * hidden), np.float32)
        self.x_steps = np.empty((steps, 4, dirs, batch, hidden), np.float32)
        # the states h, each beside -h (for the range: one reduction finds max(h) and -min(h))
        self.hs = np.empty((steps + 1, 2, dirs, batch, hidden), np.float32)
        self.h_states, self.negated_states = list(self.hs[:, 0]), list(self.hs[:, 1])
        # h and -h of each direction as the rows of one matrix (one reduction over rows: 1.20 us, against
        # 1.25 over [2, dirs, B*H]), h as [dirs, B*H] (the division by each direction's scale: 1.00
        # against 1.13 us over [dirs, B, H])
        self.signed_states = list(self.hs.reshape(steps + 1, 2 * dirs, batch * hidden))
        self.flat_states = list(self.hs[:, 0].reshape(steps + 1, dirs, batch * hidden))
        # each step's views as one tuple (h, -h, both as rows, h flat, the step's inputs, the next h): the
        # loop takes them from a zip, no view of x_steps made and no list indexed per step
        self.step_views = list(zip(self.h_states, self.negated_states, self.signed_states, self.flat_states,
                                   self.x_steps, self.h_states[1:]))
        # o, i, f, c~ (the gates), then the cell state
        self.gates = np.empty((5, dirs, batch, hidden), np.float32)
        self.cell = self.gates[4]
        self.codes = np.empty((dirs, batch, hidden), np.float32)
        self.product = np.empty((dirs, batch, 4 * hidden), np.float32)
        # per direction: the highest value of h and minus the lowest (with 0), scale, and 255 - zero point
        # when codes are clamped, for two directions; one direction uses the first column (the second's
        # range, 0 to 1, takes the loop's common path and its scale goes unread)
        self.ranges = np.array([[1, 1], [0, 0]], np.float32)
        self.range_bytes = memoryview(self.ranges).cast("B")  # (read by struct: 0.44 against 1.1 us by tolist)
        # the scales of h, then the products' multipliers (scale of h * R's scale, per direction)
        scales = np.empty(4, np.float32)
        self.scale_bytes = memoryview(scales).cast("B")
        self.scale = scales[:dirs].reshape(dirs, 1, 1)
        self.multiplier = scales[2:2 + dirs].reshape(1, dirs, 1, 1)
        self.column_multipliers = np.empty((4, dirs, 1, hidden), np.float32)  # (R's scales per column)
        self.top = np.empty((dirs, 1, 1), np.float32)
        self.tmp = np.empty((dirs, batch, hidden), np.float32)


def quantized_input(x: np.ndarray, out: np.ndarray | None = None):
    """:func:`..quantize.dynamic_quantize_uint8` of a float32 array (codes minus the zero point, and scale):
    :func:`..quantize.dynamic_uint8_codes` (4 array calls), the codes written into ``out`` (an array of x's
    shape) when given; arrays with NaN or infinities, all zeros, or a scale that underflows to 0 take
    dynamic_quantize_uint8 itself."""
    fast = dynamic_uint8_codes(x, out)
    if fast is not None:
        return fast[0], np.float32(fast[1])
    codes, scale = dynamic_quantize_uint8(x)
    if out is None:
        return codes, scale
    np.copyto(out, codes)
    return out, scale


def _exact_parameters(low: float, high: float):
    """(scale, 255 - zero point, whether the top code can exceed 255 - zero point) of one direction's range
    in numpy float32 scalars, the operations of :func:`..quantize.dynamic_uint8_parameters` (a zero range
    gets the smallest normal scale instead of 1: every code is 0 either way)."""
    low, high = np.float32(low), np.float32(high)
    step = (high - low) / _F255
    if step < _TINY:  # (False for NaN: such a range stays NaN, as on arrays)
        step = _TINY
    below, above = float(low / step), float(high / step)
    if below - below == 0 and above - above == 0:  # finite
        top = 255 + round(below)  # 255 - zero point: round() ties to even, as np.rint
        return step, top, round(above) > top
    return step, _F255 + np.rint(np.float32(below)), True


def _exact_scales(ranges: np.ndarray, scale: np.ndarray, top: np.ndarray) -> bool:
    """Every direction's scale (and top, inf where no clamp is needed) by :func:`_exact_parameters` from the
    ranges [highest, -lowest]; whether any direction's codes need the clamp."""
    clamp = False
    for d, (hi, negated_lo) in enumerate(zip(*ranges.tolist())):
        if d < len(scale):
            scale[d], t, exceeds = _exact_parameters(-negated_lo, hi)
            top[d] = t if exceeds else np.inf
            clamp = clamp or exceeds
    return clamp


def _quantized_lstm_loop(ws: _Workspace, weights: _FastWeights, steps: int):
    """The LSTM steps with the recurrent product R h taken as onnxruntime takes it: each direction's state
    h [B, H] quantized to uint8 with the range of that state (including 0), multiplied exactly by R and
    scaled by (h's scale * R's scale) rounded to float32, then added to the step's input projection.

    The codes minus the zero point are rint(h / scale) (the zero point is round(-low / scale), so the
    lowest value's code is exactly 0 and no lower clamp is needed); they can exceed 255 - zero point by
    one only when both ends of the range round outwards, i.e. when high / scale is within 1e-4 of a
    half-integer (the range is 255 scales to a float32 rounding). The scales and multipliers are computed
    in Python floats, both directions at once (one direction has a constant second range), rounded to
    float32 through ``struct`` (a float32 operation computed in double and rounded is the float32
    result). When a width is not finite or a high / scale is within 1e-3 of a half-integer, every
    direction takes the float32 scalar operations of :func:`_exact_parameters` and the clamp where needed.

    The product of the codes with the shifted R is exact in float32 BLAS while hidden * 255 * max|R| <
    2**24 (else :func:`..linalg.integer_product`): the same integers as onnxruntime's, scaled by the same
    float32 multiplier, so that the quantization of the next step sees the same values (float
    differences of 1e-7 flip a code now and then, and one flip moves a long sequence's outputs by 1e-3).
    The scaling writes the gate-major gates, then the input projection is added. The cell is
    sigmoid-as-tanh (rnn_cells) over the o, i, f, c~ blocks; i * c~ and f * c are one call over two
    adjacent blocks each (i, f and c~, c). The range is one reduction over h and -h side by side (the
    negation and one reduction: 1.07 against 1.28 us for two reductions at 2x3x48). 14 array calls a
    step: 2 for the range, 2 for the codes, the product, 2 for scaling and the inputs, the cell's 7 (one
    more when R's scales are per column)."""
    g = ws.gates
    codes, product, ranges, scale, top, tmp = ws.codes, ws.product, ws.ranges, ws.scale, ws.top, ws.tmp
    range_bytes = ws.range_bytes
    dirs, batch, hidden = codes.shape
    flat_codes, flat_scale = codes.reshape(dirs, -1), scale.reshape(dirs, 1)
    r_t, r_bound, r_exact = weights.r_t, weights.r_bound, weights.r_exact
    # the rows h, -h of one direction are [highest, -lowest] (the first column); of two, both columns
    extremes = ranges.reshape(4) if dirs == 2 else ranges[:, 0]
    product_gates = product.reshape(dirs, batch, 4, hidden).transpose(2, 0, 1, 3)
    column_scales = weights.r_column_scales
    if column_scales is None:
        multiplier, (r0, r1) = ws.multiplier, weights.r_direction_scales
    else:
        multiplier, r0, r1 = ws.column_multipliers, 1.0, 1.0
    scale_gates = scale.reshape(1, dirs, 1, 1)
    gates, sig, pairs, partners, gi, gf, c, go = g[:4], g[:3], g[1:3], g[3:5], g[1], g[2], g[4], g[0]
    scale_bytes, tiny_width, largest = ws.scale_bytes, _TINY_FLOAT * 255.0, _FLOAT32_MAX
    half = np.array(0.5, np.float32)  # (a 0-d array: numpy converts a scalar operand at every call)
    add, multiply, divide, tanh, rint, matmul, minimum = (
        np.add, np.multiply, np.divide, np.tanh, np.rint, np.matmul, np.minimum)
    negative, high_reduce, pack, unpack, pack_into, unpack_ranges = (
        np.negative, np.maximum.reduce, _F32_PAIR.pack, _F32_PAIR.unpack, _F32_QUAD.pack_into, _F32_QUAD.unpack)
    for h, negated, signed, flat, x, h_next in ws.step_views:  # (steps of them)
        negative(h, negated)
        high_reduce(signed, 1, None, extremes, False, 0.0)  # axis 1, out, keepdims, initial 0
        u0, u1, m0, m1 = unpack_ranges(range_bytes)  # m: minus the lowest value
        try:
            w0, w1 = unpack(pack(u0 + m0, u1 + m1))  # the widths in float32
        except OverflowError:  # (a width beyond float32's range)
            w0 = w1 = np.inf
        s0 = w0 / 255.0 if w0 >= tiny_width else _TINY_FLOAT  # (NaN and inf fail the next test)
        s1 = w1 / 255.0 if w1 >= tiny_width else _TINY_FLOAT
        if (w0 <= largest and w1 <= largest and abs(u0 / s0 % 1.0 - 0.5) > 1e-3
                and abs(u1 / s1 % 1.0 - 0.5) > 1e-3):  # the top codes are within 255 - zero point
            s0, s1 = unpack(pack(s0, s1))
            pack_into(scale_bytes, 0, s0, s1, s0 * r0, s1 * r1)
            clamp = False
        else:
            clamp = _exact_scales(ranges, scale, top)
            if column_scales is None:
                multiplier.reshape(-1)[:] = scale.reshape(-1) * np.array(weights.r_direction_scales[:dirs], np.float32)
        if column_scales is not None:
            multiply(column_scales, scale_gates, multiplier)
        divide(flat, flat_scale, flat_codes)
        rint(codes, codes)
        if clamp:
            minimum(codes, top, out=codes)
        if r_exact:
            matmul(codes, r_t, product)
        else:
            product[...] = integer_product(codes, r_t, 255.0, r_bound)
        multiply(product_gates, multiplier, gates)
        add(gates, x, gates)
        tanh(gates, gates)
        multiply(sig, half, sig)
        add(sig, half, sig)
        multiply(pairs, partners, pairs)  # i * c~, f * c
        add(gi, gf, c)
        tanh(c, tmp)
        multiply(go, tmp, h_next)


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
