"""Every bundled example parses, passes onnx.checker (full_check) and round-trips."""

import glob
import os

import onnx
import pytest

import onnxtext

EXAMPLES = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "examples", "*.onnxtext")))


@pytest.mark.parametrize("path", EXAMPLES, ids=[os.path.basename(p) for p in EXAMPLES])
def test_example(path):
    m = onnxtext.load(path)
    onnx.checker.check_model(m, full_check=True)
    assert onnxtext.parse_model(onnxtext.to_text(m)) == m


def test_there_are_five_examples():
    assert len(EXAMPLES) >= 5
