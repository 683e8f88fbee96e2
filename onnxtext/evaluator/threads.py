"""How many BLAS threads the evaluator's runs use when the caller does not say: chosen by timing runs.

numpy's OpenBLAS starts one worker thread per core; the workers busy-wait between calls. On an idle
machine two threads make a CNN's large matmuls faster; on a machine whose cores are busy with other
work they starve each other and the run becomes many times slower than with one thread (measured on
the 2-core test VM beside a CPU-bound process: a SqueezeNet run 38 ms with one thread, 1977 ms with
two; onnxruntime's pool 18 -> 62 ms). No fixed count is right in both situations, and the machine
changes under a long-lived process, so :class:`ThreadChooser` measures:

* the first ``2 * WINDOW`` runs alternate between the library's own count and 1 thread;
* then every run uses the count whose recent runs were faster (median of the last ``WINDOW``);
* the other count is tried again once after ``gap`` runs (16, doubling up to 1024 while it keeps
  losing, back to 16 when it wins), so a machine that became busy or idle is noticed.

A run's time is what the chooser sees, so the decision is per model (a model without large matmuls
settles on whichever count, at no cost). The setting is process-wide (:func:`.runtime.set_blas_threads`);
``Evaluator(model, threads=N)`` fixes it instead, and then nothing is measured.
"""

from __future__ import annotations

import threading

#: runs per thread count whose median decides
WINDOW = 3
FIRST_GAP, LAST_GAP = 16, 1024


class ThreadChooser:
    """Chooses between ``most`` BLAS threads and 1 by timing runs (see the module docstring)."""

    def __init__(self, most: int, set_threads):
        self.options = (most, 1)
        self.set_threads = set_threads
        self.times: dict[int, list[float]] = {most: [], 1: []}
        self.best = most
        self.runs = 0
        self.gap = FIRST_GAP
        self.since_probe = 0
        self.lock = threading.Lock()
        self.current = most

    def pick(self) -> int:
        """The thread count for the next run (set in the library when it changes)."""
        with self.lock:
            self.runs += 1
            if self.runs <= 2 * WINDOW:
                want = self.options[self.runs % 2 == 0]
            elif self.since_probe >= self.gap:
                want = self.options[self.best == self.options[0]]  # the other one
                self.since_probe = 0
            else:
                want = self.best
                self.since_probe += 1
            if want != self.current:
                self.set_threads(want)
                self.current = want
            return want

    def record(self, threads: int, seconds: float) -> None:
        """The time of a run made with ``threads``."""
        with self.lock:
            if self.runs <= 2 * WINDOW:
                self.times[threads].append(seconds)
                if self.runs == 2 * WINDOW and all(self.times.values()):
                    self.best = min(self.options, key=lambda t: _median(self.times[t]))
                return
            if threads == self.best:
                recent = self.times[threads]
                recent.append(seconds)
                del recent[:-WINDOW]
            elif seconds < 0.9 * _median(self.times[self.best]):  # a probe of the other count won
                self.best, self.gap = threads, FIRST_GAP
                self.times[threads] = [seconds]
            else:
                self.gap = min(2 * self.gap, LAST_GAP)


def _median(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2]
