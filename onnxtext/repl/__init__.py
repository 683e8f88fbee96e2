"""``onnxtext repl``: build and run ONNX models interactively, one statement at a time.

:mod:`.session` holds the model and the values and runs statements; :mod:`.commands` the ``:commands``;
:mod:`.statements` decides what a statement is and whether it is complete; :mod:`.schemas` knows the
operators; :mod:`.values` shows values; :mod:`.completion` and :mod:`.app` are the prompt_toolkit front end.
"""

from .session import Reply, Session

__all__ = ["Reply", "Session", "main"]


def main(path: str | None = None, **options) -> int:
    """Run the interactive REPL (or read statements from a non-terminal stdin); returns an exit status."""
    from .app import main as app_main

    return app_main(path, **options)
