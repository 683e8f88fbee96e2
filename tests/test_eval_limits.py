"""Evaluator limits and hostile models (issue 23): each probe runs in a subprocess with time and memory limits.

A probe is a model text and a Python snippet that runs it; the child has a wall-clock limit and an
address-space limit (``resource.setrlimit(RLIMIT_AS)``), so a hang or a memory blow-up fails one probe
instead of taking the test run down. The snippet sees ``model`` (the parsed text), ``np`` and ``onnxtext``,
and ``run(feeds)``, which runs the model with the Evaluator and prints its outputs, or prints the
``OnnxTextError`` and exits with status 1; a ``code`` that is a list is an ``onnxtext`` command line instead. A probe passes when the child exits with the expected status,
prints the expected words, and shows no traceback, "internal error", RecursionError or MemoryError.

To add a probe, add a line to ``PROBES``.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass

import pytest

import onnxtext

TIME_LIMIT = 60  # seconds per probe; the slowest legitimate one takes a few seconds on an idle machine
MEMORY_LIMIT = 3 << 30  # bytes of address space per child (numpy, onnx and lark map ~1 GiB at start)

PRELUDE = '''
import sys, numpy as np, onnxtext
def run(feeds=None, **options):
    try:
        model = onnxtext.parse_model(open("m.onnxtext").read())
        outputs = onnxtext.Evaluator(model).run(None, feeds or {}, **options)
    except onnxtext.OnnxTextError as e:
        print(type(e).__name__, e)
        raise SystemExit(1)
    for o in outputs:
        print(np.asarray(o).tolist() if np.asarray(o).size < 100 else np.asarray(o).shape)
def evaluate(proto):
    try:
        onnxtext.Evaluator(proto).run(None, {})
    except onnxtext.OnnxTextError as e:
        print(type(e).__name__, e)
        raise SystemExit(1)
import onnx
from onnx import helper, TensorProto as T
def initializer_model(**fields):
    t = onnx.TensorProto(name="W", data_type=T.FLOAT, **fields)
    g = helper.make_graph([helper.make_node("Identity", ["W"], ["y"])], "g", [],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)], [t])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
def sparse_model(dims, indices):
    values = onnx.numpy_helper.from_array(np.ones(len(indices), np.float32), "v")
    sparse = helper.make_sparse_tensor(values, onnx.numpy_helper.from_array(np.array(indices, np.int64), "i"), dims)
    g = helper.make_graph([helper.make_node("Constant", [], ["y"], sparse_value=sparse)], "g", [],
                          [helper.make_tensor_value_info("y", T.FLOAT, None)])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
'''

HEADER = '<ir_version: 10, opset_import: ["": 20, "local": 1]>\n'


@dataclass
class Probe:
    id: str
    text: str  # the model (HEADER is prepended unless the text has a header of its own)
    code: str | list  # the snippet run after PRELUDE, or an onnxtext command line
    says: tuple = ()  # words the output must contain
    status: int = 1  # expected exit status: 1 for a clean refusal, 0 for a run that must work
    memory: int = MEMORY_LIMIT  # address space of the child, bytes


def nested_ifs(depth: int) -> str:
    """``depth`` If nodes, each in the then_branch of the one before; the innermost returns x, every else -x."""
    lines = ["g (bool c, float[1] x) => (float[1] y) {"]
    out = "y"
    for i in range(depth):
        pad = "  " * (2 * i + 1)
        inner = f"t{i + 1}"
        lines += [f"{pad}{out} = If <", f"{pad}  else_branch = e{i} () => (float[1] {inner}) {{",
                  f"{pad}    {inner} = Neg(x)", f"{pad}  }},", f"{pad}  then_branch = b{i} () => (float[1] {inner}) {{"]
        out = inner
    lines.append("  " * (2 * depth + 1) + f"{out} = Identity(x)")
    for i in reversed(range(depth)):
        pad = "  " * (2 * i + 1)
        lines += [f"{pad}  }}", f"{pad}> (c)"]
    return "\n".join(lines + ["}"]) + "\n"


RECURSIVE = '''g (float[2] x) => (float[2] y) {
  y = local.F(x)
}

<domain: "local", opset_import: ["": 20, "local": 1]>
F (a) => (b) {
  b = local.G(a)
}

<domain: "local", opset_import: ["": 20, "local": 1]>
G (a) => (b) {
  b = local.F(a)
}
'''

SELF_RECURSIVE = '''g (float[2] x) => (float[2] y) {
  y = local.H(x)
}

<domain: "local", opset_import: ["": 20, "local": 1]>
H (a) => (b) {
  t = Relu(a)
  b = local.H(t)
}
'''

SEQ_NESTED = "g (%s x) => (float y) {\n  y = Constant <value_float = 1.0> ()\n}\n"
FEEDS_C_X = '{"c": np.array(%s), "x": np.array([2.0], np.float32)}'

IMAGE = 'g (uint8[N] data) => (uint8[H, W, C] image) {\n  image = ImageDecoder <pixel_format = "RGB"> (data)\n}\n'
PNG = '''
import struct, zlib
def chunk(tag, data):
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
def png(width, height, idat):
    return (b"\\x89PNG\\r\\n\\x1a\\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
def decode(data):
    run({"data": np.frombuffer(data, np.uint8)})
'''
ZIP_BOMB = '''
z = zlib.compressobj(9)
idat = b"".join([z.compress(bytes([0, 1, 2, 3]))] + [z.compress(bytes(1 << 20)) for _ in range(1024)] + [z.flush()])
decode(png(1, 1, idat))  # 1x1 pixel, 1 GiB when inflated
'''
JPEG_BOMB = '''
import io
from PIL import Image
buf = io.BytesIO()
Image.new("RGB", (8, 8)).save(buf, format="JPEG")
data = bytearray(buf.getvalue())
sof = data.index(b"\\xff\\xc0")
data[sof + 5:sof + 9] = struct.pack(">HH", 60000, 60000)  # the header now declares 60000 x 60000 pixels
decode(bytes(data))
'''

STRING_LOOP = '''g (int64 M, string[1] x) => (string[1] y) {
  y = Loop <
    body = body (int64 i, bool c, string[1] s) => (bool c2, string[1] s2) {
      s2 = StringConcat(s, s)
      c2 = Identity(c)
    }
  > (M, "", x)
}
'''
COUNT_LOOP = '''g (int64 M, float x) => (float y) {
  y = Loop <
    body = body (int64 i, bool c, float s) => (bool c2, float s2) {
      s2 = Add(s, s)
      c2 = Identity(c)
    }
  > (M, "", x)
}
'''
SCAN_LOOP = '''g (int64 M, float[1000] x) => (float[M, 1000] y) {
  y = Loop <
    body = body (int64 i, bool c) => (bool c2, float[1000] s) {
      s = Identity(x)
      c2 = Identity(c)
    }
  > (M, "")
}
'''
LOW_LIMIT = "import onnxtext.evaluator.limits as L\nL.MAX_ALLOCATION_BYTES = 100 << 20\n"
LOW_RUN_LIMIT = "import onnxtext.evaluator.limits as L\nL.MAX_RUN_ALLOCATION_BYTES = 200 << 20\n"
# a 4 MB tensor inserted into a sequence in every iteration (the same tensor each time), then concatenated
SEQUENCE_LOOP = '''g (int64 M, float[1000000] x) => (float[N] y) {
  empty = SequenceEmpty <dtype = 1> ()
  grown = Loop <
    body = body (int64 i, bool c, seq(float[1000000]) s) => (bool c2, seq(float[1000000]) s2) {
      s2 = SequenceInsert(s, x)
      c2 = Identity(c)
    }
  > (M, "", empty)
  y = ConcatFromSequence <axis = 0> (grown)
}
'''
# a 10 MB ConstantOfShape in every iteration: each allocation is fine, their sum over the run is not (its shape
# depends on the iteration number, so it is not loop-invariant: it cannot run once before the loop)
ALLOCATING_LOOP = '''g (int64 M, int64[1] n) => (float y) {
  zero = Constant <value = float[1] {0.0}> ()
  y = Loop <
    body = body (int64 i, bool c, float s) => (bool c2, float s2) {
      none = Sub(i, i)
      shape = Add(n, none)
      big = ConstantOfShape(shape)
      r = ReduceSum <keepdims = 0> (big)
      s2 = Add(s, r)
      c2 = Identity(c)
    }
  > (M, "", zero)
}
'''
RESIZE = '''g (float[1, 1, 2, 2] x, float[4] scales) => (float y) {
  y = Resize <mode = "%s"> (x, "", scales)
}
'''
TFIDF = ('g (int64[2] x) => (float y) {\n  y = TfIdfVectorizer <max_gram_length = 1, max_skip_count = 0, '
         'min_gram_length = 1, mode = "TF", ngram_counts = [0], ngram_indexes = [1000000000000], pool_int64s = [1]> (x)\n}\n')
PAD = "g (float[2, 2] x, int64[4] pads) => (float y) {\n  y = Pad <mode = \"%s\"> (x, pads)\n}\n"
SHAPE_OP = "g (int64[%d] shape) => (float y) {\n  y = %s\n}\n"

THREADS = '''
import threading
model = onnxtext.parse_model(open("m.onnxtext").read())
ev = onnxtext.Evaluator(model)
feeds = [{"c": np.array(i % 2 == 0), "x": np.random.default_rng(i).standard_normal(1).astype(np.float32),
          "M": np.array(i % 7 + 1)} for i in range(24)]
feeds = [{k: v for k, v in f.items() if k in ev.input_names} for f in feeds]
serial = [ev.run(None, f) for f in feeds]
results, errors = [None] * len(feeds), []
def work(i):
    try:
        for _ in range(10):
            results[i] = ev.run(None, feeds[i])
    except Exception as e:
        errors.append(repr(e))
threads = [threading.Thread(target=work, args=(i,)) for i in range(len(feeds))]
[t.start() for t in threads]; [t.join() for t in threads]
assert not errors, errors
assert all(all(np.array_equal(a, b) for a, b in zip(r, s)) for r, s in zip(results, serial)), "threads differ"
print("threads match serial runs")
'''
# If, Loop and a model-local function together, for the threads probe
CONTROL_FLOW = '''g (bool c, float[1] x, int64 M) => (float[1] y, float[1] z) {
  y = If <
    then_branch = b () => (float[1] t) {
      t = local.Twice(x)
    },
    else_branch = e () => (float[1] u) {
      u = Neg(x)
    }
  > (c)
  z = Loop <
    body = body (int64 i, bool k, float[1] s) => (bool k2, float[1] s2) {
      f = Cast <to = 1> (i)
      s2 = Add(s, f)
      k2 = Identity(k)
    }
  > (M, "", y)
}

<domain: "local", opset_import: ["": 20]>
Twice (a) => (b) {
  b = Add(a, a)
}
'''

TOKENIZER = ('<ir_version: 10, opset_import: ["": 20, "com.microsoft": 1]>\ng (string[N] x) => (string[N, D] y) {\n'
             '  y = com.microsoft.Tokenizer <mark = 0, mincharnum = 1, pad_value = "#", tokenexp = "%s"> (x)\n}\n')
REGEX = 'g (string[N] x) => (bool[N] y) {\n  y = RegexFullMatch <pattern = "%s"> (x)\n}\n'

PROBES = [
    # --- RegexFullMatch: RE2 semantics, linear time
    Probe("regex-backtracking-pattern", REGEX % "(a+)+$",
          'run({"x": np.array(["a" * 100_000 + "b", "aaa"], dtype=object)})', ("[False, True]",), status=0),
    Probe("regex-nested-quantifiers", REGEX % "(x+x+)+y",
          'run({"x": np.array(["x" * 50_000, "xxy"], dtype=object)})', ("[False, True]",), status=0),
    Probe("regex-posix-class", REGEX % "[[:alpha:]]+[[:digit:]]",
          'run({"x": np.array(["abc1", "ab1c", ""], dtype=object)})', ("[True, False, False]",), status=0),
    Probe("regex-backreference-refused", REGEX % "(a)\\\\1",
          'run({"x": np.array(["aa"], dtype=object)})', ("not valid RE2 syntax", "invalid escape")),
    Probe("regex-lookahead-refused", REGEX % "a(?=b)",
          'run({"x": np.array(["ab"], dtype=object)})', ("not valid RE2 syntax",)),
    Probe("tokenizer-backtracking-pattern", TOKENIZER % "(a+)+b",
          'run({"x": np.array(["a" * 100_000, "aab"], dtype=object)})', ("[['#'], ['aab']]",), status=0),
    # --- ImageDecoder: decoded sizes checked before anything is allocated
    Probe("png-zip-bomb", IMAGE, PNG + ZIP_BOMB, ("[[[1, 2, 3]]]",), status=0, memory=7 << 28),  # 1.75 GiB
    Probe("png-declares-huge-size", IMAGE, PNG + "decode(png(100000, 100000, zlib.compress(bytes(10))))",
          ("10000000000 pixels", "MAX_IMAGE_PIXELS")),
    Probe("png-declares-huge-size-builtin", IMAGE, PNG + "import onnxtext.evaluator.kernels.image as I\n"
          "I.PREFER_PILLOW = False\ndecode(png(100000, 100000, zlib.compress(bytes(10))))",
          ("100000 x 100000", "MAX_IMAGE_PIXELS")),
    Probe("png-zip-bomb-builtin", IMAGE, PNG + "import onnxtext.evaluator.kernels.image as I\nI.PREFER_PILLOW = False\n"
          + ZIP_BOMB, ("[[[1, 2, 3]]]",), status=0, memory=7 << 28),
    Probe("png-over-lowered-limit", IMAGE, PNG + "import onnxtext.evaluator.limits as L\nL.MAX_IMAGE_PIXELS = 99\n"
          "decode(png(10, 10, zlib.compress(bytes(310))))", ("10 x 10 = 100 pixels", "limit of 99")),
    Probe("png-under-limit", IMAGE, PNG + "decode(png(2, 1, zlib.compress(bytes([0, 9, 8, 7, 6, 5, 4]))))",
          ("[[[9, 8, 7], [6, 5, 4]]]",), status=0),
    Probe("jpeg-bomb", IMAGE, PNG + JPEG_BOMB, ("60000",)),
    # --- memory guard: sizes that come from data, checked before allocating
    Probe("constant-of-shape-huge", SHAPE_OP % (2, "ConstantOfShape(shape)"),
          'run({"shape": np.array([10 ** 11, 10 ** 11])})', ("ConstantOfShape", "10000000000000000000000 elements",
                                                            "MAX_ALLOCATION_BYTES")),
    Probe("constant-of-shape-negative", SHAPE_OP % (2, "ConstantOfShape(shape)"), 'run({"shape": np.array([3, -2])})',
          ("negative dimension",)),
    Probe("expand-huge", SHAPE_OP % (3, "Expand(shape, shape)"),
          'run({"shape": np.array([10 ** 9, 10 ** 9, 1])})', ("Expand", "MAX_ALLOCATION_BYTES")),
    Probe("tile-huge", "g (float[2] x, int64[1] r) => (float y) {\n  y = Tile(x, r)\n}\n",
          'run({"x": np.ones(2, np.float32), "r": np.array([10 ** 15])})', ("Tile", "MAX_ALLOCATION_BYTES")),
    Probe("range-huge", "g (int64 a, int64 b, int64 d) => (int64 y) {\n  y = Range(a, b, d)\n}\n",
          'run({"a": np.array(0), "b": np.array(10 ** 17), "d": np.array(1)})', ("Range", "MAX_ALLOCATION_BYTES")),
    Probe("loop-doubling-string", STRING_LOOP, LOW_LIMIT + 'run({"M": np.array(100), "x": np.array(["ab"], object)})',
          ("StringConcat", "limit of 104857600 bytes")),
    Probe("loop-doubling-string-small", STRING_LOOP, 'run({"M": np.array(3), "x": np.array(["ab"], object)})',
          ("['abababababababab']",), status=0),
    Probe("loop-scan-output-growth", SCAN_LOOP, LOW_LIMIT + 'run({"M": np.array(10 ** 12), '
          '"x": np.ones(1000, np.float32)})', ("Loop scan output 0", "MAX_ALLOCATION_BYTES")),
    Probe("loop-1e12-timeout", COUNT_LOOP, 'run({"M": np.array(10 ** 12), "x": np.array(1.0, np.float32)}, timeout=2)',
          ("Loop", "timed out")),
    Probe("loop-iteration-limit", COUNT_LOOP, "import onnxtext.evaluator.limits as L\nL.MAX_LOOP_ITERATIONS = 1000\n"
          'run({"M": np.array(10 ** 12), "x": np.array(1.0, np.float32)})', ("more than 1000 iterations",)),
    Probe("pad-huge", PAD % "constant", 'run({"x": np.ones((2, 2), np.float32), "pads": np.array([0, 10 ** 12, 0, 1])})',
          ("Pad", "MAX_ALLOCATION_BYTES")),
    Probe("pad-huge-reflect", PAD % "reflect",
          'run({"x": np.ones((2, 2), np.float32), "pads": np.array([10 ** 6, 10 ** 6, 10 ** 6, 10 ** 6])})',
          ("Pad", "MAX_ALLOCATION_BYTES")),
    Probe("pad-small", PAD % "constant", 'run({"x": np.ones((2, 2), np.float32), "pads": np.array([0, 1, 0, 0])})',
          ("[[0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]",), status=0),
    Probe("resize-huge-nearest", RESIZE % "nearest",
          'run({"x": np.ones((1, 1, 2, 2), np.float32), "scales": np.array([1, 1, 1e6, 1e6], np.float32)})',
          ("Resize", "MAX_ALLOCATION_BYTES")),
    Probe("resize-huge-linear", RESIZE % "linear",
          'run({"x": np.ones((1, 1, 2, 2), np.float32), "scales": np.array([1, 1, 1e6, 1e6], np.float32)})',
          ("Resize", "MAX_ALLOCATION_BYTES")),
    Probe("resize-small", RESIZE % "nearest",
          'run({"x": np.ones((1, 1, 2, 2), np.float32), "scales": np.array([1, 1, 2, 1], np.float32)})',
          ("[[[[1.0, 1.0], [1.0, 1.0], [1.0, 1.0], [1.0, 1.0]]]]",), status=0),
    Probe("loop-sequence-growth", SEQUENCE_LOOP, LOW_RUN_LIMIT + 'run({"M": np.array(10 ** 6), '
          '"x": np.ones(10 ** 6, np.float32)})', ("SequenceInsert", "MAX_RUN_ALLOCATION_BYTES")),
    Probe("concat-from-sequence-huge", SEQUENCE_LOOP, LOW_LIMIT + 'run({"M": np.array(30), '
          '"x": np.ones(10 ** 6, np.float32)})', ("ConcatFromSequence", "MAX_ALLOCATION_BYTES")),
    Probe("concat-from-sequence-small", SEQUENCE_LOOP, 'run({"M": np.array(3), "x": np.ones(10 ** 6, np.float32)})',
          ("(3000000,)",), status=0),
    Probe("run-allocation-budget", ALLOCATING_LOOP, LOW_RUN_LIMIT + 'run({"M": np.array(10 ** 6), '
          '"n": np.array([2500000])})', ("ConstantOfShape", "this run has allocated", "MAX_RUN_ALLOCATION_BYTES")),
    Probe("run-allocation-budget-resets-per-run", ALLOCATING_LOOP, LOW_RUN_LIMIT + 'for _ in range(10):\n'
          '    run({"M": np.array(15), "n": np.array([2500000])})', ("0.0",), status=0),
    Probe("tfidf-huge-output-index", TFIDF, 'run({"x": np.array([1, 2])})', ("TfIdfVectorizer", "MAX_ALLOCATION_BYTES")),
    Probe("string-split-padded-rows", "g (string[N] x) => (string y, int64 n) {\n  y, n = StringSplit(x)\n}\n",
          LOW_LIMIT + 'run({"x": np.array(["a"] * 2000 + [" ".join(["b"] * 10000)], object)})',
          ("StringSplit", "MAX_ALLOCATION_BYTES")),
    Probe("tokenizer-padded-rows", TOKENIZER % "\\\\w+",
          LOW_LIMIT + 'run({"x": np.array(["a"] * 2000 + [" ".join(["b"] * 10000)], object)})',
          ("Tokenizer", "MAX_ALLOCATION_BYTES")),
    # --- stored tensors whose dims do not fit: refused before decoding allocates
    Probe("initializer-rank-65", "", 'evaluate(initializer_model(dims=[1] * 65, float_data=[1.0]))',
          ("rank 65 is above 64",)),
    Probe("initializer-negative-dim", "", 'evaluate(initializer_model(dims=[-3]))', ("negative dimension",)),
    Probe("initializer-raw-not-multiple", "", 'evaluate(initializer_model(dims=[3], raw_data=bytes(7)))',
          ("initializer 'W'", "multiple of element size")),
    Probe("initializer-huge-dims-raw", "", 'evaluate(initializer_model(dims=[10 ** 11], raw_data=bytes(4)))',
          ("initializer 'W'", "(400000000000 bytes)")),  # float: 4 bytes per element
    Probe("sparse-dims-1e22", "", 'evaluate(sparse_model([10 ** 18, 10 ** 4], [5]))', ("MAX_ALLOCATION_BYTES",)),
    Probe("sparse-index-out-of-range", "", 'evaluate(sparse_model([10], [5, 10 ** 6]))', ("index lies outside",)),
    Probe("sparse-negative-index", "", 'evaluate(sparse_model([10], [-1]))', ("index lies outside",)),
    # --- concurrency: one Evaluator run from many threads at once matches serial runs
    Probe("threads-control-flow", CONTROL_FLOW, THREADS, ("threads match serial runs",), status=0),
    Probe("threads-nested-if", nested_ifs(20), THREADS, ("threads match serial runs",), status=0),
    # --- nesting: deeper than protobuf's 100 message levels when built bottom-up (33+ nested Ifs)
    Probe("nested-if-40-run-then", nested_ifs(40), "run(" + FEEDS_C_X % "True" + ")", ("[2.0]",), status=0),
    Probe("nested-if-40-run-else", nested_ifs(40), "run(" + FEEDS_C_X % "False" + ")", ("[-2.0]",), status=0),
    Probe("nested-if-100-run", nested_ifs(100), "run(" + FEEDS_C_X % "True" + ")", ("[2.0]",), status=0),
    Probe("nested-if-40-check", nested_ifs(40), ["check", "m.onnxtext"], status=0),
    Probe("nested-if-40-fmt", nested_ifs(40), 'import subprocess\nsubprocess.run([sys.executable, "-m", "onnxtext", '
          '"fmt", "m.onnxtext"], check=True)\nrun(' + FEEDS_C_X % "False" + ')', ("[-2.0]",), status=0),
    Probe("nested-if-40-print", nested_ifs(40), ["print", "m.onnxtext"], ("t40 = Identity(",), status=0),
    Probe("nested-if-40-info", nested_ifs(40), ["info", "m.onnxtext"], ("If", "40"), status=0),
    Probe("nested-if-40-cli-run", nested_ifs(40), ["run", "m.onnxtext", "--input", "c=false", "--input", "x=[2.0]"],
          ("-2.",), status=0),
    Probe("nested-if-40-compile", nested_ifs(40), ["compile", "m.onnxtext", "-o", "m.onnx"],
          ("deeper than protobuf's decoding limit of 100", "--allow-deep")),
    Probe("nested-if-40-compile-allow-deep-then-load", nested_ifs(40),
          'import subprocess\nsubprocess.run([sys.executable, "-m", "onnxtext", "compile", "m.onnxtext", "-o", "m.onnx",'
          ' "--allow-deep"], check=True)\ntry:\n    onnxtext.load("m.onnx")\nexcept onnxtext.OnnxTextError as e:\n'
          '    print(e); raise SystemExit(1)', ("deeper than protobuf's limit of 100 levels",)),
    Probe("nested-seq-100", SEQ_NESTED % ("seq(" * 100 + "float" + ")" * 100), ["check", "m.onnxtext"], status=0),
    Probe("nested-seq-10000", SEQ_NESTED % ("seq(" * 10000 + "float" + ")" * 10000), ["check", "m.onnxtext"],
          ("types nested more than 100 deep", "MAX_TYPE_NESTING")),
    Probe("nested-seq-10000-fmt", SEQ_NESTED % ("seq(" * 10000 + "float" + ")" * 10000), ["fmt", "m.onnxtext"],
          ("types nested more than 100 deep",)),
    # --- recursive functions: an error when the Evaluator is built, never a RecursionError
    Probe("recursive-functions-run", RECURSIVE, 'run({"x": np.ones(2, np.float32)})',
          ("functions local.F -> local.G -> local.F call each other", "cannot be run")),
    Probe("self-recursive-function-run", SELF_RECURSIVE, 'run({"x": np.ones(2, np.float32)})',
          ("function local.H calls itself",)),
    Probe("recursive-functions-check", RECURSIVE, ["check", "m.onnxtext"], ("fn.recursion",)),
    Probe("recursive-functions-cli-run", SELF_RECURSIVE, ["run", "m.onnxtext", "--input", "x=[1.0, 2.0]"],
          ("calls itself",)),
]


def _limits(memory):
    def apply():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    return apply


@pytest.mark.parametrize("probe", PROBES, ids=[p.id for p in PROBES])
def test_probe(probe, tmp_path):
    (tmp_path / "m.onnxtext").write_text(probe.text if probe.text.startswith("<") else HEADER + probe.text)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(onnxtext.__file__)))] + sys.path)}
    try:
        command = ([sys.executable, "-m", "onnxtext", *probe.code] if isinstance(probe.code, list)
                   else [sys.executable, "-c", PRELUDE + probe.code])
        proc = subprocess.run(command, cwd=tmp_path, env=env,
                              capture_output=True, text=True, errors="replace", timeout=TIME_LIMIT,
                              preexec_fn=_limits(probe.memory))
    except subprocess.TimeoutExpired:
        pytest.fail(f"{probe.id}: no answer within {TIME_LIMIT} s (hang)")
    out = proc.stderr + proc.stdout
    for bad in ("Traceback", "internal error", "RecursionError", "MemoryError"):
        assert bad not in out, out[-3000:]
    assert proc.returncode == probe.status, f"exit {proc.returncode}:\n{out[-3000:]}"
    for word in probe.says:
        assert word in out, out[-3000:]


def test_ctrl_c_stops_an_endless_loop_naming_the_node(tmp_path):
    """SIGINT (Ctrl-C) during a Loop with trip count 1e12 ends the run with an EvalError naming the Loop."""
    import signal
    import time

    (tmp_path / "m.onnxtext").write_text(HEADER + COUNT_LOOP)
    code = PRELUDE + 'print("started", flush=True)\nrun({"M": np.array(10 ** 12), "x": np.array(1.0, np.float32)})'
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(onnxtext.__file__)))] + sys.path)}
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_limits(MEMORY_LIMIT))
    try:
        assert proc.stdout.readline().strip() == "started"
        time.sleep(2)  # well inside the loop by now
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the run did not stop after SIGINT")
    assert proc.returncode == 1, out + err
    assert "Traceback" not in err and "Loop" in out and "interrupted" in out.lower(), out + err
