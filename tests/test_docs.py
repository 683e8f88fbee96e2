"""Every ```onnxtext code block in docs/ and README.md parses (docs cannot rot)."""

import glob
import os
import re

import pytest

import onnxtext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCKS = []
for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, "README.md")]:
    for i, block in enumerate(re.findall(r"```onnxtext\n(.*?)```", open(path, encoding="utf-8").read(), re.S)):
        BLOCKS.append((f"{os.path.basename(path)}#{i}", block))


@pytest.mark.parametrize("name,block", BLOCKS, ids=[b[0] for b in BLOCKS])
def test_doc_example_parses_and_roundtrips(name, block):
    proto = onnxtext.parse(block)
    assert onnxtext.parse(onnxtext.to_text(proto)) == proto


def test_docs_have_examples():
    assert len(BLOCKS) >= 6
