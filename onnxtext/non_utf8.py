"""String fields of a loaded model that are not UTF-8: finding them, and a copy that shows them as text.

onnx.proto's string fields are proto2 strings, which protobuf does not check: a binary can hold any bytes in
them, and Python's protobuf returns such a field as ``bytes`` (a valid one as ``str``). The printer writes them
as ``\\xHH`` escapes and the parser sets them back through wire bytes (:mod:`onnxtext.syntax.raw_strings`), so
the text keeps them exactly; ``check`` reports them (``proto.invalid-utf8``, from :func:`find`). Tools that only
show a model (``view``) take :func:`escaped`, in which each such field holds its ``\\xHH`` text instead.
"""

from __future__ import annotations

from google.protobuf.descriptor import FieldDescriptor
from onnx import TensorProto

#: repeated fields whose elements the checker's paths name by their name (``graph.input[x]``), not by index
NAMED = frozenset({"input", "output", "value_info", "initializer", "attribute", "sparse_initializer"})

_STRING, _MESSAGE = FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_MESSAGE
_TENSOR = TensorProto.DESCRIPTOR
#: the fields of a TensorProto that hold strings, or messages that do (its data fields are numbers or bytes)
_TENSOR_STRINGS = [fd for fd in _TENSOR.fields if fd.type == _STRING or fd.message_type is not None]


def path_key(v, i: int):
    """How a checker path names element ``i`` of a repeated message field: by its name (bytes that are not UTF-8
    as the text's positions name them), or by index."""
    name = getattr(v, "name", None)
    if isinstance(name, bytes):
        name = name.decode("utf-8", "replace")
    return name if name else i


def find(msg, path: str = ""):
    """(path of the field, message, field name, index or None, bytes) of every string field inside ``msg`` that
    is not UTF-8, in field order. Paths are the checker's (``graph.node[0].input[1]``, ``graph.input[x].name``)."""
    if msg.DESCRIPTOR is _TENSOR:  # its string fields only: ListFields would copy the weights out
        fields = [(fd, getattr(msg, fd.name)) for fd in _TENSOR_STRINGS if fd.is_repeated or msg.HasField(fd.name)]
    else:
        fields = msg.ListFields()
    for fd, value in fields:
        t = fd.type
        if t == _STRING:
            at = f"{path}.{fd.name}" if path else fd.name  # the field's own position, when the text has one
            if fd.is_repeated:
                for i, v in enumerate(value):
                    if isinstance(v, bytes):
                        yield f"{at}[{i}]", msg, fd.name, i, v
            elif isinstance(value, bytes):
                yield at, msg, fd.name, None, value
        elif t == _MESSAGE:
            sub = f"{path}.{fd.name}" if path else fd.name
            if fd.is_repeated:
                named = fd.name in NAMED
                sparse = fd.message_type.name == "SparseTensorProto"  # named by its values' name in the text
                for i, v in enumerate(value):
                    key = (path_key(v.values, i) if sparse else path_key(v, i)) if named else i
                    yield from find(v, f"{sub}[{key}]")
            else:
                yield from find(value, sub)


def shown(value) -> str:
    """A string field's value as text: bytes that are not UTF-8 with ``\\xHH`` escapes."""
    return value if isinstance(value, str) else value.decode("utf-8", "backslashreplace")


def escaped(model):
    """``model`` itself when all its string fields are UTF-8, else a copy in which each one that is not holds its
    ``\\xHH`` text (:func:`shown`): the same text everywhere the same bytes stand, so values stay connected."""
    found = next(find(model), None)
    if found is None:
        return model
    copy = type(model)()
    copy.CopyFrom(model)
    for _, msg, field, index, value in list(find(copy)):
        if index is None:
            setattr(msg, field, shown(value))
        else:
            getattr(msg, field)[index] = shown(value)
    return copy
