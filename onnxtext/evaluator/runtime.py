"""The :class:`Evaluator`: runs ONNX models with numpy kernels (or hands them to onnxruntime).

``Evaluator(model).run(output_names, feeds) -> list`` has the call shape of onnxruntime's
``InferenceSession.run``. The model may be a ModelProto, a path to a binary ``.onnx`` or an onnxtext
file, or onnxtext source text. Construction prepares the plan once (see :mod:`.plan`); ``run`` checks
the feeds against the declared input types and runs the plan.

Training models (IR spec, "Training Related Information"): the state variables are the initializers
named by the keys of ``initialization_binding`` and ``update_binding``. :meth:`Evaluator.initialize`
runs the initialization graphs, :meth:`Evaluator.train_step` runs an algorithm graph and applies its
update binding; inference then sees the updated values.
"""

from __future__ import annotations

import os
import time

import numpy as np
import onnx

from .. import dtypes, tensors
from ..errors import EvalError, ModelFileError, OnnxTextError
from .feed_dims import DimensionCheck
from .graph_checks import refuse_reassigned_values
from .optimizer import MAX_LEVEL, check_options
from .plan import (COMPILE_AFTER, GraphPlan, KernelContext, Preparation, attribute_value, prepare_graph,  # noqa: F401
                   schema_defaults)
from .limits import begin_run, end_run
from .run_code import compile_run, plain_feed_types, take_plain_feeds
from .registry import normalize_domain
from .steps import CONTROL, RunControl

ENGINES = ("numpy", "onnxruntime")


# just under glibc's cap on its adaptive mmap threshold (32 MiB on 64-bit systems), see _settle_allocator
_SETTLE_BYTES = (1 << 25) - (1 << 16)
_settled = False


def _settle_allocator() -> None:
    """Allocate and free one untouched 32 MiB block, once per process.

    glibc serves large allocations by fresh mmaps until a freed mmapped block raises its adaptive
    threshold to that block's size (and the heap trim threshold to twice it); each fresh page then
    costs a page fault when first written. Whichever intermediates a model happens to free first set
    that threshold: on ShuffleNet it stayed near 1.4 MiB, so each run faulted in ~680 fresh pages
    (2.7 MiB of step results), measured ~2 ms of a 10-12 ms run on the 2-core test VM. Freeing one
    block of the largest size the threshold adapts to settles it at once, as a program that once
    freed a 32 MiB buffer would have it: results up to 32 MiB then come from the heap, which keeps up
    to 64 MiB free instead of returning it. Elsewhere (other allocators) this is one short-lived
    untouched allocation."""
    global _settled
    if not _settled:
        _settled = True
        try:
            np.empty(_SETTLE_BYTES, np.uint8)  # (freed as soon as created: never written, never paged in)
        except MemoryError:  # (strict overcommit with little memory left: nothing to settle then)
            pass


def load_model(model) -> tuple[onnx.ModelProto, str | None]:
    """(ModelProto, directory for external data) from a ModelProto, bytes, a path or onnxtext text."""
    if isinstance(model, onnx.ModelProto):
        return model, None
    if isinstance(model, (bytes, bytearray)):
        from ..io import load_binary

        return load_binary(bytes(model)), None
    if isinstance(model, os.PathLike) or (isinstance(model, str) and "\n" not in model and os.path.exists(model)):
        from ..io import load  # text or binary by content (onnxtext.io is the one home of file loading)

        path = os.fspath(model)
        return load(path), os.path.dirname(os.path.abspath(path))
    if isinstance(model, str):
        stripped = model.strip()
        if "\n" not in stripped and stripped.endswith((".onnx", ".onnxtext", ".onnxtxt", ".pb")):
            raise ModelFileError(f"{model}: no such file")
        return _parse_text(model), None
    raise EvalError(f"cannot evaluate a {type(model).__name__}: expected a ModelProto, a path or onnxtext text")


def _parse_text(text: str) -> onnx.ModelProto:
    try:
        from ..syntax.parser import parse_model
    except ImportError as e:
        raise EvalError(f"cannot read onnxtext source: the text parser is not available ({e})") from None
    return parse_model(text)


class Evaluator:
    """Runs an ONNX model. ``Evaluator(model).run(output_names, feeds) -> list``.

    ``opsets`` overrides or adds imported opset versions; ``seed`` seeds the random generator used by
    random operators; ``engine="onnxruntime"`` runs the same model with onnxruntime instead (optional
    dependency; inference only). ``threads=N`` limits the BLAS library numpy uses to N threads (see
    :func:`set_blas_threads`: this is process-wide) or, with the onnxruntime engine, the session's
    intra-op threads; without it, runs are timed to choose between the library's count and one
    thread (:mod:`.threads`: two BLAS threads on busy cores can be many times slower).

    ``optimize`` is the optimizer level (:mod:`.optimizer`; default the highest, 0 runs every node
    as its own step with no rewrite and no constant folding: the reference path); ``disable`` names
    rules not to apply (``onnxtext.evaluator.optimizer.rule_names()``). Operators without a kernel
    are found here, all at once, not halfway through a run.
    """

    def __init__(self, model, *, opsets: dict[str, int] | None = None, seed: int | None = None,
                 engine: str = "numpy", threads: int | None = None, optimize: int = MAX_LEVEL,
                 disable=()):
        if engine not in ENGINES:
            raise EvalError(f"unknown engine {engine!r}; expected one of {', '.join(ENGINES)}")
        if threads is not None and (type(threads) is not int or threads < 1):
            raise EvalError(f"threads must be a positive integer, got {threads!r}")
        self.engine = engine
        self.optimize, self.disabled_rules = check_options(optimize, disable)
        self.model, self.base_dir = load_model(model)
        self.rng = np.random.default_rng(seed)
        g = self.model.graph
        self._inits = {t.name for t in g.initializer} | {t.values.name for t in g.sparse_initializer}
        self.input_names = [i.name for i in g.input if i.name not in self._inits]
        self._n_required = len(self.input_names)
        self.output_names = [o.name for o in g.output]
        self._input_types = {i.name: i.type for i in g.input}
        self._dims = DimensionCheck(self._input_types)
        self._plain_feeds = plain_feed_types(self.input_names, self._input_types)
        self._fast_run = None  # run_code.compile_run's function for the usual call, when it covers the model
        self._fast_args = None  # compile_run's arguments until it is called (see the end of __init__)
        if engine == "onnxruntime":
            self._ort = _onnxruntime_session(self.model, model, self.base_dir, threads)
            return
        self._threads = None  # the ThreadChooser timing runs, when the caller did not fix the count
        if threads is not None:
            set_blas_threads(threads)
        else:
            most = _BLAS_INITIAL_THREADS if _blas_functions()[1] is not None else None
            if most is not None and most > 1:
                from .threads import ThreadChooser

                self._threads = ThreadChooser(most, set_blas_threads)
        _settle_allocator()
        self.opsets = {normalize_domain(o.domain): o.version for o in self.model.opset_import}
        if opsets:
            self.opsets.update({normalize_domain(k): v for k, v in opsets.items()})
        self.functions = {(f.domain, f.name, getattr(f, "overload", "")): f for f in self.model.functions}
        from ..checker.recursion import describe_cycle, function_cycles

        cycles = function_cycles(self.model.functions)
        if cycles:  # a call would expand without end
            raise EvalError("; ".join(describe_cycle(c) for c in cycles) + ": recursive functions cannot be run")
        from .availability import describe_missing, missing_operators

        missing = missing_operators(self.model, self.opsets)
        if missing:
            raise EvalError(describe_missing(missing))
        refuse_reassigned_values(self.model.graph)
        self._decoded: dict[int, tuple] = {}
        self._state_names = {b.key for ti in self.model.training_info
                             for b in list(ti.initialization_binding) + list(ti.update_binding)}
        self._state = self._initial_state()
        self._prep = Preparation(self, self.opsets)
        self._plans: dict[tuple, GraphPlan] = {}
        self._main = self._plan_for(None)
        missing = [n for n in self._main.free if n not in self._state]
        if missing:
            raise EvalError(f"graph {g.name!r}: value {missing[0]!r} is used but never defined")
        # the usual call as one generated function (None: the general path), written at the
        # COMPILE_AFTER-th usual call: compiling it costs ~0.25 ms, more than a small model's first runs
        # (the node suite creates an Evaluator per case and runs it once)
        self._usual_calls = 0
        self._fast_args = None if _FLOAT_ERRORS is None else \
            (self._plain_feeds, self._dims, self._main, self._state, self._threads,
             (_FLOAT_ERRORS, _IGNORED_FLOAT_ERRORS))

    # ------------------------------------------------------------------------------------ preparation
    def decode_initializer(self, init: onnx.TensorProto) -> np.ndarray:
        """The numpy value of an initializer, decoded once per TensorProto."""
        entry = self._decoded.get(id(init))
        if entry is None or entry[0] is not init:
            try:
                from .limits import check_tensor_dims

                check_tensor_dims(init.dims, _element_bytes(init.data_type), f"initializer {init.name!r}")
                value = tensors.to_array(init, self.base_dir)
                value.flags.writeable = False  # shared by every plan; kernels' derived data trusts read-only arrays
                entry = self._decoded[id(init)] = (init, value)
            except EvalError:
                raise
            except (OnnxTextError, ValueError) as e:  # data that does not fit its dims and type
                raise EvalError(f"initializer {init.name!r}: {e}") from None
        return entry[1]

    def _plan_for(self, output_names, overridden=()) -> GraphPlan:
        """The plan computing ``output_names`` when the feeds replace the initializers ``overridden``
        (a tuple; usually empty, so everything computed from initializers is folded once)."""
        key = (tuple(output_names) if output_names else None, overridden)
        plan = self._plans.get(key)
        if plan is None:
            outputs = None
            if key[0] is not None and key[0] != tuple(self.output_names):
                outputs = key[0]
            plan = self._plans[key] = prepare_graph(self.model.graph, self._prep, external=self._state_names,
                                                    outputs=outputs, overridden=overridden)
        return plan

    # ------------------------------------------------------------------------------------ inference
    def run(self, output_names, feeds: dict, run_options=None, *, trace=None, timeout: float | None = None) -> list:
        """Values of ``output_names`` (all graph outputs when None) for the given ``feeds`` (name -> value).

        ``trace(step, outputs)`` is called after each executed step, subgraph and function bodies
        included (``step.node``, ``step.path``; ``outputs`` maps names to values; with ``optimize=0``
        every node is a step). ``timeout`` (seconds) stops the run between steps with an EvalError
        naming the node reached, as Ctrl-C does.
        """
        if (output_names is None or output_names == self.output_names) and trace is None and timeout is None:
            fast = self._fast_run  # (every output, as None or as onnxruntime's callers often name them)
            if fast is not None:
                outputs = fast(feeds)
                if outputs is not None:
                    return outputs
            elif self._fast_args is not None:
                self._usual_calls += 1
                if self._usual_calls >= COMPILE_AFTER:
                    self._fast_run, self._fast_args = compile_run(*self._fast_args), None
        if self.engine == "onnxruntime":
            try:
                return self._ort.run(output_names, feeds)
            except Exception as e:  # noqa: BLE001 - onnxruntime's own exception types
                raise EvalError(f"onnxruntime: {e}") from None
        if output_names is None and len(feeds) == self._n_required:
            plan = self._main
        else:  # feeding an initializer listed as an input (a default) needs a plan that did not fold it
            overridden = tuple(sorted(n for n in feeds if n in self._inits)) if len(feeds) > self._n_required else ()
            plan = self._plan_for(output_names, overridden)
        env = plan.bind_outer(self._state)
        if not take_plain_feeds(self._plain_feeds, feeds, env):
            for name, value in feeds.items():
                if name not in self._input_types:
                    raise EvalError(f"{name!r} is not an input of the model (inputs: {', '.join(self.input_names)})")
                env[name] = check_input(name, self._input_types[name], value)
            for name in self.input_names:
                if name not in feeds:
                    raise EvalError(f"missing input {name!r}")
        self._dims.check(env)
        if trace is not None or timeout is not None:
            env[CONTROL] = RunControl(trace, timeout)
        chooser = self._threads
        threads = chooser.begin() if chooser is not None else None
        if threads is not None:
            start = time.perf_counter()
        # inf/nan results are ONNX semantics, not errors: silence numpy's float warnings once per run
        # so kernels need no errstate of their own (a context manager per node costs ~1 us)
        token = _ignore_float_errors()
        begin_run()  # the run's allocation budget (limits.MAX_RUN_ALLOCATION_BYTES)
        try:
            plan.execute(env)
        finally:
            end_run()
            _restore_float_errors(token)
        if threads is not None:
            chooser.record(threads, time.perf_counter() - start)
        try:
            return [env[n] for n in plan.output_names]
        except KeyError as e:
            raise EvalError(f"no value named {e.args[0]!r} was computed") from None

    # ------------------------------------------------------------------------------------ training
    def _initial_state(self) -> dict:
        """State variables pre-initialized from their initializers (main graph, then algorithm graphs)."""
        state = {}
        sources = list(self.model.graph.initializer)
        for ti in self.model.training_info:
            sources += list(ti.algorithm.initializer)
        for init in sources:
            if init.name in self._state_names and init.name not in state:
                state[init.name] = self.decode_initializer(init)
        missing = self._state_names - set(state)
        if missing:
            raise EvalError(f"training binding names {sorted(missing)[0]!r}, which is not an initializer")
        return state

    @property
    def state(self) -> dict:
        """Current values of the training state variables (name -> array)."""
        return dict(self._state)

    def _training_scope(self) -> dict:
        scope = {t.name: self.decode_initializer(t) for t in self.model.graph.initializer}
        scope.update(self._state)
        return scope

    def _run_training_graph(self, index: int, feeds: dict, kind: str) -> dict:
        # keyed by position, not id(graph): protobuf returns a fresh wrapper on each field access, so an
        # id can be reused by a different graph once the old wrapper is freed
        graph = getattr(self.model.training_info[index], kind)
        key = ("training", kind, index)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = prepare_graph(graph, self._prep, external=self._state_names,
                                                    path=f"training_info[{index}].{kind}")
        env = plan.bind_outer(self._training_scope())
        types = {i.name: i.type for i in graph.input}
        for name in plan.input_names:
            if name not in feeds and name not in env:
                raise EvalError(f"{kind} graph: missing input {name!r}")
        for name, value in feeds.items():
            if name not in types:
                raise EvalError(f"{kind} graph: {name!r} is not one of its inputs")
            env[name] = check_input(name, types[name], value)
        with np.errstate(all="ignore"):
            plan.execute(env)
        return {n: env[n] for n in plan.output_names}

    def initialize(self, feeds: dict | None = None) -> None:
        """Run every initialization graph in order and bind its outputs to the state variables."""
        self._require_numpy("initialize")
        for index, ti in enumerate(self.model.training_info):
            if not ti.initialization_binding:
                continue
            out = self._run_training_graph(index, feeds or {}, "initialization")
            for b in ti.initialization_binding:
                self._state[b.key] = out[b.value]

    def train_step(self, feeds: dict, algorithm: int = 0) -> dict:
        """Run training algorithm ``algorithm`` once, apply its update binding; returns its outputs by name."""
        self._require_numpy("train_step")
        if not 0 <= algorithm < len(self.model.training_info):
            raise EvalError(f"the model has {len(self.model.training_info)} training algorithms, "
                            f"no algorithm {algorithm}")
        ti = self.model.training_info[algorithm]
        out = self._run_training_graph(algorithm, feeds, "algorithm")
        for b in ti.update_binding:
            self._state[b.key] = out[b.value]
        return out

    def _require_numpy(self, what):
        if self.engine != "numpy":
            raise EvalError(f"{what} needs the numpy engine (onnxruntime runs inference only)")


# ---------------------------------------------------------------------------------------- input checks


def _element_bytes(data_type: int) -> int:
    """Bytes per element of a stored tensor's type once decoded (at least 1: sub-byte types decode to
    one byte per element; 8 for strings and unknown types, as object pointers), for the limit checked
    before decoding allocates."""
    try:
        kind = dtypes.from_enum(data_type)
    except (KeyError, ValueError, OnnxTextError):
        return 1
    if kind.np is None or kind.kind == "string":
        return 8
    return max(1, np.dtype(kind.np).itemsize)


try:  # numpy >= 2 keeps the float error state in a context variable: set it without building it per run
    from numpy._core._ufunc_config import _extobj_contextvar as _FLOAT_ERRORS

    with np.errstate(all="ignore"):
        _IGNORED_FLOAT_ERRORS = _FLOAT_ERRORS.get()
except (ImportError, AttributeError):  # (older numpy: the public context manager, ~2 us per run)
    _FLOAT_ERRORS = None


def _ignore_float_errors():
    """Silence numpy's float warnings for one run; pass the result to :func:`_restore_float_errors`."""
    if _FLOAT_ERRORS is not None:
        return _FLOAT_ERRORS.set(_IGNORED_FLOAT_ERRORS)
    state = np.errstate(all="ignore")
    state.__enter__()
    return state


def _restore_float_errors(token) -> None:
    if _FLOAT_ERRORS is not None:
        _FLOAT_ERRORS.reset(token)
    else:
        token.__exit__(None, None, None)


def check_input(name: str, tp: onnx.TypeProto, value):
    """``value`` checked against the declared type ``tp`` (element type and rank); may convert scalars."""
    kind = tp.WhichOneof("value")
    if kind == "tensor_type":
        return _check_tensor(name, tp.tensor_type, value)
    if kind == "sequence_type":
        if not isinstance(value, (list, tuple)):
            raise EvalError(f"input {name!r}: expected a sequence (list), got {type(value).__name__}")
        return [_check_nested(f"{name}[{i}]", tp.sequence_type.elem_type, v) for i, v in enumerate(value)]
    if kind == "optional_type":
        return None if value is None else _check_nested(name, tp.optional_type.elem_type, value)
    if kind == "map_type":
        if not isinstance(value, dict):
            raise EvalError(f"input {name!r}: expected a map (dict), got {type(value).__name__}")
        return value
    return value


def _check_nested(name, tp, value):
    return check_input(name, tp, value) if tp.WhichOneof("value") else value


def _check_tensor(name: str, tt, value):
    if not isinstance(value, np.ndarray):
        if isinstance(value, np.generic):
            value = np.asarray(value)
        elif isinstance(value, (int, float, bool, str, list)) and tt.elem_type:
            try:
                value = np.asarray(value, dtype=dtypes.np_dtype(tt.elem_type))
            except (ValueError, TypeError, OverflowError) as e:
                raise EvalError(f"input {name!r}: {value!r} is not a {dtypes.from_enum(tt.elem_type).name} "
                                f"tensor ({e})") from None
        else:
            raise EvalError(f"input {name!r}: expected a numpy array, got {type(value).__name__}")
    if tt.elem_type:
        want = dtypes.from_enum(tt.elem_type)
        if want.kind == "string":
            if value.dtype.kind in "US":
                value = value.astype(object)
            elif value.dtype != object:
                raise EvalError(f"input {name!r}: expected a string tensor, got {value.dtype}")
        elif value.dtype != want.np:
            raise EvalError(f"input {name!r}: expected element type {want.name}, got {value.dtype}")
    if tt.HasField("shape") and len(tt.shape.dim) != value.ndim:
        raise EvalError(f"input {name!r}: expected rank {len(tt.shape.dim)}, got shape {list(value.shape)}")
    return value


# ---------------------------------------------------------------------------------------- onnxruntime
def _onnxruntime_session(model: onnx.ModelProto, original, base_dir, threads=None):
    try:
        import onnxruntime
    except ImportError:
        raise EvalError("engine 'onnxruntime' needs the onnxruntime package (pip install onnxruntime)") from None
    options = onnxruntime.SessionOptions()
    if threads is not None:
        options.intra_op_num_threads = threads
    try:
        if isinstance(original, (str, os.PathLike)) and base_dir is not None and \
                os.fspath(original).endswith(".onnx"):
            return onnxruntime.InferenceSession(os.fspath(original), options, providers=["CPUExecutionProvider"])
        return onnxruntime.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise EvalError(f"onnxruntime cannot load the model: {e}") from None


# ------------------------------------------------------------------------------------------ BLAS threads
# setter names of the OpenBLAS builds numpy ships or links: numpy >= 2 wheels bundle scipy-openblas
# (64-bit ints, prefixed symbols), older wheels a suffixed openblas, distributions the plain one
_BLAS_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
                 "openblas_set_num_threads64_", "openblas_set_num_threads")


def set_blas_threads(threads: int) -> bool:
    """Limit the OpenBLAS library loaded by numpy to ``threads`` threads; False when none is found.

    Process-wide: it affects every numpy matmul of the process, not only this evaluator, and lasts
    until changed again. Why it exists: OpenBLAS worker threads busy-wait between calls, so on a
    machine whose cores are shared (with onnxruntime's own thread pool, or other processes) a CNN's
    hundreds of small matmuls can run several times slower with 2 threads than with 1. The library is
    found among the shared objects mapped into the process (Linux ``/proc/self/maps``); elsewhere, or
    with another BLAS (MKL, Accelerate), set ``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS`` before
    starting Python instead.
    """
    import ctypes
    setter = _blas_functions()[0]
    if setter is None:
        return False
    setter(ctypes.c_int(threads))
    return True


def get_blas_threads() -> int | None:
    """The thread count of numpy's OpenBLAS (None when it cannot be found, see :func:`set_blas_threads`)."""
    getter = _blas_functions()[1]
    return None if getter is None else int(getter())


_BLAS: tuple | None = None
_BLAS_INITIAL_THREADS = 1  # the library's own count when first found (what the thread chooser tries)


def _blas_functions() -> tuple:
    """(setter, getter) of numpy's OpenBLAS thread count, found once per process (None, None if absent)."""
    global _BLAS, _BLAS_INITIAL_THREADS
    if _BLAS is None:
        _BLAS = (None, None)
        for lib in _openblas_libraries():
            for name in _BLAS_SETTERS:
                setter = getattr(lib, name, None)
                if setter is not None:
                    _BLAS = (setter, getattr(lib, name.replace("_set_", "_get_"), None))
                    if _BLAS[1] is not None:
                        _BLAS_INITIAL_THREADS = int(_BLAS[1]())
                    return _BLAS
    return _BLAS


def _openblas_libraries():
    import ctypes
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if len(line.split()) >= 6}
    except OSError:
        return
    for path in sorted(paths):
        base = os.path.basename(path)
        if "openblas" in base.lower() and ".so" in base:
            try:
                yield ctypes.CDLL(path)
            except OSError:
                continue
