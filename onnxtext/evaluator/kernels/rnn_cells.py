"""The fast path of the recurrent kernels: RNN, GRU and LSTM with their default activations.

:mod:`.rnn` sends a node here when nothing but the default activations is asked for (Tanh for RNN;
Sigmoid, Tanh for GRU; Sigmoid, Tanh, Tanh for LSTM), with no clip, no peepholes, no input_forget
and every sequence as long as X; everything else takes its general path. What makes this one fast:

* **Weights prepared once.** ``W`` and ``R`` are transposed to [dirs, in, gates*hidden], the biases
  summed where the recurrence allows it (all of them for RNN and LSTM; for GRU all but the
  recurrence bias of the candidate gate when ``linear_before_reset`` puts it under the reset gate),
  and kept between runs for read-only (initializer) weights by :mod:`.derived_cache`.
* **Sigmoid as Tanh.** ``sigmoid(x) = 0.5 + 0.5 * tanh(x / 2)``: the rows of the sigmoid gates
  (LSTM i, o, f; GRU z, r) are scaled by 0.5 in the prepared weights and biases (a power of two: the
  products and sums are the same numbers, halved), so one ``tanh`` call covers every gate of a step
  and two more calls finish the sigmoids.
* **One projection, both directions per step.** ``X @ W^T + biases`` for every time step and
  direction is one matmul before the loop, laid out in *step order*: at step k the forward direction
  reads time k and the reverse direction time T-1-k. Each step then runs both directions at once (a
  stacked matmul of [dirs, batch, hidden] by [dirs, hidden, gates*hidden]) and writes into
  preallocated buffers with ``out=``: about ten numpy calls per step for LSTM, whatever the number of
  directions. The hidden states are collected in step order and put back in time order at the end.

The recurrent product is ``h @ R^T`` unless a caller passes its own (``recurrence(h, out)``):
com.microsoft::DynamicQuantizeLSTM quantizes ``h`` on the fly there (kernels/contrib/quant_matmul.py).
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
    """Weights in the fast path's layout (one set per node's W/R/B)."""

    __slots__ = ("w_t", "bias", "r_t", "r_t_gate", "gate_bias", "hidden", "scaled", "nbytes")

    def __init__(self, op, W, R, B, hidden, linear_before_reset, scaled=True):
        """``scaled``: W^T and R^T copied with the sigmoid gate columns halved (the layout kept between
        runs); else views of W and R, and the loops halve those columns of each product instead (for
        weights recomputed at every run, where copying them would cost more than it saves)."""
        dtype = W.dtype
        gates = GATES[op]
        scale = sigmoid_scale(op, hidden, dtype)
        dirs = W.shape[0]
        B = np.zeros((dirs, 2 * gates * hidden), dtype) if B is None else np.asarray(B, dtype)
        wb, rb = B[:, : gates * hidden], B[:, gates * hidden:]
        self.scaled = scaled
        if scaled:  # [dirs, in, gates*hidden] and [dirs, hidden, gates*hidden], sigmoid gate columns halved
            self.w_t = np.ascontiguousarray(np.swapaxes(W, 1, 2) * scale)
            r_t = np.swapaxes(R, 1, 2) * scale
        else:
            self.w_t, r_t = np.swapaxes(W, 1, 2), np.swapaxes(R, 1, 2)
        bias = wb + rb
        self.r_t_gate = self.gate_bias = None
        if op == "GRU" and linear_before_reset:
            # the candidate's recurrence bias stays inside r * (h @ Rh^T + Rbh)
            bias = wb.copy()
            bias[:, : 2 * hidden] += rb[:, : 2 * hidden]
            self.gate_bias = np.ascontiguousarray(rb[:, None, 2 * hidden:])  # [dirs, 1, hidden]
        elif op == "GRU":
            # (r * h) @ Rh^T is a second product per step: keep Rh^T apart from Rzr^T
            self.r_t_gate = np.ascontiguousarray(r_t[:, :, 2 * hidden:]) if scaled else r_t[:, :, 2 * hidden:]
            r_t = r_t[:, :, : 2 * hidden]
        self.r_t = np.ascontiguousarray(r_t) if scaled else r_t
        self.bias = np.ascontiguousarray(bias * scale)
        self.hidden = hidden
        self.nbytes = sum(a.nbytes for a in (self.w_t, self.r_t, self.bias, self.r_t_gate, self.gate_bias)
                          if a is not None)

    @classmethod
    def external(cls, bias, hidden) -> "Prepared":
        """Only the summed (scaled) LSTM biases: for callers with their own projections and recurrence."""
        prep = cls.__new__(cls)
        prep.w_t = prep.r_t = prep.r_t_gate = prep.gate_bias = None
        prep.bias, prep.hidden, prep.nbytes, prep.scaled = bias, hidden, bias.nbytes, True
        return prep


def prepared(op, W, R, B, hidden, linear_before_reset) -> Prepared:
    """The fast layout of W/R/B, kept between runs when they are read-only (initializers); views of
    them when they are not (computed at every run: inside an If branch from the outer scope's weights)."""
    if any(a is not None and a.flags.writeable for a in (W, R, B)):
        return Prepared(op, W, R, B, hidden, linear_before_reset, scaled=False)
    return derived(f"rnn-fast-{op}-{int(bool(linear_before_reset))}-{hidden}", (W, R, B),
                   lambda: Prepared(op, W, R, B, hidden, linear_before_reset), lambda p: p.nbytes,
                   readonly_inputs=True)


def step_order_projection(projected: np.ndarray, bias: np.ndarray, steps: int, batch: int,
                          reverse: list) -> np.ndarray:
    """[dirs, T*B, G] input projections (+ bias) -> [T, dirs, B, G] in step order (reverse directions
    read time T-1-k at step k)."""
    dirs, _, width = projected.shape
    out = np.empty((steps, dirs, batch, width), projected.dtype)
    for d in range(dirs):
        p = projected[d].reshape(steps, batch, width)
        np.add(p[::-1] if reverse[d] else p, bias[d], out=out[:, d])
    return out


def run(op, X, prep: Prepared, initial_states, reverse: list, linear_before_reset=0,
        projected=None, recurrence=None):
    """Y [T, dirs, B, H] and the final states ([dirs, B, H] each) for layout-0 inputs.

    ``projected``: the input projections X @ W^T (scaled as the prepared weights) as [dirs, T*B, G],
    when the caller computed them (the quantized LSTM); ``recurrence(h, out)`` replaces
    ``np.matmul(h, r_t, out=out)`` (LSTM only)."""
    steps, batch, _ = X.shape
    dirs = len(reverse)
    hidden = prep.hidden
    dtype = X.dtype
    if projected is None:
        projected = np.matmul(X.reshape(1, steps * batch, X.shape[2]), prep.w_t)
        if not prep.scaled and SIGMOID_GATES[op]:
            sig = projected[..., : SIGMOID_GATES[op] * hidden]
            np.multiply(sig, 0.5, out=sig)
    xp = step_order_projection(projected, prep.bias, steps, batch, reverse)
    hs = np.empty((steps + 1, dirs, batch, hidden), dtype)
    h0 = initial_states[0]
    hs[0] = 0 if h0 is None else h0
    squeeze = dirs == 1  # plain 2-D products when there is one direction
    view = (lambda a: a[:, 0]) if squeeze else (lambda a: a)
    r_t = prep.r_t[0] if squeeze and prep.r_t is not None else prep.r_t
    finals = []
    if op == "LSTM":
        c0 = initial_states[1]
        c = np.zeros((dirs, batch, hidden), dtype) if c0 is None else np.array(c0, dtype)
        _lstm_loop(view(xp), view(hs), r_t, c[0] if squeeze else c, hidden, recurrence, prep.scaled)
        finals = [c]
    elif op == "GRU" and linear_before_reset:
        _gru_linear_loop(view(xp), view(hs), r_t, prep.gate_bias[0] if squeeze else prep.gate_bias, hidden,
                         prep.scaled)
    elif op == "GRU":
        _gru_loop(view(xp), view(hs), r_t, prep.r_t_gate[0] if squeeze else prep.r_t_gate, hidden, prep.scaled)
    else:
        _rnn_loop(view(xp), view(hs), r_t)
    y = np.empty((steps, dirs, batch, hidden), dtype)
    for d in range(dirs):
        y[:, d] = hs[:0:-1, d] if reverse[d] else hs[1:, d]
    return (y, hs[steps], *finals)


def _rnn_loop(xp, hs, r_t):
    for k in range(xp.shape[0]):
        h = hs[k + 1]
        np.matmul(hs[k], r_t, out=h)
        np.add(h, xp[k], out=h)
        np.tanh(h, out=h)


def _lstm_loop(xp, hs, r_t, c, hidden, recurrence, scaled):
    """Gate order i, o, f, c; i/o/f columns halved (sigmoid as tanh): in r_t when ``scaled``, else here."""
    g = np.empty(xp.shape[1:], xp.dtype)
    sig = g[..., : 3 * hidden]
    gi, go, gf, gc = (g[..., k * hidden:(k + 1) * hidden] for k in range(4))
    tmp = np.empty(c.shape, c.dtype)
    for k in range(xp.shape[0]):
        if recurrence is None:
            np.matmul(hs[k], r_t, out=g)
        else:
            recurrence(hs[k], g)
        if not scaled:
            np.multiply(sig, 0.5, out=sig)
        np.add(g, xp[k], out=g)
        np.tanh(g, out=g)
        np.multiply(sig, 0.5, out=sig)
        np.add(sig, 0.5, out=sig)
        np.multiply(gf, c, out=c)
        np.multiply(gi, gc, out=gi)
        np.add(c, gi, out=c)
        np.tanh(c, out=tmp)
        np.multiply(go, tmp, out=hs[k + 1])


def _gru_linear_loop(xp, hs, r_t, gate_bias, hidden, scaled):
    """linear_before_reset: h~ = tanh(x Wh + Wbh + r * (h Rh + Rbh))."""
    g = np.empty(xp.shape[1:], xp.dtype)
    zr, z, r, gh = g[..., : 2 * hidden], g[..., :hidden], g[..., hidden: 2 * hidden], g[..., 2 * hidden:]
    xzr, xh = xp[..., : 2 * hidden], xp[..., 2 * hidden:]
    tmp = np.empty(gh.shape, xp.dtype)
    for k in range(xp.shape[0]):
        h = hs[k]
        np.matmul(h, r_t, out=g)
        if not scaled:
            np.multiply(zr, 0.5, out=zr)
        np.add(zr, xzr[k], out=zr)
        np.tanh(zr, out=zr)
        np.multiply(zr, 0.5, out=zr)
        np.add(zr, 0.5, out=zr)
        np.add(gh, gate_bias, out=gh)
        np.multiply(r, gh, out=gh)
        np.add(gh, xh[k], out=gh)
        np.tanh(gh, out=gh)
        _blend(z, gh, h, tmp, hs[k + 1])


def _gru_loop(xp, hs, r_t, r_t_gate, hidden, scaled):
    """h~ = tanh(x Wh + (r * h) Rh + Wbh + Rbh)."""
    zr = np.empty(xp.shape[1:-1] + (2 * hidden,), xp.dtype)
    z, r = zr[..., :hidden], zr[..., hidden:]
    xzr, xh = xp[..., : 2 * hidden], xp[..., 2 * hidden:]
    gh = np.empty(z.shape, xp.dtype)
    rh = np.empty(z.shape, xp.dtype)
    tmp = np.empty(z.shape, xp.dtype)
    for k in range(xp.shape[0]):
        h = hs[k]
        np.matmul(h, r_t, out=zr)
        if not scaled:
            np.multiply(zr, 0.5, out=zr)
        np.add(zr, xzr[k], out=zr)
        np.tanh(zr, out=zr)
        np.multiply(zr, 0.5, out=zr)
        np.add(zr, 0.5, out=zr)
        np.multiply(r, h, out=rh)
        np.matmul(rh, r_t_gate, out=gh)
        np.add(gh, xh[k], out=gh)
        np.tanh(gh, out=gh)
        _blend(z, gh, h, tmp, hs[k + 1])


def _blend(z, candidate, h_prev, tmp, out):
    """out = (1 - z) * candidate + z * h_prev, as candidate + z * (h_prev - candidate)."""
    np.subtract(h_prev, candidate, out=tmp)
    np.multiply(z, tmp, out=tmp)
    np.add(candidate, tmp, out=out)
