"""``onnxtext lsp``: run the language server on stdin/stdout (for editors; see docs/editors.md)."""

from __future__ import annotations

HELP = "language server for editors (LSP over stdio)"


def add_arguments(parser) -> None:
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default and only "
                        "transport; accepted because many clients pass it)")


def run(args) -> int:
    try:
        from ..lsp.server import serve
    except ImportError as e:  # pygls / lsprotocol are an optional extra
        from ..errors import OnnxTextError

        raise OnnxTextError(f"the language server needs pygls and lsprotocol ({e.name} is missing): "
                            f"pip install 'onnxtext[lsp]'") from None
    serve()
    return 0
