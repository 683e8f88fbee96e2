"""Multi-device rules (IR >= 11): configuration names unique, num_devices matching the device list, node
configuration ids resolving, sharding specs naming node values with axes in range and positive shard counts
(IR spec: Multi-Device Configuration)."""

from __future__ import annotations

from . import rule

_DEV = "IR spec: Multi-Device Configuration"


@rule("dev.configuration", "model", _DEV + " / Device Configurations (names unique; num_devices equals the length "
      "of device when given)")
def configurations(ctx, m, path, _):
    seen = set()
    for i, c in enumerate(m.configuration):
        p = f"configuration[{i}]"
        if c.name in seen:
            yield p, f"device configuration {c.name!r} is defined twice"
        seen.add(c.name)
        if not c.name:
            yield p, f"device configuration #{i} has no name"
        if c.num_devices < 1:
            yield p, f"device configuration {c.name!r} has num_devices {c.num_devices} (must be positive)"
        if len(c.device) and len(c.device) != c.num_devices:
            yield p, (f"device configuration {c.name!r} lists {len(c.device)} devices but num_devices is "
                      f"{c.num_devices}")


def _ranks(scope):
    out = {}
    g = scope.proto
    if scope.kind == "graph":
        for v in list(g.input) + list(g.output) + list(g.value_info):
            tt = v.type.tensor_type if v.type.HasField("tensor_type") else None
            if tt is not None and tt.HasField("shape"):
                out[v.name] = len(tt.shape.dim)
        for t in g.initializer:
            out[t.name] = len(t.dims)
    return out


@rule("dev.node", "node", _DEV + " / Node Device Configuration and Sharding Spec (configuration_id names a "
      "configuration; tensor_name is a node input or output; axis in [-r, r-1]; num_shards positive)")
def node_configurations(ctx, node, path, scope):
    if not len(node.device_configurations):
        return
    names = {c.name for c in ctx.model.configuration}
    values = set(node.input) | set(node.output)
    ranks = None
    for k, dc in enumerate(node.device_configurations):
        p = f"{path}.device_configurations[{k}]"
        if dc.configuration_id not in names:
            yield p, f"node {node.op_type} refers to unknown device configuration {dc.configuration_id!r}"
        for spec in dc.sharding_spec:
            if spec.tensor_name not in values:
                yield p, f"sharding spec names {spec.tensor_name!r}, which is not an input or output of the node"
            for sd in spec.sharded_dim:
                if ranks is None:
                    ranks = _ranks(scope)
                r = ranks.get(spec.tensor_name)
                if r is not None and not -r <= sd.axis <= r - 1:
                    yield p, f"sharded axis {sd.axis} of {spec.tensor_name!r} is outside [-{r}, {r - 1}]"
                for s in sd.simple_sharding:
                    if s.num_shards <= 0:
                        yield p, f"sharding of {spec.tensor_name!r} has num_shards {s.num_shards} (must be positive)"
