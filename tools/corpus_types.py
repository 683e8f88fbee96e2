"""The records shared by the corpus builders (tools/corpus_*.py) and their driver tools/build_corpus.py."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np


@dataclass
class Context:
    """What a builder gets besides its output path."""

    rng: np.random.Generator  # seeded from the model's name
    downloads: Path  # where downloaded wheels are kept between runs
    scratch: Path  # a temporary folder of this build, removed afterwards


@dataclass
class Built:
    """What a builder returns once it has written ``<name>.onnx`` (and any external data beside it)."""

    source: str  # pip package + version, or exporter + library versions
    feeds: dict[str, np.ndarray]  # one realistic input set
    notes: str = ""


@dataclass(frozen=True)
class Entry:
    """One corpus model: a row of the table in tools/build_corpus.py."""

    name: str
    kind: str  # pip-shipped, torch-script, torch-dynamo, transformers, skl2onnx, ort-quantized, ...
    make: Callable[[Path, Context], Built]
    checker: str | None = None  # why onnx.checker rejects the model as published (strict: tested)
    notes: str = ""
