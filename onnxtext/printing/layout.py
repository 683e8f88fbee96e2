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
* :func:`block_lines`: a base64/hex block as a multi-line string of fixed-size lines.
"""

from __future__ import annotations

import binascii

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


def block_lines(encoded: bytes, inner: str, per_line: int) -> bytes:
    """A block's encoded bytes broken into lines of ``per_line`` characters, each starting on a new line
    at ``inner`` (the string opens with a line break), in one numpy pass."""
    sep = ("\n" + inner).encode("ascii")
    n = len(encoded)
    rows = -(-n // per_line)
    if rows <= 1:
        return sep + encoded
    full = n // per_line
    grid = np.empty((full, len(sep) + per_line), np.uint8)
    grid[:, :len(sep)] = np.frombuffer(sep, np.uint8)
    grid[:, len(sep):] = np.frombuffer(encoded, np.uint8, count=full * per_line).reshape(full, per_line)
    tail = encoded[full * per_line:]
    return grid.tobytes() + (sep + tail if tail else b"")


def block_size(n_encoded: int, inner: str, per_line: int) -> int:
    """Length of :func:`block_lines`' result for ``n_encoded`` characters."""
    return n_encoded + max(1, -(-n_encoded // per_line)) * (1 + len(inner))


def fill_blocks(parts: list[str], blobs: list[tuple]) -> str:
    """The final text from the layout split at its placeholders (odd ``parts``: indices into ``blobs``).

    Each block is base64-encoded straight into one buffer of the final size, which is decoded once: at
    most two copies of the text exist (buffer and result), plus one tensor's bytes at a time.
    """
    chunks = [p.encode("utf-8", "surrogatepass") for p in parts[0::2]]
    sources = [blobs[int(p)] for p in parts[1::2]]
    del parts
    buf = bytearray(sum(map(len, chunks)) + sum(block_size(4 * -(-n // 3), inner, per_line)
                                                for _, n, inner, per_line in sources))
    pos = 0
    for i, chunk in enumerate(chunks):
        buf[pos:pos + len(chunk)] = chunk
        pos += len(chunk)
        if i < len(sources):
            tensor, _, inner, per_line = sources[i]
            block = block_lines(binascii.b2a_base64(tensor.raw_data, newline=False), inner, per_line)
            buf[pos:pos + len(block)] = block
            pos += len(block)
            del block
    return buf.decode("utf-8", "surrogatepass")
