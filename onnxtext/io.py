"""Loading and saving models: binary ``.onnx`` and text ``.onnxtext``/``.onnxtxt``.

Text vs binary is decided by content, not only by extension. Writes are atomic: a temporary file in
the target directory is renamed over the destination only when complete, so a failure never leaves a
half-written file or clobbers an existing one.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import tempfile

from .errors import ModelFileError, OnnxTextError

TEXT_EXTENSIONS = (".onnxtext", ".onnxtxt")
_PAIRS_DATA = re.compile(r'=\s*\[\s*["\]]')  # also matches string lists: a false positive costs little
_CHUNK = 4 << 20  # bytes per read/write step when a progress bar is shown


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


#: Model files larger than this are refused before reading (``load(..., max_bytes=)`` or the environment
#: variable ``ONNXTEXT_MAX_FILE_BYTES`` raise it; docs/limits.md). Real models stay far below: protobuf
#: cannot even decode a binary of 2 GiB, and big weights belong in external data.
MAX_FILE_BYTES = 16 << 30
_PROTOBUF_LIMIT = 2 ** 31


def max_file_bytes() -> int:
    """The size cap for model files: ``$ONNXTEXT_MAX_FILE_BYTES`` when set, else :data:`MAX_FILE_BYTES`."""
    value = os.environ.get("ONNXTEXT_MAX_FILE_BYTES", "").strip()
    if value:
        try:
            return int(value)
        except ValueError:
            raise ModelFileError(f"ONNXTEXT_MAX_FILE_BYTES={value!r} is not a number of bytes") from None
    return MAX_FILE_BYTES


def open_model_file(path: str, max_bytes: int | None = None):
    """``(stream, size)`` for a model file that is a regular file within the size cap; ModelFileError else.

    FIFOs, devices (``/dev/zero``), sockets and directories are refused without reading from them (the open
    is non-blocking, so a FIFO with no writer cannot hang it).
    """
    import stat

    limit = max_file_bytes() if max_bytes is None else max_bytes
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ModelFileError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ModelFileError(f"{path}: is a directory, not a model file") from None
    except OSError as e:
        raise ModelFileError(f"{path}: cannot read: {e.strerror}") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise ModelFileError(f"{path}: is a directory, not a model file")
        if not stat.S_ISREG(st.st_mode):
            kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or \
                stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file"
            raise ModelFileError(f"{path}: is {kind}, not a regular file; model files are read only from "
                                 "regular files")
        if st.st_size > limit:
            raise ModelFileError(f"{path}: {st.st_size} bytes, above the model file size limit of {limit} bytes "
                                 "(raise it with ONNXTEXT_MAX_FILE_BYTES or load(..., max_bytes=); docs/limits.md)")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb"), st.st_size
    except BaseException:
        os.close(fd)
        raise


def read_text_or_bytes(path: str, progress=None, max_bytes: int | None = None) -> bytes | bytearray:
    """The whole file (a regular file within the size cap); with a progress reporter, read in chunks (into
    one buffer) so the bar moves."""
    f, size = open_model_file(path, max_bytes)
    limit = max_file_bytes() if max_bytes is None else max_bytes
    try:
        with f:
            if progress is None:
                data = f.read()  # a regular file within the cap (read(n) would allocate n bytes at once)
            else:
                stage = progress.stage("reading " + os.path.basename(path), size)
                buf = bytearray(size)
                view, pos = memoryview(buf), 0
                while pos < size:
                    n = f.readinto(view[pos:pos + _CHUNK])
                    if not n:
                        break
                    pos += n
                    stage.advance(n)
                view.release()
                rest = f.read()  # the file grew while we read it
                if pos < size:
                    del buf[pos:]
                buf += rest
                data = buf
    except OSError as e:
        raise ModelFileError(f"{path}: cannot read: {e.strerror}") from None
    if len(data) > limit:  # it grew past the cap while we read it
        raise ModelFileError(f"{path}: above the model file size limit of {limit} bytes (docs/limits.md)")
    return data


def read_model_source(path, progress=None, max_bytes: int | None = None):
    """The one loader that tells binary from text: the text (``str``) of an onnxtext file, or the decoded
    ``onnx.ModelProto`` of a binary one. ModelFileError for missing, empty, special, oversized, corrupt or
    non-UTF-8 files. :func:`load`, ``check`` and ``info`` all read files through it.
    """
    return _read_source(os.fspath(path), progress, max_bytes)[0]


def _read_source(path: str, progress, max_bytes):
    """``(text or ModelProto, whether a binary may hold external data, the file's bytes)``."""
    data = read_text_or_bytes(path, progress, max_bytes)
    if not data[:4096].strip() and not data.strip():  # strip() copies: only when the start is blank
        raise ModelFileError(f"{path}: empty file, not an ONNX model")
    if looks_like_text(data) or path.endswith(TEXT_EXTENSIONS):
        if progress is not None:
            progress.stage("parsing", None)
        try:
            return data.decode("utf-8", errors="strict"), False, data
        except UnicodeDecodeError as e:
            line = data.count(b"\n", 0, e.start) + 1
            column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
            raise ModelFileError(f"{path}:{line}:{column}: not valid UTF-8 (byte 0x{data[e.start]:02x} at offset "
                                 f"{e.start}), and not a binary ONNX model") from None
    if progress is not None:
        progress.stage("decoding", None)
    # TensorProto field 14 (data_location), varint 1 (EXTERNAL): a scan of the bytes is ~100x cheaper than
    # walking every attribute of the decoded model, and rules out external data in most models
    return load_binary(data, path), b"\x70\x01" in data, data


def load(path, *, kind: str = "model", load_external_data: bool = True, progress=None,
         external_limit: int | None = None, max_bytes: int | None = None):
    """Load a model from ``path`` (binary or text). Text may also hold a graph/function with kind='any'.

    External data is read into the tensors (like ``onnx.load``), resolved relative to the directory of
    ``path``, verified (length, checksum) and refused when its location escapes that directory.
    ``load_external_data=False`` keeps the references as they are (what ``print`` shows).
    ``external_limit``: refuse, before reading any, external data adding up to more bytes than this.
    ``max_bytes``: the model file size cap (default :func:`max_file_bytes`).
    """
    path = os.fspath(path)
    source, maybe_binary_external, data = _read_source(path, progress, max_bytes)
    is_text = isinstance(source, str)
    size = len(data)
    if is_text:  # only a binary's bytes are of use below
        data = None
    # fields onnx.proto does not describe: kept (printed as @unknown), and the user is told (a text holds
    # them only where it says @unknown / unknown:)
    may_hold_unknown = not is_text or "unknown" in source
    if is_text:
        from .syntax.parser import parse, parse_model

        # walking every attribute of a 50,000-node model costs ~0.3 s in Python; a scan of the text is much
        # cheaper and rules out external data in most models (a false positive only costs the walk)
        maybe_external = load_external_data and _may_reference_external_data(source)
        model = parse_model(source, filename=path) if kind == "model" else parse(source, filename=path)
        del source
    else:
        model = source
        maybe_external = load_external_data and maybe_binary_external
    if may_hold_unknown:
        from .wireformat import warn_unknown

        # a binary's own bytes make the check cheaper (a second decoding, not a copy of every message)
        warn_unknown(model, path, size, data)
    del data
    if maybe_external:
        from .errors import ExternalDataError
        from .external import resolve

        try:
            resolve(model, model_dir(path), progress, limit=external_limit)
        except ExternalDataError as e:
            raise ExternalDataError(f"{path}: {e}") from None
    return model


def _may_reference_external_data(text: str) -> bool:
    """False only when no tensor in the text can have data_location EXTERNAL."""
    # external data is `= [` pairs `]` (or `= []`), or an @data_location EXTERNAL annotation
    return _PAIRS_DATA.search(text) is not None or "EXTERNAL" in text


@contextlib.contextmanager
def warnings_on_stderr(prefix: str):
    """Inside the block, onnxtext's own warnings (:class:`onnxtext.wireformat.UnknownFieldsWarning`) print as one
    ``PREFIX: warning: message`` line on stderr, each once; other warnings as Python shows them."""
    import warnings

    from .wireformat import UnknownFieldsWarning

    shown = warnings.showwarning

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, UnknownFieldsWarning):
            print(f"{prefix}: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    with warnings.catch_warnings():
        warnings.simplefilter("once", UnknownFieldsWarning)
        warnings.showwarning = show
        yield


def model_dir(path) -> str:
    """The directory external data locations of the file ``path`` are relative to."""
    return os.path.dirname(os.path.abspath(os.fspath(path)))


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
        if "MaxDepth" in str(e):
            from .protodepth import TOO_DEEP
            raise ModelFileError(f"{path}: {TOO_DEEP}") from None
        raise ModelFileError(f"{path}: not a valid ONNX model (truncated or corrupt protobuf: {e})") from None
    if not m.HasField("graph") and not m.opset_import and not m.ir_version:
        raise ModelFileError(f"{path}: not an ONNX model (no graph, opset_import or ir_version)")
    return m


class AtomicFiles:
    """Several output files that appear together or not at all.

    ``open(path)`` returns a binary stream on a temporary file next to ``path``; ``commit()`` renames every
    temporary over its destination in the order they were opened (so side files land before the model
    referring to them); leaving the ``with`` block by an exception removes every temporary instead. While
    the block runs in the main thread, SIGTERM raises ``SystemExit`` so that a killed run removes its
    temporaries too (neither a partial output nor a stray temporary file remains).

    Destinations, decided once for every command that writes: a symlink is written through (the link stays,
    the file it points to is replaced); an existing FIFO, device, socket or directory is refused, and so is
    an existing file without write permission (a read-only file is not silently replaced).
    """

    def __init__(self):
        self._pending: list[tuple[str, str, object]] = []  # (destination, temporary, stream)
        self._previous_handler = None

    def __enter__(self):
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            try:
                self._previous_handler = signal.signal(signal.SIGTERM, _terminated)
            except (ValueError, OSError):
                self._previous_handler = None
        return self

    def __exit__(self, kind, value, tb):
        try:
            if kind is None:
                self.commit()
            else:
                self.abort()
        finally:
            if self._previous_handler is not None:
                import signal

                signal.signal(signal.SIGTERM, self._previous_handler)
                self._previous_handler = None

    def open(self, path):
        path = os.fspath(path)
        for dest, _, stream in self._pending:
            if dest == os.path.realpath(path):
                return stream
        dest = _destination(path)
        directory = os.path.dirname(dest)
        try:
            fd, tmp = tempfile.mkstemp(prefix=".onnxtext-", suffix=".tmp", dir=directory)
        except OSError as e:
            raise OnnxTextError(f"{path}: cannot write: {e.strerror}") from None
        stream = os.fdopen(fd, "wb")
        self._pending.append((dest, tmp, stream))
        return stream

    def write(self, path, data: bytes | str, progress=None) -> None:
        """Write all of ``data`` to ``path`` (in chunks when a progress reporter is given)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        stream = self.open(path)
        if progress is None:
            stream.write(data)
            return
        stage = progress.stage("writing " + os.path.basename(os.fspath(path)), len(data))
        view = memoryview(data)
        for pos in range(0, len(data), _CHUNK):
            stream.write(view[pos:pos + _CHUNK])
            stage.advance(len(view[pos:pos + _CHUNK]))

    def write_pieces(self, path, pieces, progress=None) -> None:
        """Write a printed text's pieces (:class:`onnxtext.printing.layout.TextPieces`) to ``path`` one after
        the other, each encoded as UTF-8: the whole text never exists in memory."""
        stream = self.open(path)
        stage = progress.stage("writing " + os.path.basename(os.fspath(path)), pieces.nbytes()) \
            if progress is not None else None
        for piece in pieces:
            data = piece.encode("utf-8")
            stream.write(data)
            if stage is not None:
                stage.advance(len(data))

    def commit(self) -> None:
        try:
            for dest, tmp, stream in self._pending:
                stream.close()
                _set_mode(tmp, dest)
            for dest, tmp, _ in self._pending:
                os.replace(tmp, dest)
        except BaseException:
            self.abort()
            raise
        self._pending = []

    def abort(self) -> None:
        for _, tmp, stream in self._pending:
            try:
                stream.close()
            except OSError:
                pass
            try:
                os.unlink(tmp)
            except OSError:
                pass
        self._pending = []


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


def _destination(path: str) -> str:
    """The file an output named ``path`` replaces (symlinks followed), or an OnnxTextError when it must not."""
    import stat

    dest = os.path.realpath(path)
    try:
        st = os.stat(dest)
    except FileNotFoundError:
        return dest
    except OSError as e:
        raise OnnxTextError(f"{path}: cannot write: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise OnnxTextError(f"{path}: is a directory; give a file name for the output")
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or \
            stat.S_ISBLK(st.st_mode) else "not a regular file"
        raise OnnxTextError(f"{path}: is {kind}; outputs are written only to regular files (atomically, by "
                            "renaming a complete temporary file), so it is left alone")
    if not st.st_mode & 0o222:
        raise OnnxTextError(f"{path}: is read-only; refusing to replace it (make it writable first)")
    return dest


def _set_mode(tmp: str, dest: str) -> None:
    """The destination's permissions if it exists, else the usual 0666 minus umask (mkstemp uses 0600)."""
    if os.path.exists(dest):
        os.chmod(tmp, os.stat(dest).st_mode & 0o7777)
    else:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)


def atomic_write(path: str, data: bytes | str, progress=None) -> None:
    """Write ``data`` to ``path`` atomically (temp file + rename in the same directory)."""
    with AtomicFiles() as files:
        files.write(path, data, progress)


def save(model, path, *, external_data: str | None = None, threshold: int | None = None, base_dir=None,
         progress=None, keep_model: bool = True, source: str | None = None, external_files: str = "auto",
         **print_options) -> None:
    """Save ``model`` to ``path``: text for .onnxtext/.onnxtxt, binary protobuf otherwise (atomic).

    ``external_data`` (a file, or an existing directory for one file per tensor) moves every tensor of at
    least ``threshold`` bytes (default 1024) there and writes references to it, relative to the directory
    of ``path``; the side files and the model appear together or not at all. Tensors that are already
    external are copied from their location relative to ``base_dir`` (``source`` names the file they
    come from in errors). Without ``external_data``, tensors that are still external references keep them,
    made right for the directory of ``path`` (``external_files``, see :func:`onnxtext.external.relocate`:
    ``"auto"`` rewrites the location or copies the file next to ``path``, ``"copy"``, ``"keep"``).
    ``model`` is left unchanged
    (``keep_model=False`` skips that copy for callers that drop the model: it then holds the references).
    """
    path = os.fspath(path)
    with AtomicFiles() as files:
        if external_data is not None:
            from .external import DEFAULT_THRESHOLD, externalize

            saved = _snapshot(model) if keep_model else []
            try:
                externalize(model, files, os.fspath(external_data), model_dir(path),
                            threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
                            base_dir=base_dir, progress=progress, reserved=[path], source=source)
                _write_model(files, model, path, progress, print_options)
            finally:
                _restore(saved)
        elif external_files != "keep" and base_dir is not None and \
                os.path.realpath(base_dir) != os.path.realpath(model_dir(path)):
            from .external import relocate

            saved = _snapshot(model, external_only=True) if keep_model else []
            try:
                relocate(model, files, os.fspath(base_dir), model_dir(path), mode=external_files, reserved=[path],
                         source=source)
                _write_model(files, model, path, progress, print_options)
            finally:
                _restore(saved)
        else:
            _write_model(files, model, path, progress, print_options)


def _write_model(files, model, path, progress, print_options):
    if path.endswith(TEXT_EXTENSIONS):
        from .printing.printer import to_text_pieces

        if progress is not None:
            progress.stage("printing", None)
        files.write_pieces(path, to_text_pieces(model, **print_options), progress)  # no whole-text string
        return
    from google.protobuf.message import EncodeError

    try:
        data = model.SerializeToString()
    except (ValueError, EncodeError) as e:  # protobuf refuses messages over 2 GiB
        raise OnnxTextError(f"{path}: cannot serialize the model ({e}): protobuf is limited to 2 GiB; store "
                            "the weights as external data (--external-data FILE)") from None
    files.write(path, data, progress)


def _snapshot(model, external_only: bool = False) -> list:
    """Each tensor with a copy of itself, so externalize() can be undone for a caller who keeps the model."""
    from onnx import TensorProto

    from .external import is_external, iter_tensors

    out = []
    for _, t in iter_tensors(model):
        if external_only and not is_external(t):
            continue
        copy = TensorProto()
        copy.CopyFrom(t)
        out.append((t, copy))
    return out


def _restore(saved) -> None:
    for t, copy in saved:
        t.CopyFrom(copy)
