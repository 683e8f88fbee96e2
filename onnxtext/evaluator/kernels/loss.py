"""Loss kernels: NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss.

Both take scores shaped [N, C, d1, ..., dk] and integer targets shaped [N, d1, ..., dk]. A target
equal to ``ignore_index`` contributes nothing: zero loss and zero weight in the mean's divisor
(it may lie outside [0, C), so it is masked before it is used as an index).
"""

import numpy as np

from ..registry import kernel
from .activation import row_max


def _nll(log_prob, target, weight, ignore_index, reduction):
    target = target.astype(np.int64)
    ignored = target == ignore_index if ignore_index is not None else np.zeros(target.shape, bool)
    safe_target = np.where(ignored, 0, target)
    picked = np.take_along_axis(log_prob, safe_target[:, np.newaxis], axis=1)[:, 0]
    if weight is not None:
        w = weight[safe_target]
    else:
        w = np.ones(target.shape, log_prob.dtype)
    w = np.where(ignored, np.zeros((), w.dtype), w)
    loss = -picked * w
    if reduction == "none":
        return loss.astype(log_prob.dtype)
    if reduction == "sum":
        return np.asarray(loss.sum(), log_prob.dtype)
    if reduction == "mean":
        # Weighted mean: divided by the total weight of the non-ignored targets.
        return np.asarray(loss.sum() / w.sum(), log_prob.dtype)
    raise ValueError(f"unknown reduction {reduction!r}")


@kernel("NegativeLogLikelihoodLoss", since=12)
def negative_log_likelihood_loss(input, target, weight=None, *, reduction, ignore_index=None):
    return _nll(input, target, weight, ignore_index, reduction)


def _log_softmax(x, axis):
    shifted = x - row_max(x, axis)
    return shifted - np.log(np.exp(shifted).sum(axis=axis, keepdims=True))


@kernel("SoftmaxCrossEntropyLoss", since=12)
def softmax_cross_entropy_loss(scores, labels, weights=None, *, reduction, ignore_index=None):
    # Half-precision scores are normalized in float32 (exp/log/sum lose too much in 16 bits).
    compute = np.float64 if scores.dtype == np.float64 else np.float32
    log_prob = _log_softmax(scores.astype(compute), axis=1).astype(scores.dtype)
    loss = _nll(log_prob, labels, weights, ignore_index, reduction)
    return loss, log_prob
