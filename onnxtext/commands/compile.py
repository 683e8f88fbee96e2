"""``onnxtext compile IN.onnxtext -o OUT.onnx``: text -> binary model (atomic; nothing written on error)."""

from __future__ import annotations

HELP = "compile onnxtext to a binary .onnx model"


def add_arguments(p):
    p.add_argument("input", help="text model (.onnxtext, .onnxtxt) or binary model")
    p.add_argument("-o", "--output", required=True, help="output .onnx file (or .onnxtext for canonical text)")
    p.add_argument("--check", action="store_true", help="also run onnx.checker.check_model on the result")


def run(args) -> int:
    from ..errors import OnnxTextError
    from ..io import load, save

    model = load(args.input)
    if args.check:
        import onnx

        try:
            onnx.checker.check_model(model)
        except onnx.checker.ValidationError as e:
            raise OnnxTextError(f"{args.input}: the model fails onnx.checker: {str(e).splitlines()[0]}") from None
    save(model, args.output)
    return 0
