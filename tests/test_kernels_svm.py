"""SVMClassifier's fast paths checked against their references: the label read from the table of
decision-sign patterns against counted votes, and the vectorized probability coupling against a
line-by-line transcription of libsvm's ``multiclass_probability`` (the kernel's outputs are checked
against onnxruntime in tests/test_kernels_ml.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from onnxtext.evaluator import Evaluator
from test_kernels_ml import CASES, make_model

pytest.importorskip("onnxruntime")


SVM_CLASSIFIER_CASES = [c[0] for c in CASES if c[1] == "SVMClassifier" and "vectors_per_class" in c[5]]


@pytest.mark.parametrize("name", SVM_CLASSIFIER_CASES)
def test_svm_vote_table_equals_counting_votes(name, monkeypatch):
    """The label read from the table of decision-sign patterns is the one the counted votes elect."""
    from onnxtext.evaluator.kernels import ml_linear

    _, op, inputs, outputs, feeds, attrs, *_ = next(c for c in CASES if c[0] == name)
    model = make_model(op, inputs, outputs, attrs)
    # every sample of the inputs twice, and rows whose decisions tie the votes (all features equal)
    x = np.vstack([feeds["X"], np.repeat(np.linspace(-2, 2, 9, dtype=np.float32)[:, None], feeds["X"].shape[1], 1)])
    table = Evaluator(model).run(None, {"X": x})
    monkeypatch.setattr(ml_linear, "VOTE_TABLE_PAIRS", 0)
    counted = Evaluator(model).run(None, {"X": x})
    np.testing.assert_array_equal(table[0], counted[0])
    np.testing.assert_array_equal(table[1], counted[1])


def _libsvm_multiclass_probability(r: list, k: int) -> list:
    """libsvm's multiclass_probability (svm.cpp), transcribed line by line for one sample."""
    Q = [[0.0] * k for _ in range(k)]
    p = [1.0 / k] * k
    Qp = [0.0] * k
    for t in range(k):
        for j in range(t):
            Q[t][t] += r[j][t] * r[j][t]
            Q[t][j] = Q[j][t]
        for j in range(t + 1, k):
            Q[t][t] += r[j][t] * r[j][t]
            Q[t][j] = -r[j][t] * r[t][j]
    for _ in range(max(100, k)):
        pQp = 0.0
        for t in range(k):
            Qp[t] = sum(Q[t][j] * p[j] for j in range(k))
            pQp += p[t] * Qp[t]
        if max(abs(Qp[t] - pQp) for t in range(k)) < 0.005 / k:
            break
        for t in range(k):
            diff = (-Qp[t] + pQp) / Q[t][t]
            p[t] += diff
            pQp = (pQp + diff * (diff * Q[t][t] + 2 * Qp[t])) / (1 + diff) / (1 + diff)
            for j in range(k):
                Qp[j] = (Qp[j] + diff * Q[t][j]) / (1 + diff)
                p[j] /= 1 + diff
    return p


@pytest.mark.parametrize("renormalize", [16, 1])
@pytest.mark.parametrize("k, samples, seed", [(2, 5, 0), (3, 40, 1), (4, 30, 2), (6, 20, 3)])
def test_svm_probability_coupling_matches_libsvm(k, samples, seed, renormalize, monkeypatch):
    """The vectorized coupling gives libsvm's probabilities, samples converging after different sweeps
    (and whether or not its homogeneous state is renormalized between sweeps)."""
    from onnxtext.evaluator.kernels import ml_linear
    from onnxtext.evaluator.kernels.ml_linear import _Coupling

    monkeypatch.setattr(ml_linear, "RENORMALIZE_SWEEPS", renormalize)

    rng = np.random.default_rng(seed)
    pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
    # pairwise probabilities from near-certain to undecided, clipped as the kernel clips them
    pr = np.clip(rng.beta(0.4, 0.4, size=(samples, len(pairs))), 1e-7, 1 - 1e-7)
    coupling = _Coupling(k, np.array([i for i, _ in pairs]), np.array([j for _, j in pairs]))
    actual = coupling.probabilities(pr)
    for s in range(samples):
        r = [[0.0] * k for _ in range(k)]
        for (i, j), v in zip(pairs, pr[s].tolist()):
            r[i][j], r[j][i] = v, 1 - v
        np.testing.assert_allclose(actual[s], _libsvm_multiclass_probability(r, k), rtol=1e-9, atol=1e-12)
