"""Normalization kernels: BatchNormalization, Instance/Layer/Group/RMS normalization, LRN, MVN,
LpNormalization, and Dropout (which shares their train/inference split).

BatchNormalization in inference mode is folded into one multiply-add per element with a per-channel
``scale / sqrt(var + eps)`` and ``B - mean * that``. Which mode a BatchNormalization node runs in
depends on its version:

* v1, v6: training when ``is_test`` is 0 and the node asks for the statistics outputs;
* v7, v9: training when the node asks for the statistics outputs (the spec's "output case #1");
  with Y alone it is pure inference with the given estimated statistics, never blended with the
  batch statistics;
* v14, v15: the ``training_mode`` attribute; training returns (Y, running_mean, running_var).

Statistics are computed in float32 for half-precision inputs (``stash_type`` where the op has it).
"""

from __future__ import annotations

import numpy as np

from ...dtypes import np_dtype
from ..registry import kernel
from .conv import scratch


def _compute_dtype(dtype):
    dtype = np.dtype(dtype)
    return dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)


def _requested_outputs(ctx):
    """How many outputs the node asks for (trailing empty names do not count)."""
    names = list(ctx.node.output)
    while names and not names[-1]:
        names.pop()
    return len(names)


# ----------------------------------------------------------------------------- BatchNormalization


def _channel_shape(param, x):
    """Reshape a per-channel (C,) parameter to broadcast over (N, C, *spatial); (C, *spatial) stays."""
    if param.ndim == 1 and x.ndim > 2:
        return param.reshape((-1,) + (1,) * (x.ndim - 2))
    return param


def _bn_apply(x, scale, bias, mean, var, epsilon):
    """(x - mean) / sqrt(var + eps) * scale + bias as one multiply and one add over x."""
    ct = _compute_dtype(x.dtype)
    factor = scale.astype(ct) / np.sqrt(var.astype(ct) + ct.type(epsilon))
    shift = bias.astype(ct) - mean.astype(ct) * factor
    factor, shift = _channel_shape(factor, x), _channel_shape(shift, x)
    xc = x.astype(ct, copy=False)
    y = np.multiply(xc, factor)
    np.add(y, shift, out=y)
    return y.astype(x.dtype, copy=False)


def fold_batch_normalization(W, B, scale, bias, mean, var, epsilon):
    """(W', B') of a Conv whose output goes through an inference BatchNormalization.

    ``BN(Conv(x, W, B)) == Conv(x, W', B')`` with ``f = scale / sqrt(var + eps)``,
    ``W' = W * f`` (per output channel) and ``B' = (B - mean) * f + bias``. Meant for a plan-time
    rewrite of Conv -> BatchNormalization pairs with constant parameters, which removes the two
    passes over the activations that BatchNormalization costs at run time.
    """
    ct = np.dtype(np.float64)
    factor = scale.astype(ct) / np.sqrt(var.astype(ct) + epsilon)
    folded_w = (W.astype(ct) * factor.reshape((-1,) + (1,) * (W.ndim - 1))).astype(W.dtype)
    conv_bias = np.zeros(W.shape[0], ct) if B is None else B.astype(ct)
    folded_b = ((conv_bias - mean.astype(ct)) * factor + bias.astype(ct)).astype(W.dtype)
    return folded_w, folded_b


def _bn_train(x, scale, bias, mean, var, epsilon, momentum, spatial=True):
    """Batch statistics, normalized Y and the updated running statistics."""
    ct = _compute_dtype(x.dtype)
    xc = x.astype(ct, copy=False)
    axes = (0,) + tuple(range(2, x.ndim)) if spatial else (0,)
    batch_mean = xc.mean(axis=axes)
    batch_var = xc.var(axis=axes)
    y = _bn_apply(x, scale, bias, batch_mean, batch_var, epsilon)
    stat_type = mean.dtype
    running_mean = (mean.astype(ct) * ct.type(momentum) + batch_mean * ct.type(1 - momentum)).astype(stat_type)
    running_var = (var.astype(ct) * ct.type(momentum) + batch_var * ct.type(1 - momentum)).astype(stat_type)
    return y, running_mean, running_var, batch_mean.astype(stat_type), batch_var.astype(stat_type)


@kernel("BatchNormalization", since=1, context=True)
def batch_normalization_v1(ctx, X, scale, B, mean, var, *, epsilon, is_test, momentum, spatial,
                           consumed_inputs=None):
    if is_test or _requested_outputs(ctx) == 1:
        return _bn_apply(X, scale, B, mean, var, epsilon)
    return _bn_train(X, scale, B, mean, var, epsilon, momentum, bool(spatial))


@kernel("BatchNormalization", since=7, context=True)
def batch_normalization_v7(ctx, X, scale, B, mean, var, *, epsilon, momentum, spatial=1):
    if _requested_outputs(ctx) == 1:
        return _bn_apply(X, scale, B, mean, var, epsilon)
    return _bn_train(X, scale, B, mean, var, epsilon, momentum, bool(spatial))


@kernel("BatchNormalization", since=14)
def batch_normalization_v14(X, scale, B, input_mean, input_var, *, epsilon, momentum, training_mode):
    if not training_mode:
        return _bn_apply(X, scale, B, input_mean, input_var, epsilon)
    y, running_mean, running_var, _, _ = _bn_train(X, scale, B, input_mean, input_var, epsilon, momentum)
    return y, running_mean, running_var


# ------------------------------------------------------------------------ Instance / Group / Layer


def _mean_over(x, axes):
    """``np.mean(x, axes, keepdims=True)`` without its argument handling (which costs more than the
    reduction of a small tensor), float16 summed in float32 as np.mean does."""
    count = 1
    for a in axes:
        count *= x.shape[a]
    wide = np.float32 if x.dtype == np.float16 else None
    total = np.add.reduce(x, axis=axes, keepdims=True, dtype=wide)
    total *= total.dtype.type(1 / count) if count else total.dtype.type(np.nan)
    return total if wide is None else total.astype(x.dtype)


def _standardize(x, axes, epsilon):
    """(x - mean) / sqrt(var + eps) over ``axes``; returns (normalized, mean, inv_std) in x's dtype."""
    mean = _mean_over(x, axes)
    centered = x - mean
    inv_std = _mean_over(np.square(centered), axes)
    inv_std += x.dtype.type(epsilon)
    np.sqrt(inv_std, out=inv_std)
    np.reciprocal(inv_std, out=inv_std)
    centered *= inv_std
    return centered, mean, inv_std


@kernel("InstanceNormalization", since=1)
def instance_normalization(input, scale, B, *, epsilon, consumed_inputs=None):
    ct = _compute_dtype(input.dtype)
    x = input.astype(ct, copy=False)
    y, _, _ = _standardize(x, tuple(range(2, x.ndim)), epsilon)
    y = y * _channel_shape(scale.astype(ct), x) + _channel_shape(B.astype(ct), x)
    return y.astype(input.dtype, copy=False)


def _group_norm(X, scale, bias, epsilon, num_groups, stash_dtype, per_channel):
    n, c = X.shape[:2]
    x = X.astype(stash_dtype, copy=False).reshape(n, num_groups, -1)
    normalized, _, _ = _standardize(x, (2,), epsilon)
    normalized = normalized.reshape(X.shape).astype(X.dtype, copy=False)
    if not per_channel:  # v18: one scale/bias per group, shared by the group's channels
        scale, bias = np.repeat(scale, c // num_groups), np.repeat(bias, c // num_groups)
    return normalized * _channel_shape(scale.astype(X.dtype), X) + _channel_shape(bias.astype(X.dtype), X)


@kernel("GroupNormalization", since=18)
def group_normalization_v18(X, scale, bias, *, epsilon, num_groups):
    return _group_norm(X, scale, bias, epsilon, num_groups, _compute_dtype(X.dtype), per_channel=False)


@kernel("GroupNormalization", since=21)
def group_normalization_v21(X, scale, bias, *, epsilon, num_groups, stash_type):
    return _group_norm(X, scale, bias, epsilon, num_groups, np_dtype(stash_type), per_channel=True)


_MEAN_WEIGHTS: dict = {}


def row_means(x):
    """The mean over the last axis (without keepdims) of a float32/float64 array of rank at least 2 with
    a non-empty last axis, as one matrix-vector product with a vector of ``1/n``: on short rows a
    reduction along the last axis costs several times more (numpy starts each row separately)."""
    return np.matmul(x, _mean_weights(x))


def row_moments_ready(x) -> bool:
    """Whether :func:`row_moments` and :func:`row_means` take ``x``."""
    return type(x) is np.ndarray and (x.dtype == np.float32 or x.dtype == np.float64) and x.ndim >= 2 and \
        x.shape[-1] > 0


def row_moments(x, epsilon):
    """``(x - mean, mean, sqrt(var + epsilon))`` over the last axis of an array :func:`row_moments_ready`
    takes; the first is a new array, the others have x's shape without its last axis."""
    mean = row_means(x)
    centered = np.subtract(x, mean[..., None])
    std = row_means(np.square(centered))
    std += x.dtype.type(epsilon)
    np.sqrt(std, out=std)
    return centered, mean, std


def normalize_rows(x, epsilon, scale=None, bias=None, simplified=False, in_place=False):
    """``(x - mean) / sqrt(var + epsilon) * scale + bias`` over the last axis of an array
    :func:`row_moments_ready` takes (``simplified``: RMS norm, ``x / sqrt(mean(x^2) + epsilon)``),
    ``scale`` and ``bias`` optional, of x's type, broadcasting to x's shape. In ``x``'s buffer when
    ``in_place``, else a new array. 7 numpy calls for the RMS norm, 8 for the layer norm, plus one
    each for scale and bias: the row means are matrix-vector products (:func:`row_means`).
    :class:`RowNorm` is the same with its constants prepared per input shape."""
    return _normalized(x, _mean_weights(x), x.dtype.type(epsilon), scale, bias, simplified, in_place)


def _mean_weights(x):
    key = (x.shape[-1], x.dtype)
    w = _MEAN_WEIGHTS.get(key)
    if w is None:
        w = _MEAN_WEIGHTS[key] = np.full(x.shape[-1], 1 / x.shape[-1], x.dtype)
    return w


def _normalized(x, w, eps, scale, bias, simplified, in_place):
    if simplified:
        d = x
    else:
        d = np.subtract(x, np.matmul(x, w)[..., None], out=x if in_place else None)
    var = np.matmul(np.square(d), w)
    var += eps
    np.sqrt(var, out=var)
    y = np.divide(d, var[..., None], out=d if in_place or not simplified else None)
    if scale is not None:
        y *= scale
    if bias is not None:
        y += bias
    return y


#: the largest array for which :class:`RowNorm` repeats scale and bias to the full shape: beyond it
#: the rows are long or many enough that numpy's broadcast costs little beside the pass itself
TILED_MAX_SIZE = 1 << 16


def row_tile(vector, shape):
    """``vector`` (a per-column constant) repeated to ``shape``, read-only, when that holds at most
    :data:`TILED_MAX_SIZE` values, else ``vector`` itself (ValueError when it does not broadcast)."""
    if int(np.prod(shape)) > TILED_MAX_SIZE:
        np.broadcast_shapes(np.shape(vector), shape)
        return vector
    tile = np.ascontiguousarray(np.broadcast_to(vector, shape))
    tile.flags.writeable = False
    return tile


class RowNorm:
    """:func:`normalize_rows` with a constant scale and bias (optional, 1-D or one value, of the
    inputs' type), prepared once per input shape: the vector of ``1/n``, epsilon in the input's type,
    and scale and bias repeated to the input's full shape (a multiply by a same-shape array costs
    about half numpy's broadcast along rows of 64 on a few thousand values: measured 0.45 against
    1.05 us; arrays over :data:`TILED_MAX_SIZE` values take the vectors). Kept for 16 shapes.
    ``x`` must be an array :func:`row_moments_ready` takes, of the scale's type; a scale that does
    not broadcast to it raises ValueError."""

    __slots__ = ("epsilon", "scale", "bias", "simplified", "shapes")

    def __init__(self, epsilon, scale=None, bias=None, simplified=False):
        self.epsilon, self.scale, self.bias, self.simplified = epsilon, scale, bias, simplified
        self.shapes: dict = {}

    def __call__(self, x, in_place=False):
        p = self.shapes.get(x.shape)
        if p is None or p[0] != x.dtype:
            p = self._prepare(x)
        return _normalized(x, p[1], p[2], p[3], p[4], self.simplified, in_place)

    def prepared(self, x) -> bool:
        """Whether a call already prepared ``x``'s shape and type (so the caller's tests on them passed)."""
        p = self.shapes.get(x.shape)
        return p is not None and p[0] == x.dtype

    def _prepare(self, x):
        shape = x.shape
        tiles = [None if v is None else row_tile(v, shape) for v in (self.scale, self.bias)]
        if len(self.shapes) >= 16:
            self.shapes.clear()
        p = self.shapes[shape] = (x.dtype, _mean_weights(x), x.dtype.type(self.epsilon), *tiles)
        return p


def _trailing_axes(x, axis):
    axis = axis + x.ndim if axis < 0 else axis
    return tuple(range(axis, x.ndim))


@kernel("LayerNormalization", since=17)
def layer_normalization(X, Scale, B=None, *, axis, epsilon, stash_type):
    stash = np_dtype(stash_type)
    if (axis == -1 or axis == X.ndim - 1) and stash == X.dtype and row_moments_ready(X):
        centered, mean, inv_std = row_moments(X, epsilon)
        np.reciprocal(inv_std, out=inv_std)
        centered *= inv_std[..., None]
        centered *= Scale
        if B is not None:
            centered += B
        return centered, mean[..., None], inv_std[..., None]
    normalized, mean, inv_std = _standardize(X.astype(stash, copy=False), _trailing_axes(X, axis), epsilon)
    y = normalized.astype(X.dtype, copy=False) * Scale
    if B is not None:
        y += B
    return y, mean, inv_std


@kernel("RMSNormalization", since=23)
def rms_normalization(X, scale, *, axis, epsilon, stash_type):
    x = X.astype(np_dtype(stash_type), copy=False)
    mean_square = _mean_over(np.square(x), _trailing_axes(X, axis))
    normalized = x / np.sqrt(mean_square + x.dtype.type(epsilon))
    return normalized.astype(X.dtype, copy=False) * scale


# ------------------------------------------------------------------------------ LRN, MVN, LpNorm


@kernel("LRN", since=1)
def lrn(X, *, alpha, beta, bias, size):
    """Y = X / (bias + alpha / size * sum of squares over a window of channels) ^ beta.

    Written with in-place operations on two scratch arrays: on large activations the cost is the
    number of passes and fresh allocations, not the arithmetic.
    """
    ct = _compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    c = x.shape[1]
    below, above = (size - 1) // 2, size - 1 - (size - 1) // 2
    squares = np.square(x, out=scratch(x.shape, ct))  # a temporary: reused buffer, no fresh pages
    window = squares.copy()
    for j in range(1, below + 1):  # channels c - j contribute to channel c
        window[:, j:] += squares[:, :c - j]
    for j in range(1, above + 1):  # channels c + j contribute to channel c
        window[:, :c - j] += squares[:, j:]
    window *= ct.type(alpha / size)
    window += ct.type(bias)
    if beta == 0.75:  # t ** 0.75 = sqrt(t) * sqrt(sqrt(t)): two sqrts beat one pow by 4x
        root = np.sqrt(window, out=squares)
        np.sqrt(root, out=window)
        np.multiply(root, window, out=window)
    else:
        np.power(window, ct.type(beta), out=window)
    return np.divide(x, window, out=window).astype(X.dtype, copy=False)


@kernel("MeanVarianceNormalization", since=9)
def mean_variance_normalization(X, *, axes):
    """(X - E[X]) / (sqrt(E[(X - E[X])^2]) + 1e-9), the epsilon of the operator's function body."""
    ct = _compute_dtype(X.dtype)
    x = X.astype(ct, copy=False)
    axes = tuple(axes)
    centered = x - x.mean(axis=axes, keepdims=True)
    std = np.sqrt(np.mean(np.square(centered), axis=axes, keepdims=True))
    return (centered / (std + ct.type(1e-9))).astype(X.dtype, copy=False)


@kernel("LpNormalization", since=1)
def lp_normalization(input, *, axis, p):
    ct = _compute_dtype(input.dtype)
    x = input.astype(ct, copy=False)
    if p == 1:
        norm = np.abs(x).sum(axis=axis, keepdims=True)
    elif p == 2:
        norm = np.sqrt(np.square(x).sum(axis=axis, keepdims=True))
    else:
        raise ValueError(f"LpNormalization supports p = 1 or 2, not {p}")
    y = np.zeros_like(x)
    np.divide(x, norm, out=y, where=np.broadcast_to(norm != 0, x.shape))  # zero norm gives zero output
    return y.astype(input.dtype, copy=False)


# ---------------------------------------------------------------------------------------- Dropout


def _dropout_train(ctx, data, ratio, seed, mask_dtype):
    ratio = float(ratio)
    if ratio == 0:
        return data, np.ones(data.shape, dtype=mask_dtype)
    # a seeded node draws from numpy's legacy generator, which reproduces the backend test data
    rng = np.random.RandomState(seed) if seed is not None else ctx.rng
    keep = rng.uniform(0.0, 1.0, data.shape) >= ratio
    ct = _compute_dtype(data.dtype)
    y = data.astype(ct) * keep * ct.type(1.0 / (1.0 - ratio))
    return y.astype(data.dtype, copy=False), keep.astype(mask_dtype)


def _dropout_result(ctx, output, mask):
    return (output, mask) if _requested_outputs(ctx) > 1 else output


@kernel("Dropout", since=1, context=True)
def dropout_v1(ctx, data, *, is_test, ratio, consumed_inputs=None):
    if is_test:
        return _dropout_result(ctx, data, np.ones(data.shape, dtype=data.dtype))
    return _dropout_result(ctx, *_dropout_train(ctx, data, ratio, None, data.dtype))


@kernel("Dropout", since=7, context=True)
def dropout_v7(ctx, data, *, ratio):
    """Versions 7 and 10 are inference-only: the output is the input, the mask all ones."""
    mask_dtype = data.dtype if ctx.opset < 10 else np.bool_
    return _dropout_result(ctx, data, np.ones(data.shape, dtype=mask_dtype))


@kernel("Dropout", since=12, context=True)
def dropout_v12(ctx, data, ratio=None, training_mode=None, *, seed=None):
    if training_mode is None or not bool(training_mode):
        return _dropout_result(ctx, data, np.ones(data.shape, dtype=np.bool_))
    ratio = 0.5 if ratio is None else ratio  # the input's documented default
    return _dropout_result(ctx, *_dropout_train(ctx, data, ratio, seed, np.bool_))
