"""``ai.onnx.ml`` linear models and support vector machines.

LinearClassifier / LinearRegressor: scores = X @ coefficients.T + intercepts, then a post-transform.
SVMClassifier follows libsvm: one decision value per pair of classes (one-vs-one), votes, and when
``prob_a``/``prob_b`` are given, pairwise Platt probabilities coupled into class probabilities.
A classifier with a single score column and two labels is binary: the score decides between the
labels and the probability output gets both columns (the complement first).
"""

from dataclasses import dataclass

import numpy as np

from ..registry import kernel
from .derived_cache import derived
from .ml import ML, as_rows, class_labels, post_transform


def _binary_columns(score: np.ndarray, transform: str) -> np.ndarray:
    """[N] score of the positive class -> [N, 2] (negative, positive) after the transform.

    Softmax of a single score is not a meaningful normalization, so SOFTMAX/SOFTMAX_ZERO leave the
    score as is; LOGISTIC and PROBIT map it first; the negative column is the complement 1 - s.
    """
    s = post_transform(score, transform) if transform in ("LOGISTIC", "PROBIT") else score
    return np.stack([1 - s, s], axis=1)


def _linear_tables(coefficients, intercepts, n_features: int, rows: int | None = None):
    """(weights [F, C] float32, intercepts [C] float32 or None) of a linear model, once per node."""
    def build():
        weights = np.asarray(coefficients, np.float32).reshape(-1 if rows is None else rows, n_features if rows is None
                                                              else -1)
        bias = np.asarray(intercepts, np.float32) if intercepts else None
        return np.ascontiguousarray(weights.T), bias
    return derived(f"linear-{n_features}-{rows}", (coefficients, intercepts), build)


@kernel("LinearClassifier", since=1, domain=ML)
def linear_classifier(X, *, coefficients, intercepts=None, classlabels_ints=None, classlabels_strings=None,
                      multi_class, post_transform):
    x = as_rows(X).astype(np.float32, copy=False)
    weights, bias = _linear_tables(coefficients, intercepts, x.shape[1])
    scores = x @ weights
    if bias is not None:
        scores += bias
    labels = derived("labels", (classlabels_strings, classlabels_ints),
                     lambda: class_labels(classlabels_strings, classlabels_ints))
    if scores.shape[1] == 1:
        # One score: positive score -> second label (or 1 when the labels are not a pair).
        pair = labels if labels.size == 2 else np.array([0, 1], np.int64)
        label = np.where(scores[:, 0] > 0, pair[1], pair[0]).astype(pair.dtype)
        if labels.size == 2:
            return label, _binary_columns(scores[:, 0], post_transform).astype(np.float32)
        return label, post_transform_scores(scores, post_transform)
    label = labels[np.argmax(scores, axis=1)]
    return label, post_transform_scores(scores, post_transform)


def post_transform_scores(scores, name):
    if name == "NONE":
        return scores.astype(np.float32)
    return post_transform(scores.astype(np.float64), name).astype(np.float32)


@kernel("LinearRegressor", since=1, domain=ML)
def linear_regressor(X, *, coefficients=None, intercepts=None, targets, post_transform):
    x = as_rows(X).astype(np.float32, copy=False)
    weights, bias = _linear_tables(coefficients, intercepts, x.shape[1], rows=targets)
    scores = x @ weights
    if bias is not None:
        scores += bias
    return post_transform_scores(scores, post_transform)


def _kernel_matrix(x, vectors, kernel_type, kernel_params, vector_norms=None):
    """K(x_n, v_j) for every sample and support vector: [N, V] float64 (``vector_norms``: the vectors'
    squared norms, when kept)."""
    gamma, coef0, degree = (list(kernel_params or []) + [0.0, 0.0, 0.0])[:3]
    dot = x @ vectors.T
    if kernel_type == "LINEAR":
        return dot
    if kernel_type == "POLY":
        return (gamma * dot + coef0) ** int(degree)
    if kernel_type == "RBF":
        if vector_norms is None:
            vector_norms = (vectors * vectors).sum(axis=1)
        sq = (x * x).sum(axis=1)[:, None] - 2 * dot + vector_norms[None, :]
        return np.exp(-gamma * np.maximum(sq, 0))
    if kernel_type == "SIGMOID":
        return np.tanh(gamma * dot + coef0)
    raise ValueError(f"unknown SVM kernel_type {kernel_type!r}")


def _support_vectors(support_vectors, n_supports: int):
    """(vectors [V, F], their squared norms) of an SVM, once per node (:mod:`.derived_cache`)."""
    def build():
        vectors = np.asarray(support_vectors, np.float64).reshape(n_supports, -1)
        return vectors, (vectors * vectors).sum(axis=1)
    return derived(f"svm-vectors-{n_supports}", (support_vectors,), build)


@kernel("SVMRegressor", since=1, domain=ML)
def svm_regressor(X, *, coefficients=None, support_vectors=None, rho=None, kernel_type, kernel_params=None,
                  n_supports, one_class, post_transform):
    x = as_rows(X).astype(np.float64)
    coef = derived("svm-coefficients", (coefficients,), lambda: np.asarray(coefficients or [], np.float64))
    bias = rho[0] if rho else 0.0
    if n_supports > 0:
        vectors, norms = _support_vectors(support_vectors, n_supports)
        score = _kernel_matrix(x, vectors, kernel_type, kernel_params, norms) @ coef[:n_supports] + bias
    else:  # linear model: coefficients are one weight per feature
        score = _kernel_matrix(x, coef.reshape(1, -1), kernel_type, kernel_params)[:, 0] + bias
    if one_class:
        score = np.where(score > 0, 1.0, -1.0)
    return post_transform_scores(score[:, None], post_transform)


def _couple_probabilities(pairwise: np.ndarray, k: int) -> np.ndarray:
    """libsvm's multiclass_probability for every sample: r [N, k, k] pairwise -> p [N, k].

    Solves min_p p^T Q p with sum(p) = 1 by its fixed-point iteration; the loop over classes is
    sequential by construction, and all samples iterate together (converged ones stop moving).
    ``p`` and ``Qp`` live side by side in one [N, 2k] array, so the step for class t is one scaled
    row update ``S = (S + diff * [e_t | Q[t, :]]) / (1 + diff)``: the same arithmetic as libsvm's
    loop, in a handful of numpy calls per step.
    """
    n = pairwise.shape[0]
    r = pairwise
    Q = -r.transpose(0, 2, 1) * r  # Q[t, j] = -r[j, t] * r[t, j]
    diag = (r.transpose(0, 2, 1) ** 2 * (1 - np.eye(k))).sum(axis=2)  # sum_{j != t} r[j, t]^2
    Q[:, np.arange(k), np.arange(k)] = diag
    # rows[t] = [e_t | Q[:, t, :]]: what one step adds to [p | Qp], scaled by its diff
    rows = np.zeros((k, n, 2 * k))
    rows[np.arange(k), :, np.arange(k)] = 1.0
    rows[:, :, k:] = Q.transpose(1, 0, 2)
    state = np.empty((n, 2 * k))
    state[:, :k] = 1.0 / k
    p, Qp = state[:, :k], state[:, k:]  # views: the updates below are in place
    qp_columns = [state[:, k + t] for t in range(k)]
    diag_columns = [diag[:, t] for t in range(k)]
    eps = 0.005 / k
    active = np.ones(n, bool)
    for _ in range(max(100, k)):
        Qp[...] = np.matvec(Q, p)  # Qp afresh each iteration, as libsvm does
        pQp = np.vecdot(p, Qp)
        active &= np.abs(Qp - pQp[:, None]).max(axis=1) >= eps
        if not active.any():
            break
        all_active = active.all()
        for t in range(k):
            diff = pQp - qp_columns[t]
            diff /= diag_columns[t]
            if not all_active:
                diff *= active
            diff = diff[:, None]
            state += diff * rows[t]
            state /= diff + 1
            # p^T Q p of the updated p (libsvm updates it incrementally: the same value, rounded differently)
            pQp = np.vecdot(p, Qp)
    return state[:, :k]


@dataclass(frozen=True)
class _SVMTables:
    """An SVMClassifier's attributes as arrays, built once per node (:mod:`.derived_cache`)."""

    labels: np.ndarray
    vectors: np.ndarray      # [V, F] support vectors (or [C, F] weights of a linear SVM)
    vector_norms: np.ndarray  # [V] their squared norms
    pair_weights: np.ndarray  # [V, P] coefficient of each support vector in each pair's decision
    rho: np.ndarray          # [P] (or [1])
    pair_first: np.ndarray   # [P, k] one-hot of each pair's first class i (pairs (i, j), i < j)
    pair_second: np.ndarray  # [P, k] one-hot of its second class j
    pairs_i: np.ndarray      # [P]
    pairs_j: np.ndarray      # [P]


def _svm_tables(coefficients, support_vectors, vectors_per_class, rho, classlabels_ints, classlabels_strings,
                n_features):
    labels = class_labels(classlabels_strings, classlabels_ints)
    k = labels.size
    coef = np.asarray(coefficients or [], np.float64)
    rho = np.asarray(rho or [0.0], np.float64)
    if not vectors_per_class:
        empty = np.zeros((0, k))
        weights = coef.reshape(-1, n_features)
        return _SVMTables(labels, weights, (weights * weights).sum(axis=1), empty, rho, empty, empty,
                          np.zeros(0, np.int64), np.zeros(0, np.int64))
    counts = np.asarray(vectors_per_class, np.int64)
    total = int(counts.sum())
    vectors = np.asarray(support_vectors, np.float64).reshape(total, -1)
    coef = coef.reshape(k - 1, total)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    # decision of pair (i, j) = sum over class i's vectors of coef[j - 1] K + over class j's of coef[i] K
    weights = np.zeros((total, len(pairs)))
    for p, (i, j) in enumerate(pairs):
        si, sj = slice(starts[i], starts[i] + counts[i]), slice(starts[j], starts[j] + counts[j])
        weights[si, p] = coef[j - 1, si]
        weights[sj, p] = coef[i, sj]
    pi = np.array([i for i, _ in pairs], np.int64)
    pj = np.array([j for _, j in pairs], np.int64)
    eye = np.eye(k)
    return _SVMTables(labels, vectors, (vectors * vectors).sum(axis=1), weights, rho, eye[pi], eye[pj], pi, pj)


@kernel("SVMClassifier", since=1, domain=ML)
def svm_classifier(X, *, coefficients=None, support_vectors=None, vectors_per_class=None, rho=None,
                   prob_a=None, prob_b=None, classlabels_ints=None, classlabels_strings=None, kernel_type,
                   kernel_params=None, post_transform):
    x = as_rows(X).astype(np.float64)
    sources = (coefficients, support_vectors, vectors_per_class, rho, classlabels_ints, classlabels_strings)
    tables = derived(f"svm-classifier-{x.shape[1]}", sources, lambda: _svm_tables(*sources, x.shape[1]))
    labels = tables.labels
    k = labels.size
    if not vectors_per_class:
        # Linear SVM: one weight vector per class (or a single one for a binary problem).
        scores = _kernel_matrix(x, tables.vectors, kernel_type, kernel_params, tables.vector_norms) + tables.rho[0]
        if scores.shape[1] == 1 and k == 2:
            label = np.where(scores[:, 0] > 0, labels[1], labels[0]).astype(labels.dtype)
            return label, _binary_columns(scores[:, 0], post_transform).astype(np.float32)
        return labels[np.argmax(scores, axis=1)], post_transform_scores(scores, post_transform)

    kern = _kernel_matrix(x, tables.vectors, kernel_type, kernel_params, tables.vector_norms)  # [N, total]
    decisions = kern @ tables.pair_weights + tables.rho[:tables.pair_weights.shape[1]]  # [N, pairs]
    positive = decisions > 0
    votes = positive @ tables.pair_first + ~positive @ tables.pair_second  # [N, k]

    if prob_a:
        # Platt scaling of each pair, then coupling into class probabilities.
        a, b = np.asarray(prob_a, np.float64), np.asarray(prob_b, np.float64)
        pr = np.clip(1 / (1 + np.exp(decisions * a + b)), 1e-7, 1 - 1e-7)
        r = np.zeros((x.shape[0], k, k))
        r[:, tables.pairs_i, tables.pairs_j] = pr
        r[:, tables.pairs_j, tables.pairs_i] = 1 - pr
        probabilities = _couple_probabilities(r, k)
        # The label still comes from the votes (as onnxruntime does), not from the probabilities.
        return labels[np.argmax(votes, axis=1)], post_transform_scores(probabilities, post_transform)
    if k == 2:
        label = np.where(decisions[:, 0] > 0, labels[0], labels[1]).astype(labels.dtype)
        return label, post_transform_scores(np.stack([-decisions[:, 0], decisions[:, 0]], axis=1), post_transform)
    return labels[np.argmax(votes, axis=1)], post_transform_scores(decisions, post_transform)
