"""Spatial sampling kernels: GridSample (N-D), AffineGrid, RoiAlign, NonMaxSuppression.

GridSample gathers, for each corner of the interpolation window (2**r for linear, 4**r for cubic, one
for nearest), every output position at once, so Python only loops over the window corners.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..registry import kernel

_CUBIC_A = -0.75  # GridSample's cubic kernel coefficient (the spec follows PyTorch's bicubic)


def _unnormalize(g, size, align_corners):
    """Grid values in [-1, 1] to pixel coordinates along an axis of ``size`` pixels."""
    if align_corners:
        return (g + 1) / 2 * (size - 1)
    return ((g + 1) * size - 1) / 2


def _reflect(x, size, align_corners):
    """Reflect coordinates into the sampleable range, bouncing off the borders as often as needed."""
    low, high = (0.0, size - 1.0) if align_corners else (-0.5, size - 0.5)
    span = high - low
    if span <= 0:
        return np.zeros_like(x)
    distance = np.abs(x - low)
    flips = np.floor(distance / span)
    extra = distance - flips * span
    return np.where(flips % 2 == 0, low + extra, high - extra)


def _pad_coordinate(x, size, padding_mode, align_corners):
    if padding_mode == "border":
        return np.clip(x, 0, size - 1)
    if padding_mode == "reflection":
        return np.clip(_reflect(x, size, align_corners), 0, size - 1)
    return x


def _cubic_weights(t):
    """Weights of the taps at offsets -1, 0, 1, 2 from floor(x), for fractional part t."""
    a = _CUBIC_A

    def near(d):
        return ((a + 2) * d - (a + 3)) * d * d + 1

    def far(d):
        return ((a * d - 5 * a) * d + 8 * a) * d - 4 * a

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


@kernel("GridSample", since=16)
def grid_sample(x, grid, align_corners=0, mode="linear", padding_mode="zeros"):
    mode = {"bilinear": "linear", "bicubic": "cubic"}.get(mode, mode)
    n, channels = x.shape[:2]
    spatial = x.shape[2:]
    rank = len(spatial)
    out_spatial = grid.shape[1:-1]
    work = np.float64 if x.dtype == np.float64 else np.float32
    # grid[..., 0] addresses the last (innermost) spatial axis, grid[..., r-1] the first one
    coords = [_unnormalize(grid[..., rank - 1 - d].astype(np.float64), spatial[d], align_corners)
              for d in range(rank)]
    batch = np.arange(n).reshape((n,) + (1,) * len(out_spatial))
    per_axis = []  # for each axis: list of (index array, weight array) taps
    for d, c in enumerate(coords):
        size = spatial[d]
        if mode == "nearest":
            c = _pad_coordinate(c, size, padding_mode, align_corners)
            per_axis.append([(np.rint(c), np.ones_like(c))])  # rint rounds halves to even
        elif mode == "linear":
            c = _pad_coordinate(c, size, padding_mode, align_corners)
            base = np.floor(c)
            t = c - base
            per_axis.append([(base, 1 - t), (base + 1, t)])
        elif mode == "cubic":
            # cubic pads each tap position, not the sampling coordinate
            base = np.floor(c)
            weights = _cubic_weights(c - base)
            per_axis.append([(_pad_coordinate(base + k - 1, size, padding_mode, align_corners)
                              if padding_mode != "zeros" else base + k - 1, w) for k, w in enumerate(weights)])
        else:
            raise ValueError(f"unsupported GridSample mode {mode!r}")
    out = np.zeros((n,) + tuple(out_spatial) + (channels,), dtype=work)
    for corner in itertools.product(*per_axis):
        weight = np.ones(coords[0].shape)
        index = []
        for d, (pos, w) in enumerate(corner):
            pos = np.rint(pos)  # integral already; reflected cubic taps may carry rounding noise
            inside = (pos >= 0) & (pos <= spatial[d] - 1)
            weight = weight * np.where(inside, w, 0.0)  # zeros padding: outside taps add nothing
            index.append(np.clip(pos, 0, spatial[d] - 1).astype(np.int64))
        values = np.moveaxis(x, 1, -1)[(batch,) + tuple(index)]  # (n, *out_spatial, channels)
        out += (values * weight[..., None]).astype(work)
    return np.ascontiguousarray(np.moveaxis(out, -1, 1)).astype(x.dtype)


@kernel("AffineGrid", since=20)
def affine_grid(theta, size, align_corners=0):
    dims = [int(v) for v in np.asarray(size).reshape(-1)]
    n, spatial = dims[0], dims[2:]

    def positions(count):
        if align_corners:
            return np.linspace(-1, 1, count) if count > 1 else np.zeros(1)
        return (np.arange(count) * 2 + 1) / count - 1

    # homogeneous base grid with x (innermost axis) first: (x, y[, z], 1)
    axes = [positions(s) for s in spatial]
    mesh = np.meshgrid(*axes, indexing="ij")
    base = np.stack([m for m in reversed(mesh)] + [np.ones_like(mesh[0])], axis=-1)
    grid = np.einsum("...k,njk->n...j", base, theta.astype(np.float64))
    return grid.astype(theta.dtype).reshape([n] + spatial + [len(spatial)])


def _bilinear_taps(y, x, height, width):
    """RoiAlign's bilinear taps: 4 (row, col, weight) triples with samples beyond -1 or size zeroed."""
    valid = (y >= -1.0) & (y <= height) & (x >= -1.0) & (x <= width)
    y, x = np.maximum(y, 0), np.maximum(x, 0)
    y_low, x_low = np.floor(y).astype(np.int64), np.floor(x).astype(np.int64)
    # at the last row/column both taps collapse onto it
    y_edge, x_edge = y_low >= height - 1, x_low >= width - 1
    y_low, x_low = np.where(y_edge, height - 1, y_low), np.where(x_edge, width - 1, x_low)
    y, x = np.where(y_edge, y_low, y), np.where(x_edge, x_low, x)
    y_high, x_high = np.where(y_edge, y_low, y_low + 1), np.where(x_edge, x_low, x_low + 1)
    ly, lx = y - y_low, x - x_low
    hy, hx = 1 - ly, 1 - lx
    return [(y_low, x_low, hy * hx * valid), (y_low, x_high, hy * lx * valid),
            (y_high, x_low, ly * hx * valid), (y_high, x_high, ly * lx * valid)]


def _roi_align(x, rois, batch_indices, mode, output_height, output_width, sampling_ratio, spatial_scale,
               half_pixel):
    num_rois = rois.shape[0]
    channels, height, width = x.shape[1:]
    out = np.zeros((num_rois, channels, output_height, output_width), dtype=np.float64)
    offset = 0.5 if half_pixel else 0.0
    for r in range(num_rois):  # the sampling grid size depends on each RoI's extent
        x1, y1, x2, y2 = (float(v) * spatial_scale - offset for v in rois[r])
        roi_w, roi_h = x2 - x1, y2 - y1
        if not half_pixel:  # legacy mode forces RoIs to be at least one pixel
            roi_w, roi_h = max(roi_w, 1.0), max(roi_h, 1.0)
        bin_h, bin_w = roi_h / output_height, roi_w / output_width
        grid_h = sampling_ratio if sampling_ratio > 0 else int(np.ceil(roi_h / output_height))
        grid_w = sampling_ratio if sampling_ratio > 0 else int(np.ceil(roi_w / output_width))
        # sample rows (output_height, grid_h) and columns (output_width, grid_w)
        ys = y1 + np.arange(output_height)[:, None] * bin_h + (np.arange(grid_h)[None, :] + 0.5) * bin_h / grid_h
        xs = x1 + np.arange(output_width)[:, None] * bin_w + (np.arange(grid_w)[None, :] + 0.5) * bin_w / grid_w
        yy = ys[:, None, :, None] + np.zeros((1, output_width, 1, grid_w))
        xx = xs[None, :, None, :] + np.zeros((output_height, 1, grid_h, 1))
        image = x[int(batch_indices[r])].astype(np.float64)
        terms = [image[:, row, col] * w for row, col, w in _bilinear_taps(yy, xx, height, width)]
        if mode == "avg":
            out[r] = sum(terms).sum(axis=(-2, -1)) / max(grid_h * grid_w, 1)
        else:  # max: the largest weighted tap over all samples of the bin
            out[r] = np.max(np.stack(terms), axis=0).max(axis=(-2, -1))
    return out.astype(x.dtype)


@kernel("RoiAlign", since=10)
def roi_align_10(x, rois, batch_indices, mode="avg", output_height=1, output_width=1, sampling_ratio=0,
                 spatial_scale=1.0):
    return _roi_align(x, rois, batch_indices, mode, output_height, output_width, sampling_ratio, spatial_scale,
                      half_pixel=False)


@kernel("RoiAlign", since=16)
def roi_align(x, rois, batch_indices, coordinate_transformation_mode="half_pixel", mode="avg", output_height=1,
              output_width=1, sampling_ratio=0, spatial_scale=1.0):
    return _roi_align(x, rois, batch_indices, mode, output_height, output_width, sampling_ratio, spatial_scale,
                      half_pixel=coordinate_transformation_mode == "half_pixel")


def _corners(boxes, center_point_box):
    """(y1, x1, y2, x2) with y1 <= y2 and x1 <= x2, from either box format."""
    if center_point_box:
        xc, yc, w, h = boxes.T
        return yc - h / 2, xc - w / 2, yc + h / 2, xc + w / 2
    a, b, c, d = boxes.T
    return np.minimum(a, c), np.minimum(b, d), np.maximum(a, c), np.maximum(b, d)


@kernel("NonMaxSuppression", since=10)
def non_max_suppression(boxes, scores, max_output_boxes_per_class=None, iou_threshold=None,
                        score_threshold=None, center_point_box=0):
    limit = 0 if max_output_boxes_per_class is None else int(np.asarray(max_output_boxes_per_class).reshape(-1)[0])
    iou_limit = 0.0 if iou_threshold is None else float(np.asarray(iou_threshold).reshape(-1)[0])
    selected = []
    for b in range(boxes.shape[0]):
        y1, x1, y2, x2 = (v.astype(np.float64) for v in _corners(boxes[b], center_point_box))
        areas = (y2 - y1) * (x2 - x1)
        for c in range(scores.shape[1]):
            s = scores[b, c].astype(np.float64)
            order = np.argsort(-s, kind="stable")  # highest score first, ties by lower index
            if score_threshold is not None:
                order = order[s[order] > float(np.asarray(score_threshold).reshape(-1)[0])]
            kept = 0
            while order.size and kept < limit:
                best, rest = order[0], order[1:]
                selected.append((b, c, best))
                kept += 1
                inter = (np.clip(np.minimum(y2[best], y2[rest]) - np.maximum(y1[best], y1[rest]), 0, None) *
                         np.clip(np.minimum(x2[best], x2[rest]) - np.maximum(x1[best], x1[rest]), 0, None))
                union = areas[best] + areas[rest] - inter
                ok = (areas[best] > 0) & (areas[rest] > 0) & (union > 0)
                iou = np.where(ok, inter / np.where(union > 0, union, 1), 0.0)
                order = rest[iou <= iou_limit]  # strictly greater IoU suppresses
    return np.array(selected, dtype=np.int64).reshape(-1, 3)
