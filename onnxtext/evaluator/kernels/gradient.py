"""``ai.onnx.preview.training::Gradient``: reverse-mode differentiation of part of the enclosing graph.

The node names, by attribute, the tensors ``xs`` (differentiated), ``zs`` (held constant) and ``y`` of
the graph that holds it; its inputs are the values of ``xs`` then ``zs`` at which the derivatives are
taken (they may differ from the values the graph computed). The differentiated computation is the set
of nodes between ``xs``/``zs`` and ``y``: the kernel recomputes it forward from its own inputs (a plan
prepared once per node, keeping every intermediate), then walks it backward applying one
vector-Jacobian rule per node. Values the computation reads besides ``xs`` and ``zs`` are taken from
the current run while they are still alive (the run releases a value after its last reader, and the
Gradient node does not read them), else from the graph's initializers (Constant nodes are recomputed);
otherwise it is an error asking to list the value in ``zs``, which is the spec's model anyway: ``y`` is
a function of ``xs`` and ``zs``.

A non-scalar ``y`` is seeded with ones, so each output is the gradient of ``sum(y)`` (for a scalar loss
that is the usual gradient); an output has the shape and element type of its ``x``. An ``x`` that does
not reach ``y`` gets zeros. A node on the path without a rule below is an :class:`EvalError` naming it.

The rules (``_RULES``) take the node's attributes (schema defaults filled), its input values, its
output values and the gradients of its outputs, and return one gradient (or None) per input;
broadcasting ops reduce their gradients back to each input's shape with :func:`unbroadcast`.
"""

from __future__ import annotations

import numpy as np
import onnx

from ...errors import EvalError
from ..plan import attribute_value, describe_node, prepare_graph, schema_defaults
from ..registry import kernel, normalize_domain
from .training import TRAINING

#: key of the prepared forward recomputation in the Gradient step's ``StepInfo.subplans`` (whose other
#: keys are ids of graph attributes, always ints)
_TAPE_KEY = "gradient"


# ------------------------------------------------------------------------------------------ helpers
def unbroadcast(grad: np.ndarray, shape: tuple) -> np.ndarray:
    """``grad`` (of a broadcast result) summed back to ``shape`` (numpy/ONNX multidirectional rules)."""
    grad = np.asarray(grad)
    if grad.shape == tuple(shape):
        return grad
    extra = grad.ndim - len(shape)
    if extra > 0:
        grad = grad.sum(axis=tuple(range(extra)))
    squeezed = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if squeezed:
        grad = grad.sum(axis=squeezed, keepdims=True)
    return grad.reshape(shape)


def _reduced_axes(x: np.ndarray, axes, noop_with_empty_axes: int) -> tuple | None:
    """Normalized reduced axes; None when the reduction is the identity (empty axes with noop set)."""
    if axes is None or len(axes) == 0:
        return None if noop_with_empty_axes else tuple(range(x.ndim))
    return tuple(sorted(int(a) % x.ndim for a in np.asarray(axes).reshape(-1)))


def _reduce_input_grad(a, ins, g, mean: bool):
    x = ins[0]
    # axes is an input from ReduceSum-13 / ReduceMean-18 on, an attribute before
    axes = ins[1] if len(ins) > 1 and ins[1] is not None else a.get("axes")
    reduced = _reduced_axes(x, axes, a.get("noop_with_empty_axes", 0))
    if reduced is None:
        return (g, None)
    if not a.get("keepdims", 1):
        g = np.expand_dims(g, reduced)
    gx = np.broadcast_to(g, x.shape)
    if mean:
        count = int(np.prod([x.shape[i] for i in reduced]))
        gx = gx / np.asarray(max(count, 1), dtype=x.dtype)
    return (np.ascontiguousarray(gx, dtype=x.dtype), None)


def _matmul_grads(A, B, g):
    """Gradients of ``A @ B`` with numpy/ONNX MatMul semantics (1-D operands promoted, batch broadcast)."""
    a2 = A[None, :] if A.ndim == 1 else A
    b2 = B[:, None] if B.ndim == 1 else B
    g2 = g
    if A.ndim == 1:
        g2 = np.expand_dims(g2, -2)
    if B.ndim == 1:
        g2 = np.expand_dims(g2, -1)
    ga = unbroadcast(np.matmul(g2, np.swapaxes(b2, -1, -2)), a2.shape).reshape(A.shape)
    gb = unbroadcast(np.matmul(np.swapaxes(a2, -1, -2), g2), b2.shape).reshape(B.shape)
    return ga, gb


def _gemm_grads(a, ins, g):
    A, B = ins[0], ins[1]
    C = ins[2] if len(ins) > 2 else None
    alpha, beta = a.get("alpha", 1.0), a.get("beta", 1.0)
    At = A.T if a.get("transA", 0) else A
    Bt = B.T if a.get("transB", 0) else B
    ga = alpha * (g @ Bt.T)
    gb = alpha * (At.T @ g)
    grads = [ga.T if a.get("transA", 0) else ga, gb.T if a.get("transB", 0) else gb]
    if C is not None:
        grads.append(unbroadcast(beta * g, C.shape))
    return tuple(grads)


def _softmax_grads(a, ins, out, g, opset):
    y = out[0]
    axis = a.get("axis", -1 if opset >= 13 else 1)
    if opset >= 13:
        return (y * (g - np.sum(g * y, axis=axis, keepdims=True)),)
    # before opset 13 the input is coerced to 2-D at ``axis`` and normalized over the flattened tail
    axis = axis % max(y.ndim, 1)
    shape2 = (int(np.prod(y.shape[:axis])), -1)
    y2, g2 = y.reshape(shape2), g.reshape(shape2)
    return ((y2 * (g2 - np.sum(g2 * y2, axis=1, keepdims=True))).reshape(y.shape),)


def _log_softmax_grads(a, ins, out, g, opset):
    y = out[0]
    axis = a.get("axis", -1 if opset >= 13 else 1)
    if opset >= 13:
        return (g - np.exp(y) * np.sum(g, axis=axis, keepdims=True),)
    axis = axis % max(y.ndim, 1)  # before opset 13: coerced to 2-D at axis, as for Softmax
    shape2 = (int(np.prod(y.shape[:axis])), -1)
    y2, g2 = y.reshape(shape2), g.reshape(shape2)
    return ((g2 - np.exp(y2) * np.sum(g2, axis=1, keepdims=True)).reshape(y.shape),)


def _concat_grads(a, ins, g):
    axis = a["axis"] % g.ndim
    bounds = np.cumsum([x.shape[axis] for x in ins])[:-1]
    return tuple(np.split(g, bounds, axis=axis))


def _pow_grads(ins, out, g):
    base, exponent = ins
    gb = g * exponent * np.power(base, exponent - 1)
    with np.errstate(all="ignore"):  # log of a non-positive base: that gradient is nan, as in calculus
        ge = g * out[0] * np.log(base)
    return (unbroadcast(gb, base.shape).astype(base.dtype),
            unbroadcast(ge, exponent.shape).astype(exponent.dtype))


def _reshape_like(ins, g):
    """Ops that only change the shape: the gradient takes the input's shape back."""
    return (g.reshape(ins[0].shape),) + (None,) * (len(ins) - 1)


# ------------------------------------------------------------------------------------------ rules
# op -> fn(attrs, inputs, outputs, output_grads, opset) -> gradients of the inputs (None: no gradient);
# output_grads has an array for every output (zeros where nothing flows back)
_RULES = {
    "Identity": lambda a, i, o, g, v: (g[0],),
    "Add": lambda a, i, o, g, v: (unbroadcast(g[0], i[0].shape), unbroadcast(g[0], i[1].shape)),
    "Sub": lambda a, i, o, g, v: (unbroadcast(g[0], i[0].shape), unbroadcast(-g[0], i[1].shape)),
    "Mul": lambda a, i, o, g, v: (unbroadcast(g[0] * i[1], i[0].shape), unbroadcast(g[0] * i[0], i[1].shape)),
    "Div": lambda a, i, o, g, v: (unbroadcast(g[0] / i[1], i[0].shape),
                                  unbroadcast(-g[0] * o[0] / i[1], i[1].shape)),
    "Neg": lambda a, i, o, g, v: (-g[0],),
    "Abs": lambda a, i, o, g, v: (g[0] * np.sign(i[0]),),
    "Sqrt": lambda a, i, o, g, v: (g[0] / (2 * o[0]),),
    "Exp": lambda a, i, o, g, v: (g[0] * o[0],),
    "Log": lambda a, i, o, g, v: (g[0] / i[0],),
    "Pow": lambda a, i, o, g, v: _pow_grads(i, o, g[0]),
    "Reciprocal": lambda a, i, o, g, v: (-g[0] * o[0] * o[0],),
    "Sin": lambda a, i, o, g, v: (g[0] * np.cos(i[0]),),
    "Cos": lambda a, i, o, g, v: (-g[0] * np.sin(i[0]),),
    "Relu": lambda a, i, o, g, v: (g[0] * (i[0] > 0),),
    "LeakyRelu": lambda a, i, o, g, v: (np.where(i[0] > 0, g[0], g[0] * np.asarray(a["alpha"], i[0].dtype)),),
    "Sigmoid": lambda a, i, o, g, v: (g[0] * o[0] * (1 - o[0]),),
    "Tanh": lambda a, i, o, g, v: (g[0] * (1 - o[0] * o[0]),),
    "Softmax": lambda a, i, o, g, v: _softmax_grads(a, i, o, g[0], v),
    "LogSoftmax": lambda a, i, o, g, v: _log_softmax_grads(a, i, o, g[0], v),
    "Sum": lambda a, i, o, g, v: tuple(unbroadcast(g[0], x.shape) for x in i),
    "MatMul": lambda a, i, o, g, v: _matmul_grads(i[0], i[1], g[0]),
    "Gemm": lambda a, i, o, g, v: _gemm_grads(a, i, g[0]),
    "Reshape": lambda a, i, o, g, v: _reshape_like(i, g[0]),
    "Flatten": lambda a, i, o, g, v: _reshape_like(i, g[0]),
    "Squeeze": lambda a, i, o, g, v: _reshape_like(i, g[0]),
    "Unsqueeze": lambda a, i, o, g, v: _reshape_like(i, g[0]),
    "Transpose": lambda a, i, o, g, v: (np.transpose(
        g[0], np.argsort(a["perm"]) if a.get("perm") else None),),  # default perm reverses: self-inverse
    "Concat": lambda a, i, o, g, v: _concat_grads(a, i, g[0]),
    "ReduceSum": lambda a, i, o, g, v: _reduce_input_grad(a, i, g[0], mean=False),
    "ReduceMean": lambda a, i, o, g, v: _reduce_input_grad(a, i, g[0], mean=True),
}


def differentiable_ops() -> list[str]:
    """Names of the ops Gradient can differentiate through (for docs and tests)."""
    return sorted(_RULES)


# ------------------------------------------------------------------------------------------ the tape
class _Tape:
    """The differentiated computation of one Gradient node, prepared once."""

    def __init__(self, ctx, xs, zs, y):
        graph = ctx.graph
        if graph is None:
            raise EvalError("Gradient: the graph holding the node is not known")
        all_nodes = list(graph.node)
        producer = {o: k for k, n in enumerate(all_nodes) for o in n.output if o}
        sources = set(xs) | set(zs)
        # the nodes computing y from xs/zs: walk up from y, stopping at xs and zs
        needed, stack, seen = set(), [y], set()
        while stack:
            name = stack.pop()
            if name in seen or name in sources or not name:
                continue
            seen.add(name)
            k = producer.get(name)
            if k is None:
                continue  # a leaf: initializer, graph input or outer value
            needed.add(k)
            stack.extend(all_nodes[k].input)
        nodes = [all_nodes[k] for k in sorted(needed)]
        if y not in sources and not nodes and y not in {t.name for t in graph.initializer}:
            raise EvalError(f"Gradient: y={y!r} is not computed in the graph holding the node")
        self.xs, self.zs, self.y = list(xs), list(zs), y
        self.nodes = nodes
        sub = onnx.GraphProto()
        sub.name = f"gradient of {y}"
        sub.node.extend(nodes)
        for name in self.xs + self.zs:
            sub.input.add().name = name
        sub.output.add().name = y
        prep = ctx.info.prep
        # backward reads every input and output of the nodes: none may be released early
        kept = {v for n in nodes for v in list(n.input) + list(n.output) if v}
        self.plan = prepare_graph(sub, prep, keep=kept)
        # values the computation reads besides xs and zs: the graph's initializers, else the enclosing run
        self.initializers = {t.name: t for t in graph.initializer if t.name in self.plan.free}
        self.opsets = prep.opsets
        # which values depend on xs (only those carry gradients backward)
        self.varying = set(xs)
        for n in nodes:
            if any(i in self.varying for i in n.input):
                self.varying.update(o for o in n.output if o)
        self.attrs = [self._attributes(n, prep) for n in nodes]

    @staticmethod
    def _attributes(node, prep) -> dict:
        domain = normalize_domain(node.domain)
        version = prep.opsets.get(domain, 0)
        attrs = dict(schema_defaults(node.op_type, domain, version))
        for a in node.attribute:
            attrs[a.name] = attribute_value(a, prep.evaluator.base_dir)
        return attrs

    def forward(self, ctx, values) -> dict:
        outer = {}
        for name in self.plan.free:
            # the run's own value first: it is the current one (a fed default, a training state variable)
            if name in ctx.scope:
                outer[name] = ctx.scope[name]
            elif name in self.initializers:
                outer[name] = ctx.evaluator.decode_initializer(self.initializers[name])
            else:
                raise EvalError(f"Gradient: y={self.y!r} depends on {name!r}, which is neither in xs or zs nor "
                                "a constant of the graph (list it in zs)")
        env = self.plan.bind_outer(outer)
        env.update(zip(self.xs + self.zs, values))
        self.plan.execute(env)
        return env

    def backward(self, env) -> dict:
        y_value = np.asarray(env[self.y])
        grads = {self.y: np.ones_like(y_value)}  # seed: d sum(y) / dy
        for node, attrs in zip(reversed(self.nodes), reversed(self.attrs)):
            outs = [o for o in node.output]
            if not any(o in grads for o in outs):
                continue  # nothing flows back through this node (e.g. it only feeds a shape input)
            domain = normalize_domain(node.domain)
            rule = _RULES.get(node.op_type) if domain == "" else None
            if rule is None:
                raise EvalError(f"Gradient: no differentiation rule for {describe_node(node)}, which is on the "
                                f"path to y={self.y!r} (differentiable: {', '.join(differentiable_ops())})")
            ins = [env[i] if i else None for i in node.input]
            out_values = [env.get(o) for o in outs]
            out_grads = [grads.get(o) if grads.get(o) is not None else
                         (np.zeros_like(v) if isinstance(v, np.ndarray) else None)
                         for o, v in zip(outs, out_values)]
            input_grads = rule(attrs, ins, out_values, out_grads, self.opsets.get(domain, 0))
            for name, g in zip(node.input, input_grads):
                if g is None or name not in self.varying:
                    continue
                g = np.asarray(g)
                grads[name] = grads[name] + g if name in grads else g
        return grads


def _tape(ctx, xs, zs, y) -> _Tape:
    tape = ctx.info.subplans.get(_TAPE_KEY)
    if tape is None:
        tape = ctx.info.subplans[_TAPE_KEY] = _Tape(ctx, xs, zs, y)
    return tape


@kernel("Gradient", since=1, domain=TRAINING, context=True)
def gradient(ctx, *values, xs, y, zs=None):
    zs = list(zs or [])
    if len(values) != len(xs) + len(zs):
        raise EvalError(f"Gradient: {len(values)} inputs, but xs and zs name {len(xs) + len(zs)} tensors")
    tape = _tape(ctx, xs, zs, y)
    env = tape.forward(ctx, values)
    grads = tape.backward(env)
    out = []
    for name, x in zip(xs, values):
        g = grads.get(name)
        x = np.asarray(x)
        out.append(np.zeros_like(x) if g is None else np.asarray(g, dtype=x.dtype).reshape(x.shape))
    return tuple(out)
