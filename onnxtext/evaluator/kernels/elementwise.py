"""Element-wise arithmetic kernels (seed module; the evaluator work extends this family)."""

import numpy as np

from ..registry import kernel


@kernel("Add", since=7)
def add(a, b):
    return np.add(a, b)


@kernel("Relu", since=6)
def relu(x):
    return np.maximum(x, np.zeros((), x.dtype))
