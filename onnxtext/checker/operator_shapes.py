"""Shape rules onnx's inference leaves to the runtime: Conv channels and groups, Reshape element counts,
GatherElements ranks. Each check takes the node, its input dimensions (``None`` when unknown) and the constant
inputs, and returns a reason or None; only sizes that are known are compared.
"""

from __future__ import annotations

import numpy as np
from onnx import numpy_helper

from .inference import dims


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return list(a.ints) if a.ints else a.i
    return default


def _int(d) -> bool:
    return isinstance(d, int)


def conv(node, types, data):
    x, w = (dims(types.get(n)) if n else None for n in (node.input[0], node.input[1]))
    if not x or not w or len(x) < 3 or len(w) != len(x):
        return None
    group = _attr(node, "group", 1) or 1
    channels = x[1]
    if node.op_type == "ConvTranspose":
        if _int(channels) and _int(w[0]) and channels != w[0]:
            return f"the weight's first dimension {w[0]} differs from the input's {channels} channels"
        return None
    if _int(channels) and _int(w[1]) and channels != w[1] * group:
        return (f"the input has {channels} channels, the weight takes {w[1]} per group "
                f"x group {group} = {w[1] * group}")
    if _int(w[0]) and w[0] % group:
        return f"the weight's {w[0]} output channels do not divide into group {group}"
    kernel = _attr(node, "kernel_shape")
    if kernel and all(_int(d) for d in w[2:]) and list(kernel) != w[2:]:
        return f"kernel_shape {list(kernel)} differs from the weight's spatial dimensions {w[2:]}"
    if len(node.input) > 2 and node.input[2]:
        b = dims(types.get(node.input[2]))
        if b and len(b) == 1 and _int(b[0]) and _int(w[0]) and b[0] != w[0]:
            return f"the bias has {b[0]} values for {w[0]} output channels"
    return None


def reshape(node, types, data):
    x = dims(types.get(node.input[0]))
    shape = data.get(node.input[1]) if len(node.input) > 1 else None
    if x is None or shape is None or not all(_int(d) for d in x):
        return None
    target = numpy_helper.to_array(shape).astype(np.int64).tolist()
    allowzero = _attr(node, "allowzero", 0)
    if not allowzero:
        target = [x[i] if t == 0 and i < len(x) else t for i, t in enumerate(target)]
    count = int(np.prod(x)) if x else 1
    known = [t for t in target if t != -1]
    product = int(np.prod(known)) if known else 1
    if -1 in target:
        if product and count % product:
            return f"{count} elements cannot be shaped as {target} (not a multiple of {product})"
    elif product != count:
        return f"{count} elements cannot be shaped as {target} ({product} elements)"
    return None


def gather_elements(node, types, data):
    x, i = (dims(types.get(n)) for n in node.input[:2])
    if x is not None and i is not None and len(x) != len(i):
        return f"indices have rank {len(i)}, data has rank {len(x)}: they must be equal"
    return None


#: op type -> check, for operators of the default domain
CHECKS = {"Conv": conv, "ConvTranspose": conv, "Reshape": reshape, "GatherElements": gather_elements,
          "ScatterElements": gather_elements}


def problem(node, types, data) -> str | None:
    """A reason the node's input shapes cannot work, beyond what onnx's inference checks."""
    check = CHECKS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    if check is None or len(node.input) < 2:
        return None
    return check(node, types, data)
