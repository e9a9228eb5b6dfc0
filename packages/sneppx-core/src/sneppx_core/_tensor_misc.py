"""More Tensor methods with PyTorch's names: the Python-loop element maps ``apply_``, ``map_`` and ``map2_``
(CPU only, as in PyTorch), ``histogram``, ``dim_order``, ``const_data_ptr``, ``to_dense`` and ``nonzero_static``
(the last also a module-level function).

``METHODS`` are attached to Tensor; ``FUNCTIONS`` are the module-level names.
"""

from __future__ import annotations

import numbers

import numpy as np

from . import _special_gamma
from ._C_face import Dtype, Tensor
from ._factories import tensor
from ._tensor_extra import _need


def _python_map(self, op, fn, others):
    _need(self, op, "self")
    if not callable(fn):
        raise TypeError(f"[{op}] expected a callable, got {type(fn).__name__}")
    if self.requires_grad:
        raise TypeError(f"[{op}] can't call {op}() on a tensor that requires grad; use t.detach().{op}(...)")
    for t in (self, *others):
        if t.device.type != "cpu":
            raise TypeError(f"[{op}] is only implemented on CPU tensors, got a tensor on {t.device}")
    flat = [self.reshape(-1).tolist()]
    for i, t in enumerate(others):
        try:
            flat.append(t.to(self.dtype).expand(*self.shape).reshape(-1).tolist())
        except (RuntimeError, ValueError) as e:
            raise ValueError(f"[{op}] argument {i} of shape {tuple(t.shape)} does not broadcast to "
                             f"{tuple(self.shape)}: {e}") from None
    values = [fn(*args) for args in zip(*flat)]
    return self.copy_(tensor(values, dtype=self.dtype).reshape(tuple(self.shape)))


def apply_(self, callable):
    """Replaces each element ``x`` by ``callable(x)`` (a Python call per element: slow, CPU only); returns self.
    Tensors that require grad raise TypeError."""
    return _python_map(self, "apply_", callable, ())


def map_(self, tensor, callable):
    """Replaces each element ``x`` by ``callable(x, y)``, ``y`` the matching element of ``tensor`` (broadcast to
    self's shape); CPU only, one Python call per element; returns self."""
    return _python_map(self, "map_", callable, (_need(tensor, "map_", "tensor"),))


def map2_(self, x, y, callable):
    """Replaces each element ``s`` by ``callable(s, a, b)`` with the matching elements of ``x`` and ``y``
    (broadcast to self's shape); CPU only, one Python call per element; returns self."""
    return _python_map(self, "map2_", callable, (_need(x, "map2_", "x"), _need(y, "map2_", "y")))


def histogram(self, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """``sneppx_core.histogram(self, bins, range=..., weight=..., density=...)``: ``(hist, bin_edges)``."""
    from ._torch_aliases import histogram as _histogram

    return _histogram(self, bins, range=range, weight=weight, density=density)


def _should_swap(strides, shape, a, b):
    """PyTorch's stride comparison of dims ``a`` and ``b`` (1: a is inner to b, -1: outer, 0: undecided)."""
    def ge(x, y):
        return True if y == 0 else False if x == 0 else (x >= y or x % y == 0)

    sa, sb = strides[a], strides[b]
    if sa == 0 or sb == 0:
        return 0
    if sa == sb:
        return 0 if ge(shape[b], shape[a]) else 1
    return -1 if ge(sb, sa) else (1 if ge(sa, sb) else 0)


def dim_order(self, *, ambiguity_check=False):
    """The dims from outermost to innermost in memory, as a tuple (``(0, 1, ..., n-1)`` for a contiguous
    tensor, ``(1, 0)`` for a transposed matrix). ``ambiguity_check=True`` raises RuntimeError when the
    order is not unique (equal strides or size-1 dims)."""
    if not isinstance(ambiguity_check, bool):
        raise TypeError("[dim_order] ambiguity_check must be a bool (lists of memory formats are not supported)")
    n, shape, strides = self.ndim, tuple(self.shape), tuple(self.stride())
    if ambiguity_check and (any(s == 1 for s in shape) or any(a == b for a, b in zip(strides, strides[1:]))):
        raise RuntimeError("[dim_order] the tensor does not have a unique dim order")
    if n <= 1:
        return tuple(range(n))
    if self.is_contiguous():
        return tuple(range(n))
    perm = list(reversed(range(n)))  # an insertion sort from innermost to outermost, as PyTorch's
    for i in range(1, n):
        d1 = i
        for d0 in reversed(range(i)):
            c = _should_swap(strides, shape, perm[d0], perm[d1])
            if c > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif c < 0:
                break
    return tuple(reversed(perm))


def const_data_ptr(self):
    """The address of the first element, as ``data_ptr()`` (for reading only)."""
    return self.data_ptr()


def nonzero_static(input, *, size, fill_value=-1):
    """The first ``size`` rows of ``nonzero(input)`` (an int64 ``(size, input.ndim)`` tensor), padded with
    ``fill_value`` rows when there are fewer nonzeros: a result whose shape does not depend on the data."""
    _need(input, "nonzero_static")
    if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 0:
        raise ValueError(f"[nonzero_static] size must be a non-negative int, got {size!r}")
    if isinstance(fill_value, bool) or not isinstance(fill_value, numbers.Integral):
        raise TypeError(f"[nonzero_static] fill_value must be an int, got {fill_value!r}")
    idx = input.detach().nonzero()
    rows = np.full((int(size), input.ndim), int(fill_value), dtype=np.int64)
    k = min(int(size), idx.shape[0])
    if k:
        rows[:k] = idx[:k].cpu().numpy()
    out = Tensor(rows)
    return out if input.device.type == "cpu" else out.to(input.device)


def igamma(input, other):
    """The regularised lower incomplete gamma function P(input, other): ``special.gammainc``."""
    return _special_gamma.gammainc(input, other)


def igammac(input, other):
    """The regularised upper incomplete gamma function Q(input, other): ``special.gammaincc``."""
    return _special_gamma.gammaincc(input, other)


def to_dense(self, dtype=None, *, masked_grad=True):
    """``self`` itself for a dense tensor (sparse tensors have their own ``to_dense``); with a ``dtype`` other
    than its own, a converted copy. ``masked_grad`` only matters for sparse tensors and is ignored."""
    _need(self, "to_dense", "self")
    if dtype is None or dtype == self.dtype:
        return self
    if not isinstance(dtype, Dtype):
        raise TypeError(f"[to_dense] expected dtype to be a dtype such as sneppx_core.float64, got {dtype!r}")
    return self.to(dtype)


def _inplace(fn, name):
    def method(self, other):
        out = fn(self, other)
        if out.dtype != self.dtype or tuple(out.shape) != tuple(self.shape):
            raise TypeError(f"[{name}] the result of dtype {out.dtype} and shape {tuple(out.shape)} cannot be "
                            f"written into a tensor of dtype {self.dtype} and shape {tuple(self.shape)}")
        return self.copy_(out)

    method.__name__, method.__doc__ = name, f"In-place form of ``{fn.__name__}``."
    return method


METHODS = {"apply_": apply_, "map_": map_, "map2_": map2_, "histogram": histogram, "dim_order": dim_order,
           "const_data_ptr": const_data_ptr, "nonzero_static": nonzero_static, "igamma": igamma, "igammac": igammac,
           "to_dense": to_dense,
           "igamma_": _inplace(igamma, "igamma_"), "igammac_": _inplace(igammac, "igammac_")}
FUNCTIONS = {"nonzero_static": nonzero_static, "igamma": igamma, "igammac": igammac}
__all__ = list(FUNCTIONS)
