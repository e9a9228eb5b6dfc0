"""``torch.jit``'s names that programs use around eager code: scripting and tracing return the code unchanged.

SneppX has no TorchScript: :func:`script` and :func:`trace` return the module or function itself (which runs
eagerly with the same results), :func:`is_scripting` and :func:`is_tracing` are False, and the decorators
(``ignore``, ``unused``, ``export``) leave functions as they are. Saving and loading TorchScript archives
(:func:`save`, :func:`load`) raise NotImplementedError: use ``sneppx_core.save`` / ``load`` or safetensors.
"""

from __future__ import annotations

from typing import Final  # noqa: F401  (torch.jit.Final)


def script(obj, optimize=None, _frames_up=0, _rcb=None, example_inputs=None):
    """Returns ``obj`` (a module, function or class) unchanged: it runs eagerly."""
    return obj


def trace(func, example_inputs=None, *args, **kwargs):
    """Returns ``func`` unchanged (PyTorch records the ops run on ``example_inputs``; SneppX runs them eagerly on
    every call, so data-dependent control flow keeps working)."""
    if not callable(func):
        raise TypeError(f"[jit.trace] expected a module or a callable, got {type(func).__name__}")
    return func


def is_scripting() -> bool:
    """False: code never runs under TorchScript."""
    return False


def is_tracing() -> bool:
    """False: code never runs under the tracer."""
    return False


def ignore(drop=False, **kwargs):
    """Leaves a function as it is (PyTorch keeps it out of the compiled script); usable as ``@ignore`` and
    ``@ignore(drop=True)``."""
    return drop if callable(drop) else (lambda fn: fn)


def unused(fn):
    """Returns ``fn`` unchanged."""
    return fn


def export(fn):
    """Returns ``fn`` unchanged."""
    return fn


def annotate(the_type, the_value):
    """Returns ``the_value`` (a type hint for the TorchScript compiler)."""
    return the_value


def save(m, f, _extra_files=None):
    """TorchScript archives are not supported."""
    raise NotImplementedError("[jit.save] SneppX has no TorchScript archives; save the state_dict with "
                              "sneppx_core.save or Module.save_checkpoint")


def load(f, map_location=None, _extra_files=None):
    """TorchScript archives are not supported."""
    raise NotImplementedError("[jit.load] SneppX cannot load TorchScript archives; load a state_dict saved by "
                              "sneppx_core.save or safetensors weights")


__all__ = ["script", "trace", "is_scripting", "is_tracing", "ignore", "unused", "export", "annotate", "Final",
           "save", "load"]
