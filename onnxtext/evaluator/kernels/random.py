"""Random generators: RandomNormal, RandomUniform, their *Like forms, Bernoulli, Multinomial.

A ``seed`` attribute gives a generator of its own, so a seeded node repeats its values from run to
run; without it the evaluator's generator (``Evaluator(seed=...)``) is used. Values cannot match
other runtimes (the spec leaves the generator unspecified), only the distributions do.
"""

from __future__ import annotations

import numpy as np

from ... import dtypes
from ..registry import kernel
from .activation import row_max


def _generator(ctx, seed):
    if seed is None:
        return ctx.rng
    # the seed is a float attribute: use all of its bits, so 1.0 and 1.5 give different streams
    return np.random.default_rng(int(np.float64(seed).view(np.uint64)))


def _out_type(dtype, like=None):
    if dtype is None:
        return like.dtype if like is not None else np.dtype(np.float32)
    return dtypes.np_dtype(dtype)


@kernel("RandomNormal", since=1, context=True)
def random_normal(ctx, dtype=1, mean=0.0, scale=1.0, seed=None, shape=()):
    values = _generator(ctx, seed).normal(mean, scale, size=tuple(shape))
    return np.asarray(values).astype(_out_type(dtype))


@kernel("RandomUniform", since=1, context=True)
def random_uniform(ctx, dtype=1, high=1.0, low=0.0, seed=None, shape=()):
    values = _generator(ctx, seed).uniform(low, high, size=tuple(shape))
    return np.asarray(values).astype(_out_type(dtype))


@kernel("RandomNormalLike", since=1, context=True)
def random_normal_like(ctx, x, dtype=None, mean=0.0, scale=1.0, seed=None):
    values = _generator(ctx, seed).normal(mean, scale, size=x.shape)
    return np.asarray(values).astype(_out_type(dtype, x))


@kernel("RandomUniformLike", since=1, context=True)
def random_uniform_like(ctx, x, dtype=None, high=1.0, low=0.0, seed=None):
    values = _generator(ctx, seed).uniform(low, high, size=x.shape)
    return np.asarray(values).astype(_out_type(dtype, x))


@kernel("Bernoulli", since=15, context=True)
def bernoulli(ctx, p, dtype=None, seed=None):
    draws = _generator(ctx, seed).random(size=p.shape) < np.asarray(p, np.float64)
    return draws.astype(_out_type(dtype, p))


@kernel("Multinomial", since=7, context=True)
def multinomial(ctx, logits, dtype=6, sample_size=1, seed=None):
    # rows are unnormalized log-probabilities: softmax them, then invert the per-row CDF
    z = np.asarray(logits, np.float64)
    z = np.exp(z - row_max(z, 1))
    cdf = np.cumsum(z / z.sum(axis=1, keepdims=True), axis=1)
    u = _generator(ctx, seed).random(size=(z.shape[0], sample_size))
    classes = (u[:, :, None] >= cdf[:, None, :]).sum(axis=2)
    return np.minimum(classes, z.shape[1] - 1).astype(dtypes.np_dtype(dtype))
