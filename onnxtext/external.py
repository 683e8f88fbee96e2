"""External tensor data (IR spec, "External Data"): move large tensors to side files and back.

A tensor whose ``data_location`` is EXTERNAL keeps its bytes (the little-endian ``raw_data`` layout) in a
file named by its ``external_data`` entries: ``location`` (relative to the directory of the model or text
that refers to it), ``offset``, ``length`` and ``checksum`` (SHA1 hex digest of the file, as onnx.proto
says; with one file per tensor it is also the digest of the tensor's bytes).

* :func:`externalize` writes every tensor above a size threshold to a side file (one file, or one file
  per tensor in a directory) and replaces its values by a reference. Bytes are streamed one tensor at a
  time through :class:`onnxtext.io.AtomicFiles`, so nothing is visible until the whole output is complete
  and no single proto ever holds every weight (models above protobuf's 2 GiB limit work).
* :func:`resolve` is the reverse: it reads every reference back into ``raw_data``.

Path safety is in :func:`onnxtext.tensors.safe_external_path` (reading) and :func:`output_location`
(writing): a location never leaves the model's directory, whatever absolute paths, ``..`` segments or
symlinks try.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator

from onnx import AttributeProto, FunctionProto, GraphProto, ModelProto, NodeProto, TensorProto

from . import dtypes, tensors
from .errors import ExternalDataError

DEFAULT_THRESHOLD = 1024  # bytes; onnx's save_model default too
ALIGNMENT = 64  # offsets of tensors in a shared file are multiples of this (aligned numpy views, mmap)


# ---------------------------------------------------------------------------------------------- walking
def iter_tensors(proto, where: str = "") -> Iterator[tuple[str, TensorProto]]:
    """Every TensorProto that can hold data in ``proto``, with a label saying where it sits.

    Covers initializers, sparse initializers (values and indices), tensor and sparse-tensor attributes of
    nodes, subgraphs at any depth, model-local functions (their nodes and attribute defaults) and the
    training_info graphs.
    """
    if isinstance(proto, ModelProto):
        yield from iter_tensors(proto.graph, "")
        for f in proto.functions:
            yield from iter_tensors(f, f"function {f.name!r}: ")
        for i, ti in enumerate(proto.training_info):
            yield from iter_tensors(ti.initialization, f"training_info[{i}] initialization: ")
            yield from iter_tensors(ti.algorithm, f"training_info[{i}] algorithm: ")
    elif isinstance(proto, GraphProto):
        for t in proto.initializer:
            yield f"{where}initializer {t.name!r}", t
        for s in proto.sparse_initializer:
            yield f"{where}sparse initializer {s.values.name!r} values", s.values
            yield f"{where}sparse initializer {s.values.name!r} indices", s.indices
        for node in proto.node:
            yield from iter_tensors(node, where)
    elif isinstance(proto, FunctionProto):
        for node in proto.node:
            yield from iter_tensors(node, where)
        for a in proto.attribute_proto:
            yield from _attribute_tensors(a, f"{where}attribute default {a.name!r}")
    elif isinstance(proto, NodeProto):
        label = f"{where}node {proto.name!r}" if proto.name else f"{where}{proto.op_type} node"
        for a in proto.attribute:
            yield from _attribute_tensors(a, f"{label} attribute {a.name!r}")
    elif isinstance(proto, TensorProto):
        yield f"{where}tensor {proto.name!r}", proto


def _attribute_tensors(a: AttributeProto, label: str) -> Iterator[tuple[str, TensorProto]]:
    if a.HasField("t"):
        yield label, a.t
    for i, t in enumerate(a.tensors):
        yield f"{label}[{i}]", t
    if a.HasField("sparse_tensor"):
        yield f"{label} values", a.sparse_tensor.values
        yield f"{label} indices", a.sparse_tensor.indices
    for i, s in enumerate(a.sparse_tensors):
        yield f"{label}[{i}] values", s.values
        yield f"{label}[{i}] indices", s.indices
    if a.HasField("g"):
        yield from iter_tensors(a.g, f"{label} > ")
    for i, g in enumerate(a.graphs):
        yield from iter_tensors(g, f"{label}[{i}] > ")


def is_external(t: TensorProto) -> bool:
    """onnx's rule (and tensors.to_array's): data_location EXTERNAL; stray external_data entries without it
    do not make a tensor external."""
    return t.data_location == TensorProto.EXTERNAL


def _describe(label: str, t: TensorProto) -> str:
    """The label, plus the tensor's own name when the label does not already show it."""
    return label if not t.name or repr(t.name) in label else f"{label} (tensor {t.name!r})"


# ---------------------------------------------------------------------------------------------- reading
def resolve(proto, base_dir: str | None, progress=None, limit: int | None = None) -> int:
    """Read every externally stored tensor of ``proto`` into ``raw_data`` (in place); returns their count.

    Locations are resolved relative to ``base_dir`` (the directory of the file that refers to them);
    length and checksum are verified; paths escaping the directory are refused (ExternalDataError).
    ``limit``: refuse, before reading anything, when the declared lengths add up to more bytes.
    """
    pending = [(label, t) for label, t in iter_tensors(proto) if is_external(t)]
    total = sum(_size(t, None) for _, t in pending)
    if limit is not None and total > limit:
        raise ExternalDataError(f"its external data ({total} bytes) cannot be embedded in one .onnx "
                                "(protobuf is limited to 2 GiB); keep it external with --external-data FILE")
    stage = progress.stage("reading external data", len(pending)) if progress and pending else None
    for label, t in pending:
        try:
            data = tensors.read_external(t, base_dir)
        except ExternalDataError as e:
            raise ExternalDataError(f"{_describe(label, t)}: {_strip_label(str(e), t)}") from None
        t.ClearField("external_data")
        t.ClearField("data_location")
        t.raw_data = data
        if stage:
            stage.advance(1)
    return len(pending)


def _strip_label(message: str, t: TensorProto) -> str:
    for prefix in (f"tensor {t.name!r}: ", "an unnamed tensor: "):
        if message.startswith(prefix):
            return message[len(prefix):]
    return message


# ---------------------------------------------------------------------------------------------- writing
def output_location(path: str, model_dir: str, what: str = "external data file") -> str:
    """The location (POSIX, relative to ``model_dir``) under which ``path`` is referenced, or an error.

    Refuses a side file outside the model's directory: the reference would need ``..`` or an absolute
    path, which every careful reader (this one included) refuses, and a symlink must not redirect the
    write elsewhere.
    """
    base = os.path.realpath(model_dir)
    full = os.path.abspath(path)
    rel = os.path.relpath(full, os.path.abspath(model_dir))
    if rel == os.curdir or rel.split(os.sep)[0] == os.pardir or os.path.isabs(rel):
        raise ExternalDataError(f"{what} {path} is outside the model's directory {base}; a location must stay "
                                "inside it (write the side file next to the model or in a subdirectory)")
    real = os.path.realpath(full)
    if os.path.commonpath([base, real]) != base:
        raise ExternalDataError(f"{what} {path} resolves to {real}, outside the model's directory {base} "
                                "(symlink?); refusing to write there")
    location = rel.replace(os.sep, "/")
    tensors.safe_external_path(location, model_dir)  # the reader's own rules, once more
    return location


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def file_name_for(label: str, t: TensorProto, taken: set[str]) -> str:
    """A safe, unique file name for one tensor in directory mode: its name sanitized, plus ``.bin``."""
    stem = _UNSAFE.sub("_", t.name or label).strip("._-")[:100] or "tensor"
    name, n = stem + ".bin", 1
    while name.lower() in taken:  # case-insensitive: macOS and Windows file systems
        n += 1
        name = f"{stem}_{n}.bin"
    taken.add(name.lower())
    return name


def tensor_bytes(t: TensorProto) -> bytes | None:
    """The raw little-endian bytes of an inline tensor, or None when it cannot be stored externally."""
    try:
        dt = dtypes.from_enum(t.data_type)
    except KeyError:
        return None
    if dt.kind == "string":  # external data is raw_data, which strings cannot use
        return None
    if t.HasField("raw_data"):
        return t.raw_data
    return tensors.raw_bytes(tensors.to_array(t), dt)


def _clear_values(t: TensorProto) -> None:
    for field in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data",
                  "external_data"):
        t.ClearField(field)


class ExternalWriter:
    """Writes tensor bytes to one shared side file, or to one file per tensor in a directory."""

    def __init__(self, files, target: str, model_dir: str, *, per_tensor: bool, reserved=()):
        self.files = files  # an onnxtext.io.AtomicFiles
        self.target = target
        self.model_dir = model_dir
        self.per_tensor = per_tensor
        self.taken = {os.path.basename(r).lower() for r in reserved}
        self.by_file: dict[str, list] = {}  # location -> [stream, sha1, offset, tensors]
        if per_tensor:  # refuse a directory leading out at once, not at its first big tensor
            output_location(os.path.join(target, "tensor.bin"), model_dir, "external data directory")
        else:
            self.location = output_location(target, model_dir)
            if any(os.path.realpath(target) == os.path.realpath(r) for r in reserved):
                raise ExternalDataError(f"external data file {target} is the output file itself; choose another "
                                        "name (e.g. weights.bin)")

    def add(self, label: str, t: TensorProto, data) -> None:
        if self.per_tensor:
            path = os.path.join(self.target, file_name_for(label, t, self.taken))
            location = output_location(path, self.model_dir)
        else:
            path, location = self.target, self.location
        entry = self.by_file.get(location)
        if entry is None:
            entry = self.by_file[location] = [self.files.open(path), hashlib.sha1(), 0, []]
        stream, sha1, offset, members = entry
        pad = (-offset) % ALIGNMENT
        if pad:
            stream.write(b"\0" * pad)
            sha1.update(b"\0" * pad)
            offset += pad
        stream.write(data)
        sha1.update(data)
        entry[2] = offset + len(data)
        _clear_values(t)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", location), ("offset", str(offset)), ("length", str(len(data)))):
            e = t.external_data.add()
            e.key, e.value = key, value
        members.append(t)

    def finish(self) -> list[str]:
        """Adds the checksum entries once every file is complete; returns the locations written."""
        for stream, sha1, _, members in self.by_file.values():
            stream.flush()
            digest = sha1.hexdigest()
            for t in members:
                e = t.external_data.add()
                e.key, e.value = "checksum", digest
        return list(self.by_file)


def externalize(proto, files, target: str, model_dir: str, *, threshold: int = DEFAULT_THRESHOLD,
                base_dir: str | None = None, progress=None, reserved=(), source: str | None = None) -> list[str]:
    """Move every tensor of ``proto`` holding at least ``threshold`` bytes to side files (in place).

    ``target`` is a file (one shared file) or an existing directory (one file per tensor, named after
    the tensor). ``model_dir`` is the directory of the model or text that will refer to them: locations
    are relative to it and must stay inside it. Tensors already stored externally are copied from their
    current location (relative to ``base_dir``; ``source`` names that file in errors), one at a time.
    Writes go through ``files`` (:class:`onnxtext.io.AtomicFiles`): nothing appears until the caller
    commits. Returns the locations.
    """
    per_tensor = os.path.isdir(target)
    writer = ExternalWriter(files, target, model_dir, per_tensor=per_tensor, reserved=reserved)
    todo = []
    for label, t in iter_tensors(proto):
        if is_external(t):  # read when written: one tensor in memory at a time
            todo.append((label, t, None))
            continue
        data = tensor_bytes(t)
        if data is not None and len(data) >= threshold and len(data) > 0:
            todo.append((label, t, data))
    stage = progress.stage("writing external data", sum(_size(t, d) for _, t, d in todo)) \
        if progress and todo else None
    for label, t, data in todo:
        if data is None:
            try:
                data = tensors.read_external(t, base_dir)
            except ExternalDataError as e:
                where = f"{source}: " if source else ""
                raise ExternalDataError(f"{where}{_describe(label, t)}: {_strip_label(str(e), t)}") from None
            if len(data) < threshold:  # the threshold applies to tensors that were external too
                _clear_values(t)
                t.ClearField("data_location")
                t.raw_data = data
                continue
        writer.add(label, t, data)
        if stage:
            stage.advance(len(data))
    return writer.finish()


RELOCATE_MODES = ("auto", "copy", "keep")


def relocate(proto, files, source_dir: str, target_dir: str, *, mode: str = "auto", reserved=(),
             source: str | None = None) -> list[str]:
    """Make the external references of ``proto`` (relative to ``source_dir``) right for a file written in
    ``target_dir``; returns the side files copied.

    ``mode``: ``"auto"`` rewrites a location relative to ``target_dir`` when the data file lies inside that
    directory, and otherwise copies the file next to the output under its own location; ``"copy"`` always
    copies; ``"keep"`` changes nothing. Locations never escape: a source location leading out of
    ``source_dir`` is refused (as when reading), and so is a copy that would land outside ``target_dir``.
    Copies go through ``files`` (:class:`onnxtext.io.AtomicFiles`), a file at a time, and appear only when
    the caller commits; a side file that already is the very file read from is left alone.
    """
    if mode not in RELOCATE_MODES:
        raise ValueError(f"mode must be one of {RELOCATE_MODES}, not {mode!r}")
    by_location: dict[str, list[TensorProto]] = {}
    first_label = {}
    for label, t in iter_tensors(proto):
        if is_external(t):
            location = tensors.external_info(t).get("location", "")
            by_location.setdefault(location, []).append(t)
            first_label.setdefault(location, _describe(label, t))
    if mode == "keep" or not by_location:
        return []
    where = f"{source}: " if source else ""
    target_real = os.path.realpath(target_dir)
    reserved_real = {os.path.realpath(r) for r in reserved}
    copied = []
    for location, members in by_location.items():
        try:
            src = tensors.safe_external_path(location, source_dir)
        except ExternalDataError as e:
            raise ExternalDataError(f"{where}{first_label[location]}: {e}") from None
        rel = os.path.relpath(src, target_real)
        if mode == "auto" and rel.split(os.sep)[0] != os.pardir and not os.path.isabs(rel):
            new = rel.replace(os.sep, "/")
        else:
            dest = os.path.join(target_dir, *location.replace("\\", "/").split("/"))
            new = output_location(dest, target_dir)
            if os.path.realpath(dest) in reserved_real:
                raise ExternalDataError(f"{where}external data {location!r} would be copied over the output "
                                        f"file {dest}; write the output elsewhere")
            if os.path.realpath(dest) != src:
                _copy_file(files, src, dest, location, where)
                copied.append(dest)
        if new != location:
            for t in members:
                for e in t.external_data:
                    if e.key == "location":
                        e.value = new
    return copied


def _copy_file(files, src: str, dest: str, location: str, where: str) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(dest)), exist_ok=True)
    try:
        with tensors.open_data_file(src) as f:
            out = files.open(dest)
            for block in iter(lambda: f.read(1 << 22), b""):
                out.write(block)
    except OSError as e:
        raise ExternalDataError(f"{where}cannot copy external data {location!r} ({src}): {e.strerror}") from None


def _size(t: TensorProto, data) -> int:
    if data is not None:
        return len(data)
    length = tensors.external_info(t).get("length", "")
    return int(length) if length.isdigit() else 0


def external_locations(proto) -> list[str]:
    """The distinct external data locations ``proto`` refers to, in order of first use."""
    seen = {}
    for _, t in iter_tensors(proto):
        if is_external(t):
            seen.setdefault(tensors.external_info(t).get("location", ""), None)
    return list(seen)
