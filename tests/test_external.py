"""External tensor data: side files written by save/print/compile, read back by load, and path safety.

The security tables cover each attack (absolute path, ``..``, a symlinked file, a symlinked directory)
against each way in (text and .onnx inputs; load, print --external-data, compile, run). To add an attack,
add a line to READ_ATTACKS or WRITE_ATTACKS.
"""

import hashlib
import os

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnxtext
from onnxtext.cli import main
from onnxtext.external import iter_tensors

THRESHOLD = 1024


# ---------------------------------------------------------------------------------------------- models
def rich_model() -> onnx.ModelProto:
    """Every place a TensorProto can hold data, each big (>= THRESHOLD bytes) or small."""
    rng = np.random.default_rng(0)
    f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(f32(40, 50), "W"),
             helper.make_tensor("I8", TensorProto.INT8, [3000], rng.integers(-128, 127, 3000).tolist()),  # typed
             numpy_helper.from_array(f32(4), "small"),
             helper.make_tensor("S", TensorProto.STRING, [300], [b"s%d" % i for i in range(300)]),
             numpy_helper.from_array(f32(300).astype(np.float16), "half")]
    sparse = helper.make_sparse_tensor(numpy_helper.from_array(f32(500), "SP"),
                                       numpy_helper.from_array(np.arange(0, 1000, 2, dtype=np.int64), ""), [1000])
    branch = lambda tag: helper.make_graph(  # noqa: E731
        [helper.make_node("Constant", [], [f"c_{tag}"], value=numpy_helper.from_array(f32(600)))],
        tag, [], [helper.make_tensor_value_info(f"c_{tag}", TensorProto.FLOAT, [600])])
    nodes = [helper.make_node("Constant", [], ["C"], value=numpy_helper.from_array(f32(30, 30)), name="const"),
             helper.make_node("Constant", [], ["cond"], value=numpy_helper.from_array(np.array(True))),
             helper.make_node("If", ["cond"], ["Z"], then_branch=branch("then"), else_branch=branch("else")),
             helper.make_node("Scale", ["Z"], ["Y"], domain="local")]
    graph = helper.make_graph(nodes, "g", [], [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [600])],
                              inits, sparse_initializer=[sparse])
    fn = helper.make_function("local", "Scale", ["x"], ["y"],
                              [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(f32(600))),
                               helper.make_node("Mul", ["x", "k"], ["y"])], [helper.make_opsetid("", 17)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)],
                              functions=[fn])
    init = helper.make_graph([], "init", [], [], [numpy_helper.from_array(f32(700), "T")])
    model.training_info.add().initialization.CopyFrom(init)
    return model


def runnable_model() -> onnx.ModelProto:
    """Y = MatMul(X, W) + B with one big weight W (8000 bytes)."""
    w = numpy_helper.from_array(np.arange(2000, dtype=np.float32).reshape(40, 50) / 1000, "W")
    b = numpy_helper.from_array(np.ones(50, np.float32), "B")
    nodes = [helper.make_node("MatMul", ["X", "W"], ["XW"]), helper.make_node("Add", ["XW", "B"], ["Y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 40])],
                              [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 50])], [w, b])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def arrays(model) -> dict:
    """label -> numpy array (onnx's own decoder as the oracle) of every inline tensor."""
    return {label: numpy_helper.to_array(t) for label, t in iter_tensors(model)}


def nbytes(t: TensorProto) -> int:
    a = numpy_helper.to_array(t)
    return -1 if a.dtype == object else a.nbytes


def externals(model) -> dict:
    return {label: {e.key: e.value for e in t.external_data} for label, t in iter_tensors(model)
            if t.data_location == TensorProto.EXTERNAL}


def cli(*args):
    return main([str(a) for a in args])


# ---------------------------------------------------------------------------------------------- round trips
@pytest.mark.parametrize("ext", [".onnx", ".onnxtext"])
@pytest.mark.parametrize("per_tensor", [False, True], ids=["one-file", "directory"])
def test_save_moves_every_big_tensor_and_load_reads_it_back(tmp_path, ext, per_tensor):
    model = rich_model()
    before = model.SerializeToString()
    expected = arrays(model)
    big = {label for label, t in iter_tensors(model) if nbytes(t) >= THRESHOLD}
    target = tmp_path / ("weights" if per_tensor else "weights.bin")
    if per_tensor:
        target.mkdir()
    out = tmp_path / ("m" + ext)
    onnxtext.save(model, out, external_data=target, threshold=THRESHOLD)
    assert model.SerializeToString() == before  # the caller's model is untouched
    refs = onnxtext.load(out, load_external_data=False)
    assert set(externals(refs)) == big and len(big) == 9
    loaded = onnxtext.load(out)
    assert not externals(loaded)
    got = arrays(loaded)
    assert got.keys() == expected.keys()
    for label in expected:
        np.testing.assert_array_equal(got[label], expected[label], err_msg=label)
        assert got[label].dtype == expected[label].dtype, label


def test_side_file_layout_checksum_offsets_and_bytes(tmp_path):
    model = rich_model()
    onnxtext.save(model, tmp_path / "m.onnx", external_data=tmp_path / "w.bin", threshold=THRESHOLD)
    refs = onnxtext.load(tmp_path / "m.onnx", load_external_data=False)
    data = (tmp_path / "w.bin").read_bytes()
    originals = dict(iter_tensors(model))
    for label, info in externals(refs).items():
        assert info["location"] == "w.bin"
        assert info["checksum"] == hashlib.sha1(data).hexdigest()  # onnx.proto: SHA1 digest of the file
        offset, length = int(info["offset"]), int(info["length"])
        assert offset % 64 == 0
        want = numpy_helper.to_array(originals[label])
        assert data[offset:offset + length] == want.astype(want.dtype.newbyteorder("<")).tobytes(), label
    moved = sum(int(info["length"]) for info in externals(refs).values())
    # the weights really left the protobuf: only the references (~130 bytes each) replace them
    assert os.path.getsize(tmp_path / "m.onnx") < len(model.SerializeToString()) - moved + 150 * 9


def test_onnx_reads_our_side_files(tmp_path):
    """onnx's loader (an independent reader) sees the same values for the tensors it knows about."""
    model = rich_model()
    onnxtext.save(model, tmp_path / "m.onnx", external_data=tmp_path / "w.bin", threshold=THRESHOLD)
    theirs = onnx.load(str(tmp_path / "m.onnx"))
    for t in theirs.graph.initializer:
        want = next(x for x in model.graph.initializer if x.name == t.name)
        np.testing.assert_array_equal(numpy_helper.to_array(t), numpy_helper.to_array(want))


def test_we_read_side_files_written_by_onnx(tmp_path):
    model = rich_model()
    expected = arrays(model)
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    onnx.save_model(copy, str(tmp_path / "m.onnx"), save_as_external_data=True, location="data.bin",
                    size_threshold=THRESHOLD, convert_attribute=True)
    loaded = onnxtext.load(tmp_path / "m.onnx")
    for label, arr in arrays(loaded).items():
        np.testing.assert_array_equal(arr, expected[label], err_msg=label)


def test_cli_print_then_compile_with_and_without_external_data(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    model = rich_model()
    onnx.save(model, "m.onnx")
    (tmp_path / "dir").mkdir()
    assert cli("print", "m.onnx", "--external-data", "w.bin", "-o", "m.onnxtext") == 0
    assert cli("print", "m.onnx", "--external-data", "dir", "-o", "d.onnxtext") == 0
    text = (tmp_path / "m.onnxtext").read_text()
    assert '"location": "w.bin"' in text and text.count("checksum") == 9
    assert len(os.listdir(tmp_path / "dir")) == 9
    assert cli("compile", "m.onnxtext", "-o", "embedded.onnx") == 0
    assert cli("compile", "d.onnxtext", "-o", "again.onnx", "--external-data", "again.bin") == 0
    assert not externals(onnx.load("embedded.onnx", load_external_data=False))  # stands alone
    assert len(externals(onnx.load("again.onnx", load_external_data=False))) == 9
    expected = arrays(model)
    for out in ("embedded.onnx", "again.onnx", "m.onnxtext", "d.onnxtext"):
        got = arrays(onnxtext.load(out))
        for label in expected:
            np.testing.assert_array_equal(got[label], expected[label], err_msg=f"{out}: {label}")


def test_print_keeps_references_when_the_data_is_elsewhere(tmp_path, monkeypatch, capsys):
    """git textconv hands over a temporary copy of the .onnx, away from its data: print the references."""
    onnxtext.save(runnable_model(), tmp_path / "m.onnx", external_data=tmp_path / "w.bin", threshold=THRESHOLD)
    lonely = tmp_path / "tmp"
    lonely.mkdir()
    (lonely / "copy.onnx").write_bytes((tmp_path / "m.onnx").read_bytes())
    monkeypatch.chdir(lonely)
    assert cli("print", "copy.onnx") == 0
    printed = onnxtext.parse_model(capsys.readouterr().out)
    assert externals(printed) == externals(onnxtext.load(tmp_path / "m.onnx", load_external_data=False))


def test_directory_mode_file_names_stay_inside_and_unique(tmp_path):
    names = ["../../evil", "a/b", "/etc/passwd", "x", "X", "", ".hidden", "CON"]
    inits = [numpy_helper.from_array(np.full(300, i, np.float32), n) for i, n in enumerate(names)]
    graph = helper.make_graph([], "g", [], [], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    (tmp_path / "w").mkdir()
    onnxtext.save(model, tmp_path / "m.onnx", external_data=tmp_path / "w", threshold=THRESHOLD)
    files = os.listdir(tmp_path / "w")
    assert len(files) == len(names) and len({f.lower() for f in files}) == len(names)
    assert all(not f.startswith(".") and "/" not in f for f in files)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "w"]
    loaded = onnxtext.load(tmp_path / "m.onnx")
    for i, t in enumerate(loaded.graph.initializer):
        assert t.name == names[i] and (numpy_helper.to_array(t) == i).all()


# ---------------------------------------------------------------------------------------------- damaged data
def _tamper_corrupt(d):
    data = bytearray((d / "w.bin").read_bytes())
    data[10] ^= 0xFF
    (d / "w.bin").write_bytes(bytes(data))


TAMPERING = [
    ("corrupt", _tamper_corrupt, "checksum"),
    ("truncated", lambda d: (d / "w.bin").write_bytes((d / "w.bin").read_bytes()[:100]), "100 bytes"),
    ("missing", lambda d: (d / "w.bin").unlink(), "cannot read"),
]


@pytest.mark.parametrize("tamper,needle", [(f, n) for _, f, n in TAMPERING], ids=[i for i, _, _ in TAMPERING])
def test_damaged_side_file_is_a_clear_error(tmp_path, monkeypatch, capsys, tamper, needle):
    onnxtext.save(runnable_model(), tmp_path / "m.onnx", external_data=tmp_path / "w.bin", threshold=THRESHOLD)
    tamper(tmp_path)
    with pytest.raises(onnxtext.ExternalDataError, match=needle) as e:
        onnxtext.load(tmp_path / "m.onnx")
    assert "'W'" in str(e.value) and "w.bin" in str(e.value)
    monkeypatch.chdir(tmp_path)
    assert cli("compile", "m.onnx", "-o", "out.onnx") == 1
    err = capsys.readouterr().err
    assert needle in err and "'W'" in err and "Traceback" not in err
    assert not os.path.exists(tmp_path / "out.onnx")


def test_failure_midway_leaves_no_partial_files(tmp_path, monkeypatch):
    """The second external tensor cannot be read: neither the side file nor the model may appear."""
    model = rich_model()
    onnxtext.save(model, tmp_path / "src.onnx", external_data=tmp_path / "src.bin", threshold=THRESHOLD)
    src = onnxtext.load(tmp_path / "src.onnx", load_external_data=False)
    broken = [t for _, t in iter_tensors(src) if t.data_location == TensorProto.EXTERNAL][1]
    next(e for e in broken.external_data if e.key == "location").value = "gone.bin"
    onnx.save(src, str(tmp_path / "src.onnx"))
    (tmp_path / "out.onnx").write_bytes(b"previous")
    (tmp_path / "out.bin").write_bytes(b"previous side file")
    monkeypatch.chdir(tmp_path)
    before = sorted(os.listdir(tmp_path))
    assert cli("compile", "src.onnx", "-o", "out.onnx", "--external-data", "out.bin") == 1
    assert sorted(os.listdir(tmp_path)) == before  # no temp files, nothing new
    assert (tmp_path / "out.onnx").read_bytes() == b"previous"
    assert (tmp_path / "out.bin").read_bytes() == b"previous side file"


# ---------------------------------------------------------------------------------------------- path safety
def _layout(tmp_path):
    """tmp/outside/secret.bin (exactly W's length, so only the path can be refused) and tmp/model/."""
    outside, model_dir = tmp_path / "outside", tmp_path / "model"
    outside.mkdir()
    model_dir.mkdir()
    (outside / "secret.bin").write_bytes(np.arange(2000, dtype=np.float32).tobytes())
    return outside, model_dir


READ_ATTACKS = {  # name -> (set-up returning the location to write into the model)
    "absolute": lambda out, md: str(out / "secret.bin"),
    "dotdot": lambda out, md: "../outside/secret.bin",
    "inner-dotdot": lambda out, md: "sub/../../outside/secret.bin",
    "backslash-dotdot": lambda out, md: "..\\outside\\secret.bin",
    "symlink-file": lambda out, md: (os.symlink(out / "secret.bin", md / "link.bin"), "link.bin")[1],
    "symlink-dir": lambda out, md: (os.symlink(out, md / "sub"), "sub/secret.bin")[1],
}


def _evil_model(tmp_path, attack, fmt):
    outside, model_dir = _layout(tmp_path)
    location = READ_ATTACKS[attack](outside, model_dir)
    model = runnable_model()
    w = model.graph.initializer[0]
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "8000")):
        e = w.external_data.add()
        e.key, e.value = key, value
    path = model_dir / ("evil" + fmt)
    if fmt == ".onnx":
        onnx.save(model, str(path))
    else:
        path.write_text(onnxtext.to_text(model))
    return model_dir, path, location


READ_WAYS = {
    "load": lambda p: onnxtext.load(p),
    "evaluator": lambda p: onnxtext.Evaluator(str(p)).run(None, {"X": np.ones((1, 40), np.float32)}),
    "print": lambda p: cli("print", p, "--external-data", "copy.bin", "-o", "copy.onnxtext"),
    "compile": lambda p: cli("compile", p, "-o", "out.onnx"),
    "compile-external": lambda p: cli("compile", p, "-o", "out.onnx", "--external-data", "out.bin"),
    "run": lambda p: cli("run", p, "--input", "X=" + str([[1.0] * 40])),
    "print-elsewhere": lambda p: cli("print", p, "-o", "../outside/copy.onnxtext"),
    "compile-keep-external": lambda p: cli("compile", p, "-o", "../outside/out.onnx", "--external-files", "auto"),
}


@pytest.mark.parametrize("way", READ_WAYS)
@pytest.mark.parametrize("fmt", [".onnx", ".onnxtext"])
@pytest.mark.parametrize("attack", READ_ATTACKS)
def test_locations_escaping_the_model_directory_are_refused(tmp_path, monkeypatch, capsys, attack, fmt, way):
    model_dir, path, location = _evil_model(tmp_path, attack, fmt)
    monkeypatch.chdir(model_dir)
    before = sorted(os.listdir(model_dir))
    try:
        result = READ_WAYS[way](path)
        message = capsys.readouterr().err
        assert result == 1, f"{way} read {location!r}"
    except onnxtext.ExternalDataError as e:
        message = str(e)
    assert "'W'" in message and repr(location) in message and "Traceback" not in message, message
    assert sorted(os.listdir(model_dir)) == before  # no output, no temp file


def test_a_location_inside_a_symlinked_model_directory_is_fine(tmp_path):
    """Only escaping counts: a model directory reached through a symlink still reads its own files."""
    real = tmp_path / "real"
    real.mkdir()
    onnxtext.save(runnable_model(), real / "m.onnx", external_data=real / "w.bin", threshold=THRESHOLD)
    os.symlink(real, tmp_path / "alias")
    np.testing.assert_array_equal(numpy_helper.to_array(onnxtext.load(tmp_path / "alias" / "m.onnx")
                                                        .graph.initializer[0]),
                                  numpy_helper.to_array(runnable_model().graph.initializer[0]))


WRITE_ATTACKS = {  # name -> set-up returning the --external-data target (cwd is the model directory)
    "absolute": lambda out, md: str(out / "w.bin"),
    "dotdot": lambda out, md: "../outside/w.bin",
    "symlink-file": lambda out, md: (os.symlink(out / "secret.bin", md / "link.bin"), "link.bin")[1],
    "symlink-dir-file": lambda out, md: (os.symlink(out, md / "sub"), "sub/w.bin")[1],
    "symlink-dir": lambda out, md: (os.symlink(out, md / "sub"), "sub")[1],
}

WRITE_WAYS = {
    "print": lambda src, target: cli("print", src, "--external-data", target, "-o", "out.onnxtext"),
    "compile": lambda src, target: cli("compile", src, "-o", "out.onnx", "--external-data", target),
    "save": lambda src, target: onnxtext.save(onnxtext.load(src), "out.onnx", external_data=target),
}


@pytest.mark.parametrize("way", WRITE_WAYS)
@pytest.mark.parametrize("attack", WRITE_ATTACKS)
def test_side_files_are_never_written_outside_the_model_directory(tmp_path, monkeypatch, capsys, attack, way):
    outside, model_dir = _layout(tmp_path)
    (model_dir / "src.onnxtext").write_text(onnxtext.to_text(runnable_model()))
    target = WRITE_ATTACKS[attack](outside, model_dir)
    monkeypatch.chdir(model_dir)
    before = {p: p.read_bytes() for p in outside.iterdir()}
    listing = sorted(os.listdir(model_dir))
    try:
        result = WRITE_WAYS[way]("src.onnxtext", target)
        message = capsys.readouterr().err
        assert result == 1
    except onnxtext.ExternalDataError as e:
        message = str(e)
    assert "outside the model's directory" in message and "Traceback" not in message, message
    assert {p: p.read_bytes() for p in outside.iterdir()} == before
    assert sorted(os.listdir(model_dir)) == listing


def test_compile_refuses_to_embed_2gib_before_reading_it(tmp_path, monkeypatch, capsys):
    """References to 3 GB (the file need not even exist): embedding cannot work, so say so at once."""
    model = runnable_model()
    w = model.graph.initializer[0]
    w.ClearField("raw_data")
    w.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "huge.bin"), ("length", "3000000000")):
        e = w.external_data.add()
        e.key, e.value = key, value
    (tmp_path / "m.onnxtext").write_text(onnxtext.to_text(model))
    monkeypatch.chdir(tmp_path)
    assert cli("compile", "m.onnxtext", "-o", "m.onnx") == 1
    err = capsys.readouterr().err
    assert "2 GiB" in err and "--external-data" in err
    assert sorted(os.listdir(tmp_path)) == ["m.onnxtext"]


def test_rewriting_the_side_file_a_model_reads_from(tmp_path, monkeypatch):
    """compile --external-data onto the very file its input refers to: the old bytes are read first.

    The input text still refers to the replaced file afterwards; its checksums catch that.
    """
    model = rich_model()
    expected = arrays(model)
    monkeypatch.chdir(tmp_path)
    onnxtext.save(model, "m.onnxtext", external_data="w.bin", threshold=THRESHOLD)
    # 2500 bytes: some tensors come back inline, so the new w.bin has another layout
    assert cli("compile", "m.onnxtext", "-o", "m.onnx", "--external-data", "w.bin", "--external-threshold", 2500) == 0
    refs = externals(onnxtext.load("m.onnx", load_external_data=False))
    assert set(refs) == {label for label, t in iter_tensors(model) if nbytes(t) >= 2500}
    got = arrays(onnxtext.load("m.onnx"))
    for label in expected:
        np.testing.assert_array_equal(got[label], expected[label], err_msg=label)
    assert sorted(os.listdir(tmp_path)) == ["m.onnx", "m.onnxtext", "w.bin"]
    with pytest.raises(onnxtext.ExternalDataError, match="checksum"):
        onnxtext.load("m.onnxtext")


def dynamo_style(directory):
    """A model as torch's dynamo exporter writes it: m.onnx beside m.onnx.data (onnx's own writer)."""
    model = runnable_model()
    onnx.save_model(model, str(directory / "m.onnx"), save_as_external_data=True, location="m.onnx.data",
                    size_threshold=0)
    return model


def values(path) -> dict:
    """name -> array of every initializer, external data read by onnx (the oracle) from the file's folder."""
    return {t.name: numpy_helper.to_array(t) for t in onnx.load(str(path)).graph.initializer}


def test_print_then_compile_in_another_folder_needs_no_flags(tmp_path, monkeypatch):
    """Issue 17 section 3: print into out/, compile there, with the dynamo exporter's m.onnx.data."""
    model = dynamo_style(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli("print", "m.onnx", "-o", "out/m.onnxtext") == 0
    assert (tmp_path / "out" / "m.onnx.data").read_bytes() == (tmp_path / "m.onnx.data").read_bytes()
    assert cli("compile", "out/m.onnxtext", "-o", "out/back.onnx") == 0
    back = values(tmp_path / "out" / "back.onnx")
    assert not externals(onnx.load(str(tmp_path / "out" / "back.onnx"), load_external_data=False))  # embedded
    for t in model.graph.initializer:
        np.testing.assert_array_equal(back[t.name], numpy_helper.to_array(t))


# (model folder, text path relative to cwd=tmp, mode) -> (location in the text, files copied next to the text)
RELOCATIONS = [
    ("sub", "m.onnxtext", "auto", "sub/m.onnx.data", []),  # data inside the text's folder: rewritten
    ("sub", "m.onnxtext", "copy", "m.onnx.data", ["m.onnx.data"]),
    ("sub", "m.onnxtext", "keep", "m.onnx.data", []),
    (".", "out/deeper/m.onnxtext", "auto", "m.onnx.data", ["out/deeper/m.onnx.data"]),  # outside: copied
    ("a/b", "a/m.onnxtext", "auto", "b/m.onnx.data", []),
]


@pytest.mark.parametrize("folder,text,mode,location,copied", RELOCATIONS)
def test_print_makes_locations_right_for_the_text(tmp_path, monkeypatch, folder, text, mode, location, copied):
    (tmp_path / folder).mkdir(parents=True, exist_ok=True)
    dynamo_style(tmp_path / folder)
    monkeypatch.chdir(tmp_path)
    before = {p for p in tmp_path.rglob("*") if p.is_file()}
    assert cli("print", f"{folder}/m.onnx", "-o", text, "--external-files", mode) == 0
    refs = externals(onnxtext.load(text, load_external_data=False))
    assert {info["location"] for info in refs.values()} == {location}
    new = {p for p in tmp_path.rglob("*") if p.is_file()} - before
    assert sorted(str(p.relative_to(tmp_path)) for p in new) == sorted(copied + [text])
    if mode != "keep":
        assert {k: v.tolist() for k, v in arrays(onnxtext.load(text)).items()} == \
            {k: v.tolist() for k, v in arrays(onnx.load(f"{folder}/m.onnx")).items()}


@pytest.mark.parametrize("mode", ["auto", "copy"])
def test_compile_keeps_external_data_external(tmp_path, monkeypatch, mode):
    dynamo_style(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert cli("print", "m.onnx", "-o", "m.onnxtext") == 0
    (tmp_path / "up").mkdir()
    monkeypatch.chdir(tmp_path / "up")
    # the data is outside up/: auto copies it there (a location may not lead out with ..)
    assert cli("compile", "../m.onnxtext", "-o", "out.onnx", "--external-files", mode, "--check") == 0
    refs = externals(onnx.load("out.onnx", load_external_data=False))
    assert refs and {info["location"] for info in refs.values()} == {"m.onnx.data"}
    assert (tmp_path / "up" / "m.onnx.data").read_bytes() == (tmp_path / "m.onnx.data").read_bytes()
    assert {k: v.tolist() for k, v in values("out.onnx").items()} == \
        {k: v.tolist() for k, v in values(tmp_path / "m.onnx").items()}


def test_compile_into_a_subfolder_rewrites_the_location(tmp_path, monkeypatch):
    (tmp_path / "out").mkdir()
    dynamo_style(tmp_path / "out")
    monkeypatch.chdir(tmp_path)
    assert cli("print", "out/m.onnx", "-o", "m.onnxtext") == 0  # the text refers to out/m.onnx.data
    assert cli("compile", "m.onnxtext", "-o", "out/back.onnx", "--external-files", "auto") == 0
    refs = externals(onnx.load("out/back.onnx", load_external_data=False))
    assert {info["location"] for info in refs.values()} == {"m.onnx.data"}
    assert sorted(os.listdir(tmp_path / "out")) == ["back.onnx", "m.onnx", "m.onnx.data"]


def test_save_from_python_relocates_references(tmp_path):
    dynamo_style(tmp_path)
    refs = onnxtext.load(tmp_path / "m.onnx", load_external_data=False)
    (tmp_path / "o").mkdir()
    onnxtext.save(refs, tmp_path / "o" / "m.onnxtext", base_dir=tmp_path)
    assert (tmp_path / "o" / "m.onnx.data").exists()
    assert externals(refs) == externals(onnx.load(str(tmp_path / "m.onnx"), load_external_data=False))  # unchanged
    assert onnxtext.load(tmp_path / "o" / "m.onnxtext").graph.initializer[0].raw_data


@pytest.mark.parametrize("data,needle", [("[]", "empty 'location'"), ('["offset": "0"]', "empty 'location'"),
                                         ('["location": ""]', "empty 'location'")])
def test_references_without_a_location_are_errors(tmp_path, data, needle):
    (tmp_path / "m.onnxtext").write_text(f"<ir_version: 8, opset_import: [\"\": 17]>\n"
                                         f"g () => (float[2] w)\n<\n  float[2] w = {data}\n>\n{{\n}}\n")
    with pytest.raises(onnxtext.ExternalDataError, match=needle) as e:
        onnxtext.load(tmp_path / "m.onnxtext")
    assert "'w'" in str(e.value)


def test_compile_check_with_external_input_and_output(tmp_path, monkeypatch):
    """onnx.checker resolves locations against the current directory: --check must still work elsewhere."""
    onnxtext.save(runnable_model(), tmp_path / "m.onnxtext", external_data=tmp_path / "w.bin", threshold=THRESHOLD)
    (tmp_path / "out").mkdir()
    monkeypatch.chdir(tmp_path / "out")
    assert cli("compile", "../m.onnxtext", "-o", "m.onnx", "--external-data", "w.bin", "--check") == 0
    onnx.checker.check_model(str(tmp_path / "out" / "m.onnx"))  # the oracle agrees on the result


@pytest.mark.parametrize("command", [["print", "m.onnx", "-o", "t.onnxtext", "--external-data", "t.onnxtext"],
                                     ["compile", "m.onnx", "-o", "c.onnx", "--external-data", "c.onnx"]])
def test_side_file_cannot_be_the_output_itself(tmp_path, monkeypatch, capsys, command):
    onnx.save(runnable_model(), str(tmp_path / "m.onnx"))
    monkeypatch.chdir(tmp_path)
    assert cli(*command) == 1
    assert "the output file itself" in capsys.readouterr().err
    assert os.listdir(tmp_path) == ["m.onnx"]
