"""Reading the tests' data tables of exceptions: one case per line, ``name [fields...] reason``.

``# comments`` and blank lines are skipped; every row must give a reason (the text after its fields),
because a listed exception without one cannot be judged. Used by test_contrib_ops.py (known failures)
and test_realmodels_evaluator.py (known failures, wider tolerances).
"""

from __future__ import annotations

import os

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def read_table(name: str, fields: int = 0) -> dict[str, list[str]]:
    """{case name: [field 1, ..., field n, reason]} from tests/data/``name`` (empty when it is missing)."""
    path = os.path.join(DATA, name)
    rows: dict[str, list[str]] = {}
    if not os.path.exists(path):
        return rows
    for number, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = line.split(None, fields + 1)
        if len(parts) < fields + 2:
            raise ValueError(f"{path}:{number}: expected a name, {fields} field(s) and a reason: {line!r}")
        if parts[0] in rows:
            raise ValueError(f"{path}:{number}: {parts[0]} is listed twice")
        rows[parts[0]] = parts[1:]
    return rows
