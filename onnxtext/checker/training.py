"""Training rules: binding keys name state variables (initializers), values name outputs of the bound graph,
keys are unique, and the initialization graph may be omitted only without initialization bindings
(IR spec: Training Related Information)."""

from __future__ import annotations

from . import rule

_TRAIN = "IR spec: Training Related Information"
#: inference runtimes (onnxruntime, onnx.reference) ignore training_info: its rules are warnings unless --strict
_IGNORED = " (inference runtimes ignore training_info; an error under --strict)"


@rule("train.binding", "model", _TRAIN + " (binding keys: initializers of the main or algorithm graph, unique; "
      "values: outputs of the initialization / algorithm graph)")
def bindings(ctx, m, path, _):
    state = {t.name for t in m.graph.initializer}
    for i, t in enumerate(m.training_info):
        state_here = state | {x.name for x in t.algorithm.initializer}
        for key, graph_key in (("initialization_binding", "initialization"), ("update_binding", "algorithm")):
            outputs = {v.name for v in getattr(t, graph_key).output}
            seen = set()
            p = f"training_info[{i}].{key}"
            for e in getattr(t, key):
                if e.key in seen:
                    yield p, f"{key} key {e.key!r} is bound twice" + _IGNORED, "tolerated"
                seen.add(e.key)
                if e.key not in state_here:
                    yield (p, f"{key} key {e.key!r} is not an initializer of the main or algorithm graph" + _IGNORED,
                           "tolerated")
                if e.value not in outputs and t.HasField(graph_key):  # no graph: train.initialization says so
                    yield (p, f"{key} value {e.value!r} is not an output of the {graph_key} graph" + _IGNORED,
                           "tolerated")


@rule("train.initialization", "model", _TRAIN + " (the initialization graph may be omitted only when there are no "
      "initialization bindings)")
def initialization_present(ctx, m, path, _):
    for i, t in enumerate(m.training_info):
        if len(t.initialization_binding) and not t.HasField("initialization"):
            yield (f"training_info[{i}].initialization_binding",
                   "training_info has initialization_binding entries but no initialization graph" + _IGNORED,
                   "tolerated")
        if not t.HasField("algorithm"):
            yield f"training_info[{i}]", "training_info has no algorithm graph (it is required)" + _IGNORED, \
                "tolerated"
