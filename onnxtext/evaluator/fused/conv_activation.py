"""Activations run in place on a convolution's fresh result, and HardSwish as exporters write it out.

MobileNetV3-style networks (PP-OCR's classifier, detector and recognizer, layout and orientation
models) follow most Convs with HardSwish, HardSigmoid or Clip (ReLU6), YOLOv5/v8 with SiLU
(``Mul(y, Sigmoid(y))``). Run as their own kernels,
these allocate three or four temporaries the size of the layer and stream each through memory;
:class:`ActivatedConv` applies them to the conv's result in place instead, one block of
:data:`BLOCK` elements at a time (the block and one temporary stay in L2), with the same arithmetic
as the operators' kernels (:mod:`.activation`, :mod:`.elementwise`), so the results are identical.

:class:`HardSwishStep` is the ``HardSwish`` operator replacing the forms exporters write
(``x * Clip(x + 3, 0, 6) / 6``, ``x * HardSigmoid(x)``; rule ``hard_swish``); it rounds like
``x * clip(x / 6 + 0.5, 0, 1)``, not like the written form.
"""

from __future__ import annotations

import numpy as np

from ..kernels.activation import _sigmoid, hard_sigmoid, hard_swish
from ..kernels.conv import scratch
from ..kernels.quantize import clip_ufunc

# elements per block of an in-place activation: 256 KiB of float32 plus the same for the temporary
# (measured on 2x16x112x112 and 2x64x56x56 results: 2^16-2^17 about 0.7x the unblocked time, 2^14 0.85x)
BLOCK = 1 << 16


_CONSTANTS: dict = {}


def _constants(dtype):
    """``(1/6, 0.5, 0, 1)`` as 0-d arrays of ``dtype``: the cheapest constant operands of a ufunc,
    with the values a Python float operand would be rounded to (same results as the kernels)."""
    c = _CONSTANTS.get(dtype)
    if c is None:
        c = _CONSTANTS[dtype] = tuple(np.array(v, dtype) for v in (1 / 6, 0.5, 0, 1))
    return c


def _blocks(flat):
    """``(block of flat, temporary of its size)`` pairs covering ``flat`` (1-D, writeable)."""
    tmp = scratch((min(BLOCK, flat.size),), flat.dtype, slot="activation")
    for s in range(0, flat.size, BLOCK):
        v = flat[s:s + BLOCK]
        yield v, tmp[:v.size]


class InPlaceHardSwish:
    """``y * clip(y / 6 + 0.5, 0, 1)`` written into ``y`` (HardSwish's kernel, same rounding)."""

    __slots__ = ()
    op = "HardSwish"

    def inplace(self, flat):
        sixth, half, zero, one = _constants(flat.dtype)
        for v, u in _blocks(flat):
            np.multiply(v, sixth, u)
            np.add(u, half, u)
            clip_ufunc(u, zero, one, out=u)
            np.multiply(v, u, v)

    def __call__(self, y):
        return hard_swish(y)


class InPlaceHardSigmoid:
    """``clip(y * alpha + beta, 0, 1)`` written into ``y`` (HardSigmoid's kernel)."""

    __slots__ = ("alpha", "beta")
    op = "HardSigmoid"

    def __init__(self, alpha=0.2, beta=0.5):
        self.alpha, self.beta = alpha, beta

    def inplace(self, flat):
        _, _, zero, one = _constants(flat.dtype)
        for s in range(0, flat.size, BLOCK):
            v = flat[s:s + BLOCK]
            v *= self.alpha
            v += self.beta
            clip_ufunc(v, zero, one, out=v)

    def __call__(self, y):
        return hard_sigmoid(y, self.alpha, self.beta)


class InPlaceSiLU:
    """``y * sigmoid(y)`` written into ``y`` (Sigmoid's kernel, then the product: SiLU as exporters
    write it, ``Mul(y, Sigmoid(y))``)."""

    __slots__ = ()
    op = "SiLU"

    def inplace(self, flat):
        for v, u in _blocks(flat):
            np.negative(v, out=u)
            np.exp(u, out=u)
            u += 1
            np.reciprocal(u, out=u)
            v *= u

    def __call__(self, y):
        return y * np.asarray(_sigmoid(y), dtype=y.dtype)


class InPlaceSiLUDivided:
    """``y / (1 + exp(-y))`` written into ``y``: SiLU in four passes instead of the five of
    :class:`InPlaceSiLU` (no reciprocal pass), within one ulp of it (rule ``conv_silu_divided``,
    level 2: it rounds differently from the nodes' ``y * sigmoid(y)``)."""

    __slots__ = ()
    op = "SiLU"

    def inplace(self, flat):
        for v, u in _blocks(flat):
            np.negative(v, out=u)
            np.exp(u, out=u)
            u += 1
            np.divide(v, u, out=v)

    def __call__(self, y):
        e = np.negative(y)  # (exp overflows to inf for y below about -88: the run silences the warning)
        np.exp(e, out=e)
        e += 1
        return np.divide(y, e, out=e)


class InPlaceClip:
    """``min(max(y, low), high)`` written into ``y`` (Clip's kernel; a bound may be None)."""

    __slots__ = ("low", "high")
    op = "Clip"

    def __init__(self, low, high):
        self.low, self.high = low, high

    def inplace(self, flat):
        for s in range(0, flat.size, BLOCK):
            v = flat[s:s + BLOCK]
            if self.low is not None:
                np.maximum(v, self.low, out=v)
            if self.high is not None:
                np.minimum(v, self.high, out=v)

    def __call__(self, y):
        out = y
        if self.low is not None:
            out = np.maximum(out, self.low)
        if self.high is not None:
            out = np.minimum(out, self.high)
        return np.asarray(out if out is not y else y.copy())


class ActivatedConv:
    """A prepared Conv (``conv``, returning a fresh array) followed by ``activation`` (one of the
    ``InPlace*`` classes above), run in place on the conv's result when it is a writeable float
    array of the weights' dtype, contiguous or a channel slice of a Concat buffer (``out``, see
    ``conv_fused.ConcatInto``), else by the activation's own kernel."""

    __slots__ = ("conv", "activation")

    def __init__(self, conv, activation):
        self.conv, self.activation = conv, activation

    @property
    def w(self):
        return self.conv.w

    def output_shape(self, shape):
        return self.conv.output_shape(shape)

    def __call__(self, x, out=None):
        y = self.conv(x) if out is None else self.conv(x, out)
        if type(y) is not np.ndarray or not y.flags.writeable or y.dtype != self.conv.w.dtype or not y.size:
            return self.activation(y)
        if y.flags.c_contiguous:
            self.activation.inplace(y.reshape(-1))
        elif y.ndim > 1 and y[0].flags.c_contiguous:  # a channel slice: each image's part is contiguous
            for image in y:
                self.activation.inplace(image.reshape(-1))
        else:
            y[...] = self.activation(y)
        return y


class DividedSiLUConv(ActivatedConv):
    """An :class:`ActivatedConv` whose activation is :class:`InPlaceSiLUDivided` (rule
    ``conv_silu_divided``; its own class so plans and traces tell it from the exact form)."""

    __slots__ = ()

    def __init__(self, conv):
        super().__init__(conv, InPlaceSiLUDivided())


class HardSwishStep:
    """HardSwish (``x * clip(x / 6 + 0.5, 0, 1)``) for float inputs; ``fallback`` (the original
    steps) for any other input."""

    __slots__ = ("fallback",)

    def __init__(self, fallback):
        self.fallback = fallback

    def __call__(self, x):
        if type(x) is not np.ndarray or x.dtype.kind != "f":
            return self.fallback(x)
        return hard_swish(x)
