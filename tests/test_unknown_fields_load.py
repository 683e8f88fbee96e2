"""load()'s unknown-field check from the file's bytes (issue 23 follow-up): it decodes the bytes a second time
without unknown fields instead of copying the model, and skips the size comparison when that decoding
serializes back to the file. These cases pin that it still says yes exactly when the binary holds fields
onnx.proto does not describe, whatever the byte layout: as protobuf writes them (unknown fields at the end,
so the file is canonical), interleaved with known ones, or in a file that is not canonical for other reasons
(fields out of order, a scalar written twice, an overlong varint) and holds none.

Add a case by adding a line to ``LAYOUTS`` (bytes of a model, and whether they hold unknown fields), or to
test_total_printer.HOSTILE (every proto.unknown-fields case there runs here too).
"""

from __future__ import annotations

import warnings

import onnx
import pytest
from test_total_printer import HOSTILE, _model, hostile_model, wire

import onnxtext
from onnxtext.wireformat import UnknownFieldsWarning, any_unknown

UNKNOWN_CASES = [(name, edit, big) for name, edit, rule in HOSTILE if rule == "proto.unknown-fields"
                 for big in (False, True)]


def _field(number: int, wire_type: int, payload: bytes) -> bytes:
    """One field of ModelProto by hand (tag byte, then the payload as it is)."""
    return bytes([number << 3 | wire_type]) + payload


def _graph_bytes(big: bool) -> bytes:
    return _model(big).graph.SerializeToString()


def _graph_field(big: bool, extra: bytes = b"") -> bytes:
    g = _graph_bytes(big) + extra
    return _field(7, 2, _varint(len(g)) + g)


def _varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes(out + bytes([n]))


# a GraphProto initializer (field 5) whose dims (TensorProto field 1, repeated int64) are packed: onnx.proto does
# not declare them packed, so protobuf reads them and writes them back one tag each
_TENSOR = b"\x0a\x06\x01\x02\x03\x04\x05\x06" + b"\x10\x01" + b"\x42\x01z"
_PACKED_TENSOR = b"\x2a" + bytes([len(_TENSOR)]) + _TENSOR
_OPSET = onnx.OperatorSetIdProto(domain="", version=21).SerializeToString()
_IR = _field(1, 0, b"\x0a")  # ir_version 10
_OPSET_FIELD = _field(8, 2, _varint(len(_OPSET)) + _OPSET)

# (name, bytes of a ModelProto for a small and a big graph, whether they hold unknown fields)
LAYOUTS = [
    ("canonical, none", lambda big: _IR + _graph_field(big) + _OPSET_FIELD, False),
    ("fields out of order, none", lambda big: _OPSET_FIELD + _graph_field(big) + _IR, False),
    ("ir_version written twice, none", lambda big: _IR + _field(1, 0, b"\x07") + _graph_field(big) + _OPSET_FIELD,
     False),
    ("overlong varint of a known field, none", lambda big: _field(1, 0, b"\x8a\x00") + _graph_field(big) + _OPSET_FIELD,
     False),
    ("unknown field at the end (canonical)", lambda big: _IR + _graph_field(big) + _OPSET_FIELD + wire(("varint", 100, 5)),
     True),
    ("unknown field first (interleaved)", lambda big: wire(("varint", 100, 5)) + _IR + _graph_field(big) + _OPSET_FIELD,
     True),
    ("unknown field, and a known scalar twice", lambda big: _IR + wire(("bytes", 99, b"abc")) + _field(1, 0, b"\x07")
     + _graph_field(big) + _OPSET_FIELD, True),
    # packed dims grow by 4 bytes when re-serialized, the unknown field has 4: the bytes' length alone would
    # not tell
    ("packed dims, none", lambda big: _IR + _graph_field(big, _PACKED_TENSOR) + _OPSET_FIELD, False),
    ("packed dims, and an unknown field as long as their growth", lambda big: _IR + wire(("bytes", 9, b"ab"))
     + _graph_field(big, _PACKED_TENSOR) + _OPSET_FIELD, True),
    ("known field in the wrong wire type", lambda big: _IR + _field(1, 2, b"\x01\x0a") + _graph_field(big) + _OPSET_FIELD,
     True),
]
LAYOUT_CASES = [(name, build, holds, big) for name, build, holds in LAYOUTS for big in (False, True)]


def _load(tmp_path, data: bytes) -> list:
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        onnxtext.load(path)
    return [w for w in caught if issubclass(w.category, UnknownFieldsWarning)]


@pytest.mark.parametrize("name,edit,big", UNKNOWN_CASES,
                         ids=[f"{c[0]}-{'big' if c[2] else 'small'}" for c in UNKNOWN_CASES])
def test_load_warns_about_every_unknown_field_case(tmp_path, name, edit, big):
    _, data = hostile_model(edit, big)
    assert len(_load(tmp_path, data)) == 1


@pytest.mark.parametrize("name,build,holds,big", LAYOUT_CASES,
                         ids=[f"{c[0]}-{'big' if c[3] else 'small'}" for c in LAYOUT_CASES])
def test_the_check_from_bytes_agrees_with_the_layout(tmp_path, name, build, holds, big):
    data = build(big)
    m = onnx.ModelProto.FromString(data)
    # every way any_unknown chooses between must say the same: from the bytes (these models are small for
    # their number of messages), a walk over the messages (told they are huge), a copy (no bytes given)
    assert any_unknown(m, data=data) == holds
    assert any_unknown(m, size=10 ** 12) == holds
    assert any_unknown(m, size=1) == holds
    assert len(_load(tmp_path, data)) == (1 if holds else 0)
