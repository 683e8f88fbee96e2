"""``onnxtext repl [FILE]``: interactive model building and evaluation (see onnxtext/repl/ and docs/repl.md)."""

from __future__ import annotations

HELP = "interactive model building and evaluation"


def add_arguments(parser) -> None:
    parser.add_argument("file", nargs="?", help="a model (.onnx or .onnxtext) to continue from")
    parser.add_argument("--seed", type=int, default=0,
                        help="seed of the random sample values given to inputs (default 0)")


def run(args) -> int:
    from ..repl import main

    return main(args.file, seed=args.seed)
