"""ONNX backend conformance harness for the evaluator (used by tests/test_conformance.py and by hand).

    python tests/conformance.py [REGEX] [-v]      run node cases whose name matches REGEX

Cases come from the installed onnx package: the node suite (``collect_testcases``) and the folder
suites under ``onnx/backend/test/data``. Expected outputs and tolerances are the suite's own.
"""

from __future__ import annotations

import glob
import os
import re
import sys
import warnings

import numpy as np
import onnx

DATA = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
KNOWN_FAILURES = os.path.join(os.path.dirname(__file__), "data", "known_failures.txt")


def node_cases():
    """All node-suite cases as (name, model, [(inputs, outputs)], rtol, atol)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases(None)
    return [(c.name, c.model, c.data_sets, c.rtol, c.atol) for c in cases]


def _read_pb(path, type_proto=None):
    """Read a test_data_set *.pb file: a TensorProto, SequenceProto, MapProto or OptionalProto."""
    from onnx import numpy_helper

    data = open(path, "rb").read()
    if type_proto is not None and type_proto.HasField("sequence_type"):
        s = onnx.SequenceProto()
        s.ParseFromString(data)
        return numpy_helper.to_list(s)
    if type_proto is not None and type_proto.HasField("optional_type"):
        o = onnx.OptionalProto()
        o.ParseFromString(data)
        return numpy_helper.to_optional(o)
    if type_proto is not None and type_proto.HasField("map_type"):
        m = onnx.MapProto()
        m.ParseFromString(data)
        return numpy_helper.to_dict(m)
    t = onnx.TensorProto()
    t.ParseFromString(data)
    return numpy_helper.to_array(t)


def folder_cases(suites=("simple", "pytorch-converted", "pytorch-operator", "light")):
    """Cases of the folder suites: (name, model_path, [(inputs, outputs)], rtol, atol)."""
    out = []
    for suite in suites:
        for d in sorted(glob.glob(os.path.join(DATA, suite, "*"))):
            if suite == "light":
                if not d.endswith(".onnx"):
                    continue
                name = os.path.basename(d)[:-5]
                model_path = d
                sets_dir = os.path.join(DATA, suite, name)
            else:
                name = os.path.basename(d)
                model_path = os.path.join(d, "model.onnx")
                sets_dir = d
            if not os.path.exists(model_path):
                continue
            model = onnx.load(model_path, load_external_data=False)
            ins = model.graph.input
            init = {t.name for t in model.graph.initializer}
            ins = [i for i in ins if i.name not in init]
            sets = []
            for ds in sorted(glob.glob(os.path.join(sets_dir, "test_data_set_*"))):
                inputs = [_read_pb(os.path.join(ds, f"input_{i}.pb"), ins[i].type if i < len(ins) else None)
                          for i in range(len(glob.glob(os.path.join(ds, "input_*.pb"))))]
                outputs = [_read_pb(os.path.join(ds, f"output_{i}.pb"), model.graph.output[i].type)
                           for i in range(len(glob.glob(os.path.join(ds, "output_*.pb"))))]
                sets.append((inputs, outputs))
            if suite == "light" and not sets:
                # the light folder stores only light_<name>_output_<i>.pb; inputs are generated the way
                # onnx's backend runner does (arange / n), so these cases really run
                outs = [_read_pb(p) for p in sorted(glob.glob(os.path.join(DATA, suite, f"{name}_output_*.pb")))]
                feeds = []
                for vi in ins:
                    shape = tuple(d.dim_value if d.HasField("dim_value") else 1
                                  for d in vi.type.tensor_type.shape.dim)
                    n = int(np.prod(shape))
                    feeds.append((np.arange(n).reshape(shape) / n).astype(np.float32))
                if outs:
                    sets.append((feeds, outs))
            if not sets:
                raise RuntimeError(f"folder case {suite}/{name} has no test data: it would pass without running")
            rtol, atol = (1e-3, 1e-7)
            out.append((f"{suite}/{name}", model_path, sets, rtol, atol))
    return out


def replace_constant_of_shape(model, make_array):
    """A copy of ``model`` whose ConstantOfShape nodes with constant shapes become initializers.

    ``make_array(shape, value)`` gives each new initializer (``value``: the node's fill value as an
    array). The light models generate their weights this way; benchmarks fold them and tests randomize them.
    """
    from onnx import numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    keep = []
    for node in graph.node:
        if node.op_type != "ConstantOfShape" or node.input[0] not in inits:
            keep.append(node)
            continue
        shape = tuple(int(d) for d in numpy_helper.to_array(inits[node.input[0]]))
        value = next((numpy_helper.to_array(a.t) for a in node.attribute if a.name == "value"),
                     np.zeros(1, np.float32))
        array = np.asarray(make_array(shape, value)).astype(value.dtype)
        graph.initializer.append(numpy_helper.from_array(array, node.output[0]))
    del graph.node[:]
    graph.node.extend(keep)
    return model


def assert_close(expected, actual, rtol, atol, where="output"):
    """Compare one output like onnx's backend runner (tensors, sequences, maps, optionals)."""
    if isinstance(expected, list):
        assert isinstance(actual, list), f"{where}: expected a sequence, got {type(actual).__name__}"
        assert len(expected) == len(actual), f"{where}: sequence length {len(actual)} != {len(expected)}"
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_close(e, a, rtol, atol, f"{where}[{i}]")
        return
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and set(expected) == set(actual), f"{where}: map keys differ"
        for k in expected:
            assert_close(expected[k], actual[k], rtol, atol, f"{where}[{k!r}]")
        return
    if expected is None:
        assert actual is None, f"{where}: expected an empty optional"
        return
    expected = np.asarray(expected)
    assert actual is not None, f"{where}: got None"
    actual = np.asarray(actual)
    assert expected.shape == actual.shape, f"{where}: shape {actual.shape} != expected {expected.shape}"
    if expected.dtype == object or actual.dtype == object:
        assert expected.tolist() == actual.tolist(), f"{where}: string values differ"
        return
    assert expected.dtype == actual.dtype, f"{where}: dtype {actual.dtype} != expected {expected.dtype}"
    if expected.dtype.kind in "biu" or expected.dtype == np.bool_:
        np.testing.assert_array_equal(actual, expected, err_msg=where)
    else:
        np.testing.assert_allclose(actual.astype(np.float64) if actual.dtype.itemsize < 2 or
                                   actual.dtype.kind == "V" or str(actual.dtype).startswith(("float8", "float4",
                                                                                              "float6", "bfloat"))
                                   else actual,
                                   expected.astype(np.float64) if str(expected.dtype).startswith(
                                       ("float8", "float4", "float6", "bfloat")) else expected,
                                   rtol=rtol, atol=atol, err_msg=where)


def _decoded(value):
    """Suite values as the evaluator sees them: some node cases store exotic types as TensorProto."""
    if isinstance(value, onnx.TensorProto):
        from onnxtext import tensors

        return tensors.to_array(value)
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value


def run_case(model, data_sets, rtol, atol):
    """Run every data set of a case through the evaluator twice, the second time through the plan's
    compiled form (plan_code, here after one run); raises AssertionError/OnnxTextError on failure."""
    from onnxtext.evaluator import Evaluator, plan

    saved, plan.COMPILE_AFTER = plan.COMPILE_AFTER, 1
    try:
        ev = Evaluator(model, seed=0)
        for inputs, expected in data_sets:
            inputs = [_decoded(v) for v in inputs]
            expected = [_decoded(v) for v in expected]
            feeds = dict(zip(ev.input_names, inputs))
            for run in ("first run", "compiled run"):
                got = ev.run(None, feeds)
                assert len(got) >= len(expected), f"{len(got)} outputs, {len(expected)} expected"
                for i, (e, a) in enumerate(zip(expected, got)):
                    assert_close(e, a, rtol, atol, f"{run}: output {i} ({ev.output_names[i]})")
    finally:
        plan.COMPILE_AFTER = saved


def known_failures() -> dict[str, str]:
    """case name -> reason, from tests/data/known_failures.txt (``name<TAB or spaces>reason`` lines)."""
    out = {}
    if os.path.exists(KNOWN_FAILURES):
        for line in open(KNOWN_FAILURES, encoding="utf-8"):
            line = line.strip()
            if line and not line.startswith("#"):
                name, *reason = line.split(None, 1)
                out[name] = reason[0].strip() if reason else "known failure"
    return out


def main(argv):
    pattern = re.compile(argv[0] if argv and not argv[0].startswith("-") else ".")
    verbose = "-v" in argv
    passed, failed = 0, []
    for name, model, sets, rtol, atol in node_cases() + (folder_cases() if "--folders" in argv else []):
        if not pattern.search(name):
            continue
        try:
            run_case(model, sets, rtol, atol)
            passed += 1
        except Exception as e:  # report every failure kind
            failed.append((name, f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:200]))
    for name, why in failed:
        print(f"FAIL {name}: {why}" if verbose else f"FAIL {name}: {why[:120]}")
    print(f"{passed} passed, {len(failed)} failed")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main(sys.argv[1:]))
