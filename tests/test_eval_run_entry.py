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


# The fast check also covers string tensors (numpy str/bytes arrays become object arrays, as check_input
# makes them), maps (dicts) and sequences of numeric tensors; anything else falls back to check_input.
MIXED = text_model("""<ir_version: 9, opset_import: ["": 18, "ai.onnx.ml": 3]>
g (string[N] s, seq(float[3]) q, map(int64, float) d) => (string[N] t, int64 c, float[?, ?] v) {
  t = Identity(s)
  c = SequenceLength(q)
  v = ai.onnx.ml.DictVectorizer<int64_vocabulary = [1, 2, 3]>(d)
}""")
S = np.array(["ab", "c"])
Q = [np.zeros(3, np.float32), np.ones(3, np.float32)]
D = {2: 1.5}

# (feeds, expected (t as a list, c, v row) or an error message)
MIXED_CASES = [
    ({"s": S, "q": Q, "d": D}, (["ab", "c"], 2, [0, 1.5, 0])),
    ({"s": S.astype(object), "q": Q, "d": D}, (["ab", "c"], 2, [0, 1.5, 0])),
    ({"s": np.array([b"ab", b"c"]), "q": Q, "d": D}, ([b"ab", b"c"], 2, [0, 1.5, 0])),
    ({"s": ["ab", "c"], "q": tuple(Q), "d": D}, (["ab", "c"], 2, [0, 1.5, 0])),  # converted by check_input
    ({"s": S, "q": [], "d": {}}, (["ab", "c"], 0, [0, 0, 0])),
    ({"s": S[:, None], "q": Q, "d": D}, r"input 's': expected rank 1, got shape \[2, 1\]"),
    ({"s": np.float32([1, 2]), "q": Q, "d": D}, "input 's': expected a string tensor, got float32"),
    ({"s": S, "q": [Q[0].astype(np.float64)], "d": D}, r"input 'q\[0\]': expected element type float, got float64"),
    ({"s": S, "q": [Q[0][None]], "d": D}, r"input 'q\[0\]': expected rank 1, got shape \[1, 3\]"),
    ({"s": S, "q": Q[0], "d": D}, "input 'q': expected a sequence"),
    ({"s": S, "q": Q, "d": [(2, 1.5)]}, "input 'd': expected a map"),
    ({"s": S, "q": Q}, "missing input 'd'"),
]


@pytest.mark.parametrize("feeds, expected", MIXED_CASES, ids=[f"case{i}" for i in range(len(MIXED_CASES))])
def test_string_map_and_sequence_feeds(feeds, expected):
    ev = Evaluator(MIXED)
    assert ev._plain_feeds is not None  # (the fast check covers this model's inputs)
    ev.run(None, {"s": S, "q": Q, "d": D})  # the plain call first
    if isinstance(expected, str):
        with pytest.raises(EvalError, match=expected):
            ev.run(None, feeds)
        return
    t, c, v = ev.run(None, feeds)
    assert t.dtype == object and t.tolist() == expected[0]
    assert int(c) == expected[1] and v.tolist() == [expected[2]]
    if isinstance(feeds["q"], list):
        assert len(feeds["q"]) == expected[1]  # (the caller's list is not the run's)
