"""The BLAS thread chooser (onnxtext/evaluator/threads.py), driven by simulated run times: it settles
on the faster count, notices when the machine changes, and sets the library only on a change."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import text_model

from onnxtext import Evaluator
from onnxtext.evaluator import runtime
from onnxtext.evaluator.threads import FIRST_GAP, WINDOW, ThreadChooser


def simulate(chooser, cost, runs):
    """Run ``runs`` simulated runs whose time is ``cost(threads)``; returns the counts used."""
    used = []
    for _ in range(runs):
        t = chooser.pick()
        chooser.record(t, cost(t))
        used.append(t)
    return used


@pytest.mark.parametrize("fast, slow_factor", [(1, 50.0), (2, 1.5), (1, 1.2)])
def test_settles_on_the_faster_count(fast, slow_factor):
    sets = []
    chooser = ThreadChooser(2, sets.append)
    used = simulate(chooser, lambda t: 1.0 if t == fast else slow_factor, 200)
    settled = used[2 * WINDOW:]
    assert chooser.best == fast
    # only the periodic probes use the other count, fewer and fewer of them
    assert settled.count(fast) >= len(settled) - 200 // FIRST_GAP
    assert sets == [t for i, t in enumerate(used) if (used[i - 1] if i else 2) != t]


def test_notices_a_machine_that_became_busy_and_idle_again():
    chooser = ThreadChooser(2, lambda t: None)
    busy = {"now": False}
    cost = lambda t: (40.0 if t == 2 else 1.2) if busy["now"] else (1.0 if t == 2 else 1.6)  # noqa: E731
    simulate(chooser, cost, 50)
    assert chooser.best == 2
    busy["now"] = True
    simulate(chooser, cost, 10)  # two threads get slow: the next probe of one thread wins
    assert chooser.best == 1
    busy["now"] = False
    simulate(chooser, cost, 200)
    assert chooser.best == 2


def test_fixed_threads_are_not_measured():
    model = text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (float[2] x) => (float[2] y) { y = Relu(x) }""")
    assert Evaluator(model, threads=1)._threads is None
    ev = Evaluator(model)  # after a fixed count, the chooser still tries the library's own count
    assert (ev._threads is None) == (runtime._BLAS_INITIAL_THREADS == 1 or runtime._blas_functions()[1] is None)
    ev.run(None, {"x": np.ones(2, np.float32)})
