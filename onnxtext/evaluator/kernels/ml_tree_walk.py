"""The small-batch walk of a single-mode tree ensemble (:class:`BatchWalk`), used by :mod:`.ml_tree`.

sklearn's forests compare every interior node with one mode (BRANCH_LEQ), so a walker's step is
``node = children[2 * node + compare(x[feature[node]], threshold[node])]`` with leaves looping onto
themselves. For a batch of a few rows the cost is the number of numpy calls, not the work. Every walker
(sample, tree) starts at its tree's root, so the top three levels are one block step whose nodes are
fixed per batch shape: the seven top nodes are compared at once, the outcomes packed into a byte, and a
table of 256 entries per tree gives the node reached (five numpy calls for three levels). Below, the walk
takes one level at a time (six calls) over tables laid out per (sample, node slot). Blocks further down
were measured too: their nodes differ per walker, and gathering [walkers, 8] tables, adding the rows'
offsets and packing costs as much as three single levels (6.7 against 6.4 us on 140 walkers).

:mod:`.ml_tree` decides when the batch walk applies (one comparison mode, SUM/AVERAGE, NaN only where the
comparison already sends it, tables within ``BATCH_TABLE_BYTES``); tests/test_kernels_ml.py checks every
form here bit for bit against its per-walker walk.
"""

from __future__ import annotations

import numpy as np

#: Largest tables (bytes) :class:`BatchWalk` builds for one batch shape; larger batches take the
#: walk of :meth:`Forest._leaves_single_mode`, whose tables do not grow with the batch. Measured on the
#: corpus' forests (20 trees of depth 6, 90 of depth 3 with 3 classes): the batch walk takes 0.6-0.75x
#: the time up to about 1 MB of tables (7 rows), 0.8x / 1.6x at 4 MB (32 rows), 1.7-3.2x at 13 MB,
#: its gathers then missing the caches.
BATCH_TABLE_BYTES = 2 << 20

#: Batch shapes whose :class:`BatchWalk` tables a forest keeps at once (so at most this many times
#: ``BATCH_TABLE_BYTES`` per node).
BATCH_SHAPES_KEPT = 4

#: Levels of the first block (at most 3: the 7 nodes of a tree's top fit one byte of outcomes); 0 walks
#: one level at a time from the roots. Measured on the corpus' forests, 7 rows (other processes running):
#: 40 trees of depth 3 (the whole walk one block) 7.6 against 13.3 us, 90 trees of depth 3 with 3
#: classes 13.2 against 21.2 us, 20 trees of depth 6 15.7 against 18.7 us.
BLOCK_LEVELS = 3

#: Largest table of leaf values per key (targets x trees x 256 float64) a forest walked in one block keeps;
#: over it (many trees and classes, a batch of one row) the block stops one level short and the last level
#: reads the values per slot, within ``BATCH_TABLE_BYTES``.
BLOCK_VALUES_BYTES = 4 << 20

#: The one-level walk compares every slot at once when there are at most this many slots per level left
#: after the first block: the comparisons of all slots against the three numpy calls they save per level.
#: Measured on the corpus' 20-tree forests of depth 6 (3 levels left, other processes running): 4200 slots
#: (one row) 12.7 against 10.3 us, 2248 slots 14.0 against 13.4 us; without the block, 2248 slots over 6
#: levels 13.5 against 15.0 us.
MATRIX_SLOTS_PER_LEVEL = 500


def block(roots: np.ndarray, children: np.ndarray, levels: int):
    """(nodes [R, 8], reached [R, 256]) of ``levels`` (1-3) levels below each of ``roots`` as one step:
    ``nodes[r]`` are the block's top nodes in heap order (position p's false and true children at 2p + 1,
    2p + 2; positions past ``2^levels - 1`` repeat the root and are never read), and ``reached[r, byte]``
    the node a walker reaches when bit p of ``byte`` is the outcome of position p's comparison.
    ``children`` is the walk's [2M] table (node n: 2n false, 2n + 1 true; leaves loop onto themselves, so
    a path that meets a leaf early stays on it)."""
    positions = [roots]
    for p in range(1, 2 ** levels - 1):
        positions.append(children[2 * positions[(p - 1) // 2] + (p - 1) % 2])
    nodes = np.stack(positions + [roots] * (8 - len(positions)), axis=1)
    byte = np.arange(256, dtype=np.int64)
    node = np.repeat(roots[:, None], 256, axis=1)
    position = np.zeros(256, np.int64)
    for _ in range(levels):
        outcome = (byte >> position) & 1
        node = children[2 * node + outcome]
        position = 2 * position + 1 + outcome
    return nodes, node


class BatchWalk:
    """The single-mode walk of one batch shape: :meth:`sums` gives every sample's leaf values summed
    over the trees.

    The first block (:func:`block`) is per walker (sample, tree): ``first_feature`` / ``first_threshold``
    [N * T, 8] hold the flat input position and threshold of each walker's top nodes, ``first_key`` 256
    times its tree, and the key plus the byte of outcomes indexes either the leaf values
    (``edge_values`` [targets, T * 256], when the block is the whole depth) or ``first_reached``, the
    node slot reached, to which ``row_slot`` adds the sample's first slot.

    The walk then goes on one level at a time over slots ``d = sample * 2M + 2 * node`` of the whole
    batch: ``d = child[d + go_true]`` with ``go_true = compare(x_flat[feature[d]], threshold[d])``, four
    gathers, a comparison and an addition, none of them adding per-sample offsets. The last step reads
    the value of the leaf it goes to (``edge_values`` per slot) instead of its slot, and the sum over the
    trees is one reduction. When the slots are few against the depth (at most ``MATRIX_SLOTS_PER_LEVEL``
    per level), every slot's comparison is made at once first and a step is ``d = child[d +
    compared[d]]``: three calls instead of six. Comparisons run in the input's float32 when every
    threshold is a float32 value (what skl2onnx writes), so no float64 copy of the input is made;
    otherwise in float64.
    """

    __slots__ = ("dtype", "compare", "shape", "nan_sensitive", "first_feature", "first_threshold", "first_key",
                 "first_reached", "row_slot", "depth", "feature", "threshold", "child", "edge_values", "matrix")

    def __init__(self, forest, x: np.ndarray, walk, node_values: np.ndarray, nan_sensitive: bool):
        compare, children, depth = walk
        n, width = x.shape
        trees, m = forest.roots.size, forest.mode.size
        threshold = forest.threshold
        exact32 = x.dtype == np.float32 and bool(np.all(threshold.astype(np.float32) == threshold))
        self.dtype = np.dtype(np.float32) if exact32 else np.dtype(np.float64)
        self.compare, self.shape = compare, (n, trees, node_values.shape[0])
        # NaN goes where the comparison sends it (false, true for NEQ) unless a node tracks missing values
        self.nan_sensitive = nan_sensitive
        slots = np.arange(n, dtype=np.int64)[:, None] * (2 * m)  # first slot of each sample
        self.first_feature = None
        levels = min(BLOCK_LEVELS, depth)
        if levels == depth and node_values.shape[0] * trees * 256 * 8 > BLOCK_VALUES_BYTES:
            levels = min(levels, depth - 1)  # the leaf values per key would be too large: one level after
        if levels:
            first_nodes, reached = _first_block(forest, children, levels)
            rows = np.arange(n, dtype=np.int64)[:, None, None] * width
            self.first_feature = (rows + forest.feature[first_nodes]).reshape(-1, 8)
            self.first_threshold = np.tile(threshold[first_nodes].astype(self.dtype), (n, 1))
            self.first_key = np.tile(np.arange(trees, dtype=np.int64) * 256, n)
            depth -= levels
            self.depth = depth
            if not depth:  # one block: the values of the leaves reached, per key
                self.edge_values = _leaf_values_by_key(forest, node_values, reached)
                return
            self.first_reached = 2 * reached  # the walk goes on from these slots
            self.row_slot = np.repeat(slots[:, 0], trees)
        else:
            self.first_reached = (slots + 2 * forest.roots).ravel()  # the start slots
        self.depth = depth
        self.feature = (np.arange(n, dtype=np.int64)[:, None] * width + np.repeat(forest.feature, 2)).ravel()
        self.threshold = np.tile(np.repeat(threshold.astype(self.dtype), 2), n)
        self.child = (slots + 2 * children).ravel()  # children[2n + g] is node n's child for outcome g
        # [targets, 2M]: the value of the node each edge leads to (targets first: take along the last
        # axis and a sum over the contiguous trees axis cost a fraction of gathering [N * T, targets] rows)
        values = node_values[:, children]
        self.edge_values = np.tile(values[0], n) if values.shape[0] == 1 else np.tile(values, (1, n))
        self.matrix = self.feature.size <= MATRIX_SLOTS_PER_LEVEL * depth

    def sums(self, x: np.ndarray) -> np.ndarray:
        """[N, targets] float64: the leaf values of every tree summed per sample."""
        flat = x.astype(self.dtype, copy=False).ravel()
        compare = self.compare
        if self.first_feature is not None:
            d = np.packbits(compare(flat.take(self.first_feature), self.first_threshold).ravel(),
                            bitorder="little").astype(np.int64)  # the byte of each walker's outcomes
            d += self.first_key
            if self.depth:
                d = self.first_reached.take(d)
                d += self.row_slot
        else:
            d = self.first_reached
        if self.depth:
            feature, threshold, child = self.feature, self.threshold, self.child
            if self.matrix:
                compared = compare(flat[feature], threshold)
                for _ in range(self.depth - 1):
                    d = child[d + compared[d]]
                d = d + compared[d]
            else:
                for _ in range(self.depth - 1):
                    d = child[d + compare(flat[feature[d]], threshold[d])]
                d = d + compare(flat[feature[d]], threshold[d])
        n, trees, targets = self.shape
        if targets == 1:
            values = self.edge_values.take(d).reshape(n, trees)
            return values if trees == 1 else values.sum(axis=1, keepdims=True)  # (one tree: nothing to add)
        values = self.edge_values.take(d, axis=1)
        return values.T if trees == 1 else values.reshape(targets, n, trees).sum(axis=2).T


def _first_block(forest, children: np.ndarray, levels: int):
    """:func:`block` of the forest's roots (nodes [T, 8], reached [T * 256]), built once per forest."""
    key = ("first-block", levels)
    kept = forest._derived.get(key)
    if kept is None:
        nodes, reached = block(forest.roots, children, levels)
        kept = forest._derived[key] = (nodes, reached.reshape(-1))
    return kept


def _leaf_values_by_key(forest, node_values: np.ndarray, reached: np.ndarray) -> np.ndarray:
    """The value of the leaf each key reaches, per target ([targets, keys], or [keys] for one target),
    kept per forest and value table."""
    key = ("values-by-key", id(node_values), id(reached))
    kept = forest._derived.get(key)
    if kept is None or kept[0] is not node_values or kept[1] is not reached:
        values = np.ascontiguousarray(node_values[:, reached])
        kept = forest._derived[key] = (node_values, reached, values[0] if values.shape[0] == 1 else values)
    return kept[2]
