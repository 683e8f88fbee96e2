"""``onnxtext check FILE...``: IR-spec diagnostics for models (text or binary), all of them at once.

Text output is one line per diagnostic, ``file:line:col: severity[rule]: message`` (``file: path: ...`` when the
model came from a binary file and there is no line). ``--format json`` prints a list of objects for tools.
Exit status: 0 when no file has an error (warnings allowed), 1 otherwise.
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


def run(args) -> int:
    from ..checker import check

    failed = False
    out = []
    for path in args.files:
        if not os.path.isfile(path):
            print(f"{path}: no such file", file=sys.stderr)
            failed = True
            continue
        diags = check(path, filename=path, rules=set(args.rule) if args.rule else None)
        if args.no_warnings:
            diags = [d for d in diags if d.severity == "error"]
        failed |= any(d.severity == "error" for d in diags)
        if args.format == "json":
            out += [d.to_dict() for d in diags]
        else:
            for d in diags:
                print(d.format())
    if args.format == "json":
        json.dump(out, sys.stdout, indent=1)
        sys.stdout.write("\n")
    elif not failed and sys.stderr.isatty():
        print(f"{len(args.files)} file{'s' if len(args.files) != 1 else ''} checked: no errors", file=sys.stderr)
    return 1 if failed else 0
