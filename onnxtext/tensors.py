"""TensorProto <-> numpy conversion: typed fields, raw_data, sub-byte packing, external data.

All element-type facts come from :mod:`onnxtext.dtypes`. Decoding never goes element by element in
Python for numeric types: raw bytes and typed fields are converted with numpy in bulk.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
from onnx import TensorProto

from . import dtypes
from .errors import ExternalDataError, OnnxTextError

_LE = {}


def _le(dt: np.dtype) -> np.dtype:
    """Little-endian variant of a numpy dtype (raw_data is always little-endian)."""
    r = _LE.get(dt)
    if r is None:
        r = _LE[dt] = dt.newbyteorder("<") if dt.byteorder not in ("|", "=") or dt.itemsize > 1 else dt
        if r.byteorder == "=":
            r = dt
    return r


# ---------------------------------------------------------------------------------------------- packing
def unpack_bits(data: np.ndarray, bits: int, count: int) -> np.ndarray:
    """Unpack ``count`` elements of ``bits`` (2, 4 or 6) from uint8 ``data`` (LSB first) into uint8 codes."""
    data = np.asarray(data, dtype=np.uint8)
    if bits == 4:
        out = np.empty(data.size * 2, np.uint8)
        out[0::2] = data & 0x0F
        out[1::2] = data >> 4
    elif bits == 2:
        out = np.empty(data.size * 4, np.uint8)
        for k in range(4):
            out[k::4] = (data >> (2 * k)) & 0x3
    elif bits == 6:
        pad = (-data.size) % 3
        b = np.concatenate([data, np.zeros(pad, np.uint8)]).reshape(-1, 3).astype(np.uint32)
        word = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        out = np.empty(word.size * 4, np.uint8)
        for k in range(4):
            out[k::4] = (word >> (6 * k)) & 0x3F
    else:
        raise ValueError(f"cannot unpack {bits}-bit elements")
    if out.size < count:
        raise OnnxTextError(f"packed data holds {out.size} elements, {count} needed")
    return out[:count]


def pack_bits(codes: np.ndarray, bits: int) -> np.ndarray:
    """Pack uint8 ``codes`` of ``bits`` (2, 4 or 6) each into bytes, LSB first, zero-padded."""
    codes = np.asarray(codes, dtype=np.uint8).ravel()
    mask = (1 << bits) - 1
    if bits == 6:
        per = 4
        n = -(-codes.size // per) * per
        c = np.zeros(n, np.uint32)
        c[: codes.size] = codes & mask
        c = c.reshape(-1, 4)
        word = c[:, 0] | (c[:, 1] << 6) | (c[:, 2] << 12) | (c[:, 3] << 18)
        out = np.stack([word & 0xFF, (word >> 8) & 0xFF, (word >> 16) & 0xFF], axis=1).astype(np.uint8).ravel()
        return out[: -(-6 * codes.size // 8)]
    per = 8 // bits
    n = -(-codes.size // per) * per
    c = np.zeros(n, np.uint8)
    c[: codes.size] = codes & mask
    c = c.reshape(-1, per)
    out = np.zeros(c.shape[0], np.uint8)
    for k in range(per):
        out |= c[:, k] << (bits * k)
    return out


def codes_to_array(codes: np.ndarray, dt: dtypes.DType) -> np.ndarray:
    """uint8 bit codes (one per element) -> array of the sub-byte dtype."""
    return np.asarray(codes, np.uint8).view(dt.np)


def array_to_codes(arr: np.ndarray, dt: dtypes.DType) -> np.ndarray:
    """Array of a sub-byte dtype -> uint8 codes masked to the element width."""
    return np.ascontiguousarray(arr, dtype=dt.np).view(np.uint8) & ((1 << dt.bits) - 1)


# ---------------------------------------------------------------------------------------------- decode
def element_count(tensor: TensorProto) -> int:
    n = 1
    for d in tensor.dims:
        n *= d
    return n


def _decode_raw(raw: bytes, dt: dtypes.DType, count: int) -> np.ndarray:
    if dt.packed:
        return codes_to_array(unpack_bits(np.frombuffer(raw, np.uint8), dt.bits, count), dt)
    if dt.name == "bool":
        return np.frombuffer(raw, np.uint8).astype(np.bool_)
    return np.frombuffer(raw, _le(dt.np)).astype(dt.np, copy=False)


def decode_strings(values) -> np.ndarray:
    """string_data (bytes) -> object array of str (bytes kept as bytes when not valid UTF-8)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        try:
            out[i] = v.decode("utf-8")
        except UnicodeDecodeError:
            out[i] = v
    return out


def decode_typed(tensor: TensorProto, dt: dtypes.DType, count: int) -> np.ndarray:
    """Elements from the typed ``*_data`` field of a tensor as a flat array."""
    if dt.kind == "string":
        return decode_strings(tensor.string_data)
    values = getattr(tensor, dt.field)
    if dt.kind == "complex":
        pairs = np.asarray(values, dtype=np.float32 if dt.name == "complex64" else np.float64)
        return (pairs[0::2] + 1j * pairs[1::2]).astype(dt.np)
    if dt.field in ("float_data", "double_data", "int64_data", "uint64_data"):
        return np.asarray(values, dtype=getattr(np, {"float_data": "float32", "double_data": "float64",
                                                     "int64_data": "int64", "uint64_data": "uint64"}[dt.field])
                          ).astype(dt.np)
    ints = np.asarray(values, dtype=np.int64)
    if dt.bits in (2, 4):
        return codes_to_array(unpack_bits((ints & 0xFF).astype(np.uint8), dt.bits, count), dt)
    if dt.bits == 6:
        return codes_to_array((ints & 0x3F).astype(np.uint8), dt)
    if dt.bitpattern:
        return (ints & ((1 << dt.bits) - 1)).astype(dt.uint_view).view(dt.np)
    return ints.astype(dt.np)


def to_array(tensor: TensorProto, base_dir: str | None = None) -> np.ndarray:
    """Decode a TensorProto into a numpy array of its dtype and shape.

    External data is read relative to ``base_dir`` with the path-safety rules of :func:`read_external`.
    """
    try:
        dt = dtypes.from_enum(tensor.data_type)
    except KeyError:
        raise OnnxTextError(f"tensor {tensor.name!r} has undefined or unknown data_type {tensor.data_type}") from None
    count = element_count(tensor)
    if tensor.data_location == TensorProto.EXTERNAL:
        flat = _decode_raw(read_external(tensor, base_dir), dt, count)
    elif tensor.HasField("raw_data"):
        flat = _decode_raw(tensor.raw_data, dt, count)
    else:
        flat = decode_typed(tensor, dt, count)
    if flat.size != count:
        raise OnnxTextError(f"tensor {tensor.name!r}: data holds {flat.size} elements, shape "
                            f"{list(tensor.dims)} needs {count}")
    return flat.reshape(tuple(tensor.dims))


# ---------------------------------------------------------------------------------------------- encode
def raw_bytes(arr: np.ndarray, dt: dtypes.DType) -> bytes:
    """Little-endian raw_data bytes of an array of element type ``dt``."""
    if dt.packed:
        return pack_bits(array_to_codes(arr, dt), dt.bits).tobytes()
    if dt.name == "bool":
        return np.ascontiguousarray(arr, dtype=np.bool_).view(np.uint8).tobytes()
    return np.ascontiguousarray(arr, dtype=_le(dt.np)).tobytes()


def set_typed(tensor: TensorProto, arr: np.ndarray, dt: dtypes.DType) -> None:
    """Store ``arr`` in the typed ``*_data`` field of ``tensor`` (appending)."""
    flat = np.asarray(arr).ravel()
    if dt.kind == "string":
        tensor.string_data.extend(v if isinstance(v, bytes) else str(v).encode("utf-8") for v in flat)
        return
    field = getattr(tensor, dt.field)
    if dt.kind == "complex":
        pairs = np.empty(flat.size * 2, dtype=np.float32 if dt.name == "complex64" else np.float64)
        pairs[0::2] = flat.real
        pairs[1::2] = flat.imag
        field.extend(pairs.tolist())
    elif dt.bits in (2, 4):
        field.extend(pack_bits(array_to_codes(flat, dt), dt.bits).astype(np.int32).tolist())
    elif dt.bits == 6:
        field.extend(array_to_codes(flat, dt).astype(np.int32).tolist())
    elif dt.bitpattern:
        field.extend(np.ascontiguousarray(flat, dt.np).view(dt.uint_view).astype(np.int64).tolist())
    elif dt.field == "int32_data":
        field.extend(flat.astype(np.int32).tolist())
    else:
        field.extend(flat.tolist())


def from_array(arr, name: str | None = None, *, raw: bool = True, dtype: dtypes.DType | None = None) -> TensorProto:
    """Encode a numpy array (or scalar, or list) as a TensorProto.

    ``raw=True`` stores numeric data in ``raw_data``; strings always go to ``string_data``.
    """
    arr = np.asarray(arr)
    dt = dtype or dtypes.from_numpy(arr.dtype)
    t = TensorProto()
    t.data_type = dt.enum
    t.dims.extend(int(d) for d in arr.shape)
    if name is not None:
        t.name = name
    if raw and dt.kind != "string":
        t.raw_data = raw_bytes(arr, dt)
    else:
        set_typed(t, arr, dt)
    return t


# ---------------------------------------------------------------------------------------------- external
def external_info(tensor: TensorProto) -> dict[str, str]:
    return {e.key: e.value for e in tensor.external_data}


def safe_external_path(location: str, base_dir: str | None) -> str:
    """Resolve an external-data location inside ``base_dir``; refuse anything that escapes it.

    Absolute paths, ``..`` segments and symlinks resolving outside the directory are errors
    (the IR spec requires locations relative to the model's directory).
    """
    if not location:
        raise ExternalDataError("external data has an empty 'location'")
    if isinstance(location, bytes):  # a string field that is not UTF-8 (protobuf returns its bytes)
        raise ExternalDataError(f"external data location {location!r} is not UTF-8 text")
    if "\x00" in location:
        raise ExternalDataError(f"external data location {location!r} contains a NUL byte")
    if os.path.isabs(location) or location.startswith(("/", "\\")) or (len(location) > 1 and location[1] == ":"):
        raise ExternalDataError(f"external data location {location!r} is absolute; it must be relative "
                                "to the model's directory")
    parts = location.replace("\\", "/").split("/")
    if ".." in parts:
        raise ExternalDataError(f"external data location {location!r} contains '..'; it must stay inside "
                                "the model's directory")
    base = os.path.realpath(base_dir or os.getcwd())
    path = os.path.realpath(os.path.join(base, location))
    if os.path.commonpath([base, path]) != base:
        raise ExternalDataError(f"external data location {location!r} resolves to {path}, outside the "
                                f"model's directory {base} (symlink?)")
    return path


def read_external(tensor: TensorProto, base_dir: str | None) -> bytes:
    """The raw bytes of an externally stored tensor, with its length and checksum verified.

    Every error names the tensor and its location. ``checksum`` is the SHA1 hex digest the IR spec
    describes as the digest of the file; a digest of the tensor's own bytes is accepted as well.
    """
    info = external_info(tensor)
    location = info.get("location", "")
    label = f"tensor {tensor.name!r}" if tensor.name else "an unnamed tensor"
    try:
        path = safe_external_path(location, base_dir)
    except ExternalDataError as e:
        raise ExternalDataError(f"{label}: {e}") from None
    try:
        offset = int(info.get("offset", "0") or 0)
        length = int(info["length"]) if info.get("length") else None
    except ValueError:
        raise ExternalDataError(f"{label}: external data offset/length are not integers") from None
    if offset < 0 or (length is not None and length < 0):
        raise ExternalDataError(f"{label}: negative external data offset or length")
    try:
        with open_data_file(path) as f:
            size = os.fstat(f.fileno()).st_size
            # checked against the file before anything is allocated: a huge declared length is an error
            if offset > size or (length is not None and offset + length > size):
                want = f"{length} bytes at offset {offset}" if length is not None else f"data at offset {offset}"
                raise ExternalDataError(f"{label}: external file {location!r} holds {size} bytes, {want} "
                                        "expected (file truncated or changed?)")
            f.seek(offset)
            data = f.read() if length is None else f.read(length)
    except OSError as e:
        raise ExternalDataError(f"{label}: cannot read external data {location!r} ({path}): {e.strerror}") \
            from None
    except ExternalDataError as e:
        if str(e).startswith(label):
            raise
        raise ExternalDataError(f"{label}: external data {location!r}: {e}") from None
    if length is not None and len(data) != length:
        raise ExternalDataError(f"{label}: external file {location!r} holds {len(data)} bytes at "
                                f"offset {offset}, {length} expected (file truncated or changed?)")
    expected = info.get("checksum", "").strip().lower()
    # the file's digest is computed once per file (cached), however many tensors it holds
    if expected and file_sha1(path) != expected and hashlib.sha1(data).hexdigest() != expected:
        raise ExternalDataError(f"{label}: external file {location!r} does not match its checksum "
                                f"{expected} (SHA1 of the file: {file_sha1(path)}); the file changed or is corrupt")
    return data


def open_data_file(path: str):
    """``path`` opened for binary reading when it is a regular file; ExternalDataError otherwise.

    A FIFO, a character device (``/dev/zero``) or a socket is refused without reading from it: the file is
    opened non-blocking (so a FIFO without a writer cannot hang the open) and checked with fstat.
    """
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode) else \
                "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "not a regular file"
            raise ExternalDataError(f"{path} is {kind}, not a regular file; refusing to read it")
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


_FILE_SHA1: dict[tuple, str] = {}


def file_sha1(path: str) -> str:
    """SHA1 hex digest of a whole file, cached per (path, inode, size, mtime) so each file is hashed once."""
    st = os.stat(path)
    key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
    digest = _FILE_SHA1.get(key)
    if digest is None:
        h = hashlib.sha1()
        with open_data_file(path) as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digest = _FILE_SHA1[key] = h.hexdigest()
    return digest
