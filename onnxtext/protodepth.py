"""Protobuf's nesting limit while onnxtext assembles messages: :func:`deep_messages`.

Python's protobuf (upb, and the C++ extension) copies a message into a field (``CopyFrom``, ``extend``,
``append``) by encoding it and decoding the bytes into the destination, and that decoding refuses nesting
deeper than 100 messages (``DecodeError: Exceeded upb_DecodeOptions_MaxDepth``). Each nested ``If``/``Loop``
body is three levels (node, attribute, graph), each ``seq(...)`` type two, so the parser, which builds
bottom-up and copies each finished part into its parent, would fail on 33 nested Ifs or 50 nested seq types
although nothing is wrong with them.

:func:`deep_messages` lifts that limit (protobuf's ``SetAllowOversizeProtos``, which raises the decoder's
depth limit to 65535) for the duration of a ``with`` block. It is used around text parsing only, where the
nesting is bounded by the parser (Python's recursion limit), never around decoding a binary file: a hostile
``.onnx`` nested tens of thousands deep would overflow the C stack of the decoder, so binaries keep
protobuf's default limit. The setting is process-wide; a count of active blocks turns it off when the last
one ends (a binary decoded in another thread meanwhile also gets the higher limit).

:func:`message_depth` measures how deep a model's messages nest, so that ``compile`` refuses to write a binary
deeper than :data:`MAX_DECODE_DEPTH`, which no reader with protobuf's defaults decodes (``--allow-deep``
writes it anyway): :func:`too_deep_to_decode` gives the error.
"""

from __future__ import annotations

import contextlib
import threading

# the error for a binary nested deeper than protobuf decodes (onnxtext.io.load_binary)
TOO_DEEP = ("not readable: its messages nest deeper than protobuf's limit of 100 levels (about 32 nested "
            "If/Loop/Scan bodies, or 50 nested seq(...) types), which onnx's own loader and checker share; the "
            "text form has no such limit (onnxtext print/compile the .onnxtext instead)")

_lock = threading.Lock()
_active = 0


def _setter():
    for module in ("google._upb._message", "google.protobuf.pyext._message"):
        try:
            mod = __import__(module, fromlist=["SetAllowOversizeProtos"])
        except ImportError:
            continue
        setter = getattr(mod, "SetAllowOversizeProtos", None)
        if setter is not None:
            return setter
    return None  # the pure-Python implementation copies without a depth limit


_SET = _setter()


@contextlib.contextmanager
def deep_messages():
    """Messages nested deeper than protobuf's default 100 levels can be copied inside this block."""
    global _active
    if _SET is None:
        yield
        return
    with _lock:
        _active += 1
        if _active == 1:
            _SET(True)
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _SET(False)


#: protobuf's decoding limit: a binary whose messages nest deeper (the model itself counting as 1) is refused by
#: every reader that keeps protobuf's defaults (onnx.load, onnxruntime, onnxtext.load)
MAX_DECODE_DEPTH = 100


def message_depth(msg) -> int:
    """How deep the messages of ``msg`` nest (``msg`` itself is 1), as protobuf's decoder counts: a model with
    32 nested If bodies is 103 deep. Tensors' bytes are not touched."""
    name = msg.DESCRIPTOR.name
    if name == "TensorProto":  # a leaf but for its external_data entries and segment
        return 2 if len(msg.external_data) or msg.HasField("segment") else 1
    if name == "NodeProto" and not (len(msg.attribute) or len(msg.metadata_props) or len(msg.device_configurations)):
        return 1
    best = 1
    for fd, value in msg.ListFields():
        if fd.message_type is None:
            continue
        if fd.is_repeated:
            for v in value:
                best = max(best, 1 + message_depth(v))
        else:
            best = max(best, 1 + message_depth(value))
    return best


def too_deep_to_decode(model, output: str) -> str | None:
    """The error for writing ``model`` as a binary nobody could read back (None when it decodes)."""
    depth = message_depth(model)
    if depth <= MAX_DECODE_DEPTH:
        return None
    return (f"{output}: not written: the model's messages nest {depth} levels deep, deeper than protobuf's decoding "
            f"limit of {MAX_DECODE_DEPTH} (about 32 nested If/Loop/Scan bodies or 48 nested seq(...) types), so "
            "onnx.load, onnxruntime and onnxtext could not read the .onnx back. Keep the model as text "
            "(compile -o model.onnxtext), flatten the nesting, or write it anyway with --allow-deep (a reader then "
            "has to raise its limit: google._upb._message.SetAllowOversizeProtos(True) in Python, "
            "CodedInputStream::SetRecursionLimit in C++)")
