"""``onnxtext diff A B``: semantic diff of two models, any mix of .onnx and .onnxtext files.

Output: a readable list of changes (ANSI colours when stdout is a terminal, ``--color`` to force),
``--text`` for a unified line diff of the two canonical texts, ``--format json`` for tools; ``--html OUT``
also draws both graphs in one picture (``view/diffscene.py``), which makes it usable as a git difftool.
Exit status like diff(1): 0 when the models are the same, 1 when they differ, 2 on trouble (cli.py maps
load and parse errors to 2 for this command).
"""

from __future__ import annotations

import os
import sys

HELP = "semantic diff of two models"


def add_arguments(p):
    p.add_argument("a", metavar="A", help="first model (.onnx or onnxtext)")
    p.add_argument("b", metavar="B", help="second model (.onnx or onnxtext)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--text", action="store_true",
                      help="unified diff of the two canonical texts instead of the semantic diff")
    mode.add_argument("--format", choices=("text", "json"), default="text",
                      help="output format of the semantic diff (default text)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                   help="colour the text output (default auto: when stdout is a terminal and NO_COLOR is unset)")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing; only the exit status")
    p.add_argument("--html", metavar="OUT", help="also write both graphs in one picture, nodes marked added, "
                   "removed or changed: OUT.html (interactive page) or OUT.svg")
    p.add_argument("--open", action="store_true", help="open the --html page in the default web browser")


def run(args) -> int:
    from ..differ import compare, unified

    try:
        if args.text:
            out = unified(args.a, args.b)
            differs = bool(out)
            if _use_color(args.color):
                out = "".join(_paint_line(line) for line in out.splitlines(True))
        else:
            result = compare(args.a, args.b)
            differs = result.changed
            if args.format == "json":
                out = result.to_json()
            else:
                out = result.to_text(color=_use_color(args.color))
        if args.html:
            write_picture(args.html, args.a, args.b, args.open)
    except (ValueError, TypeError, RecursionError) as e:  # a model the differ cannot handle: trouble, exit 2
        print(f"onnxtext diff: error: {e}", file=sys.stderr)
        return 2
    if not args.quiet:
        sys.stdout.write(out)
        sys.stdout.flush()
    return 1 if differs else 0


def write_picture(out: str, a: str, b: str, open_it: bool) -> None:
    """The picture of the diff (``--html``), written atomically; .svg gives a static picture."""
    from ..errors import OnnxTextError
    from ..io import atomic_write
    from ..view import diff_html, diff_svg

    kind = os.path.splitext(out)[1].lower()
    if kind not in (".html", ".htm", ".svg"):
        raise OnnxTextError(f"{out}: unknown output kind {kind or '(no extension)'!r}: use .html or .svg")
    doc = diff_svg(a, b, a_label=a, b_label=b) if kind == ".svg" else diff_html(a, b, a_label=a, b_label=b)
    atomic_write(out, doc)
    if open_it:
        from .view import open_in_browser

        open_in_browser(out)


def _use_color(choice: str) -> bool:
    if choice != "auto":
        return choice == "always"
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _paint_line(line: str) -> str:
    """Colour a unified-diff line like git: headers bold, hunks cyan, removals red, additions green."""
    code = ("1" if line.startswith(("---", "+++")) else "36" if line.startswith("@@") else
            "31" if line.startswith("-") else "32" if line.startswith("+") else None)
    return line if code is None else f"\x1b[{code}m{line.rstrip(chr(10))}\x1b[0m\n"
