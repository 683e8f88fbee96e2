"""Rule ``space_to_depth_slices`` (YOLOv5's Focus as one copy) beyond its fixtures: every order of the four
phases and several dtypes against numpy's own slicing, odd sizes failing as the nodes do, and a table of
graphs the rule must leave alone (each still computing what ``optimize=0`` computes). To add a case, add
a line to ``NOT_MATCHED``: what it shows and the text replacing the four phase Slices and the Concat."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import text_model

from onnxtext import Evaluator
from onnxtext.errors import OnnxTextError
from onnxtext.evaluator.fused.space_to_depth import PhaseConcat

HEAD = """<ir_version: 8, opset_import: ["": 13]>
g ({dtype}[N, C, H, W] x) => ({dtype}[N, D, P, Q] y) {{
  zero = Constant <value = int64[1] {{0}}> ()
  one = Constant <value = int64[1] {{1}}> ()
  end = Constant <value = int64[1] {{9223372036854775807}}> ()
  rows = Constant <value = int64[1] {{2}}> ()
  cols = Constant <value = int64[1] {{3}}> ()
  two = Constant <value = int64[1] {{2}}> ()
  axes = Constant <value = int64[2] {{2, 3}}> ()
  steps = Constant <value = int64[2] {{2, 2}}> ()
  ends = Constant <value = int64[2] {{9223372036854775807, 9223372036854775807}}> ()
  s00 = Constant <value = int64[2] {{0, 0}}> ()
  s01 = Constant <value = int64[2] {{0, 1}}> ()
  s10 = Constant <value = int64[2] {{1, 0}}> ()
  s11 = Constant <value = int64[2] {{1, 1}}> ()
{body}
}}"""

PHASES = "\n".join(f"  p{r}{c} = Slice(x, s{r}{c}, ends, axes, steps)" for r in (0, 1) for c in (0, 1))


def model(body: str, dtype: str = "float"):
    return text_model(HEAD.format(dtype=dtype, body=body))


def fused_steps(ev) -> list:
    return [st for st in ev._plan_for(None, ()).steps if type(st.fn) is PhaseConcat]


def numpy_phases(x, order):
    return np.concatenate([x[:, :, r::2, c::2] for r, c in order], axis=1)


@pytest.mark.parametrize("order", list(itertools.permutations([(0, 0), (0, 1), (1, 0), (1, 1)])),
                         ids=lambda o: "-".join(f"{r}{c}" for r, c in o))
def test_every_order_of_the_phases(order):
    body = PHASES + f"\n  y = Concat <axis = 1> ({', '.join(f'p{r}{c}' for r, c in order)})"
    ev = Evaluator(model(body))
    assert len(fused_steps(ev)) == 1
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 8)).astype(np.float32)
    (y,) = ev.run(None, {"x": x})
    np.testing.assert_array_equal(y, numpy_phases(x, order))


@pytest.mark.parametrize("dtype, np_dtype", [("double", np.float64), ("int8", np.int8), ("uint16", np.uint16),
                                             ("bool", np.bool_)])
def test_dtypes(dtype, np_dtype):
    order = [(0, 0), (1, 0), (0, 1), (1, 1)]
    ev = Evaluator(model(PHASES + "\n  y = Concat <axis = 1> (p00, p10, p01, p11)", dtype))
    assert len(fused_steps(ev)) == 1
    x = (np.arange(2 * 2 * 4 * 6) % 7).reshape(2, 2, 4, 6).astype(np_dtype)
    (y,) = ev.run(None, {"x": x})
    assert y.dtype == np_dtype
    np.testing.assert_array_equal(y, numpy_phases(x, order))


@pytest.mark.parametrize("shape", [(1, 2, 5, 4), (1, 2, 4, 7)])
def test_odd_sizes_fail_as_the_nodes_do(shape):
    """Odd height or width: phases of different sizes, which Concat refuses; the fused step runs the
    original steps and fails with the message of ``optimize=0`` (prefixed by the fused step's node)."""
    m = model(PHASES + "\n  y = Concat <axis = 1> (p00, p01, p10, p11)")
    x = np.zeros(shape, np.float32)
    messages = []
    for ev in (Evaluator(m), Evaluator(m, optimize=0)):
        with pytest.raises(OnnxTextError) as info:
            ev.run(None, {"x": x})
        messages.append(str(info.value))
    assert "Concat" in messages[1] and messages[1] in messages[0]


def test_another_rank_runs_the_original_steps():
    """Axes 2 and 3 of a 5-D tensor are not its last two: the original steps slice what the nodes slice."""
    m = text_model(HEAD.format(dtype="float", body=PHASES + "\n  y = Concat <axis = 1> (p00, p01, p10, p11)")
                   .replace("float[N, C, H, W] x", "float[N, C, H, W, V] x").replace("[N, D, P, Q] y", "[N, D, P, Q, V] y"))
    ev = Evaluator(m)
    assert len(fused_steps(ev)) == 1
    x = np.random.default_rng(1).standard_normal((1, 2, 4, 6, 3)).astype(np.float32)
    (y,) = ev.run(None, {"x": x})
    np.testing.assert_array_equal(y, np.concatenate([x[:, :, r::2, c::2] for r, c in
                                                     [(0, 0), (0, 1), (1, 0), (1, 1)]], axis=1))


def variant(definitions: str, p11: str) -> str:
    """The four phases concatenated with ``p11`` computed by ``p11`` after ``definitions``."""
    return f"  {definitions}\n" + PHASES.replace("Slice(x, s11, ends, axes, steps)", p11) + \
        "\n  y = Concat <axis = 1> (p00, p01, p10, p11)"


# what the case shows, the phase Slices and Concat (y the output)
NOT_MATCHED = [
    ("three phases and one twice", PHASES + "\n  y = Concat <axis = 1> (p00, p01, p10, p00)"),
    ("only three inputs", PHASES + "\n  y = Concat <axis = 1> (p00, p01, p10)"),
    ("five inputs", PHASES + "\n  y = Concat <axis = 1> (p00, p01, p10, p11, p00)"),
    ("concatenated on another axis", PHASES + "\n  y = Concat <axis = 0> (p00, p01, p10, p11)"),
    ("a phase also read by another node",
     PHASES + "\n  c = Concat <axis = 1> (p00, p01, p10, p11)\n  n = Neg(p11)\n  y = Concat <axis = 1> (c, n)"),
    ("a shared row Slice also read by another node",
     """  even = Slice(x, zero, end, rows, two)
  odd = Slice(x, one, end, rows, two)
  a = Slice(even, zero, end, cols, two)
  b = Slice(even, one, end, cols, two)
  c = Slice(odd, zero, end, cols, two)
  d = Slice(odd, one, end, cols, two)
  s = Concat <axis = 1> (a, b, c, d)
  t = Concat <axis = 1> (s, even)
  y = Identity(s)"""),
    ("step 3 on the columns", variant("three = Constant <value = int64[2] {2, 3}> ()",
                                      "Slice(x, s11, ends, axes, three)")),
    ("start 2 on the rows", variant("s21 = Constant <value = int64[2] {2, 1}> ()", "Slice(x, s21, ends, axes, steps)")),
    ("rows only (no column Slice)",
     """  a = Slice(x, zero, end, rows, two)
  b = Slice(x, one, end, rows, two)
  c = Slice(x, zero, end, rows, two)
  d = Slice(x, one, end, rows, two)
  y = Concat <axis = 1> (a, b, c, d)"""),
    ("the rows sliced twice",
     """  a0 = Slice(x, zero, end, rows, two)
  a = Slice(a0, zero, end, rows, two)
  b = Slice(x, s01, ends, axes, steps)
  c = Slice(x, s10, ends, axes, steps)
  d = Slice(x, s11, ends, axes, steps)
  y = Concat <axis = 1> (a, b, c, d)"""),
    ("the channels sliced too", variant("""c11 = Constant <value = int64[3] {1, 1, 0}> ()
  e3 = Constant <value = int64[3] {1000, 1000, 1000}> ()
  a3 = Constant <value = int64[3] {2, 3, 1}> ()
  t3 = Constant <value = int64[3] {2, 2, 1}> ()""", "Slice(x, c11, e3, a3, t3)")),
    ("an end before the edge (-1)", variant("short = Constant <value = int64[2] {1000, -1}> ()",
                                            "Slice(x, s11, short, axes, steps)")),
    ("phases of two different images", variant("x2 = Neg(x)", "Slice(x2, s11, ends, axes, steps)")),
    ("bounds computed at run time", variant("sh = Shape(x)\n  fed = Slice(sh, zero, two)",
                                            "Slice(x, s11, ends, axes, fed)")),
]


@pytest.mark.parametrize("what, body", NOT_MATCHED, ids=[c[0] for c in NOT_MATCHED])
def test_not_matched(what, body):
    m = model(body)
    ev = Evaluator(m)
    assert not fused_steps(ev), what
    x = np.random.default_rng(2).standard_normal((2, 4, 6, 8)).astype(np.float32)
    try:
        want = Evaluator(m, optimize=0).run(None, {"x": x})
    except OnnxTextError as e:  # (Concats of unequal parts fail: then the optimized plan fails the same way)
        with pytest.raises(OnnxTextError) as info:
            ev.run(None, {"x": x})
        assert str(e) in str(info.value)
        return
    got = ev.run(None, {"x": x})
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)
