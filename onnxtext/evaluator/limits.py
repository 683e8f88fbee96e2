"""The evaluator's limits on sizes that come from data: decoded image pixels (more to come here).

A small input can ask for a huge result: a PNG of a few hundred bytes can declare 65535 x 65535 pixels or
inflate to gigabytes, a JPEG header can declare 4 GB of pixels. Kernels call these checks with the size
they are about to allocate, before allocating, and get an :class:`EvalError` that names the limit and how to
raise it. The defaults are far above what real models need; change them by assigning the module attributes
(``onnxtext.evaluator.limits.MAX_IMAGE_PIXELS = ...``) or with the environment variables named below.
"""

from __future__ import annotations

import os

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
