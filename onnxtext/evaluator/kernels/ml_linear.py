"""``ai.onnx.ml`` linear models and support vector machines.

LinearClassifier / LinearRegressor: scores = X @ coefficients.T + intercepts, then a post-transform.
SVMClassifier follows libsvm: one decision value per pair of classes (one-vs-one), votes, and when
``prob_a``/``prob_b`` are given, pairwise Platt probabilities coupled into class probabilities.
A classifier with a single score column and two labels is binary: the score decides between the
labels and the probability output gets both columns (the complement first).
"""

from dataclasses import dataclass

import numpy as np

from ..registry import kernel, prepares
from .derived_cache import derived
from .ml import ML, argmax_rows, as_rows, class_labels, post_transform, softmax_rows


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


def _classifier_tables(coefficients, intercepts, classlabels_ints, classlabels_strings, n_features: int):
    """(weights [F, C], intercepts [C] or None, labels, whether the labels are 0..C-1 so that a label is
    its class index) of a LinearClassifier, once per node."""
    def build():
        labels = class_labels(classlabels_strings, classlabels_ints)
        indexes = labels.dtype == np.int64 and np.array_equal(labels, np.arange(labels.size))
        return _linear_tables(coefficients, intercepts, n_features) + (labels, indexes)
    # keyed by the node's own (required) coefficients list, which names the node (see derived_cache)
    return derived(f"linear-classifier-{n_features}", (coefficients,), build)


@kernel("LinearClassifier", since=1, domain=ML)
def linear_classifier(X, *, coefficients, intercepts=None, classlabels_ints=None, classlabels_strings=None,
                      multi_class, post_transform):
    x = as_rows(X)
    if x.dtype != np.float32:
        x = x.astype(np.float32)
    return _linear_classify(x, _classifier_tables(coefficients, intercepts, classlabels_ints, classlabels_strings,
                                                  x.shape[1]), post_transform)


@prepares(linear_classifier)
def _prepare_linear_classifier(a: dict, constants):
    sources = (a["coefficients"], a.get("intercepts"), a.get("classlabels_ints"), a.get("classlabels_strings"))
    transform = a["post_transform"]
    by_width: dict = {}  # the tables per feature count (one, in a model fed consistently)

    def run(X):
        x = as_rows(X)
        if x.dtype != np.float32:
            x = x.astype(np.float32)
        tables = by_width.get(x.shape[1])
        if tables is None:
            tables = by_width[x.shape[1]] = _classifier_tables(*sources, x.shape[1])
        return _linear_classify(x, tables, transform)
    return run


def _linear_classify(x, tables, post_transform):
    """(label, scores) of a LinearClassifier for float32 rows ``x`` with its :func:`_classifier_tables`."""
    weights, bias, labels, labels_are_indexes = tables
    scores = x @ weights
    if bias is not None:
        scores += bias
    if scores.shape[1] == 1:
        # One score: positive score -> second label (or 1 when the labels are not a pair).
        pair = labels if labels.size == 2 else np.array([0, 1], np.int64)
        label = np.where(scores[:, 0] > 0, pair[1], pair[0]).astype(pair.dtype)
        if labels.size == 2:
            return label, _binary_columns(scores[:, 0], post_transform).astype(np.float32)
        return label, post_transform_scores(scores, post_transform)
    label = argmax_rows(scores)
    if not labels_are_indexes or label.dtype != np.int64:
        label = labels[label]
    if post_transform == "SOFTMAX":  # in float32, as onnxruntime computes it
        return label, softmax_rows(scores)
    if post_transform == "LOGISTIC":
        np.exp(np.negative(scores, out=scores), out=scores)
        scores += 1
        return label, np.reciprocal(scores, out=scores)
    return label, post_transform_scores(scores, post_transform)


def post_transform_scores(scores, name):
    if name == "NONE":  # the scores are the kernel's own array: no copy needed when already float32
        return scores.astype(np.float32, copy=False)
    return post_transform(scores.astype(np.float64), name).astype(np.float32)


@kernel("LinearRegressor", since=1, domain=ML)
def linear_regressor(X, *, coefficients=None, intercepts=None, targets, post_transform):
    x = as_rows(X).astype(np.float32, copy=False)
    weights, bias = _linear_tables(coefficients, intercepts, x.shape[1], rows=targets)
    scores = x @ weights
    if bias is not None:
        scores += bias
    return post_transform_scores(scores, post_transform)


def _kernel_weights(vectors: np.ndarray, kernel_type: str, kernel_params):
    """The weights of :func:`_svm_kernel`'s product: the vectors [V, F] transposed and scaled by gamma, once per
    node. RBF: [F + 2, V + 1], the rows 2 gamma v^T, then -gamma (the weight of |x|^2), then -gamma |v|^2
    (the weight of a column of ones), and a last column of zeros, whose exponential is a column of ones
    in the kernel matrix (:data:`ONES_COLUMN_KERNELS`). Otherwise [F, V]."""
    gamma = (list(kernel_params or []) + [0.0])[0]
    scale = 2 * gamma if kernel_type == "RBF" else gamma if kernel_type in ("POLY", "SIGMOID") else 1.0
    weights = vectors.T * scale
    if kernel_type == "RBF":
        weights = np.vstack([weights, np.full((1, vectors.shape[0]), -gamma), -gamma * (vectors * vectors).sum(axis=1)])
        weights = np.hstack([weights, np.zeros((weights.shape[0], 1))])
    return np.ascontiguousarray(weights)


#: Kernels whose matrix :func:`_svm_kernel` gives with a last column of ones, so that the products after it
#: (pair decisions, regression scores) take their offsets as one more row of weights instead of an
#: addition: exp of the RBF exponent's zero column costs nothing more.
ONES_COLUMN_KERNELS = ("RBF",)

_ONES: dict = {}  # n -> an [n, 1] column of ones (the last few batch sizes)


def _ones_column(n: int) -> np.ndarray:
    ones = _ONES.get(n)
    if ones is None:
        if len(_ONES) >= 8:
            _ONES.clear()
        ones = _ONES[n] = np.ones((n, 1))
    return ones


@dataclass(frozen=True)
class _SVRTables:
    """An SVMRegressor's kernel weights and coefficients, built once per node (:mod:`.derived_cache`)."""

    kernel_weights: np.ndarray
    coefficients: np.ndarray  # [V] (and a 0 for the kernel matrix's column of ones)
    kernel_type: str  # LINEAR for a linear model (no support vectors) whatever the attribute says, as
                      # onnxruntime runs it


def _svr_tables(coefficients, support_vectors, n_supports, kernel_type, kernel_params):
    coef = np.asarray(coefficients or [], np.float64)
    if n_supports > 0:
        vectors, coef = np.asarray(support_vectors, np.float64).reshape(n_supports, -1), coef[:n_supports]
    else:  # linear model: coefficients are one weight per feature, x . w with coefficient 1
        vectors, coef, kernel_type = coef.reshape(1, -1), np.ones(1), "LINEAR"
    if kernel_type in ONES_COLUMN_KERNELS:
        coef = np.append(coef, 0.0)  # (the kernel matrix's column of ones)
    return _SVRTables(_kernel_weights(vectors, kernel_type, kernel_params), coef, kernel_type)


@kernel("SVMRegressor", since=1, domain=ML)
def svm_regressor(X, *, coefficients=None, support_vectors=None, rho=None, kernel_type, kernel_params=None,
                  n_supports, one_class, post_transform):
    sources = (coefficients, support_vectors, n_supports, kernel_type, kernel_params)
    # keyed by the node's own coefficients and support vector lists, which name the node (see derived_cache)
    tables = derived("svm-regressor", (coefficients, support_vectors) if coefficients else sources,
                     lambda: _svr_tables(*sources))
    return _svm_regress(X, tables, rho, kernel_type, kernel_params, one_class, post_transform)


@prepares(svm_regressor)
def _prepare_svm_regressor(a: dict, constants):
    tables = _svr_tables(a.get("coefficients"), a.get("support_vectors"), a["n_supports"], a["kernel_type"],
                         a.get("kernel_params"))
    rest = (a.get("rho"), a["kernel_type"], a.get("kernel_params"), a["one_class"], a["post_transform"])
    return lambda X: _svm_regress(X, tables, *rest)


def _svm_regress(X, tables, rho, kernel_type, kernel_params, one_class, post_transform):
    x = as_rows(X).astype(np.float64)
    score = _svm_kernel(x, tables, tables.kernel_type, kernel_params) @ tables.coefficients
    if rho:
        score += rho[0]
    if one_class:
        score = np.where(score > 0, 1.0, -1.0)
    return post_transform_scores(score[:, None], post_transform)


#: Sweeps of the probability coupling between two renormalizations of its homogeneous state.
RENORMALIZE_SWEEPS = 16


class _Coupling:
    """libsvm's multiclass_probability for every sample: pairwise probabilities pr [N, P] -> p [N, k].

    It solves min_p p^T Q p with sum(p) = 1 by a fixed-point iteration whose loop over classes is
    sequential by construction; all samples iterate together (a converged one stops moving, as libsvm
    stops). Q's entries are quadratic in the pairwise probabilities r[i, j] = pr, r[j, i] = 1 - pr, so
    Q, the update rows and the starting state all come from one matrix product of [pr, pr^2].

    The state is kept homogeneous, ``[p~ | q~ | w]`` with p = p~ / w and Qp = q~ / w, so libsvm's step
    for class t, ``p, Qp <- (p + diff e_t, Qp + diff Q[t, :]) / (1 + diff)`` with
    ``diff = (pQp - Qp[t]) / Q[t, t]``, is one scaled row addition ``S += (p~.q~ / w - q~[t]) * U[t]``
    with ``U[t] = [e_t | Q[t, :] | 1] / Q[t, t]``: no division of the state per step. The convergence
    test (libsvm's: max_t |Qp[t] - pQp| < 0.005 / k, Qp recomputed from p) runs on the normalized
    state at the start of each sweep.
    """

    def __init__(self, k: int, pairs_i: np.ndarray, pairs_j: np.ndarray):
        self.k = k
        width = self.width = 2 * k + 1
        n_pairs = len(pairs_i)
        rows = k * width
        # [pr, pr^2] @ linear + constant: the update rows, the starting state, then its gaps
        linear = np.zeros((2 * n_pairs, rows + width + k))
        constant = np.zeros(rows + width + k)

        def q(t, j):  # column of Q[t, j] in the update rows
            return t * width + k + j

        for p, (i, j) in enumerate(zip(pairs_i.tolist(), pairs_j.tolist())):
            for a, b in ((i, j), (j, i)):  # Q[i, j] = Q[j, i] = -r[j, i] r[i, j] = pr^2 - pr
                linear[p, q(a, b)] -= 1
                linear[n_pairs + p, q(a, b)] += 1
            linear[p, q(i, i)] -= 2  # Q[i, i] += r[j, i]^2 = (1 - pr)^2
            linear[n_pairs + p, q(i, i)] += 1
            constant[q(i, i)] += 1
            linear[n_pairs + p, q(j, j)] += 1  # Q[j, j] += r[i, j]^2 = pr^2
        for t in range(k):
            constant[t * width + t] = 1.0  # e_t
            constant[t * width + 2 * k] = 1.0  # the weight's increment
            # starting state: p = 1/k, Qp = Q p (each row of Q summed over j, divided by k), w = 1
            constant[rows + t] = 1.0 / k
            for j in range(k):
                linear[:, rows + k + t] += linear[:, q(t, j)] / k
                constant[rows + k + t] += constant[q(t, j)] / k
        constant[rows + 2 * k] = 1.0
        # the first convergence test's gaps, pQp - Qp[t] = mean_j Qp[j] - Qp[t] (p = 1/k): linear as well
        for t in range(k):
            for j in range(k):
                linear[:, rows + width + t] += linear[:, rows + k + j] / k
                constant[rows + width + t] += constant[rows + k + j] / k
            linear[:, rows + width + t] -= linear[:, rows + k + t]
            constant[rows + width + t] -= constant[rows + k + t]
        # [linear | constant] applied to [pr; pr^2; 1]: the constant comes with the product
        # then Q[t, t] once more (the update rows' divisors, as a slice instead of a gather)
        diagonal = [t * width + k + t for t in range(k)]
        linear, constant = np.concatenate([linear, linear[:, diagonal]], axis=1), np.concatenate(
            [constant, constant[diagonal]])
        self.affine = np.ascontiguousarray(np.concatenate([linear, constant[None]]).T)
        self.ones: dict = {}  # batch size -> a [1, n] row of ones (the last few sizes)

    def probabilities(self, pr: np.ndarray) -> np.ndarray:
        n, k, width = pr.shape[0], self.k, self.width
        # samples along the last axis: every per-sample quantity below is one contiguous row
        pr = pr.T
        ones = self.ones.get(n)
        if ones is None:
            if len(self.ones) >= 4:
                self.ones.clear()
            ones = self.ones[n] = np.ones((1, n))
        m = self.affine @ np.concatenate((pr, pr * pr, ones))
        update = m[:k * width].reshape(k, width, n)
        update /= m[-k:, None, :]
        state = m[k * width:k * width + width]
        p, q, w = state[:k], state[k:2 * k], state[2 * k]
        eps = 0.005 / k
        moving_before = n
        vecdot, absolute, count_nonzero = np.vecdot, np.abs, np.count_nonzero  # (the loop is all calls)
        for iteration in range(max(100, k)):
            if iteration % RENORMALIZE_SWEEPS == RENORMALIZE_SWEEPS - 1:
                state *= 1 / w  # keep w near 1 (it changes by a factor 1 + diff per step)
            # pQp - Qp[t] for every t, times w: libsvm's convergence test, max_t |Qp[t] - pQp| < eps, is
            # |gap| < eps * w; and the first step's numerator (at the start, w = 1 and the product gave them)
            if iteration:
                gaps = vecdot(p, q, axis=0)
                gaps /= w
                gaps = gaps - q
                moving = absolute(gaps).max(axis=0) >= eps * w
            else:
                gaps = m[k * width + width:k * width + width + k]
                moving = absolute(gaps).max(axis=0) >= eps
            # A sample that converged stops moving, so it stays converged: no need to remember it.
            count = count_nonzero(moving)
            if not count:
                break
            if count < moving_before:  # converged samples get zero update rows
                update *= moving
                moving_before = count
            delta = gaps[0]
            for t in range(k):
                if t:
                    delta = vecdot(p, q, axis=0)
                    delta /= w
                    delta -= q[t]
                state += delta * update[t]
        return (state[:k] / w).T


@dataclass(frozen=True)
class _SVMTables:
    """An SVMClassifier's attributes as arrays, built once per node (:mod:`.derived_cache`)."""

    labels: np.ndarray
    kernel_weights: np.ndarray  # [F, V] support vectors (or [F, C] weights of a linear SVM): _kernel_weights
    pair_weights: np.ndarray  # [V, P] (or [V, 2P]) coefficient of each vector in each pair's decision
                              # (then in its Platt argument decision * A + B)
    pair_offsets: np.ndarray  # [P] rho (then [2P]: rho, rho * A + B)
    vote_slopes: np.ndarray  # [P, k]: votes = vote_base + (decision > 0) @ vote_slopes
    vote_base: np.ndarray    # [k]
    vote_bits: np.ndarray | None  # [P] int64 powers of two: (decision > 0) @ vote_bits numbers the outcome
    voted_labels: np.ndarray | None  # [2^P] the label the votes of each outcome elect (P <= VOTE_TABLE_PAIRS)
    rho: np.ndarray          # [P] (or [1])
    coupling: _Coupling | None
    ones_column: bool = False  # the kernel matrix has a last column of ones (ONES_COLUMN_KERNELS), and
                               # pair_weights a last row: the pair offsets (pair_offsets is then unused)


def _svm_tables(coefficients, support_vectors, vectors_per_class, rho, classlabels_ints, classlabels_strings,
                prob_a, prob_b, kernel_type, kernel_params, n_features):
    labels = class_labels(classlabels_strings, classlabels_ints)
    k = labels.size
    coef = np.asarray(coefficients or [], np.float64)
    rho = np.asarray(rho or [0.0], np.float64)
    if not vectors_per_class:
        empty = np.zeros((0, k))
        weights = coef.reshape(-1, n_features)
        # a linear SVM whatever kernel_type says, as onnxruntime runs it
        return _SVMTables(labels, _kernel_weights(weights, "LINEAR", None), empty, rho, empty,
                          np.zeros(k), None, None, rho, None)
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
    offsets = rho[:len(pairs)]
    coupling = None
    if prob_a:
        a, b = np.asarray(prob_a, np.float64), np.asarray(prob_b, np.float64)
        weights = np.concatenate([weights, weights * a], axis=1)
        offsets = np.concatenate([offsets, offsets * a + b])
        coupling = _Coupling(k, pi, pj)
    slopes, base = eye[pi] - eye[pj], eye[pj].sum(axis=0)
    ones_column = kernel_type in ONES_COLUMN_KERNELS
    if ones_column:
        weights = np.vstack([weights, offsets])
    bits = voted = None
    if len(pairs) <= VOTE_TABLE_PAIRS:
        bits = 1 << np.arange(len(pairs), dtype=np.int64)
        outcomes = (np.arange(1 << len(pairs))[:, None] & bits) > 0  # [2^P, P] decision > 0 of each pair
        voted = labels[(outcomes @ slopes + base).argmax(axis=1)]
    return _SVMTables(labels, _kernel_weights(vectors, kernel_type, kernel_params), weights, offsets, slopes, base,
                      bits, voted, rho, coupling, ones_column)


#: Up to this many class pairs (6 classes), the label elected by the pairwise votes is read from a table
#: indexed by the pattern of decision signs (three numpy calls instead of five).
VOTE_TABLE_PAIRS = 15


def _voted_labels(positive: np.ndarray, tables: _SVMTables) -> np.ndarray:
    """The label each sample's one-vs-one votes elect (the first of equal counts), from [N, P] decision > 0."""
    if tables.voted_labels is not None:
        return tables.voted_labels[positive @ tables.vote_bits]
    votes = positive @ tables.vote_slopes
    votes += tables.vote_base
    return tables.labels[argmax_rows(votes)]


def _svm_kernel(x, tables: _SVMTables, kernel_type, kernel_params):
    """K(x_n, v_j) [N, V] float64 from the prepared (scaled, transposed) vectors."""
    if kernel_type == "RBF":  # exp(-gamma |x - v|^2), the squared distance clipped at 0
        # [x, |x|^2, 1] @ [2 gamma v, 0; -gamma, 0; -gamma |v|^2, 0]: the exponent from one product, and
        # a last column of ones (ONES_COLUMN_KERNELS)
        k = np.concatenate((x, np.vecdot(x, x)[:, None], _ones_column(x.shape[0])), axis=1) @ tables.kernel_weights
        np.minimum(k, 0, out=k)
        return np.exp(k, out=k)
    k = x @ tables.kernel_weights
    if kernel_type == "LINEAR":
        return k
    _, coef0, degree = (list(kernel_params or []) + [0.0, 0.0, 0.0])[:3]
    if kernel_type == "POLY":
        k += coef0
        return k ** int(degree)
    if kernel_type == "SIGMOID":
        k += coef0
        return np.tanh(k, out=k)
    raise ValueError(f"unknown SVM kernel_type {kernel_type!r}")


@kernel("SVMClassifier", since=1, domain=ML)
def svm_classifier(X, *, coefficients=None, support_vectors=None, vectors_per_class=None, rho=None,
                   prob_a=None, prob_b=None, classlabels_ints=None, classlabels_strings=None, kernel_type,
                   kernel_params=None, post_transform):
    x = as_rows(X).astype(np.float64)
    sources = (coefficients, support_vectors, vectors_per_class, rho, classlabels_ints, classlabels_strings, prob_a,
               prob_b, kernel_type, kernel_params)
    # keyed by the node's own coefficients and support vector lists, which name the node (see derived_cache)
    tables = derived(f"svm-classifier-{x.shape[1]}", (coefficients, support_vectors) if coefficients else sources,
                     lambda: _svm_tables(*sources, x.shape[1]))
    return _svm_classify(x, tables, vectors_per_class, kernel_type, kernel_params, post_transform)


@prepares(svm_classifier)
def _prepare_svm_classifier(a: dict, constants):
    sources = tuple(a.get(n) for n in ("coefficients", "support_vectors", "vectors_per_class", "rho",
                                       "classlabels_ints", "classlabels_strings", "prob_a", "prob_b",
                                       "kernel_type", "kernel_params"))
    per_class, kernel_type, kernel_params, transform = sources[2], sources[8], sources[9], a["post_transform"]
    by_width: dict = {}  # the tables per feature count (one, in a model fed consistently)

    def run(X):
        x = as_rows(X).astype(np.float64)
        tables = by_width.get(x.shape[1])
        if tables is None:
            tables = by_width[x.shape[1]] = _svm_tables(*sources, x.shape[1])
        return _svm_classify(x, tables, per_class, kernel_type, kernel_params, transform)
    return run


def _svm_classify(x, tables: _SVMTables, vectors_per_class, kernel_type, kernel_params, post_transform):
    """(label, scores) of an SVMClassifier for float64 rows ``x`` with its :func:`_svm_tables`."""
    labels = tables.labels
    k = labels.size
    if not vectors_per_class:
        # Linear SVM: one weight vector per class (or a single one for a binary problem), x . w whatever
        # kernel_type says (as onnxruntime computes it)
        scores = x @ tables.kernel_weights + tables.rho[0]
        if scores.shape[1] == 1 and k == 2:
            label = np.where(scores[:, 0] > 0, labels[1], labels[0]).astype(labels.dtype)
            return label, _binary_columns(scores[:, 0], post_transform).astype(np.float32)
        return labels[argmax_rows(scores)], post_transform_scores(scores, post_transform)

    kern = _svm_kernel(x, tables, kernel_type, kernel_params)  # [N, vectors]
    decisions = kern @ tables.pair_weights  # [N, pairs] (then the Platt arguments beside)
    if not tables.ones_column:
        decisions += tables.pair_offsets
    if tables.coupling is not None:
        n_pairs = tables.vote_slopes.shape[0]
        # Platt scaling of each pair, then coupling into class probabilities.
        pr = np.exp(decisions[:, n_pairs:])
        pr += 1
        np.reciprocal(pr, out=pr)
        np.minimum(np.maximum(pr, 1e-7, out=pr), 1 - 1e-7, out=pr)  # np.clip costs twice as much
        probabilities = tables.coupling.probabilities(pr)
        # The label still comes from the votes (as onnxruntime does), not from the probabilities.
        return _voted_labels(decisions[:, :n_pairs] > 0, tables), post_transform_scores(probabilities, post_transform)
    if k == 2:
        label = np.where(decisions[:, 0] > 0, labels[0], labels[1]).astype(labels.dtype)
        return label, post_transform_scores(np.stack([-decisions[:, 0], decisions[:, 0]], axis=1), post_transform)
    return _voted_labels(decisions > 0, tables), post_transform_scores(decisions, post_transform)
