"""PyTorch's top-level switches and small factories: ``range``, ``ravel``, ``frombuffer``, ``set_printoptions``,
the autocast getters and setters, the thread, warning and determinism switches, ``set_flush_denormal`` and
``is_inference_mode_enabled``.

``FUNCTIONS`` holds the module-level names (none of them becomes a Tensor method).
"""

from __future__ import annotations

import builtins
import math
import numbers
import warnings

import numpy as np

from . import _autocast, _tensor_methods, backends
from ._C_face import Dtype, Tensor, from_dlpack
from ._factories import _dtype, _float_dtype, tensor
from ._grad_mode import is_inference_mode_enabled
from ._tensor_extra import _need

_NUMPY = {Dtype.BOOL: np.bool_, Dtype.UINT8: np.uint8, Dtype.INT8: np.int8, Dtype.INT16: np.int16,
          Dtype.INT32: np.int32, Dtype.INT64: np.int64,
          Dtype.FLOAT16: np.float16, Dtype.FLOAT32: np.float32, Dtype.FLOAT64: np.float64,
          Dtype.COMPLEX64: np.complex64, Dtype.COMPLEX128: np.complex128}


def range(start=0, end=None, step=1, *, out=None, dtype=None, device=None, requires_grad=False):  # noqa: A001
    """Deprecated inclusive range: ``start, start + step, ...`` up to and including ``end``, that is
    ``floor((end - start) / step) + 1`` values, float32 unless ``dtype`` says otherwise (even for int
    arguments, unlike ``arange``). Warns (UserWarning) as PyTorch does; use ``arange(start, end + step)``."""
    if end is None:
        start, end = 0, start
    for name, v in (("start", start), ("end", end), ("step", step)):
        if isinstance(v, builtins.bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise ValueError(f"[range] {name} must be a finite number, got {v!r}")
    if step == 0 or (end - start) * step < 0:
        raise ValueError(f"[range] step {step!r} cannot go from {start!r} to {end!r}")
    warnings.warn("sneppx_core.range is deprecated in favor of sneppx_core.arange and will be removed; note that "
                  "range includes end, arange does not", UserWarning, stacklevel=2)
    n = int(math.floor((end - start) / step)) + 1
    dt = _float_dtype(dtype)
    res = tensor(np.arange(n, dtype=np.float64) * step + start, dtype=dt, device=device)
    res = res.requires_grad_(True) if requires_grad else res
    return res if out is None else _need(out, "range", "out").copy_(res)


def ravel(input):
    """``input`` flattened to 1-d (a view where the layout allows, else a copy), as ``input.ravel()``."""
    return _need(input, "ravel").reshape(-1)


def frombuffer(buffer, *, dtype, count=-1, offset=0, requires_grad=False):
    """A 1-d tensor over the bytes of ``buffer`` (any object with the buffer protocol), starting ``offset``
    bytes in, ``count`` elements (-1: to the end). It shares memory with a writable buffer; a read-only
    buffer (``bytes``) is copied, and so is bfloat16 data (NumPy has no bfloat16), with a UserWarning."""
    dt = _dtype(dtype, None)
    if not isinstance(dt, Dtype):
        raise TypeError(f"[frombuffer] dtype must be a sneppx_core dtype, got {dtype!r}")
    try:
        raw = memoryview(buffer).cast("B")
    except TypeError as e:
        raise TypeError(f"[frombuffer] expected an object with the buffer protocol, got {type(buffer).__name__}") \
            from e
    size = 2 if dt == Dtype.BFLOAT16 else np.dtype(_NUMPY[dt]).itemsize
    if not 0 <= offset < max(len(raw), 1) or len(raw) == 0:
        raise ValueError(f"[frombuffer] offset {offset} must be in [0, {len(raw)}) for a buffer of {len(raw)} bytes")
    avail = (len(raw) - offset) // size
    if count == 0 or count < -1 or count > avail or (count == -1 and (len(raw) - offset) % size):
        raise ValueError(f"[frombuffer] {len(raw) - offset} bytes after offset {offset} do not hold count={count} "
                         f"elements of {dt!r} ({size} bytes each)")
    count = avail if count == -1 else count
    if dt == Dtype.BFLOAT16:
        bits = np.frombuffer(raw, np.uint16, count, offset).astype(np.uint32) << 16
        warnings.warn("[frombuffer] bfloat16 data is copied, not shared", UserWarning, stacklevel=2)
        res = Tensor(bits.view(np.float32)).to(Dtype.BFLOAT16)
    else:
        arr = np.frombuffer(raw, _NUMPY[dt], count, offset)
        if raw.readonly:
            warnings.warn("[frombuffer] the buffer is not writable: its data is copied, not shared", UserWarning,
                          stacklevel=2)
            arr = arr.copy()
        res = from_dlpack(arr)
    return res.requires_grad_(True) if requires_grad else res


# ---------------------------------------------------------------- printing
_PROFILES = {"default": dict(precision=4, threshold=1000, edgeitems=3, linewidth=80),
             "short": dict(precision=2, threshold=1000, edgeitems=2, linewidth=80),
             "full": dict(precision=4, threshold=math.inf, edgeitems=3, linewidth=80)}


def set_printoptions(precision=None, threshold=None, edgeitems=None, linewidth=None, profile=None, sci_mode=None):
    """Sets how tensors print: ``precision`` (digits after the point), ``threshold`` (element count above which
    the print is summarized), ``edgeitems`` (items kept at each end of a summarized dim), ``linewidth``
    (characters per line), ``sci_mode`` (True/False force or forbid scientific notation, None chooses).
    ``profile`` ("default", "short", "full") first sets the first four; the other arguments override it."""
    opts = _tensor_methods.PRINT_OPTIONS
    if profile is not None:
        if profile not in _PROFILES:
            raise ValueError(f"[set_printoptions] profile must be 'default', 'short' or 'full', got {profile!r}")
        opts.update(_PROFILES[profile])
    for name, v in (("precision", precision), ("threshold", threshold), ("edgeitems", edgeitems),
                    ("linewidth", linewidth)):
        if v is not None:
            if isinstance(v, builtins.bool) or not isinstance(v, numbers.Real) or v < 0:
                raise ValueError(f"[set_printoptions] {name} must be a non-negative number, got {v!r}")
            opts[name] = v if name == "threshold" else int(v)
    opts["sci_mode"] = None if sci_mode is None else builtins.bool(sci_mode)


# ---------------------------------------------------------------- autocast state
_AUTOCAST = {"dtype": {"cpu": Dtype.BFLOAT16, "cuda": Dtype.FLOAT16, "ipu": Dtype.FLOAT16, "xla": Dtype.BFLOAT16}}
# PyTorch's defaults; "ipu" and "xla" only keep state (no such devices here)


def _device_type(device_type, op):
    if device_type not in _AUTOCAST["dtype"]:
        raise ValueError(f"[{op}] device_type must be one of {list(_AUTOCAST['dtype'])}, got {device_type!r}")
    return device_type


def get_autocast_dtype(device_type):
    """The dtype autocast uses on ``device_type`` (the active one inside a CPU region; "cpu": bfloat16, "cuda":
    float16 unless set)."""
    active = getattr(_autocast._local, "dtype", None)
    return active if device_type == "cpu" and active is not None else \
        _AUTOCAST["dtype"][_device_type(device_type, "get_autocast_dtype")]


def set_autocast_dtype(device_type, dtype):
    """Sets the dtype autocast uses for ``device_type`` (a float16 or bfloat16 dtype), the active one too."""
    if dtype not in (Dtype.FLOAT16, Dtype.BFLOAT16, Dtype.FLOAT32):
        raise ValueError(f"[set_autocast_dtype] dtype must be float16, bfloat16 or float32, got {dtype!r}")
    _AUTOCAST["dtype"][_device_type(device_type, "set_autocast_dtype")] = dtype
    if device_type == "cpu" and _autocast.is_enabled():
        _autocast._local.dtype = dtype


def set_autocast_enabled(device_type, enabled=None):
    """``set_autocast_enabled(device_type, enabled)`` (or the older ``set_autocast_enabled(enabled)``, for
    "cuda"): turns CPU autocast on or off in this thread, as entering an ``autocast("cpu")`` region does;
    on other device types False is accepted and True raises NotImplementedError."""
    if enabled is None:
        device_type, enabled = "cuda", device_type
    _device_type(device_type, "set_autocast_enabled")
    if device_type == "cpu":
        _autocast.set_enabled(builtins.bool(enabled), _AUTOCAST["dtype"]["cpu"])
    elif enabled:
        raise NotImplementedError(f"[set_autocast_enabled] autocasting on {device_type!r} is not implemented; "
                                  "cast the model with model.to(dtype) instead")


def is_autocast_cpu_enabled():
    """Whether CPU autocast is on in this thread."""
    return _autocast.is_enabled()


def set_autocast_cpu_enabled(enabled):
    """``set_autocast_enabled("cpu", enabled)``."""
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype():
    """``get_autocast_dtype("cpu")``."""
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype):
    """``set_autocast_dtype("cpu", dtype)``."""
    set_autocast_dtype("cpu", dtype)


def get_autocast_gpu_dtype():
    """``get_autocast_dtype("cuda")``."""
    return get_autocast_dtype("cuda")


def set_autocast_gpu_dtype(dtype):
    """``set_autocast_dtype("cuda", dtype)``."""
    set_autocast_dtype("cuda", dtype)


def is_autocast_cache_enabled():
    """Whether autocast caches its casts of parameters (True unless switched off)."""
    return _autocast.CACHE[0]


def set_autocast_cache_enabled(enabled):
    """Switches the caching of autocast's casts of parameters on or off."""
    _autocast.CACHE[0] = builtins.bool(enabled)


def clear_autocast_cache():
    """Drops this thread's cached autocast casts."""
    _autocast.clear_cache()


# ---------------------------------------------------------------- threads, warnings, denormals
_STATE = {"interop": 1, "warn_always": False}


def get_num_interop_threads():
    """The number last given to :func:`set_num_interop_threads` (1 by default). Ops run one after another from
    the calling thread; the intra-op pool is sized by ``set_num_threads``."""
    return _STATE["interop"]


def set_num_interop_threads(num):
    """Records ``num`` (a positive int) for :func:`get_num_interop_threads`; there is no inter-op pool, so it
    changes nothing else."""
    if isinstance(num, builtins.bool) or not isinstance(num, numbers.Integral) or num <= 0:
        raise ValueError(f"[set_num_interop_threads] num must be a positive int, got {num!r}")
    _STATE["interop"] = int(num)


def set_warn_always(b):
    """Records whether warnings PyTorch gives once should be given every time (see :func:`is_warn_always_enabled`);
    SneppX's warnings go through Python's ``warnings`` filters, which decide repetition."""
    _STATE["warn_always"] = builtins.bool(b)


def is_warn_always_enabled():
    """The value last given to :func:`set_warn_always` (False by default)."""
    return _STATE["warn_always"]


def set_flush_denormal(mode):
    """Returns False: flushing denormal floats to zero is not supported here, so nothing changes (PyTorch
    also returns False on CPUs without the feature)."""
    builtins.bool(mode)
    return False


_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def set_deterministic_debug_mode(debug_mode):
    """``use_deterministic_algorithms`` by level: 0 or "default" (off), 1 or "warn" (``warn_only=True``),
    2 or "error" (on)."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"[set_deterministic_debug_mode] invalid mode {debug_mode!r}: expected 'default', "
                               "'warn' or 'error'")
        debug_mode = _DEBUG_MODES[debug_mode]
    if isinstance(debug_mode, builtins.bool) or not isinstance(debug_mode, numbers.Integral) or debug_mode not in (
            0, 1, 2):
        raise RuntimeError(f"[set_deterministic_debug_mode] invalid mode {debug_mode!r}: expected 0, 1 or 2")
    backends.use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode():
    """The level :func:`set_deterministic_debug_mode` takes: 0 off, 1 warn only, 2 on."""
    if not backends.are_deterministic_algorithms_enabled():
        return 0
    return 1 if backends.is_deterministic_algorithms_warn_only_enabled() else 2


_PLAIN = [range, ravel, frombuffer, set_printoptions, get_autocast_dtype, set_autocast_dtype, set_autocast_enabled,
          is_autocast_cpu_enabled, set_autocast_cpu_enabled, get_autocast_cpu_dtype, set_autocast_cpu_dtype,
          get_autocast_gpu_dtype, set_autocast_gpu_dtype, is_autocast_cache_enabled, set_autocast_cache_enabled,
          clear_autocast_cache, get_num_interop_threads, set_num_interop_threads, set_warn_always,
          is_warn_always_enabled, set_flush_denormal, is_inference_mode_enabled, set_deterministic_debug_mode,
          get_deterministic_debug_mode]
FUNCTIONS = {f.__name__: f for f in _PLAIN}
__all__ = list(FUNCTIONS)
