"""Grad-mode switches usable as context managers and decorators, as in PyTorch."""

from __future__ import annotations

import functools

from ._backend import _C


class _GradMode:
    """Base for switches that set grad mode on entry and restore the previous mode on exit."""

    _enabled = True

    def __new__(cls, *args, **kwargs):
        # ``@no_grad`` without parentheses decorates the function directly.
        if len(args) == 1 and callable(args[0]) and not kwargs and cls in (no_grad, enable_grad):
            return cls()(args[0])
        return super().__new__(cls)

    def __enter__(self):
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._enabled)
        return self

    def __exit__(self, *exc):
        _C._set_grad_enabled(self._prev)
        return False

    def __call__(self, fn):
        enabled = self._enabled

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = _C.is_grad_enabled()
            _C._set_grad_enabled(enabled)
            try:
                return fn(*args, **kwargs)
            finally:
                _C._set_grad_enabled(prev)

        return wrapper


class no_grad(_GradMode):
    """Disables gradient recording: results of ops inside do not require grad."""

    _enabled = False


class enable_grad(_GradMode):
    """Enables gradient recording (inside a ``no_grad`` block, for example)."""

    _enabled = True


class inference_mode(_GradMode):
    """Disables gradient recording, as ``no_grad``, and marks the tensors allocated inside as inference
    tensors (``Tensor.is_inference()``, true for their views too); ``is_inference_mode_enabled()`` is True
    inside ``inference_mode()`` and False inside ``inference_mode(False)``."""

    def __init__(self, mode: bool = True):
        self._mode = bool(mode)
        self._enabled = not mode

    def __enter__(self):
        self._prev_mode = _C._inference_mode_enabled()
        _C._set_inference_mode(self._mode)
        return super().__enter__()

    def __exit__(self, *exc):
        _C._set_inference_mode(self._prev_mode)
        return super().__exit__(*exc)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with inference_mode(self._mode):
                return fn(*args, **kwargs)

        return wrapper


def is_inference_mode_enabled() -> bool:
    """True inside an ``inference_mode()`` block (of this thread) that is not undone by ``inference_mode(False)``."""
    return _C._inference_mode_enabled()


class set_grad_enabled(_GradMode):
    """Sets grad mode to ``mode`` at once; as a context manager or decorator it restores the old mode after."""

    def __init__(self, mode: bool):
        self._enabled = bool(mode)
        self._prev = _C.is_grad_enabled()
        _C._set_grad_enabled(self._enabled)

    def __enter__(self):
        return self

    def __call__(self, fn):
        _C._set_grad_enabled(self._prev)  # used as a decorator: undo the immediate switch
        return super().__call__(fn)
