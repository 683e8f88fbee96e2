"""Checking the feeds' dimensions against the declared input shapes, as onnxruntime does and more.

A feed whose dimension contradicts a fixed declared size (``float[N, 4]`` fed ``[2, 5]``), or two feeds
(or two axes) that give one symbol different sizes (``x: float[N, 4]`` and ``mask: int64[N]`` fed
batch 2 and 3), is refused with a message naming the input, the axis and the other occurrence.
:class:`DimensionCheck` is built once per model from the declared types; :meth:`DimensionCheck.check`
costs a few list look-ups per constrained axis, nothing for inputs declared without a shape.
"""

from __future__ import annotations

from ..errors import EvalError


class DimensionCheck:
    """The fixed sizes and symbols of every tensor input, checked together against one run's feeds."""

    def __init__(self, input_types: dict):
        # (input name, [(axis, size or None, symbol or None)]) for inputs with at least one constraint
        self.constraints = []
        for name, tp in input_types.items():
            if tp.WhichOneof("value") != "tensor_type" or not tp.tensor_type.HasField("shape"):
                continue
            # a negative dim_value and a symbol without a letter or digit ("?", which Paddle's exporter writes
            # for every unknown axis) mean unknown, as they do in onnxruntime; a dim_param that is not UTF-8
            # (bytes) still names its symbol
            axes = [(axis, d.dim_value if d.HasField("dim_value") and d.dim_value >= 0 else None,
                     d.dim_param if isinstance(d.dim_param, bytes) or any(c.isalnum() for c in d.dim_param) else None)
                    for axis, d in enumerate(tp.tensor_type.shape.dim)]
            axes = [a for a in axes if a[1] is not None or a[2] is not None]
            if axes:
                self.constraints.append((name, axes))

    def check(self, env: dict) -> None:
        """Raise an EvalError for the first feed in ``env`` contradicting a declared size or symbol."""
        seen: dict = {}  # symbol -> (size, input name, axis)
        for name, axes in self.constraints:
            value = env.get(name)
            shape = getattr(value, "shape", None)
            if shape is None:
                continue
            for axis, size, symbol in axes:
                if axis >= len(shape):
                    break  # (rank errors are reported by check_input)
                got = shape[axis]
                if size is not None and got != size:
                    raise EvalError(f"input {name!r}: dimension {axis} is {got}, but the model declares "
                                    f"{size} (shape {list(shape)})")
                if symbol is not None:
                    first = seen.setdefault(symbol, (got, name, axis))
                    if first[0] != got:
                        raise EvalError(f"input {name!r}: dimension {axis} ({symbol}) is {got}, but input "
                                        f"{first[1]!r} dimension {first[2]} gives {symbol} = {first[0]}")
