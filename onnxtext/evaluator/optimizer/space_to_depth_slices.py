"""Rule ``space_to_depth_slices``: a Concat on channels of the four 2x2 phases of one 4-D image, each
taken by strided Slices (YOLOv5's Focus layer: ``x[..., 0::2, 0::2]``, ``x[..., 1::2, 0::2]``,
``x[..., 0::2, 1::2]``, ``x[..., 1::2, 1::2]``, as one Slice per phase or as two, rows then columns),
becomes one :class:`~..fused.space_to_depth.PhaseConcat` step: one copy instead of a copy per Slice
and the Concat's.

Condition: the Concat's axis is 1 (or -3) and it has four inputs; each is the result of a chain of
one or two Slice nodes (opset >= 10, constant bounds) from the same value, every result in the chain
read by nothing but the next step; between them the Slices take, on the height axis (2 or -2) and
the width axis (3 or -1) each, exactly start 0 or 1 and step 2 to an end of at least the axis's size,
and nothing on any other axis; the four (row, column) starts are the four phases, in any order.
Ends are checked per input shape (an image larger than an end, or of odd size, where the phases
differ and the Concat fails, runs the original steps, as does a rank other than 4). Level 1: the
same values, copied.
"""

from __future__ import annotations

import numpy as np

from ..fused.original import OriginalSteps
from ..fused.space_to_depth import PhaseConcat
from .graph import GraphView

NAME = "space_to_depth_slices"
LEVEL = 1

# image axes a phase Slice may name (the rank is checked to be 4 per call), as height 0 / width 1
_AXES = {2: 0, -2: 0, 3: 1, -1: 1}


def _ints(value) -> list | None:
    """A constant's values as Python ints (a 1-D integer tensor), else None."""
    if value is None:
        return None
    a = np.asarray(value)
    if a.ndim != 1 or a.dtype.kind not in "iu":
        return None
    return [int(v) for v in a]


def _slice_terms(view, st):
    """``[(image axis 0/1, start, end)]`` of a Slice step taking phases, or None when it slices
    anything else (another axis, another step, a start other than 0 or 1, bounds not constants)."""
    ins = st[1] + ("", "")
    starts, ends = _ints(view.constant(ins[1])), _ints(view.constant(ins[2]))
    axes = _ints(view.constant(ins[3])) if ins[3] else None
    steps = _ints(view.constant(ins[4])) if ins[4] else None
    if starts is None or ends is None or (ins[3] and axes is None) or (ins[4] and steps is None):
        return None
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        return None  # (step 1 everywhere: no phase)
    if not len(starts) == len(ends) == len(axes) == len(steps):
        return None
    terms = []
    for start, end, axis, step in zip(starts, ends, axes, steps):
        if axis not in _AXES or step != 2 or start not in (0, 1) or end <= 1:
            return None
        terms.append((_AXES[axis], start, end))
    return terms


def _phase(view, name):
    """``(image, (row start, column start), (row end, column end), Slice step indices)`` when ``name``
    is one phase of an image taken by one or two Slices, else None (readers are checked by the caller)."""
    chain, found = [], {}
    while len(found) < 2:
        k = view.producer.get(name)
        st = view.step(k) if k is not None else None
        if st is None or view.op(k) != "Slice" or (st[5].opset or 0) < 10 or len(st[2]) != 1:
            return None
        terms = _slice_terms(view, st)
        if terms is None:
            return None
        for axis, start, end in terms:
            if axis in found:
                return None
            found[axis] = (start, end)
        chain.append(k)
        name = st[1][0]
    if not name or view.constant(name) is not None:
        return None
    return name, (found[0][0], found[1][0]), (found[0][1], found[1][1]), chain


def _read_only_inside(view, taken, j) -> bool:
    """Whether every value the Slice steps ``taken`` compute is read only by those steps and the Concat
    ``j`` (a row Slice shared by two column Slices is fine) and is not an output or kept value."""
    for k in taken:
        out = view.step(k)[2][0]
        inside = sum(view.steps[m][1].count(out) for m in (*taken, j))
        if out in view.keep or view.readers[out] != inside:
            return False
    return True


def apply(steps: list, keep: set, known) -> list:
    view = GraphView(steps, keep, known)
    changed = False
    for j in range(len(view)):
        st = view.step(j)
        if view.op(j) != "Concat" or st[3].get("axis") not in (1, -3) or len(st[1]) != 4 or len(st[2]) != 1:
            continue
        phases = [_phase(view, name) for name in st[1]]
        if any(p is None for p in phases) or len({p[0] for p in phases}) != 1 or \
                {p[1] for p in phases} != {(0, 0), (0, 1), (1, 0), (1, 1)}:
            continue
        taken = sorted({k for p in phases for k in p[3]})
        if not _read_only_inside(view, taken, j):
            continue
        image = phases[0][0]
        limits = (min(p[2][0] for p in phases), min(p[2][1] for p in phases))
        originals = [view.step(k) for k in taken] + [st]
        constants = {n: view.constant(n) for o in originals for n in o[1] if n and view.constant(n) is not None}
        fused = PhaseConcat([p[1] for p in phases], limits, OriginalSteps(originals, (image,), st[2], constants))
        view.replace(j, (fused, (image,), st[2], {}, st[4], st[5], False), (image,))
        for k in taken:
            view.remove(k)
        changed = True
    return view.entries() if changed else steps
