"""What ``Evaluator.run`` does with its feeds before the first step (onnxtext/evaluator/runtime.py):
the usual call (every required input an ndarray of exactly the declared type and rank) takes a fast
path; every other call goes through ``check_input``, which converts or refuses each feed. Each case
below is run on one Evaluator after a plain call, so a fast path that let something through, or that
a previous call primed, would show; the expected results are numpy's own arithmetic on the feeds."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import text_model

from onnxtext import Evaluator
from onnxtext.errors import EvalError

MODEL = text_model("""<ir_version: 9, opset_import: ["": 18]>
g (float[N, 3] x, int64[N] n, float[3] w) => (float[N, 3] y, int64[N] m) <float[3] w = {1.0, 2.0, 3.0}> {
  y = Add(x, w)
  m = Neg(n)
}""")

X = np.arange(6, dtype=np.float32).reshape(2, 3)
N = np.array([4, 5], np.int64)


class Sub(np.ndarray):
    """An ndarray subclass: not the exact type the fast path takes, still a valid feed."""


# (feeds, expected y or an error message)
CASES = [
    ({"x": X, "n": N}, X + np.float32([1, 2, 3])),
    ({"x": X[:, ::-1], "n": N}, X[:, ::-1] + np.float32([1, 2, 3])),  # a strided view is a valid array
    ({"x": X.view(Sub), "n": N}, X + np.float32([1, 2, 3])),
    ({"x": X.tolist(), "n": N.tolist()}, X + np.float32([1, 2, 3])),  # lists take the declared types
    ({"x": X, "n": N, "w": np.float32([0, 0, 0])}, X),  # an initializer listed as an input, fed
    ({"x": X.astype(np.float64), "n": N}, "input 'x': expected element type float, got float64"),
    ({"x": X, "n": N.astype(np.int32)}, "input 'n': expected element type int64, got int32"),
    ({"x": X.reshape(6), "n": N}, r"input 'x': expected rank 2, got shape \[6\]"),
    ({"x": X.reshape(3, 2), "n": N}, r"input 'x': dimension 1 is 2, but the model declares 3"),
    ({"x": X, "n": np.array([1, 2, 3], np.int64)}, r"input 'n': dimension 0 \(N\) is 3"),
    ({"x": X}, "missing input 'n'"),
    ({"x": X, "w": np.float32([0, 0, 0])}, "missing input 'n'"),  # as many feeds as inputs, one is not
    ({"x": X, "n": N, "z": N}, "'z' is not an input"),
    ({"x": X, "z": N}, "'z' is not an input"),
    ({"x": None, "n": N}, "input 'x': expected a numpy array, got NoneType"),
]


@pytest.mark.parametrize("feeds, expected", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_feeds_before_the_first_step(feeds, expected):
    ev = Evaluator(MODEL)
    ev.run(None, {"x": X, "n": N})  # the plain call first
    if isinstance(expected, str):
        with pytest.raises(EvalError, match=expected):
            ev.run(None, feeds)
    else:
        y, m = ev.run(None, feeds)
        assert y.dtype == np.float32 and np.array_equal(y, expected)
        assert np.array_equal(m, -np.asarray(feeds["n"]))
    y, _ = ev.run(None, {"x": X, "n": N})  # and the plain call still right after it
    assert np.array_equal(y, X + np.float32([1, 2, 3]))


def test_selected_outputs_and_float_warnings():
    ev = Evaluator(text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (float[2] x) => (float[2] y, float[2] z) { y = Log(x)  z = Div(x, x) }"""))
    import warnings

    with np.errstate(divide="raise", invalid="warn"):
        before = np.geterr()
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # inf and nan are values, not warnings, during a run
            (z,) = ev.run(["z"], {"x": np.float32([0, 2])})
        assert np.geterr() == before  # the caller's error state is back after the run
    assert np.isnan(z[0]) and z[1] == 1
    failing = Evaluator(text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (float[2] x, int64[1] s) => (float[?] y) { y = Reshape(x, s) }"""))
    with np.errstate(divide="raise"):
        with pytest.raises(EvalError, match="Reshape"):  # a step fails inside the run
            failing.run(None, {"x": np.float32([1, 2]), "s": np.array([5])})
        assert np.geterr()["divide"] == "raise"  # ... and the caller's error state is back too
