"""Optimizer kernels of the ``ai.onnx.preview.training`` domain: Adagrad, Adam, Momentum.

Each call updates any number of tensors. After the scalar learning rate R and update count T, the
variadic inputs are grouped by role, each group listing one entry per optimized tensor: Adagrad
takes X..., G..., H... and returns X_new..., H_new...; Adam takes X..., G..., V..., H... and returns
X_new..., V_new..., H_new...; Momentum takes X..., G..., V... and returns X_new..., V_new....

Gradient (reverse-mode differentiation of the enclosing graph) lives in gradient.py.
"""

import numpy as np

from ..registry import kernel

TRAINING = "ai.onnx.preview.training"


def _groups(tensors, roles: int):
    if len(tensors) % roles:
        raise ValueError(f"expected a multiple of {roles} tensors after R and T, got {len(tensors)}")
    n = len(tensors) // roles
    return [tensors[k * n:(k + 1) * n] for k in range(roles)]


def _flatten(groups, xs):
    """Outputs in role order, each cast back to its tensor's dtype (R and T may be float64/int64)."""
    return tuple(np.asarray(v).astype(x.dtype) for group in groups for v, x in zip(group, xs))


@kernel("Adagrad", since=1, domain=TRAINING)
def adagrad(R, T, *tensors, norm_coefficient, decay_factor, epsilon):
    xs, gs, hs = _groups(tensors, 3)
    rate = R / (1 + T * decay_factor)
    new_x, new_h = [], []
    for x, g, h in zip(xs, gs, hs):
        g_reg = norm_coefficient * x + g
        h_new = h + g_reg * g_reg
        new_h.append(h_new)
        new_x.append(x - rate * g_reg / (np.sqrt(h_new) + epsilon))
    return _flatten([new_x, new_h], xs)


@kernel("Adam", since=1, domain=TRAINING)
def adam(R, T, *tensors, alpha, beta, epsilon, norm_coefficient, norm_coefficient_post):
    xs, gs, vs, hs = _groups(tensors, 4)
    t = int(np.asarray(T).item())
    rate = R * np.sqrt(1 - beta ** t) / (1 - alpha ** t) if t > 0 else R
    new_x, new_v, new_h = [], [], []
    for x, g, v, h in zip(xs, gs, vs, hs):
        g_reg = norm_coefficient * x + g
        v_new = alpha * v + (1 - alpha) * g_reg
        h_new = beta * h + (1 - beta) * g_reg * g_reg
        x_new = x - rate * v_new / (np.sqrt(h_new) + epsilon)
        new_x.append((1 - norm_coefficient_post) * x_new)
        new_v.append(v_new)
        new_h.append(h_new)
    return _flatten([new_x, new_v, new_h], xs)


@kernel("Momentum", since=1, domain=TRAINING)
def momentum(R, T, *tensors, alpha, beta, mode, norm_coefficient):
    xs, gs, vs = _groups(tensors, 3)
    beta_adjusted = beta if int(np.asarray(T).item()) > 0 else 1.0
    new_x, new_v = [], []
    for x, g, v in zip(xs, gs, vs):
        g_reg = norm_coefficient * x + g
        v_new = alpha * v + beta_adjusted * g_reg
        if mode == "nesterov":
            new_x.append(x - R * (g_reg + alpha * v_new))
        elif mode == "standard":
            new_x.append(x - R * v_new)
        else:
            raise ValueError(f"unknown Momentum mode {mode!r}")
        new_v.append(v_new)
    return _flatten([new_x, new_v], xs)
