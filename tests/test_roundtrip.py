"""Byte-exact round trip: ``parse_model(to_text(m)).SerializeToString() == m.SerializeToString()`` for every
model of the onnx backend test data and of the real-model corpus, through the API and through the CLI
(``print`` then ``compile``); printing is idempotent.

Bytes, not proto equality: field presence (an unset field stays unset, a field set to its default stays
set), the order of repeated fields and every tensor's encoding are part of what comes back.
"""

import subprocess
import sys

import onnx
import pytest

import onnxtext
import realmodels
from corpus import all_models

CASES = all_models()


def _differences(a, b, path="model", out=None, limit=5):
    """Where two messages differ in presence or value (for a readable failure, not for the verdict)."""
    out = [] if out is None else out
    fa, fb = dict(a.ListFields()), dict(b.ListFields())
    for fd in a.DESCRIPTOR.fields:
        if len(out) >= limit:
            break
        here = f"{path}.{fd.name}"
        if (fd in fa) != (fd in fb):
            out.append(f"{here}: {'set' if fd in fa else 'unset'} in the original, not in the copy")
        elif fd in fa and fd.message_type is not None:
            va, vb = fa[fd], fb[fd]
            if fd.is_repeated:
                if len(va) != len(vb):
                    out.append(f"{here}: {len(va)} entries, {len(vb)} after the round trip")
                for i, (x, y) in enumerate(zip(va, vb)):
                    _differences(x, y, f"{here}[{i}]", out, limit)
            else:
                _differences(va, vb, here, out, limit)
        elif fd in fa and fa[fd] != fb[fd]:
            out.append(f"{here}: value differs")
    return out


def assert_byte_exact(m: onnx.ModelProto, back: onnx.ModelProto):
    want, got = m.SerializeToString(), back.SerializeToString()
    if want != got:
        where = _differences(m, back) or ["same fields and values: the wire order or encoding differs"]
        pytest.fail(f"{len(want)} bytes in, {len(got)} back; " + "; ".join(where))


@pytest.mark.parametrize("name,load", CASES, ids=[c[0] for c in CASES])
def test_roundtrip(name, load):
    m = load()
    text = onnxtext.to_text(m)
    back = onnxtext.parse_model(text)
    assert_byte_exact(m, back)
    assert onnxtext.to_text(back) == text  # idempotent


def test_corpus_size():
    # 1884 node models plus the folder models: the corpus, not a subset
    assert sum(1 for n, _ in CASES if n.startswith("test_")) >= 1884
    assert len(CASES) >= 2000


@pytest.mark.parametrize("model", realmodels.params())
def test_real_model_roundtrip(model):
    m = model.load()  # external data read into the tensors
    text = onnxtext.to_text(m)
    assert_byte_exact(m, onnxtext.parse_model(text))


def _cli(*args, cwd):
    r = subprocess.run([sys.executable, "-m", "onnxtext", *args], cwd=cwd, capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr
    return r


# print -> compile through the CLI: a few backend models with nodes that have a domain, a subgraph, a
# function, typed and raw tensors; the real models below
CLI_CASES = ["test_if_seq", "test_layer_normalization_4d_axis0", "test_cast_FLOAT_to_FLOAT16",
             "test_dequantizelinear", "test_loop11"]


@pytest.mark.parametrize("name", CLI_CASES)
def test_cli_print_compile_backend(name, tmp_path):
    m = dict(CASES)[name]()
    onnx.save(m, tmp_path / "m.onnx")
    _cli("print", "m.onnx", "-o", "t.onnxtext", cwd=tmp_path)
    _cli("compile", "t.onnxtext", "-o", "back.onnx", cwd=tmp_path)
    assert (tmp_path / "back.onnx").read_bytes() == (tmp_path / "m.onnx").read_bytes()


def _one_per_kind(params):
    """The first model of each kind (torch-script, skl2onnx, ort-quantized, ...): the CLI costs a process."""
    seen, out = set(), []
    for p in params:
        kind = p.values[0].kind if p.values[0] is not None else None
        if kind not in seen:
            seen.add(kind)
            out.append(p)
    return out


@pytest.mark.parametrize("model", _one_per_kind(realmodels.params(max_bytes=3_000_000)))
def test_cli_print_compile_real(model, tmp_path):
    _cli("print", str(model.path), "-o", "t.onnxtext", cwd=tmp_path)
    _cli("compile", "t.onnxtext", "-o", "back.onnx", cwd=tmp_path)
    if model.external_data:  # compile embeds the data: compare with the model as onnxtext.load reads it
        assert_byte_exact(onnxtext.load(str(model.path)), onnx.load(str(tmp_path / "back.onnx")))
    else:
        assert (tmp_path / "back.onnx").read_bytes() == model.path.read_bytes()
