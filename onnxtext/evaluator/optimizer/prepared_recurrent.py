"""Rule ``prepared_recurrent``: an RNN, GRU or LSTM (or com.microsoft::DynamicQuantizeLSTM) whose
weights are constants, folded or not, gets them in the fast path's layout once, at plan time (see
kernels/rnn_cells.py: transposed, biases summed, sigmoid gates scaled; the quantized weights shifted by
their zero points), as a :class:`~..fused.recurrent.PreparedRecurrent` step. Without it the kernels
keep what they derive from initializers between runs (kernels/derived_cache.py), but not from weights
computed by other nodes (exporters reorder the gates with Slice and Concat, which the plan folds into
new arrays). Level 1: the kernel computes the same values either way.
"""

from __future__ import annotations

from ..fused.recurrent import PreparedRecurrent
from ..registry import lookup

MS = "com.microsoft"
# the inputs that must be constants for the weights to be prepared: W, R, B, P (LSTM) and the
# quantized LSTM's scales and zero points
_WEIGHTS = {"RNN": (1, 2, 3), "GRU": (1, 2, 3), "LSTM": (1, 2, 3, 7),
            "DynamicQuantizeLSTM": (1, 2, 3, 7, 8, 9, 10, 11)}


def prepared_recurrent(steps: list, keep: set, known) -> list:
    return [_prepared(entry, known) for entry in steps]


def _prepared(entry, known):
    step, used = entry
    fn, ins, outs, attrs, free, info, context = step
    op = info.node.op_type
    if context or op not in _WEIGHTS or info.domain not in ("", MS) or (info.domain == MS) != (
            op == "DynamicQuantizeLSTM"):
        return entry
    k = lookup(op, info.domain, info.opset or 0)
    if k is None or k.fn is not fn or len(ins) < 3:
        return entry
    args = [known.get(n) if n else None for n in ins]
    if any(i < len(ins) and ins[i] and args[i] is None for i in _WEIGHTS[op]):
        return entry  # a weight that is not a constant
    prepared = _weights(op, args + [None] * (12 - len(args)), attrs)
    if prepared is None:
        return entry
    positions = [i for i, n in enumerate(ins) if n and args[i] is None]
    inputs = tuple(ins[i] for i in positions)
    call = PreparedRecurrent(fn, args, positions, dict(attrs, prepared=prepared), _fast_call(op, attrs, prepared))
    return (call, inputs, outs, {}, free, info, False), list(inputs)


def _fast_call(op, attrs, prepared):
    """The kernel module's ``prepared_call`` for the node (the fast path without argument handling)."""
    if op == "DynamicQuantizeLSTM":
        from ..kernels.contrib.quant_lstm import prepared_call

        return prepared_call(attrs, prepared)
    from ..kernels.rnn import prepared_call

    return prepared_call(op, attrs, prepared)


def _weights(op, args, attrs):
    """The kernel's prepared weights, or None when the node's attributes send it to the general path."""
    W, R, B = args[1], args[2], args[3]
    if op == "DynamicQuantizeLSTM":
        from ..kernels.contrib.quant_lstm import fast_weights

        return fast_weights(W, R, B, args[7], args[8], args[9], args[10], args[11], attrs)
    from ..kernels.rnn import fast_weights

    return fast_weights(op, W, R, B, args[7] if op == "LSTM" else None, attrs)


NAME = "prepared_recurrent"
LEVEL = 1


def apply(steps: list, keep: set, known) -> list:
    return prepared_recurrent(steps, keep, known)
