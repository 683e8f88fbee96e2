"""Unit-stride max pools of 5 taps or more per axis: the doubling passes of
onnxtext.evaluator.kernels.pool (``_run_doubling``) against the separable per-tap passes they replace,
in the same run, calls alternating.

    python benchmarks/pool_doubling.py [--rounds N]

One row per geometry (YOLOv5's SPP 5/9/13 pools at 13x13 and 20x20, YOLOv8's SPPF 5x5 pools at 10x10
and 20x20, a float16-sized uint8 case, a 7x7 and a 3-D pool): best and median microseconds per call of
each way and their ratio. One BLAS thread (set here) like the other evaluator tables.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from onnxtext.evaluator.kernels import pool  # noqa: E402

GEOMETRIES = [  # (input shape, kernel, dtype)
    ((1, 192, 13, 13), 5, np.float32),
    ((1, 192, 13, 13), 9, np.float32),
    ((1, 192, 13, 13), 13, np.float32),
    ((1, 256, 20, 20), 5, np.float32),
    ((1, 256, 20, 20), 9, np.float32),
    ((1, 256, 20, 20), 13, np.float32),
    ((2, 128, 10, 10), 5, np.float32),
    ((1, 512, 10, 10), 5, np.float32),
    ((1, 128, 40, 40), 5, np.float32),
    ((1, 64, 56, 56), 7, np.float32),
    ((1, 256, 20, 20), 5, np.uint8),
    ((1, 256, 20, 20), 9, np.uint8),
    ((1, 128, 40, 40), 9, np.float32),
    ((1, 32, 28, 28), 7, np.float32),
    ((1, 16, 8, 12, 12), 5, np.float32),
]


def _plan(shape, k, doubling):
    """The passes of a k-wide, unit-stride max pool padded to keep the size, doubling on or off."""
    nd = len(shape) - 2
    saved = pool._DOUBLING_MIN_TAPS
    pool._DOUBLING_MIN_TAPS = 2 if doubling else 1 << 30  # (5 taps measured too, below the rule)
    try:
        return pool._passes.__wrapped__(shape, True, (k,) * nd, (1,) * nd, (1,) * nd, (k // 2,) * nd, shape[2:],
                                        True)
    finally:
        pool._DOUBLING_MIN_TAPS = saved


def _runner(x, passes):
    identity = pool._lowest(x.dtype)

    def run():
        current = x
        for i, (fn, shape, args) in enumerate(passes):
            dst = np.empty(shape, x.dtype) if i == len(passes) - 1 else pool.scratch(shape, x.dtype,
                                                                                   pool._SLOTS[i % 2])
            fn(current, dst, np.maximum, identity, *args)
            current = dst
        return current
    return run


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=100, help="alternating calls of each way")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{'input':>20} {'k':>3} {'dtype':>8} {'per tap best us':>15} {'median':>8} {'doubling best':>13} "
          f"{'median':>8} {'best':>5} {'median':>6}")
    for shape, k, dtype in GEOMETRIES:
        x = (rng.standard_normal(shape) * 50).astype(dtype)
        before, after = _runner(x, _plan(shape, k, False)), _runner(x, _plan(shape, k, True))
        np.testing.assert_array_equal(after(), before())
        times = ([], [])
        for i in range(args.rounds):
            for key, fn in ((0, before), (1, after)) if i % 2 else ((1, after), (0, before)):
                t = time.perf_counter()
                fn()
                times[key].append(time.perf_counter() - t)
        best = [min(t) * 1e6 for t in times]
        med = [float(np.median(t)) * 1e6 for t in times]
        print(f"{str(shape):>20} {k:3d} {np.dtype(dtype).name:>8} {best[0]:15.1f} {med[0]:8.1f} {best[1]:13.1f} "
              f"{med[1]:8.1f} {best[1] / best[0]:5.2f} {med[1] / med[0]:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
