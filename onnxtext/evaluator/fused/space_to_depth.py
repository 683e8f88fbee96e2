"""The four 2x2 phases of an image concatenated on channels, as one copy (rule ``space_to_depth_slices``).

YOLOv5's Focus layer (and the exports of models built on it, such as ddddocr's detector) writes a
space-to-depth as four strided Slices, ``x[..., 0::2, 0::2]``, ``x[..., 1::2, 0::2]``,
``x[..., 0::2, 1::2]``, ``x[..., 1::2, 1::2]`` (often each as two Slices, rows then columns), and a
Concat of the four on channels. Run as nodes, every Slice copies its result (up to eight copies,
half of them of half the image) before the Concat copies the quarters again. :class:`PhaseConcat`
writes the result directly: the image seen as ``(N, C, H/2, 2, W/2, 2)``, the phases picked out by
one transposed view when the Concat's order is a nesting of row and column phase (both orders
exporters write, and the same with phases reversed), else by one copy per phase.
"""

from __future__ import annotations

import numpy as np

#: cached shape plans per step before the cache starts over (a model fed ever new shapes)
MAX_SHAPES = 64


def phase_layout(phases) -> tuple | None:
    """For ``phases``, the (row phase, column phase) of each Concat input in order (a permutation of
    the four 2x2 phases): ``(transpose axes, row flip, column flip)`` taking the image's
    ``(N, C, H/2, 2, W/2, 2)`` view to the result's ``(N, 2, 2, C, H/2, W/2)`` view, or None when no
    nesting of the two phase axes gives that order (then one copy per phase)."""
    for outer, inner, axes in (("row", "col", (0, 3, 5, 1, 2, 4)), ("col", "row", (0, 5, 3, 1, 2, 4))):
        flips = {}
        ok = True
        for k, (r, c) in enumerate(phases):
            got = {"row": r, "col": c}
            for axis, position in ((outer, k >> 1), (inner, k & 1)):
                flip = got[axis] != position
                if flips.setdefault(axis, flip) != flip:
                    ok = False
        if ok:
            return axes, flips["row"], flips["col"]
    return None


class PhaseConcat:
    """``Concat(x[:, :, r0::2, c0::2], ..., x[:, :, r3::2, c3::2], axis=1)`` for a 4-D ``x`` whose
    height and width are even and at most the Slices' ends (``limits``: per axis, the smallest end,
    so every Slice reads to the edge); anything else (another rank, odd sizes where the phases
    differ in size and the Concat fails, an image larger than an end, not a tensor) runs
    ``fallback``, the original steps."""

    __slots__ = ("phases", "layout", "limits", "fallback", "plans")

    def __init__(self, phases, limits, fallback):
        self.phases = tuple(phases)
        self.layout = phase_layout(self.phases)
        self.limits = tuple(limits)  # (height limit, width limit)
        self.fallback = fallback
        self.plans: dict = {}

    def _plan(self, shape):
        n, c, h, w = shape
        plan = False
        if not (h % 2 or w % 2 or h > self.limits[0] or w > self.limits[1]):
            plan = ((n, 4 * c, h // 2, w // 2), (n, c, h // 2, 2, w // 2, 2),
                    (n, 2, 2, c, h // 2, w // 2), (n, 4, c, h // 2, w // 2))
        if len(self.plans) >= MAX_SHAPES:
            self.plans.clear()
        self.plans[shape] = plan
        return plan

    def __call__(self, x):
        if type(x) is not np.ndarray or x.ndim != 4:
            return self.fallback(x)
        plan = self.plans.get(x.shape)
        if plan is None:
            plan = self._plan(x.shape)
        if plan is False:
            return self.fallback(x)
        shape, image, nested, flat = plan
        out = np.empty(shape, x.dtype)
        x6 = x.reshape(image)
        layout = self.layout
        if layout is not None:
            axes, flip_rows, flip_cols = layout
            if flip_rows:
                x6 = x6[:, :, :, ::-1]
            if flip_cols:
                x6 = x6[..., ::-1]
            np.copyto(out.reshape(nested), x6.transpose(axes))
        else:
            parts = out.reshape(flat)
            for k, (r, c) in enumerate(self.phases):
                np.copyto(parts[:, k], x6[:, :, :, r, :, c])
        return out
