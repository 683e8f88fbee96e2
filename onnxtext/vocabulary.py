"""The words of the language that both directions read: attribute type names, header keys, and which
operator attributes are spelled as element type names.

The parser (:mod:`onnxtext.syntax`), the printer (:mod:`onnxtext.printing`), the Pygments lexer and the
editor grammars all take these tables from here, so neither direction imports the other for them.
"""

from __future__ import annotations

import functools
import re

from onnx import AttributeProto

# `name: ints = [...]`: the declared attribute type names, text -> AttributeProto.AttributeType
ATTR_TYPES = {
    "float": AttributeProto.FLOAT, "int": AttributeProto.INT, "string": AttributeProto.STRING,
    "tensor": AttributeProto.TENSOR, "graph": AttributeProto.GRAPH, "sparse_tensor": AttributeProto.SPARSE_TENSOR,
    "type_proto": AttributeProto.TYPE_PROTO, "floats": AttributeProto.FLOATS, "ints": AttributeProto.INTS,
    "strings": AttributeProto.STRINGS, "tensors": AttributeProto.TENSORS, "graphs": AttributeProto.GRAPHS,
    "sparse_tensors": AttributeProto.SPARSE_TENSORS, "type_protos": AttributeProto.TYPE_PROTOS,
}
ATTR_TYPE_NAMES = {v: k for k, v in ATTR_TYPES.items()}

# the keys a `< ... >` header may hold, per message
MODEL_HEADER = frozenset({"ir_version", "opset_import", "producer_name", "producer_version", "domain",
                          "model_version", "doc_string", "metadata_props", "configuration"})
FUNCTION_HEADER = frozenset({"domain", "opset_import", "doc_string", "overload", "metadata_props"})


# ---------------------------------------------------------------------------------------------- type-name attributes
# `Cast <to = float>`: INT attributes whose value is a TensorProto element type print and parse as type names.
# Which ones: every INT attribute of an onnx.defs schema (any version) whose documentation says its value is a
# data type in its first sentence (Cast.to, EyeLike.dtype, the Random* dtype, QuantizeLinear.output_dtype,
# LayerNormalization's stash_type, ...), read from the schemas rather than kept as a hand list. Unknown operators and custom
# domains keep integers.
_DATA_TYPE_DOC = re.compile(r"data ?type|DataType|TensorProto|precision|\bType of\b")


@functools.cache
def _element_type_attributes() -> dict:
    import onnx.defs

    table: dict = {}
    for s in onnx.defs.get_all_schemas_with_history():
        for a in s.attributes.values():
            first_sentence = a.description.split(". ", 1)[0]
            if a.type == onnx.defs.OpSchema.AttrType.INT and _DATA_TYPE_DOC.search(first_sentence):
                table.setdefault(("" if s.domain == "ai.onnx" else s.domain, s.name), set()).add(a.name)
    return {k: frozenset(v) for k, v in table.items()}


_NONE: frozenset = frozenset()


def element_type_attributes(domain: str, op_type: str) -> frozenset:
    """Names of the attributes of ``domain.op_type`` whose INT value is an element type (printed ``float``)."""
    return _element_type_attributes().get(("" if domain == "ai.onnx" else domain, op_type), _NONE)
