"""``testing.assert_close`` and ``testing.make_tensor``, as PyTorch's: tolerances by dtype, the same checks (shape,
dtype, device, optionally stride) and the same failure messages (the mismatch count, the greatest absolute and
relative differences and where they are)."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np

from ._factories import randint
from ._C_face import Tensor

# (rtol, atol) by dtype, as in PyTorch; integer and bool dtypes compare exactly
_TOLERANCES = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5), "float32": (1.3e-6, 1e-5),
               "float64": (1e-7, 1e-7)}


def _dtype_name(dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


def _array(t: Tensor) -> np.ndarray:
    t = t.detach()
    if _dtype_name(t.dtype) in ("bfloat16", "float16"):
        t = t.float()
    return np.asarray(t.cpu().numpy())


def _fail(msg, default: str, path: str):
    if msg is not None:
        raise AssertionError(msg if isinstance(msg, str) else msg(default))
    raise AssertionError(default + (f"\n\nThe failure occurred for item {path}" if path else ""))


def _tensors(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg, path):
    checks = [("shape", lambda t: t.shape), ("device", lambda t: t.device), ("dtype", lambda t: t.dtype),
              ("stride()", lambda t: tuple(t.stride()))]
    for (attr, get), wanted in zip(checks, (True, check_device, check_dtype, check_stride)):
        a, e = get(actual), get(expected)
        if not wanted:
            continue
        if a != e:
            _fail(msg, f"The values for attribute '{attr}' do not match: {a} != {e}.", path)
    names = {_dtype_name(actual.dtype), _dtype_name(expected.dtype)}
    if rtol is None:
        tols = [_TOLERANCES.get(n, (0.0, 0.0)) for n in names]
        rtol, atol = max(t[0] for t in tols), max(t[1] for t in tols)
    a = _array(actual)
    e = _array(expected)
    exact = not any(n in _TOLERANCES for n in names)
    if a.dtype == np.bool_:
        a, e = a.astype(np.int64), e.astype(np.int64)
    af, ef = a.astype(np.float64), e.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        close = (af == ef) | (np.isfinite(af) & np.isfinite(ef) & (np.abs(af - ef) <= atol + rtol * np.abs(ef)))
        if equal_nan:
            close |= np.isnan(af) & np.isnan(ef)
        if close.all():
            return
        bad = ~close
        abs_diff = np.abs(af - ef)
        rel_diff = abs_diff / np.abs(ef)
    kind = "equal" if exact else "close"
    n_bad, n = int(bad.sum()), bad.size
    lines = [f"Tensor-likes are not {kind}!", "", f"Mismatched elements: {n_bad} / {n} ({100 * n_bad / n:.1f}%)"]
    for label, diff, tol in (("absolute", abs_diff, atol), ("relative", rel_diff, rtol)):
        d = np.where(bad, diff, -np.inf)
        d = np.where(np.isnan(d), np.inf, d)
        i = np.unravel_index(int(np.argmax(d)), bad.shape) if bad.ndim else ()
        value = diff[i]
        text = repr(int(value)) if exact and label == "absolute" and np.isfinite(value) else repr(float(value))
        where = f" at index {tuple(int(k) for k in i)}" if bad.ndim else ""
        lines.append(f"Greatest {label} difference: {text}{where}" + ("" if exact else f" (up to {tol} allowed)"))
    _fail(msg, "\n".join(lines), path)


def _scalars(actual, expected, rtol, atol, equal_nan, msg, path):
    exact = all(isinstance(x, (bool, int)) for x in (actual, expected))
    if rtol is None:
        rtol, atol = (0.0, 0.0) if exact else _TOLERANCES["float64"] if not any(
            isinstance(x, complex) for x in (actual, expected)) else (1e-7, 1e-7)
    if actual == expected or (equal_nan and _isnan(actual) and _isnan(expected)):
        return
    diff = abs(actual - expected)
    if not exact and _finite(actual) and _finite(expected) and diff <= atol + rtol * abs(expected):
        return
    rel = diff / abs(expected) if expected != 0 else math.inf
    kind = "equal" if exact else "close"
    tol_a, tol_r = ("", "") if exact else (f" (up to {atol} allowed)", f" (up to {rtol} allowed)")
    _fail(msg, f"Scalars are not {kind}!\n\nExpected {expected} but got {actual}.\n"
               f"Absolute difference: {diff}{tol_a}\nRelative difference: {rel}{tol_r}", path)


def _finite(x) -> bool:
    return math.isfinite(abs(x))


def _isnan(x) -> bool:
    return isinstance(x, (float, complex)) and x != x


def _compare(actual, expected, opts, path):
    scalar = (bool, int, float, complex)
    if isinstance(actual, np.ndarray):
        actual = Tensor(actual)
    if isinstance(expected, np.ndarray):
        expected = Tensor(expected)
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        return _tensors(actual, expected, *opts, path)
    if isinstance(actual, scalar) and isinstance(expected, scalar):
        rtol, atol, equal_nan, *_, msg = opts
        return _scalars(actual, expected, rtol, atol, equal_nan, msg, path)
    if isinstance(actual, Mapping) and isinstance(expected, Mapping):
        if set(actual) != set(expected):
            _fail(opts[-1], f"The keys of the mappings do not match:\nMissing keys in the actual mapping: "
                            f"{sorted(map(repr, set(expected) - set(actual)))}\nExtra keys in the actual mapping: "
                            f"{sorted(map(repr, set(actual) - set(expected)))}", path)
        for k in expected:
            _compare(actual[k], expected[k], opts, f"{path}[{k!r}]")
        return None
    if isinstance(actual, Sequence) and isinstance(expected, Sequence) and not isinstance(actual, (str, bytes)):
        if len(actual) != len(expected):
            _fail(opts[-1], f"The length of the sequences mismatch: {len(actual)} != {len(expected)}", path)
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, opts, f"{path}[{i}]")
        return None
    if actual is None and expected is None or isinstance(actual, str) and actual == expected:
        return None
    raise TypeError(f"No comparison pair was able to handle inputs of type {type(actual)} and {type(expected)}.")


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False, msg=None) -> None:
    """Raises AssertionError unless ``actual`` and ``expected`` (tensors, NumPy arrays, Python numbers, or
    sequences and mappings of them) are close: ``|actual - expected| <= atol + rtol * |expected|`` elementwise,
    with the same shape, dtype and device. Default tolerances depend on the dtype (float32: rtol 1.3e-6, atol
    1e-5; float64: 1e-7, 1e-7; float16 1e-3, 1e-5; bfloat16 1.6e-2, 1e-5; integers and bool exactly). ``msg``
    (a string, or a function of the default message) replaces the message."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got no "
                         f"{'atol' if atol is None else 'rtol'}.")
    _compare(actual, expected, (rtol, atol, equal_nan, check_device, check_dtype, check_stride, msg), "")


def assert_allclose(actual, expected, rtol: float | None = None, atol: float | None = None, equal_nan: bool = True,
                    msg: str = "") -> None:
    """Deprecated in PyTorch (a FutureWarning says so): ``assert_close`` with the dtypes free to differ and NaNs
    equal by default."""
    warnings.warn("`torch.testing.assert_allclose()` is deprecated; use `torch.testing.assert_close()` instead",
                  FutureWarning, stacklevel=2)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan, check_dtype=False, check_device=True,
                 msg=msg or None)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False, memory_format=None):
    """A tensor of ``shape`` with random values in ``[low, high)`` (floats: default ``[-9, 9)``; integers
    ``[-9, 10)``, unsigned from 0; bool: random), as PyTorch's ``testing.make_tensor``."""
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = tuple(shape[0])
    name = _dtype_name(dtype)
    rng = np.random.default_rng(int(randint(0, 2**31 - 1, (1,)).item()))
    if name == "bool":
        data = rng.integers(0, 2, shape).astype(bool)
    elif name.startswith(("int", "uint")):
        lo = (0 if name.startswith("uint") else -9) if low is None else math.ceil(low)
        hi = 10 if high is None else math.ceil(high)
        data = rng.integers(lo, hi, shape)
    else:
        lo, hi = (-9.0 if low is None else low), (9.0 if high is None else high)
        data = rng.uniform(lo, hi, shape)
    if exclude_zero:
        data = np.where(data == 0, 1 if name.startswith(("int", "uint", "bool")) else np.finfo(np.float32).tiny,
                        data)
    t = Tensor(data, dtype=dtype).to(device or "cpu")
    if noncontiguous and t.numel() > 1:
        t = t.repeat_interleave(2, dim=-1)[..., ::2]
    return t.requires_grad_(requires_grad) if requires_grad else t
