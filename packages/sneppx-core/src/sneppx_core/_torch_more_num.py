"""PyTorch's search, counting, spacing, window and sampling functions, composed from core ops:
``searchsorted``/``bucketize``/``isin``/``unravel_index``/``histc``, ``logspace``, the signal windows,
``normal``/``poisson``/``binomial`` (drawn from the default generator, so ``manual_seed`` fixes them) and
the default generator's state (``initial_seed``, ``get_rng_state``, ``set_rng_state``)."""

from __future__ import annotations

import builtins
import math

import numpy as np

from ._backend import NAME as _BACKEND, _C
from ._C_face import Dtype, Tensor
from ._factories import _finish, _float_dtype, _shape
from ._tensor_extra import _need
from ._tensor_math import _FLOATS

_F64 = Dtype.FLOAT64
_CHUNK = 1 << 22  # elements of one comparison block


def _number_or_tensor(v, op, what):
    if isinstance(v, Tensor):
        return v
    if isinstance(v, (builtins.int, builtins.float, builtins.bool, np.number)):
        return Tensor(v)
    raise TypeError(f"[{op}] expected {what} to be a Tensor or a number, got {type(v).__name__}")


def _count_below(seq, vals, right):
    """Per value, how many of the sorted ``seq`` (..., M) lie below it (``<=`` when ``right``); ``vals`` is
    (..., K) with the same leading dims. ``!(s >= v)`` puts NaN values after every boundary, as PyTorch."""
    m, k = seq.shape[-1], vals.shape[-1]
    lead = math.prod(vals.shape[:-1])
    step = builtins.max(1, _CHUNK // builtins.max(1, m * lead))
    parts = []
    for j in range(0, k, step):
        v = vals.narrow(-1, j, builtins.min(step, k - j)).unsqueeze(-1)
        hit = _C.logical_not(seq.unsqueeze(-2) > v) if right else _C.logical_not(seq.unsqueeze(-2) >= v)
        parts.append(hit.sum(-1))
    return _C.cat(parts, -1) if len(parts) > 1 else parts[0]


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Insertion points keeping ``sorted_sequence`` (sorted along its last dim) sorted: the first i with
    ``seq[i] >= v`` (``> v`` with ``right=True`` or ``side="right"``)."""
    seq = _need(sorted_sequence, "searchsorted", "sorted_sequence")
    vals = _number_or_tensor(input, "searchsorted", "input")
    if side not in (None, "left", "right"):
        raise ValueError(f"[searchsorted] side must be 'left' or 'right', got {side!r}")
    if side == "left" and right:
        raise ValueError("[searchsorted] side='left' and right=True contradict each other")
    right = right or side == "right"
    if seq.ndim == 0:
        raise ValueError("[searchsorted] sorted_sequence must have at least 1 dim, got a 0-d tensor")
    if sorter is not None:
        _need(sorter, "searchsorted", "sorter")
        if tuple(sorter.shape) != tuple(seq.shape) or sorter.dtype != Dtype.INT64:
            raise ValueError(f"[searchsorted] sorter must be int64 with shape {tuple(seq.shape)}, got "
                             f"{sorter.dtype} {tuple(sorter.shape)}")
        seq = seq.gather(-1, sorter)
    if seq.ndim == 1:
        out = _count_below(seq, vals.reshape(-1), right).reshape(tuple(vals.shape))
    else:
        if vals.ndim != seq.ndim or tuple(vals.shape[:-1]) != tuple(seq.shape[:-1]):
            raise ValueError(f"[searchsorted] sorted_sequence{tuple(seq.shape)} and input{tuple(vals.shape)} "
                             "must share all but the last dim (or sorted_sequence must be 1-d)")
        out = _count_below(seq, vals, right) if vals.shape[-1] else _C._zeros(list(vals.shape), Dtype.INT64, None)
    return out.to(Dtype.INT32) if out_int32 else out


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value: i with ``boundaries[i-1] < v <= boundaries[i]`` (``<= v <`` when ``right``)."""
    b = _need(boundaries, "bucketize", "boundaries")
    if b.ndim != 1:
        raise ValueError(f"[bucketize] boundaries must be 1-d, got shape {tuple(b.shape)}")
    return searchsorted(b, _number_or_tensor(input, "bucketize", "input"), out_int32=out_int32, right=right)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """A bool tensor shaped like ``elements``: whether each element equals one of ``test_elements``."""
    if not isinstance(elements, Tensor) and not isinstance(test_elements, Tensor):
        raise TypeError("[isin] expected elements or test_elements to be a Tensor, got two numbers")
    e = _number_or_tensor(elements, "isin", "elements")
    t = _number_or_tensor(test_elements, "isin", "test_elements").reshape(-1)
    flat = e.reshape(-1)
    n, m = flat.shape[0], t.shape[0]
    if m == 0 or n == 0:
        out = _C._zeros(list(e.shape), Dtype.BOOL, None)
    else:
        step = builtins.max(1, _CHUNK // m)
        parts = [(flat.narrow(0, j, builtins.min(step, n - j)).unsqueeze(1) == t.unsqueeze(0)).any(1)
                 for j in range(0, n, step)]
        out = (_C.cat(parts, 0) if len(parts) > 1 else parts[0]).reshape(tuple(e.shape))
    return _C.logical_not(out) if invert else out


def unravel_index(indices, shape):
    """The coordinates (one int64 tensor per dim) of flat ``indices`` into a C-ordered tensor of ``shape``;
    indices in [-numel, numel) are accepted (negative ones count from the end)."""
    _need(indices, "unravel_index", "indices")
    if indices.dtype in _FLOATS or indices.dtype == Dtype.BOOL:
        raise TypeError(f"[unravel_index] indices must be integers, got {indices.dtype}")
    shape = (shape,) if isinstance(shape, builtins.int) else tuple(shape)
    for s in shape:
        if isinstance(s, builtins.bool) or not isinstance(s, (builtins.int, np.integer)) or s < 0:
            raise ValueError(f"[unravel_index] shape must hold non-negative integers, got {shape}")
    total = math.prod(shape)
    if total >= 1 << 63:
        raise ValueError(f"[unravel_index] shape {shape} has more than 2**63 - 1 elements")
    idx = indices.to(Dtype.INT64)
    if idx.numel() and builtins.bool(((idx < -total) | (idx >= total)).any()):
        raise ValueError(f"[unravel_index] an index is out of range for shape {shape} ({total} elements)")
    idx = _C.remainder(idx, builtins.max(total, 1))
    out = []
    for s in reversed(shape):
        out.append(_C.remainder(idx, s))
        idx = _C.floor_divide(idx, s)
    return tuple(reversed(out))


def histc(input, bins=100, min=0, max=0):  # noqa: A002
    """Counts of ``input`` in ``bins`` equal-width bins over [min, max] (the data's range when min == max);
    bin ``floor((x - min) * bins / (max - min))``, x == max in the last bin, values outside ignored."""
    x = _need(input, "histc")
    if x.dtype not in _FLOATS:
        raise TypeError(f"[histc] expects a floating tensor, got {x.dtype}")
    if isinstance(bins, builtins.bool) or not isinstance(bins, builtins.int) or bins <= 0:
        raise ValueError(f"[histc] bins must be a positive integer, got {bins!r}")
    lo, hi = builtins.float(min), builtins.float(max)
    if lo > hi:
        raise ValueError(f"[histc] max ({hi}) must be >= min ({lo})")
    flat = x.detach().reshape(-1)
    if lo == hi and flat.numel():
        lo, hi = flat.amin().item(), flat.amax().item()
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"[histc] range [{lo}, {hi}] is not finite")
    keep = (flat >= lo) & (flat <= hi)
    vals = flat.masked_select(keep)
    pos = ((vals - lo) * bins / (hi - lo)).floor().to(Dtype.INT64).clamp(0, bins - 1)
    counts = _C._zeros([bins], x.dtype, None)
    counts = counts if str(x.device) == "cpu" else _C._to_device(counts, x.device)
    return counts.scatter_add(0, pos, _C._full([pos.shape[0]], 1, x.dtype, None).to(x.device))


def logspace(start, end, steps, base=10.0, *, dtype=None, device=None, requires_grad=False):
    """``steps`` values ``base ** t`` for ``t`` evenly spaced from ``start`` to ``end`` inclusive."""
    vals = [builtins.float(v.item() if isinstance(v, Tensor) else v) for v in (start, end, base)]
    if isinstance(steps, builtins.bool) or not isinstance(steps, builtins.int) or steps < 0:
        raise ValueError(f"[logspace] steps must be a non-negative integer, got {steps!r}")
    t = _C._linspace(vals[0], vals[1], steps, _F64)
    return _finish((vals[2] ** t).to(_float_dtype(dtype)), requires_grad, device)


# ---------------------------------------------------------------- windows
def _window(op, n, periodic, dtype, device, requires_grad, formula):
    """``formula(k, m)`` at k = 0..m-1 (m = n, or n + 1 dropping the last point when ``periodic``)."""
    if isinstance(n, builtins.bool) or not isinstance(n, builtins.int) or n < 0:
        raise ValueError(f"[{op}] window_length must be a non-negative integer, got {n!r}")
    dt = _float_dtype(dtype)
    if dt not in _FLOATS:
        raise TypeError(f"[{op}] expects a floating dtype, got {dt}")
    if n <= 1:
        return _finish(_C._full([n], 1, dt, None), requires_grad, device)
    m = n + 1 if periodic else n
    w = formula(_C._arange(0.0, builtins.float(m), 1.0, _F64), m)
    return _finish(w.narrow(0, 0, n).to(dt), requires_grad, device)


def hann_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """Hann window ``0.5 - 0.5 cos(2 pi k / (M - 1))``."""
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 0.5 - 0.5 * _C.cos(k * (2 * math.pi / (m - 1))))


def hamming_window(window_length, periodic=True, alpha=0.54, beta=0.46, *, dtype=None, device=None,
                   requires_grad=False):
    """Hamming window ``alpha - beta cos(2 pi k / (M - 1))``."""
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: alpha - beta * _C.cos(k * (2 * math.pi / (m - 1))))


def blackman_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """Blackman window ``0.42 - 0.5 cos(2 pi k / (M - 1)) + 0.08 cos(4 pi k / (M - 1))``."""
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 0.42 - 0.5 * _C.cos(k * (2 * math.pi / (m - 1)))
                   + 0.08 * _C.cos(k * (4 * math.pi / (m - 1))))


def bartlett_window(window_length, periodic=True, *, dtype=None, device=None, requires_grad=False):
    """Bartlett (triangular) window ``1 - |2k / (M - 1) - 1|``."""
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: 1 - _C.abs(k * (2.0 / (m - 1)) - 1))


def _i0(x):
    """Modified Bessel function I0 by its power series ``sum_j ((x/2)^j / j!)^2`` (float64)."""
    q = (x * 0.5) * (x * 0.5)
    term, total = _C._full(list(x.shape), 1, _F64, None), _C._full(list(x.shape), 1, _F64, None)
    for j in range(1, 5000):
        term = term * q / (j * j)
        total = total + term
        if not builtins.bool((term > total * 1e-17).any()):
            break
    return total


def kaiser_window(window_length, periodic=True, beta=12.0, *, dtype=None, device=None, requires_grad=False):
    """Kaiser window ``I0(beta sqrt(1 - (2k / (M - 1) - 1)^2)) / I0(beta)``."""
    b = builtins.float(beta)
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda k, m: _i0(b * _C.sqrt((1 - (k * (2.0 / (m - 1)) - 1) ** 2).clamp(min=0.0)))
                   / _i0(_C._full([1], b, _F64, None)))


# ---------------------------------------------------------------- sampling
def _zero_grad_link(out, *inputs):
    """``out`` joined to the inputs that require grad with zero gradient (PyTorch's samplers are not
    reparameterised: their gradient is 0, but the result is part of the graph)."""
    never = None
    for x in inputs:
        if isinstance(x, Tensor) and x.requires_grad:
            never = _C._zeros(list(out.shape), Dtype.BOOL, None) if never is None else never
            out = _C.where(never, x.to(out.dtype), out)
    return out


def normal(mean, std=1.0, size=None, *, generator=None, dtype=None, device=None, requires_grad=False):
    """Samples ``mean + std * z`` with z standard normal: tensor mean and/or std broadcast together, or two
    numbers with ``size``. The gradient with respect to tensor arguments is 0, as in PyTorch."""
    tensors = [v for v in (mean, std) if isinstance(v, Tensor)]
    for v, what in ((mean, "mean"), (std, "std")):
        if not isinstance(v, (Tensor, builtins.int, builtins.float, np.number)) or isinstance(v, builtins.bool):
            raise TypeError(f"[normal] {what} must be a Tensor or a number, got {type(v).__name__}")
        if isinstance(v, Tensor) and v.dtype not in _FLOATS:
            raise TypeError(f"[normal] {what} must be floating, got {v.dtype}")
    if not tensors:
        if size is None:
            raise TypeError("[normal] with a number mean and std, size is required")
        if not std >= 0:
            raise ValueError(f"[normal] std must be >= 0, got {std}")
        shape = _shape((size,), "normal")
        out = _C._randn(shape, _float_dtype(dtype), generator) * builtins.float(std)
        out = out + builtins.float(mean)
        return _finish(out, requires_grad, device)
    if size is not None:
        raise TypeError("[normal] size is only accepted with a number mean and std")
    if isinstance(std, Tensor):
        if std.numel() and builtins.bool((std < 0).any()):
            raise ValueError("[normal] std must be >= 0, got a negative entry")
    elif not std >= 0:
        raise ValueError(f"[normal] std must be >= 0, got {std}")
    dt = tensors[0].dtype
    m = mean.detach() if isinstance(mean, Tensor) else mean
    s = std.detach() if isinstance(std, Tensor) else std
    shapes = [tuple(v.shape) if isinstance(v, Tensor) else () for v in (m, s)]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        raise ValueError(f"[normal] mean{shapes[0]} and std{shapes[1]} cannot be broadcast together") from None
    z = _C._randn(list(shape), dt, generator).to(tensors[0].device)
    return _zero_grad_link(z * s + m, mean, std)


def _rates(x, op, what):
    if x.dtype not in _FLOATS:
        raise TypeError(f"[{op}] {what} must be floating, got {x.dtype}")
    return x.detach().to(_F64)


_TAIL = [math.lgamma(k + 1) - (0.5 * math.log(2 * math.pi) + (k + 0.5) * math.log(k + 1) - (k + 1))
         for k in range(10)]


def _stirling_tail(k):
    """``lgamma(k + 1) - (log(2 pi)/2 + (k + 1/2) log(k + 1) - (k + 1))`` for k >= 0 (table below 10)."""
    kp1 = k + 1
    series = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / (kp1 * kp1)) / (kp1 * kp1)) / kp1
    table = Tensor(np.array(_TAIL)).to(k.device).index_select(0, k.clamp(0, 9).to(Dtype.INT64).reshape(-1))
    return _C.where(k < 10, table.reshape(tuple(k.shape)), series)


def _log_factorial(k):
    return 0.5 * math.log(2 * math.pi) + (k + 0.5) * _C.log(k + 1) - (k + 1) + _stirling_tail(k)


def _rejection(op, shape, generator, propose):
    """Repeats ``propose(u, v) -> (value, accepted)`` for the not yet accepted entries."""
    out = _C._zeros(list(shape), _F64, None)
    done = _C._zeros(list(shape), Dtype.BOOL, None)
    for _ in range(10000):
        u = _C._rand(list(shape), _F64, generator) - 0.5
        v = _C._rand(list(shape), _F64, generator)
        value, ok = propose(u, v)
        take = ok & _C.logical_not(done)
        out, done = _C.where(take, value, out), done | take
        if builtins.bool(done.all()):
            return out
    raise RuntimeError(f"[{op}] rejection sampling did not finish")


def _finite_k(k):
    return _C.where(_C.isfinite(k), k, -1.0).clamp(-1.0, 1e15)


def poisson(input, generator=None):
    """Poisson samples with rates ``input`` (>= 0): inversion below rate 10, Hormann's PTRS above."""
    lam = _rates(_need(input, "poisson"), "poisson", "rates")
    if lam.numel() and not builtins.bool((lam >= 0).all()):
        raise ValueError("[poisson] rates must be non-negative (and not NaN)")
    shape, small = tuple(lam.shape), lam < 10
    ls = _C.where(small, lam, 0.0)
    u = _C._rand(list(shape), _F64, generator)
    p = _C.exp(-ls)
    cdf, k = p, _C._zeros(list(shape), _F64, None)
    for i in range(1, 200):
        active = (u > cdf) & small
        if not builtins.bool(active.any()):
            break
        k = k + active.to(_F64)
        p = p * ls / i
        cdf = cdf + p
    lb = _C.where(small, 10.0, lam)
    slam, loglam = _C.sqrt(lb), _C.log(lb)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha, vr = 1.1239 + 1.1328 / (b - 3.4), 0.9277 - 3.6224 / (b - 2)

    def propose(uu, vv):
        us = 0.5 - _C.abs(uu)
        kk = _finite_k(((2 * a / us + b) * uu + lb + 0.43).floor())
        quick = (us >= 0.07) & (vv <= vr)
        ok = (kk >= 0) & _C.logical_not((us < 0.013) & (vv > us))
        lhs = _C.log(vv) + _C.log(invalpha) - _C.log(a / (us * us) + b)
        accept = (quick & (kk >= 0)) | (ok & (lhs <= -lb + kk * loglam - _log_factorial(kk.clamp(min=0.0))))
        return kk, accept | small

    if builtins.bool(_C.logical_not(small).any()):
        k = _C.where(small, k, _rejection("poisson", shape, generator, propose))
    return _zero_grad_link(k.to(input.dtype).to(input.device), input)


def binomial(count, prob, generator=None):
    """Binomial(count, prob) samples (broadcast): waiting times below count * p = 10, Hormann's BTRS above."""
    n = _rates(_need(count, "binomial", "count"), "binomial", "count")
    p = _rates(_need(prob, "binomial", "prob"), "binomial", "prob")
    n, p = n + p * 0, p + n * 0
    if n.numel() and not builtins.bool(((n >= 0) & _C.isfinite(n)).all()):
        raise ValueError("[binomial] count must be finite and non-negative")
    if p.numel() and not builtins.bool(((p >= 0) & (p <= 1)).all()):
        raise ValueError("[binomial] prob must be in [0, 1]")
    shape = tuple(n.shape)
    flip = p > 0.5
    q = _C.where(flip, 1 - p, p)
    small = n * q < 10
    qs = _C.where(small, q, 0.0)
    log1mq = _C.log1p(-qs)
    total, k = _C._zeros(list(shape), _F64, None), _C._zeros(list(shape), _F64, None)
    for _ in range(100000):
        total = total + (_C.log(_C._rand(list(shape), _F64, generator)) / log1mq).ceil()
        more = (total <= n) & small
        if not builtins.bool(more.any()):
            break
        k = k + more.to(_F64)
    nb, qb = _C.where(small, 100.0, n), _C.where(small, 0.5, q)
    spq = _C.sqrt(nb * qb * (1 - qb))
    b = 1.15 + 2.53 * spq
    a = -0.0873 + 0.0248 * b + 0.01 * qb
    c, vr, r = nb * qb + 0.5, 0.92 - 4.2 / b, qb / (1 - qb)
    alpha, m = (2.83 + 5.1 / b) * spq, ((nb + 1) * qb).floor()

    def propose(uu, vv):
        us = 0.5 - _C.abs(uu)
        kk = _finite_k(((2 * a / us + b) * uu + c).floor())
        bad = (kk < 0) | (kk > nb)
        ks = _C.where(bad, 0.0, kk)
        quick = (us >= 0.07) & (vv <= vr)
        lv = _C.log(vv * alpha / (a / (us * us) + b))
        ub = ((m + 0.5) * _C.log((m + 1) / (r * (nb - m + 1))) + (nb + 1) * _C.log((nb - m + 1) / (nb - ks + 1))
              + (ks + 0.5) * _C.log(r * (nb - ks + 1) / (ks + 1)) + _stirling_tail(m) + _stirling_tail(nb - m)
              - _stirling_tail(ks) - _stirling_tail(nb - ks))
        return ks, (_C.logical_not(bad) & (quick | (lv <= ub))) | small

    if builtins.bool(_C.logical_not(small).any()):
        k = _C.where(small, k, _rejection("binomial", shape, generator, propose))
    k = _C.where(flip, n - k, k)
    return _zero_grad_link(k.to(count.dtype).to(count.device), count, prob)


# ---------------------------------------------------------------- the default generator's state
def initial_seed():
    """The seed the default generator started from (``manual_seed``'s argument)."""
    return _C.default_generator().initial_seed()


def _int_state():
    state = _C.default_generator().get_state()
    if not (isinstance(state, tuple) and len(state) == 2 and all(isinstance(v, builtins.int) for v in state)):
        raise NotImplementedError(f"[get_rng_state] the default generator of the {_BACKEND!r} backend exposes no "
                                  "integer (seed, offset) state to save as bytes; use manual_seed instead")
    return state


def get_rng_state():
    """The default generator's state as a uint8 tensor of 16 bytes (seed, then offset, little-endian)."""
    seed, offset = _int_state()
    raw = seed.to_bytes(8, "little") + offset.to_bytes(8, "little")
    return Tensor(np.frombuffer(raw, dtype=np.uint8).copy(), dtype=Dtype.UINT8)


def set_rng_state(new_state):
    """Restores the default generator from a ``get_rng_state()`` tensor."""
    _need(new_state, "set_rng_state", "new_state")
    if new_state.dtype != Dtype.UINT8 or tuple(new_state.shape) != (16,):
        raise ValueError(f"[set_rng_state] expected a uint8 tensor of shape (16,) from get_rng_state(), got "
                         f"{new_state.dtype} {tuple(new_state.shape)}")
    _int_state()
    raw = bytes(new_state.cpu().numpy().tobytes()) if hasattr(new_state, "cpu") else new_state.numpy().tobytes()
    _C.default_generator().set_state((builtins.int.from_bytes(raw[:8], "little"),
                                      builtins.int.from_bytes(raw[8:], "little")))


FUNCTIONS = {f.__name__: f for f in (
    searchsorted, bucketize, isin, unravel_index, logspace, hann_window, hamming_window, blackman_window,
    bartlett_window, kaiser_window, normal, poisson, binomial, initial_seed, get_rng_state, set_rng_state)}
