"""``onnxtext check FILE...``: IR-spec diagnostics for models (text or binary), all of them at once.

Text output is ``file:line:col: severity[rule]: message`` per diagnostic, then the source line and a caret when
the model came from text (``file: path: ...`` for a binary model, which has no lines). ``--format json`` prints
a list of objects for tools. ``--strict`` turns the spec rules runtimes tolerate into errors, ``--lint`` adds
style advice (model domain, identifier names). Exit status: 0 when no file has an error, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import sys

HELP = "check models against the ONNX IR spec rules"


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE", help="model files (.onnx or onnxtext)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default text)")
    p.add_argument("--no-warnings", action="store_true", help="report errors only")
    p.add_argument("--rule", action="append", metavar="ID", help="run only this rule (repeatable)")
    add_level_arguments(p)


def add_level_arguments(p):
    """--strict and --lint, shared with ``compile``."""
    p.add_argument("--strict", action="store_true", help="spec rules runtimes tolerate (duplicate node names, "
                   "a domain imported twice with one version) are errors, not warnings")
    p.add_argument("--lint", action="store_true", help="also give style advice every exporter triggers "
                   "(model domain, names that are not C identifiers)")


def run(args) -> int:
    from ..checker import check

    failed = False
    out = []
    for path in args.files:
        if not os.path.exists(path) or os.path.isdir(path):
            print(f"{path}: {'is a directory' if os.path.isdir(path) else 'no such file'}", file=sys.stderr)
            failed = True
            continue
        diags = check(path, filename=path, rules=set(args.rule) if args.rule else None, strict=args.strict,
                      lint=args.lint)
        if args.no_warnings:
            diags = [d for d in diags if d.severity == "error"]
        failed |= any(d.severity == "error" for d in diags)
        if args.format == "json":
            out += [d.to_dict() for d in diags]
        else:
            for d in diags:
                print(d.format(caret=True))
    if args.format == "json":
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif not failed and sys.stderr.isatty():
        print(f"{len(args.files)} file{'s' if len(args.files) != 1 else ''} checked: no errors", file=sys.stderr)
    return 1 if failed else 0
