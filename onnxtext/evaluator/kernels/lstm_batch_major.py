"""A bidirectional LSTM with prepared weights, batch-major: the states [dirs, B, H] as ONNX lays them out.

:func:`.rnn_cells.run` sends here a two-direction LSTM whose weights the plan (or the derived cache)
copied (gate order o, i, f, c, sigmoid rows halved: see rnn_cells) when every sequence is as long as X.
Against rnn_cells' transposed layout ([rows, B], batch innermost) it saves, at the sizes of the torch
exports (12 steps, batch 3, hidden 48):

* **the step inputs' copy**: the biases are added to the input projection as one contiguous call, and
  the copies into step order iterate over whole hidden rows (15.7 against 22.6 us for the biases and the
  step order, where the transposed layout writes three floats apart);
* **the product**: ``h [dirs, B, H] @ R^T [dirs, H, 4H]`` takes 2.9 us against 3.55 for
  ``R [dirs, 4H, H] @ h [dirs, H, B]`` (BLAS with three columns); its copy into gate-major blocks
  [gate, dirs, B, H] takes 0.77 against 0.69 us;
* **the states' copies**: the initial and final states need no transposition.

A step is ten calls, as in rnn_cells: the product, its copy into the gate blocks, the step's inputs
added, and the cell (one tanh over the gates, the sigmoids' two calls, ``i * c~`` and ``f * c`` as one
call over two adjacent blocks, their sum, tanh of the cell state and the output gate), the cell state
kept after c~ as in DynamicQuantizeLSTM's loop (kernels/contrib/quant_lstm.py).
"""

from __future__ import annotations

import numpy as np

_add, _multiply, _tanh, _matmul, _copyto = np.add, np.multiply, np.tanh, np.matmul, np.copyto


class Workspace:
    """The buffers of one shape, kept per thread (rnn_cells.kept_for_thread): step inputs [T, gate, dirs,
    B, H] in step order, states [T + 1, dirs, B, H] in step order, the gates then the cell state
    [5, dirs, B, H], the product [dirs, B, 4H], and the projections per input size."""

    def __init__(self, dtype, steps, batch, dirs, hidden):
        self.xs = np.empty((steps, 4, dirs, batch, hidden), dtype)
        self.hs = np.empty((steps + 1, dirs, batch, hidden), dtype)
        self.gates = np.empty((5, dirs, batch, hidden), dtype)
        self.product = np.empty((dirs, batch, 4 * hidden), dtype)
        self.tmp = np.empty((dirs, batch, hidden), dtype)
        self.x_steps, self.h_states = list(self.xs), list(self.hs)
        self.projections: dict = {}
        self.half = np.array(0.5, dtype)  # (a 0-d array: numpy converts a scalar operand at every call)


def run(X, prep, initial_states, reverse: list, kept_for_thread) -> tuple:
    """(Y [T, dirs, B, H], Y_h, Y_c) of a bidirectional LSTM; ``prep`` a :class:`.rnn_cells.Prepared` with
    ``r_batch_major``; ``kept_for_thread`` rnn_cells' per-thread cache."""
    steps, batch, inputs = X.shape
    dirs, hidden = prep.dirs, prep.hidden
    ws = kept_for_thread(("LSTM-batch-major", X.dtype.str, steps, batch, dirs, hidden),
                         lambda: Workspace(X.dtype, steps, batch, dirs, hidden))
    projected = ws.projections.get(inputs)
    if projected is None:
        projected = ws.projections[inputs] = np.empty((steps * batch, 4 * dirs * hidden), X.dtype)
    _matmul(X.reshape(steps * batch, inputs), prep.w_t, projected)  # columns [gate, dirs, H]
    _add(projected, prep.bias.reshape(-1), projected)
    p5 = projected.reshape(steps, batch, 4, dirs, hidden)
    for d in range(dirs):  # [T, B, gate, H] -> [T, gate, B, H], hidden rows whole
        p = p5[:, :, :, d].transpose(0, 2, 1, 3)
        _copyto(ws.xs[:, :, d], p[::-1] if reverse[d] else p)
    for state, initial in ((ws.hs[0], initial_states[0]), (ws.gates[4], initial_states[1])):
        if initial is None:
            state.fill(0)
        else:
            _copyto(state, initial)
    _loop(ws, prep.r_batch_major, steps)
    # Y [T, dirs, B, H] over memory ordered [T, B, dirs, H] (as rnn_cells.finish)
    y = np.empty((steps, batch, dirs, hidden), X.dtype).transpose(0, 2, 1, 3)
    hs = ws.hs
    for d in range(dirs):
        _copyto(y[:, d], hs[:0:-1, d] if reverse[d] else hs[1:, d])
    return y, np.array(hs[steps]), np.array(ws.gates[4])


def _loop(ws: Workspace, r_t: np.ndarray, steps: int) -> None:
    add, multiply, tanh, matmul, copyto = _add, _multiply, _tanh, _matmul, _copyto
    xs, hs, g, product, tmp, half = ws.x_steps, ws.h_states, ws.gates, ws.product, ws.tmp, ws.half
    dirs, batch, hidden = tmp.shape
    product_gates = product.reshape(dirs, batch, 4, hidden).transpose(2, 0, 1, 3)
    gates, sig, pairs, partners, go, gi, gf, c = g[:4], g[:3], g[1:3], g[3:5], g[0], g[1], g[2], g[4]
    for k in range(steps):
        matmul(hs[k], r_t, product)
        copyto(gates, product_gates)
        add(gates, xs[k], gates)
        tanh(gates, gates)
        multiply(sig, half, sig)
        add(sig, half, sig)
        multiply(pairs, partners, pairs)  # i * c~, f * c
        add(gi, gf, c)
        tanh(c, tmp)
        multiply(go, tmp, hs[k + 1])
