"""Rules ``transpose_chain`` and ``reshape_chain``: two Transposes, or two Reshapes, in a row (the
inner result read by nothing else) become one step, as exporters' multi-head attention layouts and
flatten/unflatten pairs write them.

* ``Transpose(Transpose(x, p1), p2)`` is ``Transpose(x, [p1[i] for i in p2])``: one copy instead of
  two. Condition: both perms are given (a missing perm reverses the axes, which needs the rank).
* ``Reshape(Reshape(x, s1), s2)`` is ``Reshape(x, s2)`` when ``s2`` has no 0 (a 0 copies a dimension
  of the inner result) or the outer Reshape has ``allowzero``; checked per call, since ``s2`` is often
  computed from shapes.

Exact (level 1): the same values.
"""

from __future__ import annotations

import numpy as np

from ..fused.original import original_steps
from ..kernels.shape import transpose
from .pattern import PatternRule

TRANSPOSES = """transpose_chain (x) => (y) {
  t = Transpose(x)
  y = Transpose(t)
}"""

RESHAPES = """reshape_chain (x, s1, s2) => (y) {
  t = Reshape(x, s1)
  y = Reshape(t, s2)
}"""


def build_transposes(match):
    p1, p2 = match.attrs("t").get("perm"), match.attrs("y").get("perm")
    if not p1 or not p2 or len(p1) != len(p2):
        return None
    return ComposedTranspose([int(p1[i]) for i in p2]), (match.names["x"],)


class ComposedTranspose:
    """One Transpose by the composition of two perms (the Transpose kernel: a contiguous copy)."""

    __slots__ = ("perm",)

    def __init__(self, perm):
        self.perm = perm

    def __call__(self, x):
        return transpose(x, self.perm)


class ReshapeChain:
    """``x.reshape(s2)`` for a Reshape of a Reshape; the two original steps when ``s2`` holds a 0
    that copies a dimension of the inner result."""

    __slots__ = ("allowzero", "fallback")

    def __init__(self, allowzero: bool, fallback):
        self.allowzero, self.fallback = allowzero, fallback

    def __call__(self, x, s1, s2):
        shape = np.asarray(s2, dtype=np.int64).reshape(-1).tolist()
        if type(x) is not np.ndarray or (not self.allowzero and 0 in shape):
            return self.fallback(x, s1, s2)
        return x.reshape(shape)


def build_reshapes(match):
    n = match.names
    inputs = (n["x"], n["s1"], n["s2"])
    return ReshapeChain(bool(match.attrs("y").get("allowzero", 0)), original_steps(match, inputs)), inputs


TRANSPOSE_RULE = PatternRule("transpose_chain", 1, (TRANSPOSES,), build_transposes, __doc__)
RESHAPE_RULE = PatternRule("reshape_chain", 1, (RESHAPES,), build_reshapes, __doc__)
