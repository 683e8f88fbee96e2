"""The words of the language that both directions read: attribute type names and header keys (which
operator attributes are spelled as element type names is operator knowledge: :mod:`onnxtext.schemas`).

The parser (:mod:`onnxtext.syntax`), the printer (:mod:`onnxtext.printing`), the Pygments lexer and the
editor grammars all take these tables from here, so neither direction imports the other for them.
"""

from __future__ import annotations

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
