"""``onnxtext view MODEL [-o OUT.html|OUT.svg] [--open]``: the model's graph as a self-contained HTML page
(pan, zoom, search, click a node for its onnxtext and source line) or a standalone SVG picture.

Without ``-o`` the page is written next to the model (``model.onnx`` -> ``model.onnx.html``). The output is
written atomically: an error never leaves a half-written file.
"""

from __future__ import annotations

import os

HELP = "draw a model's graph as an HTML page or an SVG picture"


def add_arguments(p):
    p.add_argument("model", metavar="MODEL", help="model (.onnx or onnxtext)")
    p.add_argument("-o", "--output", metavar="OUT",
                   help="output file: .html (interactive page) or .svg (picture); default MODEL.html")
    p.add_argument("--open", action="store_true", help="open the page in the default web browser")
    p.add_argument("--expand", action="store_true",
                   help="show subgraph and function clusters open when the page loads (default: collapsed)")


def run(args) -> int:
    from ..errors import OnnxTextError
    from ..io import atomic_write
    from ..view import load_for_view, view_html, view_svg

    out = args.output or args.model + ".html"
    kind = os.path.splitext(out)[1].lower()
    if kind not in (".html", ".htm", ".svg"):
        raise OnnxTextError(f"{out}: unknown output kind {kind or '(no extension)'!r}: use .html or .svg")
    model, text = load_for_view(args.model)
    if kind == ".svg":
        doc = view_svg(model, text)
    else:
        doc = view_html(model, text, title=os.path.basename(args.model), source=args.model, expanded=args.expand)
    atomic_write(out, doc)
    print(f"wrote {out}")
    if args.open:
        open_in_browser(out)
    return 0


def open_in_browser(path: str) -> None:
    import pathlib
    import webbrowser

    webbrowser.open(pathlib.Path(path).resolve().as_uri())
