"""More of PyTorch's top-level functions, composed from core ops (differentiable where PyTorch's are):
conversion (``as_tensor``, ``asarray``), grids and stacking (``meshgrid``, ``hstack``, ``block_diag``, ...),
products and distances (``kron``, ``tensordot``, ``cross``, ``cdist``), statistics (``cov``, ``corrcoef``)
and integration (``trapezoid``). ``FUNCTIONS`` holds the module-level names (with those of
``_torch_more_num``); ``METHODS`` the ones PyTorch also has as Tensor methods."""

from __future__ import annotations

import builtins
import functools
import itertools
import math

import numpy as np

from . import _torch_more_num
from ._backend import _C
from ._C_face import Device, Dtype, Tensor
from ._factories import _default_device, _dtype, _float_dtype, float32, warn_if_widened
from ._tensor_extra import _need
from ._tensor_math import _FLOATS

_INTS = (Dtype.INT32, Dtype.INT64, Dtype.UINT8)


def _seq(tensors, op):
    """The tensors of ``f(a, b)`` or ``f([a, b])`` as a list (each checked)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tensors[0]
    return [_need(t, op, "every argument") for t in tensors]


def _dim(d, ndim, op):
    n = builtins.max(ndim, 1)
    if isinstance(d, builtins.bool) or not isinstance(d, builtins.int) or not -n <= d < n:
        raise IndexError(f"[{op}] dim {d!r} is out of range for a tensor with {ndim} dims")
    return d % n


def _promoted(a, b):
    """The dtype PyTorch's promotion gives two tensors (not 0-d) of dtypes ``a`` and ``b``."""
    return _C.add(_C._zeros([1], a, None), _C._zeros([1], b, None)).dtype


def _promote(tensors):
    dt = functools.reduce(_promoted, [t.dtype for t in tensors])
    return [t if t.dtype == dt else t.to(dt) for t in tensors]


# ---------------------------------------------------------------- conversion
def _from_numpy(a, dt):
    """A tensor sharing ``a``'s memory, or None when its dtype (or ``dt``) rules that out."""
    try:
        t = Tensor.from_numpy(a)
    except (TypeError, ValueError, RuntimeError):
        return None
    return t if dt is None or dt == t.dtype else None


def _same_device(t, device):
    return device is None or str(t.device) == str(Device(device) if isinstance(device, str) else device)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, sharing memory with a tensor or NumPy array when dtype and device allow."""
    device = _default_device(device)
    dt = None if dtype is None else _dtype(dtype, None)
    if isinstance(data, Tensor):
        out = data if dt is None or dt == data.dtype else data.to(dt)
        return out if _same_device(out, device) else _C._to_device(out, device)
    if isinstance(data, np.ndarray) and (device is None or str(device) == "cpu"):
        out = _from_numpy(data, dt)
        if out is not None:
            return out
    if dt is None:
        warn_if_widened(data, "as_tensor", 4)  # (called through _guarded)
    return Tensor(data, dtype=dt, device=device)


def asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None):
    """``obj`` as a tensor: shared when possible (``copy=None``), always copied (``copy=True``) or never
    copied (``copy=False``: ValueError when a copy is needed). ``requires_grad=None`` keeps ``obj``'s graph."""
    device = _default_device(device)
    dt = None if dtype is None else _dtype(dtype, None)
    shared = None
    if isinstance(obj, Tensor) and (dt is None or dt == obj.dtype) and _same_device(obj, device):
        shared = obj
    elif isinstance(obj, np.ndarray) and (device is None or str(device) == "cpu"):
        shared = _from_numpy(obj, dt)
    if copy is False and shared is None:
        raise ValueError(f"[asarray] copy=False but a {type(obj).__name__} cannot be aliased as dtype={dt} on "
                         f"device={device}")
    if shared is not None and not copy:
        out = shared
    elif isinstance(obj, Tensor):
        out = as_tensor(obj.clone(), dtype=dt, device=device)
    else:
        if dt is None:
            warn_if_widened(obj, "asarray", 4)
        out = Tensor(obj, dtype=dt, device=device)
    if requires_grad is False and out.requires_grad:
        out = out.detach()
    elif requires_grad and not out.requires_grad:
        out.requires_grad_(True)
    return out


def scalar_tensor(s, *, dtype=None, device=None, requires_grad=False):
    """A 0-d tensor holding the number ``s`` (float32 unless ``dtype`` says otherwise, as in PyTorch)."""
    if isinstance(s, Tensor) or not isinstance(s, (builtins.int, builtins.float, builtins.bool, np.number)):
        raise TypeError(f"[scalar_tensor] expected a Python number, got {type(s).__name__}")
    out = Tensor(builtins.float(s), dtype=_float_dtype(dtype), device=_default_device(device))
    return out.requires_grad_(True) if requires_grad else out


# ---------------------------------------------------------------- grids and stacking
def broadcast_shapes(*shapes):
    """The shape that ``shapes`` (ints or sequences of ints) broadcast to, as a tuple."""
    out = []
    for s in shapes:
        s = (s,) if isinstance(s, builtins.int) else tuple(s)
        for d in s:
            if isinstance(d, builtins.bool) or not isinstance(d, (builtins.int, np.integer)) or d < 0:
                raise ValueError(f"[broadcast_shapes] sizes must be non-negative integers, got {s}")
        pad = len(s) - len(out)
        out = [1] * builtins.max(pad, 0) + out
        for i, d in enumerate(s):
            j = len(out) - len(s) + i
            if out[j] == 1:
                out[j] = builtins.int(d)
            elif d != 1 and d != out[j]:
                raise ValueError(f"[broadcast_shapes] shapes {shapes} cannot be broadcast together")
    return tuple(out)


def broadcast_tensors(*tensors):
    """The tensors expanded (as views) to their common broadcast shape."""
    ts = _seq(tensors, "broadcast_tensors")
    shape = broadcast_shapes(*[t.shape for t in ts])
    return tuple(t if tuple(t.shape) == shape else t.broadcast_to(shape) for t in ts)


def meshgrid(*tensors, indexing="ij"):
    """Coordinate grids of 0-d/1-d tensors: with ``indexing="ij"`` output ``i`` varies along dim ``i``;
    ``"xy"`` swaps the first two dims (Cartesian indexing)."""
    ts = _seq(tensors, "meshgrid")
    if indexing not in ("ij", "xy"):
        raise ValueError(f"[meshgrid] indexing must be 'ij' or 'xy', got {indexing!r}")
    for i, t in enumerate(ts):
        if t.ndim > 1:
            raise ValueError(f"[meshgrid] expects 0-d or 1-d tensors, input {i} has shape {tuple(t.shape)}")
        if t.dtype != ts[0].dtype or str(t.device) != str(ts[0].device):
            raise TypeError(f"[meshgrid] expects tensors of one dtype and device, got {ts[0].dtype} on "
                            f"{ts[0].device} and {t.dtype} on {t.device}")
    axes = list(range(len(ts)))
    if indexing == "xy" and len(ts) >= 2:
        axes[0], axes[1] = 1, 0
    shape = [0] * len(ts)
    for t, a in zip(ts, axes):
        shape[a] = t.numel()
    out = []
    for t, a in zip(ts, axes):
        view = [1] * len(ts)
        view[a] = t.numel()
        out.append(t.reshape(view).expand(*shape))
    return tuple(out)


def _atleast(tensors, n, op):
    ts = _seq(tensors, op)
    out = []
    for t in ts:
        if t.ndim < n:  # as NumPy: (k,) -> (1, k) -> (1, k, 1), (m, k) -> (m, k, 1)
            shape = [1] * (n - t.ndim) + list(t.shape) if n < 3 or t.ndim == 0 else \
                [1] * (t.ndim == 1) + list(t.shape) + [1]
            t = t.reshape(shape)
        out.append(t)
    single = len(tensors) == 1 and not isinstance(tensors[0], (list, tuple))
    return out[0] if single else tuple(out)


def atleast_1d(*tensors):
    """Each tensor viewed with at least 1 dim (0-d becomes shape (1,))."""
    return _atleast(tensors, 1, "atleast_1d")


def atleast_2d(*tensors):
    """Each tensor viewed with at least 2 dims: (n,) becomes (1, n)."""
    return _atleast(tensors, 2, "atleast_2d")


def atleast_3d(*tensors):
    """Each tensor viewed with at least 3 dims: (n,) becomes (1, n, 1), (m, n) becomes (m, n, 1)."""
    return _atleast(tensors, 3, "atleast_3d")


def _cat(ts, dim, op):
    if not ts:
        raise ValueError(f"[{op}] expects a non-empty sequence of tensors")
    return _C.cat(_promote(ts), dim)


def hstack(tensors):
    """Tensors joined column-wise: along dim 0 for 1-d inputs, else dim 1."""
    ts = list(_atleast(list(_seq((tensors,), "hstack")), 1, "hstack"))
    return _cat(ts, 0 if ts and ts[0].ndim == 1 else 1, "hstack")


def vstack(tensors):
    """Tensors joined row-wise (dim 0) after ``atleast_2d``."""
    return _cat(list(_atleast(list(_seq((tensors,), "vstack")), 2, "vstack")), 0, "vstack")


def row_stack(tensors):
    """Alias of ``vstack``."""
    return vstack(tensors)


def dstack(tensors):
    """Tensors joined depth-wise (dim 2) after ``atleast_3d``."""
    return _cat(list(_atleast(list(_seq((tensors,), "dstack")), 3, "dstack")), 2, "dstack")


def column_stack(tensors):
    """0-d/1-d tensors as columns (n, 1), joined with the others along dim 1."""
    ts = [t.reshape(t.numel(), 1) if t.ndim <= 1 else t for t in _seq((tensors,), "column_stack")]
    return _cat(ts, 1, "column_stack")


def concatenate(tensors, axis=0, *, dim=None):
    """Alias of ``cat`` (``axis`` or ``dim``)."""
    ts = _seq((tensors,), "concatenate")
    return _cat(ts, axis if dim is None else dim, "concatenate")


def block_diag(*tensors):
    """A block-diagonal matrix of 0-d/1-d/2-d tensors (0-d is 1x1, (n,) is 1xn); dtypes are promoted."""
    ts = _seq(tensors, "block_diag")
    for i, t in enumerate(ts):
        if t.ndim > 2:
            raise ValueError(f"[block_diag] inputs must have <= 2 dims, input {i} has shape {tuple(t.shape)}")
    if not ts:
        return _C._zeros([1, 0], float32, None)
    ts = _promote([t.reshape(1, -1) if t.ndim < 2 else t for t in ts])
    cols = builtins.sum(t.shape[1] for t in ts)
    rows, left = [], 0
    for t in ts:
        r, c = t.shape
        parts = [_C._zeros([r, left], t.dtype, None), t, _C._zeros([r, cols - left - c], t.dtype, None)]
        rows.append(_C.cat([p if str(p.device) == str(t.device) else _C._to_device(p, t.device) for p in parts], 1))
        left += c
    return _C.cat(rows, 0)


def cartesian_prod(*tensors):
    """Cartesian product of 1-d tensors, one row per combination (``itertools.product`` order)."""
    ts = _seq(tensors, "cartesian_prod")
    for i, t in enumerate(ts):
        if t.ndim != 1:
            raise ValueError(f"[cartesian_prod] expects 1-d tensors, input {i} has shape {tuple(t.shape)}")
    if len(ts) == 1:
        return ts[0]
    return _C.stack([g.reshape(-1) for g in meshgrid(ts, indexing="ij")], 1)


def combinations(input, r=2, with_replacement=False):
    """The length-``r`` combinations of a 1-d tensor's elements (``itertools.combinations`` order)."""
    _need(input, "combinations")
    if input.ndim != 1:
        raise ValueError(f"[combinations] expects a 1-d tensor, got shape {tuple(input.shape)}")
    if isinstance(r, builtins.bool) or not isinstance(r, builtins.int) or r < 0:
        raise ValueError(f"[combinations] r must be a non-negative integer, got {r!r}")
    if r == 0:
        return _C._zeros([0], input.dtype, None)
    n = input.numel()
    count = math.comb(n + r - 1, r) if with_replacement else math.comb(n, r)
    if count * r > 1 << 28:
        raise MemoryError(f"[combinations] {count} combinations of length {r} are too many")
    gen = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = np.fromiter(itertools.chain.from_iterable(gen(range(n), r)), dtype=np.int64, count=count * r)
    return input.index_select(0, Tensor(idx).to(input.device) if str(input.device) != "cpu" else Tensor(idx)) \
        .reshape(count, r)


# ---------------------------------------------------------------- products and distances
def kron(input, other):
    """Kronecker product: ``out[i*B + j] = input[i] * other[j]`` per dim (shapes padded to equal rank)."""
    a, b = _need(input, "kron"), _need(other, "kron", "other")
    nd = builtins.max(a.ndim, b.ndim)
    sa, sb = [1] * (nd - a.ndim) + list(a.shape), [1] * (nd - b.ndim) + list(b.shape)
    a2 = a.reshape([x for s in sa for x in (s, 1)])
    b2 = b.reshape([x for s in sb for x in (1, s)])
    return (a2 * b2).reshape([x * y for x, y in zip(sa, sb)])


def tensordot(a, b, dims=2, out=None):
    """Sum of products over ``dims``: an int n (last n dims of a with first n of b) or a pair of dim lists."""
    _need(a, "tensordot", "a"), _need(b, "tensordot", "b")
    if out is not None:
        raise TypeError("[tensordot] out= is not supported")
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, builtins.int) and not isinstance(dims, builtins.bool):
        if not 0 <= dims <= builtins.min(a.ndim, b.ndim):
            raise ValueError(f"[tensordot] dims={dims} must be in [0, {builtins.min(a.ndim, b.ndim)}] for shapes "
                             f"{tuple(a.shape)} and {tuple(b.shape)}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    elif isinstance(dims, (list, tuple)) and len(dims) == 2:
        da, db = ([d] if isinstance(d, builtins.int) else list(d) for d in dims)
    else:
        raise TypeError(f"[tensordot] dims must be an int or a pair of dim lists, got {dims!r}")
    if len(da) != len(db):
        raise ValueError(f"[tensordot] dims lists must have equal lengths, got {da} and {db}")
    da, db = [_dim(d, a.ndim, "tensordot") for d in da], [_dim(d, b.ndim, "tensordot") for d in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise ValueError(f"[tensordot] contracted dims differ: a{tuple(a.shape)} dim {i} has size {a.shape[i]}, "
                             f"b{tuple(b.shape)} dim {j} has size {b.shape[j]}")
    fa, fb = [d for d in range(a.ndim) if d not in da], [d for d in range(b.ndim) if d not in db]
    k = math.prod(a.shape[d] for d in da)
    a, b = _promote([a, b])
    am = a.permute(*(fa + da)).reshape(math.prod(a.shape[d] for d in fa), k)
    bm = b.permute(*(db + fb)).reshape(k, math.prod(b.shape[d] for d in fb))
    return _C.mm(am, bm).reshape([a.shape[d] for d in fa] + [b.shape[d] for d in fb])


def cross(input, other, dim=None):
    """Cross product of 3-vectors along ``dim`` (default: the first dim of size 3), broadcasting the inputs."""
    a, b = broadcast_tensors(_need(input, "cross"), _need(other, "cross", "other"))
    if dim is None:
        dim = next((i for i, s in enumerate(a.shape) if s == 3), None)
        if dim is None:
            raise ValueError(f"[cross] no dim of size 3 in shapes {tuple(input.shape)} and {tuple(other.shape)}")
    d = _dim(dim, a.ndim, "cross")
    if a.ndim == 0 or a.shape[d] != 3:
        raise ValueError(f"[cross] dim {dim} must have size 3, got shapes {tuple(input.shape)} and "
                         f"{tuple(other.shape)}")
    a0, a1, a2 = (a.select(d, i) for i in range(3))
    b0, b1, b2 = (b.select(d, i) for i in range(3))
    return _C.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], d)


def _safe_root(s, p):
    """``s ** (1/p)`` with gradient 0 (not NaN) where ``s == 0``."""
    pos = s > 0
    root = _C.sqrt(_C.where(pos, s, 1.0)) if p == 2 else _C.pow(_C.where(pos, s, 1.0), 1.0 / p)
    return _C.where(pos, root, 0.0)


def cdist(x1, x2, p=2.0, compute_mode="use_mm_for_euclid_dist_if_necessary"):
    """p-norm distances ``out[..., i, j] = ||x1[..., i, :] - x2[..., j, :]||_p`` (batch dims broadcast);
    p=0 counts differing coordinates, p=inf takes the largest difference."""
    _need(x1, "cdist", "x1"), _need(x2, "cdist", "x2")
    if x1.ndim < 2 or x2.ndim < 2 or x1.shape[-1] != x2.shape[-1]:
        raise ValueError(f"[cdist] expects x1 (..., P, M) and x2 (..., R, M), got {tuple(x1.shape)} and "
                         f"{tuple(x2.shape)}")
    if x1.dtype not in _FLOATS or x2.dtype != x1.dtype:
        raise TypeError(f"[cdist] expects floating tensors of one dtype, got {x1.dtype} and {x2.dtype}")
    p = builtins.float(p)
    if not p >= 0:
        raise ValueError(f"[cdist] p must be >= 0, got {p}")
    modes = ("use_mm_for_euclid_dist_if_necessary", "use_mm_for_euclid_dist", "donot_use_mm_for_euclid_dist")
    if compute_mode not in modes:
        raise ValueError(f"[cdist] compute_mode must be one of {modes}, got {compute_mode!r}")
    batch = broadcast_shapes(x1.shape[:-2], x2.shape[:-2])
    x1 = x1.broadcast_to(batch + tuple(x1.shape[-2:]))
    x2 = x2.broadcast_to(batch + tuple(x2.shape[-2:]))
    big = x1.shape[-2] > 25 or x2.shape[-2] > 25
    if p == 2 and (compute_mode == modes[1] or (compute_mode == modes[0] and big)):
        n1 = (x1 * x1).sum(-1, keepdim=True)
        n2 = (x2 * x2).sum(-1, keepdim=True).transpose(-2, -1)
        return _safe_root((n1 + n2 - 2 * _C.matmul(x1, x2.transpose(-2, -1))).clamp(min=0.0), 2)
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)
    if p == 0:
        return (diff != 0).sum(-1).to(x1.dtype)
    a = _C.abs(diff)
    if p == 1:
        return a.sum(-1)
    if math.isinf(p):
        return a.amax(-1) if a.shape[-1] else a.sum(-1)
    if p == 2:
        return _safe_root((diff * diff).sum(-1), 2)
    nz = a > 0
    return _safe_root(_C.where(nz, _C.pow(_C.where(nz, a, 1.0), p), 0.0).sum(-1), p)


# ---------------------------------------------------------------- statistics and integration
def cov(input, *, correction=1, fweights=None, aweights=None):
    """Covariance of the rows (variables) over the columns (observations):
    ``sum_k w_k (x_ik - m_i)(x_jk - m_j) / (sum w - correction * sum(w a) / sum w)``, ``w = fweights * aweights``."""
    _need(input, "cov")
    if input.ndim > 2:
        raise ValueError(f"[cov] expects at most 2 dims, got shape {tuple(input.shape)}")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    x = x if x.dtype in _FLOATS else x.to(float32)
    n = x.shape[1]
    w = None
    for name, wt in (("fweights", fweights), ("aweights", aweights)):
        if wt is None:
            continue
        _need(wt, "cov", name)
        if wt.ndim > 1 or wt.numel() != n:
            raise ValueError(f"[cov] {name} must be 0-d/1-d with {n} elements, got shape {tuple(wt.shape)}")
        if name == "fweights" and wt.dtype not in _INTS:
            raise TypeError(f"[cov] fweights must be integers, got {wt.dtype}")
        if name == "aweights" and wt.dtype not in _FLOATS:
            raise TypeError(f"[cov] aweights must be floating, got {wt.dtype}")
        if builtins.bool((wt < 0).any()):
            raise ValueError(f"[cov] {name} must be non-negative")
        w = wt if w is None else w * wt
    if w is None:
        avg, w_sum = x.mean(1), None
        norm = builtins.max(n - correction, 0)
    else:
        w_sum = w.sum()
        avg = (x * w).sum(1) / w_sum
        if correction == 0:
            norm = w_sum
        elif aweights is None:
            norm = w_sum - correction
        else:
            norm = w_sum - correction * (w * aweights).sum() / w_sum
        norm = norm.clamp(min=0.0) if isinstance(norm, Tensor) else norm
    xm = x - avg.unsqueeze(1)
    c = _C.mm(xm, (xm if w is None else xm * w).transpose(0, 1))
    return (c / norm if not (isinstance(norm, builtins.int) and norm == 0) else c / 0.0).squeeze()


def corrcoef(input):
    """Pearson correlation of the rows: ``cov / (std_i std_j)``, clipped to [-1, 1]."""
    c = cov(_need(input, "corrcoef"))
    if c.ndim == 0:
        return c / c
    std = _C.sqrt(c.diagonal())
    return (c / std.unsqueeze(1) / std.unsqueeze(0)).clamp(-1.0, 1.0)


def _trapz_dx(y, x, dim, op):
    """The widths of the intervals along ``dim`` from the sample points ``x`` (1-d, or broadcastable to y)."""
    _need(x, op, "x")
    m = y.shape[dim]
    if x.ndim == 1:
        if x.shape[0] != m:
            raise ValueError(f"[{op}] x has {x.shape[0]} points but y{tuple(y.shape)} has {m} along dim {dim}")
        view = [1] * y.ndim
        view[dim] = m
        x = x.reshape(view)
        xd = dim
    else:
        xd = _dim(dim - y.ndim, x.ndim, op)
        if x.shape[xd] != m:
            raise ValueError(f"[{op}] x{tuple(x.shape)} and y{tuple(y.shape)} differ in size along dim {dim}")
    return x.narrow(xd, 1, m - 1) - x.narrow(xd, 0, m - 1)


def trapezoid(y, x=None, *, dx=None, dim=-1):
    """Trapezoidal rule along ``dim``: ``sum_i (x_{i+1} - x_i) (y_i + y_{i+1}) / 2`` (spacing ``dx``, default 1)."""
    _need(y, "trapezoid", "y")
    d = _dim(dim, y.ndim, "trapezoid")
    if x is not None and dx is not None:
        raise TypeError("[trapezoid] pass x or dx, not both")
    m = y.shape[d] if y.ndim else 1
    if m == 0:
        return _C._zeros([s for i, s in enumerate(y.shape) if i != d], y.sum().to(float32).dtype
                         if y.dtype not in _FLOATS else y.dtype, None)
    if x is not None:
        return (_trapz_dx(y, x, d, "trapezoid") * (y.narrow(d, 1, m - 1) + y.narrow(d, 0, m - 1))).sum(d) / 2
    dx = 1 if dx is None else dx
    return (y.sum(d) - (y.select(d, 0) + y.select(d, -1)) * 0.5) * dx


def trapz(y, x=None, *, dx=None, dim=-1):
    """Alias of ``trapezoid``."""
    return trapezoid(y, x, dx=dx, dim=dim)


def cumulative_trapezoid(y, x=None, *, dx=None, dim=-1):
    """Running trapezoidal integral along ``dim`` (one element fewer than ``y`` there)."""
    _need(y, "cumulative_trapezoid", "y")
    d = _dim(dim, y.ndim, "cumulative_trapezoid")
    if x is not None and dx is not None:
        raise TypeError("[cumulative_trapezoid] pass x or dx, not both")
    m = builtins.max(y.shape[d] if y.ndim else 1, 1)
    pair = y.narrow(d, 1, m - 1) + y.narrow(d, 0, m - 1)
    if x is not None:
        return _C.cumsum(_trapz_dx(y, x, d, "cumulative_trapezoid") * pair / 2, d)
    return _C.cumsum(pair * ((1 if dx is None else dx) / 2.0), d)


def vander(x, N=None, increasing=False):
    """Vandermonde matrix: column j is ``x ** (N-1-j)`` (``x ** j`` when ``increasing``); ints become int64."""
    _need(x, "vander", "x")
    if x.ndim != 1:
        raise ValueError(f"[vander] x must be 1-d, got shape {tuple(x.shape)}")
    n = x.shape[0] if N is None else N
    if isinstance(n, builtins.bool) or not isinstance(n, builtins.int) or n < 0:
        raise ValueError(f"[vander] N must be a non-negative integer, got {N!r}")
    x = x if x.dtype in _FLOATS or x.dtype == Dtype.INT64 else x.to(Dtype.INT64)
    if n == 0:
        return _C._zeros([x.shape[0], 0], x.dtype, None)
    ones = _C._full([x.shape[0], 1], 1, x.dtype, None)
    ones = ones if str(x.device) == "cpu" else _C._to_device(ones, x.device)
    out = _C.cat([ones, x.unsqueeze(1).expand(x.shape[0], n - 1)], 1).cumprod(1) if n > 1 else ones
    return out if increasing else out.flip(1)


def rsub(input, other, *, alpha=1):
    """``other - alpha * input``."""
    _need(input, "rsub")
    return other - (input if alpha == 1 else input * alpha)


def _guarded(fn, name):
    """``fn`` turning stray AttributeError / overflow into TypeError / ValueError naming the op."""

    @functools.wraps(fn)
    def op(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except AttributeError as e:
            raise TypeError(f"[{name}] unsupported argument types "
                            f"({', '.join(type(a).__name__ for a in args)}): {e}") from None
        except (OverflowError, ZeroDivisionError) as e:
            raise ValueError(f"[{name}] argument out of range: {e}") from None

    return op


METHODS = {"cross": cross, "kron": kron, "cov": cov, "corrcoef": corrcoef, "histc": _torch_more_num.histc}
_PLAIN = [as_tensor, asarray, scalar_tensor, broadcast_shapes, broadcast_tensors, meshgrid, atleast_1d, atleast_2d,
          atleast_3d, hstack, vstack, row_stack, dstack, column_stack, concatenate, block_diag, cartesian_prod,
          combinations, tensordot, cdist, trapezoid, trapz, cumulative_trapezoid, vander, rsub]
FUNCTIONS = {f.__name__: _guarded(f, f.__name__) for f in _PLAIN}
FUNCTIONS.update({k: _guarded(v, k) for k, v in _torch_more_num.FUNCTIONS.items()})
