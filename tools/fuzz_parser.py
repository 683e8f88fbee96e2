#!/usr/bin/env python3
"""Coverage-guided fuzzing of the parser with atheris (issue 23), and the checks it applies to each input.

:func:`check` is the fuzz target's body and is shared with ``tests/test_fuzz_findings.py``, which replays the
kept corpus and every finding without atheris. For one input (bytes, decoded as UTF-8 the way the CLI reads a
text file; the bytes themselves go to the API when they are not UTF-8), each entry point (``parse_model``,
``parse_graph``, ``parse_function``, ``parse_node``) must either return a proto or raise onnxtext's own
``ParseError`` carrying a line and column inside the text, for the error and for every further error
``ParseError.errors`` lists. Anything else is a :class:`Finding`:

* ``crash``: any other exception (from parsing, from formatting the error, from printing the result);
* ``position``: a ParseError without line and column, or with a position outside the text;
* ``fast-vs-lark``: the fast path and the Lark parse of record disagree (proto bytes, or line/column/message);
* ``roundtrip``: ``to_text`` of the result does not parse back to the identical serialized bytes, or printing
  is not idempotent, or the printer's fast path and reference path print different texts;
* ``oracle``: onnx's C++ parser (an oracle here only, never in onnxtext's paths) accepts the text but onnxtext
  refuses it or builds another proto (field presence aside), where both claim the same meaning.

Commands (``python tools/fuzz_parser.py ...``; docs/fuzzing.md):

* ``seeds DIR``: write the seed corpus (docs' onnxtext blocks, examples/, tests/fixtures, small printed backend
  models, the text constants of the syntax tests);
* ``dict``: print the libFuzzer dictionary of the grammar's keywords and punctuation (``-dict=``);
* ``fuzz [libFuzzer options] [corpus dirs]``: run atheris (known findings, tests/data/fuzz/known_failures.txt,
  are recognised by their signature and skipped so that the run looks for new ones; without ``-dict=`` the
  dictionary is generated from the grammar as it is; ``FUZZ_PARSER_FINDINGS=DIR`` also writes each new
  finding there, with a ``.why`` file, before libFuzzer reports it; with ``FUZZ_PARSER_KEEP_GOING=1`` too,
  the run goes on after a finding, keeping the first input of each signature, and stops only for a hang or
  memory growth);
* ``check FILE...``: run the checks on files and print each finding.
"""

from __future__ import annotations

import ast
import glob
import hashlib
import os
import re
import sys
import tempfile
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "fuzz")
START_SYMBOLS = ("model", "graph", "function")


class Finding(Exception):
    """An outcome of the parser that the fuzz target does not accept."""

    def __init__(self, kind: str, detail: str, error: BaseException | None = None):
        self.kind, self.detail = kind, detail
        self.signature = signature(kind, error if error is not None else detail)
        super().__init__(f"{kind}: {detail}")


def signature(kind: str, what) -> str:
    """What identifies a finding across inputs: its kind and the exception class and message (or the detail
    text) with names, numbers and positions blurred, so that one bug found twice is recognised."""
    text = f"{type(what).__name__}: {what}" if isinstance(what, BaseException) else str(what)
    text = text.splitlines()[0] if text else ""
    text = re.sub(r"'[^']*'|\"[^\"]*\"", "Q", text)
    text = re.sub(r"\d+", "N", text)
    return f"{kind}|{text[:160]}"


# ---------------------------------------------------------------------------------------------- the checks
def decode(data):
    """The text the CLI would parse (strict UTF-8), or the bytes themselves when they are not UTF-8; a ``str``
    (a seed from a Python test, possibly with lone surrogates) as it is."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def check(data, oracle: bool = True) -> None:
    """Raise a :class:`Finding` when the parser mishandles ``data`` (bytes, or a str given to the API as it is);
    return None when every outcome is fine."""
    text = decode(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for start in START_SYMBOLS:
            fast = _outcome(text, start, True, further=start == "model")
            lark = _outcome(text, start, False)
            if _comparable(fast) != _comparable(lark):
                raise Finding("fast-vs-lark", f"{start}: fast path {_show(fast)} but Lark {_show(lark)}")
            if fast[0] == "ok":
                _round_trip(fast[1], start)
            if oracle and isinstance(text, str):
                _against_onnx(text, start, fast)
        if isinstance(text, str) and _LONE_CR.search(text):
            _same_positions_with_lf(text)
        node = _outcome(text, "node", True)
        if node[0] == "ok":
            _round_trip(node[1], "node")


_LONE_CR = re.compile(r"\r(?!\n)")


def _same_positions_with_lf(text: str) -> None:
    """A lone CR ends a line as LF does (docs/limits.md), and replacing one by the other keeps every offset: the
    errors of the model parse (first and further) must stand at the same lines and columns, with the same
    messages (a quoted CR aside)."""
    from onnxtext import ParseError

    def positions(t):
        """[the parse's own error, then every error in text order (recovery's too)]."""
        try:
            _entry("model")(t)
        except ParseError as e:
            return [(x.line, x.column, x.message.replace("\\r", "\\n")) for x in (e, *e.errors)]
        return []

    cr, lf = positions(text), positions(_LONE_CR.sub("\n", text))
    if cr != lf:  # the first error comes from the parse, the others from the recovery: two families
        which = "the first error" if cr[:1] != lf[:1] else "further errors"
        cr, lf = cr[1:], lf[1:]
        raise Finding("position", f"model: errors at {cr} with lone CRs but at {lf} with LF",
                      ParseError_(f"lone CR and LF give {which} other positions"))


def _entry(start: str):
    import onnxtext

    return {"model": onnxtext.parse_model, "graph": onnxtext.parse_graph, "function": onnxtext.parse_function,
            "node": onnxtext.parse_node}[start]


def _outcome(text, start: str, fast: bool, further: bool = False):
    """``("ok", proto)`` or ``("error", line, column, message)`` of one parse; a Finding for anything else.
    ``further``: check the errors after the first too (error recovery: most of the target's time, so only for
    the model parse, which is what the CLI does)."""
    from onnxtext import ParseError

    kwargs = {} if start == "node" else {"fast": fast}
    try:
        return ("ok", _entry(start)(text, **kwargs))
    except ParseError as e:
        _check_error(e, text, f"{start} fast={fast}", further)
        return ("error", e.line, e.column, e.message)
    except Finding:
        raise
    except Exception as e:  # noqa: BLE001 - anything but a ParseError is what the fuzzer looks for
        raise Finding("crash", f"{start} fast={fast}: {type(e).__name__}: {e}", e) from e


def _check_error(error, text, where: str, further: bool) -> None:
    """The error (and with ``further`` every further error the recovery finds) has a line and column inside
    the text and formats without raising (what the CLI prints)."""
    from onnxtext.errors import text_lines

    try:
        errors = error.errors if further else [error]
        error.format() if further else error.format_one()
    except Exception as e:  # noqa: BLE001
        raise Finding("crash", f"{where}: formatting the error {error.message!r}: {type(e).__name__}: {e}", e) from e
    lines = text_lines(text) if isinstance(text, str) else None
    for e in errors:
        if e.line is None or e.column is None:
            raise Finding("position", f"{where}: no line/column: {e.message}", ParseError_(e.message))
        if e.line < 1 or e.column < 1 or (lines is not None and (
                e.line > len(lines) or e.column > len(lines[e.line - 1]) + 1)):
            cr = " with a lone CR" if _LONE_CR.search(text) else ""  # one bug, many messages
            raise Finding("position", f"{where}: {e.line}:{e.column} outside the text{cr}: {e.message}",
                          ParseError_(f"a position outside the text{cr}"))


class ParseError_(Exception):
    """Stands for a ParseError in a finding's signature (message only, position blurred)."""


def _comparable(outcome):
    if outcome[0] == "ok":
        return ("ok", outcome[1].SerializeToString(deterministic=True))
    return outcome


def _show(outcome) -> str:
    if outcome[0] == "ok":
        return "gives a proto"
    return f"raises {outcome[1]}:{outcome[2]}: {outcome[3][:200]}"


def _round_trip(proto, start: str) -> None:
    """to_text(proto) parses back to the identical bytes, printing is idempotent, and the printer's fast path
    and reference path agree."""
    from onnxtext import ParseError, to_text
    from onnxtext.printing import fastprint

    try:
        printed = to_text(proto)
        fastprint.ENABLED = False
        try:
            reference = to_text(proto)
        finally:
            fastprint.ENABLED = True
    except Exception as e:  # noqa: BLE001
        raise Finding("crash", f"{start}: to_text: {type(e).__name__}: {e}", e) from e
    if printed != reference:
        raise Finding("roundtrip", f"{start}: the printer's fast path and reference path differ")
    try:
        again = _entry(start)(printed)
    except ParseError as e:
        raise Finding("roundtrip", f"{start}: the printed text does not parse: {e.message}",
                      ParseError_(e.message)) from e
    except Exception as e:  # noqa: BLE001
        raise Finding("crash", f"{start}: parsing the printed text: {type(e).__name__}: {e}", e) from e
    if again.SerializeToString(deterministic=True) != proto.SerializeToString(deterministic=True):
        raise Finding("roundtrip", f"{start}: the printed text parses to other bytes")
    if to_text(again) != printed:
        raise Finding("roundtrip", f"{start}: printing is not idempotent")


# Texts where onnx's parser gives another meaning by design (PEERS.md, docs/syntax.md): escapes in strings
# ("a\nb" is "anb" there) and a lone CR (it does not end a comment there).
# onnx's C++ parser stops reading at a NUL byte (whatever follows, even garbage, is ignored and the text
# accepted), so a text holding one says nothing about the superset promise
_ORACLE_SKIP = re.compile(r"[\\\r\x00]")


def _against_onnx(text: str, start: str, ours) -> None:
    """onnx's C++ parser as an oracle (never in onnxtext's own paths): where it accepts the text and onnxtext
    does too, both build the same proto (field presence aside); and what onnx's printer writes for that proto,
    when onnx's parser reads it back, onnxtext reads as the same proto (the superset promise of test_interop.py,
    on generated protos). onnx's parser is lax where onnxtext is strict on purpose (trailing text after a graph,
    tensor literals of the wrong size, out-of-range literals, duplicate keys), so the raw text onnx accepts and
    onnxtext refuses is not a finding; its printed form is."""
    import onnx.parser
    import onnx.printer

    if start == "node" or _ORACLE_SKIP.search(text):
        return
    parse_theirs = getattr(onnx.parser, f"parse_{start}")
    try:
        theirs = parse_theirs(text)
    except Exception:  # noqa: BLE001 - onnx refuses it: onnxtext may accept (a superset) or refuse
        return
    if "TYPE_PROTO" in str(theirs):
        return  # `<to = int64>`: an INT where the schema says so here, a type attribute there (docs/syntax.md)
    if ours[0] == "ok" and _cleared(ours[1]) != _cleared(theirs):
        raise Finding("oracle", f"{start}: onnx.parser and onnxtext build different protos from the text")
    try:
        if not _valid_for_onnx(theirs):
            return  # an invalid proto (no op_type, untyped inputs, literals of the wrong size...): no promise
        printed = onnx.printer.to_text(theirs)
        if _cleared(parse_theirs(printed)) != _cleared(theirs) or _ORACLE_SKIP.search(printed):
            return  # onnx cannot read its own text back: nothing to promise
    except Exception:  # noqa: BLE001
        return
    again = _outcome(printed, start, True)
    if again[0] != "ok":
        if again[3].startswith(_SYNTAX_ERRORS):
            raise Finding("oracle", f"{start}: onnx.printer's text of a proto onnx.parser built does not parse: "
                                    f"{again[1]}:{again[2]}: {again[3][:200]}", ParseError_(again[3]))
    elif _cleared(again[1]) != _cleared(theirs):
        raise Finding("oracle", f"{start}: onnx.printer's text of a proto onnx.parser built parses to another proto")


#: The messages of syntax errors (Lark's); any other refusal is one of onnxtext's deliberate checks of meaning
#: (literal ranges and counts, duplicate keys...) that onnx's parser and checker let through.
_SYNTAX_ERRORS = ("unexpected", "unterminated", "unknown data type")


def _valid_for_onnx(proto) -> bool:
    """onnx.checker accepts the model (a graph is checked inside a model of the current IR and opset)."""
    import onnx
    import onnx.checker
    import onnx.helper

    if isinstance(proto, onnx.GraphProto):
        proto = onnx.helper.make_model(proto)
    elif not isinstance(proto, onnx.ModelProto):
        return False
    try:
        onnx.checker.check_model(proto)
    except Exception:  # noqa: BLE001
        return False
    return True


def _cleared(proto):
    _tests_on_path()
    from corpus import cleared  # the round-trip equivalence of the interop tests (field presence aside)

    return cleared(proto)


def _tests_on_path() -> None:
    tests = os.path.join(ROOT, "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)


# ---------------------------------------------------------------------------------------------- known findings
def known_failures() -> dict[str, str]:
    """``{finding file name: reason}`` from tests/data/fuzz/known_failures.txt (``NAME REASON`` lines)."""
    _tests_on_path()
    from reason_tables import read_table  # the tests' one reader of exception tables

    return {name: reason for name, (reason,) in read_table(os.path.join("fuzz", "known_failures.txt")).items()}


def known_signatures() -> set[str]:
    """The signatures of the listed findings (each replayed once)."""
    out = set()
    for name in known_failures():
        try:
            check(open(os.path.join(DATA, "findings", name), "rb").read())
        except Finding as f:
            out.add(f.signature)
    return out


# ---------------------------------------------------------------------------------------------- seeds and dictionary
def seed_texts() -> dict[str, str]:
    """``{name: text}``: the seed corpus, from files of this repository and small printed backend models."""
    seeds = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")) + [os.path.join(ROOT, "README.md")]):
        blocks = re.findall(r"```onnxtext\n(.*?)```", open(path, encoding="utf-8").read(), re.S)
        for i, block in enumerate(blocks):
            seeds[f"doc-{os.path.basename(path)[:-3]}-{i}"] = block
    for path in sorted(glob.glob(os.path.join(ROOT, "examples", "*.onnxtext")) +
                       glob.glob(os.path.join(ROOT, "tests", "fixtures", "**", "*.onnxtext"), recursive=True)):
        rel = os.path.relpath(path, ROOT).replace(os.sep, "-")
        seeds[rel] = open(path, encoding="utf-8", newline="").read()
    for test in ("test_hostile_text.py", "test_fastparse.py", "test_syntax.py", "test_recovery.py"):
        path = os.path.join(ROOT, "tests", test)
        if os.path.exists(path):
            for i, s in enumerate(_string_constants(path)):
                seeds[f"{test[:-3]}-{i}"] = s
    seeds.update(_printed_backend_models())
    return {k: v for k, v in seeds.items() if len(v.encode("utf-8", "surrogatepass")) <= 4096}


def _string_constants(path: str) -> list[str]:
    """The string constants of a test file that look like onnxtext (a graph or a header)."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ("=>" in node.value or
                                                                                node.value.lstrip().startswith("<")):
            out.append(node.value.replace("§", ""))
    return list(dict.fromkeys(out))


def _printed_backend_models(count: int = 40) -> dict[str, str]:
    """``count`` small models of onnx's backend test data, printed by onnxtext (every k-th by file size)."""
    import onnx

    import onnxtext

    _tests_on_path()
    from corpus import DATA as BACKEND, file_models

    paths = sorted((p for p in file_models() if os.path.getsize(p) < 1500), key=lambda p: (os.path.getsize(p), p))
    step = max(1, len(paths) // count)
    out = {}
    for p in paths[::step][:count]:
        name = "backend-" + os.path.relpath(os.path.dirname(p), BACKEND).replace(os.sep, "-")
        out[name] = onnxtext.to_text(onnx.load(p, load_external_data=False))
    return out


def dictionary() -> list[str]:
    """libFuzzer dictionary entries: the grammar's literal strings, element type names, escapes, number forms."""
    words = set()
    for path in glob.glob(os.path.join(ROOT, "grammar", "*.lark")):
        for m in re.finditer(r'"((?:[^"\\\n]|\\.)+)"i?', open(path, encoding="utf-8").read()):
            if not re.search(r"[\^*+|]", m.group(1)):  # not a piece of a regular expression
                words.add(m.group(1).encode().decode("unicode_escape"))
    from onnxtext import dtypes

    words.update(dtypes.NAMES)
    words.update(["=>", "<", ">", "{", "}", "(", ")", "[", "]", ",", ":", "=", "@", "?", "\"", "///", "#", "//",
                  "\\x41", "\\u00e9", "\\U0001F600", "\\U00110000", "\\n", "\\\"", "0x", "1e308", "-inf", "nan",
                  "9223372036854775808", "-0.0", "\r\n", "\r", "\t", "\u2028", "\ufeff", "ir_version",
                  "opset_import", "producer_name", "domain", "base64", "hex", "raw", "Add", "If", "Loop",
                  "then_branch", "body", "seq(", "optional(", "map(", "sparse_tensor", "\"\""])
    return sorted(w for w in words if w)


def _dict_line(word: str) -> str:
    escaped = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "".join(f"\\x{b:02x}" for b in c.encode())
                      for c in word)
    return f'"{escaped}"'


# ---------------------------------------------------------------------------------------------- commands
def _fuzz(argv: list[str]) -> None:
    import atheris

    with atheris.instrument_imports(include=["onnxtext"]):
        import onnxtext  # noqa: F401
        import onnxtext.errors  # noqa: F401
        import onnxtext.printing.atoms  # noqa: F401
        import onnxtext.printing.fastprint  # noqa: F401
        import onnxtext.printing.layout  # noqa: F401
        import onnxtext.printing.printer  # noqa: F401
        import onnxtext.printing.records  # noqa: F401
        import onnxtext.syntax.builder  # noqa: F401
        import onnxtext.syntax.fastlex  # noqa: F401
        import onnxtext.syntax.fastparse  # noqa: F401
        import onnxtext.syntax.field_values  # noqa: F401
        import onnxtext.syntax.hints  # noqa: F401
        import onnxtext.syntax.literal_data  # noqa: F401
        import onnxtext.syntax.parser  # noqa: F401
        import onnxtext.syntax.recovery  # noqa: F401
        import onnxtext.syntax.statement  # noqa: F401
    known = known_signatures()
    print(f"fuzz_parser: {len(known)} known finding signatures skipped", file=sys.stderr)

    saved = os.environ.get("FUZZ_PARSER_FINDINGS")  # a copy of each new finding, written before raising
    keep_going = os.environ.get("FUZZ_PARSER_KEEP_GOING") == "1" and saved  # save each new kind once, go on

    def target(data: bytes) -> None:
        try:
            check(data)
        except Finding as f:
            if f.signature not in known:
                if saved:
                    name = os.path.join(saved, "finding-" + hashlib.sha1(data).hexdigest())
                    with open(name, "wb") as out:
                        out.write(data)
                    with open(name + ".why", "w", encoding="utf-8") as out:
                        out.write(f"{f}\nsignature {f.signature}\n")
                    if keep_going:
                        print(f"fuzz_parser: NEW FINDING {name}: {f}"[:400], file=sys.stderr)
                        known.add(f.signature)
                        return
                raise

    if not any(a.startswith("-dict=") for a in argv):  # the grammar's words as they are now
        path = os.path.join(tempfile.mkdtemp(prefix="fuzz_parser"), "onnxtext.dict")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(_dict_line(w) for w in dictionary()) + "\n")
        argv = [f"-dict={path}", *argv]
    atheris.Setup([sys.argv[0], *argv], target)
    atheris.Fuzz()


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    command, rest = argv[0], argv[1:]
    if command.startswith("-"):  # libFuzzer runs this file again for -merge=1 and -fork: options only
        command, rest = "fuzz", argv
    if command == "seeds":
        os.makedirs(rest[0], exist_ok=True)
        seeds = seed_texts()
        for name, text in seeds.items():
            with open(os.path.join(rest[0], name), "wb") as f:
                f.write(text.encode("utf-8", "surrogatepass"))
        print(f"{len(seeds)} seeds written to {rest[0]}")
    elif command == "dict":
        print("\n".join(_dict_line(w) for w in dictionary()))
    elif command == "fuzz":
        _fuzz(rest)
    elif command == "check":
        bad = 0
        for path in rest:
            try:
                check(open(path, "rb").read())
            except Finding as f:
                bad += 1
                print(f"{path}: {f}\n  signature {f.signature}")
        return 1 if bad else 0
    else:
        print(f"unknown command {command!r} (seeds, dict, fuzz, check)", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
