"""Per-channel affine steps and in-place Relus (rule ``fold_affine_and_relu``).

:class:`InPlaceRelu` runs a kernel whose result is fresh and unshared, then a Relu in place on it;
:class:`FusedAffine` is a chain of BatchNormalization / per-channel Mul and Add (and maybe a Relu) as
one multiply-add with constants computed once, falling back to the original kernels one by one for
inputs it was not prepared for.
"""

from __future__ import annotations

import numpy as np


def relu_inplace(y):
    """kernels.conv_relu.relu_inplace, imported on first use (the kernels package imports the plan,
    which imports this module): the first call rebinds this name to it."""
    global relu_inplace
    from ..kernels.conv_relu import relu_inplace as fn

    relu_inplace = fn
    return fn(y)


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


class InPlaceRelu:
    """A kernel followed by a Relu applied in place to its (fresh, unshared) result."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **attrs):
        y = self.fn(*args, **attrs)
        if type(y) is np.ndarray and y.ndim and y.flags.writeable:
            if y.size <= SMALL_RELU_MAX_VALUES:
                zeros = _SMALL_ZEROS.get((y.shape, y.dtype))
                if zeros is None:
                    zeros = _small_zeros(y.shape, y.dtype)
                return np.maximum(y, zeros, out=y)
            return relu_inplace(y)
        return np.asarray(np.maximum(y, np.zeros((), y.dtype)))


#: results of at most this many values are compared with zeros of their own shape, kept per shape and
#: dtype (relu_inplace's flattening and slicing of its shared buffer costs about 0.5 us a call, as much
#: as the maximum itself on 512 values; numpy 2.4)
SMALL_RELU_MAX_VALUES = 1 << 12
_SMALL_ZEROS: dict = {}  # (shape, dtype) -> read-only zeros of that shape


def _small_zeros(shape, dtype):
    if len(_SMALL_ZEROS) >= 64:
        _SMALL_ZEROS.clear()
    zeros = _SMALL_ZEROS[(shape, dtype)] = np.zeros(shape, dtype)
    zeros.flags.writeable = False
    return zeros


class FusedAffine:
    """A per-channel ``x * factor + shift`` (optionally followed by Relu) replacing a chain of steps.

    ``chain`` keeps the original kernels with their constant operands; they run one by one when the
    input is not what the fast path was prepared for (another rank, a non-float dtype).
    """

    __slots__ = ("factor", "shift", "rank", "relu", "chain", "_prepared")

    def __init__(self, affine, step, known):
        self.factor, self.shift, self.rank = affine
        self.chain = [_chain_entry(step, known)]
        self.relu = False
        self._prepared = {}

    def compose(self, affine, step, known) -> bool:
        """Append ``y * f + s`` computed by ``step``; False when it cannot be folded in."""
        factor, shift, rank = affine
        if self.relu or (rank is not None and self.rank is not None and rank != self.rank):
            return False
        if factor.size != 1 and self.factor.size != 1 and factor.size != self.factor.size:
            return False
        self.rank = rank if rank is not None else self.rank
        self.factor, self.shift = self.factor * factor, self.shift * factor + shift
        self.chain.append(_chain_entry(step, known))
        return True

    def __call__(self, x):
        key = (x.dtype, x.ndim) if type(x) is np.ndarray else None
        consts = self._prepared.get(key)
        if consts is None:
            if key is None or x.dtype not in _FLOATS or x.ndim < 2 or \
                    (self.rank is not None and x.ndim != self.rank) or self.factor.size not in (1, x.shape[1]):
                return self._one_by_one(x)
            shape = (-1,) + (1,) * (x.ndim - 2)
            consts = self._prepared[key] = (self.factor.astype(x.dtype).reshape(shape),
                                            self.shift.astype(x.dtype).reshape(shape))
        elif self.factor.size not in (1, x.shape[1]):
            return self._one_by_one(x)
        y = np.multiply(x, consts[0])
        y += consts[1]
        if self.relu:
            relu_inplace(y)
        return y

    def _one_by_one(self, x):
        from ..plan import KernelContext

        value = x
        for fn, args, attrs, info, context in self.chain:
            args = [value if a is _DATA else a for a in args]
            value = fn(KernelContext(info, {}), *args, **attrs) if context else fn(*args, **attrs)
        if self.relu:
            value = np.asarray(np.maximum(value, np.zeros((), value.dtype)))
        return value


_DATA = object()  # placeholder of the data operand in a chain entry's arguments


def _chain_entry(step, known):
    fn, ins, _, attrs, _, info, context = step
    args = [known.get(n) if n in known else _DATA for n in ins]
    return fn, args, attrs, info, context
