"""Rule ``layer_norm``: LayerNormalization over the last axis as exporters decompose it
(``ReduceMean -> Sub -> Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div``, then ``Mul`` by a constant
scale and ``Add`` of a constant bias, or not) becomes one
:class:`~..fused.normalization.LastAxisLayerNorm` step.

Condition: both ReduceMeans reduce only the last axis (attribute before opset 18, constant input
from 18) and keep dimensions; eps, 2 are one-element constants; scale and bias are constants that
broadcast along the last axis only. Equal up to float rounding (level 2).

The LayerNormalization operator itself (opset 17: torch dynamo's exports) over axis -1, float32 stash,
constant 1-D float32 scale (and bias), with only its first output, becomes the same step: the kernel's
statistics outputs and attribute handling go.
"""

from __future__ import annotations

import numpy as np

from ..fused.normalization import LastAxisLayerNorm
from ..fused.original import original_steps
from .pattern import PatternRule

_FORM = """layer_norm (x) => (y) {{
  mean = ReduceMean({m})
  d = Sub(x, mean)
  sq = Pow(d, two)
  var = ReduceMean({v})
  ve = Add(var, eps)
  std = Sqrt(ve)
  {tail}
}}"""
AFFINE = "n = Div(d, std)\n  s = Mul(n, scale)\n  y = Add(s, bias)"
PLAIN = "y = Div(d, std)"
FORMS = [_FORM.format(m=m, v=v, tail=tail) for tail in (AFFINE, PLAIN)
         for m, v in (("x", "sq"), ("x, axes1", "sq, axes2"))]
#: the operator itself (opset 17, torch dynamo's exports) with constant scale (and bias) over the last
#: axis, only its first output read: the fused step saves its statistics outputs and attribute handling
FORMS += ["layer_norm_op (x) => (y) {\n  y = LayerNormalization(x, op_scale, op_bias)\n}",
          "layer_norm_op (x) => (y) {\n  y = LayerNormalization(x, op_scale)\n}"]


def last_axis_only(match, value: str, axes_name: str | None) -> bool:
    """True when the ReduceMean computing ``value`` reduces the last axis only, keeping dims."""
    attrs = match.attrs(value)
    if not attrs.get("keepdims", 1):
        return False
    axes = match.constant(axes_name) if axes_name else attrs.get("axes")
    return axes is not None and list(np.asarray(axes).reshape(-1)) == [-1]


def along_last_axis(c) -> bool:
    """A constant that broadcasts along the last axis only (shape (..., 1, n) or (n,))."""
    c = np.asarray(c)
    return c.dtype.kind == "f" and c.ndim >= 1 and all(d == 1 for d in c.shape[:-1])


def build_operator(match):
    """The LayerNormalization node form: axis -1, stash in the input's type (float32), 1-D scale/bias."""
    n = match.names
    attrs = match.attrs("y")
    info = match.info("y")
    scale, bias = match.constant("op_scale"), match.constant("op_bias") if "op_bias" in n else None
    if attrs.get("axis", -1) != -1 or attrs.get("stash_type", 1) != 1 or len(info.node.output) > 1 or \
            scale.dtype != np.float32 or scale.ndim != 1 or \
            (bias is not None and (bias.dtype != np.float32 or bias.shape != scale.shape)):
        return None
    x = n["x"]
    return LastAxisLayerNorm(float(attrs.get("epsilon", 1e-5)), scale, bias, original_steps(match, (x,))), (x,)


def build(match):
    n = match.names
    if "op_scale" in n:
        return build_operator(match)
    with_axes = "axes1" in n
    if not (last_axis_only(match, "mean", "axes1" if with_axes else None) and
            last_axis_only(match, "var", "axes2" if with_axes else None) and match.is_scalar("two", 2.0)):
        return None
    eps = match.scalar("eps")
    if eps is None:
        return None
    scale = bias = None
    if "scale" in n:
        scale, bias = match.constant("scale"), match.constant("bias")
        if not (along_last_axis(scale) and along_last_axis(bias)):
            return None
        scale, bias = scale.reshape(-1), bias.reshape(-1)
    x = n["x"]
    return LastAxisLayerNorm(eps, scale, bias, original_steps(match, (x,))), (x,)


RULE = PatternRule("layer_norm", 2, FORMS, build, __doc__)
