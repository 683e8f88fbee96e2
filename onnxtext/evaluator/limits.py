"""The evaluator's limits on sizes that come from data: tensor allocations, Loop iterations, decoded images.

A small input can ask for a huge result: a PNG of a few hundred bytes can declare 65535 x 65535 pixels or
inflate to gigabytes, a JPEG header can declare 4 GB of pixels. Kernels call these checks with the size
they are about to allocate, before allocating, and get an :class:`EvalError` that names the limit and how to
raise it. The defaults are far above what real models need; change them by assigning the module attributes
(``onnxtext.evaluator.limits.MAX_IMAGE_PIXELS = ...``) or with the environment variables named below.
"""

from __future__ import annotations

import math
import os
import threading

import numpy as np

from ..errors import EvalError


def _from_env(name: str, default: int) -> int:
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return int(value)
    except ValueError:
        raise EvalError(f"{name}={value!r} is not a whole number") from None


#: Pixels (width x height) an ImageDecoder may produce: 2**28 (a 16384 x 16384 image, 768 MiB as RGB).
MAX_IMAGE_PIXELS = _from_env("ONNXTEXT_MAX_IMAGE_PIXELS", 1 << 28)


def check_image_pixels(width: int, height: int, what: str) -> None:
    """Refuse an image of ``width`` x ``height`` pixels above :data:`MAX_IMAGE_PIXELS` (or negative)."""
    if width < 0 or height < 0:
        raise EvalError(f"ImageDecoder: {what} declares {width} x {height} pixels")
    if width * height > MAX_IMAGE_PIXELS:
        raise EvalError(f"ImageDecoder: {what} declares {width} x {height} = {width * height} pixels, above the "
                        f"limit of {MAX_IMAGE_PIXELS} (onnxtext.evaluator.limits.MAX_IMAGE_PIXELS, or "
                        f"ONNXTEXT_MAX_IMAGE_PIXELS in the environment)")


def _machine_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not POSIX: no guess, 64 GiB
        return 64 << 30


#: Bytes one tensor a kernel computes from data may take (ConstantOfShape, Expand, Tile, Range, Pad, Resize,
#: StringConcat, ConcatFromSequence, a Loop's stacked scan outputs): the machine's physical memory, since a
#: larger tensor cannot be held anyway.
MAX_ALLOCATION_BYTES = _from_env("ONNXTEXT_MAX_ALLOCATION_BYTES", _machine_memory())

#: Bytes the guarded kernels above (and the tensors inserted into sequences) may allocate in one run, summed
#: over the run: four times the machine's memory. A run frees what it no longer needs, so the sum may exceed
#: the memory; far more means a loop whose allocations run away (a tensor doubled every iteration, a
#: sequence grown without end), which this stops before the per-tensor limit or the iteration limit would.
MAX_RUN_ALLOCATION_BYTES = _from_env("ONNXTEXT_MAX_RUN_ALLOCATION_BYTES", 4 * _machine_memory())

_run = threading.local()  # .used: bytes charged to the current run on this thread (absent outside runs)
#: the thread-local whose ``used`` :func:`begin_run` and :func:`end_run` set (the generated run of
#: :mod:`.run_code` sets it in place, without the two calls)
current_run = _run


def begin_run() -> None:
    """Start charging guarded allocations to a new run on this thread (the Evaluator calls it per run)."""
    _run.used = 0


def end_run() -> None:
    """Stop charging: allocations outside runs (plan preparation, constant folding) are not counted."""
    _run.used = None

#: Iterations of one Loop (the trip count may be larger when the condition ends the loop earlier, as exporters
#: write it). A run can also be stopped by ``Evaluator.run(..., timeout=)`` or Ctrl-C.
MAX_LOOP_ITERATIONS = _from_env("ONNXTEXT_MAX_LOOP_ITERATIONS", 10 ** 8)


def check_allocation(shape, itemsize: int, what: str, *, charge: bool = True) -> None:
    """Refuse a tensor of ``shape`` (a sequence of ints, or an element count) of ``itemsize`` bytes per
    element above :data:`MAX_ALLOCATION_BYTES`, or with a negative dimension, before it is allocated; and
    (unless ``charge`` is false) count its bytes against the run's :data:`MAX_RUN_ALLOCATION_BYTES`."""
    dims = [int(shape)] if isinstance(shape, (int, np.integer)) else [int(d) for d in shape]
    if any(d < 0 for d in dims):
        raise EvalError(f"{what}: negative dimension in {dims}")
    count = math.prod(dims)
    if count * itemsize > MAX_ALLOCATION_BYTES:
        shown = dims if len(dims) <= 8 and all(len(str(d)) < 20 for d in dims) else f"{len(dims)} dimensions"
        raise EvalError(f"{what}: the result would be {shown} = {count} elements ({count * itemsize} bytes), above "
                        f"the evaluator's limit of {MAX_ALLOCATION_BYTES} bytes per tensor (the machine's memory; "
                        f"onnxtext.evaluator.limits.MAX_ALLOCATION_BYTES or ONNXTEXT_MAX_ALLOCATION_BYTES)")
    if charge:
        charge_run(count * itemsize, what)


def charge_run(nbytes: int, what: str) -> None:
    """Count ``nbytes`` against the current run's :data:`MAX_RUN_ALLOCATION_BYTES` (nothing outside a run)."""
    used = getattr(_run, "used", None)
    if used is None:
        return
    used += nbytes
    _run.used = used
    if used > MAX_RUN_ALLOCATION_BYTES:
        raise EvalError(f"{what}: this run has allocated {used} bytes in tensors computed from data, above the "
                        f"evaluator's limit of {MAX_RUN_ALLOCATION_BYTES} bytes per run (four times the machine's "
                        f"memory; onnxtext.evaluator.limits.MAX_RUN_ALLOCATION_BYTES or "
                        f"ONNXTEXT_MAX_RUN_ALLOCATION_BYTES)")


def check_loop_iterations(done: int, what: str) -> None:
    if done >= MAX_LOOP_ITERATIONS:
        raise EvalError(f"{what}: more than {MAX_LOOP_ITERATIONS} iterations (onnxtext.evaluator.limits."
                        f"MAX_LOOP_ITERATIONS or ONNXTEXT_MAX_LOOP_ITERATIONS; or stop runs with timeout=)")


#: numpy's largest rank (onnxruntime has no smaller one); a tensor of higher rank cannot be represented.
MAX_RANK = 64


def check_tensor_dims(dims, itemsize: int, what: str) -> None:
    """Refuse a stored tensor's declared dims before decoding: rank above :data:`MAX_RANK`, a negative
    dimension, or more bytes than :data:`MAX_ALLOCATION_BYTES`."""
    if len(dims) > MAX_RANK:
        raise EvalError(f"{what}: rank {len(dims)} is above {MAX_RANK}, the most numpy represents")
    check_allocation(dims, itemsize, what, charge=False)
