"""``--threads N`` for the benchmark scripts: numpy's BLAS reads its thread count from the environment when
numpy is first imported, so the scripts call :func:`limit_from_argv` before importing numpy."""

from __future__ import annotations

import os


def limit_from_argv(argv: list[str]) -> None:
    if "--threads" in argv:
        n = argv[argv.index("--threads") + 1]
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = n
