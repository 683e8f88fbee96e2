"""Plan-time fusion of the node chains CNNs are made of (what onnxruntime's graph optimizer does).

:func:`fuse_steps` rewrites a prepared step list (see :mod:`.plan`) before last uses are computed:

* Conv followed by inference BatchNormalization, and by Mul/Add with constant per-channel operands,
  becomes ONE Conv with folded weights and bias (``W' = W * f``, ``B' = B * f + s``): the
  normalization costs nothing at run time.
* A BatchNormalization that does not follow a Conv (DenseNet's Concat -> BN -> Mul -> Add), with the
  Mul/Add after it, becomes one per-channel multiply-add step with constants computed once.
* A Relu whose input is produced by a step that returns a fresh array (Conv, the fused steps, Add,
  Sum, Concat, Gemm...) and read by nothing else runs in place on that array, inside the producing
  step: no second output array, no second dispatch.
* Then every float Conv with constant weights (folded or not, with its fused Relu) becomes a
  :class:`~.kernels.conv_prepared.PreparedConv`, which works out geometry, views and buffers once
  per input shape instead of at every call.
* A prepared Conv without Relu read only by a pointwise prepared Conv hands its bias to it
  (``W2 (y + b1) + b2 = W2 y + (W2 b1 + b2)``): ShuffleNet's depthwise Convs then add no bias.
* A depthwise prepared Conv (then without bias) read only by a pointwise prepared Conv writes its
  result straight into that Conv's column buffer (``kernels.conv_fused.DepthwisePointwise``).
* A channel shuffle after a prepared Conv (Reshape to (N, g, C/g, ...), Transpose of axes 1 and 2,
  Reshape back: ShuffleNet) becomes part of the Conv (:class:`~.kernels.conv_prepared.ShuffledConv`),
  whose matmul writes the channels in shuffled order: no Transpose copy.
* A residual Add/Sum of a prepared Conv's result and a value computed before the Conv (ResNet,
  ShuffleNet), with its Relu, runs in place on the Conv's fresh result (``kernels.conv_fused.ConvAdd``).
* A Concat along channels of prepared Conv results (SqueezeNet's fire modules, Inception's
  branches) computes those Convs itself, each writing straight into its slice of the Concat result
  (``kernels.conv_fused.ConcatInto``): no separate Conv results, no copy.
* An inference Dropout whose mask nobody reads passes its input on (its kernel would build the
  mask anyway).
* A stride-2 prepared Conv (with its Relu) read only by a 3x3 stride-2 MaxPool (the CNN stem) becomes
  one :class:`~.kernels.conv_stem.ConvStem` step, which computes the conv directly in the pool's
  stride phases, so both run on long contiguous runs.
* Finally a Relu fused into a step whose result only a MaxPool reads moves after the MaxPool
  (``max`` and ``relu`` commute): it then runs on the pooled result, a quarter of the elements.

A fold only applies when the intermediate value has exactly one reader and is not an output (nor a
value kept for a subgraph), and when the operands it folds are constants. A fused step keeps the
original kernels as a fallback for inputs the fast path was not prepared for (another rank or dtype),
so the result never differs from running the nodes one by one beyond float rounding.
"""

from __future__ import annotations

from collections import Counter

import numpy as np


def relu_inplace(y):
    """kernels.conv_relu.relu_inplace, imported on first use (the kernels package imports the plan,
    which imports this module): the first call rebinds this name to it."""
    global relu_inplace
    from .kernels.conv_relu import relu_inplace as fn

    relu_inplace = fn
    return fn(y)


#: ops whose kernel always returns a newly allocated, writeable array (never an input or a view of
#: one): their output can be overwritten in place when nothing else reads it
_FRESH = {"Conv", "Add", "Sub", "Mul", "Div", "Concat", "Gemm", "MatMul", "BatchNormalization"}
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def __getattr__(name):
    """The fused-step classes of ``kernels.conv_fused`` (ConcatInto...), importable from here as
    before they moved there; imported on first use (see :func:`relu_inplace`)."""
    if name in ("ConcatInto", "ConvAdd", "ChannelShuffle"):
        from .kernels import conv_fused

        return getattr(conv_fused, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def fold_pairs(raw_steps: list, keep: set, known) -> list:
    """``raw_steps`` (a list of ``(step, used names)``) with Conv/BatchNormalization + per-channel
    Mul/Add folded and Relus run in place in their producers (the first three bullets above)."""
    readers = Counter(n for _, used in raw_steps for n in used)
    producer: dict[str, int] = {}
    steps = list(raw_steps)
    for i, (step, used) in enumerate(raw_steps):
        j = _single_producer(step, producer, readers, keep, known)
        fused = _fuse_pair(steps[j][0], step, known) if j is not None else None
        if fused is None:
            for n in step[2]:
                producer[n] = i
            continue
        steps[j] = (fused, [n for n in fused[1] if n])
        steps[i] = None
        for n in step[2]:
            producer[n] = j
    return [s for s in steps if s is not None]


def prepared_convs(steps: list, keep: set, known) -> list:
    """Every float Conv step with constant weights as a PreparedConv step."""
    return [_prepared_conv(s, known) for s in steps]


def inference_dropouts(steps: list, keep: set, known) -> list:
    """Inference Dropouts whose mask nobody reads as pass-throughs."""
    readers = Counter(n for _, used in steps for n in used)
    return [_inference_dropout(s, readers, keep) for s in steps]


def _prepared_conv(entry, known):
    """A Conv step with constant float weights as a PreparedConv step; other entries unchanged."""
    step, used = entry
    fn, ins, outs, attrs, free, info, context = step
    relu = isinstance(fn, _InPlaceRelu)
    if info.node.op_type != "Conv" or info.domain or context or len(outs) != 1 or len(ins) < 2:
        return entry
    if (relu and fn.fn is not _conv_kernel()) or (not relu and fn is not _conv_kernel()):
        return entry
    w = known.get(ins[1])
    b = known.get(ins[2]) if len(ins) > 2 and ins[2] else None
    if w is None or w.dtype not in _FLOATS or (len(ins) > 2 and ins[2] and (b is None or b.dtype != w.dtype)):
        return entry
    from .kernels.conv_prepared import PreparedConv

    return (PreparedConv(w, b, attrs, relu), ins[:1], outs, {}, free, info, False), [ins[0]]


def _conv_kernel():
    from .kernels.conv import conv

    return conv


class Constants:
    """The true constants of the graph being prepared (new folded values are added to the plan's);
    initializers a feed may override are not among them."""

    def __init__(self, constants, names):
        self.constants, self.names = constants, names

    def get(self, name):
        return self.constants.get(name) if name in self.names else None

    def __contains__(self, name):
        return name in self.names

    def add(self, name, value):
        self.constants[name] = value
        self.names.add(name)


def _single_producer(step, producer, readers, keep, known):
    """Index of the step computing this step's data input, when this step is its only reader."""
    op, domain = step[5].node.op_type, step[5].domain
    if domain or op not in ("BatchNormalization", "Mul", "Add", "Relu") or not step[1]:
        return None
    ins = step[1]
    data = ins[0]
    if op in ("Mul", "Add") and len(ins) == 2 and ins[0] in known and ins[1] not in known:
        data = ins[1]
    if data not in producer or readers[data] != 1 or data in keep:
        return None
    return producer[data]


# ------------------------------------------------------------------------------------ pair folding
def _fuse_pair(first, second, known):
    """One step doing ``first`` then ``second`` (second reads first's only output), or None."""
    op1, op2 = first[5].node.op_type, second[5].node.op_type
    if first[5].domain or len(first[2]) != 1 or isinstance(first[0], _InPlaceRelu):
        return None
    if op2 == "Relu":
        if isinstance(first[0], FusedAffine):
            first[0].relu = True
            return first[:2] + second[2:3] + first[3:]
        if op1 in _FRESH or (op1 == "Sum" and len(first[1]) >= 2):
            return (_InPlaceRelu(first[0]),) + first[1:2] + second[2:3] + first[3:]
        return None
    affine = _channel_affine(second, known)
    if affine is None:
        return None
    if isinstance(first[0], FusedAffine):
        return first[:2] + second[2:3] + first[3:] if first[0].compose(affine, second, known) else None
    if op1 == "Conv":
        return _fold_into_conv(first, second, affine, known)
    if op1 == "BatchNormalization":
        base = _channel_affine(first, known)
        if base is None:
            return None
        fused = FusedAffine(base, first, known)
        if not fused.compose(affine, second, known):
            return None
        return (fused, first[1][:1], second[2], {}, (), first[5], False)
    return None


def _channel_affine(step, known):
    """``(factor, shift, rank)`` when ``step`` computes ``x * factor + shift`` per channel (axis 1)
    with constant 1-D ``factor``/``shift`` (or size-1 ones); ``rank`` is the rank of x this requires
    (None: any rank >= 2). None when the step is not such an operation."""
    node, ins, attrs = step[5].node, step[1], step[3]
    op = node.op_type
    if op == "BatchNormalization":
        if len([o for o in node.output if o]) != 1 or attrs.get("training_mode", 0) or len(ins) != 5:
            return None
        params = [known.get(n) for n in ins[1:]]
        if any(p is None or p.ndim != 1 or p.dtype not in _FLOATS for p in params):
            return None
        scale, bias, mean, var = (p.astype(np.float64) for p in params)
        factor = scale / np.sqrt(var + attrs["epsilon"])
        return factor, bias - mean * factor, None
    if op not in ("Mul", "Add") or len(ins) != 2 or attrs.get("broadcast", 0):
        return None
    c = known.get(ins[1]) if ins[1] in known else known.get(ins[0])
    if not isinstance(c, np.ndarray) or c.dtype not in _FLOATS:
        return None
    rank = None
    if c.size == 1:
        values = c.reshape(1).astype(np.float64)
        if c.ndim > 2:
            rank = c.ndim  # a (1, 1, 1) constant still raises the result's rank to its own
    elif c.ndim >= 2 and all(d == 1 for d in c.shape[1:]):
        values, rank = c.reshape(-1).astype(np.float64), c.ndim + 1  # (C, 1, 1) against (N, C, H, W)
    elif c.ndim >= 3 and c.shape[0] == 1 and all(d == 1 for d in c.shape[2:]):
        values, rank = c.reshape(-1).astype(np.float64), c.ndim  # (1, C, 1, 1)
    else:
        return None
    if op == "Mul":
        return values, np.zeros_like(values), rank
    return np.ones_like(values), values, rank


def _fold_into_conv(conv, after, affine, known):
    """The Conv step with ``after`` (a per-channel affine op) folded into its weights and bias."""
    factor, shift, rank = affine
    ins = conv[1]
    w = known.get(ins[1]) if len(ins) > 1 else None
    has_bias = len(ins) > 2 and ins[2]
    b = known.get(ins[2]) if has_bias else None
    if w is None or w.dtype not in _FLOATS or (has_bias and (b is None or b.dtype != w.dtype)):
        return None
    m = w.shape[0]
    if (rank is not None and rank != w.ndim) or factor.size not in (1, m) or w.ndim < 3:
        return None
    f = np.broadcast_to(factor, (m,))
    new_w = (w.astype(np.float64) * f.reshape((-1,) + (1,) * (w.ndim - 1))).astype(w.dtype)
    base = np.zeros(m) if b is None else b.astype(np.float64)
    new_b = (base * f + shift).astype(w.dtype)
    w_name, b_name = after[2][0] + "\x00W", after[2][0] + "\x00B"
    known.add(w_name, new_w)
    known.add(b_name, new_b)
    return (conv[0], (ins[0], w_name, b_name)) + after[2:3] + conv[3:]


# ------------------------------------------------------------------------------------ fused steps
class _InPlaceRelu:
    """A kernel followed by a Relu applied in place to its (fresh, unshared) result."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **attrs):
        y = self.fn(*args, **attrs)
        if type(y) is np.ndarray and y.ndim and y.flags.writeable:
            return relu_inplace(y)
        return np.asarray(np.maximum(y, np.zeros((), y.dtype)))


class FusedAffine:
    """A per-channel ``x * factor + shift`` (optionally followed by Relu) replacing a chain of steps.

    ``chain`` keeps the original kernels with their constant operands; they run one by one when the
    input is not what the fast path was prepared for (another rank, a non-float dtype).
    """

    __slots__ = ("factor", "shift", "rank", "relu", "chain", "_prepared")

    def __init__(self, affine, step, known):
        self.factor, self.shift, self.rank = affine
        self.chain = [_chain_entry(step, known)]
        self.relu = False
        self._prepared = {}

    def compose(self, affine, step, known) -> bool:
        """Append ``y * f + s`` computed by ``step``; False when it cannot be folded in."""
        factor, shift, rank = affine
        if self.relu or (rank is not None and self.rank is not None and rank != self.rank):
            return False
        if factor.size != 1 and self.factor.size != 1 and factor.size != self.factor.size:
            return False
        self.rank = rank if rank is not None else self.rank
        self.factor, self.shift = self.factor * factor, self.shift * factor + shift
        self.chain.append(_chain_entry(step, known))
        return True

    def __call__(self, x):
        key = (x.dtype, x.ndim) if type(x) is np.ndarray else None
        consts = self._prepared.get(key)
        if consts is None:
            if key is None or x.dtype not in _FLOATS or x.ndim < 2 or \
                    (self.rank is not None and x.ndim != self.rank) or self.factor.size not in (1, x.shape[1]):
                return self._one_by_one(x)
            shape = (-1,) + (1,) * (x.ndim - 2)
            consts = self._prepared[key] = (self.factor.astype(x.dtype).reshape(shape),
                                            self.shift.astype(x.dtype).reshape(shape))
        elif self.factor.size not in (1, x.shape[1]):
            return self._one_by_one(x)
        y = np.multiply(x, consts[0])
        y += consts[1]
        if self.relu:
            relu_inplace(y)
        return y

    def _one_by_one(self, x):
        from .plan import KernelContext

        value = x
        for fn, args, attrs, info, context in self.chain:
            args = [value if a is _DATA else a for a in args]
            value = fn(KernelContext(info, {}), *args, **attrs) if context else fn(*args, **attrs)
        if self.relu:
            value = np.asarray(np.maximum(value, np.zeros((), value.dtype)))
        return value


_DATA = object()  # placeholder of the data operand in a chain entry's arguments


def _chain_entry(step, known):
    fn, ins, _, attrs, _, info, context = step
    args = [known.get(n) if n in known else _DATA for n in ins]
    return fn, args, attrs, info, context


# ------------------------------------------------------------------------------- convs into concat
def _convs_into_concat(steps, keep, known=None):
    """Concat steps along axis 1 whose inputs include prepared Conv results read by nothing else
    become :class:`ConcatInto` steps that run those Convs (the Conv steps are removed). The Convs
    run later than before, at the Concat, which is safe: their inputs are still there (values are
    released after their last reader, computed after fusion) and nothing else reads their results."""
    from .kernels.conv_fused import ConcatInto, DepthwisePointwise
    from .kernels.conv_prepared import PreparedConv

    readers = Counter(n for _, used in steps for n in used)
    producer = {n: i for i, (step, _) in enumerate(steps) for n in step[2]}
    out = list(steps)
    for j, (step, used) in enumerate(steps):
        fn, ins, outs, attrs, free, info, context = step
        relu = isinstance(fn, _InPlaceRelu)
        if info.node.op_type != "Concat" or info.domain or context or len(outs) != 1 or len(ins) < 2 or \
                (relu and fn.fn is not _concat_kernel()) or (not relu and fn is not _concat_kernel()):
            continue
        parts, args, taken = [], [], []
        for name in ins:
            k = producer.get(name)
            conv = out[k][0][0] if k is not None and out[k] is not None else None
            if type(conv) in (PreparedConv, DepthwisePointwise) and readers[name] == 1 and name not in keep and \
                    attrs.get("axis") in (1, 1 - conv.w.ndim):
                parts.append(conv)
                args.append(out[k][0][1][0])
                taken.append(k)
            else:
                parts.append(None)
                args.append(name)
        if not taken:
            continue
        for k in taken:
            out[k] = None
        fused = ConcatInto(parts, fn.fn if relu else fn, attrs, relu)
        out[j] = ((fused, tuple(args), outs, {}, free, info, False), [a for a in args if a])
    return [s for s in out if s is not None]


def _concat_kernel():
    from .kernels.shape import concat

    return concat


# ----------------------------------------------------------------- biases into pointwise convs
def _biases_into_pointwise_convs(steps, keep, known=None):
    """A prepared Conv without Relu whose only reader is a pointwise prepared Conv (1x1 kernel, unit
    strides, no padding) hands its bias to that Conv: ``W2 (y + b1) + b2 = W2 y + (W2 b1 + b2)``.

    Its own bias is a pass over its result, broadcast per channel (a depthwise Conv adds it while
    cropping its computed rows: measured 2-3x the cost of the plain crop copy on ShuffleNet's
    layers), while the pointwise Conv adds a bias anyway (ShuffleNet's depthwise -> grouped 1x1).
    """
    from .kernels.conv_prepared import PreparedConv
    from .kernels.pool import _pointwise

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        first = out[i][0][0]
        if type(first) is not PreparedConv or first.relu or first.b is None:
            continue
        name = step[2][0]
        j = reader_of.get(name)
        if readers[name] != 1 or name in keep or j is None or j <= i:
            continue
        second = out[j][0][0]
        if type(second) is not PreparedConv or out[j][0][1] != (name,) or \
                not _pointwise(PreparedConv(second.w, None, second.attrs)) or second.w.dtype != first.w.dtype:
            continue
        w2, group = second.w, second.attrs.get("group", 1)
        m2, cg = w2.shape[:2]
        if cg * group != first.w.shape[0] or m2 % group:
            continue
        # output m of the second Conv (group m // (m2 / group)) reads input channels g * cg ... g * cg + cg
        b1 = first.b.astype(np.float64).reshape(group, 1, cg)
        moved = (w2.reshape(group, m2 // group, cg).astype(np.float64) * b1).sum(axis=2).reshape(m2)
        b2 = moved if second.b is None else moved + second.b
        out[i] = ((PreparedConv(first.w, None, first.attrs),) + out[i][0][1:], out[i][1])
        out[j] = ((PreparedConv(w2, b2.astype(w2.dtype), second.attrs, second.relu),) + out[j][0][1:], out[j][1])
    return out


def _depthwise_into_pointwise_convs(steps, keep, known=None):
    """A depthwise prepared Conv without bias or Relu (one input channel per group, as many outputs
    as inputs) whose only reader is a pointwise prepared Conv becomes, with it, one
    :class:`~.kernels.conv_fused.DepthwisePointwise` step at the pointwise Conv's place."""
    from .kernels.conv_fused import DepthwisePointwise
    from .kernels.conv_prepared import PreparedConv
    from .kernels.pool import _pointwise

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        dw = step[0]
        if type(dw) is not PreparedConv or dw.relu or dw.b is not None or dw.w.ndim < 3 or \
                dw.w.shape[1] != 1 or dw.attrs.get("group", 1) != dw.w.shape[0] or dw.w.shape[0] < 2:
            continue
        name = step[2][0]
        j = reader_of.get(name)
        if readers[name] != 1 or name in keep or j is None or j <= i or out[j] is None:
            continue
        pw = out[j][0][0]
        if type(pw) is not PreparedConv or out[j][0][1] != (name,) or pw.w.dtype != dw.w.dtype or \
                pw.w.ndim != dw.w.ndim or not _pointwise(PreparedConv(pw.w, None, pw.attrs)):
            continue
        out[j] = ((DepthwisePointwise(dw, pw), step[1]) + out[j][0][2:], list(used))
        out[i] = None
    return [s for s in out if s is not None]


# --------------------------------------------------------------------------- shuffles into convs
def _shuffles_into_convs(steps, keep, known):
    """PreparedConv -> Reshape -> Transpose -> Reshape chains (each value read only by the next
    step) with constant shapes become one :class:`ShuffledConv` step; whether the chain really is a
    channel shuffle is decided per input shape at run time (:class:`ChannelShuffle`)."""
    from .kernels.conv_fused import ChannelShuffle
    from .kernels.conv_prepared import PreparedConv, ShuffledConv

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        conv = step[0]
        if type(conv) is not PreparedConv or out[i] is None:
            continue
        chain, name = [], step[2][0]
        for op in ("Reshape", "Transpose", "Reshape"):
            j = reader_of.get(name)
            if readers[name] != 1 or name in keep or j is None or out[j] is None:
                break
            nxt = out[j][0]
            fn, ins, outs, attrs, _, info, context = nxt
            if info.node.op_type != op or info.domain or context or len(outs) != 1 or ins[0] != name:
                break
            if op == "Reshape" and (len(ins) != 2 or known.get(ins[1]) is None or ins[1] == name):
                break
            if op == "Transpose" and len(ins) != 1:
                break
            chain.append((j, fn, known.get(ins[1]) if op == "Reshape" else None, attrs))
            name = outs[0]
        if len(chain) != 3:
            continue
        shuffle = ChannelShuffle([c[1:] for c in chain])
        fused = ShuffledConv(conv.w, conv.b, conv.attrs, conv.relu, shuffle)
        out[i] = ((fused,) + step[1:2] + out[chain[-1][0]][0][2:3] + step[3:], used)
        for j, *_ in chain:
            out[j] = None
    return [s for s in out if s is not None]


# ------------------------------------------------------------------------- residuals into convs
def _residuals_into_convs(steps, keep, known=None):
    """Add(conv result, r) / Sum of two (then maybe Relu) where the conv result has no other reader
    and r exists before the Conv runs: one :class:`ConvAdd` step at the Conv's place."""
    from .kernels.conv_fused import ConvAdd
    from .kernels.conv_prepared import PreparedConv

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    producer = {n: i for i, (step, _) in enumerate(steps) for n in step[2]}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        if not isinstance(step[0], PreparedConv) or out[i] is None:
            continue
        y = step[2][0]
        j = reader_of.get(y)
        if readers[y] != 1 or y in keep or j is None or out[j] is None:
            continue
        fn, ins, outs, attrs, _, info, context = out[j][0]
        relu = isinstance(fn, _InPlaceRelu)
        if info.node.op_type not in ("Add", "Sum") or info.domain or context or len(ins) != 2 or len(outs) != 1:
            continue
        other = ins[1] if ins[0] == y else ins[0]
        if other == y or not other or producer.get(other, -1) >= i:
            continue
        fused = ConvAdd(step[0], fn.fn if relu else fn, attrs, relu, ins[0] == y)
        out[i] = ((fused, (step[1][0], other), outs, {}, (), step[5], False), [step[1][0], other])
        out[j] = None
    return [s for s in out if s is not None]


# ------------------------------------------------------------------------------------ CNN stems
def _stems(steps, keep, known=None):
    """A prepared float32 Conv (with its fused Relu or not) whose result only a MaxPool (without
    Indices output) reads becomes one :class:`~.kernels.conv_stem.ConvStem` step at the Conv's
    place when the attributes make a stem (stride-2 conv, 3x3 stride-2 pool, see ``is_stem``); the
    rest of the geometry is checked per input shape, the separate kernels running otherwise."""
    from .kernels.conv_prepared import PreparedConv
    from .kernels.conv_stem import ConvStem, is_stem
    from .kernels.pool import max_pool

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        conv = step[0]
        if type(conv) is not PreparedConv:
            continue
        y = step[2][0]
        j = reader_of.get(y)
        if readers[y] != 1 or y in keep or j is None or j <= i or out[j] is None:
            continue
        pool = out[j][0]
        if pool[0] is not max_pool or pool[5].domain or pool[1] != (y,) or len(pool[2]) != 1 or \
                not is_stem(conv, pool[3]):
            continue
        relu = conv.relu
        if relu:  # the Relu runs on the pooled result (a quarter of the elements), when that commutes
            if not _pool_windows_touch_input(pool[3]):
                continue
            conv = PreparedConv(conv.w, conv.b, conv.attrs)
        fused = ConvStem(conv, relu, max_pool, pool[3], pool[5])
        out[i] = ((fused, step[1], pool[2], {}, (), step[5], False), list(used))
        out[j] = None
    return [s for s in out if s is not None]


# ---------------------------------------------------------------------- relus after max pools
def _relus_after_max_pools(steps, keep, known=None):
    """Move the Relu fused into a producer after the MaxPool that is its only reader."""
    from .kernels.conv_fused import ConcatInto
    from .kernels.conv_prepared import PreparedConv
    from .kernels.pool import max_pool

    readers = Counter(n for _, used in steps for n in used)
    reader_of = {n: i for i, (_, used) in enumerate(steps) for n in used}
    out = list(steps)
    for i, (step, used) in enumerate(steps):
        fn = step[0]
        if len(step[2]) != 1 or step[2][0] in keep or readers[step[2][0]] != 1:
            continue
        j = reader_of.get(step[2][0])
        pool = out[j][0] if j is not None else None
        if pool is None or pool[0] is not max_pool or pool[5].domain or len(pool[2]) != 1 or \
                not _pool_windows_touch_input(pool[3]):
            continue
        if isinstance(fn, PreparedConv) and fn.relu:
            fn.relu = False  # not called yet: its closures read the flag when first prepared
        elif isinstance(fn, ConcatInto) and (fn.relu or (all(isinstance(p, PreparedConv) and p.relu
                                                             for p in fn.parts))):
            fn.relu = False
            for p in fn.parts:
                p.relu = False
        elif isinstance(fn, _InPlaceRelu):
            out[i] = ((fn.fn,) + step[1:], used)
        else:
            continue
        out[j] = ((_InPlaceRelu(pool[0]),) + pool[1:], out[j][1])
    return out


def _pool_windows_touch_input(attrs):
    """True when every pooling window holds at least one input element (padding narrower than
    the window): then the Relu of the max is the max of the Relus."""
    pads, kernel = attrs.get("pads"), attrs.get("kernel_shape")
    if not pads or attrs.get("auto_pad", "NOTSET") != "NOTSET":
        return True
    if not kernel:
        return False
    dilations = attrs.get("dilations") or [1] * len(kernel)
    extents = [(k - 1) * d + 1 for k, d in zip(kernel, dilations)]
    return all(p < e for p, e in zip(pads, extents + extents))


# ------------------------------------------------------------------------------ inference dropout
def _passthrough(data, *rest, **attrs):
    """An inference Dropout without its mask: the output is the input (what the kernel returns too)."""
    return data


def _inference_dropout(entry, readers, keep):
    """A Dropout step of opset 7 to 11 (inference only), or of 12+ without a ``training_mode`` input,
    whose mask output is absent or read by nothing: :func:`_passthrough`, not the kernel that also
    builds a mask."""
    from .kernels.normalization import dropout_v7, dropout_v12

    step, used = entry
    fn, ins, outs, attrs, free, info, context = step
    if info.domain or info.node.op_type != "Dropout" or not outs or not outs[0] or \
            any(n and (readers[n] or n in keep) for n in outs[1:]) or \
            not (fn is dropout_v7 or (fn is dropout_v12 and (len(ins) < 3 or not ins[2]))):
        return entry
    return (_passthrough, ins[:1], outs[:1], {}, free, info, False), [ins[0]]
