"""The fast path of the recurrent kernels: RNN, GRU and LSTM with their default activations.

:mod:`.rnn` sends a node here when nothing but the default activations is asked for (Tanh for RNN;
Sigmoid, Tanh for GRU; Sigmoid, Tanh, Tanh for LSTM), with no clip, no peepholes and no input_forget;
everything else takes its general path. Sequences shorter than X (``sequence_lens``) keep their
states by masked copies after each step (two or three calls a step more). What makes this one fast:

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
  direction is one matmul before the loop (W's rows already gate-major across directions), copied
  with the biases into *step order* (at step k the forward direction reads time k and the reverse
  direction time T-1-k) in one call per direction, or one for all when none runs backwards (a
  one-step run has BLAS write ``W x^T`` in the loop's layout directly; a one-step, one-direction LSTM
  with prepared weights takes ``[W | R | bias] @ [x; h; 1]`` as its only product). Each
  step then runs both directions at once (a stacked matmul) and writes into preallocated buffers
  with positional ``out`` arguments: nine numpy calls per step for an LSTM with prepared weights (gate
  order o, i, f, c: :data:`LSTM_ORDER`), whatever the number of directions. The hidden states are
  collected in step order and put back in time order (and batch-major) at the end.
* **Buffers kept per thread.** A run's step inputs, states and gate buffers, and the per-step views
  the loops index, stay in a :class:`Workspace` of this thread between runs of the same shape (a view
  made per step cost about 0.2 us each, three to five a step); outputs are always copied out.
* **Copies along the hidden axis.** Every copy between the batch-major layout of ONNX and the
  transposed one of the loop iterates with the hidden axis innermost; with the (short) batch axis
  innermost numpy spends its time starting inner loops of a few elements (the step-order copy of a
  12-step bidirectional LSTM at batch 3 took 55 us that way, 16 us this way).

com.microsoft::DynamicQuantizeLSTM (kernels/contrib/quant_lstm.py) quantizes ``h`` on the fly in a loop
of its own (batch-major, with buffers kept per thread by :func:`kept_for_thread`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

from . import lstm_batch_major
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
    """Whether the ``activations`` attribute asks for the operator's defaults (or is absent). Names
    beyond those the directions use are ignored (RNN's schema default lists Tanh twice, also for one
    direction), as the general path ignores them."""
    if not names:
        return True
    default = DEFAULT_ACTIVATIONS[op]
    lowered = tuple(str(n).lower() for n in names)
    used = default * num_directions
    return lowered[:len(used)] == used or (num_directions == 2 and lowered == default)


def sigmoid_scale(op: str, hidden: int, dtype) -> np.ndarray:
    """Per gate row: 0.5 for the rows of sigmoid gates, 1 for the others (see the module docstring)."""
    scale = np.ones(GATES[op] * hidden, dtype)
    scale[: SIGMOID_GATES[op] * hidden] = 0.5
    return scale


class Prepared:
    """Weights in the fast path's layout (one set per node's W/R/B).

    Gate rows are ordered gate-major across directions ([gates, dirs, hidden] flattened): the state of
    both directions is one column block [dirs*hidden, batch], and each gate's rows for all directions
    are one contiguous block of the step's gate buffer. ``w_t`` [input, rows] gives the input projection
    of every step and direction as one product ``X @ w_t``. With one direction the recurrence is one
    product with ``r``; with two, a stacked product with ``r_stacked`` [dirs, gates*hidden, hidden] whose
    result is copied into the gate-major rows (one call: cheaper than the strided elementwise calls it
    saves; a block-diagonal matrix, one product without the copy, measured slower)."""

    __slots__ = ("w_t", "bias", "r", "r_stacked", "r_gate", "r_gate_stacked", "gate_bias", "r_augmented", "hidden",
                 "dirs", "scaled", "order", "one_step", "r_batch_major", "nbytes")

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
        self.order = LSTM_ORDER if op == "LSTM" and scaled else None
        self.one_step = None  # [W | R | bias] for one-step runs, made on the first (see _lstm_one_step)
        if scaled:
            W = W * scale[:, None]
            R = R * scale[:, None]
        if self.order is not None:  # (copies already: the reordering costs nothing more)
            W, R = _reordered(W, self.order, hidden, 1), _reordered(R, self.order, hidden, 1)
            wb, rb = _reordered(wb, self.order, hidden, -1), _reordered(rb, self.order, hidden, -1)
        # [input, rows]: contiguous when kept between runs (BLAS takes 1.5-2x longer with the transposed
        # view at 36 rows of X), a view of W's rows when recomputed at every run
        self.w_t = gate_major(W, gates, hidden).T
        if scaled:
            self.w_t = np.ascontiguousarray(self.w_t)
        bias = wb + rb
        self.gate_bias = self.r_gate = self.r_gate_stacked = None
        if op == "GRU" and linear_before_reset:
            # the candidate's recurrence bias stays inside r * (Rh h + Rbh)
            bias = wb.copy()
            bias[:, : 2 * hidden] += rb[:, : 2 * hidden]
            self.gate_bias = np.ascontiguousarray(rb[:, 2 * hidden:].reshape(dirs * hidden, 1))
        elif op == "GRU":
            # Rh (r * h) is a second product per step: kept apart from Rzr
            self.r_gate, self.r_gate_stacked = recurrence_matrices(R[:, 2 * hidden:], 1, hidden)
            R = R[:, : 2 * hidden]
            gates -= 1
        self.r, self.r_stacked = recurrence_matrices(R, gates, hidden)
        # R^T per direction [dirs, H, 4H] for a bidirectional LSTM's batch-major loop (lstm_batch_major)
        self.r_batch_major = np.ascontiguousarray(R.transpose(0, 2, 1)) if self.order is not None and dirs == 2 \
            else None
        self.r_augmented = None
        if self.gate_bias is not None and self.r is not None and scaled:
            # [R | 0 ... 0 Rbh]: with a row of ones under the state, one product adds Rbh too
            column = np.zeros((self.r.shape[0], 1), dtype)
            column[2 * hidden:] = self.gate_bias
            self.r_augmented = np.concatenate([self.r, column], axis=1)
        self.bias = gate_major((bias * scale)[:, :, None], GATES[op], hidden)
        self.nbytes = sum(a.nbytes for a in (self.w_t, self.r, self.r_stacked, self.r_gate, self.r_gate_stacked,
                                             self.bias, self.gate_bias, self.r_augmented, self.r_batch_major)
                          if a is not None)


# An LSTM's gate blocks in the loop when its weights are copied (Prepared.scaled): o, i, f, c from ONNX's
# i, o, f, c. The sigmoid gates stay first (o, i, f), i and f are next to each other and to c~, and the
# workspace keeps the cell state right after c~ (Workspace.gates), so that i * c~ and f * c are one call.
LSTM_ORDER = (1, 0, 2, 3)


def _reordered(m: np.ndarray, order, hidden: int, axis: int) -> np.ndarray:
    """``m`` with its gate blocks (of ``hidden`` along ``axis``) in ``order``."""
    m = np.moveaxis(m, axis, 0)
    blocks = m.reshape((len(order), hidden) + m.shape[1:])[list(order)]
    return np.moveaxis(blocks.reshape(m.shape), 0, axis)


def gate_major(rows: np.ndarray, gates: int, hidden: int) -> np.ndarray:
    """[dirs, gates*hidden, k] -> [gates*dirs*hidden, k]: each gate's rows of every direction together
    (a view for one direction)."""
    dirs, _, k = rows.shape
    return np.ascontiguousarray(rows.reshape(dirs, gates, hidden, k).transpose(1, 0, 2, 3)).reshape(-1, k)


def recurrence_matrices(R, gates, hidden):
    """(R [gates*hidden, hidden] for one direction, else None; R [dirs, gates*hidden, hidden] for two,
    else None)."""
    if R.shape[0] == 1:
        return R[0], None
    return None, np.ascontiguousarray(R.reshape(R.shape[0], gates * hidden, hidden))


def prepared(op, W, R, B, hidden, linear_before_reset) -> Prepared:
    """The fast layout of W/R/B, kept between runs when they are read-only (initializers); W and R
    themselves as far as possible when they are not (computed at every run: inside an If branch from
    the outer scope's weights)."""
    if any(a is not None and a.flags.writeable for a in (W, R, B)):
        return Prepared(op, W, R, B, hidden, linear_before_reset, scaled=False)
    return derived(f"rnn-fast-{op}-{int(bool(linear_before_reset))}-{hidden}", (W, R, B),
                   lambda: Prepared(op, W, R, B, hidden, linear_before_reset), lambda p: p.nbytes,
                   readonly_inputs=True)


def step_inputs(p5: np.ndarray, bias: np.ndarray, reverse: list, out: np.ndarray) -> None:
    """Input projections as a [T, B, gates, dirs, hidden] view (+ the gate-major bias rows) ->
    ``out`` [T, gates*dirs*hidden, B] in step order (reverse directions read time T-1-k at step k).

    One call unless a direction runs backwards over more than one step. The copy iterates with the
    hidden axis innermost (contiguous in the projections): with the batch axis innermost, as the
    output's own order would have it, numpy copies a few elements per inner loop, 3-7x slower at
    batch 3."""
    steps, batch, gates, dirs, hidden = p5.shape
    view = out.reshape(steps, gates, dirs, hidden, batch).transpose(0, 4, 1, 2, 3)
    bias = bias.reshape(gates, dirs, hidden)
    if steps == 1 or not any(reverse):
        _add(p5, bias, view)
    else:
        for d in range(dirs):
            p = p5[:, :, :, d]
            _add(p[::-1] if reverse[d] else p, bias[:, d], view[:, :, :, d])


def _one_step_inputs(ws: Workspace, x: np.ndarray, prep: Prepared, sigmoid_rows: int) -> None:
    """A one-step run's inputs (silero's LSTM runs one step per call): the projection written by BLAS
    in the loop's transposed layout, ``W x^T`` (no step-order copy: 4.5 -> 0.5 us at hidden 128, batch
    2), plus the bias rows repeated over the batch (kept with the workspace for these weights)."""
    out = ws.x_steps[0]
    _matmul(prep.w_t.T, x.T, out)
    if not prep.scaled and sigmoid_rows:
        _multiply(out[:sigmoid_rows], 0.5, out[:sigmoid_rows])
    bias = ws.extra.get("one-step-bias")
    if bias is None or bias[0] is not prep.bias:
        bias = ws.extra["one-step-bias"] = (prep.bias, np.ascontiguousarray(np.broadcast_to(prep.bias, out.shape)))
    _add(out, bias[1], out)


def _set_state(out: np.ndarray, value, dirs: int, hidden: int) -> None:
    """out [dirs*hidden, B] = the [dirs, B, hidden] state ``value`` transposed (zeros when None)."""
    if value is None:
        out.fill(0)
    else:  # hidden innermost (see step_inputs)
        np.copyto(out.reshape(dirs, hidden, -1).transpose(0, 2, 1), value)


class Workspace:
    """The buffers a run of one shape works in, kept per thread between runs (:func:`workspace`): the
    step-order inputs ``xp`` [T, rows, B], the transposed states ``hs`` [T+1, dirs*H (+1), B], the LSTM
    cell state ``c``, their per-step views as lists (``x_steps``; ``h_inputs``, the products' inputs,
    with a GRU's row of ones; ``h_states``, without it) and a loop's own buffers in ``extra``. Making a
    view costs about 0.2 us, taking a list item 0.03 us, and a loop step uses three to five of them.
    Nothing of a workspace leaves a run: :func:`finish` copies every output."""

    __slots__ = ("xp", "hs", "c", "x_steps", "h_inputs", "h_states", "extra")

    def __init__(self, op, dtype, steps, batch, dirs, hidden, augmented):
        block = dirs * hidden
        self.xp = np.empty((steps, GATES[op] * block, batch), dtype)
        self.hs = np.empty((steps + 1, block + augmented, batch), dtype)
        if augmented:
            self.hs[:, block] = 1  # (the loops write the states' rows only)
        self.x_steps = list(self.xp)
        self.h_inputs = list(self.hs)
        self.h_states = [h[:block] for h in self.hs] if augmented else self.h_inputs
        self.extra = {}
        self.c = None
        if op == "LSTM":  # the gate blocks, then the cell state (see LSTM_ORDER)
            gates = self.extra["lstm-gates"] = np.empty((5 * block, batch), dtype)
            self.c = gates[4 * block:]


_local = threading.local()
# workspaces kept per thread (the most recently used shapes)
KEPT_WORKSPACES = 8


def kept_for_thread(key, make):
    """This thread's object for ``key``, made by ``make()`` when the thread has none (concurrent runs in
    other threads have their own); the KEPT_WORKSPACES most recently used keys are kept."""
    kept = getattr(_local, "workspaces", None)
    if kept is None:
        kept = _local.workspaces = OrderedDict()
    found = kept.get(key)
    if found is None:
        found = kept[key] = make()
        if len(kept) > KEPT_WORKSPACES:
            kept.popitem(last=False)
    else:
        kept.move_to_end(key)
    return found


def workspace(op, dtype, steps, batch, dirs, hidden, augmented=False) -> Workspace:
    """This thread's workspace for a run of this shape (see :func:`kept_for_thread`)."""
    return kept_for_thread((op, np.dtype(dtype).str, steps, batch, dirs, hidden, augmented),
                           lambda: Workspace(op, dtype, steps, batch, dirs, hidden, augmented))


def run(op, X, prep: Prepared, initial_states, reverse: list, lens=None):
    """Y [T, dirs, B, H] and the final states ([dirs, B, H] each) for layout-0 inputs.

    ``lens`` (int64 [B], or None when every sequence is as long as X): a batch entry's state stays as
    it is at the steps beyond its length (for a reverse direction, those before its last valid
    element, which it starts from), and its Y rows there are zero."""
    if op == "LSTM" and lens is None and prep.scaled:
        if X.shape[0] == 1 and prep.r is not None:
            return _lstm_one_step(X, prep, initial_states)
        if prep.r_batch_major is not None:
            return lstm_batch_major.run(X, prep, initial_states, reverse, kept_for_thread)
    ws = begin(op, X, prep, initial_states, reverse)
    block = len(reverse) * prep.hidden
    frozen = None if lens is None else _frozen_steps(ws, lens, reverse, prep.hidden)
    if op == "LSTM":
        _lstm_loop(ws, prep.r, prep.r_stacked, block, prep.scaled, frozen, prep.order)
    elif op == "GRU":
        augmented = prep.r_augmented is not None
        _gru_loop(ws, prep.r_augmented if augmented else prep.r, prep.r_stacked, prep.r_gate,
                  prep.r_gate_stacked, None if augmented else prep.gate_bias, prep.gate_bias is not None, block,
                  prep.scaled, frozen)
    else:
        _rnn_loop(ws, prep.r, prep.r_stacked, block, frozen)
    return finish(ws, reverse, prep.hidden, lens)


def _lstm_one_step(X, prep: Prepared, initial_states) -> tuple:
    """A one-step, one-direction LSTM with copied weights (silero-vad runs one step per call): the gates
    as one product ``[W | R | bias] @ [x; h; 1]`` (the matrix made once per weights) instead of two
    products and two additions, then the cell of :func:`_lstm_loop` (gate order o, i, f, c): 0.88-0.94
    of the time of those at input and hidden 128, batch 2 (each product of a 512-row matrix with two
    columns takes about 8 us, the fused one 11). The sums are the same terms added in another order."""
    _, batch, inputs = X.shape
    hidden = prep.hidden
    ws = workspace("LSTM", X.dtype, 1, batch, 1, hidden)
    fused = prep.one_step
    if fused is None:
        fused = prep.one_step = np.ascontiguousarray(np.concatenate([prep.w_t.T, prep.r, prep.bias], axis=1))
    views = ws.extra.get(("one-step", inputs))
    if views is None:
        stacked = np.empty((inputs + hidden + 1, batch), X.dtype)
        stacked[-1] = 1
        g5 = ws.extra["lstm-gates"]
        views = ws.extra[("one-step", inputs)] = (
            stacked, stacked[:inputs], stacked[inputs:inputs + hidden], g5[: 4 * hidden], g5[: 3 * hidden],
            g5[:hidden], g5[hidden: 2 * hidden], g5[2 * hidden: 3 * hidden], g5[hidden: 3 * hidden],
            g5[3 * hidden:], np.empty((hidden, batch), X.dtype), np.array(0.5, X.dtype))
    stacked, x_rows, h_rows, g, sig, go, gi, gf, pairs, partners, tmp, half = views
    np.copyto(x_rows, X[0].T)
    _set_state(h_rows, initial_states[0], 1, hidden)
    c = ws.c
    _set_state(c, initial_states[1], 1, hidden)
    _matmul(fused, stacked, g)
    _tanh(g, g)
    _multiply(sig, half, sig)
    _add(sig, half, sig)
    _multiply(pairs, partners, pairs)  # i * c~, f * c
    _add(gi, gf, c)
    _tanh(c, tmp)
    _multiply(go, tmp, ws.h_states[1])
    return finish(ws, [False], hidden)


def _frozen_steps(ws: Workspace, lens, reverse: list, hidden: int) -> list:
    """Per step k, a [dirs*hidden, B] mask of the states that keep their previous value: batch entries
    whose time at step k (k, or T-1-k for a reverse direction) is not below their length."""
    steps, batch = len(ws.x_steps), ws.hs.shape[-1]
    dirs = len(reverse)
    masks = ws.extra.get("frozen")
    if masks is None:
        masks = ws.extra["frozen"] = np.empty((steps, dirs, hidden, batch), bool)
    k = np.arange(steps).reshape(steps, 1, 1)
    for d in range(dirs):
        np.greater_equal(steps - 1 - k if reverse[d] else k, lens, out=masks[:, d])
    return list(masks.reshape(steps, dirs * hidden, batch))


def begin(op, X, prep: Prepared, initial_states, reverse: list) -> Workspace:
    """The run's workspace with the step-order inputs and the initial states (and LSTM cell state) set."""
    steps, batch, inputs = X.shape
    dirs = len(reverse)
    hidden = prep.hidden
    block = dirs * hidden
    gates = GATES[op]
    # a GRU whose candidate bias is in its recurrence matrix has a row of ones under the states
    ws = workspace(op, X.dtype, steps, batch, dirs, hidden, op == "GRU" and prep.r_augmented is not None)
    if steps == 1:
        _one_step_inputs(ws, X[0], prep, SIGMOID_GATES[op] * block)
    else:
        projected = ws.extra.get(("projection", inputs))
        if projected is None:
            projected = ws.extra[("projection", inputs)] = np.empty((steps * batch, gates * block), X.dtype)
        _matmul(X.reshape(steps * batch, inputs), prep.w_t, projected)  # [T*B, rows]
        sigmoid_columns = SIGMOID_GATES[op] * block
        if not prep.scaled and sigmoid_columns:
            _multiply(projected[:, :sigmoid_columns], 0.5, projected[:, :sigmoid_columns])
        step_inputs(projected.reshape(steps, batch, gates, dirs, hidden), prep.bias, reverse, ws.xp)
    _set_state(ws.h_states[0], initial_states[0], dirs, hidden)
    if op == "LSTM":
        _set_state(ws.c, initial_states[1], dirs, hidden)
    return ws


def finish(ws: Workspace, reverse: list, hidden: int, lens=None) -> tuple:
    """(Y [T, dirs, B, H], Y_h [dirs, B, H]) and for an LSTM Y_c, copied out of the workspace's states
    (in step order there); with ``lens``, Y is zero at each batch entry's times beyond its length."""
    dirs = len(reverse)
    hs = ws.hs
    steps, batch = hs.shape[0] - 1, hs.shape[-1]
    states = hs[:, :dirs * hidden].reshape(steps + 1, dirs, hidden, batch)
    # Y [T, dirs, B, H] over memory ordered [T, B, dirs, H]: exporters follow a bidirectional node with
    # Transpose(0, 2, 1, 3) and Reshape to [T, B, dirs*H], which are then views (4.3 -> 1.9 us)
    y = np.empty((steps, batch, dirs, hidden), hs.dtype).transpose(0, 2, 1, 3)
    if not any(reverse):
        np.copyto(y, states[1:].transpose(0, 1, 3, 2))
    else:
        for d in range(dirs):
            np.copyto(y[:, d], (states[:0:-1, d] if reverse[d] else states[1:, d]).transpose(0, 2, 1))
    if lens is not None:
        np.copyto(y, 0, where=np.arange(steps).reshape(steps, 1, 1, 1) >= lens.reshape(1, 1, batch, 1))
    outs = (y, np.array(states[steps].transpose(0, 2, 1)))  # (np.array copies: never a workspace view)
    if ws.c is not None:
        outs += (np.array(ws.c.reshape(dirs, hidden, batch).transpose(0, 2, 1)),)
    return outs if lens is None else empty_sequences_zeroed(outs, lens)


def empty_sequences_zeroed(outs: tuple, lens: np.ndarray) -> tuple:
    """The final states of batch entries whose sequence is empty (length 0) set to zero, as onnxruntime
    gives them (not the initial state, which no step has read)."""
    empty = lens <= 0
    if empty.any():
        for state in outs[1:]:
            state[:, empty] = 0
    return outs


def _stacked_views(ws: Workspace, key, inputs, out, dirs, rows, hidden):
    """For a direction-stacked product per step (``matmul(matrices, inputs[k], tmp)`` then
    ``copyto(out_rows, tmp_rows)``): (per-step inputs as [dirs, hidden, B] views, tmp, out_rows,
    tmp_rows), made once per workspace. ``inputs``: the per-step [dirs*hidden, B] arrays."""
    views = ws.extra.get(key)
    if views is None:
        gates, batch = rows // hidden, out.shape[-1]
        tmp = np.empty((dirs, rows, batch), out.dtype)
        views = ws.extra[key] = ([h.reshape(dirs, hidden, batch) for h in inputs], tmp,
                                 out.reshape(gates, dirs, hidden, batch),
                                 tmp.reshape(dirs, gates, hidden, batch).transpose(1, 0, 2, 3))
    return views


def _rnn_loop(ws, r, stacked, block, frozen=None):
    add, tanh, matmul, copyto = _add, _tanh, _matmul, np.copyto
    xs, hs = ws.x_steps, ws.h_states
    if r is None:  # one gate: the direction-stacked product is already in the state's row order
        dirs, hidden, _ = stacked.shape
        states = ws.extra.get("rnn-stacked")
        if states is None:
            states = ws.extra["rnn-stacked"] = [h.reshape(dirs, hidden, -1) for h in hs]
    for k in range(len(xs)):
        h = hs[k + 1]
        if r is not None:
            matmul(r, hs[k], h)
        else:
            matmul(stacked, states[k], states[k + 1])
        add(h, xs[k], h)
        tanh(h, h)
        if frozen is not None:
            copyto(h, hs[k], where=frozen[k])


def _lstm_loop(ws, r, stacked, block, scaled, frozen=None, order=None):
    """Gate row blocks i, o, f, c (or o, i, f, c with ``order`` LSTM_ORDER, the cell state after them);
    i/o/f halved (sigmoid as tanh): in r when ``scaled``, else here. The recurrence is one product with
    ``r``, or with the ``stacked`` per-direction matrices (copied into the gate-major rows); the
    ``frozen`` masks (see run) keep states as they were.

    In order o, i, f, c~, c: ``i * c~`` and ``f * c`` are one call over two adjacent blocks each, and
    their sum is the new cell state: 9 calls a step besides the product (10 in ONNX's order; 0.76 against
    1.08 us at hidden 64, batch 1)."""
    add, multiply, tanh, matmul, copyto = _add, _multiply, _tanh, _matmul, np.copyto
    xs, hs, c = ws.x_steps, ws.h_states, ws.c
    bufs = ws.extra.get(("lstm", order))
    if bufs is None:
        g5 = ws.extra["lstm-gates"]
        g = g5[: 4 * block]
        blocks = [g5[k * block:(k + 1) * block] for k in range(5)]
        if order is None:  # i, o, f, c
            named = (blocks[0], blocks[1], blocks[2], blocks[3])
        else:  # o, i, f, c
            named = (blocks[1], blocks[0], blocks[2], blocks[3])
        bufs = ws.extra[("lstm", order)] = (g, g5[: 3 * block], *named, g5[block: 3 * block],
                                            g5[3 * block:], np.empty(c.shape, c.dtype))
    g, sig, gi, go, gf, gc, pairs, partners, tmp = bufs
    c_prev = None if frozen is None else np.empty(c.shape, c.dtype)
    half = np.array(0.5, g.dtype)  # (a 0-d array: numpy converts a scalar operand at every call, ~0.3 us)
    if r is None:
        dirs, rows, hidden = stacked.shape
        states, rtmp, out_rows, tmp_rows = _stacked_views(ws, "lstm-stacked", hs, g, dirs, rows, hidden)
    for k in range(len(xs)):
        if r is not None:
            matmul(r, hs[k], g)
        else:  # (a copy and a contiguous addition: 1.06 us, against 1.31 for adding the strided rows)
            matmul(stacked, states[k], rtmp)
            copyto(out_rows, tmp_rows)
        if not scaled:
            multiply(sig, half, sig)
        add(g, xs[k], g)
        tanh(g, g)
        multiply(sig, half, sig)
        add(sig, half, sig)
        if frozen is not None:
            copyto(c_prev, c)
        if order is None:
            multiply(gf, c, c)
            multiply(gi, gc, gi)
            add(c, gi, c)
        else:
            multiply(pairs, partners, pairs)  # i * c~, f * c
            add(gi, gf, c)
        tanh(c, tmp)
        multiply(go, tmp, hs[k + 1])
        if frozen is not None:
            copyto(c, c_prev, where=frozen[k])
            copyto(hs[k + 1], hs[k], where=frozen[k])


def _gru_loop(ws, r, stacked, r_gate, gate_stacked, gate_bias, linear, block, scaled, frozen=None):
    """h~ = tanh(Wh x + Rh (r * h) + Wbh + Rbh), or with ``linear`` (linear_before_reset)
    tanh(Wh x + Wbh + r * (Rh h + Rbh)), where one product gives the three gates' recurrent terms and
    Rbh comes from the matrix's last column (``gate_bias`` None: the states have a row of ones) or is
    added (``gate_bias``). Products as in :func:`_lstm_loop` (``r`` or ``stacked``; ``r_gate`` or
    ``gate_stacked`` for Rh)."""
    add, subtract, multiply, tanh, matmul, copyto = _add, _subtract, _multiply, _tanh, _matmul, np.copyto
    xs, h_inputs, hs = ws.x_steps, ws.h_inputs, ws.h_states
    key = ("gru", linear)
    bufs = ws.extra.get(key)
    if bufs is None:
        batch, dtype = ws.xp.shape[-1], ws.xp.dtype
        g = np.empty(((3 if linear else 2) * block, batch), dtype)
        z = g[:block]
        bufs = ws.extra[key] = (g, g[: 2 * block], z, g[block: 2 * block],
                                g[2 * block:] if linear else np.empty(z.shape, dtype), np.empty(z.shape, dtype),
                                [x[: 2 * block] for x in xs], [x[2 * block:] for x in xs], np.empty(z.shape, dtype))
    g, zr, z, rg, gh, rh, xzr, xh, tmp = bufs
    half = np.array(0.5, g.dtype)  # (a 0-d array: numpy converts a scalar operand at every call, ~0.3 us)
    if r is None:
        dirs, rows, hidden = stacked.shape
        states, rtmp, out_rows, tmp_rows = _stacked_views(ws, ("gru-stacked", linear), h_inputs, g, dirs, rows,
                                                          hidden)
    if not linear and r_gate is None:
        dirs, rows, hidden = gate_stacked.shape
        (gate_in,), gate_tmp, gate_rows, gate_tmp_rows = _stacked_views(ws, "gru-gate-stacked", [rh], gh, dirs,
                                                                        rows, hidden)
    for k in range(len(xs)):
        h = hs[k]
        if r is not None:
            matmul(r, h_inputs[k], g)
        else:
            matmul(stacked, states[k], rtmp)
            copyto(out_rows, tmp_rows)
        if not scaled:
            multiply(zr, half, zr)
        add(zr, xzr[k], zr)
        tanh(zr, zr)
        multiply(zr, half, zr)
        add(zr, half, zr)
        if linear:
            if gate_bias is not None:
                add(gh, gate_bias, gh)
            multiply(rg, gh, gh)
        else:
            multiply(rg, h, rh)
            if r_gate is not None:
                matmul(r_gate, rh, gh)
            else:
                matmul(gate_stacked, gate_in, gate_tmp)
                copyto(gate_rows, gate_tmp_rows)
        add(gh, xh[k], gh)
        tanh(gh, gh)
        # h' = (1 - z) * h~ + z * h, as h~ + z * (h - h~)
        subtract(h, gh, tmp)
        multiply(z, tmp, tmp)
        add(gh, tmp, hs[k + 1])
        if frozen is not None:
            copyto(hs[k + 1], h, where=frozen[k])
