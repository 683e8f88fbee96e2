"""How many BLAS threads the evaluator's runs use when the caller does not say: chosen by timing runs.

numpy's OpenBLAS starts one worker thread per core; the workers busy-wait between calls. On an idle
machine two threads make a CNN's large matmuls faster; on a machine whose cores are busy with other
work they starve each other and the run becomes many times slower than with one thread (measured on
the 2-core test VM beside a CPU-bound process: a SqueezeNet run 38 ms with one thread, 1977 ms with
two; onnxruntime's pool 18 -> 62 ms). No fixed count is right in both situations, and the machine
changes under a long-lived process, so :class:`ThreadChooser` measures, preferring one thread:

* runs start with one thread; the first ``2 * WINDOW`` runs alternate between 1 and the library's
  own count, unless a run with more threads shows a stall (over ``STALL`` times the one-thread
  median), which ends the comparison at once in favour of one thread;
* then every run uses the chosen count; more threads are chosen only when their median is under
  ``GAIN`` times the one-thread median (a small gain is not worth the risk of a stall);
* while running with more threads, a single run over ``STALL`` times the last one-thread median
  (the machine became busy) switches back to one thread at once, without waiting for a probe;
* the other count is tried again once after ``gap`` runs (16, doubling up to 1024 while it keeps
  losing, back to 16 when it wins), so a machine that became idle is noticed;
* no run tries more threads while the machine leaves no core free for them (:func:`cores_busy`: the
  one-minute load average, or the threads of other processes runnable right now), and the try counts
  as lost (in the first comparison, the second refused try: one refusal may be a task that was
  runnable for an instant). Such a try stalls (one SqueezeNet run took 1.6 s instead of 20 ms with
  two threads beside a busy process) and leaves a cost behind it: OpenBLAS's worker keeps
  busy-waiting for about 0.1 s after the call whatever the count is set to, so the one-thread runs in
  that window share their core with it (magika, a 19 ms run whose one Conv takes 11 ms: the next 3-4
  runs took 28-43 ms beside a CPU-bound process, against 19 ms otherwise). The load average alone
  takes a minute to notice a process that just started; the count of runnable threads sees it at once;
* while more threads are kept, runs first ask whether another process's thread is runnable now
  (:func:`others_busy`) and, if one is, use one thread, the count staying chosen: a process that
  starts beside costs no stalled run (the load average cannot decide this: it counts this process's
  own threads). The question costs 10-75 us of ``/proc`` reads (more in a process of many threads),
  so it is asked before as few runs as keep its measured cost under ``CHECK_SHARE`` of their time
  (at 25 us: every run of a 10 ms model, one run in six of a 0.5 ms one); the stall rule covers
  the others.

A run's time is what the chooser sees, so the decision is per model (a model without large matmuls
stays on one thread). A model whose one-thread runs take under ``QUIET_BELOW`` seconds has no matmul
large enough for OpenBLAS to split: once one thread is chosen, only one run in ``QUIET_RUNS + 1`` is
timed (:meth:`ThreadChooser.begin` returns None for the others), so its runs do not pay for the
measurement (about 1-2 us of a 30 us run). The setting is process-wide (:func:`.runtime.set_blas_threads`);
``Evaluator(model, threads=N)`` fixes it instead, and then nothing is measured.
"""

from __future__ import annotations

import os
import threading
import time

#: runs per thread count whose median decides
WINDOW = 3
FIRST_GAP, LAST_GAP = 16, 1024
#: more threads must take under GAIN times the one-thread time to be chosen
GAIN = 0.85
#: a run with more threads over STALL times the one-thread median is a stall: back to one thread
STALL = 1.3
#: one-thread runs shorter than this (seconds) are timed only once every QUIET_RUNS + 1 runs
QUIET_BELOW, QUIET_RUNS = 2e-4, 63
#: while more threads are kept, others_busy is asked before as few runs as keep its cost under this share
CHECK_SHARE = 0.01


def cores_busy(most: int) -> bool:
    """Whether the machine leaves fewer than ``most - 1`` cores free besides the evaluator's own thread:
    by its load average over the last minute, or by the threads of other processes runnable right now
    (Linux ``/proc/loadavg``; elsewhere the load average alone, and False where there is none)."""
    cores = os.cpu_count() or 1
    load, running = machine_load()
    if load is None:
        return False
    return no_core_free(most, cores, load, _others(running, cores - most))


def others_busy(most: int) -> bool:
    """Whether threads of other processes runnable right now take more than the ``cores - most`` cores
    ``most`` threads of this process leave (False where that count cannot be read)."""
    cores = os.cpu_count() or 1
    others = _others(machine_load()[1], cores - most)
    return others is not None and others > cores - most


def _others(running: int | None, spare: int) -> int | None:
    """How many of the ``running`` threads (the whole machine's, None: unknown) belong to other
    processes; this process's are listed only when ``running`` leaves more than ``spare`` to others."""
    if running is None:
        return None
    others = running - 1  # (this thread is one of them)
    if others > spare:  # (is it another process, or our own workers?)
        others = running - own_running_threads()
    return others


def no_core_free(most: int, cores: int, load: float, others_running: int | None) -> bool:
    """The decision of :func:`cores_busy`: the one-minute ``load`` (this process included) leaves fewer
    than ``most - 1`` cores free, or ``others_running`` threads of other processes (None: unknown)
    take more than the ``cores - most`` cores more threads would leave."""
    if load > cores - most + 1.5:
        return True
    return others_running is not None and others_running > cores - most


def machine_load() -> tuple[float | None, int | None]:
    """(one-minute load average, threads runnable now on the whole machine) from ``/proc/loadavg``;
    where it cannot be read, (``os.getloadavg()``'s, None), or (None, None) without a load average."""
    try:
        with open("/proc/loadavg") as f:
            fields = f.read().split()
        return float(fields[0]), int(fields[3].split("/")[0])
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.getloadavg()[0], None
    except (OSError, AttributeError):
        return None, None


def own_running_threads() -> int:
    """How many threads of this process are runnable now (state R in ``/proc/self/task/*/stat``: the
    calling thread, and OpenBLAS or onnxruntime workers still busy-waiting after a call); 1 where
    the threads cannot be listed."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 1
    count = 0
    for tid in tasks:
        try:
            with open(f"/proc/self/task/{tid}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # (a thread that ended meanwhile)
            continue
        end = stat.rfind(b")")  # (the state follows the command name, which may hold spaces and parentheses)
        count += stat[end + 2:end + 3] == b"R"
    return max(count, 1)


class ThreadChooser:
    """Chooses between ``most`` BLAS threads and 1 by timing runs (see the module docstring);
    ``busy(most)`` says whether the machine has cores free for a try of more threads
    (:func:`cores_busy`), ``busy_now(most)`` whether it has them for a run with the kept count
    (:func:`others_busy`)."""

    def __init__(self, most: int, set_threads, busy=cores_busy, busy_now=others_busy):
        self.most = most
        self.set_threads = set_threads
        self.busy = busy
        self.busy_now = busy_now
        self.times: dict[int, list[float]] = {most: [], 1: []}
        self.best = 1
        self.runs = 0
        self.comparing = True  # the first 2 * WINDOW runs alternate
        self.refused = 0  # tries of more threads refused during the comparison (see cores_busy)
        self.gap = FIRST_GAP
        self.since_probe = 0
        self.lock = threading.Lock()
        self.current = most  # the library's count before the first run
        self.skip = 0  # runs left that are not timed (see QUIET_BELOW)
        self.unasked = 0  # runs with the kept count left before busy_now is asked again (see CHECK_SHARE)

    def begin(self) -> int | None:
        """The thread count to time the next run with (see :meth:`pick`), or None when this run is not
        timed: the count stays as it is, and the run need not be passed to :meth:`record`."""
        if self.skip:
            self.skip -= 1  # (unlocked: a lost decrement between threads only times one run more)
            return None
        return self.pick()

    def pick(self) -> int:
        """The thread count for the next run (set in the library when it changes)."""
        with self.lock:
            self.runs += 1
            if self.comparing:
                want = 1 if self.runs % 2 else self.most
            elif self.since_probe >= self.gap:
                want = self.most if self.best == 1 else 1  # the other one
                self.since_probe = 0
            else:
                want = self.best
                self.since_probe += 1
            if want != 1 and want != self.best and self.busy(self.most):  # (a try that would stall: lost)
                want = 1
                if not self.comparing:
                    self.gap = min(2 * self.gap, LAST_GAP)
                else:  # (the second refusal ends the comparison: one can be a task runnable for an instant)
                    self.refused += 1
                    if self.refused >= 2:
                        self._settle(1, lost=True)
            elif want != 1 and want == self.best and self._busy_now():
                want = 1  # (the kept count would stall: this run uses one thread, a fresh one-thread time)
            if want != self.current:
                self.set_threads(want)
                self.current = want
            return want

    def _busy_now(self) -> bool:
        """``busy_now`` for a run with the kept count, or False for the runs that skip the question
        (as many as its measured cost over ``CHECK_SHARE`` of the kept count's median run)."""
        if self.unasked:
            self.unasked -= 1
            return False
        start = time.perf_counter()
        busy = self.busy_now(self.most)
        self.unasked = int((time.perf_counter() - start) / (CHECK_SHARE * _median(self.times[self.best])))
        return busy

    def record(self, threads: int, seconds: float) -> None:
        """The time of a run made with ``threads``."""
        with self.lock:
            one = self.times[1]
            if self.comparing:
                self.times[threads].append(seconds)
                if threads != 1 and one and seconds > STALL * _median(one):
                    self._settle(1, lost=True)
                elif self.runs >= 2 * WINDOW:
                    more = self.times[self.most]  # (2 runs, not 3, when one try was refused)
                    faster = _median(more) < GAIN * _median(one)
                    self._settle(self.most if faster else 1, lost=not faster)
                return
            if threads == 1:  # (the best count, or a probe of it: either way a fresh baseline)
                one.append(seconds)
                del one[:-WINDOW]
                if self.best != 1 and seconds < 0.9 * _median(self.times[self.best]):
                    self.best, self.gap = 1, FIRST_GAP
                if self.best == 1 and _median(one) < QUIET_BELOW:
                    self.skip = QUIET_RUNS
                return
            if self.best == threads:
                if one and seconds > STALL * _median(one):  # the machine became busy
                    self.best, self.gap, self.since_probe = 1, FIRST_GAP, 0
                    return
                recent = self.times[threads]
                recent.append(seconds)
                del recent[:-WINDOW]
            elif one and seconds < GAIN * _median(one):  # a probe of more threads won
                self.best, self.gap = threads, FIRST_GAP
                self.times[threads] = [seconds]
            else:
                self.gap = min(2 * self.gap, LAST_GAP)

    def _settle(self, best: int, lost: bool) -> None:
        self.comparing = False
        self.best = best
        self.since_probe = 0
        self.gap = 2 * FIRST_GAP if lost else FIRST_GAP


def _median(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2]
