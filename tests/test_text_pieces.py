"""The printed text as pieces (``printing.layout.TextPieces``): big base64 blocks encoded a chunk of lines at a
time, joined by ``to_text`` and streamed to the file by ``save`` and ``onnxtext print``.

The block oracle is Python's ``base64`` module cut into lines with slicing; the differential is the same text
with the whole block as one chunk. A case is (raw bytes, width, indent, characters per chunk).
"""

from __future__ import annotations

import base64
import io

import numpy as np
import onnx
import pytest
from onnx import helper

import onnxtext
from onnxtext import cli
from onnxtext.printing import layout
from onnxtext.printing.printer import to_text_pieces

CASES = [
    # raw bytes, width, indent, chunk characters: line and chunk boundaries on both sides
    (1, 24, "  ", 16),
    (11, 24, "  ", 16),
    (12, 24, "  ", 16),
    (13, 24, "  ", 16),
    (1000, 100, "  ", 80),     # 80 characters a line: one line a chunk
    (1019, 100, "  ", 160),
    (1020, 100, "  ", 160),    # whole lines, the last chunk full
    (1021, 100, "  ", 160),
    (4099, 100, "    ", 4096),
    (60 * 1000 + 7, 100, "\t", 1 << 20),  # one chunk
    (300_001, 100, "  ", 1 << 12),
    (5000, 300, "  ", 300),    # a chunk of less than a line: still whole lines
]


def _model(n: int, name: str = "w") -> onnx.ModelProto:
    raw = np.random.default_rng(n).integers(0, 256, n, dtype=np.uint8).tobytes()
    t = helper.make_tensor(name, onnx.TensorProto.UINT8, [n], raw, raw=True)
    x = helper.make_tensor_value_info("x", onnx.TensorProto.UINT8, [n])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.UINT8, [n])
    g = helper.make_graph([helper.make_node("Add", ["x", name], ["y"])], "g", [x], [y], [t])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def _oracle_block(raw: bytes, line_indent: str, per_line: int) -> str:
    encoded = base64.b64encode(raw).decode("ascii")
    return "".join("\n" + line_indent + encoded[i:i + per_line] for i in range(0, len(encoded), per_line))


@pytest.mark.parametrize("n, width, indent, chunk", CASES)
def test_chunked_block_is_the_wrapped_base64(monkeypatch, n, width, indent, chunk):
    m = _model(n)
    monkeypatch.setattr(layout, "CHUNK_CHARS", 1 << 40)
    whole = onnxtext.to_text(m, width=width, indent=indent, max_inline=0)
    monkeypatch.setattr(layout, "CHUNK_CHARS", chunk)
    pieces = list(to_text_pieces(m, width=width, indent=indent, max_inline=0))
    text = "".join(pieces)
    assert text == whole
    raw = m.graph.initializer[0].raw_data
    per_line = layout.block_chars(indent * 2, width)  # an initializer's block: two levels deep
    block = text[text.index('base64 "') + 8:]
    assert block[:block.index('"')] == _oracle_block(raw, indent * 2, per_line)
    assert max(len(line) for line in (block[:block.index('"') + 1]).split("\n")) <= width  # the quote too
    if len(raw) * 4 // 3 > 2 * max(chunk, per_line):
        assert len(pieces) > 2  # the block came in several pieces
    assert onnxtext.parse_model(text).SerializeToString() == m.SerializeToString()


def test_pieces_count_their_utf8_bytes():
    m = _model(3000, name="wé\U0001f600")
    pieces = to_text_pieces(m, max_inline=0)
    assert pieces.nbytes() == len("".join(pieces).encode("utf-8"))


def test_save_and_print_stream_the_text_of_to_text(tmp_path, capsys):
    m = _model(200_000)
    want = onnxtext.to_text(m).encode("utf-8")
    onnxtext.save(m, tmp_path / "a.onnxtext")
    assert (tmp_path / "a.onnxtext").read_bytes() == want
    onnx.save(m, str(tmp_path / "m.onnx"))
    assert cli.main(["print", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "b.onnxtext")]) == 0
    assert (tmp_path / "b.onnxtext").read_bytes() == want
    capsys.readouterr()
    assert cli.main(["print", str(tmp_path / "m.onnx")]) == 0
    assert capsys.readouterr().out.encode("utf-8") == want


def test_save_reports_writing_progress_in_bytes(tmp_path):
    from onnxtext.progress import Progress

    class Recorder(Progress):
        def stage(self, label, total):
            self.seen.append((label, total))
            return super().stage(label, total)

    m = _model(100_000)
    progress = Recorder("off", stream=io.StringIO())
    progress.seen = []
    onnxtext.save(m, tmp_path / "a.onnxtext", progress=progress)
    assert progress.seen[-1] == ("writing a.onnxtext", (tmp_path / "a.onnxtext").stat().st_size)


def test_brief_header_once_with_deferred_blocks():
    m = _model(5000)
    m.graph.node[0].metadata_props.add(key="k", value="v")
    text = onnxtext.to_text(m, brief=True, max_inline=0)
    assert text.startswith("# brief: 1 metadata entries") and text.count("# brief") == 1
    assert 'base64 "\n' in text and "\x00" not in text


@pytest.mark.parametrize("n, width, indent, chunk", CASES)
def test_one_allocation_join_equals_the_reference_join(monkeypatch, n, width, indent, chunk):
    m = _model(n)
    monkeypatch.setattr(layout, "CHUNK_CHARS", chunk)
    monkeypatch.setattr(layout, "ONE_ALLOCATION_CHARS", 0)  # every text with a block takes the fast path
    pieces = to_text_pieces(m, width=width, indent=indent, max_inline=0)
    reference = "".join(pieces)
    filled = pieces.join()
    assert filled == reference and hash(filled) == hash(reference) and filled is not reference
    assert filled.encode("ascii") == reference.encode("ascii") and filled.isascii()
    monkeypatch.setattr(layout, "ONE_ALLOCATION", False)
    assert onnxtext.to_text(m, width=width, indent=indent, max_inline=0) == filled


def test_one_allocation_is_taken_on_cpython():
    import sys

    if sys.implementation.name == "cpython":
        assert layout._str_data_offset() == sys.getsizeof("") - 1
    else:
        assert layout._str_data_offset() is None


def test_non_ascii_text_with_blocks_takes_the_reference_join(monkeypatch):
    m = _model(3000, name="wé")
    monkeypatch.setattr(layout, "ONE_ALLOCATION_CHARS", 0)
    monkeypatch.setattr(layout, "_filled_str", None)  # would fail if called
    pieces = to_text_pieces(m, max_inline=0)
    assert pieces.join() == "".join(pieces) and '"wé"' in pieces.join()
