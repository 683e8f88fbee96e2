"""Loading and saving models: binary ``.onnx`` and text ``.onnxtext``/``.onnxtxt``.

Text vs binary is decided by content, not only by extension. Writes are atomic: a temporary file in
the target directory is renamed over the destination only when complete, so a failure never leaves a
half-written file or clobbers an existing one.
"""

from __future__ import annotations

import os
import tempfile

from .errors import ModelFileError, OnnxTextError

TEXT_EXTENSIONS = (".onnxtext", ".onnxtxt")


def looks_like_text(data: bytes) -> bool:
    """True when ``data`` is onnxtext rather than a serialized protobuf."""
    head = data[:4096]
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 4:  # a multi-byte char cut at the 4 KiB boundary is fine
            return False
    stripped = head.lstrip()
    return not stripped or stripped[:1] in b"<#/\"_" or stripped[:1].isalpha()


def read_text_or_bytes(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ModelFileError(f"{path}: is a directory, not a model file") from None
    except OSError as e:
        raise ModelFileError(f"{path}: cannot read: {e.strerror}") from None


def load(path, *, kind: str = "model"):
    """Load a model from ``path`` (binary or text). Text may also hold a graph/function with kind='any'."""
    path = os.fspath(path)
    data = read_text_or_bytes(path)
    if not data.strip():
        raise ModelFileError(f"{path}: empty file, not an ONNX model")
    if looks_like_text(data) or path.endswith(TEXT_EXTENSIONS):
        from .parser import parse, parse_model

        text = data.decode("utf-8", errors="strict") if _utf8(data) else None
        if text is None:
            raise ModelFileError(f"{path}: not valid UTF-8 text and not a binary ONNX model")
        return parse_model(text, filename=path) if kind == "model" else parse(text, filename=path)
    return load_binary(data, path)


def _utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def load_binary(data: bytes, path: str = "<bytes>"):
    """Parse a serialized ModelProto, with one clear error for empty, truncated or corrupt files."""
    import onnx
    from google.protobuf.message import DecodeError

    if not data:
        raise ModelFileError(f"{path}: empty file, not an ONNX model")
    m = onnx.ModelProto()
    try:
        m.ParseFromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise ModelFileError(f"{path}: not a valid ONNX model (truncated or corrupt protobuf: {e})") from None
    if not m.HasField("graph") and not m.opset_import and not m.ir_version:
        raise ModelFileError(f"{path}: not an ONNX model (no graph, opset_import or ir_version)")
    return m


def atomic_write(path: str, data: bytes | str) -> None:
    """Write ``data`` to ``path`` atomically (temp file + rename in the same directory)."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if isinstance(data, str):
        data = data.encode("utf-8")
    try:
        fd, tmp = tempfile.mkstemp(prefix=".onnxtext-", suffix=".tmp", dir=directory)
    except OSError as e:
        raise OnnxTextError(f"{path}: cannot write: {e.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        if os.path.exists(path):
            os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save(model, path, **print_options) -> None:
    """Save ``model`` to ``path``: text for .onnxtext/.onnxtxt, binary protobuf otherwise (atomic)."""
    path = os.fspath(path)
    if path.endswith(TEXT_EXTENSIONS):
        from .printer import to_text

        atomic_write(path, to_text(model, **print_options))
        return
    try:
        data = model.SerializeToString()
    except ValueError as e:  # protobuf refuses messages over 2 GiB
        raise OnnxTextError(f"{path}: cannot serialize the model: {e} (use external data for large weights)") \
            from None
    atomic_write(path, data)
