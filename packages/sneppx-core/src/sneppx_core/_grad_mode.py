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
    """Same as ``no_grad`` here (there are no separate inference tensors)."""

    def __init__(self, mode: bool = True):
        self._enabled = not mode


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
