"""Patch convolutions (strides equal to the kernel, no padding): the two layouts of
onnxtext.evaluator.kernels.conv_patches against the prepared im2col conv they replace, in the same run.

    python benchmarks/conv_patches.py [--runs N]

One table row per geometry (ViT/DeiT/CLIP 16x16 and 14x14 patches, Swin/ConvNeXt 4x4 stems,
ConvNeXt's 2x2 downsampling, small test-sized ViTs): microseconds per call (best of 7 repeats of N
calls), for the im2col path (the prepared conv with the patch path switched off), the kernel-major
and the patch-major layouts, and each layout's ratio to im2col. Run with one BLAS thread
(OPENBLAS_NUM_THREADS=1) to compare with the rest of the evaluator tables.
"""

from __future__ import annotations

import argparse
import os
import sys
import timeit

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402

from onnxtext.evaluator.kernels import conv_prepared  # noqa: E402
from onnxtext.evaluator.kernels.conv_patches import patch_major, prepare_patches  # noqa: E402

GEOMETRIES = [  # (input shape, weight shape)
    ((2, 3, 32, 32), (64, 3, 8, 8)),
    ((1, 3, 32, 32), (32, 3, 4, 4)),
    ((1, 3, 64, 64), (128, 3, 16, 16)),
    ((1, 3, 224, 224), (192, 3, 16, 16)),
    ((1, 3, 224, 224), (384, 3, 16, 16)),
    ((1, 3, 224, 224), (768, 3, 16, 16)),
    ((1, 3, 224, 224), (768, 3, 14, 14)),
    ((1, 3, 224, 224), (96, 3, 4, 4)),
    ((1, 3, 224, 224), (128, 3, 4, 4)),
    ((1, 96, 56, 56), (192, 96, 2, 2)),
    ((1, 384, 14, 14), (768, 384, 2, 2)),
    ((4, 3, 32, 32), (64, 3, 8, 8)),
    ((1, 3, 96, 96), (64, 3, 8, 8)),
]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    print(f"{'input':>18} {'weight':>18} {'im2col us':>10} {'kernel-major':>13} {'patch-major':>12} "
          f"{'km/im2col':>9} {'pm/im2col':>9} rule")
    for xs, ws in GEOMETRIES:
        x = rng.standard_normal(xs, dtype=np.float32)
        w = rng.standard_normal(ws, dtype=np.float32)
        b = rng.standard_normal(ws[0], dtype=np.float32)
        attrs = {"auto_pad": "NOTSET", "group": 1, "strides": list(ws[2:]), "dilations": [1, 1], "pads": [0] * 4,
                 "kernel_shape": list(ws[2:])}
        saved = conv_prepared.is_patch_conv
        conv_prepared.is_patch_conv = lambda *a: False
        try:
            im2col = conv_prepared.PreparedConv(w, b, attrs)
            expected = im2col(x).copy()
        finally:
            conv_prepared.is_patch_conv = saved
        runs = {"im2col": lambda x: im2col(x)}
        for name, layout in (("km", False), ("pm", True)):
            fn = prepare_patches(w, b, xs, False, rows_layout=layout)
            np.testing.assert_allclose(fn(x, None), expected, rtol=1e-3, atol=1e-3)
            runs[name] = lambda x, fn=fn: fn(x, None)
        times = {}
        for _ in range(2):  # interleaved: each path measured twice, best kept
            for name, fn in runs.items():
                t = min(timeit.repeat(lambda: fn(x), number=args.runs, repeat=7)) / args.runs * 1e6
                times[name] = min(t, times.get(name, t))
        out = [s // k for s, k in zip(xs[2:], ws[2:])]
        rule = "pm" if patch_major(ws[2:], out, ws[0]) else "km"
        print(f"{str(xs):>18} {str(ws):>18} {times['im2col']:10.1f} {times['km']:13.1f} {times['pm']:12.1f} "
              f"{times['km'] / times['im2col']:9.2f} {times['pm'] / times['im2col']:9.2f} {rule}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
