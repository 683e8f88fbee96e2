"""``onnxtext print IN [-o OUT]``: any model (binary or text) -> canonical onnxtext on stdout or a file.

Writes to stdout by default so it works as a git textconv driver (``git config diff.onnx.textconv
"onnxtext print"``).
"""

from __future__ import annotations

import sys

HELP = "print a model (.onnx or text) as canonical onnxtext"


def add_arguments(p):
    p.add_argument("input", help="model file (.onnx, .onnxtext, .onnxtxt)")
    p.add_argument("-o", "--output", help="write the text to this file (atomically) instead of stdout")
    p.add_argument("--elide", action="store_true", help="show big tensors as one-line summaries (for reading; "
                   "such text does not parse back)")
    p.add_argument("--max-inline", type=int, default=256, metavar="N",
                   help="raw tensors with more than N elements print as a base64 block (default 256; -1: never)")
    p.add_argument("--width", type=int, default=100, help="line width (default 100)")


def run(args) -> int:
    from ..io import atomic_write, load
    from ..printer import to_text

    model = load(args.input)
    text = to_text(model, width=args.width, elide=args.elide,
                   max_inline=None if args.max_inline < 0 else args.max_inline)
    if args.output:
        atomic_write(args.output, text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    return 0
