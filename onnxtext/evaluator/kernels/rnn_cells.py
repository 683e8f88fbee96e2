"""The fast path of the recurrent kernels: RNN, GRU and LSTM with their default activations.

:mod:`.rnn` sends a node here when nothing but the default activations is asked for (Tanh for RNN;
Sigmoid, Tanh for GRU; Sigmoid, Tanh, Tanh for LSTM), with no clip, no peepholes, no input_forget
and every sequence as long as X; everything else takes its general path. What makes this one fast:

* **Gates as rows.** The loop works on transposed states, [hidden, batch] per direction, so a step's
  gates are ``R @ h`` with R in its ONNX layout [gates*hidden, hidden], and every gate is a block of
  whole rows: each elementwise call runs over contiguous memory (numpy is several times slower on
  the strided column blocks of the [batch, gates*hidden] layout at these sizes).
* **Weights prepared once.** The biases are summed where the recurrence allows it (all of them for
  RNN and LSTM; for GRU all but the recurrence bias of the candidate gate when
  ``linear_before_reset`` puts it under the reset gate) and the sigmoid gate rows scaled (next
  point); kept between runs for read-only (initializer) weights by :mod:`.derived_cache`, or by the
  plan (rule ``prepared_recurrent``) for constant weights it computed.
* **Sigmoid as Tanh.** ``sigmoid(x) = 0.5 + 0.5 * tanh(x / 2)``: the rows of the sigmoid gates
  (LSTM i, o, f; GRU z, r) are scaled by 0.5 in the prepared weights and biases (a power of two: the
  products and sums are the same numbers, halved), so one ``tanh`` call covers every gate of a step
  and two more calls finish the sigmoids. Weights recomputed at every run are not copied: the loop
  halves those rows of each product instead (one more call per step).
* **One projection, both directions per step.** ``X @ W^T + biases`` for every time step and
  direction is one matmul before the loop, laid out in *step order*: at step k the forward direction
  reads time k and the reverse direction time T-1-k. Each step then runs both directions at once (a
  stacked matmul) and writes into preallocated buffers with positional ``out`` arguments: about ten
  numpy calls per step for LSTM, whatever the number of directions. The hidden states are collected
  in step order and put back in time order (and batch-major) at the end.

The recurrent product is ``R @ h`` unless a caller passes its own (``recurrence(h, out)``):
com.microsoft::DynamicQuantizeLSTM quantizes ``h`` on the fly there (kernels/contrib/quant_lstm.py).
"""

from __future__ import annotations

import numpy as np

from .derived_cache import derived

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
DEFAULT_ACTIVATIONS = {"RNN": ("tanh",), "GRU": ("sigmoid", "tanh"), "LSTM": ("sigmoid", "tanh", "tanh")}
# How many leading hidden-size blocks of the gate rows go through a sigmoid (ONNX gate orders:
# LSTM i, o, f, c; GRU z, r, h; RNN has none).
SIGMOID_GATES = {"RNN": 0, "GRU": 2, "LSTM": 3}
# per direction attribute: whether each direction runs backwards in time
REVERSE = {"forward": [False], "foward": [False], "reverse": [True], "bidirectional": [False, True]}

_add, _subtract, _multiply, _tanh, _matmul = np.add, np.subtract, np.multiply, np.tanh, np.matmul


def default_activations(op: str, names, num_directions: int) -> bool:
    """Whether the ``activations`` attribute asks for the operator's defaults (or is absent)."""
    if not names:
        return True
    default = DEFAULT_ACTIVATIONS[op]
    lowered = tuple(str(n).lower() for n in names)
    return lowered == default * num_directions or (num_directions == 2 and lowered == default)


def sigmoid_scale(op: str, hidden: int, dtype) -> np.ndarray:
    """Per gate row: 0.5 for the rows of sigmoid gates, 1 for the others (see the module docstring)."""
    scale = np.ones(GATES[op] * hidden, dtype)
    scale[: SIGMOID_GATES[op] * hidden] = 0.5
    return scale


class Prepared:
    """Weights in the fast path's layout (one set per node's W/R/B).

    Gate rows are ordered gate-major across directions: the state of both directions is one column
    block [dirs*hidden, batch], and each gate's rows for all directions are one contiguous block of the
    step's gate buffer. With one direction the recurrence is one product with ``r``; with two, a
    stacked product with ``r_stacked`` [dirs, gates*hidden, hidden] whose result is copied into the
    gate-major rows (one call: cheaper than the strided elementwise calls it saves)."""

    __slots__ = ("w_t", "bias", "r", "r_stacked", "r_gate", "r_gate_stacked", "gate_bias", "hidden", "dirs",
                 "scaled", "nbytes")

    def __init__(self, op, W, R, B, hidden, linear_before_reset, scaled=True):
        """``scaled``: W and R copied with the sigmoid gate rows halved (the layout kept between runs);
        else W and R themselves as far as possible, and the loops halve those rows of each product
        instead (for weights recomputed at every run, where copying them would cost more than it
        saves)."""
        dtype = W.dtype
        gates = GATES[op]
        scale = sigmoid_scale(op, hidden, dtype)
        dirs = W.shape[0]
        B = np.zeros((dirs, 2 * gates * hidden), dtype) if B is None else np.asarray(B, dtype)
        wb, rb = B[:, : gates * hidden], B[:, gates * hidden:]
        self.scaled, self.hidden, self.dirs = scaled, hidden, dirs
        # W^T [dirs, in, gates*hidden]: the input projection is X @ W^T (BLAS is faster that way round)
        if scaled:
            self.w_t = np.ascontiguousarray(np.swapaxes(W * scale[:, None], 1, 2))
            R = R * scale[:, None]
        else:
            self.w_t = np.swapaxes(W, 1, 2)
        bias = wb + rb
        self.gate_bias = self.r_gate = self.r_gate_stacked = None
        if op == "GRU" and linear_before_reset:
            # the candidate's recurrence bias stays inside r * (Rh h + Rbh)
            bias = wb.copy()
            bias[:, : 2 * hidden] += rb[:, : 2 * hidden]
            self.gate_bias = np.ascontiguousarray(rb[:, 2 * hidden:].reshape(dirs * hidden, 1))
        elif op == "GRU":
            # Rh (r * h) is a second product per step: kept apart from Rzr
            self.r_gate, self.r_gate_stacked = _recurrence_matrices(R[:, 2 * hidden:], dirs, 1, hidden)
            R = R[:, : 2 * hidden]
            gates -= 1
        self.r, self.r_stacked = _recurrence_matrices(R, dirs, gates, hidden)
        # [gates, dirs, hidden] flattened to rows, as the gate buffer
        self.bias = np.ascontiguousarray((bias * scale).reshape(dirs, -1, hidden).transpose(1, 0, 2)).reshape(-1, 1)
        self.nbytes = sum(a.nbytes for a in (self.w_t, self.r, self.r_stacked, self.r_gate, self.r_gate_stacked,
                                             self.bias, self.gate_bias) if a is not None)

    @classmethod
    def external(cls, bias, hidden) -> "Prepared":
        """Only the summed, scaled LSTM biases [dirs, 4*hidden]: for callers with their own projections
        and recurrence."""
        prep = cls.__new__(cls)
        prep.w_t = prep.r = prep.r_stacked = prep.r_gate = prep.r_gate_stacked = prep.gate_bias = None
        dirs = bias.shape[0]
        prep.bias = np.ascontiguousarray(bias.reshape(dirs, -1, hidden).transpose(1, 0, 2)).reshape(-1, 1)
        prep.hidden, prep.dirs, prep.nbytes, prep.scaled = hidden, dirs, bias.nbytes, True
        return prep


def _recurrence_matrices(R, dirs, gates, hidden):
    """(R [gates*hidden, hidden] for one direction, else None; R [dirs, gates*hidden, hidden])."""
    stacked = np.ascontiguousarray(R.reshape(dirs, gates * hidden, hidden))
    return (stacked[0] if dirs == 1 else None), stacked


def _per_direction(matrices, dirs, hidden):
    """``product(h, out)``: out = R h for a [dirs*hidden, batch] state, one product per direction (one
    stacked matmul), copied into the gate-major rows of out."""
    matmul, copyto = _matmul, np.copyto
    gates = matrices.shape[1] // hidden
    buffers = {}

    def product(h, out):
        batch = h.shape[-1]
        tmp = buffers.get(batch)
        if tmp is None:
            tmp = buffers[batch] = np.empty((dirs, gates * hidden, batch), out.dtype)
        matmul(matrices, h.reshape(dirs, hidden, batch), tmp)
        copyto(out.reshape(gates, dirs, hidden, batch), tmp.reshape(dirs, gates, hidden, batch).transpose(1, 0, 2, 3))
    return product


def prepared(op, W, R, B, hidden, linear_before_reset) -> Prepared:
    """The fast layout of W/R/B, kept between runs when they are read-only (initializers); W and R
    themselves as far as possible when they are not (computed at every run: inside an If branch from
    the outer scope's weights)."""
    if any(a is not None and a.flags.writeable for a in (W, R, B)):
        return Prepared(op, W, R, B, hidden, linear_before_reset, scaled=False)
    return derived(f"rnn-fast-{op}-{int(bool(linear_before_reset))}-{hidden}", (W, R, B),
                   lambda: Prepared(op, W, R, B, hidden, linear_before_reset), lambda p: p.nbytes,
                   readonly_inputs=True)


def step_order_projection(projected: np.ndarray, bias: np.ndarray, steps: int, batch: int, hidden: int,
                          reverse: list) -> np.ndarray:
    """[dirs, T*B, gates*H] input projections (+ bias rows) -> [T, gates*dirs*H, B] in step order
    (reverse directions read time T-1-k at step k), gate-major across directions."""
    dirs, _, width = projected.shape
    gates = width // hidden
    out = np.empty((steps, gates, dirs, hidden, batch), projected.dtype)
    bias = bias.reshape(gates, dirs, hidden, 1)
    for d in range(dirs):
        p = projected[d].reshape(steps, batch, gates, hidden).transpose(0, 2, 3, 1)
        np.add(p[::-1] if reverse[d] else p, bias[:, d], out=out[:, :, d])
    return out.reshape(steps, gates * dirs * hidden, batch)


def run(op, X, prep: Prepared, initial_states, reverse: list, projected=None, recurrence=None):
    """Y [T, dirs, B, H] and the final states ([dirs, B, H] each) for layout-0 inputs.

    ``projected``: the input projections X @ W^T (scaled as the prepared weights) as [dirs, T*B, G],
    when the caller computed them (the quantized LSTM); ``recurrence(h, out)`` replaces the recurrent
    product (LSTM only): h is the [dirs*H, B] state, out the [4*dirs*H, B] gate buffer."""
    steps, batch, _ = X.shape
    dirs = len(reverse)
    hidden = prep.hidden
    dtype = X.dtype
    if projected is None:
        projected = np.matmul(X.reshape(1, steps * batch, X.shape[2]), prep.w_t)
        sigmoid_columns = SIGMOID_GATES[op] * hidden
        if not prep.scaled and sigmoid_columns:
            np.multiply(projected[..., :sigmoid_columns], 0.5, out=projected[..., :sigmoid_columns])
    xp = step_order_projection(projected, prep.bias, steps, batch, hidden, reverse)
    hs = np.empty((steps + 1, dirs * hidden, batch), dtype)  # transposed states, step order
    h0 = initial_states[0]
    if h0 is None:
        hs[0] = 0
    else:
        hs[0].reshape(dirs, hidden, batch)[...] = h0.swapaxes(1, 2)
    block = dirs * hidden
    r, product = prep.r, None
    if recurrence is not None:
        product = recurrence
    elif r is None:
        product = _per_direction(prep.r_stacked, dirs, hidden)
    finals = []
    if op == "LSTM":
        c0 = initial_states[1]
        c = np.zeros((block, batch), dtype)
        if c0 is not None:
            c.reshape(dirs, hidden, batch)[...] = c0.swapaxes(1, 2)
        _lstm_loop(xp, hs, r, product, c, block, prep.scaled)
        finals = [np.ascontiguousarray(c.reshape(dirs, hidden, batch).swapaxes(1, 2))]
    elif op == "GRU":
        r_gate, gate_product = prep.r_gate, None
        if prep.gate_bias is None and r is None:
            r_gate, gate_product = None, _per_direction(prep.r_gate_stacked, dirs, hidden)
        _gru_loop(xp, hs, r, product, r_gate, gate_product, prep.gate_bias, block, prep.scaled)
    else:
        _rnn_loop(xp, hs, r, product)
    states = hs.reshape(steps + 1, dirs, hidden, batch)
    y = np.empty((steps, dirs, batch, hidden), dtype)
    for d in range(dirs):
        np.copyto(y[:, d], (states[:0:-1, d] if reverse[d] else states[1:, d]).swapaxes(1, 2))
    return (y, np.ascontiguousarray(states[steps].swapaxes(1, 2)), *finals)


def _rnn_loop(xp, hs, r, product):
    add, tanh, matmul = _add, _tanh, _matmul
    for k in range(xp.shape[0]):
        h = hs[k + 1]
        if r is not None:
            matmul(r, hs[k], h)
        else:
            product(hs[k], h)
        add(h, xp[k], h)
        tanh(h, h)


def _lstm_loop(xp, hs, r, product, c, block, scaled):
    """Gate row blocks i, o, f, c; i/o/f halved (sigmoid as tanh): in r when ``scaled``, else here."""
    add, multiply, tanh, matmul = _add, _multiply, _tanh, _matmul
    g = np.empty(xp.shape[1:], xp.dtype)
    half = g.dtype.type(0.5)
    sig = g[: 3 * block]
    gi, go, gf, gc = (g[k * block:(k + 1) * block] for k in range(4))
    tmp = np.empty(c.shape, c.dtype)
    for k in range(xp.shape[0]):
        if r is not None:
            matmul(r, hs[k], g)
        else:
            product(hs[k], g)
        if not scaled:
            multiply(sig, half, sig)
        add(g, xp[k], g)
        tanh(g, g)
        multiply(sig, half, sig)
        add(sig, half, sig)
        multiply(gf, c, c)
        multiply(gi, gc, gi)
        add(c, gi, c)
        tanh(c, tmp)
        multiply(go, tmp, hs[k + 1])


def _gru_loop(xp, hs, r, product, r_gate, gate_product, gate_bias, block, scaled):
    """h~ = tanh(Wh x + Rh (r * h) + Wbh + Rbh), or with linear_before_reset (``gate_bias`` given: Rbh)
    tanh(Wh x + Wbh + r * (Rh h + Rbh)), where one product gives the three gates' recurrent terms."""
    add, multiply, tanh, matmul = _add, _multiply, _tanh, _matmul
    linear = gate_bias is not None
    batch = xp.shape[-1]
    g = np.empty(((3 if linear else 2) * block, batch), xp.dtype)
    half = g.dtype.type(0.5)
    zr, z, rg = g[: 2 * block], g[:block], g[block: 2 * block]
    gh = g[2 * block:] if linear else np.empty(z.shape, xp.dtype)
    rh = np.empty(z.shape, xp.dtype)
    xzr, xh = xp[:, : 2 * block], xp[:, 2 * block:]
    tmp = np.empty(z.shape, xp.dtype)
    for k in range(xp.shape[0]):
        h = hs[k]
        if r is not None:
            matmul(r, h, g)
        else:
            product(h, g)
        if not scaled:
            multiply(zr, half, zr)
        add(zr, xzr[k], zr)
        tanh(zr, zr)
        multiply(zr, half, zr)
        add(zr, half, zr)
        if linear:
            add(gh, gate_bias, gh)
            multiply(rg, gh, gh)
        else:
            multiply(rg, h, rh)
            if r_gate is not None:
                matmul(r_gate, rh, gh)
            else:
                gate_product(rh, gh)
        add(gh, xh[k], gh)
        tanh(gh, gh)
        _blend(z, gh, h, tmp, hs[k + 1])


def _blend(z, candidate, h_prev, tmp, out):
    """out = (1 - z) * candidate + z * h_prev, as candidate + z * (h_prev - candidate)."""
    _subtract(h_prev, candidate, tmp)
    _multiply(z, tmp, tmp)
    _add(candidate, tmp, out)
