"""A graph the evaluator refuses to run before anything runs: a value assigned twice.

onnxruntime refuses such a model when it loads it, and running it would silently let one assignment
win. :func:`refuse_reassigned_values` walks the main graph and every subgraph (each its own scope) in one
pass over their node outputs and raises an EvalError in the checker's words (rule graph.ssa), carrying
the ``.path`` of the second assignment, which ``onnxtext run`` maps to its text line. (A value used before
its definition is refused while the plan is prepared.)
"""

from __future__ import annotations

from onnx import AttributeProto

from ..errors import EvalError


def refuse_reassigned_values(graph, path: str = "graph") -> None:
    """Raise for the first value of ``graph`` (or of a subgraph) that is assigned twice."""
    defined = {i.name: f"{path}.input" for i in graph.input}
    defined.update((t.name, f"{path}.initializer") for t in graph.initializer)
    for index, node in enumerate(graph.node):
        where = f"{path}.node[{index}]"
        for k, name in enumerate(node.output):
            if not name:
                continue
            first = defined.get(name)
            if first is not None:
                err = EvalError(f"value {name!r} is assigned twice: by {where} ({node.op_type}) and by {first} "
                                "(rule graph.ssa: a value name is assigned once)")
                err.path, err.node, err.stopped = f"{where}.output[{k}]", node, False
                raise err
            defined[name] = f"{where} ({node.op_type})"
        for attr in node.attribute:
            if attr.type == AttributeProto.GRAPH:
                refuse_reassigned_values(attr.g, f"{where}.attribute[{attr.name}].g")
            elif attr.type == AttributeProto.GRAPHS:
                for j, g in enumerate(attr.graphs):
                    refuse_reassigned_values(g, f"{where}.attribute[{attr.name}].graphs[{j}]")
