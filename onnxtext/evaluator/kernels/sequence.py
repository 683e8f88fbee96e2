"""Sequence and optional kernels.

Runtime representation (see the registry docstring): a sequence is a Python ``list`` of values, an
optional holding a value is that value itself, and an empty optional is ``None``. So an optional
holding an empty sequence (``[]``) stays distinct from an empty optional (``None``). Kernels return
new lists and never modify their input sequences, since values may be shared between steps.

Growth is guarded (:mod:`..limits`): SequenceInsert charges each inserted tensor to the run's allocation
budget, and ConcatFromSequence checks the size of its result before concatenating.
"""

from __future__ import annotations

import numpy as np

from ...errors import EvalError
from ..limits import charge_run, check_allocation
from ..registry import kernel


def _position(position, n: int, *, inclusive_end: bool) -> int:
    """A sequence index from a ``position`` tensor, checked against ``[-n, n]`` or ``[-n, n - 1]``."""
    p = int(np.asarray(position).reshape(()))
    high = n if inclusive_end else n - 1
    if not -n <= p <= high:
        raise EvalError(f"position {p} is out of range [{-n}, {high}] for a sequence of length {n}")
    return p + n if p < 0 else p


@kernel("SequenceEmpty", since=11)
def sequence_empty(dtype=None):
    # the element type only matters for typing; an empty list carries no elements to check
    return []


@kernel("SequenceConstruct", since=11)
def sequence_construct(*tensors):
    return list(tensors)


@kernel("SequenceInsert", since=11)
def sequence_insert(sequence, tensor, position=None):
    # a sequence grown in a Loop keeps every inserted tensor alive: each one is charged to the run's budget
    # (the list of references itself is bounded by the Loop's iteration limit)
    charge_run(getattr(tensor, "nbytes", 0), "SequenceInsert")
    out = list(sequence)
    if position is None:
        out.append(tensor)
    else:
        out.insert(_position(position, len(out), inclusive_end=True), tensor)
    return out


@kernel("SequenceAt", since=11)
def sequence_at(sequence, position):
    return sequence[_position(position, len(sequence), inclusive_end=False)]


@kernel("SequenceErase", since=11)
def sequence_erase(sequence, position=None):
    out = list(sequence)
    if not out:
        raise EvalError("cannot erase from an empty sequence")
    del out[-1 if position is None else _position(position, len(out), inclusive_end=False)]
    return out


@kernel("SequenceLength", since=11)
def sequence_length(sequence):
    return np.array(len(sequence), dtype=np.int64)


@kernel("ConcatFromSequence", since=11)
def concat_from_sequence(sequence, axis, new_axis=0):
    if not sequence:
        raise EvalError("ConcatFromSequence of an empty sequence")
    first = np.asarray(sequence[0])
    if new_axis:
        shape = [len(sequence), *first.shape]
    else:
        a = axis % first.ndim if first.ndim else 0
        shape = [sum(int(np.shape(t)[a]) if np.ndim(t) > a else 1 for t in sequence), *first.shape[:a],
                 *first.shape[a + 1:]] if first.ndim else [len(sequence)]
    check_allocation(shape, first.dtype.itemsize, "ConcatFromSequence")  # numpy reports mismatched shapes
    if new_axis:
        return np.stack(sequence, axis=axis)
    return np.concatenate(sequence, axis=axis)


@kernel("SplitToSequence", since=11)
def split_to_sequence(x, split=None, axis=0, keepdims=1):
    axis = axis + x.ndim if axis < 0 else axis
    length = x.shape[axis]
    if split is None:
        parts = np.split(x, length, axis=axis) if length else []
        return [np.squeeze(p, axis=axis) for p in parts] if not keepdims else parts
    split = np.asarray(split, dtype=np.int64)
    if split.ndim == 0:
        size = int(split)
        if size <= 0:
            raise EvalError(f"split must be positive, got {size}")
        bounds = list(range(size, length, size))
    else:
        if split.sum() != length:
            raise EvalError(f"split {split.tolist()} does not add up to the axis length {length}")
        bounds = np.cumsum(split)[:-1].tolist()
    return np.split(x, bounds, axis=axis)


@kernel("Optional", since=15)
def optional(value=None, type=None):
    # an optional holding a value is the value itself; no input means an empty optional (None)
    return value


@kernel("OptionalHasElement", since=15)
def optional_has_element(value=None):
    return np.array(value is not None)


@kernel("OptionalGetElement", since=15)
def optional_get_element(value):
    if value is None:
        raise EvalError("OptionalGetElement of an empty optional")
    return value
