"""Anomaly detection, as ``torch.autograd.detect_anomaly``: while it is on, the backward pass checks every
gradient a node returns and raises RuntimeError naming the node (``MulBackward``, a Function's
``NameBackward``, ...) at the first that holds NaN. The check costs a pass over each gradient; leave it
off outside debugging. The NumPy backend has no backward pass: the switch is kept but checks nothing."""

from __future__ import annotations

import functools
import warnings

from .._backend import NAME, _C

_state = {"enabled": False, "check_nan": True}  # the NumPy backend's copy of the switch


def is_anomaly_enabled():
    """Whether anomaly detection is on."""
    return bool(_C._is_anomaly_enabled()) if NAME == "c" else _state["enabled"]


def is_anomaly_check_nan_enabled():
    """Whether anomaly detection checks gradients for NaN (its only check)."""
    return bool(_C._is_anomaly_check_nan_enabled()) if NAME == "c" else _state["check_nan"]


def set_anomaly_enabled(enabled, check_nan=True):
    """Turns anomaly detection on or off (``torch.set_anomaly_enabled``)."""
    if not isinstance(enabled, bool) or not isinstance(check_nan, bool):
        raise TypeError(f"[set_anomaly_enabled] expected bools, got enabled={enabled!r}, check_nan={check_nan!r}")
    if NAME == "c":
        _C._set_anomaly_enabled(enabled, check_nan)
    _state.update(enabled=enabled, check_nan=check_nan)


class detect_anomaly:
    """Context manager (or decorator) that turns anomaly detection on for its body.

    >>> with detect_anomaly():
    ...     loss.backward()   # RuntimeError: Function 'DivBackward' returned nan values in its 0th output
    """

    def __init__(self, check_nan=True):
        self.check_nan = check_nan
        warnings.warn("Anomaly Detection has been enabled. This mode will increase the runtime and should only be "
                      "enabled for debugging.", stacklevel=2)

    def __enter__(self):
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        set_anomaly_enabled(True, self.check_nan)
        return self

    def __exit__(self, *exc):
        set_anomaly_enabled(*self.prev)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
            set_anomaly_enabled(True, self.check_nan)
            try:
                return fn(*args, **kwargs)
            finally:
                set_anomaly_enabled(*prev)

        return wrapper


class set_detect_anomaly:
    """Sets anomaly detection on or off at once; used as a context manager it restores the previous
    setting on exit (``torch.autograd.set_detect_anomaly``)."""

    def __init__(self, mode, check_nan=True):
        self.prev = (is_anomaly_enabled(), is_anomaly_check_nan_enabled())
        set_anomaly_enabled(mode, check_nan)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        set_anomaly_enabled(*self.prev)
        return False


__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled", "is_anomaly_check_nan_enabled",
           "set_anomaly_enabled"]
