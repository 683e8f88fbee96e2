"""Differential tests: the accelerated scanner (onnxtext/fastparse.py) against the Lark parse of record.

For every text, ``parse_model(text)`` (fast path first) and ``parse_model(text, fast=False)`` (Lark only)
must give the same serialized proto, or raise ParseErrors with the same line, column and message. Texts:
the whole corpus printed by onnxtext and by onnx's printer, a table of edge cases, and seeded random
mutations (tokens and characters deleted, inserted, replaced) of printed models.
"""

from __future__ import annotations

import random
import re
import warnings

import onnx
import onnx.printer
import pytest

import onnxtext
from onnxtext.syntax import fastparse
from onnxtext.errors import ParseError
from corpus import all_models

CASES = all_models()


def outcome(text: str, fast: bool, start: str = "model"):
    """('ok', serialized proto) or ('error', line, column, message) of one parse."""
    fn = {"model": onnxtext.parse_model, "graph": onnxtext.parse_graph, "function": onnxtext.parse_function}[start]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ("ok", fn(text, fast=fast).SerializeToString(deterministic=True))
        except ParseError as e:
            return ("error", e.line, e.column, e.message)


def assert_same(text: str, start: str = "model"):
    fast, lark = outcome(text, True, start), outcome(text, False, start)
    assert fast == lark, f"fast path and Lark disagree on:\n{text[:2000]}"
    return fast


def printed(load):
    """The model's text by onnxtext's printer and, where it works, by onnx's printer."""
    m = load()
    texts = [onnxtext.to_text(m)]
    try:
        texts.append(onnx.printer.to_text(m))
    except Exception:  # noqa: BLE001 - onnx's printer fails on a few models: nothing to compare then
        pass
    return texts


# ------------------------------------------------------------------------------------------ corpus
@pytest.mark.parametrize("name,load", CASES, ids=[c[0] for c in CASES])
def test_corpus(name, load):
    for text in printed(load):
        assert_same(text)


# ------------------------------------------------------------------------------------------ edge cases
# Each text is parsed both ways; a newcomer adds a line. Forms the fast path reads and forms it leaves to Lark.
EDGE = [
    # id lists: empty items, trailing commas, quoted names with commas, escapes, empty quoted names
    'g (float x) => (float y) { y = Foo(x, , x) }',
    'g (float x) => (float y) { y = Foo(x,) }',
    'g (float x) => (float y) { y = Foo(, x) }',
    'g (float x) => (float y) { y = Foo("") }',
    'g (float x) => (float y) { y = Foo(x, "") }',
    'g (float x) => (float y) { y, = Foo(x) }',
    'g (float x) => (float y) { , y = Foo(x) }',
    'g (float x) => (float y) { = Foo(x) }',
    'g (float "a,b") => (float y) { y = Foo("a,b", "c\\"d") }',
    'g (float x) => (float y) { y = Foo("\\x41\\u00e9", x) }',
    'g (float x) => (float y) { y = Foo("\\xff") }',
    'g (float x) => (float y) { y = Foo("\udcff") }',  # a lone surrogate: not UTF-8, both paths refuse it
    'g (float x) => (float y) { ["\udcff"] y = Foo(x) }',
    'g (float x) => (float8 y, float8e5m2 z) { y = Foo(x) }',
    'g (float x) => (float y) { y = Foo(x) y = Bar(y) }',
    'g (float x) => (float y) { [] y = Foo(x) }',
    'g (float x) => (float y) { ["n 1"] y = Foo(x) }',
    'g (float x) => (float y) { [n1] y = Foo(x) [n1] z = Foo(x) }',
    # keywords and numbers where names stand
    'g (float x) => (float y) { nan, inf, float = seq(x, map, true) }',
    'g (float tensor) => (float y) { y = Foo(tensor) }',
    'g (tensor) => (float y) { y = Foo(x) }',
    'g (float x) => (float y) { y = com.ms.Foo(x) }',
    'g (float x) => (float y) { y = "com.x".Foo:ov(x) }',
    'g (float x) => (float y) { y = Foo : "o v" (x) }',
    # attributes
    'g (float x) => (float y) { y = Foo<a = 1, b = 2.5, c = "s", d = [1, 2], e = [1.5, 2], f = [], g: ints = []>(x) }',
    'g (float x) => (float y) { y = Foo<a = -inf, b = NaN, c = 0x10, d = .5, e = 5., f = 1e5, g = -0, h = 01>(x) }',
    'g (float x) => (float y) { y = Foo<a = 1,>(x) }',
    'g (float x) => (float y) { y = Foo<a = 9223372036854775808>(x) z = Foo<a = -9223372036854775808, b = 1e400>(x) }',
    'g (float x) => (float y) { y = Foo<a = 3.4028235e38, b = 1e-50, c = -0.0, d = -inf, e = nan, f = 0x7fc00000>(x) }',
    'g (float x) => (float y) { y = Foo<>(x) }',
    'g (float x) => (float y) { y = Foo<a = 1>(x)<b = 2> }',
    'g (float x) => (float y) { y = Foo(x)<b = 2> }',
    'g (float x) => (float y) { y = Foo<a: float = 1, b: int = 2.5, c: floats = [1, 2]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [1, "s"]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [@r]>(x) z = Foo<b = [@ "", @s]>(x) w = Foo<c = [@r, 1]>(x) }',
    'g (float x) => (float y) { y = Foo<a = ["a", "b",]>(x) }',
    'g (float x) => (float y) { y = Foo<a = 1.5e>(x) }',
    'g (float x) => (float y) { y = Foo<a = 0x>(x) }',
    'g (float x) => (float y) { y = Foo<a = infx>(x) }',
    'g (float x) => (float y) { y = Foo<a = float[2] {1, 2}>(x) }',
    'g (float x) => (float y) { y = Foo<a = "\\xff">(x) }',
    'g (float x) => (float y) { y = Foo<a = 1, a = 2>(x) }',
    'g (float x) => (float y) { y = Foo<a: flot = 1>(x) }',
    'g (float x) => (float y) { y = If<then_branch = t () => (float z) { z = Identity(x) }>(c) }',
    # element type names as attribute values: INT for the attributes the schema documents as element types
    'g (float x) => (int64 y) { y = Cast<to = int64>(x) z = Cast <to = float,> (x) w = Cast(x) <to = bfloat16> }',
    'g (float x) => (float y) { y = EyeLike<dtype = double, k = 1>(x) r = RandomNormal<dtype = float16, shape = [2]>() }',
    'g (float x) => (float y) { y = Foo<to = float>(x) z = com.microsoft.Foo<to = int8>(x) }',
    'g (float x) => (float y) { y = ai.onnx.Cast<to = float>(x) z = "".Cast<to = uint4>(x) w = Cast:o<to = int4>(x) }',
    'g (float x) => (float y) { y = QuantizeLinear<output_dtype = float8e4m3fn, axis = 1>(x, s, z) }',
    'g (float x) => (float y) { y = Cast<to: type_proto = float>(x) z = Cast<to: int = float>(x) }',
    'g (float x) => (float y) { y = Cast<to = float[2]>(x) z = Cast<to = float: "d">(x) w = Cast<to = floaty>(x) }',
    'g (float x) => (float y) { y = Cast<to = [float, int64]>(x) z = Cast<to = float, to = int64>(x) }',
    'g (float x) => (float y) { y = Cast<to = float, saturate = 0>(x) z = Cast<saturate = 0, to = string>(x) }',
    'g (float x) => (float y) { y = Cast<to = float x>(x) z = Cast<to = float = 1>(x) w = Cast<to = seq(float)>(x) }',
    # a Constant's raw tensor (built by the scanner for int64/int32/float/double of plain literals), and its limits
    *(f'g (float x) => (float y) {{ y = Constant <value = {v}> () z = Constant<value={v}>() }}' for v in [
        'int64 = raw {1}', 'int64[1, 4] = raw {0, 1, 2, -3}', 'int64[0] = raw {}', 'int64 = raw {1,}', 'int64[2] = raw {1}',
        'int64 = raw {9223372036854775807}', 'int64 = raw {9223372036854775808}', 'int64 = raw {0x10}', 'int64 = raw {1.5}',
        'int32[1] = raw {-2147483648}', 'int32 = raw {2147483648}', 'float = raw {8.0}', 'float = raw {1}',
        'float[2] = raw {1e39, 1.0}', 'float[3] = raw {nan, -inf, 3.4028235e38}', 'double[] = raw {1.5}',
        'double[1,] = raw {1.5}', 'double[01] = raw {-inf}', 'double[1] = raw {1e400}', 'float[N] = raw {1.5}',
        'int64[1] = raw {1 2}', 'int64[ 1 ] = raw { 7 }', 'float16 = raw {1.0}', 'int64 = {1}', 'float[1] "w" = raw {1.5}',
        'float[1] w = raw {1.5}', 'float[1] w raw {1.5}', 'float[1] "" = raw {1.5}', 'float[1] raw {1.5}',
        'float[1] raw = raw {1.5}', 'float[1] "a\\"b" = raw {1.5}', 'float[1] float = raw {1.5}', 'int64[1] "\\xff" = raw {1}',
        'float[1] "w" = {1.5}', 'float[1] "w" = raw {1}']),
    'g (float x) => (float y) { y = Constant <value = int64 = raw {1}, a = 1> () }',
    'g (float x) => (float y) { y = Constant <v: tensor = int64 = raw {1}> () z = Constant <"v" = int64 = raw {1}> () }',
    # comments and doc lines
    'g (float x) => (float y) { y = Foo(x) # comment\n z = Bar(y) // another\n }',
    'g (float x) => (float y) { y = Foo( # inside\n x) }',
    'g (float x) => (float y) {\n  /// doc of the node\n  y = Foo(x)\n}',
    'g (float x) => (float y) {\n  @doc_string "d" y = Foo(x)\n}',
    'g (float x) => (float y) { y = Foo(x)\x0b }',
    # @metadata_props blocks of string pairs (read in one step: every layout, escapes, odd backslash runs, errors)
    'g (float x) => (float y) {\n  @metadata_props ["k": "v", "k2": "v2"]\n  y = Foo(x)\n}',
    'g (float x) => (float y) {\n  @metadata_props [\n    "k": "v",\n    "k2" : "v2",\n  ]\n  y = Foo(x)\n}',
    'g (float x) => (float y) {\n  @metadata_props [ "k":"v" ] y = Foo(x) z = Bar(y) }',
    'g (float x) => (float y) { @metadata_props ["a\\"]": "b\\\\", "c": "d\\\\\\"]"] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["s": "File \\"a.py\\", line 3\\n  x = [1]"] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "\\xff"] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "\\u00e9\\x41", "\\t": ""] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "\udcff"] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "v" "k2": "v2"] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "v",, "k2": "v2"] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "v", "k2"] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": 1] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "v"] @metadata_props ["k2": "v2"] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "v"] /// doc\n y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "v"] @doc_string "d" y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props [] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_propsx ["k": "v"] y = Foo(x) }',
    'g (float x) => (float y) { @metadata_props ["k": "v"] y = Constant <value = float[1] {1}> () }',
    'g (float x) => (float y) { y = Foo <a = 1> (x) @metadata_props ["k": "v"] z = Foo(y) }',
    'g (float x) => (float y) { y = Foo(x) @metadata_props ["k": "v"] }',
    'g (float x) => (float y) { @metadata_props ["k": "v"] "a"]"] y = Foo(x) }',
    '<ir_version: 10>\n@metadata_props ["m": "v"]\ng (@metadata_props ["k": "v"] float x) => (float y)\n'
    '<@metadata_props ["k": "v"] float[2] c, @metadata_props ["k": "w"] float[2] d, float[2] e = {1, 2},\n'
    ' @metadata_props ["k": "v"] float[1] f = {1}, @metadata_props ["k": "v"] float[3] h, float[3] i> { y = Foo(x) }',
    'g (float x) => (float y) <@metadata_props ["k": "v"] float[2] c = {1}> { y = Foo(x) }',
    'g (float x) => (float y) { y = Foo<@metadata_props ["k": "v"] a = 1>(x) }',
    'g (float x) => (float y) { y = If<then_branch = @metadata_props ["k": "v"] t () => (float z) { z = Neg(x) }>(x) }',
    'g (float x) => (float y) <@metadata_props ["k": "v"]> { y = Foo(x) }',
    'g (float x) => (float y) <@metadata_props ["k": "v"] float[2] c, @metadata_props ["k": 2] float[2] d> { y = Foo(x) }',
    # value lists and small tensors
    'g (float[N] x) => (float[N] y) <float[1] c = {0.5}, int64[2] s = {1, 2}, double d = {1.5}> { y = Add(x, c) }',
    'g (float x) => (float y) <float[2] c = {1, 2.5}, float[1] h = {0x3f80}, float[1] o = {1e39}> { y = Foo(x) }',
    'g (float x) => (float y) <float[2] c = {1.5}> { y = Foo(x) }',
    'g (float x) => (float y) <float[1] c = {1.5,}, float[0] e = {}, float[1] f = {,}> { y = Foo(x) }',
    'g (float x) => (float y) <int64[1] c = {9223372036854775808}> { y = Foo(x) }',
    'g (float x) => (float y) <int32[2] c = {1, -2}, bool[2] b = {true, false}, string[1] s = {"a"}> { y = Foo(x) }',
    'g (float x) => (float y) <float[1] "" = {1.5}, float[N] v, float[] u, float[N, 3] w> { y = Foo(x) }',
    'g (float x) => (float y) <float[1] c = raw {1.5}, uint8[2] b = base64 "AAE=", uint8[1] h = hex "ff"> '
    '{ y = Foo(x) }',
    'g (float x) => (float y) <float[1] c = {1.5}, float[1] c = {2.5}> { y = Foo(x) }',
    'g (float[N: "batch"] x) => (float[?, "M"] y) <float[1]: "den" c = {1.5}> { y = Foo(x) }',
    'g (float x, float[1] w = {2.5}) => (float y) { y = Mul(x, w) }',
    'g (float x) => (float y = {1}) { y = Foo(x) }',
    'g (seq(float) x) => (float y) { y = Foo(x) }',
    'g (type() x, type(): "d" z, type ( ) w) => (type() y) <type() v> { y = Foo<t = type()>(x) }',
    'g (type x) => (float y) { y = Foo(x) }',
    'g (type() x) => (float y) { type() = Foo(x) }',
    'g (seq(type()) x, optional(type()) z) => (float y) { y = Foo(x) }',
    'g (type(float) x) => (float y) { y = Foo(x) }',
    'g (map(int64, float[]) x, seq(map(string, float)) z) => (float y) { y = Foo(x) }',
    'g (map(int64) x, map(?, float) z, map(7, float) w, map(int64, float): "d" v) => (float y) { y = Foo(x) }',
    'g (float x) => (float y) <float[1] raw = {1.5}> { y = Foo(x) }',
    # entries the entry regex reads: quoted dims, raw small tensors (float/double/int64), annotations before them
    'g (float x) => (float y) <float[1, "Min(64, s)", 4] a, float["4*b", s] c, float["a\\"b", "]"] d> { y = Foo(x) }',
    'g (float x) => (float y) <int64[1] a = raw {1}, float b = raw {1.5}, double[2] c = raw {1.5, -inf}> { y = Foo(x) }',
    'g (float x) => (float y) <int64[1] a = raw {1.5}, float b = raw {1}, float[1] c = raw {1e39}> { y = Foo(x) }',
    'g (float x) => (float y) <int64[2] a = raw {1}, int32[1] b = raw {1}, bool[1] c = raw {true}> { y = Foo(x) }',
    'g (float x) => (float y) <int64[1] a = raw{ 7 ,}, int64[1] b = raw {9223372036854775808}> { y = Foo(x) }',
    'g (float x) => (float y) <int64[1] raw = raw {1}, float[1] c = raw {0x3f80}> { y = Foo(x) }',
    *(f'g (float x) => (float y) <{t}[2] a = {{{v}}}, {t}[2] b = raw {{{v}}}, {t} c = {{{v}}}> {{ y = Foo(x) }}'
      for t in ("uint8", "int8", "uint16", "int16", "int32", "uint32", "bool")
      for v in ("0, 1", "-1, 127", "128, 255", "256, 0", "-129, 0", "65535, -32768", "65536, 1", "2147483648, 0", "1.5, 0",
                "0x10, 1", "true, 0")),
    'g (float x) => (float y) <@doc_string "d" float[2] a, /// doc\n float[2] b, @metadata_props ["k": "v"] float[2] c> '
    '{ y = Foo(x) }',
    'g (float x, int64[1] k = raw {2}) => (float y) { y = Foo(x) }',
    'g (float x) => (float y) <uint8[3] a = base64 "AAEC", uint8[3] b = base64"AAEC", uint8[3] c = base64 "AAEC"> '
    '{ y = Foo(x) }',
    'g (float x) => (float y) <uint8[3] a = base64 "AAEC" uint8[3] b = base64 "AAEC"> { y = Foo(x) }',
    'g (float x) => (float y) <uint8[3] a = base64 # c\n "AAEC", uint8[3] raw = base64 "AAEC"> { y = Foo(x) }',
    'g (float x) => (float y) <@doc_string "d" uint8[3] a = base64 "AAEC", uint8[2] b = base64 "AAEC"> { y = Foo(x) }',
    'g (float x, uint8[3] a = base64 "AAEC") => (float y) <uint8[3] b = base64 "AA\\x45C",> { y = Foo(x) }',
    # long literal lists (more than 16: converted in one pass when all FLOAT or all INT tokens)
    *(f"g (float x) => (float y) <{t} c = {{{body}}}> {{ y = Foo(x) }}" for t, body in [
        ("float[20]", ", ".join(f"{i}.5" for i in range(20))),
        ("float[20]", ", ".join(str(i) if i % 2 else f"{i}.25" for i in range(20))),
        ("float[20]", ", ".join(["inf", "-nan"] + [f"{i}e-3" for i in range(18)])),
        ("float[20]", ", ".join(["0x3f80"] + [f"{i}.5" for i in range(19)])),
        ("float[20]", ", ".join(f"{i}.5" for i in range(20)) + ","),
        ("float[20]", ", ".join(f"{i}.5" for i in range(21))),
        ("float[20]", ", ".join(f"{i}.5" for i in range(19)) + ", 1e39"),
        ("double[20]", ", ".join(f"{i}.5" for i in range(19)) + ", 1e400"),
        ("int64[20]", ", ".join(str(i - 10) for i in range(20)) + ","),
        ("int64[20]", ", ".join(str(i) for i in range(19)) + ", 18446744073709551616"),
        ("int32[20]", ", ".join(str(i) for i in range(19)) + ", 0x10"),
        ("bool[20]", ", ".join(["true", "false"] * 10)),
        ("float[20]", ", ".join(f"{i}.5" for i in range(19)) + ", 1.5.5"),
        ("float[20]", ", ".join(f"{i}.5" for i in range(19)) + ",, 1.5"),
    ]),
    # byte blocks: the strict one-call decoder and the builder's reference decoder
    'g (float x) => (float y) <uint8[2] b = base64 "AA E="> { y = Foo(x) }',
    'g (float x) => (float y) <uint8[2] b = base64 "AAE=="> { y = Foo(x) }',
    'g (float x) => (float y) <uint8[2] b = base64 "AAE=AA=="> { y = Foo(x) }',
    'g (float x) => (float y) <uint8[2] b = base64 "AA*="> { y = Foo(x) }',
    'g (float x) => (float y) <uint8[2] b = base64 "AAE"> { y = Foo(x) }',
    *(f'g (float x) => (float y) <uint8[{n}] b = base64 "{block}"> {{ y = Foo(x) }}' for n, block in [
        (3, "\n    AAEC\n  "), (2, "AAE=="), (0, "="), (0, "=="), (0, ""), (3, "AAAA===="), (1, "A\n=\n="), (2, "AA\tE=\n"),
        (2, "AAE\x0b="), (2, "AAE\x0c=\r"), (3, "ABCD\x1c"), (2, "AB=C"), (3, "ABCD=="), (6, "AAEC\n    AAEC"),
        (2, "AA\u00e9E="), (2, "AAE=\n  "), (2, "\\nAAE=")]),
    'g (float x) => (float y) <uint8[3] b = base64 "AAE="> { y = Foo(x) }',
    'g (float x) => (float y) <uint8[2] b = base64 "\\x41AE="> { y = Foo(x) }',
    'g (float x) => (float y) <float16[1] h = base64 "AAA=", int4[3] q = base64 "AAA=", uint8[1] x = hex "f f"> '
    '{ y = Foo(x) }',
    'g (float x) => (float y) <string[1] s = base64 "AAA="> { y = Foo(x) }',
    'g (float x) => (float y) <uint8[N] s = base64 "AAA="> { y = Foo(x) }',
    'g (uint8[2] w = base64 "AAE=") => (float y) { y = Foo(w) }',
    'g (float x) => (float y) { y = Constant<value = uint8[2] base64 "AAE=">() }',
    # models and functions
    '<ir_version: 8, opset_import: ["": 18, "com.x": 1], producer_name: "p", model_version: 3>\n'
    'g (float x) => (float y) { y = Relu(x) }',
    '<ir_version: 8, opset_import: ["": 18]>\ng (float x) => (float y) { y = f(x) }\n'
    '<domain: "local", opset_import: ["": 18]>\nf <alpha, beta = 1.5> (a) => (b) { b = Relu(a) }',
    '<ir_version: 8, opset_import: ["": 18]>\ng (float x) => (float y) { y = f(x) }\n'
    '<domain: "local", opset_import: ["": 18]>\nf (float[N] a) => (b) <float[N] t> { t = Relu(a) b = Neg(t) }',
    '<ir_version: 8, ir_version: 9>\ng (float x) => (float y) { y = Relu(x) }',
    '<ir_version: 8, bogus: 1>\ng (float x) => (float y) { y = Relu(x) }',
    '/// model doc\n<ir_version: 8>\n/// graph doc\ng (float x) => (float y) { y = Relu(x) }',
    '/// doc\ng (float x) => (float y) { y = Relu(x) }',
    '<ir_version: 8, metadata_props: ["k": "v"]>\ng (float x) => (float y) { y = Relu(x) }',
    '<ir_version: 8>\ng (float x) => (float y) { y = Relu(x) }\ntraining_info { algorithm: a () => () {} }',
    # number lists (the scanner builds plain decimal lists itself): ints, floats, mixed, specials, hex, ranges
    'g (float x) => (float y) { y = Foo<a = [1, -2, 3,], b = [ 1 ,2 ]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [1, 2.5, -inf, NaN, 1e3], b = [0.1]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [1, 0x3F800000], b = [0x1, 2]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [9223372036854775807, -9223372036854775808]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [9223372036854775808]>(x) }',
    'g (float x) => (float y) { y = Foo<a: floats = [1, 2], b: ints = [1.5]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [1e400, 1]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [007, 1], b = [1,, 2]>(x) }',
    # list attributes read without a regular expression over them: numbers, plain strings, and what falls back
    'g (float x) => (float y) { y = Foo<a = ["A", "B",], b = [ "" ], c = ["a]b", "c"], d = ["x" "y"]>(x) }',
    'g (float x) => (float y) { y = Foo<a = ["A", 1], b = ["\\x41", "B"], c = ["A", @r], d = ["\udcff"]>(x) }',
    'g (float x) => (float y) { y = Foo<a = ["A", "B"] b = [1]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [1, 2]x, b = [1]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [1, 2.5, nan, -Infinity], b = [1e5, 2], c = [.5], d = [NaN]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [1, 0x10], b = [1 2], c = [,], d = [], "e" = [1], f: ints = [1]>(x) }',
    'g (float x) => (float y) { y = Foo<a = [\n  1,\n  2\n], b = [-0, 007]>(x) }',
    # errors at the edges
    '', '<', 'g (float x) => (float y) {', 'g (float x) => (float y) { y = Relu(x) } }',
    'g (float x) => (float y) { y = Relu(x) } trailing', 'g (floot x) => (float y) { y = Relu(x) }',
]


# Function texts, parsed as functions both ways
FUNCTION_EDGE = [
    '<domain: "d", opset_import: ["": 18]>\nf (a) => (b) { b = Neg(a) }',
    '@metadata_props ["k": "v"]\n<domain: "d", opset_import: ["": 18]>\nf (a) => (b) { @metadata_props ["k": "w"] b = Neg(a) }',
    '<domain: "d", opset_import: ["": 18]>\n@metadata_props ["k": "v"] f (a) => (b) { b = Neg(a) }',
    '<domain: "d">\nf (type() a, float[N] c) => (b) <float[N] t, @metadata_props ["k": "v"] float[N] u> { b = Neg(a) }',
]


@pytest.mark.parametrize("text", FUNCTION_EDGE)
def test_function_edge_cases(text):
    assert_same(text, "function")


@pytest.mark.parametrize("text", EDGE)
def test_edge_cases(text):
    assert_same(text)
    if not text.startswith(("<", "/// model")):
        assert_same(text, "graph")


# ------------------------------------------------------------------------------------------ fuzzing
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[A-Za-z_][A-Za-z0-9_.]*|-?[0-9][0-9.eE+-]*|[ \t\r\n]+|=>|.', re.S)
POOL = ["tensor", "float", "raw", "inf", "nan", "true", "x", "seq", "int64", "sparse", "1", "1.5", "0x1F", "-inf",
        "1e5", ".5", "5.", "-3", ",", "=", "<", ">", "(", ")", "[", "]", "{", "}", ":", ".", "@", "@a", "///", "# c\n",
        "//", '"a,b"', '""', '"\\x41"', '"', "\n", " ", "\t", "\x0b", "=>", ", ,", "\\"]


def mutate(text: str, rng: random.Random) -> str:
    """One random edit: a token or a character deleted, inserted, duplicated or replaced."""
    if rng.random() < 0.5:
        toks = _TOKEN.findall(text)
        if not toks:
            return rng.choice(POOL)
        i = rng.randrange(len(toks))
        op = rng.choice(("delete", "insert", "replace", "duplicate"))
        if op == "delete":
            del toks[i]
        elif op == "insert":
            toks.insert(i, rng.choice(POOL))
        elif op == "replace":
            toks[i] = rng.choice(POOL)
        else:
            toks.insert(i, toks[i])
        return "".join(toks)
    i = rng.randrange(len(text) + 1)
    op = rng.choice(("delete", "insert", "replace"))
    ch = rng.choice('",<>(){}[]=:.@#/ \n0a-eE\\x')
    if op == "delete":
        return text[:i] + text[i + 1:]
    if op == "insert":
        return text[:i] + ch + text[i:]
    return text[:i] + ch + text[i + 1:]


def _fuzz_sources():
    """Small printed models: the first node models with attributes, initializers and subgraphs."""
    picks = [load for name, load in CASES if name.startswith("test_")][::40]
    out = []
    for load in picks:
        texts = printed(load)
        out.extend(t for t in texts if len(t) < 4000)
    out.extend(t for t in EDGE if t)
    return out


FUZZ_SEEDS = range(8)
MUTANTS_PER_TEXT = 6


@pytest.mark.parametrize("seed", FUZZ_SEEDS)
def test_fuzzed_texts(seed):
    rng = random.Random(seed)
    sources = _fuzz_sources()
    agreed = {"ok": 0, "error": 0}
    for text in sources:
        for _ in range(MUTANTS_PER_TEXT):
            mutant = text
            for _ in range(rng.choice((1, 1, 2, 3))):
                mutant = mutate(mutant, rng)
            agreed[assert_same(mutant)[0]] += 1
    # the mutations must exercise both outcomes, or the test proves little
    assert agreed["ok"] > 0 and agreed["error"] > 0, agreed


# ------------------------------------------------------------------------------------------ the fast path is taken
PLAIN = [
    'g (float[N] x) => (float[N] y) { y = Relu(x) }',
    'g (float[N] x) => (float[N] "v.2") <float[1] c = {0.5}> { [n0] "v.1" = Add(x, c) [n1] "v.2" = Relu("v.1") }',
    'g (float x) => (float y) { y = com.x.Foo<axis = 1, alpha = 0.5, mode = "m", pads = [0, 1]>(x, , x) }',
    '<ir_version: 9, opset_import: ["": 19]>\ng (float x) => (float y) { y = Relu(x) # done\n }',
    'g (float x) => (seq(map(int64, float[])) y, map(string, float) z) { y = ZipMap(x) }',  # skl2onnx outputs
]


# Statements the one-regex path reads (no rule-by-rule reading, no Lark): each text's node statements.
ONE_REGEX = [
    'g (float x) => (float y) { y = Cast <to = float> (x) }',
    'g (float x) => (float y) { [n] y = Cast<to = int64, saturate = 1>(x) z = com.x.Foo<to = float>(y) }',
    'g (float x) => (float y) { y = RandomUniformLike(x) <dtype = double, high = 1.0> }',
]


@pytest.mark.parametrize("text", ONE_REGEX)
def test_one_regex_path(text, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a statement left the one-regex path")

    monkeypatch.setattr(fastparse._Scanner, "node_general", refuse)
    monkeypatch.setattr(fastparse, "parse_node_at", refuse)
    assert fastparse.parse(text, "graph") is not None
    monkeypatch.undo()
    assert_same(text, "graph")


def _annotated_model():
    """A model annotated as torch's dynamo exporter annotates: metadata on nodes and on value_info entries."""
    import onnx.helper as oh

    nodes = [oh.make_node("Relu", ["x"], ["a"], name="n0"), oh.make_node("Neg", ["a"], ["y"], name="n1")]
    g = oh.make_graph(nodes, "g", [oh.make_tensor_value_info("x", 1, [2])], [oh.make_tensor_value_info("y", 1, [2])],
                      value_info=[oh.make_tensor_value_info("a", 1, [2])])
    trace = 'File "m.py", line 3, in forward\n    return torch.relu(x)  # [1] \\ "quoted"'
    m = oh.make_model(g)
    for i, n in enumerate(m.graph.node):
        for k, v in (("namespace", f"m/{i}"), ("pkg.torch.onnx.stack_trace", trace), ("ü", "é")):
            n.metadata_props.add(key=k, value=v)
    for k, v in (("kind", "USER_INPUT"), ("", "")):
        m.graph.value_info[0].metadata_props.add(key=k, value=v)
    return m


def test_metadata_blocks_read_in_one_step(monkeypatch):
    """The printer's @metadata_props blocks are split in one step (no token-by-token reading), same proto."""
    from onnxtext.syntax import fastmetadata

    model = _annotated_model()
    text = onnxtext.to_text(model)
    assert text.count("@metadata_props") == 3

    split = []
    real = fastmetadata.split_block

    def counting(block):
        split.append(real(block))
        return split[-1]

    monkeypatch.setattr(fastmetadata, "split_block", counting)
    monkeypatch.setattr(fastmetadata, "_META_RE", None)  # the slower reading of other layouts
    assert fastparse.parse(text, "model").SerializeToString() == model.SerializeToString()
    assert len(split) == 3 and None not in split
    monkeypatch.undo()
    assert_same(text)


def test_metadata_block_split_agrees_with_the_token_regex():
    """split_block (quotes found with str.split) against the STRING token's regular expression on random blocks of
    quotes, backslashes, separators and whitespace: when it splits a block, it finds the same strings."""
    from onnxtext.syntax import fastmetadata
    from onnxtext.syntax.fastlex import _META_RE, _STRING_RE

    rng = random.Random(0)
    pieces = ['"', '"', "\\", '\\"', ":", ",", " ", "\n", "\x0b", "a", "]", '": "', '", "']
    split = escaped = 0
    for _ in range(20000):
        body = "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 12)))
        text = f'@metadata_props ["k{body}"]'
        got = fastmetadata.split_block(text)
        m = _META_RE.fullmatch(text)
        if got is not None:
            assert m is not None and got == [t[1:-1] for t in _STRING_RE.findall(m.group(1))], text
            split += 1
            escaped += "\\" in text
    # the random blocks are often valid, with and without escapes, or the comparison proves little
    assert split > 1000 and escaped > 200, (split, escaped)


@pytest.mark.parametrize("text", PLAIN)
def test_fast_path_taken(text, monkeypatch):
    assert fastparse.parse(text, "model") is not None
    # with Lark unavailable, the public parse still succeeds: it never needed the grammar
    import onnxtext.syntax.grammar as grammar

    def no_lark(*args, **kwargs):
        raise AssertionError("Lark was used for a plain text")

    monkeypatch.setattr(grammar, "get_parser", no_lark)
    assert onnxtext.parse_model(text) is not None


def test_switch_off(monkeypatch):
    monkeypatch.setattr(fastparse, "ENABLED", False)
    assert fastparse.parse(PLAIN[0], "model") is None
    assert onnxtext.parse_model(PLAIN[0]) is not None


# ------------------------------------------------------------------------------------------ per-statement fallback
# Texts with one statement beyond the scanner among plain ones: the scanner must keep the text, hand only that
# statement to the Lark grammar (onnxtext/syntax/statement.py), and build the same proto as the Lark parse.
# Each line: (text, how many statements Lark parses alone). A newcomer adds a line.
_SPARSE = ('sparse_value = sparse_tensor(float[5]) = sparse(float[2] v = raw {1.0, 2.0}, int64[2] i = raw {0, 3})')
STATEMENT_FALLBACK = [
    (f'g (float[5] x) => (float[5] y) {{\n  a = Relu(x)\n  c = Constant <\n    {_SPARSE}\n  > ()\n  y = Add(a, c)\n}}', 1),
    ('g (float[N] x) => (float[N] y) {\n  a = Relu(x)\n  c = If <then_branch = t () => (opaque(d, n) "u") { "u" = Neg(a) },'
     ' else_branch = e () => (opaque(d, n) "u") { "u" = Relu(a) }> (b)\n  y = Add(a, c)\n}', 1),
    ('g (float[N] x) => (float[N] y) {\n  a = Relu(x)\n  c = If <then_branch = t () => (type() "u") { "u" = Neg(a) },'
     ' else_branch = e () => (type(): "d" "u") { "u" = Relu(a) }> (b)\n  y = Add(a, c)\n}', 0),  # type(): scanned
    (f'g (float[5] x) => (float[5] y) {{\n  c = Constant <{_SPARSE}> ()\n  d = Constant <{_SPARSE}> ()  # two\n'
     '  @doc_string "d" y = Add(c, d)\n}', 2),
    (f'g (float[5] x) => (float[5] y) {{\n  c = Constant <{_SPARSE}> ()\n}}', 1),  # the last statement
    (f'g (float[5] x) => (float[5] y) {{\n  [n] c = Constant <{_SPARSE}> ()\n  y = Neg(c)\n}}', 1),
    (f'g (float[5] x) => (float[5] y) {{\n  [n] c = Constant <{_SPARSE}> () <a = 1>\n  y = Neg(c)\n}}', None),  # 2 lists
    (f'g (float[5] x) => (float[5] y) {{\n  c = L <g = h () => (float z) {{ z = Constant <{_SPARSE}> () }}> ()\n'
     '  y = Neg(c)\n}', 1),  # nested: the subgraph's statement, found inside the scanner's own reading
    # followed by an error: the scanner gives up and Lark reports it
    (f'g (float[5] x) => (float[5] y) {{\n  c = Constant <{_SPARSE}> ()\n  y = Neg(c\n}}', None),
    (f'g (float[5] x) => (float[5] y) {{\n  c = Constant <{_SPARSE}> ( \n  y = Neg(c)\n}}', None),
]


@pytest.mark.parametrize("text,lark_statements", STATEMENT_FALLBACK)
def test_one_statement_falls_back_not_the_text(text, lark_statements, monkeypatch):
    calls = []
    real = fastparse.parse_node_at

    def counting(s, pos):
        calls.append(pos)
        return real(s, pos)

    monkeypatch.setattr(fastparse, "parse_node_at", counting)
    kept = fastparse.parse(text, "model") is not None
    assert kept == (lark_statements is not None)
    if kept:
        assert len(calls) == lark_statements
    assert_same(text)
    assert_same(text, "graph")


# ------------------------------------------------------------------------------------------ locating the first error
# A typo in a statement of the text's outermost level: the fast scanner stops there, and the Lark grammar reads only
# the text's skeleton before it and the statement itself (syntax/statement.py locate_error). The error must be the
# one the whole-text Lark parse reports: message, line, column, hint, expected words, and the further errors that
# recovery finds from it. Each line: (id, (old, new) replaced once in LOCATE_TEXT, whether the first error is found
# without a whole-text Lark parse); a newcomer adds a line.
LOCATE_TEXT = '''<ir_version: 10, opset_import: ["": 18, "local": 1]>
main (float[N] x, bool c) => (float[N] y)
<
  float[1] a = {1.5},
  float[1] b = {2.5},
  float[1] d = {3.5},
  int64[2] s = {1, 2}
> {
  [first] t0 = Add(x, a)
''' + "".join(f"  t{i} = Mul(t{i - 1}, b)\n" for i in range(1, 30)) + '''  k = Cast <to = float> (t29)
  m = If (c) <then_branch = then () => (float[N] z) {
    z = Relu(k)
    z2 = Neg(z)
  }, else_branch = else () => (float[N] w) {
    w = Neg(k)
  }>
''' + "".join(f"  u{i} = Relu({'m' if i == 0 else f'u{i - 1}'})\n" for i in range(30)) + '''  y = local.F (u29)
}
<domain: "local", opset_import: ["": 18]>
F (p) => (q) {
  r = Relu(p)
  q = Neg(r)
}
'''
LOCATE = [
    ("first_statement", ("t0 = Add(x, a)", "t0 = Add(x a)"), True),
    ("header_refused_then_typo", [('<ir_version: 10, opset', '<ir_version: 10, bogus: 1, opset'),
                                  ("t15 = Mul(t14, b)", "t15 = Mul(t14 b)")], True),
    ("function_header_refused_then_typo", [('<domain: "local", opset', '<domain: "local", bogus: 1, opset'),
                                           ("q = Neg(r)", "q = Neg(r $)")], True),
    ("second_statement", ("t1 = Mul(t0, b)", "t1 = Mul(t0, b))"), True),
    ("third_statement", ("t2 = Mul(t1, b)", "t2 = Mul((t1, b)"), True),
    ("middle_statement", ("t15 = Mul(t14, b)", "t15 = Mul(t14, b"), True),
    ("middle_first_token", ("t16 = Mul(t15, b)", "> t16 = Mul(t15, b)"), True),
    ("middle_stray_character", ("t17 = Mul(t16, b)", "t17 = Mul(t16, b) $"), True),
    ("middle_bad_attribute", ("k = Cast <to = float>", "k = Cast <to = flaot>"), True),
    ("middle_attribute_list", ("k = Cast <to = float>", "k = Cast <to = float,, saturate = 1>"), True),
    ("middle_semantic", ("k = Cast <to = float>", "k = Cast <to: floats = 1.5>"), True),
    ("middle_tensor_size", ("k = Cast <to = float> (t29)", "k = Constant <value = float[2] {1.0}> ()"), True),
    ("inside_subgraph", ("z2 = Neg(z)", "z2 = Neg(z"), True),
    ("inside_subgraph_signature", ("then () => (float[N] z)", "then () => (floot[N] z)"), True),
    ("last_statement", ("y = local.F (u29)", "y = local.F (u29"), True),
    ("missing_closing_brace", ("  y = local.F (u29)\n}", "  y = local.F (u29)\n"), True),
    ("stray_closing_brace", ("  y = local.F (u29)\n}", "  y = local.F (u29)\n}\n}"), True),
    ("inside_function", ("q = Neg(r)", "q = Neg(r $)"), True),
    ("function_signature", ("F (p) => (q)", "F (p) => q"), True),
    ("function_header", ('<domain: "local", opset', '<domain "local", opset'), True),
    ("after_everything", ("  q = Neg(r)\n}\n", "  q = Neg(r)\n}\ntrailing\n"), True),
    ("unterminated_string", ("t20 = Mul(t19, b)", 't20 = Mul("t19, b)'), True),
    ("first_initializer", ("float[1] a = {1.5}", "float[1] a = {1.5"), True),
    ("middle_initializer", ("float[1] b = {2.5}", "float[1] b = {2.5}}"), True),
    ("last_initializer", ("int64[2] s = {1, 2}", "int64[2] s = {1, 2,, 3}"), True),
    # the builder checks initializers when it reduces the whole graph (a syntax error after them comes first)
    ("initializer_size", ("int64[2] s = {1, 2}", "int64[2] s = {1, 2, 3}"), False),
    ("last_initializer_type", ("int64[2] s = {1, 2}", "int46[2] s = {1, 2}"), True),
    # a header the builder refuses: Lark reports it when it reduces the model or function, at its end, so a syntax
    # error in a statement comes first; without one, the header's error (found by the whole-text parse)
    ("header_refused_then_typo", ('<ir_version: 10, opset', '<ir_version: 10, bogus: 1, opset'), False),
    ("function_header_refused", ('<domain: "local", opset', '<domain: "local", bogus: 1, opset'), False),
    # errors before the first statement: Lark parses from the start, which is cheap there
    ("graph_signature", ("main (float[N] x, bool c)", "main (float[N] x bool c)"), False),
    ("model_header", ('<ir_version: 10, opset', '<ir_version: 10 opset'), False),
]


def _full_outcome(text: str, fast: bool, start: str):
    fn = {"model": onnxtext.parse_model, "graph": onnxtext.parse_graph}[start]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            fn(text, fast=fast)
        except ParseError as e:
            return (e.line, e.column, e.message, e.hint, e.expected,
                    [(x.line, x.column, x.message) for x in e.errors])
    return None


def _graph_text(text: str) -> str:
    """The main graph of LOCATE_TEXT alone (no header, no function after it)."""
    return text[text.index("\nmain") + 1:text.index("\n<domain")] + "\n"


def test_locate_text_is_valid():
    assert onnxtext.parse_model(LOCATE_TEXT, fast=False) is not None
    assert fastparse.scan(LOCATE_TEXT, "model") is not None


# every case as a model, and the cases inside the main graph also as a graph alone
def _edits(edit) -> list:
    """A table line's (old, new) pair, or its list of pairs."""
    return [edit] if isinstance(edit[0], str) else list(edit)


_LOCATE_PARAMS = [pytest.param("model", *c[1:], id=f"model-{c[0]}") for c in LOCATE] + [
    pytest.param("graph", *c[1:], id=f"graph-{c[0]}") for c in LOCATE
    if all(old in _graph_text(LOCATE_TEXT) for old, _ in _edits(c[1]))]


@pytest.mark.parametrize("start,edit,located", _LOCATE_PARAMS)
def test_located_error_equals_lark_error(start, edit, located, monkeypatch):
    text = LOCATE_TEXT
    for old, new in _edits(edit):
        assert text.count(old) == 1
        text = text.replace(old, new)
    if start == "graph":
        text = _graph_text(text)
    lark_only = _full_outcome(text, False, start)
    assert lark_only is not None, "the edit must make the text wrong"
    if located:
        # the fast scanner stops at the statement, and the whole-text Lark parse is not used for the first error
        assert isinstance(fastparse.scan(text, start), fastparse.FailedAt)
        from onnxtext.syntax.builder import Builder
        from onnxtext.syntax.grammar import get_parser

        def whole_text(*args, **kwargs):
            raise AssertionError("the whole text went to Lark")

        monkeypatch.setattr(get_parser(Builder(), key="build"), "parse", whole_text)
        fn = {"model": onnxtext.parse_model, "graph": onnxtext.parse_graph}[start]
        with pytest.raises(ParseError):
            fn(text)
        monkeypatch.undo()
    assert _full_outcome(text, True, start) == lark_only
