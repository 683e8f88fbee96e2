"""``onnxtext compile IN.onnxtext -o OUT.onnx``: text -> binary model (atomic; nothing written on error).

Without ``--external-data`` every tensor ends up inside OUT (external references of the input are read,
checked and embedded), so OUT stands alone. With ``--external-data PATH`` every tensor of at least
``--external-threshold`` bytes is streamed to PATH (a file, or an existing directory for one file per
tensor) and OUT refers to it: the way to write models above protobuf's 2 GiB limit.
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
    add_progress_arguments(p)


def run(args) -> int:
    from ..errors import OnnxTextError
    from ..io import load, model_dir, save
    from ..progress import from_args

    with from_args(args) as progress:
        # with --external-data, references stay references until they are copied one by one; embedding
        # 2 GiB or more cannot serialize, so that is refused before reading gigabytes. onnx.checker resolves
        # references against the current directory, so --check reads them first (and needs < 2 GiB).
        model = load(args.input, load_external_data=not args.external_data or args.check, progress=progress,
                     external_limit=_PROTOBUF_LIMIT - 1)
        if args.check:
            import onnx

            progress.stage("checking", None)
            try:
                onnx.checker.check_model(model)
            except onnx.checker.ValidationError as e:
                raise OnnxTextError(f"{args.input}: the model fails onnx.checker: {str(e).splitlines()[0]}") \
                    from None
        save(model, args.output, external_data=args.external_data, threshold=args.external_threshold,
             base_dir=model_dir(args.input), progress=progress, keep_model=False,
             source=args.input)
    return 0
