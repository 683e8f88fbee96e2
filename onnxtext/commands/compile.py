"""``onnxtext compile IN.onnxtext -o OUT.onnx``: text -> binary model (atomic; nothing written on error).

Without ``--external-data`` every tensor ends up inside OUT (external references of the input are read,
checked and embedded), so OUT stands alone. With ``--external-data PATH`` every tensor of at least
``--external-threshold`` bytes is streamed to PATH (a file, or an existing directory for one file per
tensor) and OUT refers to it: the way to write models above protobuf's 2 GiB limit. ``--external-files auto``
keeps the input's side files: OUT refers to them (or to copies next to OUT).
"""

from __future__ import annotations

from .print_ import add_external_arguments, add_progress_arguments

HELP = "compile onnxtext to a binary .onnx model"
_PROTOBUF_LIMIT = 2 ** 31


def add_arguments(p):
    p.add_argument("input", help="text model (.onnxtext, .onnxtxt) or binary model")
    p.add_argument("-o", "--output", required=True, help="output .onnx file (or .onnxtext for canonical text)")
    p.add_argument("--check", action="store_true", help="also run onnx.checker.check_model on the result "
                   "(reads all external data into memory first)")
    add_external_arguments(p, "output model")
    p.add_argument("--external-files", choices=("embed", "auto", "copy", "keep"), default="embed",
                   help="the input's external data: 'embed' (default) reads it into OUT; 'auto' keeps it external, "
                   "locations rewritten relative to OUT when the files are inside OUT's directory, else the files "
                   "copied next to OUT; 'copy' always copies; 'keep' leaves the locations unchanged")
    add_progress_arguments(p)


def run(args) -> int:
    from ..errors import OnnxTextError
    from ..io import load, model_dir, save
    from ..progress import from_args

    with from_args(args) as progress:
        # with --external-data, references stay references until they are copied one by one; embedding
        # 2 GiB or more cannot serialize, so that is refused before reading gigabytes. onnx.checker resolves
        # references against the current directory, so --check reads them first (and needs < 2 GiB).
        embed = args.external_files == "embed" and not args.external_data
        keep_external = not embed and not args.external_data  # --external-files: references stay references
        model = load(args.input, load_external_data=embed or (args.check and not keep_external), progress=progress,
                     external_limit=_PROTOBUF_LIMIT - 1)
        if args.check:
            import onnx

            progress.stage("checking", None)
            checked = model
            if keep_external:
                from ..external import resolve

                checked = onnx.ModelProto()
                checked.CopyFrom(model)
                resolve(checked, model_dir(args.input), limit=_PROTOBUF_LIMIT - 1)
            try:
                onnx.checker.check_model(checked)
            except onnx.checker.ValidationError as e:
                raise OnnxTextError(f"{args.input}: the model fails onnx.checker: {str(e).splitlines()[0]}") \
                    from None
        save(model, args.output, external_data=args.external_data, threshold=args.external_threshold,
             base_dir=model_dir(args.input), progress=progress, keep_model=False,
             source=args.input, external_files="auto" if embed else args.external_files)
    return 0
