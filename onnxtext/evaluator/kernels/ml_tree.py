"""``ai.onnx.ml`` tree ensembles: TreeEnsembleRegressor, TreeEnsembleClassifier (v1, v3) and TreeEnsemble (v5).

All three attribute encodings are converted to one flat form (:class:`Forest`): arrays over nodes
(feature, threshold, comparison mode, true/false child, NaN direction, leaf flag, membership set)
and a list of leaf contributions (node, target, weight). Evaluation walks every (sample, tree) pair
at once: one vectorized step per depth level. When every interior node compares with one mode (as
sklearn's BRANCH_LEQ forests do) leaves loop onto themselves and all walkers take exactly ``depth``
steps without masking; otherwise each step moves the walkers still on an interior node.

Small batches of a single-mode forest take :class:`.ml_tree_walk.BatchWalk`: blocks of three levels
whose outcomes are packed into a byte that indexes a table of the nodes reached (five to ten numpy
calls for three levels), built once per forest and batch shape.

The Forest of a node is built once and kept (:func:`cached_forest`, keyed by the identity of the
node's attribute values, which the plan prepares once: :mod:`.derived_cache`), with its per-node leaf
values per target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..registry import kernel, prepares
from .derived_cache import derived
from . import ml_tree_walk
from .ml import ML, argmax_rows, as_rows, class_labels, post_transform

# Comparison modes, numbered as TreeEnsemble (v5) numbers them; LEAF marks leaves of the old encoding.
LEQ, LT, GTE, GT, EQ, NEQ, MEMBER, LEAF = range(8)
_MODE_NAMES = {"BRANCH_LEQ": LEQ, "BRANCH_LT": LT, "BRANCH_GTE": GTE, "BRANCH_GT": GT, "BRANCH_EQ": EQ,
               "BRANCH_NEQ": NEQ, "BRANCH_MEMBER": MEMBER, "LEAF": LEAF}
_AGGREGATES = {"AVERAGE": 0, "SUM": 1, "MIN": 2, "MAX": 3}
_POST_TRANSFORMS = ["NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT"]


@dataclass
class Forest:
    feature: np.ndarray       # [M] int64
    threshold: np.ndarray     # [M] float64
    mode: np.ndarray          # [M] int64, one of the modes above
    true_child: np.ndarray    # [M] int64 node index
    false_child: np.ndarray   # [M] int64 node index
    nan_true: np.ndarray      # [M] bool: a NaN feature follows the true branch
    members: np.ndarray       # [M, S] float64 membership sets, NaN padded (S may be 0)
    roots: np.ndarray         # [T] int64
    leaf_node: np.ndarray     # [K] node index of each contribution
    leaf_target: np.ndarray   # [K] target (or class) index
    leaf_weight: np.ndarray   # [K] float64
    _derived: dict = field(default_factory=dict, repr=False, compare=False)  # walk tables, leaf values
    labels: np.ndarray | None = None  # a classifier's class labels
    binary: "_BinaryClassifier | None" = None  # a two-label classifier whose leaves all vote for one class
    base_values: np.ndarray | None = None  # float64, None when absent or empty
    n_targets: int = 0  # a regressor's number of targets

    def _walk_tables(self):
        """(compare ufunc, children [2M]: false then true child of each node, depth) for the single-mode
        walk, or None."""
        if "walk" not in self._derived:
            interior = self.mode != LEAF
            modes = np.unique(self.mode[interior])
            ops = {LEQ: np.less_equal, LT: np.less, GTE: np.greater_equal, GT: np.greater, EQ: np.equal,
                   NEQ: np.not_equal}
            walk = None
            if modes.size <= 1 and (modes.size == 0 or int(modes[0]) in ops):
                nodes = np.arange(self.mode.size)
                true_child = np.where(interior, self.true_child, nodes)  # leaves loop onto themselves
                false_child = np.where(interior, self.false_child, nodes)
                depth = _depth(self.roots, true_child, false_child, interior)
                if depth is not None:
                    children = np.stack([false_child, true_child], axis=1).ravel()  # node n: 2n false, 2n + 1 true
                    walk = (ops[int(modes[0])] if modes.size else np.less_equal, children, depth)
            self._derived["walk"] = walk
        return self._derived["walk"]

    def _batch_tables(self, x: np.ndarray, n_targets: int, aggregate: str):
        """:class:`.ml_tree_walk.BatchWalk` tables for a batch shaped like ``x`` (kept for the last few shapes
        seen, so that alternating batch sizes do not rebuild them), or None when the forest (several modes,
        MIN/MAX) or the batch (over ``BATCH_TABLE_BYTES``) does not fit."""
        key = (x.shape, x.dtype, n_targets, aggregate)
        last = self._derived.get("last-batch")  # (key, tables) of the last call: most runs repeat it
        if last is not None and last[0] == key:
            return last[1]
        kept = self._derived.setdefault("batch", {})
        tables = kept.get(key, False)
        if tables is not False:
            self._derived["last-batch"] = (key, tables)
            return tables
        walk = self._walk_tables()
        tables = None
        if walk is not None and walk[2] > 0 and aggregate in ("SUM", "AVERAGE") and x.dtype.kind in "fiub":
            slots = x.shape[0] * 2 * self.mode.size
            if slots * (24 + 8 * n_targets) <= ml_tree_walk.BATCH_TABLE_BYTES:
                # NaN goes where the comparison sends it (false, true for NEQ) unless a node tracks it
                nan_sensitive = bool(self.nan_true[self.mode != LEAF].any())
                tables = ml_tree_walk.BatchWalk(self, x, walk, self._leaf_values(n_targets, aggregate)[0],
                                                nan_sensitive)
        if len(kept) >= ml_tree_walk.BATCH_SHAPES_KEPT:
            kept.clear()
        kept[key] = tables
        self._derived["last-batch"] = (key, tables)
        return tables

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """Leaf node index reached by every (sample, tree): [N, T]."""
        walk = self._walk_tables()
        if walk is not None:
            return self._leaves_single_mode(X, *walk)
        return self._leaves_general(X)

    def _walkers(self, n: int, width: int):
        """(start nodes, offset of each walker's sample row in the flat input): 1-D over the N x T
        (sample, tree) pairs, kept for the last batch size seen."""
        entry = self._derived.get("walkers")
        if entry is None or entry[0] != (n, width):
            entry = ((n, width), np.tile(self.roots, n), np.repeat(np.arange(n, dtype=np.int64) * width, self.roots.size))
            self._derived["walkers"] = entry
        return entry[1], entry[2]

    def _leaves_single_mode(self, X, compare, children, depth):
        # The walkers form one flat array (1-D fancy indexing is the cheapest numpy has), and the next
        # node is children[2 * node + outcome]: each step is a handful of numpy calls whatever the forest.
        x = np.ascontiguousarray(X, dtype=np.float64)
        n, width = x.shape
        flat = x.ravel()
        cur, offsets = self._walkers(n, width)
        cur = cur.copy()
        any_nan = bool(np.isnan(flat).any())
        feature, threshold, nan_true = self.feature, self.threshold, self.nan_true
        for _ in range(depth):
            value = flat[offsets + feature[cur]]
            go_true = compare(value, threshold[cur])
            if any_nan:
                go_true |= np.isnan(value) & nan_true[cur]
            cur = children[cur + cur + go_true]
        return cur.reshape(n, self.roots.size)

    def _leaves_general(self, X: np.ndarray) -> np.ndarray:
        x = X.astype(np.float64)
        cur = np.broadcast_to(self.roots, (x.shape[0], self.roots.size)).copy()
        rows = np.broadcast_to(np.arange(x.shape[0])[:, None], cur.shape)
        is_leaf = self.mode == LEAF
        while True:
            walking = ~is_leaf[cur]
            if not walking.any():
                return cur
            node = cur[walking]
            value = x[rows[walking], self.feature[node]]
            t = self.threshold[node]
            mode = self.mode[node]
            go_true = np.select(
                [mode == LEQ, mode == LT, mode == GTE, mode == GT, mode == EQ, mode == NEQ],
                [value <= t, value < t, value >= t, value > t, value == t, value != t], False)
            if self.members.shape[1]:
                in_set = (self.members[node] == value[:, None]).any(axis=1)
                go_true = np.where(mode == MEMBER, in_set, go_true)
            # NaN follows the true branch when the node says so; otherwise the comparison decides
            # (false for every mode but BRANCH_NEQ).
            go_true = go_true | (np.isnan(value) & self.nan_true[node])
            cur[walking] = np.where(go_true, self.true_child[node], self.false_child[node])

    def scores(self, X: np.ndarray, n_targets: int, aggregate: str, base_values) -> np.ndarray:
        """Aggregated leaf values per target, base values added: [N, n_targets] float64."""
        x = as_rows(X)
        batch = self._batch_tables(x, n_targets, aggregate)
        if batch is not None and (not batch.nan_sensitive or not np.isnan(x.sum())):
            out = batch.sums(x)
            if aggregate == "AVERAGE":
                out /= self.roots.size
            return out if base_values is None else out + base_values
        leaves = self.leaves(x)
        n_trees = self.roots.size
        node_values, has_value = self._leaf_values(n_targets, aggregate)  # [targets, nodes]
        # [targets, N, T]: the trees are the last, contiguous axis, which numpy reduces fastest
        per_tree = np.take(node_values, leaves, axis=1)
        if aggregate in ("SUM", "AVERAGE"):
            out = per_tree.sum(axis=-1).T
            if aggregate == "AVERAGE":
                out = out / n_trees
        else:
            out = (per_tree.min(axis=-1) if aggregate == "MIN" else per_tree.max(axis=-1)).T
            # A target no reached leaf contributes to scores 0.
            out = np.where(np.take(has_value, leaves, axis=1).any(axis=-1).T, out, 0.0)
        if base_values is not None:
            out = out + base_values
        return out

    def _leaf_values(self, n_targets: int, aggregate: str):
        """Per target and node ([targets, nodes]): the combined weight of that leaf (several entries may
        share a target), and whether any entry gives it one; built once per (targets, aggregate)."""
        key = ("values", n_targets, aggregate)
        if key not in self._derived:
            combine = {"SUM": np.add, "AVERAGE": np.add, "MIN": np.minimum, "MAX": np.maximum}[aggregate]
            start = {"SUM": 0.0, "AVERAGE": 0.0, "MIN": np.inf, "MAX": -np.inf}[aggregate]
            node_values = np.full((self.mode.size, n_targets), start)
            combine.at(node_values, (self.leaf_node, self.leaf_target), self.leaf_weight)
            has_value = np.zeros((self.mode.size, n_targets), bool)
            has_value[self.leaf_node, self.leaf_target] = True
            self._derived[key] = (np.ascontiguousarray(node_values.T), np.ascontiguousarray(has_value.T))
        return self._derived[key]


def _depth(roots, true_child, false_child, interior):
    """Number of steps from the roots to the deepest leaf (None for a cycle through interior nodes)."""
    depth = 0
    frontier = np.unique(roots)
    seen = 0
    while True:
        frontier = frontier[interior[frontier]]
        if frontier.size == 0:
            return depth
        depth += 1
        seen += frontier.size
        if seen > interior.size * 2 + 2:  # a malformed ensemble whose children loop
            return None
        frontier = np.unique(np.concatenate([true_child[frontier], false_child[frontier]]))


def cached_forest(kind: str, attrs: dict, build):
    """``build(attrs)`` once per node (see :mod:`.derived_cache`). Each node's attribute lists are its own
    objects, prepared once by the plan, so the identities of its (required) ``nodes_modes`` and of its
    ``nodes_featureids`` name the node, and with it every other attribute: the key holds those two
    rather than all twenty-odd values (a key of two identities costs half as much to build and hash)."""
    return derived(f"forest-{kind}", (attrs["nodes_modes"], attrs.get("nodes_featureids")), lambda: build(attrs))


def _node_index(tree_ids, node_ids, query_trees, query_nodes):
    """Positions of (tree, node) pairs among the node list, vectorized with a sorted key search."""
    tree_ids, node_ids = np.asarray(tree_ids, np.int64), np.asarray(node_ids, np.int64)
    span = max(int(node_ids.max(initial=0)), int(np.max(query_nodes, initial=0))) + 1
    keys = tree_ids * span + node_ids
    order = np.argsort(keys, kind="stable")
    query = np.asarray(query_trees, np.int64) * span + np.asarray(query_nodes, np.int64)
    pos = np.searchsorted(keys[order], query)
    if pos.size and (np.any(pos >= keys.size) or np.any(keys[order][np.minimum(pos, keys.size - 1)] != query)):
        raise ValueError("tree ensemble refers to a (tree id, node id) pair that has no node")
    return order[pos]


def _legacy_forest(a: dict, prefix: str) -> Forest:
    """Forest from the v1/v3 encoding; ``prefix`` is 'target' (regressor) or 'class' (classifier)."""
    tree_ids, node_ids = a["nodes_treeids"], a["nodes_nodeids"]
    n = len(node_ids)
    values = a.get("nodes_values_as_tensor")
    threshold = np.asarray(values if values is not None else a.get("nodes_values") or np.zeros(n),
                           np.float64).ravel()
    mode = np.array([_MODE_NAMES[m] for m in a["nodes_modes"]], np.int64)
    interior = mode != LEAF
    true_child = np.zeros(n, np.int64)
    false_child = np.zeros(n, np.int64)
    trees = np.asarray(tree_ids, np.int64)
    true_child[interior] = _node_index(tree_ids, node_ids, trees[interior],
                                       np.asarray(a["nodes_truenodeids"], np.int64)[interior])
    false_child[interior] = _node_index(tree_ids, node_ids, trees[interior],
                                        np.asarray(a["nodes_falsenodeids"], np.int64)[interior])
    missing = a.get("nodes_missing_value_tracks_true")
    nan_true = np.zeros(n, bool) if not missing else np.asarray(missing, bool)
    # Roots: the first node listed for each tree id (node ids of a tree start at its root).
    _, first = np.unique(trees, return_index=True)
    weights = a.get(f"{prefix}_weights_as_tensor")
    weights = np.asarray(weights if weights is not None else a.get(f"{prefix}_weights") or [], np.float64)
    leaf_node = _node_index(tree_ids, node_ids, a.get(f"{prefix}_treeids") or [], a.get(f"{prefix}_nodeids") or [])
    return Forest(np.asarray(a.get("nodes_featureids") or np.zeros(n), np.int64), threshold, mode,
                  true_child, false_child, nan_true, np.zeros((n, 0)), np.sort(first).astype(np.int64),
                  np.asarray(leaf_node, np.int64), np.asarray(a.get(f"{prefix}_ids") or [], np.int64), weights)


def _base_values(a):
    """The base values as a float64 array (None when absent, empty or all zeros: skl2onnx writes zeros for
    gradient boosting classifiers, and adding them changes nothing but the sign of a zero score)."""
    tensor, values = a.get("base_values_as_tensor"), a.get("base_values")
    b = np.asarray(tensor if tensor is not None else values if values is not None else [], np.float64).ravel()
    return b if b.size and b.any() else None


def _regressor_forest(a: dict) -> Forest:
    forest = _legacy_forest(a, "target")
    forest.base_values = _base_values(a)
    forest.n_targets = a.get("n_targets") or int(forest.leaf_target.max(initial=0)) + 1
    return forest


@kernel("TreeEnsembleRegressor", since=1, domain=ML)
def tree_ensemble_regressor(X, **a):
    return _regressor_run(cached_forest("target", a, _regressor_forest), a)(X)


@prepares(tree_ensemble_regressor)
def _prepare_regressor(a: dict, constants):
    return _regressor_run(_regressor_forest(a), a)


def _regressor_run(forest: Forest, a: dict):
    """``run(X)`` of a TreeEnsembleRegressor whose forest is built (the plain kernel and its prepared form)."""
    n_targets, aggregate, base, transform = forest.n_targets, a["aggregate_function"], forest.base_values, \
        a["post_transform"]

    def run(X):
        scores = forest.scores(X, n_targets, aggregate, base)
        return (scores if transform == "NONE" else post_transform(scores, transform)).astype(np.float32)
    return run


@kernel("TreeEnsembleClassifier", since=1, domain=ML)
def tree_ensemble_classifier(X, **a):
    return _classifier_run(cached_forest("class", a, _classifier_forest), a)(X)


@prepares(tree_ensemble_classifier)
def _prepare_classifier(a: dict, constants):
    return _classifier_run(_classifier_forest(a), a)


def _classifier_run(forest: Forest, a: dict):
    """``run(X)`` of a TreeEnsembleClassifier whose forest is built."""
    labels, transform, base = forest.labels, a["post_transform"], forest.base_values
    if forest.binary is not None:
        binary = forest.binary
        return lambda X: binary.outputs(forest.scores(X, 1, "SUM", None)[:, 0], transform)

    indexes = labels.dtype == np.int64 and np.array_equal(labels, np.arange(labels.size))  # a label is its index

    def run(X):
        scores = forest.scores(X, labels.size, "SUM", None)
        if base is not None:
            scores += base
        label = argmax_rows(scores)
        if not indexes or label.dtype != np.int64:
            label = labels[label]
        return label, (scores if transform == "NONE" else post_transform(scores, transform)).astype(np.float32)
    return run


def _classifier_forest(a: dict) -> Forest:
    forest = _legacy_forest(a, "class")
    forest.labels = class_labels(a.get("classlabels_strings"), a.get("classlabels_int64s"))
    forest.base_values = _base_values(a)
    if np.unique(forest.leaf_target).size == 1 and forest.labels.size == 2:
        forest.binary = _BinaryClassifier(forest)
        forest.leaf_target = np.zeros_like(forest.leaf_target)  # the voted class's score is the only one
    return forest


class _BinaryClassifier:
    """Two labels but every leaf votes for the same class (onnxruntime's conventions, which converters
    such as skl2onnx rely on).

    The voted class's score s decides the label: labels[1] when s > 0.5 if every weight is
    non-negative (s is then a probability), else when s > 0 (s is a margin).
    * Votes for class 1: class 0 scores 0 and Z = post_transform([0, s]).
    * Votes for class 0 (gradient-boosting style): s (plus base_values[0]) is the positive class's
      score and Z gets both columns: [1 - T(s), T(s)] for probabilities, [L(-s), L(s)] for margins
      under LOGISTIC L, [-s, s] for margins otherwise.
    Each column pair is ``s[:, None] * slope + intercept`` (T, L applied where they belong), so the
    outputs cost a handful of numpy calls.
    """

    __slots__ = ("voted", "probabilities", "shift", "labels", "threshold")

    def __init__(self, forest: Forest):
        self.voted = int(forest.leaf_target[0]) if forest.leaf_target.size else 1
        self.probabilities = bool(np.all(forest.leaf_weight >= 0))
        base = forest.base_values
        self.shift = float(base[0]) if self.voted == 0 and base is not None else None
        self.labels = forest.labels
        self.threshold = 0.5 if self.probabilities else 0.0

    def outputs(self, s: np.ndarray, transform: str):
        """(label, Z) from the voted class's summed score ``s`` [N]."""
        if self.shift is not None:
            s = s + self.shift
        label = self.labels.take(s > self.threshold)  # (take reads the booleans as 0 and 1)
        if self.voted == 1:  # [0, s], transformed as a pair
            z = s[:, None] * _ZERO_ONE
            if transform != "NONE":
                z = post_transform(z, transform)
        elif self.probabilities:  # [1 - T(s), T(s)], written column by column (no broadcast products)
            t = post_transform(s, transform) if transform in ("LOGISTIC", "PROBIT") else s
            z = np.empty((t.size, 2), np.float32)
            np.subtract(1.0, t, out=z[:, 0])
            z[:, 1] = t
            return label, z
        elif transform == "LOGISTIC":  # [L(-s), L(s)] = 1 / (1 + exp([s, -s]))
            z = np.exp(s[:, None] * _PLUS_MINUS)
            z += 1
            z = np.reciprocal(z, out=z)
        else:
            z = s[:, None] * _MINUS_PLUS
        return label, z.astype(np.float32)


_ZERO_ONE, _MINUS_PLUS, _PLUS_MINUS = np.array([0.0, 1.0]), np.array([-1.0, 1.0]), np.array([1.0, -1.0])


@kernel("TreeEnsemble", since=5, domain=ML)
def tree_ensemble(X, **a):
    return _v5_run(cached_forest("v5", a, _v5_forest), a)(X)


@prepares(tree_ensemble)
def _prepare_v5(a: dict, constants):
    return _v5_run(_v5_forest(a), a)


def _v5_run(forest: Forest, a: dict):
    """``run(X)`` of a TreeEnsemble (opset 5) whose forest is built."""
    aggregate = {v: k for k, v in _AGGREGATES.items()}[a["aggregate_function"]]
    n_targets = a.get("n_targets") or int(forest.leaf_target.max(initial=0)) + 1
    transform = _POST_TRANSFORMS[a["post_transform"]]
    return lambda X: post_transform(forest.scores(X, n_targets, aggregate, None), transform).astype(X.dtype)


def _v5_forest(a: dict) -> Forest:
    """Forest from TreeEnsemble's (opset 5) encoding."""
    modes = np.asarray(a["nodes_modes"]).astype(np.int64).ravel()
    n_interior = modes.size
    leaf_weights = np.asarray(a["leaf_weights"]).ravel()
    n_leaves = leaf_weights.size
    # Leaves become nodes after the interior ones: leaf j is node n_interior + j.
    def child(ids, leafs):
        ids, leafs = np.asarray(ids, np.int64), np.asarray(leafs, bool)
        return np.where(leafs, n_interior + ids, ids)

    true_child = np.concatenate([child(a["nodes_truenodeids"], a["nodes_trueleafs"]), np.zeros(n_leaves, np.int64)])
    false_child = np.concatenate([child(a["nodes_falsenodeids"], a["nodes_falseleafs"]),
                                  np.zeros(n_leaves, np.int64)])
    mode = np.concatenate([modes, np.full(n_leaves, LEAF)])
    missing = a.get("nodes_missing_value_tracks_true")
    nan_true = np.zeros(n_interior + n_leaves, bool)
    if missing:
        nan_true[:n_interior] = np.asarray(missing, bool)
    members = np.zeros((n_interior + n_leaves, 0))
    if a.get("membership_values") is not None and np.any(modes == MEMBER):
        members = _membership_sets(np.asarray(a["membership_values"], np.float64).ravel(), modes, n_leaves)
    splits = np.asarray(a["nodes_splits"]).astype(np.float64).ravel()
    forest = Forest(np.concatenate([np.asarray(a["nodes_featureids"], np.int64), np.zeros(n_leaves, np.int64)]),
                    np.concatenate([splits, np.zeros(n_leaves)]), mode, true_child, false_child, nan_true, members,
                    np.asarray(a["tree_roots"], np.int64), n_interior + np.arange(n_leaves),
                    np.asarray(a["leaf_targetids"], np.int64), leaf_weights.astype(np.float64))
    return forest


def _membership_sets(values, modes, n_leaves):
    """[nodes, S] padded sets: the NaN-delimited groups of ``values``, one per BRANCH_MEMBER node in order."""
    groups, current = [], []
    for v in values.tolist():  # attribute decoding (once per call), not per sample
        if np.isnan(v):
            groups.append(current)
            current = []
        else:
            current.append(v)
    if current:
        groups.append(current)
    member_nodes = np.flatnonzero(modes == MEMBER)
    width = max((len(g) for g in groups), default=0)
    sets = np.full((modes.size + n_leaves, width), np.nan)
    for node, g in zip(member_nodes, groups):
        sets[node, :len(g)] = g
    return sets
