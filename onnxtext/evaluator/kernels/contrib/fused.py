"""com.microsoft fusions of float operators: FusedMatMul, FusedConv, FusedGemm.

FusedMatMul is ``alpha * op(A) @ op(B)`` where ``transBatch*`` first moves the leading dimension
behind the other batch dimensions and ``trans*`` swaps the last two. FusedConv is Conv, plus the
optional 4th input ``Z`` (a residual added before the activation), then the activation named by
``activation`` with ``activation_params`` (Relu, Tanh, Sigmoid, LeakyRelu, Clip, HardSigmoid).
FusedGemm is Gemm followed by the same activations.
"""

from __future__ import annotations

import numpy as np

from ....errors import EvalError
from ...registry import kernel
from ..activation import _sigmoid
from ..conv import conv
from ..linalg import _gemm
from . import MS


def _batch_transpose(x, trans_batch, trans):
    if trans_batch and x.ndim > 2:
        order = list(range(1, x.ndim - 1)) + [0, x.ndim - 1]
        x = x.transpose(order)
    if trans:
        x = np.swapaxes(x, -1, -2) if x.ndim >= 2 else x
    return x


@kernel("FusedMatMul", since=1, domain=MS)
def fused_matmul(A, B, *, alpha=1.0, transA=0, transB=0, transBatchA=0, transBatchB=0):
    a = _batch_transpose(A, transBatchA, transA)
    b = _batch_transpose(B, transBatchB, transB)
    y = np.matmul(a, b)
    if alpha != 1.0:
        y = y * np.asarray(alpha, y.dtype)
    return np.asarray(y)


def activate(y, activation, params):
    """``y`` through the activation named as FusedConv/FusedGemm name them."""
    params = list(params or [])
    if not activation or activation == "Identity":
        return y
    if activation == "Relu":
        return np.maximum(y, 0, dtype=y.dtype)
    if activation == "Tanh":
        return np.tanh(y)
    if activation == "Sigmoid":
        return _sigmoid(y.copy())
    if activation == "LeakyRelu":
        alpha = params[0] if params else 0.01
        return np.where(y >= 0, y, y * np.asarray(alpha, y.dtype))
    if activation == "Clip":
        low, high = (params + [-np.inf, np.inf][len(params):])[:2] if params else (-np.inf, np.inf)
        return np.clip(y, np.asarray(low, y.dtype), np.asarray(high, y.dtype))
    if activation == "HardSigmoid":
        alpha, beta = (params + [0.2, 0.5][len(params):])[:2]
        return np.clip(y * np.asarray(alpha, y.dtype) + np.asarray(beta, y.dtype), 0, 1).astype(y.dtype)
    raise EvalError(f"unsupported fused activation {activation!r}")


@kernel("FusedConv", since=1, domain=MS)
def fused_conv(X, W, B=None, Z=None, *, auto_pad="NOTSET", dilations=None, group=1, kernel_shape=None,
               pads=None, strides=None, activation="", activation_params=None):
    y = conv(X, W, B, auto_pad=auto_pad, dilations=dilations, group=group, kernel_shape=kernel_shape,
             pads=pads, strides=strides)
    if Z is not None:
        y = y + Z
    return np.asarray(activate(y, activation, activation_params), dtype=X.dtype)


@kernel("FusedGemm", since=1, domain=MS)
def fused_gemm(A, B, C=None, *, alpha=1.0, beta=1.0, transA=0, transB=0, activation="",
               activation_alpha=0.01, activation_beta=0.5, activation_gamma=0.0):
    y = _gemm(A, B, C, alpha, beta, transA, transB)
    params = {"LeakyRelu": [activation_alpha], "HardSigmoid": [activation_alpha, activation_beta],
              "Clip": [activation_alpha, activation_beta]}.get(activation, [])
    return np.asarray(activate(y, activation, params), dtype=A.dtype)
