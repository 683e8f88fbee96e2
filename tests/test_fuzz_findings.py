"""Replays the parser fuzzer's kept inputs through the fuzz target's own checks (tools/fuzz_parser.py), without
atheris: the corpus a run grew (tests/data/fuzz/corpus/), the seed corpus, and every finding
(tests/data/fuzz/findings/). A finding listed in tests/data/fuzz/known_failures.txt must still fail (strict: a
listed case that passes fails, so the line goes once it is fixed); any other finding is a fixed bug and must pass.
docs/fuzzing.md says how to run the fuzzer and add a finding.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FUZZ = os.path.join(ROOT, "tests", "data", "fuzz")

_spec = importlib.util.spec_from_file_location("fuzz_parser", os.path.join(ROOT, "tools", "fuzz_parser.py"))
fuzz_parser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz_parser)

KNOWN = fuzz_parser.known_failures()
CORPUS = sorted(n for n in os.listdir(os.path.join(FUZZ, "corpus")) if not n.startswith("."))
FINDINGS = sorted(os.listdir(os.path.join(FUZZ, "findings")))


def _read(*parts) -> bytes:
    with open(os.path.join(FUZZ, *parts), "rb") as f:
        return f.read()


@pytest.fixture(scope="module")
def known_signatures():
    return fuzz_parser.known_signatures()


def _check_allowing_known(data, known_signatures):
    try:
        fuzz_parser.check(data)
    except fuzz_parser.Finding as f:
        if f.signature not in known_signatures:  # a new finding: not in known_failures.txt
            raise


@pytest.mark.parametrize("name", CORPUS)
def test_corpus_input_passes_the_fuzz_checks(name, known_signatures):
    _check_allowing_known(_read("corpus", name), known_signatures)


SEEDS = fuzz_parser.seed_texts()


@pytest.mark.parametrize("name", sorted(SEEDS))
def test_seed_passes_the_fuzz_checks(name, known_signatures):
    _check_allowing_known(SEEDS[name], known_signatures)


@pytest.mark.parametrize("name", FINDINGS)
def test_finding(name):
    data = _read("findings", name)
    if name in KNOWN:
        with pytest.raises(fuzz_parser.Finding):
            fuzz_parser.check(data)
    else:  # fixed: a regression test from now on
        fuzz_parser.check(data)


def test_known_failures_name_findings_with_reasons():
    for name, reason in KNOWN.items():
        assert name in FINDINGS, f"known_failures.txt lists {name}, which is not in tests/data/fuzz/findings/"
        assert reason, f"known_failures.txt: {name} needs a reason"


def test_a_crash_is_a_finding_and_a_parse_error_is_not(monkeypatch):
    """The target itself: a ParseError with a position passes; any other exception is a crash finding."""
    from onnxtext.syntax import parser

    fuzz_parser.check(b"g (float x) => (float y) { y = Relu(x) ")  # unexpected end of input: fine

    def broken(text, start, filename=None, fast=True):
        raise KeyError("boom")

    monkeypatch.setattr(parser, "_parse", broken)
    with pytest.raises(fuzz_parser.Finding, match="crash: model fast=True: KeyError"):
        fuzz_parser.check(b"g (float x) => (float y) { y = Relu(x) }")


# Where the errors of fixed findings stand (counted by hand in the files): a newcomer adds a line per fix.
POSITIONS = [
    ("escape-out-of-range.txt", 3, 3, "escape \\U00110000 is out of range"),  # the escape, on the string's 2nd line
    ("hint-typo-before-lone-cr.txt", 2, 1, "unexpected character '\\x00': missing ')'"),  # as with LF
    ("hint-unclosed-before-lone-cr.txt", 2, 1, "unexpected character '\\x00': missing ')'"),
]


@pytest.mark.parametrize("name,line,column,message", POSITIONS)
def test_fixed_finding_error_position(name, line, column, message):
    import onnxtext

    with pytest.raises(onnxtext.ParseError) as e:
        onnxtext.parse_model(_read("findings", name).decode("utf-8"))
    assert (e.value.line, e.value.column) == (line, column)
    assert e.value.message.startswith(message), e.value.message
