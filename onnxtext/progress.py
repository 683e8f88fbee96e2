"""Progress bars on a terminal for long CLI operations (print/compile of large models).

A :class:`Progress` reports stages (reading, parsing, writing external data, printing, writing); it draws a
prompt_toolkit ``ProgressBar`` on stderr only when stderr is a terminal and the work is large (a stage
of at least ``LARGE_BYTES``), and stays silent otherwise. Stdout is never touched, so ``print`` output
piped elsewhere stays clean even when the bar is forced on.
"""

from __future__ import annotations

import os
import sys

LARGE_BYTES = 50 * 1024 * 1024  # below this a run takes a second or two: no bar


class _Stage:
    def __init__(self, counter=None):
        self.counter = counter

    def advance(self, n: int) -> None:
        if self.counter is not None:
            self.counter.items_completed += n
            self.counter.progress_bar.invalidate()

    def finish(self) -> None:
        if self.counter is not None:
            if self.counter.total is not None:
                self.counter.items_completed = self.counter.total
            self.counter.done = True


class Progress:
    """Stage reporter. ``mode``: "auto" (TTY and large), "on" (always draw), "off" (never)."""

    def __init__(self, mode: str = "auto", stream=None):
        self.stream = stream or sys.stderr
        self.mode = mode
        self.enabled = mode == "on" or (mode == "auto" and _isatty(self.stream))
        self._bar = None
        self._current: _Stage | None = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def stage(self, label: str, total: int | None) -> _Stage:
        """Start a stage of ``total`` units (bytes or items; None: unknown); the previous one is done."""
        if self._current is not None:
            self._current.finish()
        if self.enabled and self._bar is None and (self.mode == "on" or (total or 0) >= LARGE_BYTES):
            self._start()
        # an unknown amount of work counts as one unit: 0% while it runs, 100% once the next stage starts
        counter = self._bar(label=label, total=1 if total is None else total) if self._bar is not None else None
        self._current = _Stage(counter)
        return self._current

    def _start(self) -> None:
        from prompt_toolkit.input import create_pipe_input
        from prompt_toolkit.output import create_output
        from prompt_toolkit.shortcuts.progress_bar import ProgressBar, formatters

        fmt = [formatters.Label(suffix=": "), formatters.Percentage(), formatters.Text(" "), formatters.Bar(),
               formatters.Text(" "), formatters.TimeElapsed()]
        # A pipe nobody writes to as input: the terminal stays in cooked mode (Ctrl-C is a plain SIGINT to the
        # main thread) and, unlike DummyInput, it never reports end of input, which would end the bar early.
        self._input = create_pipe_input()
        self._bar = ProgressBar(formatters=fmt, output=create_output(stdout=self.stream),
                                input=self._input.__enter__())
        self._bar.__enter__()

    def close(self) -> None:
        if self._current is not None:
            self._current.finish()
            self._current = None
        if self._bar is not None:
            bar, self._bar = self._bar, None
            try:
                bar.__exit__(None, None, None)
            finally:
                self._input.__exit__(None, None, None)


def _isatty(stream) -> bool:
    try:
        return stream.isatty() and os.environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def from_args(args) -> Progress:
    """The reporter for a command's ``--progress`` / ``--quiet`` options."""
    if getattr(args, "quiet", False):
        return Progress("off")
    return Progress("on" if getattr(args, "progress", False) else "auto")
