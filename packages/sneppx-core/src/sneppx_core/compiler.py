"""``torch.compile`` and ``torch.compiler``: SneppX runs eagerly, so compiling returns the code unchanged.

PyTorch's ``torch.compile`` traces a module or function into fused kernels with the same results as eager
execution. SneppX has no graph compiler: :func:`compile` checks its arguments and returns the module or function
itself, so programs that compile their model (``model = torch.compile(model)``, ``@torch.compile``) run on
SneppX's eager kernels and give the eager results.
"""

from __future__ import annotations

_MODES = (None, "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")


def compile(model=None, *, fullgraph=False, dynamic=None, backend="inductor", mode=None, options=None,  # noqa: A001
            disable=False):
    """Returns ``model`` (a module or a callable) unchanged, after checking the arguments as PyTorch does;
    without ``model``, a decorator doing the same."""
    if mode is not None and options is not None:
        raise RuntimeError("Either mode or options can be specified, but both can't be specified at the same time.")
    if mode not in _MODES:
        raise RuntimeError(f"[compile] unknown mode {mode!r}; PyTorch's modes are {', '.join(map(str, _MODES[1:]))}")
    if not (isinstance(backend, str) or callable(backend)):
        raise TypeError(f"[compile] backend must be a name or a callable, got {type(backend).__name__}")
    if model is None:
        return lambda m: compile(m, fullgraph=fullgraph, dynamic=dynamic, backend=backend, mode=mode,
                                 options=options, disable=disable)
    if not callable(model):
        raise RuntimeError(f"[compile] model must be a module or a callable, got {type(model).__name__}")
    return model


def is_compiling() -> bool:
    """False: SneppX never runs code under a compiler."""
    return False


def is_dynamo_compiling() -> bool:
    """False: SneppX never runs code under a compiler."""
    return False


def disable(fn=None, recursive=True, *, reason=None):
    """Marks ``fn`` as not to be compiled: returns it unchanged (a decorator when ``fn`` is None)."""
    return (lambda f: f) if fn is None else fn


def reset() -> None:
    """Clears compilation caches: there are none."""


def allow_in_graph(fn):
    """Returns ``fn`` unchanged (PyTorch lets the compiler keep it in its graph)."""
    return fn


__all__ = ["compile", "is_compiling", "is_dynamo_compiling", "disable", "reset", "allow_in_graph"]
