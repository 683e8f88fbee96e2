"""The ``onnxtext`` command line: a thin dispatcher over subcommand modules in onnxtext/commands/.

Each subcommand lives in ``onnxtext/commands/<name>.py`` exposing ``HELP`` (one line;
mirrored in COMMANDS below so ``--help`` imports nothing, and a test keeps the two equal),
``add_arguments(parser)`` and ``run(args) -> int``. Modules are imported only when their command runs,
so ``onnxtext --help`` stays fast. Every OnnxTextError becomes a clean message and exit status 1 or 2;
no Python traceback reaches the user.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

#: subcommand -> (module, one-line help). Order is the order shown by --help.
COMMANDS = {
    "print": ("print_", "print a model (.onnx or text) as canonical onnxtext"),
    "compile": ("compile", "compile onnxtext to a binary .onnx model"),
    "fmt": ("fmt", "rewrite .onnxtext files in canonical form"),
    "check": ("check", "check models against the ONNX IR spec rules"),
    "diff": ("diff", "semantic diff of two models"),
    "run": ("run", "run a model with the embedded evaluator"),
    "repl": ("repl", "interactive model building and evaluation"),
    "info": ("info", "summary of a model: IR version, opsets, sizes"),
    "view": ("view", "draw a model's graph as an HTML page or an SVG picture"),
    "lsp": ("lsp", "language server for editors (LSP over stdio)"),
    "git-setup": ("git_setup", "configure git to diff .onnx files as text"),
}


def _available():
    import importlib.util

    return {name: spec for name, spec in COMMANDS.items()
            if importlib.util.find_spec(f"onnxtext.commands.{spec[0]}") is not None}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="onnxtext", description="Read, write, diff and run ONNX models as text.")
    parser.add_argument("--version", action="version", version=f"onnxtext {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module, help_) in _available().items():
        p = sub.add_parser(name, help=help_, description=help_)
        if only == name:
            mod = importlib.import_module(f"onnxtext.commands.{module}")
            mod.add_arguments(p)
            p.set_defaults(_module=mod)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = next((a for a in argv if not a.startswith("-")), None)
    parser = build_parser(command if command in COMMANDS else None)
    args = parser.parse_args(argv)
    if not getattr(args, "_module", None):
        parser.print_help()
        return 0 if args.command is None and not argv else 2
    from .errors import OnnxTextError

    from .io import warnings_on_stderr

    try:
        with warnings_on_stderr(f"onnxtext {args.command}"):
            return int(args._module.run(args) or 0)
    except BrokenPipeError:  # the reader went away (``onnxtext run ... | head``): not an error
        return _quiet_after_broken_pipe()
    except OnnxTextError as e:
        if _caused_by_broken_pipe(e):  # e.g. raised by a --trace hook, wrapped by the evaluator
            return _quiet_after_broken_pipe()
        print(f"onnxtext {args.command}: error: {e}" if not _has_location(str(e)) else str(e), file=sys.stderr)
        return 2 if args.command == "diff" else 1
    except OSError as e:  # e.g. an output directory that does not exist
        print(f"onnxtext {args.command}: error: {e.filename or ''}: {e.strerror}", file=sys.stderr)
        return 2 if args.command == "diff" else 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except RecursionError:
        print(f"onnxtext {args.command}: error: input nested too deeply", file=sys.stderr)
        return 2 if args.command == "diff" else 1
    except Exception as e:  # a bug in onnxtext: say so in one line instead of a traceback
        print(f"onnxtext {args.command}: internal error: {type(e).__name__}: {e}\n"
              "this is a bug in onnxtext; please report it with the input that caused it "
              "(ONNXTEXT_TRACEBACK=1 shows the traceback)", file=sys.stderr)
        if os.environ.get("ONNXTEXT_TRACEBACK"):
            raise
        return 2 if args.command == "diff" else 1


def _caused_by_broken_pipe(e: BaseException) -> bool:
    seen = 0
    while e is not None and seen < 20:
        if isinstance(e, BrokenPipeError):
            return True
        e, seen = e.__cause__ or e.__context__, seen + 1
    return False


def _quiet_after_broken_pipe() -> int:
    """Point stdout at /dev/null so that Python's final flush does not complain about the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is not a real file (tests capture it)
        pass
    return 0


def _has_location(message: str) -> bool:
    """True when a message already starts with ``file:line:col:`` or ``file:``."""
    first = message.split("\n", 1)[0]
    head = first.split(": ", 1)[0]
    return ": " in first and (":" in head or "/" in head or "." in head)


if __name__ == "__main__":
    sys.exit(main())
