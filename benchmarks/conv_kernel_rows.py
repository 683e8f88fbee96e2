"""Kernel-row convolutions (onnxtext.evaluator.kernels.conv_kernel_rows) against the prepared
convolution the selector would pick without them (im2col, or the general kernel for large images),
in the same run.

    python benchmarks/conv_kernel_rows.py [--rounds N] [--only SUBSTRING]

One table row per geometry (the unit-stride 3x3 layers of YOLOv8n/nudenet, ddddocr's detector, the
ResNet, Inception and MobileNet light models, a few 5x5, 7x7, dilated and unbatched cases): best and
median microseconds per call of each path, the calls alternating between the two (so both see the
same load), their ratio, and whether :func:`use_kernel_rows` picks the kernel-row path. Run with one
BLAS thread (OPENBLAS_NUM_THREADS=1, set here before numpy is imported) to compare with the rest of
the evaluator tables.
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

from onnxtext.evaluator.kernels import conv_prepared  # noqa: E402
from onnxtext.evaluator.kernels.conv_kernel_rows import use_kernel_rows  # noqa: E402

GEOMETRIES = [  # (input shape, outputs, kernel, pads, dilation, relu)
    ((2, 16, 80, 80), 16, 3, 1, 1, False),
    ((2, 32, 80, 80), 32, 3, 1, 1, False),
    ((2, 32, 40, 40), 32, 3, 1, 1, False),
    ((2, 64, 40, 40), 64, 3, 1, 1, False),
    ((2, 64, 20, 20), 64, 3, 1, 1, False),
    ((2, 128, 10, 10), 128, 3, 1, 1, False),
    ((1, 24, 208, 208), 24, 3, 1, 1, False),
    ((1, 64, 224, 224), 64, 3, 1, 1, True),
    ((1, 24, 104, 104), 24, 3, 1, 1, False),
    ((1, 48, 104, 104), 48, 3, 1, 1, False),
    ((1, 48, 52, 52), 48, 3, 1, 1, False),
    ((1, 96, 52, 52), 96, 3, 1, 1, False),
    ((1, 96, 26, 26), 96, 3, 1, 1, False),
    ((1, 192, 13, 13), 192, 3, 1, 1, False),
    ((1, 64, 56, 56), 64, 3, 1, 1, True),
    ((1, 128, 28, 28), 128, 3, 1, 1, True),
    ((1, 64, 56, 56), 192, 3, 1, 1, True),
    ((1, 64, 28, 28), 96, 3, 1, 1, True),
    ((1, 96, 28, 28), 96, 3, 1, 1, True),
    ((1, 32, 28, 28), 32, 3, 1, 1, True),
    ((1, 32, 56, 56), 128, 3, 1, 1, True),
    ((1, 16, 28, 28), 32, 5, 2, 1, True),
    ((1, 16, 64, 64), 16, 7, 3, 1, False),
    ((1, 32, 40, 40), 32, 3, 2, 2, False),
    ((1, 16, 24, 24), 16, 3, 1, 1, False),
    ((1, 64, 14, 14), 64, 3, 1, 1, True),
    ((1, 64, 40, 40), 32, 3, 1, 1, False),
    ((1, 128, 20, 20), 64, 3, 1, 1, False),
    ((1, 96, 52, 52), 48, 3, 1, 1, False),
    ((1, 32, 80, 80), 16, 3, 1, 1, False),
    ((1, 48, 52, 52), 64, 3, 1, 1, False),
    ((1, 128, 40, 40), 128, 3, 1, 1, False),
]


def _prepared(x, m, k, pad, dilation, relu, kernel_rows, rng):
    w = rng.standard_normal((m, x.shape[1], k, k), dtype=np.float32) * 0.1
    b = rng.standard_normal(m, dtype=np.float32)
    attrs = {"auto_pad": "NOTSET", "group": 1, "strides": [1, 1], "dilations": [dilation] * 2,
             "pads": [pad] * 4, "kernel_shape": [k, k]}
    saved = conv_prepared.KERNEL_ROWS
    conv_prepared.KERNEL_ROWS = kernel_rows
    try:
        conv = conv_prepared.PreparedConv(w, b, attrs, relu=relu)
        conv(x)  # prepared for this shape with the switch as set
    finally:
        conv_prepared.KERNEL_ROWS = saved
    run = conv._shapes.get(x.shape)
    return conv, getattr(run, "__name__", "general")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=40, help="alternating calls of each path")
    ap.add_argument("--only", help="only geometries whose description contains this")
    args = ap.parse_args(argv)
    print(f"{'input':>18} {'M':>4} {'k':>2} {'p':>2} {'d':>2} {'relu':>4} {'before':>20} {'best us':>9} "
          f"{'median':>9} {'kernel rows':>11} {'median':>9} {'best':>5} {'median':>6} rule")
    for xs, m, k, pad, dilation, relu in GEOMETRIES:
        desc = f"{xs} {m} {k}"
        if args.only and args.only not in desc:
            continue
        rng = np.random.default_rng(0)
        x = rng.standard_normal(xs, dtype=np.float32)
        before, before_name = _prepared(x, m, k, pad, dilation, relu, False, np.random.default_rng(1))
        after, after_name = _prepared(x, m, k, pad, dilation, relu, True, np.random.default_rng(1))
        np.testing.assert_allclose(after(x), before(x), rtol=1e-4, atol=1e-3)
        times = {0: [], 1: []}
        paths = [(0, before), (1, after)]
        for _ in range(3):
            before(x), after(x)
        for i in range(args.rounds):
            for key, fn in (paths if i % 2 else paths[::-1]):
                t = time.perf_counter()
                fn(x)
                times[key].append(time.perf_counter() - t)
        best = [min(times[i]) * 1e6 for i in (0, 1)]
        med = [float(np.median(times[i])) * 1e6 for i in (0, 1)]
        out = [s + 2 * pad - dilation * (k - 1) for s in xs[2:]]
        rule = "kernel rows" if use_kernel_rows(xs[1], m, (k, k), out) else "-"
        print(f"{str(xs):>18} {m:4d} {k:2d} {pad:2d} {dilation:2d} {str(relu):>4} {before_name:>20} {best[0]:9.1f} "
              f"{med[0]:9.1f} {best[1]:11.1f} {med[1]:9.1f} {best[1] / best[0]:5.2f} {med[1] / med[0]:6.2f} {rule}"
              f"{'' if after_name == 'kernel_rows_conv' else ' (not taken: ' + after_name + ')'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
