"""More of PyTorch's Tensor API, composed from core ops (so autograd comes with them).

``_tensor_install`` attaches them as methods; the module-level functions of the same names are
exported from ``sneppx_core``.
"""

from __future__ import annotations

import builtins

import numpy as np

from . import _backend
from ._backend import _C
from ._C_face import Dtype, Tensor
from ._factories import ones, zeros


def _check(x, op):
    if not isinstance(x, Tensor):
        raise TypeError(f"[{op}] expected a Tensor, got {type(x).__name__}")


def _need(x, op, what="input"):
    """``x`` if it is a Tensor, else a TypeError naming the op and the argument."""
    if not isinstance(x, Tensor):
        raise TypeError(f"[{op}] expected {what} to be a Tensor, got {type(x).__name__}")
    return x


def _dim(d, ndim, op):
    if not -builtins.max(ndim, 1) <= d < builtins.max(ndim, 1):
        raise IndexError(f"[{op}] dim {d} is out of range for a tensor with {ndim} dims")
    return d % builtins.max(ndim, 1)


def _const(array, like):
    """A constant tensor with ``like``'s dtype holding ``array``."""
    return Tensor(np.require(array, requirements="C"), dtype=like.dtype)


def nelement(self):
    """Number of elements (alias of ``numel``)."""
    return self.numel()


def t(input):
    """Transpose of a tensor with at most 2 dims (0-d and 1-d tensors are returned as they are)."""
    _check(input, "t")
    if input.ndim > 2:
        raise ValueError(f"[t] expects a tensor with <= 2 dims, got shape {tuple(input.shape)}; use transpose")
    return input.transpose(0, 1) if input.ndim == 2 else input


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """``beta * input + alpha * (mat1 @ mat2)``; with ``beta=0`` ``input`` is ignored (NaN included). A sparse
    ``mat1`` takes ``sparse.addmm``."""
    if not isinstance(mat1, Tensor) and hasattr(mat1, "to_sparse_coo"):
        from .sparse import addmm as sparse_addmm
        return sparse_addmm(input, mat1, mat2, beta=beta, alpha=alpha)
    for a in (input, mat1, mat2):
        _check(a, "addmm")
    if mat1.ndim != 2 or mat2.ndim != 2:
        raise ValueError(f"[addmm] mat1 and mat2 must be 2-d, got shapes {tuple(mat1.shape)} and {tuple(mat2.shape)}")
    return _add_scaled(input, _C.mm(mat1, mat2), beta, alpha)


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta * input + alpha * (batch1 @ batch2)`` for batches of matrices (3-d tensors)."""
    if batch1.ndim != 3 or batch2.ndim != 3:
        raise ValueError(f"[baddbmm] batch1 and batch2 must be 3-d, got shapes {tuple(batch1.shape)} and "
                         f"{tuple(batch2.shape)}")
    return _add_scaled(input, _C.bmm(batch1, batch2), beta, alpha)


def _add_scaled(input, prod, beta, alpha):
    prod = prod if alpha == 1 else prod * alpha
    if beta == 0:
        return prod
    return prod + (input if beta == 1 else input * beta)


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``."""
    return input + tensor1 * tensor2 * value


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``."""
    return input + tensor1 / tensor2 * value


def clamp_min(input, min):
    """Elementwise ``max(input, min)``."""
    return _C.clamp(input, min, None)


def clamp_max(input, max):
    """Elementwise ``min(input, max)``."""
    return _C.clamp(input, None, max)


# The largest finite value of each floating dtype: nan_to_num's default bounds.
_FLOAT_MAX = {Dtype.FLOAT32: builtins.float(np.finfo(np.float32).max),
              Dtype.FLOAT64: builtins.float(np.finfo(np.float64).max),
              Dtype.FLOAT16: builtins.float(np.finfo(np.float16).max), Dtype.BFLOAT16: 3.3895313892515355e38}


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """Replaces NaN by ``nan``, +inf by ``posinf`` and -inf by ``neginf`` (default: the dtype's
    largest and smallest finite values; complex tensors: in each part). Integer and bool tensors are returned
    unchanged."""
    _check(input, "nan_to_num")
    if input.dtype.is_complex:  # each part, as PyTorch
        return _C.complex(*(nan_to_num(p, nan, posinf, neginf) for p in (_C._real(input), _C._imag(input))))
    top = _FLOAT_MAX.get(input.dtype)
    if top is None:
        return input.clone()
    posinf = top if posinf is None else builtins.float(posinf)
    neginf = -top if neginf is None else builtins.float(neginf)
    return _C._nan_to_num(input, builtins.float(nan), posinf, neginf)  # one pass


def diff(input, n=1, dim=-1, prepend=None, append=None):
    """The ``n``-th forward difference ``out[i] = x[i + 1] - x[i]`` along ``dim`` (bool: ``!=``),
    after concatenating ``prepend`` and ``append`` along ``dim``."""
    _check(input, "diff")
    if input.ndim == 0:
        raise ValueError("[diff] expects a tensor with at least 1 dim, got a 0-d tensor")
    d = _dim(dim, input.ndim, "diff")
    parts = [p for p in (prepend, input, append) if p is not None]
    x = _C.cat(parts, d) if len(parts) > 1 else input
    for _ in range(n):
        m = x.shape[d]
        if m == 0:
            break
        hi, lo = x.narrow(d, 1, m - 1), x.narrow(d, 0, m - 1)
        x = (hi != lo) if x.dtype == Dtype.BOOL else hi - lo
    return x


def _index_mask(self, dim, index, op):
    """True along ``dim`` at the positions listed in ``index``, shaped to broadcast against self."""
    d = _dim(dim, self.ndim, op)
    if index.ndim > 1:
        raise ValueError(f"[{op}] index must be 1-d, got shape {tuple(index.shape)}")
    n = self.shape[d] if self.ndim else 1
    ones = Tensor(np.ones(index.numel(), np.float32))
    hit = _C.index_add(Tensor(np.zeros(n, np.float32)), 0, index.reshape(-1), ones)
    shape = [1] * builtins.max(self.ndim, 1)
    shape[d] = n
    return (hit > 0).reshape(shape if self.ndim else []), d


_INDEX_DTYPES = (Dtype.INT64, Dtype.INT32)


def _copy_dim(input, dim, index, source, op):
    """``dim`` wrapped, after checking that ``source``'s slices fit ``input`` at the 1-d ``index``."""
    _check(input, op)
    if not isinstance(index, Tensor) or not isinstance(source, Tensor):
        raise TypeError(f"[{op}] index and source must be Tensors, got {type(index).__name__} and "
                        f"{type(source).__name__}")
    d = _dim(dim, input.ndim, op)
    if index.ndim > 1 or index.dtype not in _INDEX_DTYPES:
        raise ValueError(f"[{op}] index must be a 1-d int64 or int32 tensor, got shape {tuple(index.shape)} "
                         f"and {index.dtype}")
    if source.dtype != input.dtype:
        raise TypeError(f"[{op}] source dtype {source.dtype} must match the input's {input.dtype}")
    xs, ss = tuple(input.shape), tuple(source.shape)
    if input.ndim == 0 and source.numel() == 1 and index.numel() == 1:
        return d
    if ss != xs[:d] + (index.numel(),) + xs[d + 1:]:
        raise ValueError(f"[{op}] source of shape {ss} must have shape {xs[:d] + (index.numel(),) + xs[d + 1:]} "
                         f"for input {xs} and {index.numel()} indices along dim {d}")
    return d


def _spread(index, d, source):
    """The 1-d ``index`` as a view of ``source``'s shape: its values along ``d``, repeated elsewhere."""
    if source.ndim == 0:
        return index.reshape([])
    shape = [1] * source.ndim
    shape[d] = -1
    return index.reshape(shape).expand(*source.shape)


def index_copy(input, dim, index, source):
    """A copy of ``input`` whose slices ``index[i]`` along ``dim`` are ``source``'s slices ``i`` (the
    last one wins where an index repeats)."""
    if _backend.NAME == "c" and isinstance(index, Tensor) and isinstance(source, Tensor):
        return _C._index_copy(input, dim, index, source)
    d = _copy_dim(input, dim, index, source, "index_copy")
    if input.ndim == 0:
        return _C.scatter(input, 0, index.reshape([]), source.reshape([]))
    if d == 0:  # whole slices of the leading dim: copied as blocks
        return _C._index_put_front(input, [index.reshape(-1)], source, False)
    return _C.scatter(input, d, _spread(index, d, source), source)


def index_copy_(input, dim, index, source):
    """In-place form of ``index_copy``: writes ``source``'s slices into ``input`` at ``index`` along
    ``dim``, touching nothing else."""
    if _backend.NAME == "c" and isinstance(index, Tensor) and isinstance(source, Tensor):
        return _C._index_copy_(input, dim, index, source)
    d = _copy_dim(input, dim, index, source, "index_copy_")
    if input.ndim == 0:
        return input.scatter_(0, index.reshape([]), source.reshape([]))
    return input.scatter_(d, _spread(index, d, source), source)


def index_fill(input, dim, index, value):
    """A copy of ``input`` with the slices ``index`` along ``dim`` set to ``value``."""
    mask, _ = _index_mask(input, dim, index, "index_fill")
    value = value.item() if isinstance(value, Tensor) else value
    return _C.where(mask, value, input)


def masked_scatter(input, mask, source):
    """A copy of ``input`` where the positions that ``mask`` selects (in row-major order) take the
    leading elements of ``source``."""
    _check(input, "masked_scatter")
    if mask.dtype != Dtype.BOOL:
        raise TypeError(f"[masked_scatter] mask must be bool, got {mask.dtype}")
    m = mask.broadcast_to(tuple(input.shape)).reshape(-1)
    count = builtins.int(m.sum().item())
    if source.numel() < count:
        raise ValueError(f"[masked_scatter] mask selects {count} elements but source {tuple(source.shape)} has "
                         f"only {source.numel()}")
    pos = (_C.cumsum(m.to(Dtype.INT64), 0) - 1).clamp(0, None)
    picked = source.reshape(-1).index_select(0, pos) if source.numel() else input.reshape(-1).detach()
    return _C.where(m, picked, input.reshape(-1)).reshape(tuple(input.shape))


def _windows(x, d, size, step):
    """unfold's windows (x at least 1-d, d wrapped, the sizes checked) as a strided view of x's storage that
    overlaps itself, without autograd: for reading only."""
    shape, strides = list(x.shape), list(x.stride())
    shape[d], strides[d] = (shape[d] - size) // step + 1, strides[d] * step
    return _C._as_strided(x, shape + [size], strides + [x.stride()[d]], x.storage_offset())


def unfold(input, dimension, size, step):
    """All windows of length ``size`` taken every ``step`` along ``dimension``: that dim becomes the
    window count and a new last dim of length ``size`` holds each window (a copy, not a view)."""
    _check(input, "unfold")
    d = _dim(dimension, input.ndim, "unfold")
    n = input.shape[d] if input.ndim else 1
    if size < 0 or size > n or step <= 0:
        raise ValueError(f"[unfold] size {size} and step {step} do not fit dim {d} of length {n} "
                         f"(shape {tuple(input.shape)}): need 0 <= size <= {n} and step > 0")
    x = input.reshape([1]) if input.ndim == 0 else input
    count = (n - size) // step + 1
    if not (input.requires_grad and _C.is_grad_enabled()):  # no gradient: one copy of a strided view of the windows
        y = _windows(x, d, size, step).contiguous()
        return y.reshape([size]) if input.ndim == 0 else y
    idx = (np.arange(count)[:, None] * step + np.arange(size)[None, :]).reshape(-1)
    y = x.index_select(d, Tensor(idx.astype(np.int64)).to(x.device))
    y = _C.movedim(y.unflatten(d, (count, size)), d + 1, -1)
    return y.reshape([size]) if input.ndim == 0 else y


def cumprod(input, dim, dtype=None):
    """Cumulative product along ``dim``: ``out[i] = x[0] * ... * x[i]`` (integers and bool give int64,
    as PyTorch; ``dtype`` casts the input first). The gradient is exact where x holds zeros; it is
    first-order only."""
    _check(input, "cumprod")
    return _C.cumprod(input if dtype is None else input.to(dtype), dim)


def logcumsumexp(input, dim):
    """``out[i] = log(exp(x[0]) + ... + exp(x[i]))`` along ``dim``, computed stably (floating input;
    differentiable any number of times)."""
    _check(input, "logcumsumexp")
    return _C.logcumsumexp(input, dim)


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """Reduces ``src`` into a copy of ``input`` at ``index`` along ``dim`` (as ``scatter_add`` does for
    a sum) with ``reduce`` one of ``"sum"``, ``"prod"``, ``"mean"``, ``"amax"``, ``"amin"``; with
    ``include_self=False`` the original values of the scattered-to positions are left out."""
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise ValueError(f"[scatter_reduce] reduce must be sum, prod, mean, amax or amin, got {reduce!r}")
    if reduce in ("amax", "amin"):
        return _C.scatter_reduce_extreme(input, dim, index, src, reduce == "amax", bool(include_self))
    if reduce == "prod":
        return _C.scatter_reduce_prod(input, dim, index, src, bool(include_self))
    d = _dim(dim, input.ndim, "scatter_reduce")
    for i in range(src.ndim):  # only the part of src that index covers takes part
        if src.shape[i] != index.shape[i]:
            src = src.narrow(i, 0, index.shape[i])
    # the hit count in input's dtype, as PyTorch counts (a uint8 count wraps there too); made from zeros, not
    # input * 0, which is NaN where input is infinite
    hits = _C.scatter_add(zeros(tuple(input.shape), dtype=input.dtype, device=input.device), d, index,
                          ones(tuple(index.shape), dtype=input.dtype, device=index.device))
    hit = hits > 0
    # a zero of input's own dtype: a Python 0.0 here would promote integer inputs to float32
    base = input if include_self else _C.where(hit, zeros((), dtype=input.dtype, device=input.device), input)
    total = _C.scatter_add(base, d, index, src)
    if reduce == "sum":
        return total
    count = hits + 1 if include_self else hits
    count = _C.where(count > 0, count, 1)  # 1 where nothing landed (or a uint8 count wrapped to 0)
    if input.dtype in (Dtype.UINT8, Dtype.INT32, Dtype.INT64):  # PyTorch floors an integer mean (toward -inf)
        return _C.floor_divide(total, count).to(input.dtype)
    out = total / count
    return out if out.dtype == input.dtype else out.to(input.dtype)


def _indices(row, col, offset, upper, dtype, device):
    if _backend.NAME == "c":
        out = _C._tri_indices(row, col, offset, upper)
    else:
        r, c = np.indices((row, col))
        keep = (c - r >= offset) if upper else (c - r <= offset)
        out = Tensor(np.stack([r[keep], c[keep]]).astype(np.int64))
    from ._factories import _default_device, _dtype

    if dtype is not None:
        out = out.to(_dtype(dtype, Dtype.INT64))
    device = _default_device(device)
    return out if device is None else out.to(device)


def tril_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, N) row and column indices of the lower triangle of a ``row x col`` matrix."""
    return _indices(row, col, offset, False, dtype, device)


def triu_indices(row, col, offset=0, *, dtype=None, device=None):
    """The (2, N) row and column indices of the upper triangle of a ``row x col`` matrix."""
    return _indices(row, col, offset, True, dtype, device)


FUNCTIONS = {
    "t": t, "addmm": addmm, "baddbmm": baddbmm, "addcmul": addcmul, "addcdiv": addcdiv, "clamp_min": clamp_min,
    "clamp_max": clamp_max, "nan_to_num": nan_to_num, "diff": diff, "index_copy": index_copy,
    "index_fill": index_fill, "masked_scatter": masked_scatter, "cumprod": cumprod, "logcumsumexp": logcumsumexp,
    "scatter_reduce": scatter_reduce,
}
