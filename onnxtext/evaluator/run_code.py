"""The usual call of :meth:`.runtime.Evaluator.run` as one generated function, decided once per model.

The usual call asks for every output, has no trace or timeout, and feeds each required input a numpy
array of exactly its declared element type and rank whose dimensions fit the declared sizes and
symbols. For it, :meth:`~.runtime.Evaluator.run` did, one Python call each: choose the plan, bind the
constants and state, check the feeds' types, check their dimensions (a loop over a table of
constraints), choose the thread count, set numpy's float error state, open the run's allocation
budget, run the plan, close both, build the output list. :func:`compile_run` writes all of that for
one model as straight-line code, with everything known at construction in place: the feed names as
subscripts, each declared dtype and rank as a comparison, each fixed size and each symbol's other
occurrences as a comparison of ``shape`` items, the state names the plan reads, and no thread-chooser
code when the caller fixed the count.

A feed the function does not accept (another type or rank, a size that contradicts the declaration,
a feed too many or missing) makes it return None before anything runs, and the Evaluator takes its
general path, which converts the feed or refuses it with its own message; so the two paths cannot
differ in what they accept or how they word a refusal. String tensors (numpy ``str``/``bytes``
arrays made ``object``), maps and sequences of numeric tensors are taken as the general path's fast
check takes them; a model with an input of another kind (optional, sequences of maps) keeps the
general path. That check (:func:`take_plain_feeds`, for calls naming some outputs or feeding an
initializer) and the table both read (:func:`plain_feed_types`) live here too.
"""

from __future__ import annotations

import time

import numpy as np

from .. import dtypes
from ..errors import EvalError, OnnxTextError
from . import limits


#: the kinds of feed the generated check covers (the ``kind`` of :func:`plain_feed_types`)
TENSOR, STRINGS, MAP, SEQUENCE = range(4)


def plain_tensor_type(tt):
    """``(numpy dtype, rank or -1, kind)`` of a declared tensor type for the fast feed check, or None
    when it does not cover it (no or unknown element type)."""
    if not tt.elem_type:
        return None
    try:
        kind = dtypes.from_enum(tt.elem_type)
    except (KeyError, ValueError, OnnxTextError):  # (an unknown type: check_input words the error)
        return None
    rank = len(tt.shape.dim) if tt.HasField("shape") else -1
    if kind.kind == "string":
        return np.dtype(object), rank, STRINGS
    if kind.np is None:
        return None
    return np.dtype(kind.np), rank, TENSOR


def plain_feed_types(names, types: dict):
    """``(name, numpy dtype, rank or -1, kind)`` for each required input when the fast feed check of
    :func:`take_plain_feeds` and :func:`compile_run` cover every one (tensors with an element type,
    maps, sequences of numeric tensors), else None."""
    plain = []
    for name in names:
        tp = types.get(name)
        which = tp.WhichOneof("value") if tp is not None else None
        if which == "tensor_type":
            entry = plain_tensor_type(tp.tensor_type)
        elif which == "map_type":
            entry = (None, -1, MAP)
        elif which == "sequence_type" and tp.sequence_type.elem_type.WhichOneof("value") == "tensor_type":
            entry = plain_tensor_type(tp.sequence_type.elem_type.tensor_type)
            entry = (entry[0], entry[1], SEQUENCE) if entry is not None and entry[2] == TENSOR else None
        else:
            entry = None
        if entry is None:
            return None
        plain.append((name,) + entry)
    return tuple(plain)


def take_plain_feeds(plain, feeds, env: dict) -> bool:
    """Store ``feeds`` in ``env`` when each is what :func:`.runtime.check_input` would accept unchanged
    or with the one conversion it makes (the general path's check for a call the generated one does not
    take: a dict lookup and a few comparisons per input); False when any is not (then check_input
    converts or refuses each feed with its message). ``plain`` is :func:`plain_feed_types`'s table.
    Per input: a numeric tensor must be a numpy array of exactly the declared element type and rank; a
    string tensor an array of ``object`` (kept) or of numpy ``str``/``bytes`` (made ``object``, as
    check_input does) of the declared rank; a map a dict; a sequence a list of numeric arrays of the
    declared element type and rank."""
    if plain is None or len(feeds) != len(plain):
        return False
    ndarray = np.ndarray
    try:
        for name, dtype, rank, kind in plain:
            value = feeds[name]
            if kind == TENSOR:
                if type(value) is not ndarray or value.dtype != dtype or (rank >= 0 and value.ndim != rank):
                    return False
            elif kind == STRINGS:
                if type(value) is not ndarray or (rank >= 0 and value.ndim != rank):
                    return False
                if value.dtype != dtype:  # (dtype is object here)
                    if value.dtype.kind not in "US":
                        return False
                    value = value.astype(object)
            elif kind == MAP:
                if type(value) is not dict:
                    return False
            else:  # SEQUENCE of numeric tensors
                if type(value) is not list:
                    return False
                for item in value:
                    if type(item) is not ndarray or item.dtype != dtype or (rank >= 0 and item.ndim != rank):
                        return False
                value = list(value)  # (check_input builds a new list too: the caller's stays theirs)
            env[name] = value
    except KeyError:
        return False
    return True


def _missing_output(name) -> EvalError:
    return EvalError(f"no value named {name!r} was computed")


def compile_run(feed_types, dims, plan, state: dict, chooser, float_errors):
    """``run(feeds) -> list or None`` for one model (see the module docstring), or None when an input is
    of a kind it does not cover or a name is not an exact ``str``.

    ``feed_types`` is ``(name, dtype, rank or -1, kind)`` per required input (as
    :func:`plain_feed_types` gives them), None when one is of a kind not covered;
    ``dims`` the model's :class:`.feed_dims.DimensionCheck`; ``plan`` the main plan;
    ``state`` the Evaluator's training-state dict (read at each run: training updates it); ``chooser``
    its ThreadChooser or None; ``float_errors`` the ``(context variable, value ignoring every float
    error)`` pair of numpy's error state."""
    if feed_types is None:
        return None
    names = [n for n, *_ in feed_types]
    constraints = dims.constraints
    names += [n for n, _ in constraints] + list(plan.free) + list(plan.output_names)
    if any(type(n) is not str for n in names):  # (names enter the code as reprs of exact strs only)
        return None
    var, ignored = float_errors
    base = dict(plan.constants)
    base[""] = None
    glob = {"ndarray": np.ndarray, "copy": base.copy, "state": state, "execute": plan.execute,
            "run_in_scope": plan.run_in_scope, "set_errors": var.set, "reset_errors": var.reset,
            "IGNORED": ignored, "budget": limits.current_run,
            "chooser": chooser, "dims": dims.check, "clock": time.perf_counter, "_missing": _missing_output}
    lines = ["def run(feeds):", f"    if len(feeds) != {len(feed_types)}: return None"]
    local = {}
    if feed_types:
        lines.append("    try:")
        for i, (name, dtype, rank, _) in enumerate(feed_types):
            local[name] = f"a{i}"
            lines.append(f"        a{i} = feeds[{name!r}]")
        lines.append("    except KeyError: return None")
    converted = False  # (a feed the run takes converted: the plan runs on a dict of the values taken)
    for i, (name, dtype, rank, kind) in enumerate(feed_types):
        glob[f"d{i}"] = dtype
        ranked = f" or a{i}.ndim != {rank}" if rank >= 0 else ""
        if kind == TENSOR:
            lines.append(f"    if type(a{i}) is not ndarray{ranked}: return None")
            lines.append(f"    if a{i}.dtype is not d{i} and a{i}.dtype != d{i}: return None")
        elif kind == STRINGS:  # object arrays as they are, numpy str/bytes arrays made object (as check_input does)
            lines.append(f"    if type(a{i}) is not ndarray{ranked}: return None")
            lines.append(f"    if a{i}.dtype != d{i}:")
            lines.append(f"        if a{i}.dtype.kind not in 'US': return None")
            lines.append(f"        a{i} = a{i}.astype(object)")
            converted = True
        elif kind == MAP:
            lines.append(f"    if type(a{i}) is not dict: return None")
        else:  # SEQUENCE of numeric tensors: a new list (as check_input makes: the caller's stays theirs)
            ranked = f" or t.ndim != {rank}" if rank >= 0 else ""
            lines.append(f"    if type(a{i}) is not list: return None")
            lines.append(f"    for t in a{i}:")
            lines.append(f"        if type(t) is not ndarray{ranked} or t.dtype != d{i}: return None")
            lines.append(f"    a{i} = list(a{i})")
            converted = True
    symbols: dict = {}
    # an initializer listed as an input with a declared shape is checked too, as the general path does
    # (its value may give a symbol the feeds share): then the table's own check runs on the bound values
    whole = any(name not in local for name, _ in constraints)
    for name, axes in ([] if whole else constraints):
        lines.append(f"    s = {local[name]}.shape")
        for axis, size, symbol in axes:  # (the rank is checked above, and every constrained axis is below it)
            if size is not None:
                lines.append(f"    if s[{axis}] != {size}: return None")
            if symbol is not None:
                if symbol in symbols:
                    lines.append(f"    if s[{axis}] != {symbols[symbol]}: return None")
                else:
                    symbols[symbol] = f"n{len(symbols)}"
                    lines.append(f"    {symbols[symbol]} = s[{axis}]")
    # without state or a shape check on bound values the plan runs on the feeds themselves
    # (GraphPlan.run_in_scope: no dict of values per run once it is compiled)
    scoped = not plan.free and not whole
    if scoped and converted:
        lines.append(f"    feeds = {{{', '.join(f'{n!r}: a{i}' for i, (n, *_) in enumerate(feed_types))}}}")
    if not scoped:
        lines.append("    e = copy()")
        lines.extend(f"    e[{n!r}] = state[{n!r}]" for n in plan.free)
        lines.extend(f"    e[{name!r}] = a{i}" for i, (name, *_) in enumerate(feed_types))
    if whole:
        lines.append("    dims(e)")
    if chooser is not None:
        lines.append("    threads = chooser.begin()")
        lines.append("    if threads is not None: start = clock()")
    # inf/nan results are ONNX semantics, not errors: numpy's float warnings are off for the run (and
    # the caller's state back after it); the allocation budget is the run's (limits.begin_run/end_run)
    run = ["        execute(e)"] if not scoped else \
        ["        out = run_in_scope(feeds)", "    except KeyError as k:", "        raise _missing(k.args[0]) from None"]
    lines += ["    token = set_errors(IGNORED)", "    budget.used = 0", "    try:", *run,
              "    finally:", "        budget.used = None", "        reset_errors(token)"]
    if chooser is not None:
        lines.append("    if threads is not None: chooser.record(threads, clock() - start)")
    if scoped:
        lines.append("    return out")
    else:
        outs = ", ".join(f"e[{n!r}]" for n in plan.output_names)
        lines += ["    try:", f"        return [{outs}]", "    except KeyError as k:",
                  "        raise _missing(k.args[0]) from None"]
    code = compile("\n".join(lines) + "\n", "<onnxtext run>", "exec")
    exec(code, glob)  # noqa: S102 - code generated above from the model's names (reprs) and numbers
    return glob["run"]
