"""erf without scipy, for the Erf operator and the Gelu activations: float64 by a series and a
continued fraction, float32 (and float16/bfloat16 through it) as ``tanh(x * S(x^2))``.

Why that form for float32: erf and tanh are both odd sigmoids, and ``z(x) = atanh(erf(x))`` is
``x * S(x^2)`` with S smooth and slowly varying on the whole range float32 needs (S(0) = 2/sqrt(pi),
S(16) = 0.58): a degree-9 polynomial in ``y = x^2`` has relative error ~1e-8 there, where erf itself
(erf(x)/x, a saturating curve) needs a rational of twice the coefficients. Near saturation tanh
multiplies the error of z by ``(1 - erf^2) z / erf`` (1 at 0, 1e-7 at x = 3), so float32 arithmetic
suffices: of 22.9 million float32 inputs swept (about 3 million per region of
tests/test_kernels_math.py's table), every one is within 2 ulps of math.erf rounded to float32
except 8 in [1e-4, 0.5), which are 3 ulps off (the two roundings of z and tanh's own ulp; float64
arithmetic would remove them at 3x the time per element on this machine). The constant term is split in two float32 numbers (the
low part is added before the high one) because float32(2/sqrt(pi)) alone is off by 0.45 ulp; the
coefficients were fitted here (weighted least squares on 40,000 points, each coefficient rounded
to float32 before refitting the next, then the last bits chosen by a search over the sweep).

For |x| > 4, y is clamped to 16 and z grows as 2.4 |x|: numpy's float32 tanh is exactly 1 from
z = 10, so erf is exactly +-1 from |x| = 4.13 (from 3.92 it is 1 ulp below, as tanh is up to
z = 10; the exact answer rounds to 1 from 3.92); inf gives +-1, nan nan, -0 -0.

Cost: 23 numpy calls per block (was 25 for the previous Eigen rational, whose error reached 37
ulps); Gelu 25 (was 29). Constants are 0-d arrays and outputs positional: numpy scalar operands
cost 0.50 us per call on 512 float32 values and Python floats 0.60, 0-d arrays 0.32-0.37
(measured with timeit, numpy 2.4). Measured and dropped: powers of y and one matrix product
(fewer calls, but the high powers of small y are subnormal: 1.4-2.7x slower above 4k values), float64 arithmetic
(1 ulp, 3x slower per element above 4k values), ``-expm1(-g(|x|))`` with g = -log(erfc) (numpy's
float32 expm1 is 2 ulps off itself).

Gelu of small float32 arrays (at most :data:`TABLE_MAX_VALUES` values, where the number of numpy
calls is the cost: 0.3-0.5 us each) is ``x * Phi(x)`` with Phi read from a table of quadratics
(:class:`_PhiTable`, 10 numpy calls and one gather, 0.65-0.7x the series' time on 64-2048 values;
from about 4k values the gather and strided reads cost more per element than the series' passes).
"""

from __future__ import annotations

import math

import numpy as np


def _erf_float64(x):
    """erf without scipy: the all-positive series ``2/sqrt(pi) exp(-x^2) sum 2^n x^(2n+1)/(2n+1)!!``
    below |x| = 3 and the continued fraction of erfc above (relative error ~1.5e-15)."""
    ax = np.abs(x)
    out = np.empty_like(ax)
    small = ax < 3.0
    xs = ax[small]
    two_x2 = 2.0 * xs * xs
    term = xs.copy()
    total = xs.copy()
    for n in range(1, 45):
        term *= two_x2 / (2 * n + 1)
        total += term
    out[small] = (2.0 / np.sqrt(np.pi)) * np.exp(-xs * xs) * total
    xl = ax[~small]
    frac = xl.copy()
    for k in range(25, 0, -1):  # erfc(x) = exp(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + ...))))
        frac = xl + (k / 2.0) / frac
    with np.errstate(all="ignore"):
        out[~small] = 1.0 - np.exp(-xl * xl) / np.sqrt(np.pi) / frac
    out[np.isnan(ax)] = np.nan
    return np.copysign(out, x)


def _c(v):
    return np.array(v, np.float32)  # a 0-d array: the cheapest constant operand for a ufunc


# S(y) = HI + LO + y * (S1 + y * (S2 + ... + y * S9)), highest power first for Horner.
_S_TAIL = (1.8249986244445182e-10, -8.634341241986476e-09, 1.5904488748219592e-07, -1.314890937464952e-06,
           1.4560858971890411e-06, 6.895548722241074e-05, -0.0005947452737018466, -0.00020708666124846786,
           0.10277228057384491)
_S_HI = float(np.float32(2 / math.sqrt(math.pi)))  # 1.1283792 (0.45 ulp above 2/sqrt(pi))
_S_LO = -6.66012809347194e-08  # the rest, fitted with the tail
_Y_MAX = 16.0
_BLOCK = 1 << 14  # elements per chunk: the two temporaries stay in L2


class _Series:
    """``factor * z(scale * x)`` in float32, ``z(x) = x * S(x^2) = atanh(erf(x))``: the coefficients
    of S scaled once (``scale^(2k+1) * factor`` for the k-th), y clamped at ``16 / scale^2``."""

    __slots__ = ("first", "rest", "lo", "hi", "y_max")

    def __init__(self, scale: float = 1.0, factor: float = 1.0):
        n = len(_S_TAIL)
        tail = [c * factor * scale ** (2 * (n - i) + 1) for i, c in enumerate(_S_TAIL)]
        self.first, self.rest = _c(tail[0]), tuple(_c(c) for c in tail[1:])
        self.lo, self.hi = _c(_S_LO * factor * scale), _c(_S_HI * factor * scale)
        self.y_max = _c(_Y_MAX / scale ** 2)

    def __call__(self, xs):
        """A fresh float32 array; 22 numpy calls."""
        add, mul = np.add, np.multiply
        y = mul(xs, xs)
        np.minimum(y, self.y_max, out=y)
        acc = mul(y, self.first)
        for c in self.rest:
            add(acc, c, acc)
            mul(acc, y, acc)
        add(acc, self.lo, acc)
        add(acc, self.hi, acc)
        return mul(acc, xs, acc)


_ERF_ARGUMENT = _Series()
# Gelu(x) = x (1 + erf(x / sqrt 2)) / 2 = x sigmoid(2 z(x / sqrt 2)) = x / (1 + exp(-2 z(x / sqrt 2)))
_GELU_ARGUMENT = _Series(1 / math.sqrt(2), -2.0)
_ONE = _c(1.0)


def _erf_float32(x):
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    for start in range(0, flat.size, _BLOCK):
        np.tanh(_ERF_ARGUMENT(flat[start:start + _BLOCK]), out[start:start + _BLOCK])
    return out.reshape(x.shape)


def _gelu_series(x):
    """Gelu of a float32 array as ``x / (1 + exp(-2 z))`` (25 numpy calls per block; a fresh array)."""
    flat = x.reshape(-1)
    out = np.empty_like(flat)
    for start in range(0, flat.size, _BLOCK):
        xs = flat[start:start + _BLOCK]
        w = _GELU_ARGUMENT(xs)
        np.exp(w, w)
        np.add(w, _ONE, w)
        np.divide(xs, w, out[start:start + _BLOCK])
    return out.reshape(x.shape)


class _PhiTable:
    """Phi(x) = (1 + erf(x / sqrt 2)) / 2 as one quadratic per cell of width ``h = 2^-7`` centred on
    ``k h`` for ``|k| <= 768`` (|x| <= 6), for Gelu ``x * Phi(x)`` on small arrays in 10 numpy calls.

    ``u = x * 128`` is exact in float32 (a power of two), so the cell ``k = rint(u)`` and the offset
    ``t = u - k`` in [-1/2, 1/2] are exact too; the coefficients ``c0 + c1 t + c2 t^2`` interpolate
    Phi (math.erfc, float64) at the three Chebyshev nodes of the cell (error at most
    ``max |Phi'''| / 24 * (h/2)^3``, about 1e-9) and are rounded to float32. The cells at +-768 hold
    exactly 1 and 0 (Phi(6) = 1 - 1e-9: x Phi(x) rounds to x in float32; |x| Phi(-6) < 6e-9, and
    a very negative x must give -0.0), and clipping u to [-768, 768] sends every larger |x| (and the
    infinities) to them. The four float32 coefficients of a cell (the fourth is padding) are read as
    one complex128 so that one ``take`` gathers them (a gather of (n, 3) float32 rows costs 5-10x
    more); indices are made non-negative first (``take`` mispredicts a branch on each negative one:
    4.5 ns against 0.9 ns per element measured on 16k values). Swept on 4.5 million float32 values of
    each sign (every k-th bit pattern from 1e-30 to 12): at most 2 ulps from the formula in float64 for
    x > 0 (11 values at 2 ulps above 1, 14,648 in [1e-3, 1)), at most 2.5e-8 absolute for x < 0."""

    __slots__ = ("cells", "scale", "bound", "offset")

    HALF_CELLS = 768
    SCALE = 128.0

    def __init__(self):
        m, h = self.HALF_CELLS, 1.0 / self.SCALE
        nodes = [0.5 * math.cos((2 * j + 1) * math.pi / 6) for j in range(3)]
        inverse = np.linalg.inv(np.array([[1.0, t, t * t] for t in nodes]))
        values = np.array([[0.5 * math.erfc(-(k + t) * h / math.sqrt(2)) for t in nodes] for k in range(-m, m + 1)])
        coefficients = np.zeros((2 * m + 1, 4), np.float32)
        coefficients[:, :3] = values @ inverse.T
        coefficients[0, :3] = (0.0, 0.0, 0.0)
        coefficients[-1, :3] = (1.0, 0.0, 0.0)
        self.cells = coefficients.view(np.complex128).reshape(-1)
        self.scale, self.bound, self.offset = _c(self.SCALE), (_c(-m), _c(m)), _c(m)

    def gelu(self, x):
        """``x * Phi(x)`` of a 1-D float32 array (a fresh array; ufuncs on the strided columns of a
        2-D gather cost more); IndexError for NaN (the float to integer cast of NaN is out of range),
        which the caller sends to the series."""
        u = np.multiply(x, self.scale)
        _clip(u, *self.bound, out=u)
        k = np.rint(u)
        np.subtract(u, k, out=u)
        np.add(k, self.offset, out=k)
        c = self.cells.take(k.astype(np.intp)).view(np.float32)
        p = np.multiply(c[2::4], u)
        np.add(p, c[1::4], out=p)
        np.multiply(p, u, out=p)
        np.add(p, c[0::4], out=p)
        return np.multiply(x, p, out=p)


try:
    from numpy._core.umath import clip as _clip  # the ufunc, without np.clip's argument handling
except ImportError:  # pragma: no cover - numpy 1.x
    _clip = np.clip

_PHI_TABLE = None  # the _PhiTable, built on first use (about 10 ms)
#: Gelu arrays of at most this many values take the table (10 numpy calls), larger ones the series in
#: blocks (25 calls per block, but fewer passes per element: the table's gather and strided reads
#: cost more per element from about 4k values)
TABLE_MAX_VALUES = 2048


def gelu_float32(x):
    """``0.5 x (1 + erf(x / sqrt 2))`` of a float32 array (a fresh array). Up to
    :data:`TABLE_MAX_VALUES` values as ``x * Phi(x)`` by :class:`_PhiTable`, more (or with NaN) as
    ``x / (1 + exp(-2 z))`` with the series of erf. Both as accurate as that formula in float32
    with a correctly rounded erf (measured against it in float64: within 2 ulps for x >= 0; absolute
    error under 6e-8 for x < 0, where the formula's ``1 + erf`` cancels; the formula's own: 1 ulp,
    8e-8)."""
    if x.size <= TABLE_MAX_VALUES:
        try:
            return (_PHI_TABLE or _build_phi_table()).gelu(x.reshape(-1)).reshape(x.shape)
        except IndexError:
            pass
    return _gelu_series(x)


def _build_phi_table():
    global _PHI_TABLE
    _PHI_TABLE = _PhiTable()
    return _PHI_TABLE


def erf_values(x):
    """erf of a float array, keeping its dtype (float16 and bfloat16 through float32)."""
    if x.dtype == np.float64:
        return _erf_float64(x)
    if x.dtype == np.float32:
        return _erf_float32(x)
    return _erf_float32(x.astype(np.float32)).astype(x.dtype)


def erf(x):
    """erf of anything array-like, as an array (the Gelu kernels share it)."""
    return np.asarray(erf_values(np.asarray(x)))
