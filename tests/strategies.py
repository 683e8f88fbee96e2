"""Hypothesis strategies for random *valid* onnx protos, covering every field of onnx.proto (IR 14).

"Valid" here means what a well-formed protobuf may hold, not what onnx.checker accepts: names are
arbitrary strings (quotes, backslashes, newlines, non-ASCII, empty), values need not be defined
before use, but each tensor's data agrees with its dims and element type, an attribute's value field
matches its type, and a TypeProto sets one of its value cases. That is the domain on which
``parse(print(m)) == m`` must hold.

The strategies are built from the message descriptors' point of view, one function per message, so
a field added to onnx.proto shows up in ``tests/test_properties.py``'s coverage check until a
strategy sets it.
"""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import AttributeProto, TensorProto

from onnxtext import dtypes

# ---------------------------------------------------------------------------------------------- atoms
IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
# any text: quotes, escapes, newlines, control characters, astral-plane characters, empty
ANY_TEXT = st.text(max_size=12)
NAME = st.one_of(IDENT, IDENT, ANY_TEXT)  # mostly identifiers, sometimes anything
DOC = st.one_of(st.just(""), ANY_TEXT, st.lists(ANY_TEXT, max_size=3).map("\n".join))
INT64 = st.integers(-(2 ** 63), 2 ** 63 - 1)
SMALL_INT = st.integers(-5, 5)
FLOAT32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


def metadata(max_size=2):
    """metadata_props: a list of StringStringEntryProto (keys may repeat: the proto allows it)."""
    return st.lists(st.builds(onnx.StringStringEntryProto, key=ANY_TEXT, value=ANY_TEXT), max_size=max_size)


# ---------------------------------------------------------------------------------------------- tensors
@st.composite
def element_codes(draw, dt: dtypes.DType, count: int):
    """``count`` random elements of ``dt`` as a numpy array (every bit pattern of numeric types, NaN
    payloads, signed zeros and subnormals included)."""
    if dt.kind == "string":
        items = draw(st.lists(st.one_of(ANY_TEXT.map(lambda s: s.encode("utf-8")), st.binary(max_size=6)),
                              min_size=count, max_size=count))
        return items
    if dt.kind == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=count, max_size=count)), np.bool_)
    if dt.kind == "complex":
        width = np.dtype(np.float32 if dt.name == "complex64" else np.float64)
        raw = draw(st.binary(min_size=2 * count * width.itemsize, max_size=2 * count * width.itemsize))
        pairs = np.frombuffer(raw, width)
        return (pairs[0::2] + 1j * pairs[1::2]).astype(dt.np) if count else np.zeros(0, dt.np)
    if dt.packed:
        codes = np.array(draw(st.lists(st.integers(0, (1 << dt.bits) - 1), min_size=count, max_size=count)),
                         np.uint8)
        return codes.view(dt.np)
    raw = draw(st.binary(min_size=count * dt.np.itemsize, max_size=count * dt.np.itemsize))
    return np.frombuffer(raw, dt.uint_view).view(dt.np).copy()


def _raw_bytes(arr, dt):
    if dt.packed:
        codes = np.asarray(arr).view(np.uint8) & ((1 << dt.bits) - 1)
        acc = 0
        for i, c in enumerate(codes.tolist()):
            acc |= c << (i * dt.bits)
        return acc.to_bytes((len(codes) * dt.bits + 7) // 8, "little")
    if dt.kind == "bool":
        return np.asarray(arr, np.uint8).tobytes()
    return np.ascontiguousarray(arr).astype(np.dtype(dt.np).newbyteorder("<")).tobytes()


def _typed(t, arr, dt):
    """Fill the typed ``*_data`` field as onnx.proto's comments prescribe for ``dt``."""
    if dt.kind == "string":
        t.string_data.extend(arr)
        return
    flat = np.asarray(arr).ravel()
    field = getattr(t, dt.field)
    if dt.kind == "complex":
        field.extend(np.stack([flat.real, flat.imag], axis=-1).ravel().tolist())
    elif dt.bits in (2, 4):  # two (four) elements per int32, low bits first
        codes = (flat.view(np.uint8) & ((1 << dt.bits) - 1)).tolist()
        per = 8 // dt.bits
        codes += [0] * (-len(codes) % per)
        field.extend(sum(c << (j * dt.bits) for j, c in enumerate(codes[i:i + per]))
                     for i in range(0, len(codes), per))
    elif dt.bits == 6:
        field.extend((flat.view(np.uint8) & 0x3F).astype(np.int32).tolist())
    elif dt.bitpattern:
        field.extend(flat.view(dt.uint_view).astype(np.int64).tolist())
    elif dt.kind == "bool":
        field.extend(flat.astype(np.int32).tolist())
    else:
        field.extend(flat.tolist())


DIMS = st.lists(st.integers(0, 3), max_size=3)


@st.composite
def tensors(draw, name=None, dims=None, dtype=None, allow_external=True):
    """A TensorProto with consistent data: raw or typed encoding, or an external reference."""
    dt = draw(st.sampled_from(dtypes.DTYPES)) if dtype is None else dtype
    shape = draw(DIMS) if dims is None else dims
    count = int(np.prod(shape)) if shape else 1
    t = TensorProto(data_type=dt.enum, dims=shape)
    t.name = draw(st.one_of(st.just(""), NAME)) if name is None else name
    t.doc_string = draw(DOC)
    t.metadata_props.extend(draw(metadata(1)))
    if draw(st.integers(0, 9)) == 0:
        begin = draw(st.integers(0, 100))
        t.segment.begin, t.segment.end = begin, begin + draw(st.integers(0, 100))
    how = draw(st.sampled_from(["raw", "typed", "external"] if allow_external and dt.kind != "string"
                               else ["raw", "typed"] if dt.kind != "string" else ["typed"]))
    if how == "external":
        t.data_location = TensorProto.EXTERNAL
        entries = [("location", draw(st.from_regex(r"[a-z]{1,5}(/[a-z]{1,5})?\.bin", fullmatch=True)))]
        if draw(st.booleans()):
            entries.append(("offset", str(draw(st.integers(0, 4096)))))
        if draw(st.booleans()):
            entries.append(("length", str(draw(st.integers(0, 4096)))))
        if draw(st.booleans()):
            entries.append(("checksum", draw(st.from_regex(r"[0-9a-f]{40}", fullmatch=True))))
        for k, v in entries:
            t.external_data.add(key=k, value=v)
        return t
    arr = draw(element_codes(dt, count))
    if how == "raw":
        t.raw_data = _raw_bytes(arr, dt)
    else:
        _typed(t, arr, dt)
        if draw(st.integers(0, 4)) == 0:
            t.data_location = TensorProto.DEFAULT  # explicitly set to its default
    return t


@st.composite
def sparse_tensors(draw):
    """A SparseTensorProto: values [NNZ], indices [NNZ] (linearized) or [NNZ, rank], dims."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
    total = int(np.prod(shape))
    positions = sorted(draw(st.sets(st.integers(0, total - 1), max_size=min(total, 4))))
    nnz = len(positions)
    values = draw(tensors(dims=[nnz], allow_external=False))
    if draw(st.booleans()):
        idx = np.array(positions, np.int64).reshape(nnz)
    else:
        idx = np.array(np.unravel_index(np.array(positions, np.intp), shape), np.int64).T.reshape(nnz, len(shape))
    indices = TensorProto(data_type=TensorProto.INT64, dims=list(idx.shape), name=draw(st.one_of(st.just(""), IDENT)))
    if draw(st.booleans()):
        indices.raw_data = idx.astype("<i8").tobytes()
    else:
        indices.int64_data.extend(idx.ravel().tolist())
    return onnx.SparseTensorProto(values=values, indices=indices, dims=shape)


# ---------------------------------------------------------------------------------------------- types
ELEM = st.sampled_from([d.enum for d in dtypes.DTYPES])


@st.composite
def dims(draw):
    d = onnx.TensorShapeProto.Dimension()
    kind = draw(st.sampled_from(["value", "param", "none"]))
    if kind == "value":
        d.dim_value = draw(st.integers(0, 2 ** 40))
    elif kind == "param":
        d.dim_param = draw(NAME.filter(bool))
    if draw(st.integers(0, 3)) == 0:
        d.denotation = draw(ANY_TEXT)
    return d


def shapes():
    return st.one_of(st.none(), st.lists(dims(), max_size=3))


def _tensor_type(draw, sparse=False):
    tt = (onnx.TypeProto.SparseTensor if sparse else onnx.TypeProto.Tensor)(elem_type=draw(ELEM))
    shape = draw(shapes())
    if shape is not None:
        tt.shape.SetInParent()
        tt.shape.dim.extend(shape)
    return tt


@st.composite
def types(draw, depth=2):
    """A TypeProto of any value case (tensor, sequence, map, optional, sparse_tensor, opaque)."""
    kinds = ["tensor", "sparse", "opaque"] + (["sequence", "map", "optional"] if depth > 0 else [])
    kind = draw(st.sampled_from(kinds))
    tp = onnx.TypeProto()
    if kind == "tensor":
        tp.tensor_type.CopyFrom(_tensor_type(draw))
    elif kind == "sparse":
        tp.sparse_tensor_type.CopyFrom(_tensor_type(draw, sparse=True))
    elif kind == "opaque":
        tp.opaque_type.SetInParent()
        tp.opaque_type.domain = draw(st.one_of(st.just(""), NAME))
        tp.opaque_type.name = draw(st.one_of(st.just(""), NAME))
    elif kind == "sequence":
        tp.sequence_type.elem_type.CopyFrom(draw(types(depth - 1)))
    elif kind == "map":
        key = draw(st.sampled_from([2, 3, 4, 5, 6, 7, 8, 12, 13]))
        tp.map_type.key_type = key
        tp.map_type.value_type.CopyFrom(draw(types(depth - 1)))
    else:
        tp.optional_type.elem_type.CopyFrom(draw(types(depth - 1)))
    if draw(st.integers(0, 3)) == 0:
        tp.denotation = draw(ANY_TEXT)
    return tp


@st.composite
def value_infos(draw, name=None):
    vi = onnx.ValueInfoProto(name=draw(NAME) if name is None else name)
    if draw(st.integers(0, 5)):
        vi.type.CopyFrom(draw(types()))
    vi.doc_string = draw(DOC)
    vi.metadata_props.extend(draw(metadata(1)))
    return vi


# ---------------------------------------------------------------------------------------------- attributes
@st.composite
def attributes(draw, depth=1, in_function=False):
    """An AttributeProto of any kind (empty lists included), or a reference inside functions."""
    a = AttributeProto(name=draw(NAME.filter(bool)), doc_string=draw(DOC))
    kinds = ["f", "i", "s", "t", "sparse_tensor", "tp", "floats", "ints", "strings", "tensors",
             "sparse_tensors", "type_protos"] + (["g", "graphs"] if depth > 0 else [])
    if in_function and draw(st.integers(0, 4)) == 0:
        a.ref_attr_name = draw(NAME.filter(bool))
        a.type = draw(st.sampled_from([t for t in AttributeProto.AttributeType.values() if t]))
        return a
    kind = draw(st.sampled_from(kinds))
    a.type = {"f": AttributeProto.FLOAT, "i": AttributeProto.INT, "s": AttributeProto.STRING,
              "t": AttributeProto.TENSOR, "g": AttributeProto.GRAPH, "sparse_tensor": AttributeProto.SPARSE_TENSOR,
              "tp": AttributeProto.TYPE_PROTO, "floats": AttributeProto.FLOATS, "ints": AttributeProto.INTS,
              "strings": AttributeProto.STRINGS, "tensors": AttributeProto.TENSORS,
              "graphs": AttributeProto.GRAPHS, "sparse_tensors": AttributeProto.SPARSE_TENSORS,
              "type_protos": AttributeProto.TYPE_PROTOS}[kind]
    if kind == "f":
        a.f = draw(FLOAT32)
    elif kind == "i":
        a.i = draw(INT64)
    elif kind == "s":
        a.s = draw(st.binary(max_size=8))
    elif kind == "t":
        a.t.CopyFrom(draw(tensors()))
    elif kind == "g":
        a.g.CopyFrom(draw(graphs(depth - 1)))
    elif kind == "sparse_tensor":
        a.sparse_tensor.CopyFrom(draw(sparse_tensors()))
    elif kind == "tp":
        a.tp.CopyFrom(draw(types()))
    else:
        item = {"floats": FLOAT32, "ints": INT64, "strings": st.binary(max_size=6),
                "tensors": tensors(), "sparse_tensors": sparse_tensors(), "type_protos": types(),
                "graphs": graphs(depth - 1) if depth > 0 else st.nothing()}[kind]
        getattr(a, kind).extend(draw(st.lists(item, max_size=2)))
    return a


def _unique(items, key):
    """The first item of each key (attribute names, opset domains must be unique)."""
    seen, out = set(), []
    for item in items:
        if key(item) not in seen:
            seen.add(key(item))
            out.append(item)
    return out


def _unique_by_name(attrs):
    return _unique(attrs, lambda a: a.name)


# ---------------------------------------------------------------------------------------------- nodes
@st.composite
def sharding_specs(draw):
    s = onnx.ShardingSpecProto(tensor_name=draw(NAME), device=draw(st.lists(st.integers(-3, 7), max_size=3)))
    for _ in range(draw(st.integers(0, 2))):
        e = s.index_to_device_group_map.add(key=draw(st.integers(0, 7)))
        e.value.extend(draw(st.lists(st.integers(0, 7), max_size=3)))
    for _ in range(draw(st.integers(0, 2))):
        d = s.sharded_dim.add(axis=draw(st.integers(-4, 4)))
        for _ in range(draw(st.integers(0, 2))):
            simple = d.simple_sharding.add(num_shards=draw(st.integers(-2, 8)))
            which = draw(st.sampled_from(["value", "param", "none"]))
            if which == "value":
                simple.dim_value = draw(st.integers(0, 1 << 20))
            elif which == "param":
                simple.dim_param = draw(NAME)
    return s


@st.composite
def node_device_configurations(draw):
    c = onnx.NodeDeviceConfigurationProto(configuration_id=draw(NAME))
    if draw(st.booleans()):
        c.pipeline_stage = draw(st.integers(-2, 8))
    c.sharding_spec.extend(draw(st.lists(sharding_specs(), max_size=2)))
    return c


OP = st.one_of(st.sampled_from(["Relu", "Add", "Conv", "If", "Custom"]), NAME.filter(bool))


@st.composite
def nodes(draw, depth=1, in_function=False):
    n = onnx.NodeProto(op_type=draw(OP))
    n.input.extend(draw(st.lists(st.one_of(st.just(""), NAME), max_size=3)))
    n.output.extend(draw(st.lists(st.one_of(st.just(""), NAME), max_size=2)))
    n.name = draw(st.one_of(st.just(""), NAME))
    n.domain = draw(st.one_of(st.just(""), st.sampled_from(["ai.onnx", "ai.onnx.ml", "com.x"]), NAME))
    n.overload = draw(st.one_of(st.just(""), st.just(""), NAME))
    n.attribute.extend(_unique_by_name(draw(st.lists(attributes(depth, in_function), max_size=3))))
    n.doc_string = draw(DOC)
    n.metadata_props.extend(draw(metadata(1)))
    n.device_configurations.extend(draw(st.lists(node_device_configurations(), max_size=1)))
    return n


# ---------------------------------------------------------------------------------------------- graphs
@st.composite
def tensor_annotations(draw):
    a = onnx.TensorAnnotation(tensor_name=draw(NAME))
    a.quant_parameter_tensor_names.extend(draw(st.lists(
        st.builds(onnx.StringStringEntryProto, key=st.sampled_from(["SCALE_TENSOR", "ZERO_POINT_TENSOR"]) | ANY_TEXT,
                  value=NAME), max_size=2)))
    return a


@st.composite
def graphs(draw, depth=1):
    g = onnx.GraphProto(name=draw(NAME), doc_string=draw(DOC))
    g.input.extend(draw(st.lists(value_infos(), max_size=2)))
    g.output.extend(draw(st.lists(value_infos(), max_size=2)))
    g.value_info.extend(draw(st.lists(value_infos(), max_size=1)))
    g.initializer.extend(draw(st.lists(tensors(name=None).filter(lambda t: t.name), max_size=2)))
    g.sparse_initializer.extend(draw(st.lists(sparse_tensors().filter(lambda s: s.values.name), max_size=1)))
    g.node.extend(draw(st.lists(nodes(depth), max_size=3)))
    g.quantization_annotation.extend(draw(st.lists(tensor_annotations(), max_size=1)))
    g.metadata_props.extend(draw(metadata()))
    return g


# ---------------------------------------------------------------------------------------------- functions
OPSET = st.builds(onnx.OperatorSetIdProto, domain=st.one_of(st.just(""), st.sampled_from(["ai.onnx.ml", "com.x"]), NAME),
                  version=st.integers(1, 30))


def _unique_opsets(ops):
    return _unique(ops, lambda o: o.domain)


@st.composite
def functions(draw):
    f = onnx.FunctionProto(name=draw(NAME.filter(bool)), domain=draw(st.one_of(st.just(""), NAME)),
                           doc_string=draw(DOC))
    f.overload = draw(st.one_of(st.just(""), NAME))
    f.input.extend(draw(st.lists(NAME.filter(bool), max_size=3)))
    f.output.extend(draw(st.lists(NAME.filter(bool), max_size=2)))
    f.attribute.extend(draw(st.lists(NAME.filter(bool), max_size=2, unique=True)))
    protos = [a for a in _unique_by_name(draw(st.lists(attributes(0), max_size=2))) if a.name not in f.attribute]
    f.attribute_proto.extend(protos)
    f.node.extend(draw(st.lists(nodes(1, in_function=True), max_size=3)))
    f.opset_import.extend(_unique_opsets(draw(st.lists(OPSET, max_size=2))))
    f.value_info.extend(draw(st.lists(value_infos(), max_size=1)))
    f.metadata_props.extend(draw(metadata()))
    return f


# ---------------------------------------------------------------------------------------------- models
@st.composite
def training_infos(draw):
    t = onnx.TrainingInfoProto()
    if draw(st.booleans()):
        t.initialization.CopyFrom(draw(graphs(0)))
    t.algorithm.CopyFrom(draw(graphs(0)))
    for field in ("initialization_binding", "update_binding"):
        getattr(t, field).extend(draw(st.lists(
            st.builds(onnx.StringStringEntryProto, key=NAME, value=NAME), max_size=2)))
    return t


@st.composite
def device_configurations(draw):
    c = onnx.DeviceConfigurationProto(name=draw(NAME), num_devices=draw(st.integers(0, 8)))
    c.device.extend(draw(st.lists(NAME, max_size=3)))
    return c


@st.composite
def models(draw):
    m = onnx.ModelProto(ir_version=draw(st.integers(0, 14)))
    m.opset_import.extend(_unique_opsets(draw(st.lists(OPSET, max_size=3))))
    m.producer_name = draw(st.one_of(st.just(""), ANY_TEXT))
    m.producer_version = draw(st.one_of(st.just(""), ANY_TEXT))
    m.domain = draw(st.one_of(st.just(""), NAME))
    m.model_version = draw(st.one_of(st.just(0), INT64))
    m.doc_string = draw(DOC)
    m.graph.CopyFrom(draw(graphs()))
    m.metadata_props.extend(draw(metadata()))
    m.training_info.extend(draw(st.lists(training_infos(), max_size=1)))
    m.functions.extend(draw(st.lists(functions(), max_size=2)))
    m.configuration.extend(draw(st.lists(device_configurations(), max_size=2)))
    return m
