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
from onnxtext.evaluator.plan import COMPILE_AFTER

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
    for _ in range(COMPILE_AFTER):  # the plain call first (the usual call is generated at the third)
        ev.run(None, {"s": S, "q": Q, "d": D})
    assert ev._fast_run is not None  # (the generated usual call, run_code.py, covers this model too)
    if isinstance(expected, str):
        with pytest.raises(EvalError, match=expected):
            ev.run(None, feeds)
        return
    t, c, v = ev.run(None, feeds)
    assert t.dtype == object and t.tolist() == expected[0]
    assert int(c) == expected[1] and v.tolist() == [expected[2]]
    if isinstance(feeds["q"], list):
        assert len(feeds["q"]) == expected[1]  # (the caller's list is not the run's)


# The usual call runs as one generated function (onnxtext/evaluator/run_code.py) when every required
# input is a numeric tensor: these models each have something that function must handle as the general
# path does. (text, feeds, expected outputs as lists or an error message); each case runs three times
# (the plan is compiled from the third run on) and on evaluators with the thread count fixed and not.
GENERATED_CASES = [
    # no input at all
    ("g () => (float[2] y) { y = Constant<value = float[2] {1, 2}>() }", {}, [[1, 2]]),
    # an initializer listed as an input, its declared size shared with a feed's: checked on its value
    ("g (float[N] x, float[N] w) => (float[N] y) <float[2] w = {1, 2}> { y = Add(x, w) }",
     {"x": np.float32([1, 1])}, [[2, 3]]),
    ("g (float[N] x, float[N] w) => (float[N] y) <float[2] w = {1, 2}> { y = Add(x, w) }",
     {"x": np.float32([1, 1, 1])}, r"input 'w': dimension 0 \(N\) is 2, but input 'x' dimension 0 gives N = 3"),
    # a symbol shared by two axes of one input, and a fixed size after it
    ("g (float[N, N, 2] x) => (float[N, N, 2] y) { y = Neg(x) }", {"x": np.zeros((2, 2, 2), np.float32)},
     [np.zeros((2, 2, 2)).tolist()]),
    ("g (float[N, N, 2] x) => (float[N, N, 2] y) { y = Neg(x) }", {"x": np.zeros((2, 3, 2), np.float32)},
     r"input 'x': dimension 1 \(N\) is 3, but input 'x' dimension 0 gives N = 2"),
    ("g (float[N, N, 2] x) => (float[N, N, 2] y) { y = Neg(x) }", {"x": np.zeros((2, 2, 3), np.float32)},
     r"input 'x': dimension 2 is 3, but the model declares 2"),
    # a scalar input: a 0-d array, and a numpy scalar (converted by the general path)
    ("g (float x) => (float y) { y = Neg(x) }", {"x": np.array(3, np.float32)}, [-3]),
    ("g (float x) => (float y) { y = Neg(x) }", {"x": np.float32(3)}, [-3]),
    # an output that is an input, and one that is a constant
    ("g (float[2] x) => (float[2] x, float[1] c) <float[1] c = {7}> { }", {"x": np.float32([1, 2])}, [[1, 2], [7]]),
    # a step that fails: named as the general path names it
    ("g (float[2] x, int64[1] s) => (float[?] y) { y = Reshape(x, s) }",
     {"x": np.float32([1, 2]), "s": np.array([5])}, "Reshape"),
    # a feed too many, one of another name
    ("g (float[2] x) => (float[2] y) { y = Neg(x) }", {"x": np.float32([1, 2]), "z": np.float32([1])},
     "'z' is not an input"),
    ("g (float[2] x) => (float[2] y) { y = Neg(x) }", {"z": np.float32([1, 2])}, "'z' is not an input"),
]


def test_every_output_named_takes_the_usual_call_and_a_subset_its_own_plan():
    ev = Evaluator(text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (float[N, 3] x) => (float[N, 3] y, float[N, 3] z) { y = Neg(x)  z = Abs(x) }"""))
    for _ in range(2 * COMPILE_AFTER + 1):  # (the usual call generated at the third, its plan compiled after)
        y, z = ev.run(["y", "z"], {"x": X})
        (z2,) = ev.run(["z"], {"x": X})
        assert np.array_equal(y, -X) and np.array_equal(z, np.abs(X)) and np.array_equal(z2, np.abs(X))
    assert ev._main._scoped  # (the named call ran the main plan, compiled on the feeds themselves)


@pytest.mark.parametrize("threads", [1, None])
@pytest.mark.parametrize("text, feeds, expected", GENERATED_CASES,
                         ids=[f"case{i}" for i in range(len(GENERATED_CASES))])
def test_the_generated_usual_call_accepts_and_refuses_as_the_general_path(text, feeds, expected, threads):
    ev = Evaluator(text_model('<ir_version: 9, opset_import: ["": 18]>\n' + text), threads=threads)
    assert ev._fast_run is None  # (generated at the COMPILE_AFTER-th usual call, below)
    for _ in range(COMPILE_AFTER + 2):
        if isinstance(expected, str):
            with pytest.raises(EvalError, match=expected):
                ev.run(None, feeds)
        else:
            assert [np.asarray(v).tolist() for v in ev.run(None, feeds)] == expected
    assert ev._fast_run is not None  # (these models' inputs are all numeric tensors)
