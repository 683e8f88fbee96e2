"""``onnxtext print IN [-o OUT]``: any model (binary or text) -> canonical onnxtext on stdout or a file.

Writes to stdout by default so it works as a git textconv driver (``git config diff.onnx.textconv
"onnxtext print"``). External data references print as references and their files are not opened: git
hands textconv a temporary copy of the model, away from its data files. With ``-o`` in another directory the
references are made right for the text's directory (``--external-files``: rewritten, or the files copied).

``--external-data PATH`` moves every tensor of at least ``--external-threshold`` bytes to PATH (a file, or
an existing directory for one file per tensor) and prints references to it, relative to the directory of
the text (``-o``; the current directory for stdout). Side files and text appear together or not at all.
"""

from __future__ import annotations

import os
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
    p.add_argument("--brief", action="store_true", help="a reading view: hide metadata values and doc strings "
                   "longer than 60 characters, saying how many it hid (such text does not parse back)")
    p.add_argument("--shapes", action="store_true", help="add the inferred type of every node output of the main "
                   "graph as value_info, each marked '/// inferred by onnxtext print --shapes' (docs/checker.md)")
    add_external_arguments(p, "text")
    p.add_argument("--external-files", choices=("auto", "copy", "keep"), default="auto",
                   help="with -o in another directory than the model: 'auto' (default) rewrites external data "
                   "locations relative to the text when the files are inside its directory and copies them next "
                   "to it otherwise; 'copy' always copies; 'keep' leaves the locations unchanged")
    add_progress_arguments(p)


def add_external_arguments(p, what: str) -> None:
    """--external-data / --external-threshold, shared with ``compile``."""
    from ..external import DEFAULT_THRESHOLD

    p.add_argument("--external-data", metavar="PATH",
                   help=f"store large tensors in PATH and reference them from the {what}: a file (all tensors, "
                   "64-byte aligned), or an existing directory (one <tensor name>.bin per tensor); must be "
                   f"inside the {what}'s directory")
    p.add_argument("--external-threshold", type=int, default=DEFAULT_THRESHOLD, metavar="BYTES",
                   help=f"tensors of at least BYTES bytes go to --external-data (default {DEFAULT_THRESHOLD})")


def add_progress_arguments(p) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--progress", action="store_true", help="always draw a progress bar on stderr (default: "
                   "only on a terminal, for models over 50 MB)")
    g.add_argument("-q", "--quiet", action="store_true", help="never draw a progress bar")


def run(args) -> int:
    from ..external import externalize, relocate
    from ..io import AtomicFiles, load, model_dir
    from ..printing.printer import to_text_pieces
    from ..progress import from_args

    options = dict(width=args.width, elide=args.elide, brief=args.brief, max_inline=None if args.max_inline < 0 else args.max_inline)
    text_dir = model_dir(args.output) if args.output else os.getcwd()
    with from_args(args) as progress:
        model = load(args.input, load_external_data=False, progress=progress)
        if args.shapes:
            from ..checker.shapes import add_inferred_value_info

            add_inferred_value_info(model)
        with AtomicFiles() as files:
            if args.external_data:
                externalize(model, files, args.external_data, text_dir, threshold=args.external_threshold,
                            base_dir=model_dir(args.input), progress=progress,
                            reserved=[args.output] if args.output else (), source=args.input)
            elif args.output and text_dir != model_dir(args.input):
                relocate(model, files, model_dir(args.input), text_dir, mode=args.external_files,
                         reserved=[args.output], source=args.input)
            progress.stage("printing", None)
            text = to_text_pieces(model, **options)  # laid out (errors raised); blocks encoded while written
            if args.output:
                files.write_pieces(args.output, text, progress)
    if not args.output:  # after the side files are in place
        for piece in text:
            sys.stdout.write(piece)
        sys.stdout.flush()
    return 0
