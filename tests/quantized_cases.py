"""Shared by the quantization rule tests (tests/test_quantized_*.py): the random source and the
small helpers they build cases with."""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(18)
#: the com.microsoft opset of QOperator models (QLinearAdd, QGemm, ...)
MS_OPSET = {"com.microsoft": 1}


def ints(dtype, shape, low=None, high=None) -> np.ndarray:
    """Random integers of ``dtype`` in ``[low, high]`` (the type's range by default)."""
    info = np.iinfo(dtype)
    return RNG.integers(info.min if low is None else low, (info.max if high is None else high) + 1, shape).astype(dtype)


def step_classes(ev) -> list[str]:
    """The class name of each step function of an Evaluator's plan (``function`` for a node's own kernel)."""
    return [type(st.fn).__name__ for st in ev._plan_for(None, ()).steps]
