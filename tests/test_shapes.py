"""Type and shape mistakes found by ``check`` (checker/shapes.py), one table row per marked line.

tests/shape_cases/*.onnxtext: a line ending in ``# <- RULE "PART"`` must get a diagnostic of that rule at that
line whose message contains PART (both shapes, the operator's words); the file must get no other diagnostic.
Add a mistake by adding a line to a case file (or a new file) with its marker.
"""

from __future__ import annotations

import collections
import glob
import json
import os
import re

import pytest

from onnxtext.checker import check

HERE = os.path.dirname(os.path.abspath(__file__))
FILES = sorted(glob.glob(os.path.join(HERE, "shape_cases", "*.onnxtext")))
_MARK = re.compile(r'#\s*<-\s*([a-z.\-]+)\s+("(?:[^"\\]|\\.)*")\s*$')


def marks(path):
    """(file name, line, rule, message part) for every marked line of a case file."""
    out = []
    for i, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        m = _MARK.search(line)
        if m:
            out.append((os.path.basename(path)[:-len(".onnxtext")], i, m.group(1), json.loads(m.group(2))))
    return out


ROWS = [row for p in FILES for row in marks(p)]


def test_the_table_has_at_least_40_mistakes():
    assert len(ROWS) >= 40


@pytest.mark.parametrize("path", FILES, ids=[os.path.basename(p)[:-9] for p in FILES])
def test_file_gets_exactly_its_marked_diagnostics(path):
    diags = check(open(path, encoding="utf-8").read())
    want = collections.Counter((row[2], row[1]) for row in marks(path))
    assert collections.Counter((d.rule, d.line) for d in diags) == want, "\n".join(map(str, diags))
    assert all(d.severity == "error" for d in diags)


@pytest.mark.parametrize("case,line,rule,part", ROWS, ids=[f"{r[0]}:{r[1]}" for r in ROWS])
def test_message(case, line, rule, part):
    diags = check(open(os.path.join(HERE, "shape_cases", case + ".onnxtext"), encoding="utf-8").read())
    found = [d.message for d in diags if (d.rule, d.line) == (rule, line)]
    assert any(part in m for m in found), found
