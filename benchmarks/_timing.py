"""Timed calls shared by the evaluator benchmarks (eval_light.py, eval_models.py).

The fast runtimes (onnxtext, onnxruntime) alternate in rounds so that both see the same machine load on a
shared machine. Each round of a runtime starts with a pause and an untimed call: the worker threads of
onnxruntime and of numpy's OpenBLAS spin for a while after a run (OpenBLAS for about 0.1 s) and would slow
down whatever runs right after them, and they sleep after a pause (so the first call after it is slow).
"""

from __future__ import annotations

import time


def alternate_rounds(runners: dict, feeds, runs: int, pause: float = 0.3) -> dict[str, list[float]]:
    """{name: seconds of each timed call}: ``runs`` timed calls per runner, in 3 alternating rounds (1 when
    ``runs`` < 6), each round preceded by ``pause`` seconds and one untimed call."""
    times = {name: [] for name in runners}
    rounds = 3 if runs >= 6 else 1
    for i in range(rounds):
        for name, run in runners.items():
            time.sleep(pause)
            run(feeds)
            for _ in range(runs // rounds + (1 if i < runs % rounds else 0)):
                t0 = time.perf_counter()
                run(feeds)
                times[name].append(time.perf_counter() - t0)
    return times


def time_slow(run, feeds, runs: int, enough: float | None = None) -> list[float]:
    """Seconds of at most ``runs`` calls (at least one) of a slow runtime such as onnx.reference; stops
    early once a call took more than ``enough`` seconds."""
    times = []
    for _ in range(max(1, runs)):
        t0 = time.perf_counter()
        run(feeds)
        times.append(time.perf_counter() - t0)
        if enough is not None and times[-1] > enough:
            break
    return times
