"""``onnxtext fmt FILE...``: rewrite onnxtext files in canonical form, in place, keeping their comments, number
spellings, tensor literal lines and aligned end-of-line comments (docs/fmt.md).

``--check`` rewrites nothing and lists the files that would change (for CI). ``-`` formats stdin to
stdout. A directory stands for the .onnxtext/.onnxtxt files under it. A file that does not parse is
reported (file:line:col) and left untouched; the others are still formatted.

Exit status: 0 all files canonical (or rewritten); 1 with ``--check`` some file would change, or some file
has a syntax error; 2 some file could not be read (missing, a directory without text models, binary).
"""

from __future__ import annotations

import os
import sys

HELP = "rewrite .onnxtext files in canonical form"


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="text models (.onnxtext, .onnxtxt), directories holding them, or - for stdin to stdout")
    p.add_argument("--check", action="store_true",
                   help="write nothing; list the files that would change and exit 1 if there are any")
    p.add_argument("-q", "--quiet", action="store_true", help="do not report reformatted files")
    p.add_argument("--width", type=int, default=100, help="line width of the canonical layout (default 100)")


def _expand(files):
    """Arguments -> files: a directory stands for the text models under it, in sorted order."""
    from ..io import TEXT_EXTENSIONS

    out = []
    for f in files:
        if f != "-" and os.path.isdir(f):
            found = sorted(os.path.join(d, n) for d, _, names in os.walk(f) for n in names
                           if n.endswith(TEXT_EXTENSIONS))
            out.extend(found or [f])  # a directory without text models: reported as unreadable below
        else:
            out.append(f)
    return out


def _read(path: str) -> str:
    from ..errors import ModelFileError
    from ..io import looks_like_text, read_text_or_bytes

    if path == "-":
        data = sys.stdin.buffer.read()
    else:
        if os.path.isdir(path):
            raise ModelFileError(f"{path}: is a directory without .onnxtext or .onnxtxt files")
        data = read_text_or_bytes(path)
    if data and not looks_like_text(data):
        raise ModelFileError(f"{path}: a binary model; fmt rewrites text files (use onnxtext print)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelFileError(f"{path}: not valid UTF-8 text (byte {e.start})") from None


def run(args) -> int:
    from ..errors import ModelFileError, OnnxTextError
    from ..formatter import format_text
    from ..io import atomic_write

    status = 0
    changed = []
    for path in _expand(args.files):
        name = "<stdin>" if path == "-" else path
        try:
            text = _read(path)
        except ModelFileError as e:  # missing, unreadable, binary
            print(f"onnxtext fmt: error: {e}", file=sys.stderr)
            status = 2
            continue
        try:
            result = format_text(text, filename=name, width=args.width)
        except OnnxTextError as e:  # syntax errors: file:line:col, the line and a caret
            print(str(e), file=sys.stderr)
            status = max(status, 1)
            continue
        if path != "-" and result != text and not args.check:
            try:
                atomic_write(path, result)
            except (OnnxTextError, OSError) as e:  # e.g. a read-only directory: the file is unchanged
                detail = f"{path}: cannot write: {e.strerror}" if isinstance(e, OSError) else str(e)
                print(f"onnxtext fmt: error: {detail}", file=sys.stderr)
                status = 2
                continue
        if path == "-" and not args.check:
            sys.stdout.write(result)
            sys.stdout.flush()
        if result != text:
            changed.append(name)
            if args.check:
                print(f"would reformat {name}")
            elif path != "-" and not args.quiet:
                print(f"reformatted {name}", file=sys.stderr)
    if args.check and changed:
        status = max(status, 1)
    return status
