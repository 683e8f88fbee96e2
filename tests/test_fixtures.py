"""Golden fixtures: identity/ texts print back unchanged; pretty/ inputs print as their .out files.

Add a case by dropping a file in the folder (identity) or a NAME.in/NAME.out pair (pretty).
"""

import glob
import os

import pytest

import onnxtext

HERE = os.path.join(os.path.dirname(__file__), "fixtures")
IDENTITY = sorted(glob.glob(os.path.join(HERE, "identity", "*.onnxtext")))
PRETTY = sorted(glob.glob(os.path.join(HERE, "pretty", "*.in.onnxtext")))


@pytest.mark.parametrize("path", IDENTITY, ids=[os.path.basename(p) for p in IDENTITY])
def test_identity(path):
    text = open(path, encoding="utf-8").read()
    assert onnxtext.to_text(onnxtext.parse(text)) == text


@pytest.mark.parametrize("path", PRETTY, ids=[os.path.basename(p) for p in PRETTY])
def test_pretty(path):
    source = open(path, encoding="utf-8").read()
    expected = open(path.replace(".in.onnxtext", ".out.onnxtext"), encoding="utf-8").read()
    assert onnxtext.to_text(onnxtext.parse(source)) == expected
    assert onnxtext.parse(source) == onnxtext.parse(expected)


def test_fixture_folders_are_not_empty():
    assert len(IDENTITY) >= 5 and len(PRETTY) >= 3
