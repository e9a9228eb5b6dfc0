"""Mixed precision helpers with ``torch.amp``'s interface: ``GradScaler`` and ``autocast``.

``GradScaler`` implements dynamic loss scaling: ``scale(loss)`` multiplies by the scale,
``step(opt)`` divides the gradients by it and skips the update when any is inf or NaN, and
``update()`` halves the scale after such a step and doubles it after ``growth_interval`` clean
ones. As in PyTorch, a scaler for ``"cuda"`` on a machine without a GPU warns and disables
itself (every method then passes through), so scripts written for GPUs run unchanged.

``autocast("cpu")`` autocasts as PyTorch does on the CPU (bfloat16 by default; see ``_autocast``).
``autocast("cuda")`` without a GPU warns and does nothing, as in PyTorch; with one it raises
NotImplementedError (CUDA autocasting is not implemented: cast the model with ``.to(dtype)`` instead).
"""

from __future__ import annotations

import functools
import sys
import types
import warnings

from ._backend import _C
from . import _autocast, _torch_misc, cuda
from ._C_face import Tensor
from ._grad_mode import no_grad


def _grads(optimizer):
    return [p.grad for g in optimizer.param_groups for p in g["params"] if p.grad is not None]


class GradScaler:
    """Dynamic loss scaling (``torch.amp.GradScaler``; arguments and defaults are PyTorch's)."""

    def __init__(self, device: str = "cuda", init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True) -> None:
        if enabled and device == "cuda" and not cuda.is_available():
            warnings.warn("GradScaler is enabled, but CUDA is not available. Disabling.", UserWarning, stacklevel=2)
            enabled = False
        if not growth_factor > 1.0 or not 0.0 < backoff_factor < 1.0 or growth_interval < 1:
            raise ValueError(f"[GradScaler] need growth_factor > 1, 0 < backoff_factor < 1 and growth_interval >= 1, "
                             f"got {growth_factor}, {backoff_factor} and {growth_interval}")
        self.device, self._enabled = device, bool(enabled)
        self._scale, self._growth_factor, self._backoff_factor = float(init_scale), growth_factor, backoff_factor
        self._growth_interval, self._growth_tracker = growth_interval, 0
        self._per_optimizer: dict = {}

    def is_enabled(self) -> bool:
        """Whether scaling is on."""
        return self._enabled

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled)."""
        return self._scale if self._enabled else 1.0

    def scale(self, outputs):
        """``outputs`` (a tensor or nested lists/tuples of tensors) multiplied by the scale."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"[GradScaler.scale] expected a Tensor or a list/tuple of them, got {type(outputs).__name__}")

    def unscale_(self, optimizer) -> None:
        """Divides the gradients of ``optimizer``'s parameters by the scale (once per step)."""
        if not self._enabled:
            return
        state = self._per_optimizer.setdefault(id(optimizer), {"unscaled": False, "found_inf": False})
        if state["unscaled"]:
            raise RuntimeError("[GradScaler.unscale_] has already been called on this optimizer since the last "
                               "update()")
        inv = 1.0 / self._scale
        with no_grad():
            for g in _grads(optimizer):
                g.mul_(inv)
                if not bool(_C.isfinite(g).all().item()):
                    state["found_inf"] = True
        state["unscaled"] = True

    def step(self, optimizer, *args, **kwargs):
        """Unscales (if not done yet) and runs ``optimizer.step()`` unless a gradient is inf/NaN."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("[GradScaler.step] closures are not supported with gradient scaling")
        state = self._per_optimizer.setdefault(id(optimizer), {"unscaled": False, "found_inf": False})
        if not state["unscaled"]:
            self.unscale_(optimizer)
        return None if state["found_inf"] else optimizer.step(*args, **kwargs)

    def update(self, new_scale=None) -> None:
        """Halves (``backoff_factor``) the scale after a skipped step, doubles (``growth_factor``) it
        after ``growth_interval`` clean ones, or sets ``new_scale``."""
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, Tensor) else new_scale)
        elif any(s["found_inf"] for s in self._per_optimizer.values()):
            self._scale *= self._backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self._growth_interval:
                self._scale *= self._growth_factor
                self._growth_tracker = 0
        self._per_optimizer = {}

    def state_dict(self) -> dict:
        """The scale and growth settings (empty when disabled), as PyTorch's keys."""
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor, "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restores :meth:`state_dict`."""
        if not self._enabled:
            return
        if not state_dict:
            raise RuntimeError("[GradScaler.load_state_dict] the state dict is empty (saved from a disabled scaler)")
        self._scale = float(state_dict["scale"])
        self._growth_factor, self._backoff_factor = state_dict["growth_factor"], state_dict["backoff_factor"]
        self._growth_interval, self._growth_tracker = state_dict["growth_interval"], state_dict["_growth_tracker"]


class autocast:  # noqa: N801  (PyTorch's name)
    """Mixed-precision region (``torch.autocast``), also a decorator. On ``"cpu"`` the ops of PyTorch's CPU lists
    run in ``dtype`` (bfloat16 unless set; float16 also works) or in float32 (see ``_autocast``), in this thread,
    regions nesting as in PyTorch. A no-op when ``enabled`` is False or when ``device_type="cuda"`` has no GPU
    (with a warning, as PyTorch); CUDA autocasting raises NotImplementedError."""

    def __init__(self, device_type: str, dtype=None, enabled: bool = True, cache_enabled=None) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"[autocast] expected device_type to be a str such as 'cpu', got {device_type!r}")
        if enabled and device_type == "cuda" and not cuda.is_available():
            warnings.warn("CUDA is not available. Disabling autocast.", UserWarning, stacklevel=2)
            enabled = False
        if enabled and device_type != "cpu":
            raise NotImplementedError(f"[autocast] autocasting on {device_type!r} is not implemented; run in the "
                                      "model's dtype (model.to(dtype)) or pass enabled=False")
        fast = dtype if dtype is not None else _torch_misc.get_autocast_dtype("cpu") if device_type == "cpu" else None
        if enabled and fast not in (_C.Dtype.BFLOAT16, _C.Dtype.FLOAT16):
            warnings.warn("In CPU autocast, but the target dtype is not supported. Disabling autocast.\nCPU Autocast "
                          "only supports dtype of sneppx_core.bfloat16, sneppx_core.float16 currently.", UserWarning,
                          stacklevel=2)
            enabled = False
        self.device_type, self.fast_dtype, self._enabled = device_type, fast, bool(enabled)
        self._cache_enabled = cache_enabled
        self._saved: list = []

    def __enter__(self):
        if self.device_type == "cpu":
            self._saved.append(_autocast.enter(self._enabled, self.fast_dtype, self._cache_enabled))
        return self

    def __exit__(self, *exc) -> None:
        if self.device_type == "cpu":
            _autocast.leave(self._saved.pop())
        return None

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self:
                return fn(*args, **kwargs)

        return wrapper


def is_autocast_available(device_type: str) -> bool:
    """True for ``"cpu"`` (the only device type SneppX autocasts on)."""
    return device_type == "cpu"


def _device_amp(device_type: str) -> types.ModuleType:
    """``torch.cuda.amp`` / ``torch.cpu.amp``: the older per-device spellings of ``autocast`` and ``GradScaler``,
    as a module (``from torch.cuda.amp import autocast, GradScaler`` imports)."""
    name = f"sneppx_core.{device_type}.amp"
    m = types.ModuleType(name, f"``torch.{device_type}.amp``: ``autocast(...)`` is ``autocast({device_type!r}, ...)``, "
                               f"``GradScaler(...)`` is ``GradScaler({device_type!r}, ...)``.")

    def device_scaler(init_scale: float = 2.0 ** 16, growth_factor: float = 2.0, backoff_factor: float = 0.5,
                      growth_interval: int = 2000, enabled: bool = True) -> GradScaler:
        return GradScaler(device_type, init_scale, growth_factor, backoff_factor, growth_interval, enabled)

    def device_autocast(enabled: bool = True, dtype=None, cache_enabled=None) -> autocast:
        return autocast(device_type, dtype, enabled, cache_enabled)

    device_scaler.__doc__ = f"``GradScaler({device_type!r}, ...)``."
    device_autocast.__doc__ = f"``autocast({device_type!r}, ...)``."
    device_scaler.__name__ = device_scaler.__qualname__ = "GradScaler"
    device_autocast.__name__ = device_autocast.__qualname__ = "autocast"
    device_scaler.__module__ = device_autocast.__module__ = name
    m.GradScaler, m.autocast = device_scaler, device_autocast
    m.custom_fwd, m.custom_bwd = _custom_fwd, _custom_bwd
    sys.modules[name] = m
    return m


def _custom_fwd(fwd=None, *, cast_inputs=None):
    """``torch.cuda.amp.custom_fwd``: returns the forward unchanged (no autocasting to leave or enter)."""
    return (lambda f: f) if fwd is None else fwd


def _custom_bwd(bwd=None):
    """``torch.cuda.amp.custom_bwd``: returns the backward unchanged."""
    return (lambda f: f) if bwd is None else bwd


cuda_amp = _device_amp("cuda")
cpu_amp = _device_amp("cpu")
__all__ = ["GradScaler", "autocast", "is_autocast_available"]
