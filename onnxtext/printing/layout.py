"""Line layout of the printed text: one line when it fits the width, else a deterministic break.

Every function places a bracketed sequence of already printed items. ``lead`` is the number of characters
before the opening bracket on its line (the indentation included); continuation lines are indented one
level deeper than the line they belong to (``pad``). Three ways to break:

* :func:`one_per_line`: each item on its own line, the closing bracket on a line of its own (signatures,
  attribute lists, value lists);
* :func:`filled`: as many items per line as fit, the closing bracket after the last (metadata pairs, small
  lists): compact, used where items are not compared element by element;
* :func:`fixed_rows`: a fixed number of elements per line, whole rows of the tensor's last dimension when a
  row fits (tensor literals): changing one element changes one line of a diff;
* :func:`block_lines`: a base64/hex block as a multi-line string of fixed-size lines; :class:`TextPieces`:
  the final text with big blocks encoded a piece at a time (written to a file without the whole text).
"""

from __future__ import annotations

import binascii
import functools
import os
import sys

import numpy as np


def fits(lead: int, text: str, width: int) -> bool:
    return "\n" not in text and lead + len(text) <= width


def one_per_line(open_: str, items: list[str], close: str, pad: str, inner: str) -> str:
    """``open`` then each item on a line at ``inner``, ``close`` on a line at ``pad``."""
    if not items:
        return open_ + close
    return f"{open_}\n{inner}" + (",\n" + inner).join(items) + f"\n{pad}{close}"


def filled(open_: str, items: list[str], close: str, lead: int, inner: str, width: int) -> str:
    """``open item, item,`` filled to the width, continuation lines at ``inner``, ``close`` after the last."""
    lines, cur, cur_len = [], open_, lead + len(open_)
    first = True
    last = len(items) - 1
    for k, it in enumerate(items):
        if first and open_ and lead + len(open_) + len(it) + (len(close) if k == last else 1) > width \
                and len(inner) + len(it) < lead + len(open_) + len(it):
            lines.append(open_)  # the first item fits better on the next line
            cur, cur_len, first = inner + it, len(inner) + len(it), False
            continue
        piece = it if first else " " + it
        if not first and cur_len + len(piece) + (len(close) if k == last else 1) > width:  # the comma or close
            lines.append(cur + ",")
            cur, cur_len, piece = inner + it, len(inner) + len(it), None
        if piece is not None:
            cur += ("" if first else ",") + piece
            cur_len += len(piece) + (0 if first else 1)
        first = False
    lines.append(cur + close)
    return "\n".join(lines)


def fixed_rows(open_: str, items: list[str], close: str, pad: str, inner: str, width: int, row: int) -> str:
    """``open``, then lines of a fixed number of items at ``inner`` (whole rows of ``row`` items when one
    fits), then ``close`` on a line at ``pad``. The count depends on the longest item only."""
    longest = max(map(len, items)) + 2  # ", "
    per_line = max(1, (width - len(inner) + 1) // longest)
    if 1 < row <= per_line:
        per_line -= per_line % row
    lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
    return f"{open_}\n{inner}" + (",\n" + inner).join(lines) + f"\n{pad}{close}"


def block_chars(inner: str, width: int) -> int:
    """Characters of a base64 block per line, leaving room for the closing quote: a multiple of 16
    characters, 12 bytes, so that every line holds whole elements of 1, 2 and 4 bytes (a changed element
    changes one line; an 8-byte element may straddle two)."""
    return max(16, (width - len(inner) - 1) // 16 * 16)


def block_lines(encoded: bytes, inner: str, per_line: int) -> str:
    """A block's encoded bytes broken into lines of ``per_line`` characters, each starting on a new line
    at ``inner`` (the string opens with a line break): one buffer of the final size, filled in one numpy
    pass and decoded once."""
    return str(_block_array(encoded, inner, per_line), "ascii")


def _block_array(encoded: bytes, inner: str, per_line: int) -> np.ndarray:
    """:func:`block_lines` as a uint8 array."""
    sep = np.frombuffer(("\n" + inner).encode("ascii"), np.uint8)
    n = len(encoded)
    full = n // per_line
    step = len(sep) + per_line
    out = np.empty(block_size(n, inner, per_line), np.uint8)
    grid = out[:full * step].reshape(full, step)
    grid[:, :len(sep)] = sep
    grid[:, len(sep):] = np.frombuffer(encoded, np.uint8, count=full * per_line).reshape(full, per_line)
    if len(out) > full * step:  # the last, shorter line (or the empty block's line break)
        out[full * step:full * step + len(sep)] = sep
        out[full * step + len(sep):] = np.frombuffer(encoded, np.uint8, offset=full * per_line)
    return out


def block_size(n_encoded: int, inner: str, per_line: int) -> int:
    """Length of :func:`block_lines`' result for ``n_encoded`` characters."""
    return n_encoded + max(1, -(-n_encoded // per_line)) * (1 + len(inner))


#: characters of base64 per piece of a deferred block (whole lines): the memory a block costs beyond the text
#: is its tensor's raw_data (read once) plus a piece or two of this size
CHUNK_CHARS = 1 << 20


class TextPieces:
    """A printed text as consecutive ``str`` pieces: the layout split at its block placeholders (odd
    ``parts``: indices into ``blobs``, each ``(tensor, length of its raw_data, line indentation, characters per
    line)``), each placeholder replaced by its tensor's base64 lines, encoded from ``raw_data`` about
    :data:`CHUNK_CHARS` characters at a time while the pieces are iterated.

    The whole text never has to exist at once: ``save`` and ``onnxtext print`` write the pieces to the file
    one by one (peak memory: the layout plus one tensor's bytes), ``to_text`` joins them once (the pieces
    plus the result). Iterating again encodes the blocks again.
    """

    def __init__(self, parts: list[str], blobs: list[tuple]):
        self.parts = parts
        self.blobs = [blobs[int(p)] for p in parts[1::2]]  # in text order

    def __iter__(self):
        return (p if isinstance(p, str) else str(p, "ascii") for p in self._pieces())

    def _pieces(self):
        """The layout's parts (str) and the blocks' pieces (uint8 arrays of ASCII), in text order."""
        parts = self.parts
        for i, (tensor, _, inner, per_line) in enumerate(self.blobs):
            if parts[2 * i]:
                yield parts[2 * i]
            yield from _block_pieces(tensor.raw_data, inner, per_line)
        if parts[-1]:
            yield parts[-1]

    def join(self) -> str:
        """The whole text as one str. On CPython, an ASCII text of at least :data:`ONE_ALLOCATION_CHARS`
        is written piece by piece straight into one string allocated at its final size (``PyUnicode_New``
        and writes before the string is handed out, as C code builds a str; here through ctypes), so
        printing holds the text once instead of the pieces plus their join. Else (or with
        :data:`ONE_ALLOCATION` off) ``"".join``, the reference this is tested against."""
        if not self.blobs:
            return "".join(self.parts)  # one part: that string itself
        if ONE_ALLOCATION and all(p.isascii() for p in self.parts[0::2]):
            size = self.nbytes()
            if size >= ONE_ALLOCATION_CHARS and _str_data_offset() is not None:
                return _filled_str(self._pieces(), size)
        return "".join(self)

    def nbytes(self) -> int:
        """Size of the text in UTF-8 (non-UTF-8 names are kept as surrogates: counted as their bytes)."""
        return sum(len(p) if p.isascii() else len(p.encode("utf-8", "surrogatepass")) for p in self.parts[0::2]) \
            + sum(block_size(4 * -(-n // 3), inner, per_line) for _, n, inner, per_line in self.blobs)


def _block_pieces(raw: bytes, inner: str, per_line: int):
    """:func:`_block_array` of ``raw``'s base64 in pieces of whole lines (one piece for an empty block)."""
    step = max(1, CHUNK_CHARS // per_line) * per_line // 4 * 3  # raw bytes of whole lines (16 characters: 12 bytes)
    view = memoryview(raw)
    for start in range(0, max(len(raw), 1), step):
        yield _block_array(binascii.b2a_base64(view[start:start + step], newline=False), inner, per_line)


#: write big ASCII texts into one string allocated at its final size (see :meth:`TextPieces.join`)
ONE_ALLOCATION = True
ONE_ALLOCATION_CHARS = 1 << 20


@functools.cache
def _str_data_offset() -> int | None:
    """Where a compact ASCII str's characters start, from the object's address (CPython: right after the
    PyASCIIObject header, ``sys.getsizeof("") - 1`` bytes), or None when this interpreter is not such a
    CPython (checked on a fresh string: the characters must be found there)."""
    if sys.implementation.name != "cpython":
        return None
    offset = sys.getsizeof("") - 1
    probe = "".join(["onnxtext", str(os.getpid())])  # a fresh object, not a constant
    try:
        import ctypes

        return offset if ctypes.string_at(id(probe) + offset, len(probe)) == probe.encode("ascii") else None
    except Exception:  # noqa: BLE001 - no ctypes on this build: the reference join
        return None


def _filled_str(pieces, size: int) -> str:
    """One str of ``size`` ASCII characters holding ``pieces`` (str or uint8 arrays), written in place."""
    import ctypes

    new = ctypes.pythonapi.PyUnicode_New
    new.argtypes, new.restype = (ctypes.c_ssize_t, ctypes.c_uint32), ctypes.py_object
    text = new(size, 127)
    address = id(text) + _str_data_offset()
    pos = 0
    for piece in pieces:
        data = piece.encode("ascii") if isinstance(piece, str) else piece
        n = len(data)
        if pos + n > size:
            raise AssertionError("printed text longer than its computed size")  # never write past the end
        ctypes.memmove(address + pos, data if isinstance(data, bytes) else data.ctypes.data, n)
        pos += n
    if pos != size:
        raise AssertionError("printed text shorter than its computed size")
    return text

