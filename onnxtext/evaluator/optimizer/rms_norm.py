"""Rule ``rms_norm``: RMS normalization over the last axis as exporters decompose it (LLaMA, T5:
``Pow 2 -> ReduceMean -> Add eps -> Sqrt -> Div 1 / Reciprocal -> Mul x``) becomes one
:class:`~..fused.normalization.LastAxisRmsNorm` step (the scale Mul after it stays a step: exporters
often put a Cast between them).

Condition: the ReduceMean reduces only the last axis and keeps dimensions; 2, eps and 1 are
one-element constants. Equal up to float rounding (level 2).
"""

from __future__ import annotations

from ..fused.normalization import LastAxisRmsNorm
from ..fused.original import original_steps
from .layer_norm import last_axis_only
from .pattern import PatternRule

_FORM = """rms_norm (x) => (y) {{
  sq = Pow(x, two)
  ms = ReduceMean({m})
  ve = Add(ms, eps)
  r = Sqrt(ve)
  {inv}
  y = Mul(x, inv)
}}"""
FORMS = [_FORM.format(m=m, inv=inv) for m in ("sq", "sq, axes")
         for inv in ("inv = Div(one, r)", "inv = Reciprocal(r)")]
FORMS += [f.replace("  y = Mul(x, inv)", "").replace("inv = Div(one, r)", "y = Div(x, r)")
          for f in FORMS if "Div(one" in f]


def build(match):
    n = match.names
    if not last_axis_only(match, "ms", "axes" if "axes" in n else None) or not match.is_scalar("two", 2.0):
        return None
    if "one" in n and not match.is_scalar("one", 1.0):
        return None
    eps = match.scalar("eps")
    if eps is None:
        return None
    x = n["x"]
    return LastAxisRmsNorm(eps, None, original_steps(match, (x,))), (x,)


RULE = PatternRule("rms_norm", 2, FORMS, build, __doc__)
