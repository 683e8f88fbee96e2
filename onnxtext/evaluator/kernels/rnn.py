"""Recurrent kernels: RNN, GRU and LSTM (every opset version).

Shared shape conventions (layout 0): X [seq, batch, input], W [dirs, gates*hidden, input],
R [dirs, gates*hidden, hidden], B [dirs, 2*gates*hidden] (input biases then recurrence biases),
initial states [dirs, batch, hidden]; outputs Y [seq, dirs, batch, hidden] and final states
[dirs, batch, hidden]. Layout 1 (opset 14+) puts batch first: X [batch, seq, input],
Y [batch, seq, dirs, hidden], states [batch, dirs, hidden].

The input projection of all time steps is one matmul; the loop over time steps is inherent to the
recurrence, and each step is a batched matmul. ``sequence_lens`` freezes a batch entry's state after
its length (its Y rows are zero); the reverse direction visits t = seq-1 .. 0, and frozen steps at
the end of a short sequence leave the initial state untouched until its last valid element.
"""

import numpy as np

from ..registry import kernel
from . import rnn_cells


def _activation(name: str, alphas: list, betas: list):
    """The activation ``name``; consumes its alpha/beta from the front of the given lists."""
    key = name.lower()

    def take(values, default):
        return values.pop(0) if values else default

    if key == "sigmoid":
        return lambda x: 1 / (1 + np.exp(-x))
    if key == "tanh":
        return np.tanh
    if key == "relu":
        return lambda x: np.maximum(x, 0)
    if key == "affine":
        a, b = take(alphas, 1.0), take(betas, 0.0)
        return lambda x: a * x + b
    if key == "leakyrelu":
        a = take(alphas, 0.01)
        return lambda x: np.where(x >= 0, x, a * x)
    if key == "thresholdedrelu":
        a = take(alphas, 1.0)
        return lambda x: np.where(x >= a, x, 0)
    if key == "scaledtanh":
        a, b = take(alphas, 1.0), take(betas, 1.0)
        return lambda x: a * np.tanh(b * x)
    if key == "hardsigmoid":
        a, b = take(alphas, 0.2), take(betas, 0.5)
        return lambda x: np.clip(a * x + b, 0, 1)
    if key == "elu":
        a = take(alphas, 1.0)
        return lambda x: np.where(x >= 0, x, a * (np.exp(np.minimum(x, 0)) - 1))
    if key == "softsign":
        return lambda x: x / (1 + np.abs(x))
    if key == "softplus":
        return lambda x: np.log1p(np.exp(x))
    raise ValueError(f"unknown recurrent activation {name!r}")


def _activations(names, per_direction, default, alpha, beta, num_directions):
    """Per direction, the list of ``per_direction`` activation functions."""
    names = list(names) if names else []
    if not names:
        names = list(default) * num_directions
    elif len(names) == per_direction and num_directions == 2:
        names = names * 2
    alphas, betas = list(alpha or []), list(beta or [])
    funcs = [_activation(n, alphas, betas) for n in names]
    return [funcs[d * per_direction:(d + 1) * per_direction] for d in range(num_directions)]


def _clipper(clip):
    if clip is None:
        return lambda x: x
    return lambda x: np.clip(x, -clip, clip)


def _scan(x_proj, step, states, seq_lens, reverse):
    """Run ``step(x_proj[t], states) -> states`` over time; returns (Y [T, B, H], final states).

    ``states[0]`` is the hidden state H. Batch entries whose length is <= t keep their state.
    """
    steps = x_proj.shape[0]
    ys = np.zeros((steps,) + states[0].shape, states[0].dtype)
    order = range(steps - 1, -1, -1) if reverse else range(steps)
    for t in order:
        new = step(x_proj[t], states)
        if seq_lens is None:
            states = new
        else:
            active = (t < seq_lens)[:, None]
            states = tuple(np.where(active, n, s) for n, s in zip(new, states))
            new = tuple(np.where(active, n, 0) for n in new)
        ys[t] = new[0]
    return ys, states


def _recurrent(op, X, W, R, B, seq_lens, initial_states, P, *, hidden_size, direction, layout, clip,
               activations, activation_alpha, activation_beta, linear_before_reset=0, input_forget=0,
               product=None, prepared=None):
    """Shared driver: returns (Y, final hidden) for RNN/GRU and (Y, Y_h, Y_c) for LSTM.

    ``product(x, w)`` computes ``x @ w.T`` for the LSTM's matrices (default: numpy's matmul; the
    quantized com.microsoft::DynamicQuantizeLSTM passes its own, and W[d]/R[d] are then its keys).
    The default activations without clip, peepholes or input_forget take the fast path of
    :mod:`.rnn_cells` (with ``prepared`` weights when the plan made them, see :func:`fast_weights`);
    the rest the general one here."""
    if layout:
        X = np.swapaxes(X, 0, 1)
        initial_states = [None if s is None else np.swapaxes(s, 0, 1) for s in initial_states]
    steps, batch, _ = X.shape
    num_directions = W.shape[0]
    hidden = hidden_size if hidden_size is not None else R.shape[-1]
    lens = None if seq_lens is None else np.asarray(seq_lens).astype(np.int64)
    if lens is not None and np.all(lens >= steps):
        lens = None
    reverse_flags = rnn_cells.REVERSE[direction]
    if product is None and _fast_attributes(op, clip, activations, input_forget, P, num_directions):
        prep = prepared or rnn_cells.prepared(op, W, R, B, hidden, linear_before_reset)
        outs = rnn_cells.run(op, X, prep, initial_states, reverse_flags, lens)
    else:
        outs = _general(op, X, W, R, B, lens, initial_states, P, hidden, clip, activations, activation_alpha,
                        activation_beta, linear_before_reset, input_forget, product, reverse_flags)
    if layout:
        Y, *states = outs
        return (np.transpose(Y, (2, 0, 1, 3)), *(np.swapaxes(o, 0, 1) for o in states))
    return outs


def _fast_attributes(op, clip, activations, input_forget, P, num_directions) -> bool:
    """Whether a node's attributes and peepholes allow the fast path (sequence lengths aside)."""
    return (clip is None and not input_forget and (P is None or not P.any())
            and rnn_cells.default_activations(op, activations, num_directions))


def fast_weights(op, W, R, B, P, attrs) -> rnn_cells.Prepared | None:
    """The fast path's weights for a node whose W, R, B (and P) are constants, prepared once by the plan
    (rule ``prepared_recurrent``, which passes them back as the kernel's ``prepared`` attribute), or
    None when the node's attributes send it to the general path."""
    if not _fast_attributes(op, attrs.get("clip"), attrs.get("activations"), attrs.get("input_forget", 0), P,
                            W.shape[0]):
        return None
    hidden = attrs.get("hidden_size") or R.shape[-1]
    return rnn_cells.Prepared(op, W, R, B, hidden, attrs.get("linear_before_reset", 0) if op == "GRU" else 0)


def prepared_call(op: str, attrs: dict, prepared: rnn_cells.Prepared):
    """``call(args) -> outputs`` for a node whose weights the plan prepared (rule
    ``prepared_recurrent``): the fast path straight from the node's input list (X, W, R, B,
    sequence_lens, initial_h, initial_c), without the kernel's attribute and argument handling (about
    5 us a call on a one-step LSTM)."""
    layout = attrs.get("layout", 0)
    reverse = rnn_cells.REVERSE[attrs["direction"]]
    n_states = 2 if op == "LSTM" else 1
    run = rnn_cells.run

    def call(args):
        n = len(args)
        X = np.swapaxes(args[0], 0, 1) if layout else args[0]
        lens = args[4] if n > 4 else None
        if lens is not None:
            lens = np.asarray(lens).astype(np.int64)
            if np.all(lens >= X.shape[0]):
                lens = None
        states = [args[5 + k] if n > 5 + k else None for k in range(n_states)]
        if not layout:
            return run(op, X, prepared, states, reverse, lens)
        Y, *finals = run(op, X, prepared, [None if s is None else np.swapaxes(s, 0, 1) for s in states], reverse,
                         lens)
        return (np.transpose(Y, (2, 0, 1, 3)), *(np.swapaxes(o, 0, 1) for o in finals))
    return call


def _general(op, X, W, R, B, lens, initial_states, P, hidden, clip, activations, activation_alpha,
             activation_beta, linear_before_reset, input_forget, product, reverse_flags):
    """Any activations, clip, peepholes, input_forget, sequence lengths: one direction at a time."""
    if product is None:
        def product(x, w):
            return x @ w.T
    gates = rnn_cells.GATES[op]
    steps, batch, _ = X.shape
    num_directions = W.shape[0]
    dtype = X.dtype
    if B is None:
        B = np.zeros((num_directions, 2 * gates * hidden), dtype)
    per_direction = {"RNN": 1, "GRU": 2, "LSTM": 3}[op]
    default = {"RNN": ("Tanh",), "GRU": ("Sigmoid", "Tanh"), "LSTM": ("Sigmoid", "Tanh", "Tanh")}[op]
    funcs = _activations(activations, per_direction, default, activation_alpha, activation_beta,
                         num_directions)
    clipped = _clipper(clip)
    ys, finals = [], []
    for d in range(num_directions):
        w, r = W[d], R[d]
        wb, rb = B[d][: gates * hidden], B[d][gates * hidden:]
        x_proj = product(X, w) + wb  # [T, B, gates*hidden] in one matmul
        states = [np.zeros((batch, hidden), dtype) if s is None else s[d] for s in initial_states]
        f = funcs[d]
        if op == "RNN":
            def step(xp, st, r=r, rb=rb, f=f):
                return (f[0](clipped(xp + st[0] @ r.T + rb)),)
        elif op == "GRU":
            rz_r, rh = r[: 2 * hidden], r[2 * hidden:]
            rbz_r, rbh = rb[: 2 * hidden], rb[2 * hidden:]

            def step(xp, st, rz_r=rz_r, rh=rh, rbz_r=rbz_r, rbh=rbh, f=f):
                h_prev = st[0]
                zr = f[0](clipped(xp[:, : 2 * hidden] + h_prev @ rz_r.T + rbz_r))
                z, reset = zr[:, :hidden], zr[:, hidden:]
                if linear_before_reset:
                    candidate = xp[:, 2 * hidden:] + reset * (h_prev @ rh.T + rbh)
                else:
                    candidate = xp[:, 2 * hidden:] + (reset * h_prev) @ rh.T + rbh
                h_tilde = f[1](clipped(candidate))
                return ((1 - z) * h_tilde + z * h_prev,)
        else:
            peep = np.zeros((3 * hidden,), dtype) if P is None else P[d]
            p_i, p_o, p_f = peep[:hidden], peep[hidden: 2 * hidden], peep[2 * hidden:]

            def step(xp, st, r=r, rb=rb, f=f, p_i=p_i, p_o=p_o, p_f=p_f):
                h_prev, c_prev = st
                g = xp + product(h_prev, r) + rb  # gate order i, o, f, c
                gi, go, gf, gc = (g[:, k * hidden:(k + 1) * hidden] for k in range(4))
                i = f[0](clipped(gi + p_i * c_prev))
                forget = 1 - i if input_forget else f[0](clipped(gf + p_f * c_prev))
                c = forget * c_prev + i * f[1](clipped(gc))
                o = f[0](clipped(go + p_o * c))
                return o * f[2](c), c

        y, final = _scan(x_proj, step, tuple(states), lens, reverse_flags[d])
        ys.append(y)
        finals.append(final)
    Y = np.stack(ys, axis=1).astype(dtype)  # [T, dirs, B, H]
    outs = [np.stack([fs[k] for fs in finals]).astype(dtype) for k in range(len(finals[0]))]
    return (Y, *outs) if lens is None else rnn_cells.empty_sequences_zeroed((Y, *outs), lens)


def _attrs(a, layout):
    return dict(hidden_size=a.get("hidden_size"), direction=a["direction"], layout=layout,
                clip=a.get("clip"), activations=a.get("activations"),
                activation_alpha=a.get("activation_alpha"), activation_beta=a.get("activation_beta"),
                prepared=a.get("prepared"))


# Opsets before 14 have no layout attribute (always 0); opset 1 has output_sequence, which only
# says whether Y is wanted and is ignored here (Y is cheap to produce). ``prepared`` is not an ONNX
# attribute: the plan's rule prepared_recurrent passes the weights it prepared (see fast_weights).
@kernel("RNN", since=1)
def rnn_1(X, W, R, B=None, sequence_lens=None, initial_h=None, **a):
    return _recurrent("RNN", X, W, R, B, sequence_lens, [initial_h], None, **_attrs(a, 0))


@kernel("RNN", since=14)
def rnn_14(X, W, R, B=None, sequence_lens=None, initial_h=None, **a):
    return _recurrent("RNN", X, W, R, B, sequence_lens, [initial_h], None, **_attrs(a, a["layout"]))


@kernel("GRU", since=1)
def gru_1(X, W, R, B=None, sequence_lens=None, initial_h=None, **a):
    # Opset 1 has no linear_before_reset: the reset gate multiplies H before the recurrence matmul.
    return _recurrent("GRU", X, W, R, B, sequence_lens, [initial_h], None, **_attrs(a, 0))


@kernel("GRU", since=3)
def gru_3(X, W, R, B=None, sequence_lens=None, initial_h=None, **a):
    return _recurrent("GRU", X, W, R, B, sequence_lens, [initial_h], None, **_attrs(a, 0),
                      linear_before_reset=a["linear_before_reset"])


@kernel("GRU", since=14)
def gru_14(X, W, R, B=None, sequence_lens=None, initial_h=None, **a):
    return _recurrent("GRU", X, W, R, B, sequence_lens, [initial_h], None, **_attrs(a, a["layout"]),
                      linear_before_reset=a["linear_before_reset"])


@kernel("LSTM", since=1)
def lstm_1(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, **a):
    return _recurrent("LSTM", X, W, R, B, sequence_lens, [initial_h, initial_c], P, **_attrs(a, 0),
                      input_forget=a["input_forget"])


@kernel("LSTM", since=14)
def lstm_14(X, W, R, B=None, sequence_lens=None, initial_h=None, initial_c=None, P=None, **a):
    return _recurrent("LSTM", X, W, R, B, sequence_lens, [initial_h, initial_c], P,
                      **_attrs(a, a["layout"]), input_forget=a["input_forget"])
