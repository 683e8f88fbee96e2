"""RNN, GRU, LSTM and com.microsoft::DynamicQuantizeLSTM against onnxruntime, one case per line.

Each case is a one-node model (tests/helpers.py) with seeded random inputs, run by the evaluator and by
onnxruntime (one thread: its DynamicQuantizeLSTM quantizes each thread's part of the batch with its own
range). The table crosses the attributes the kernels branch on: direction, sequence_lens shorter than
the sequence, layout 0/1, clip, custom activations with alpha/beta, peepholes, linear_before_reset,
input_forget, initial states given or not, batch 1 and more. The default activations without clip,
peepholes or input_forget take the fast path (kernels/rnn_cells.py; sequence_lens included), the others
the general one (kernels/rnn.py); :func:`test_fast_path_equals_general_path` compares the two directly.
onnxruntime's CPU kernels are float32 only, so float64 cases compare with onnx.reference (which ignores
sequence_lens and clip: no float64 case has them); onnxruntime has
no batch-first (layout 1) recurrence, so layout-1 cases compare with the layout-0 node on transposed inputs.

Add a case: one ``Case(...)`` line in ``CASES`` (or ``QUANTIZED``, or ``QUANTIZED_AT_SCALE`` for
DynamicQuantizeLSTM at OCR-model sizes).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import onnx
import pytest

from helpers import assert_close, node_model, run_onnxruntime
from onnxtext import Evaluator

pytest.importorskip("onnxruntime")

GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}


class Case(NamedTuple):
    name: str
    op: str
    direction: str = "forward"
    steps: int = 5
    batch: int = 3
    inputs: int = 4
    hidden: int = 6
    layout: int = 0
    attrs: dict = {}
    bias: bool = True
    lens: tuple | None = None  # sequence_lens (None: not given)
    initial: bool = False  # initial_h (and initial_c) given
    peepholes: bool = False
    dtype: str = "float32"
    fed_weights: bool = False  # W, R, B as graph inputs (new arrays at every run) instead of initializers
    column_scales: bool = False  # DynamicQuantizeLSTM: scales and zero points per column, not per direction


CASES = [
    # RNN
    Case("rnn_forward", "RNN"),
    Case("rnn_reverse_initial", "RNN", "reverse", initial=True),
    Case("rnn_bidirectional_no_bias", "RNN", "bidirectional", bias=False),
    Case("rnn_batch1", "RNN", batch=1, steps=7),
    Case("rnn_lengths", "RNN", "bidirectional", lens=(5, 2, 3), initial=True),
    Case("rnn_reverse_lengths", "RNN", "reverse", lens=(1, 4, 5)),
    # an empty sequence: onnxruntime gives zero final states (not the initial ones)
    Case("rnn_bidirectional_empty_sequence", "RNN", "bidirectional", lens=(3, 0, 5), initial=True),
    Case("rnn_layout1", "RNN", "bidirectional", layout=1, initial=True),
    Case("rnn_clip", "RNN", attrs=dict(clip=0.4)),
    Case("rnn_relu", "RNN", attrs=dict(activations=["Relu"])),
    Case("rnn_leakyrelu_alpha", "RNN", "bidirectional", attrs=dict(
        activations=["LeakyRelu", "ScaledTanh"], activation_alpha=[0.2, 0.8], activation_beta=[1.5])),
    Case("rnn_float64", "RNN", "bidirectional", initial=True, dtype="float64"),
    Case("rnn_fed_weights", "RNN", "reverse", fed_weights=True),
    # GRU (linear_before_reset 0: reset gate before the recurrence product; 1: after, as torch exports)
    Case("gru_forward", "GRU"),
    Case("gru_linear_before_reset", "GRU", attrs=dict(linear_before_reset=1)),
    Case("gru_reverse_initial", "GRU", "reverse", initial=True),
    Case("gru_reverse_linear_initial", "GRU", "reverse", initial=True, attrs=dict(linear_before_reset=1)),
    Case("gru_bidirectional", "GRU", "bidirectional", initial=True),
    Case("gru_bidirectional_linear_no_bias", "GRU", "bidirectional", bias=False,
         attrs=dict(linear_before_reset=1)),
    Case("gru_batch1_long", "GRU", batch=1, steps=12, attrs=dict(linear_before_reset=1)),
    Case("gru_lengths", "GRU", "bidirectional", lens=(1, 5, 3), initial=True),
    Case("gru_lengths_linear", "GRU", lens=(4, 5, 2), attrs=dict(linear_before_reset=1)),
    Case("gru_empty_sequence", "GRU", lens=(0, 5, 2), initial=True, attrs=dict(linear_before_reset=1)),
    Case("gru_bidirectional_lengths_linear", "GRU", "bidirectional", lens=(2, 5, 3), initial=True,
         attrs=dict(linear_before_reset=1)),
    Case("gru_layout1", "GRU", "bidirectional", layout=1, initial=True, attrs=dict(linear_before_reset=1)),
    Case("gru_clip", "GRU", attrs=dict(clip=0.3)),
    Case("gru_activations_alpha", "GRU", attrs=dict(
        activations=["HardSigmoid", "Affine"], activation_alpha=[0.3, 0.7], activation_beta=[0.4, 0.1])),
    Case("gru_float64", "GRU", "bidirectional", initial=True, dtype="float64"),
    Case("gru_fed_weights", "GRU", "bidirectional", fed_weights=True),
    Case("gru_linear_fed_weights", "GRU", initial=True, fed_weights=True, attrs=dict(linear_before_reset=1)),
    # LSTM (gate order i, o, f, c)
    Case("lstm_forward", "LSTM"),
    Case("lstm_forward_initial", "LSTM", initial=True),
    Case("lstm_reverse", "LSTM", "reverse", initial=True),
    Case("lstm_bidirectional", "LSTM", "bidirectional"),
    Case("lstm_bidirectional_initial_no_bias", "LSTM", "bidirectional", bias=False, initial=True),
    Case("lstm_batch1_long", "LSTM", "bidirectional", batch=1, steps=16, hidden=8),
    Case("lstm_one_step", "LSTM", steps=1, batch=2, hidden=16, initial=True),
    Case("lstm_lengths", "LSTM", "bidirectional", lens=(5, 1, 3), initial=True),
    Case("lstm_lengths_all_full", "LSTM", "bidirectional", lens=(5, 5, 5)),
    Case("lstm_layout1", "LSTM", "bidirectional", layout=1, initial=True),
    Case("lstm_layout1_lengths", "LSTM", layout=1, lens=(2, 5, 4)),
    Case("lstm_reverse_lengths", "LSTM", "reverse", lens=(3, 5, 1), initial=True),
    Case("lstm_lengths_model_sized", "LSTM", "bidirectional", steps=12, batch=3, inputs=32, hidden=48,
         lens=(12, 7, 3), initial=True),
    Case("lstm_clip", "LSTM", "bidirectional", attrs=dict(clip=0.5)),
    Case("lstm_peepholes", "LSTM", peepholes=True, initial=True),
    Case("lstm_peepholes_bidirectional", "LSTM", "bidirectional", peepholes=True),
    Case("lstm_input_forget", "LSTM", attrs=dict(input_forget=1)),
    Case("lstm_activations_alpha", "LSTM", attrs=dict(
        activations=["HardSigmoid", "ScaledTanh", "Elu"], activation_alpha=[0.25, 0.9, 0.6],
        activation_beta=[0.45, 1.2])),
    Case("lstm_float64", "LSTM", "bidirectional", initial=True, dtype="float64"),
    Case("lstm_float64_peepholes", "LSTM", peepholes=True, initial=True, dtype="float64"),
    Case("lstm_fed_weights", "LSTM", "bidirectional", initial=True, fed_weights=True),
    Case("lstm_fed_weights_one_step", "LSTM", steps=1, batch=2, hidden=16, fed_weights=True),
    # the sizes of the corpus's recurrent models (torch exports: bidirectional LSTMs of hidden 48 at
    # batch 3, a GRU of hidden 32 with linear_before_reset, silero's one-step LSTM of hidden 128)
    Case("lstm_bidirectional_model_sized", "LSTM", "bidirectional", steps=12, batch=3, inputs=32, hidden=48,
         initial=True),
    Case("gru_linear_model_sized", "GRU", steps=10, batch=3, inputs=16, hidden=32, initial=True,
         attrs=dict(linear_before_reset=1)),
    Case("gru_bidirectional_linear_model_sized", "GRU", "bidirectional", steps=6, batch=3, inputs=16, hidden=32,
         attrs=dict(linear_before_reset=1)),
    Case("lstm_one_step_model_sized", "LSTM", steps=1, batch=2, inputs=128, hidden=128, initial=True),
    # one step: the projection written straight in the loop's layout (rnn_cells._one_step_inputs)
    Case("gru_linear_one_step", "GRU", steps=1, initial=True, attrs=dict(linear_before_reset=1)),
    Case("gru_bidirectional_one_step_fed_weights", "GRU", "bidirectional", steps=1, fed_weights=True),
    Case("rnn_bidirectional_one_step", "RNN", "bidirectional", steps=1, batch=2),
    Case("lstm_reverse_one_step_lengths", "LSTM", "reverse", steps=1, lens=(1, 0, 1), initial=True),
    # one step, one direction, prepared weights: one product [W | R | bias] @ [x; h; 1] (rnn_cells._lstm_one_step)
    Case("lstm_reverse_one_step", "LSTM", "reverse", steps=1, batch=2, hidden=16),
    Case("lstm_one_step_no_bias_batch1", "LSTM", steps=1, batch=1, inputs=7, hidden=5, bias=False, initial=True),
    Case("lstm_one_step_float64", "LSTM", steps=1, batch=2, hidden=8, initial=True, dtype="float64"),
    Case("lstm_one_step_layout1", "LSTM", steps=1, batch=3, hidden=8, layout=1, initial=True),
    Case("lstm_bidirectional_one_step", "LSTM", "bidirectional", steps=1, batch=2, hidden=8, initial=True),
]

# DynamicQuantizeLSTM: W [dirs, input, 4H] and R [dirs, H, 4H] int8 with per-direction scales
QUANTIZED = [
    Case("dq_lstm_forward", "DynamicQuantizeLSTM"),
    Case("dq_lstm_reverse_initial", "DynamicQuantizeLSTM", "reverse", initial=True),
    Case("dq_lstm_bidirectional", "DynamicQuantizeLSTM", "bidirectional", hidden=8, steps=7),
    Case("dq_lstm_bidirectional_batch1_no_bias", "DynamicQuantizeLSTM", "bidirectional", batch=1, bias=False),
    Case("dq_lstm_lengths", "DynamicQuantizeLSTM", "bidirectional", lens=(5, 2, 4)),
    Case("dq_lstm_empty_sequence", "DynamicQuantizeLSTM", "bidirectional", lens=(5, 0, 4), initial=True),
    # every sequence shorter than X: onnxruntime quantizes the input over max(sequence_lens) steps only
    Case("dq_lstm_all_shorter", "DynamicQuantizeLSTM", steps=8, lens=(2, 4, 4), initial=True),
    Case("dq_lstm_all_shorter_bidirectional", "DynamicQuantizeLSTM", "bidirectional", steps=7, batch=2,
         lens=(2, 1)),
    Case("dq_lstm_all_empty", "DynamicQuantizeLSTM", "reverse", lens=(0, 0, 0), initial=True),
    Case("dq_lstm_peepholes", "DynamicQuantizeLSTM", peepholes=True, initial=True),
    Case("dq_lstm_clip", "DynamicQuantizeLSTM", attrs=dict(clip=0.5)),
    Case("dq_lstm_column_scales", "DynamicQuantizeLSTM", "bidirectional", initial=True, column_scales=True),
    Case("dq_lstm_one_step_column_scales", "DynamicQuantizeLSTM", steps=1, batch=2, column_scales=True),
    Case("dq_lstm_model_sized", "DynamicQuantizeLSTM", "bidirectional", steps=12, batch=3, inputs=32, hidden=48,
         initial=True),
    # hidden * 255 * 127 > 2**24: the recurrent products are cut into exact float32 chunks
    Case("dq_lstm_wide_chunked_products", "DynamicQuantizeLSTM", steps=2, batch=2, hidden=520),
    # input * 255 * 129 > 2**24: the input projection too
    Case("dq_lstm_wide_input_chunked", "DynamicQuantizeLSTM", "bidirectional", steps=3, batch=2, inputs=600,
         hidden=5),
]

# DynamicQuantizeLSTM at the sizes of OCR models (ddddocr_common_old: bidirectional, 20 steps, batch 1, input
# and hidden 512): recurrent products of megabytes a step. hidden * 255 * max|R - zero point| < 2**24 takes
# the exact float32 product (500 * 255 * 129), above it the chunked one (ddddocr's zero points are 0, so
# its hidden 512 is exact: 512 * 255 * 127)
QUANTIZED_AT_SCALE = [
    Case("dq_lstm_ocr_sized", "DynamicQuantizeLSTM", "bidirectional", steps=20, batch=1, inputs=512, hidden=500),
    Case("dq_lstm_ocr_sized_chunked", "DynamicQuantizeLSTM", "bidirectional", steps=6, batch=1, inputs=64,
         hidden=640),
    Case("dq_lstm_large_batch4_initial", "DynamicQuantizeLSTM", "bidirectional", steps=9, batch=4, inputs=96,
         hidden=256, initial=True),
    Case("dq_lstm_large_reverse_batch2", "DynamicQuantizeLSTM", "reverse", steps=16, batch=2, inputs=128,
         hidden=192),
    Case("dq_lstm_large_column_scales", "DynamicQuantizeLSTM", "bidirectional", steps=8, batch=2, inputs=64,
         hidden=160, column_scales=True),
    Case("dq_lstm_large_lengths", "DynamicQuantizeLSTM", "bidirectional", steps=10, batch=3, inputs=48,
         hidden=128, lens=(10, 4, 7)),
    Case("dq_lstm_large_all_shorter", "DynamicQuantizeLSTM", "forward", steps=12, batch=2, inputs=64,
         hidden=200, lens=(9, 5), initial=True),
]


def _values(case: Case, rng) -> tuple[dict, dict]:
    """(inputs, constants) for the node, in the operator's input order."""
    dtype = np.dtype(case.dtype)
    dirs = 2 if case.direction == "bidirectional" else 1
    gates = GATES["LSTM" if case.op == "DynamicQuantizeLSTM" else case.op]
    hidden = case.hidden

    def uniform(*shape, scale=1.0):
        return (rng.uniform(-scale, scale, shape)).astype(dtype)

    x_shape = (case.batch, case.steps, case.inputs) if case.layout else (case.steps, case.batch, case.inputs)
    state_shape = (case.batch, dirs, hidden) if case.layout else (dirs, case.batch, hidden)
    inputs = {"X": uniform(*x_shape, scale=2.0)}
    constants = {}
    if case.op == "DynamicQuantizeLSTM":
        constants["W"] = rng.integers(-127, 128, (dirs, case.inputs, gates * hidden)).astype(np.int8)
        constants["R"] = rng.integers(-127, 128, (dirs, hidden, gates * hidden)).astype(np.int8)
    else:
        constants["W"] = uniform(dirs, gates * hidden, case.inputs, scale=0.6)
        constants["R"] = uniform(dirs, gates * hidden, hidden, scale=0.6)
    constants["B"] = uniform(dirs, 2 * gates * hidden, scale=0.5) if case.bias else None
    constants["sequence_lens"] = None if case.lens is None else np.array(case.lens, np.int32)
    if case.fed_weights:
        inputs.update((n, constants.pop(n)) for n in ("W", "R", "B"))
    if case.initial:
        inputs["initial_h"] = uniform(*state_shape)
        if gates == 4:
            inputs["initial_c"] = uniform(*state_shape)
    else:
        constants["initial_h"] = None
        if gates == 4:
            constants["initial_c"] = None
    if gates == 4:
        constants["P"] = uniform(dirs, 3 * hidden, scale=0.5) if case.peepholes else None
    if case.op == "DynamicQuantizeLSTM":
        shape = (dirs, gates * hidden) if case.column_scales else (dirs,)
        constants["W_scale"] = rng.uniform(0.002, 0.006, shape).astype(np.float32)
        # (onnxruntime refuses per-column zero points other than 0)
        spread = 0 if case.column_scales else 2
        constants["W_zero_point"] = rng.integers(-spread, spread + 1, shape).astype(np.int8)
        constants["R_scale"] = rng.uniform(0.002, 0.006, shape).astype(np.float32)
        constants["R_zero_point"] = rng.integers(-spread, spread + 1, shape).astype(np.int8)
    return inputs, constants


def _model(case: Case, rng) -> tuple[onnx.ModelProto, dict]:
    inputs, constants = _values(case, rng)
    attrs = dict(hidden_size=case.hidden, direction=case.direction, **case.attrs)
    if case.layout:
        attrs["layout"] = case.layout
    outputs = ("Y", "Y_h", "Y_c") if GATES.get(case.op, 4) == 4 else ("Y", "Y_h")
    quantized = case.op == "DynamicQuantizeLSTM"
    # inputs first, then constants, in the operator's order: build the node with every name in order
    order = (["X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P"]
             + (["W_scale", "W_zero_point", "R_scale", "R_zero_point"] if quantized else []))
    order = [n for n in order if n in inputs or n in constants]
    model = node_model(case.op, {n: inputs[n] for n in inputs}, attrs, outputs=outputs,
                       constants={n: v for n, v in constants.items() if v is not None},
                       domain="com.microsoft" if quantized else "", opset=14 if case.layout else 13)
    node = model.graph.node[0]
    del node.input[:]
    node.input.extend(n if n in inputs or constants.get(n) is not None else "" for n in order)
    while node.input and not node.input[-1]:
        del node.input[-1]
    return model, inputs


def _oracle(case: Case, model, feeds) -> list:
    if case.layout:
        # onnxruntime has no batch-first recurrence: run the layout-0 node on transposed inputs
        first = onnx.ModelProto()
        first.CopyFrom(model)
        for attr in first.graph.node[0].attribute:
            if attr.name == "layout":
                attr.i = 0
        for value in first.graph.input:
            value.type.tensor_type.ClearField("shape")
        y, *states = _oracle(case._replace(layout=0), first, {n: np.swapaxes(v, 0, 1) for n, v in feeds.items()})
        return [np.transpose(y, (2, 0, 1, 3))] + [np.swapaxes(s, 0, 1) for s in states]
    if case.dtype == "float32":
        return run_onnxruntime(model, feeds)
    from onnx.reference import ReferenceEvaluator

    return ReferenceEvaluator(model).run(None, feeds)


@pytest.mark.parametrize("case", CASES + QUANTIZED + QUANTIZED_AT_SCALE, ids=lambda c: c.name)
def test_matches_oracle(case):
    model, feeds = _model(case, np.random.default_rng(18))
    got = Evaluator(model).run(None, feeds)
    tol = (1e-4, 1e-4) if case.op == "DynamicQuantizeLSTM" else (1e-5, 1e-6) if case.dtype == "float64" else (
        2e-5, 2e-6)
    assert_close(got, _oracle(case, model, feeds), *tol, f"{case.name}:")


# empty sequences and batches: compared with the general path only (onnxruntime refuses some of them)
EMPTY = [
    Case("lstm_empty_sequence", "LSTM", "bidirectional", steps=0, initial=True),
    Case("gru_empty_batch", "GRU", "reverse", batch=0, attrs=dict(linear_before_reset=1)),
    Case("rnn_empty_sequence", "RNN", steps=0),
]
FAST = [c for c in CASES if not c.peepholes and not c.attrs.get("clip")
        and not c.attrs.get("input_forget") and not c.attrs.get("activations")] + EMPTY


@pytest.mark.parametrize("case", FAST, ids=lambda c: c.name)
def test_fast_path_equals_general_path(case, monkeypatch):
    """The fast path (sigmoid as tanh, both directions per step) against the general path on the same model."""
    from onnxtext.evaluator.kernels import rnn_cells

    model, feeds = _model(case, np.random.default_rng(7))
    fast = Evaluator(model).run(None, feeds)
    monkeypatch.setattr(rnn_cells, "default_activations", lambda *args: False)
    general = Evaluator(model).run(None, feeds)
    assert_close(fast, general, 1e-5, 1e-6, f"{case.name} fast vs general:")


# Initial hidden states whose lowest and highest values (the rest 0.1, or 0 when the highest is 0) are
# the edge cases of the per-step quantization (id, lowest, highest). Ties: in steps of 2**-8 (exact in
# float32) over a range of 255 steps, so that the scale is 2**-8 and the codes are the values in steps,
# rounded (ties to even). With -11.5 and 243.5 the zero point rounds to 12 and the top code to 244: 256 in
# all, one more than uint8 holds, which onnxruntime clamps to 255. With -12.5 and 242.5 both round to even
# inwards (no clamp), but high / scale is a half-integer: the fast loop's exact float32 path.
_STEP = 2.0 ** -8
INITIAL_RANGES = [
    ("top_code_clamped", -11.5 * _STEP, 243.5 * _STEP),
    ("tie_without_clamp", -12.5 * _STEP, 242.5 * _STEP),
    ("all_zero", 0.0, 0.0),  # scale: the smallest normal float32
    ("subnormal", -1e-39, 1e-39),  # (high - low) / 255 below the smallest normal: that instead
    ("huge", 0.0, 3e38),
    ("non_positive", -2.0, 0.0),
]


@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
@pytest.mark.parametrize("low, high", [r[1:] for r in INITIAL_RANGES], ids=[r[0] for r in INITIAL_RANGES])
def test_quantized_edge_ranges(direction, low, high):
    case = Case("dq_ranges", "DynamicQuantizeLSTM", direction, steps=3, batch=2, hidden=4, initial=True)
    model, feeds = _model(case, np.random.default_rng(3))
    h0 = np.full(feeds["initial_h"].shape, 0.1 if high else 0.0, np.float32)
    h0[0, 0, 0], h0[0, 1, 3] = low, high
    feeds["initial_h"] = h0
    got = Evaluator(model).run(None, feeds)
    assert_close(got, _oracle(case, model, feeds), 1e-4, 1e-4, f"initial range [{low}, {high}]:")


# The fast path keeps its buffers per thread between runs (rnn_cells.workspace): no output may be a view of
# them, and runs in several threads at once must not share them.
WORKSPACE_CASES = [
    Case("ws_lstm_bidirectional_batch1", "LSTM", "bidirectional", batch=1, initial=True),
    Case("ws_gru_linear", "GRU", initial=True, attrs=dict(linear_before_reset=1)),
    Case("ws_rnn_bidirectional", "RNN", "bidirectional", batch=1),
    Case("ws_dq_lstm_bidirectional", "DynamicQuantizeLSTM", "bidirectional", batch=1, initial=True),
    Case("ws_lstm_one_step", "LSTM", steps=1, batch=2, initial=True),
]


def _other_feeds(feeds, seed):
    rng = np.random.default_rng(seed)
    return {n: rng.uniform(-1, 1, v.shape).astype(v.dtype) for n, v in feeds.items()}


@pytest.mark.parametrize("case", WORKSPACE_CASES, ids=lambda c: c.name)
def test_outputs_outlive_the_next_run(case):
    model, feeds = _model(case, np.random.default_rng(5))
    ev = Evaluator(model)
    first = ev.run(None, feeds)
    kept = [o.copy() for o in first]
    second = ev.run(None, _other_feeds(feeds, 6))
    assert_close(first, kept, 0, 0, f"{case.name}: the first run's outputs after a second run:")
    assert not all(np.array_equal(a, b) for a, b in zip(first, second))


@pytest.mark.parametrize("case", WORKSPACE_CASES, ids=lambda c: c.name)
def test_runs_in_threads_at_once(case):
    from concurrent.futures import ThreadPoolExecutor

    model, feeds = _model(case, np.random.default_rng(5))
    ev = Evaluator(model)
    inputs = [_other_feeds(feeds, seed) for seed in range(8)]
    expected = [ev.run(None, f) for f in inputs]

    def runs(i):
        return [ev.run(None, inputs[i]) for _ in range(30)]

    with ThreadPoolExecutor(4) as pool:
        for i, results in enumerate(pool.map(runs, range(8))):
            for got in results:
                assert_close(got, expected[i], 0, 0, f"{case.name} feeds {i} in a thread:")


# DynamicQuantizeLSTM's fast path: sequences as long as X, default activations, no clip or peepholes
QUANTIZED_FAST = [c for c in QUANTIZED + QUANTIZED_AT_SCALE if c.lens is None and not c.peepholes and not c.attrs]


@pytest.mark.parametrize("case", [c for c in FAST if c not in EMPTY] + QUANTIZED_FAST, ids=lambda c: c.name)
@pytest.mark.parametrize("optimize", [0, None])
def test_fast_eligible_cases_take_the_fast_path(case, optimize, monkeypatch):
    """Default activations (absent, or as the schema lists them: RNN's default names Tanh twice even for
    one direction) without clip, peepholes or input_forget never reach the general path, with the
    plan's prepared weights or without (optimize=0), sequence_lens or not (DynamicQuantizeLSTM: sequences
    as long as X)."""
    from onnxtext.evaluator.kernels import rnn
    from onnxtext.evaluator.kernels.contrib import quant_lstm

    def general(*args, **kwargs):
        raise AssertionError("took the general path")

    monkeypatch.setattr(rnn, "_general", general)
    monkeypatch.setattr(quant_lstm, "_recurrent", general)
    model, feeds = _model(case, np.random.default_rng(2))
    Evaluator(model, **({} if optimize is None else {"optimize": optimize})).run(None, feeds)


ONE_STEP = [c for c in FAST if c.op == "LSTM" and c.steps == 1 and c.direction != "bidirectional"
            and c.lens is None and not c.fed_weights]


@pytest.mark.parametrize("case", ONE_STEP, ids=lambda c: c.name)
def test_one_step_lstm_takes_the_fused_product(case, monkeypatch):
    """A one-step, one-direction LSTM with prepared weights runs rnn_cells._lstm_one_step (one product
    [W | R | bias] @ [x; h; 1]), not the step loop, and equals the general path."""
    from onnxtext.evaluator.kernels import rnn_cells

    taken = []
    real = rnn_cells._lstm_one_step
    monkeypatch.setattr(rnn_cells, "_lstm_one_step", lambda *args: taken.append(1) or real(*args))
    model, feeds = _model(case, np.random.default_rng(3))
    got = Evaluator(model).run(None, feeds)
    assert taken, "the one-step product was not taken"
    monkeypatch.setattr(rnn_cells, "default_activations", lambda *args: False)
    general = Evaluator(model).run(None, feeds)
    assert_close(got, general, 1e-5, 1e-6, f"{case.name} one step vs general:")


BATCH_MAJOR = [c for c in FAST if c.op == "LSTM" and c.direction == "bidirectional" and c.steps > 1
               and c.lens is None and not c.fed_weights]


@pytest.mark.parametrize("case", BATCH_MAJOR, ids=lambda c: c.name)
def test_bidirectional_lstm_takes_the_batch_major_loop(case, monkeypatch):
    """A bidirectional LSTM with prepared weights and sequences as long as X runs kernels/lstm_batch_major
    (states [dirs, B, H], the product h @ R^T), and equals the general path."""
    from onnxtext.evaluator.kernels import lstm_batch_major, rnn_cells

    taken = []
    real = lstm_batch_major.run
    monkeypatch.setattr(lstm_batch_major, "run", lambda *args: taken.append(1) or real(*args))
    model, feeds = _model(case, np.random.default_rng(4))
    got = Evaluator(model).run(None, feeds)
    assert taken, "the batch-major loop was not taken"
    monkeypatch.setattr(rnn_cells, "default_activations", lambda *args: False)
    general = Evaluator(model).run(None, feeds)
    assert_close(got, general, 1e-5, 1e-6, f"{case.name} batch-major vs general:")


def _random_case(seed: int) -> Case:
    """A seeded random configuration: operator, direction, sizes, lengths (empty ones included), layout,
    initial states, bias, weights fed as inputs."""
    rng = np.random.default_rng(seed)
    op = str(rng.choice(["RNN", "GRU", "LSTM", "DynamicQuantizeLSTM"]))
    steps, batch = int(rng.integers(1, 9)), int(rng.integers(1, 5))
    lens = tuple(int(n) for n in rng.integers(0, steps + 1, batch)) if rng.random() < 0.4 else None
    quantized = op == "DynamicQuantizeLSTM"
    layout = int(rng.random() < 0.25 and not quantized)
    fed = bool(rng.random() < 0.2 and not quantized and not layout)  # (the oracle transposes every input)
    return Case(f"random_{seed}", op, str(rng.choice(["forward", "reverse", "bidirectional"])), steps=steps,
                batch=batch, inputs=int(rng.integers(1, 7)), hidden=int(rng.integers(1, 9)), layout=layout,
                attrs=dict(linear_before_reset=1) if op == "GRU" and rng.random() < 0.5 else {}, lens=lens,
                initial=bool(rng.random() < 0.5), bias=fed or bool(rng.random() < 0.8), fed_weights=fed)


@pytest.mark.parametrize("seed", range(60))
def test_random_configurations_match_onnxruntime(seed):
    """Seeded random configurations, with the plan's prepared weights and without (optimize=0): such a
    comparison found that onnxruntime quantizes DynamicQuantizeLSTM's input over max(sequence_lens)."""
    case = _random_case(seed)
    model, feeds = _model(case, np.random.default_rng(seed))
    want = _oracle(case, model, feeds)
    tol = (1e-4, 1e-4) if case.op == "DynamicQuantizeLSTM" else (2e-5, 2e-6)
    for options in ({}, {"optimize": 0}):
        assert_close(Evaluator(model, **options).run(None, feeds), want, *tol, f"{case}, {options}:")


def _input_arrays():
    """Arrays to quantize: random spreads, one-signed, exact ties (multiples of half a step), extreme
    magnitudes, a single non-zero, all zeros, NaN and +inf, ranges beyond float32 arithmetic."""
    rng = np.random.default_rng(4)
    arrays = [rng.normal(size=(3, 17)), rng.uniform(0, 1, (2, 9)), -rng.uniform(0, 1, (2, 9)),
              rng.integers(-300, 300, (4, 33)) * 0.5 * 2.0 ** -8, rng.normal(size=(2, 5)) * 1e-30,
              rng.normal(size=(2, 5)) * 1e30, np.zeros((2, 3)), [[0.0, 0.0, 0.7]], [[np.nan, 1.0, -1.0]],
              [[np.inf, 1.0]],  # (not -inf: dynamic_quantize_uint8 raises on it, round(NaN))
              # float32 arithmetic of the range overflowing (width, scale) or underflowing (scale 0)
              [[-3e38, 3e38]], [[0.0, 3.4e38]], [[0.0, 1e-45]]]
    arrays += [rng.integers(-300, 300, (2, 40)) * 0.5 * 2.0 ** -int(e) for e in rng.integers(1, 12, 40)]
    return [np.asarray(a, np.float32) for a in arrays]


def test_input_quantization_equals_dynamic_quantize_uint8():
    """The quantized LSTM's lean input quantization gives dynamic_quantize_uint8's codes and scale
    exactly (that one is the reference checked against onnxruntime), NaN and infinities included."""
    from onnxtext.evaluator.kernels.contrib.quant_lstm import quantized_input
    from onnxtext.evaluator.kernels.quantize import dynamic_quantize_uint8

    for x in _input_arrays():
        with np.errstate(invalid="ignore", over="ignore", divide="ignore"):  # (the evaluator silences these per run)
            want, want_scale = dynamic_quantize_uint8(x)
            got, scale = quantized_input(x)
        np.testing.assert_array_equal(got, want, err_msg=str(x))
        assert got.dtype == want.dtype and np.float32(scale) == np.float32(want_scale), (x, scale, want_scale)


# Views the quantized LSTM's input quantization reads in place, writing the codes in C order into ``out``
# (a strided X is not copied first): (id, view of a [6, 4, 10] array).
INPUT_VIEWS = [
    ("columns_every_other", lambda a: a[:, :, ::2]),
    ("transposed_time_batch", lambda a: a.transpose(1, 0, 2)),
    ("time_reversed", lambda a: a[::-1]),
]


@pytest.mark.parametrize("view", [v[1] for v in INPUT_VIEWS], ids=[v[0] for v in INPUT_VIEWS])
def test_input_quantization_of_views_writes_c_order_codes(view):
    from onnxtext.evaluator.kernels.contrib.quant_lstm import quantized_input
    from onnxtext.evaluator.kernels.quantize import dynamic_quantize_uint8

    x = view(np.random.default_rng(3).normal(size=(6, 4, 10)).astype(np.float32))
    assert not x.flags.c_contiguous
    out = np.empty(x.shape, np.float32)
    codes, scale = quantized_input(x, out)
    want, want_scale = dynamic_quantize_uint8(np.ascontiguousarray(x))
    assert codes is out
    np.testing.assert_array_equal(out, want)
    assert np.float32(scale) == np.float32(want_scale)
