"""``onnxtext compile IN.onnxtext -o OUT.onnx``: text -> binary model (atomic; nothing written on error).

The model is checked first (``onnxtext check``'s rules, types and shapes included): errors are printed, all of
them, with file, line, column, the source line and a caret, and stop the compile (exit 1, nothing written);
warnings are printed and the compile goes on. ``--no-check`` skips the check.

Without ``--external-data`` every tensor ends up inside OUT (external references of the input are read,
checked and embedded), so OUT stands alone. With ``--external-data PATH`` every tensor of at least
``--external-threshold`` bytes is streamed to PATH (a file, or an existing directory for one file per
tensor) and OUT refers to it: the way to write models above protobuf's 2 GiB limit. ``--external-files auto``
keeps the input's side files: OUT refers to them (or to copies next to OUT).

A binary whose messages nest deeper than protobuf's decoding limit of 100 (about 32 nested If/Loop/Scan bodies)
is refused, since nothing could read it back; ``--allow-deep`` writes it anyway (docs/limits.md).
"""

from __future__ import annotations

import argparse
import sys

from .check import add_level_arguments
from .print_ import add_external_arguments, add_progress_arguments

HELP = "compile onnxtext to a binary .onnx model"
_PROTOBUF_LIMIT = 2 ** 31


def add_arguments(p):
    p.add_argument("input", help="text model (.onnxtext, .onnxtxt) or binary model")
    p.add_argument("-o", "--output", required=True, help="output .onnx file (or .onnxtext for canonical text)")
    p.add_argument("--no-check", action="store_true", help="write the model without checking it first")
    p.add_argument("--check", action="store_true", help=argparse.SUPPRESS)  # the default; kept for old scripts
    p.add_argument("--no-warnings", action="store_true", help="do not print warnings")
    p.add_argument("--allow-deep", action="store_true",
                   help="write a binary whose messages nest deeper than protobuf's decoding limit of 100 (no reader "
                   "with protobuf's defaults can read it back; refused without this flag)")
    add_level_arguments(p)
    add_external_arguments(p, "output model")
    p.add_argument("--external-files", choices=("embed", "auto", "copy", "keep"), default="embed",
                   help="the input's external data: 'embed' (default) reads it into OUT; 'auto' keeps it external, "
                   "locations rewritten relative to OUT when the files are inside OUT's directory, else the files "
                   "copied next to OUT; 'copy' always copies; 'keep' leaves the locations unchanged")
    add_progress_arguments(p)


def run(args) -> int:
    from ..errors import OnnxTextError
    from ..io import TEXT_EXTENSIONS, load, model_dir, save
    from ..protodepth import too_deep_to_decode
    from ..progress import from_args

    with from_args(args) as progress:
        # with --external-data, references stay references until they are copied one by one; embedding
        # 2 GiB or more cannot serialize, so that is refused before reading gigabytes. The check reads no
        # external data (it checks the references against the input's directory).
        embed = args.external_files == "embed" and not args.external_data
        model = load(args.input, load_external_data=embed, progress=progress, external_limit=_PROTOBUF_LIMIT - 1)
        if not args.no_check:
            progress.stage("checking", None)
            if not report(args, model):
                return 1
        if not args.allow_deep and not args.output.endswith(TEXT_EXTENSIONS):
            error = too_deep_to_decode(model, args.output)
            if error:
                raise OnnxTextError(error)
        save(model, args.output, external_data=args.external_data, threshold=args.external_threshold,
             base_dir=model_dir(args.input), progress=progress, keep_model=False,
             source=args.input, external_files="auto" if embed else args.external_files)
    return 0


def report(args, model) -> bool:
    """Check the loaded model and print its diagnostics to stderr; False when there is an error."""
    from ..checker import check
    from ..io import looks_like_text, model_dir, read_text_or_bytes

    data = read_text_or_bytes(args.input, None, None)  # the text gives the diagnostics their lines
    text = data.decode("utf-8", "replace") if looks_like_text(data) else None
    diags = check(model, filename=args.input, text=text,
                  strict=args.strict, lint=args.lint, base_dir=model_dir(args.input))
    errors = [d for d in diags if d.severity == "error"]
    for d in diags:
        if d.severity == "error" or not args.no_warnings:
            print(d.format(caret=True), file=sys.stderr)
    if errors:
        print(f"{args.input}: {len(errors)} error{'s' if len(errors) != 1 else ''}, nothing written "
              "(--no-check writes it anyway)", file=sys.stderr)
    return not errors
