"""The BLAS thread chooser (onnxtext/evaluator/threads.py), driven by simulated run times: it settles
on the faster count, notices when the machine changes, and sets the library only on a change."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from helpers import text_model

from onnxtext import Evaluator
from onnxtext.evaluator import runtime, threads
from onnxtext.evaluator.threads import (CHECK_SHARE, FIRST_GAP, GAIN, QUIET_BELOW, QUIET_RUNS, STALL, WINDOW,
                                         ThreadChooser)


def IDLE(most):  # noqa: N802 - the machine as the simulations see it: cores free for more threads
    return False


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
    chooser = ThreadChooser(2, sets.append, busy=IDLE, busy_now=IDLE)
    used = simulate(chooser, lambda t: 1.0 if t == fast else slow_factor, 200)
    settled = used[2 * WINDOW:]
    assert chooser.best == fast
    # only the periodic probes use the other count, fewer and fewer of them
    assert settled.count(fast) >= len(settled) - 200 // FIRST_GAP
    assert sets == [t for i, t in enumerate(used) if (used[i - 1] if i else 2) != t]


@pytest.mark.parametrize("two_threads", [0.95, 1.0, 1.05])
def test_a_small_gain_keeps_one_thread(two_threads):
    # (two threads only a little faster: not worth the risk of a stall on a machine that becomes busy)
    assert two_threads > GAIN
    chooser = ThreadChooser(2, lambda t: None, busy=IDLE, busy_now=IDLE)
    used = simulate(chooser, lambda t: two_threads if t == 2 else 1.0, 100)
    assert chooser.best == 1
    assert used[2 * WINDOW:].count(2) <= 100 // FIRST_GAP


@pytest.mark.parametrize("stall", [STALL * 1.1, 5.0, 40.0])
def test_busy_from_the_start_costs_one_stalled_run(stall):
    # the first run with two threads that is slower than STALL times the one-thread run ends the comparison
    chooser = ThreadChooser(2, lambda t: None, busy=IDLE, busy_now=IDLE)
    used = simulate(chooser, lambda t: stall if t == 2 else 1.0, 2 * FIRST_GAP)
    assert used[:2] == [1, 2]
    assert used.count(2) == 1
    assert chooser.best == 1


def simulate_runs(chooser, cost, runs):
    """As the Evaluator runs: ``begin()``, and ``record()`` only for the runs it times; returns
    (the count each run used, how many were timed)."""
    used, timed = [], 0
    for _ in range(runs):
        t = chooser.begin()
        if t is not None:
            chooser.record(t, cost(t))
            timed += 1
        used.append(chooser.current)
    return used, timed


@pytest.mark.parametrize("seconds, quiet", [(QUIET_BELOW / 10, True), (QUIET_BELOW * 10, False)])
def test_short_runs_are_timed_once_in_a_while(seconds, quiet):
    # a model without a matmul large enough to split: one thread, and its runs need not be timed
    chooser = ThreadChooser(2, lambda t: None, busy=IDLE, busy_now=IDLE)
    used, timed = simulate_runs(chooser, lambda t: seconds * (1.0 if t == 1 else 1.05), 2000)
    assert chooser.best == 1 and used[-1] == 1
    if quiet:
        assert timed <= 2 * WINDOW + 2000 // QUIET_RUNS + 2
    else:
        assert timed == 2000


def test_a_short_model_that_gains_from_threads_is_not_quieted():
    chooser = ThreadChooser(2, lambda t: None, busy=IDLE, busy_now=IDLE)
    used, timed = simulate_runs(chooser, lambda t: QUIET_BELOW / 10 * (0.5 if t == 2 else 1.0), 200)
    assert chooser.best == 2 and timed == 200 and used[-1] == 2


def test_notices_a_machine_that_became_busy_and_idle_again():
    chooser = ThreadChooser(2, lambda t: None, busy=IDLE, busy_now=IDLE)
    busy = {"now": False}
    cost = lambda t: (40.0 if t == 2 else 1.2) if busy["now"] else (1.0 if t == 2 else 1.6)  # noqa: E731
    simulate(chooser, cost, 50)
    assert chooser.best == 2
    busy["now"] = True
    used = simulate(chooser, cost, 10)  # two threads get slow: the first slow run switches back
    assert chooser.best == 1
    assert used[1:] == [1] * 9
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


def test_a_process_started_a_moment_ago_gets_no_try_of_more_threads(monkeypatch):
    # the session-8 chooser asked only the one-minute load average, which had not yet noticed a busy
    # process started a second before: its try of two threads stalled, and OpenBLAS's busy-waiting
    # worker slowed the one-thread runs after it. The load average is made to read 0 here, as then.
    if runtime._blas_functions()[1] is None or runtime._BLAS_INITIAL_THREADS < 2:
        pytest.skip("numpy's OpenBLAS has one thread here: there is no chooser")
    if not os.path.exists("/proc/loadavg"):
        pytest.skip("no /proc/loadavg (not Linux): only the load average tells a busy machine")
    model = text_model("""<ir_version: 9, opset_import: ["": 18]>
    g (float[2] x) => (float[2] y) { y = Relu(x) }""")
    read = threads.machine_load
    monkeypatch.setattr(threads, "machine_load", lambda: (0.0, read()[1]))
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.2)
        ev = Evaluator(model)
        sets, set_threads = [], ev._threads.set_threads
        ev._threads.set_threads = lambda n: (sets.append(n), set_threads(n))
        for _ in range(2 * WINDOW + 2):
            ev.run(None, {"x": np.ones(2, np.float32)})
    finally:
        spinner.terminate()
        spinner.wait()
    assert set(sets) <= {1} and ev._threads.best == 1 and not ev._threads.comparing


def test_a_busy_machine_is_not_tried_with_more_threads():
    # the load average says no core is free: no run tries two threads, even in the first comparison
    sets = []
    chooser = ThreadChooser(2, sets.append, busy=lambda most: True, busy_now=IDLE)
    used = simulate(chooser, lambda t: 1.0 if t == 2 else 1.6, 500)
    assert set(used) == {1} and sets == [1] and chooser.best == 1


def test_one_refused_try_does_not_end_the_first_comparison():
    # a task runnable at the instant of the first try (a shell, a kernel thread): that run uses one
    # thread, the comparison goes on; a second refusal ends it (a busy process is always runnable)
    for refusals, best in ((1, 2), (2, 1)):
        asked = []

        def busy(most):
            asked.append(most)
            return len(asked) <= refusals

        chooser = ThreadChooser(2, lambda t: None, busy=busy, busy_now=IDLE)
        used = simulate(chooser, lambda t: 1.0 if t == 2 else 1.6, 2 * WINDOW)
        assert chooser.best == best and not chooser.comparing, refusals
        assert used[:2 * refusals + 1] == [1] * (2 * refusals + 1)


def test_the_load_average_decides_only_the_tries():
    # more threads chosen while the machine was idle stay while no other process's thread is runnable
    # (the load average counts this process's own threads: it cannot tell)
    load = {"busy": False}
    chooser = ThreadChooser(2, lambda t: None, busy=lambda most: load["busy"], busy_now=IDLE)
    simulate(chooser, lambda t: 1.0 if t == 2 else 1.6, 50)
    assert chooser.best == 2
    load["busy"] = True
    used = simulate(chooser, lambda t: 1.0 if t == 2 else 1.6, 100)
    assert chooser.best == 2 and used.count(2) > 90


def test_a_kept_count_is_not_used_beside_a_busy_process():
    # more threads kept on an idle machine; another process starts: the next run already uses one
    # thread (no stalled run), and two again once it is gone
    other = {"running": False}
    chooser = ThreadChooser(2, lambda t: None, busy=IDLE, busy_now=lambda most: other["running"])
    cost = lambda t: 100.0 * (1.0 if t == 2 else 1.6)  # noqa: E731 - long runs: the question is asked before each
    simulate(chooser, cost, 50)
    assert chooser.best == 2
    other["running"] = True
    assert simulate(chooser, cost, 10) == [1] * 10
    other["running"] = False
    used = simulate(chooser, cost, 10)
    assert used[0] == 2 and used.count(2) >= 9 and chooser.best == 2


def test_short_runs_are_asked_whether_another_process_runs_in_proportion():
    # a question taking at least 20 us before runs of 1 ms with the kept count: at most one run in 3
    # is asked (20 us is 1% of 2 ms), the unasked ones keep the chosen count
    asked = []

    def busy_now(most):
        asked.append(most)
        end = time.perf_counter() + 20e-6
        while time.perf_counter() < end:
            pass
        return False

    chooser = ThreadChooser(2, lambda t: None, busy=IDLE, busy_now=busy_now)
    cost = lambda t: 1e-3 * (1.0 if t == 2 else 1.6)  # noqa: E731
    simulate(chooser, cost, 50)
    assert chooser.best == 2
    asked.clear()
    used = simulate(chooser, cost, 300)
    unasked = int(20e-6 / (CHECK_SHARE * 1e-3))  # (at least: the question may take longer than 20 us)
    assert 1 <= len(asked) <= 300 // (unasked + 1) + 1, len(asked)
    assert used.count(2) >= 300 - 300 // FIRST_GAP


# (cores, threads tried, one-minute load average, other processes' threads runnable now or None, busy)
NO_CORE_FREE_CASES = [
    (2, 2, 0.2, 0, False),
    (2, 2, 1.2, 0, False),
    (2, 2, 1.6, 0, True),  # the load average alone: this process and a busy one for the last minute
    (2, 2, 3.0, None, True),
    (2, 2, 0.2, 1, True),  # a CPU-bound process started a second ago: the load average has not moved
    (2, 2, 0.2, None, False),  # no runnable count (not Linux): the load average alone decides
    (8, 2, 3.0, 0, False),
    (8, 2, 0.5, 6, False),  # two threads fit beside six busy ones
    (8, 2, 0.5, 7, True),
    (8, 8, 3.0, 0, True),
    (8, 8, 0.5, 1, True),
]


@pytest.mark.parametrize("cores, most, load, others, busy", NO_CORE_FREE_CASES)
def test_no_core_free(cores, most, load, others, busy):
    assert threads.no_core_free(most, cores, load, others) is busy


@pytest.mark.parametrize("running, own, busy", [
    (1, 1, False),  # only the calling thread
    (2, 1, True),  # one more, of another process
    (2, 2, False),  # one more, this process's OpenBLAS worker still busy-waiting after a call
    (4, 2, True),
])
def test_cores_busy_does_not_count_its_own_threads(monkeypatch, running, own, busy):
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads, "machine_load", lambda: (0.1, running))
    monkeypatch.setattr(threads, "own_running_threads", lambda: own)
    assert threads.cores_busy(2) is busy
    assert threads.others_busy(2) is busy


def test_others_busy_ignores_the_load_average(monkeypatch):
    # a load average of 1.9 on 2 cores: this process's own two threads for the last minute, nobody else now
    monkeypatch.setattr(threads.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(threads, "machine_load", lambda: (1.9, 2))
    monkeypatch.setattr(threads, "own_running_threads", lambda: 2)
    assert threads.cores_busy(2) is True and threads.others_busy(2) is False


def test_cores_busy_without_a_load_average(monkeypatch):
    monkeypatch.setattr(threads, "machine_load", lambda: (None, None))
    assert threads.cores_busy(2) is False and threads.others_busy(2) is False


def test_machine_load_reads_the_runnable_threads():
    if not os.path.exists("/proc/loadavg"):
        pytest.skip("no /proc/loadavg (not Linux): the load average alone is used")
    load, running = threads.machine_load()
    assert load >= 0 and running >= 1  # (this thread is running while it reads)


def test_own_running_threads_counts_a_thread_working_outside_the_gil():
    if not os.path.isdir("/proc/self/task"):
        pytest.skip("no /proc/self/task (not Linux)")
    stop = threading.Event()
    data = b"x" * (1 << 24)

    def work():  # hashing a large buffer releases the GIL: the thread stays runnable while the main one reads
        while not stop.is_set():
            hashlib.sha256(data).digest()

    worker = threading.Thread(target=work)
    worker.start()
    try:
        counts = [threads.own_running_threads() for _ in range(20)]
    finally:
        stop.set()
        worker.join()
    assert max(counts) >= 2, counts
    assert threads.own_running_threads() >= 1
