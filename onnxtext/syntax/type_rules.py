"""The type rules of the builder (:class:`TypeRules`, a base of :class:`onnxtext.syntax.builder.Builder`): element
types, shapes and dimensions, denotations, and seq/map/optional/sparse/opaque types, each a ``TypeProto``.

A type nested deeper than :data:`MAX_TYPE_NESTING` is refused with an error at its innermost element type.
"""

from __future__ import annotations

from lark import Transformer
from onnx import TensorShapeProto, TypeProto

from .. import dtypes
from .literal_data import _err, unescape
from .raw_strings import join_raw, set_text, text_or_raw


def _opt(children):
    return [c for c in children if c is not None]


class TypeRules(Transformer):
    """Rule methods of the grammar's types (called by lark with the rule's children, and by fastparse)."""

    # (TypeProto, DTYPE token) of the tensor_type rule reduced last. A TypeProto cannot carry a source position
    # (protobuf messages take no extra attributes and cannot be subclassed), and the rules' children must stay
    # as they are (fastparse calls these methods with them), so tensor_constant finds the position of its type
    # here: in `tensor_constant: [annotations] tensor_type [name] "="? tensor_data` no other tensor_type is
    # reduced between the two rules unless the data is sparse(...), and then the identity check fails. A
    # concurrent parse sharing this instance can only make the check fail (no position), never give a wrong one.
    _last_type = (None, None)

    # ------------------------------------------------------------------ types
    def denotation(self, c):
        return text_or_raw(unescape(c[0]))

    def dim(self, c):
        d = TensorShapeProto.Dimension()
        v = c[0]
        if v.type == "INT":
            if not -(1 << 63) <= int(v) < 1 << 63:
                raise _err(f"dimension {v} is beyond int64", v)
            d.dim_value = int(v)
        elif v.type == "IDENT":
            d.dim_param = str(v)
        elif v.type == "STRING":
            set_text(d, "dim_param", text_or_raw(unescape(v)))
        if c[1] is not None:
            set_text(d, "denotation", c[1])
        return d

    def shape(self, c):
        return _opt(c)

    def tensor_type(self, c):
        tp = TypeProto()
        tt = tp.tensor_type
        tt.elem_type = dtypes.BY_NAME[str(c[0])].enum
        shape = c[1]
        if shape is None:
            tt.shape.SetInParent()  # no brackets: a scalar (rank 0), as in onnx's syntax
        elif shape:
            tt.shape.dim.extend(shape)
        # 'float[]' = unknown rank: no shape
        if c[2] is not None:
            set_text(tp, "denotation", c[2])
        self._last_type = (tp, c[0])
        return tp

    def _with_denotation(self, tp, den):
        if den is not None:
            set_text(tp, "denotation", den)
        return tp

    def seq_type(self, c):
        tp = TypeProto()
        tp.sequence_type.SetInParent()
        if c[0] is not None:  # `seq()`: no element type
            _check_type_depth(c[0], self._last_type)
            tp.sequence_type.elem_type.CopyFrom(c[0])
        return self._with_denotation(tp, c[1])

    def map_type(self, c):
        tp = TypeProto()
        tp.map_type.SetInParent()
        try:  # an element type name, or a number that names none (`map(0, float)`), `?`: no key type
            if c[0].type != "QMARK":
                tp.map_type.key_type = dtypes.BY_NAME[str(c[0])].enum if c[0].type == "DTYPE" else int(c[0])
        except ValueError:
            raise _err(f"element type number {c[0]} is not a 32-bit integer", c[0]) from None
        if c[1] is not None:  # `map(int64)`: no value type
            _check_type_depth(c[1], (None, c[0]))
            tp.map_type.value_type.CopyFrom(c[1])
        return self._with_denotation(tp, c[2])

    def optional_type(self, c):
        tp = TypeProto()
        tp.optional_type.SetInParent()
        if c[0] is not None:  # `optional()`: no element type
            _check_type_depth(c[0], self._last_type)
            tp.optional_type.elem_type.CopyFrom(c[0])
        return self._with_denotation(tp, c[1])

    def sparse_type(self, c):
        tp = TypeProto()
        tt = c[0].tensor_type
        st = tp.sparse_tensor_type
        st.elem_type = tt.elem_type
        if tt.HasField("shape"):
            st.shape.CopyFrom(tt.shape)
        if c[0].denotation:
            raise _err("put the denotation after sparse_tensor(...)")
        return self._with_denotation(tp, c[1])

    def sparse_untyped_type(self, c):
        # `sparse_tensor(tensor[10])`, `sparse_tensor(tensor(0))`: no element type, or a number that names none
        inner = self.untyped_tensor([c[0], c[1], None]).tensor_type
        tp = TypeProto()
        st = tp.sparse_tensor_type
        st.SetInParent()
        if inner.HasField("elem_type"):
            st.elem_type = inner.elem_type
        if inner.HasField("shape"):
            st.shape.CopyFrom(inner.shape)
        return self._with_denotation(tp, c[2])

    def dotted(self, c):
        return join_raw(".", c)

    def opaque_type(self, c):
        # opaque(a.b.c) -> name only; opaque(dom.ain, name) -> domain and name (onnx's rule)
        tp = TypeProto()
        tp.opaque_type.SetInParent()
        first, second, den = c
        if second is not None:
            set_text(tp.opaque_type, "domain", first or "")
            set_text(tp.opaque_type, "name", second)
        elif first:
            set_text(tp.opaque_type, "name", first)
        return self._with_denotation(tp, den)

    def untyped_tensor(self, c):
        # `tensor`: no element type, no shape; `tensor[2, N]`: a shape without element type; `tensor[]`: a
        # rank-0 shape without element type (a scalar's shape, which `float` writes without brackets);
        # `tensor(0)`, `tensor(99)[N]`: an element type number that is no type (UNDEFINED, unknown)
        tp = TypeProto()
        tp.tensor_type.SetInParent()
        if c[0] is not None:
            try:
                tp.tensor_type.elem_type = int(c[0])
            except ValueError:
                raise _err(f"element type number {c[0]} is not a 32-bit integer", c[0]) from None
        if c[1] is not None:
            tp.tensor_type.shape.SetInParent()
            tp.tensor_type.shape.dim.extend(c[1])
        self._last_type = (tp, c[0])  # the number's token, when written (a deep seq(...) around it: its position)
        return self._with_denotation(tp, c[2])

    def empty_type(self, c):
        tp = TypeProto()
        self._last_type = (tp, None)
        return self._with_denotation(tp, c[0])


# seq(...), optional(...) and map(..., ...) types nest at most this deep: onnx itself decodes about 48 (protobuf's
# limit of 100 message levels, two per type), and each level copies the one inside, so 10,000 took seconds
MAX_TYPE_NESTING = 100


def _check_type_depth(inner: TypeProto, last_type) -> None:
    """Refuse a type nested deeper than MAX_TYPE_NESTING. The error points at the innermost element type (the
    DTYPE token of the last ``tensor_type`` reduced, ``last_type``, when that type is the innermost one: the
    transformer's children carry no position of the seq/optional keywords)."""
    depth, tp = 1, inner
    while depth <= MAX_TYPE_NESTING:
        kind = tp.WhichOneof("value")
        if kind == "sequence_type":
            tp = tp.sequence_type.elem_type
        elif kind == "optional_type":
            tp = tp.optional_type.elem_type
        elif kind == "map_type":
            tp = tp.map_type.value_type
        else:
            return
        depth += 1
    while tp.WhichOneof("value") in ("sequence_type", "optional_type", "map_type"):
        kind = tp.WhichOneof("value")
        tp = tp.map_type.value_type if kind == "map_type" else getattr(tp, kind).elem_type
    innermost, token = last_type
    at = token if innermost is None or innermost == tp else None
    raise _err(f"types nested more than {MAX_TYPE_NESTING} deep (seq, optional, map): onnx itself reads about 48 "
               f"(protobuf's limit of 100 message levels); onnxtext.syntax.type_rules.MAX_TYPE_NESTING sets the limit",
               at)
