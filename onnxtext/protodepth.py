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
