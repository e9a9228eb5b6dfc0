"""Activation checkpointing, as ``torch.utils.checkpoint``: run a function without keeping its intermediate
results, and run it again during the backward pass to get its gradients (memory for time).

Both modes are an ``autograd.Function`` whose backward reruns the function with recording on, from the same
random-number state (``preserve_rng_state``), so dropout masks repeat:

- ``use_reentrant=True`` (PyTorch's reentrant form, and its default with a warning): the function's tensor
  arguments are the node's inputs; backward runs a nested ``backward`` over the rerun graph, which adds the
  gradients of every other leaf (parameters, captured tensors) into their ``.grad``. As in PyTorch, no argument
  requiring grad means no gradient at all (with a warning), and ``autograd.grad`` through it raises.
- ``use_reentrant=False``: when the function is a module (or a bound method of one), its parameters are inputs
  of the node too and backward returns their gradients with ``autograd.grad``, so the parameters get gradients
  whether or not an argument requires grad, ``autograd.grad`` and ``create_graph=True`` work through it, and
  keyword arguments are passed on. Another callable falls back to the reentrant form's accumulation, plus an
  input that always records. (PyTorch's non-reentrant form hooks saved tensors; this one does not.)
"""

from __future__ import annotations

import warnings

from .._backend import NAME, _C
from .._C_face import Tensor
from .._grad_mode import enable_grad, no_grad
from .._torch_more_num import get_rng_state, set_rng_state
from ..autograd import backward as _backward
from ..autograd import grad as _grad
from ..autograd.function import Function


def _parameters(function):
    """The parameters of a module or of a bound method's module, else None."""
    owner = function if hasattr(function, "parameters") else getattr(function, "__self__", None)
    params = getattr(owner, "parameters", None)
    if not callable(params):
        return None
    return [p for p in params() if isinstance(p, Tensor)]


def _detached(args):
    """The arguments with each tensor replaced by a detached leaf that requires grad as the tensor does."""
    out = []
    for a in args:
        if isinstance(a, Tensor):
            d = a.detach()
            d.requires_grad_(a.requires_grad)
            out.append(d)
        else:
            out.append(a)
    return out


def _as_tuple(outputs):
    return outputs if isinstance(outputs, tuple) else (outputs,)


class _Checkpoint(Function):
    """forward(ctx, run, nargs, n_params, *tensors): ``run`` reruns the function from ``tensors[:nargs]``."""

    @staticmethod
    def forward(ctx, run, nargs, n_params, *tensors):
        ctx.run, ctx.nargs, ctx.n_params = run, nargs, n_params
        ctx.save_for_backward(*tensors[:nargs])
        ctx.rng = run.rng_state()
        with no_grad():
            return run(tensors[:nargs])

    @staticmethod
    def backward(ctx, *grads):
        run = ctx.run
        inputs = _detached(ctx.saved_tensors)
        with run.rng_at(ctx.rng), enable_grad():
            outs = _as_tuple(run(inputs))
        pairs = [(o, g) for o, g in zip(outs, grads) if isinstance(o, Tensor) and o.requires_grad and g is not None]
        wanted = [x for x in inputs if isinstance(x, Tensor) and x.requires_grad]
        params = run.params if ctx.n_params else []
        if not pairs:
            return (None, None, None) + (None,) * (len(ctx.saved_tensors) + ctx.n_params + run.anchored)
        if run.accumulates:
            if NAME == "c" and not _C._is_checkpoint_valid():
                raise RuntimeError("[checkpoint] Checkpointing is not compatible with .grad() or when an `inputs` "
                                   "parameter is passed to .backward(). Please use .backward() and do not pass its "
                                   "`inputs` argument (or use use_reentrant=False with a module)")
            _backward([o for o, _ in pairs], [g for _, g in pairs])
            got = {id(x): x.grad for x in wanted}
        else:
            targets = wanted + [p for p in params if p.requires_grad]
            res = _grad([o for o, _ in pairs], targets, [g for _, g in pairs], allow_unused=True,
                        create_graph=_C.is_grad_enabled() if NAME == "c" else False) if targets else ()
            got = {id(t): r for t, r in zip(targets, res)}
        arg_grads = [got.get(id(x)) if isinstance(x, Tensor) else None for x in inputs]
        param_grads = [got.get(id(p)) for p in params] if ctx.n_params else []
        return (None, None, None, *arg_grads, *param_grads) + ((None,) if run.anchored else ())


class _Run:
    """The function with its non-tensor arguments and keyword arguments bound, rerun from tensor arguments."""

    def __init__(self, function, args, kwargs, preserve_rng_state, accumulates, params, anchored):
        self.function, self.kwargs = function, kwargs
        self.slots = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        self.args = list(args)
        self.preserve = preserve_rng_state
        self.accumulates, self.params, self.anchored = accumulates, params or [], anchored

    def __call__(self, tensors):
        args = list(self.args)
        for i, t in zip(self.slots, tensors):
            args[i] = t
        return self.function(*args, **self.kwargs)

    def rng_state(self):
        return get_rng_state() if self.preserve else None

    def rng_at(self, state):
        return _RngAt(state)


class _RngAt:
    """Runs a block from a saved random-number state and restores the current one after."""

    def __init__(self, state):
        self.state = state

    def __enter__(self):
        if self.state is not None:
            self.now = get_rng_state()
            set_rng_state(self.state)

    def __exit__(self, *exc):
        if self.state is not None:
            set_rng_state(self.now)
        return False


def checkpoint(function, *args, use_reentrant=None, context_fn=None, determinism_check="default", debug=False,
               early_stop=True, preserve_rng_state=True, **kwargs):
    """Runs ``function(*args, **kwargs)`` without keeping its intermediate results and reruns it in backward
    to compute its gradients (``torch.utils.checkpoint.checkpoint``; see the module's note for the two modes).
    """
    if use_reentrant is None:
        warnings.warn("sneppx_core.utils.checkpoint: the use_reentrant parameter should be passed explicitly; "
                      "without it the reentrant form runs, as in PyTorch", stacklevel=2)
        use_reentrant = True
    if context_fn is not None:
        raise NotImplementedError("[checkpoint] context_fn is not supported")
    if determinism_check not in ("default", "none"):
        raise ValueError(f"[checkpoint] determinism_check must be 'default' or 'none', got {determinism_check!r}")
    tensors = [a for a in args if isinstance(a, Tensor)]
    if NAME != "c" or not _C.is_grad_enabled():  # nothing will be recorded: no rerun to prepare for
        if use_reentrant and kwargs:
            raise ValueError(f"[checkpoint] Unexpected keyword arguments: {','.join(kwargs)}")
        return function(*args, **kwargs)
    if use_reentrant:
        if kwargs:
            raise ValueError(f"[checkpoint] Unexpected keyword arguments: {','.join(kwargs)} (the reentrant form "
                             "takes none; use use_reentrant=False)")
        if not any(t.requires_grad for t in tensors):
            warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)
        run = _Run(function, args, {}, preserve_rng_state, True, None, False)
        return _Checkpoint.apply(run, len(tensors), 0, *tensors)
    params = _parameters(function)
    run = _Run(function, args, kwargs, preserve_rng_state, params is None, params, params is None)
    if params is None:
        with no_grad():  # an input that always records, so that the captured leaves get their gradients
            params = [Tensor(0.0, requires_grad=True)]
        return _Checkpoint.apply(run, len(tensors), 0, *tensors, *params)
    return _Checkpoint.apply(run, len(tensors), len(params), *tensors, *params)


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs a sequence of functions (a ``Sequential`` or a list) in ``segments`` chunks, checkpointing all
    but the last (``torch.utils.checkpoint.checkpoint_sequential``)."""
    fns = list(functions.children()) if hasattr(functions, "children") else list(functions)
    if not isinstance(segments, int) or segments < 1:
        raise ValueError(f"[checkpoint_sequential] segments must be a positive int, got {segments!r}")
    size = max(len(fns) // segments, 1)
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        input = checkpoint(_Chain(fns[start:end + 1]), input, use_reentrant=use_reentrant, **kwargs)
    return _Chain(fns[end + 1:])(input)


class _Chain:
    """Functions applied in turn, with the parameters of those that have any (so it checkpoints as a module)."""

    def __init__(self, fns):
        self.fns = fns

    def __call__(self, x):
        for f in self.fns:
            x = f(x)
        return x

    def parameters(self):
        for f in self.fns:
            yield from (f.parameters() if callable(getattr(f, "parameters", None)) else ())

__all__ = ["checkpoint", "checkpoint_sequential"]
