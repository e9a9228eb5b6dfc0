"""Op-table entries: reductions and linear algebra."""

from __future__ import annotations

import numpy as np

from optable_base import *  # noqa: F401,F403  (specs, input descriptions, dtype rules, op())
from optable_base import X, op

# ---------------------------------------------------------------- reductions
R3 = (X((3, 4, 5)),)
R3d = (X((3, 4, 5), "distinct"),)


def _red(name, call, ref, dtypes, out=same, domain="normal", grad=True, **kw):
    cases = [(X((3, 4, 5), domain),), (X((6,), domain),)]
    op(name, call, ref, cases, dtypes=dtypes, out=out, grad=grad, **kw)


def _axes(a, d):
    return d if a.ndim > 1 else -1


def _acc(a):
    return np.float64 if a.dtype.kind == "f" else np.int64


_sum_tol = {"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 5e-2)}
_red("sum_all", lambda m, x: x.sum(), lambda a: np.sum(a, dtype=_acc(a)), ALL, out=summed, tol=_sum_tol)
for _dim, _kd, _tag in [(1, False, "d1"), (-1, True, "dlast_keep"), ((0, 2), False, "d02"),
                        ((0, -1), True, "d0last_keep")]:
    _red("sum_" + _tag, (lambda d, k: lambda m, x: x.sum(dim=_axes(x, d), keepdim=k))(_dim, _kd),
         (lambda d, k: lambda a: np.sum(a, axis=_axes(a, d), keepdims=k, dtype=_acc(a)))(_dim, _kd), ALL,
         out=summed, tol=_sum_tol)
op("sum_d0", lambda m, x: x.sum(dim=0), lambda a: np.sum(a, axis=0, dtype=_acc(a)), [(X((4, 3)),)], dtypes=ALL,
   out=summed, tol=_sum_tol)
op("sum_fn_dtype", lambda m, x: m.sum(x, dim=0, dtype=m.float64), lambda a: np.sum(a.astype(np.float64), 0),
   [(X((3, 4)),)], dtypes=ALL, out=lambda *d: "float64", grad=False)


def _mk(method, d, k, **kw):
    return lambda m, x: getattr(x, method)(dim=_axes(x, d), keepdim=k, **kw)


op("mean_all", lambda m, x: x.mean(), np.mean, [R3, (X(()),)])
op("nansum_d1", lambda m, x: x.nansum(1), lambda a: np.nansum(a, 1), [(X((4, 6), "special"),)], grad=False)
op("nanmean_d0", lambda m, x: m.nanmean(x, 0), lambda a: np.nanmean(a, 0), [(X((5, 4)),)])
op("mean_d1", _mk("mean", 1, False), lambda a: np.mean(a, axis=_axes(a, 1)), [R3, (X((6,)),)])
op("mean_d02_keep", _mk("mean", (0, 2), True), lambda a: np.mean(a, axis=_axes(a, (0, 2)), keepdims=True), [R3])
for _c in (0, 1, 2):
    op(f"var_c{_c}", (lambda c: lambda m, x: x.var(dim=_axes(x, (0, 2)), correction=c))(_c),
       (lambda c: lambda a: np.var(a, axis=_axes(a, (0, 2)), ddof=c))(_c), [R3, (X((6,)),)],
       tol={"float16": (5e-3, 5e-3), "bfloat16": (4e-2, 4e-2)})
    op(f"std_c{_c}", (lambda c: lambda m, x: x.std(dim=_axes(x, 1), correction=c, keepdim=True))(_c),
       (lambda c: lambda a: np.std(a, axis=_axes(a, 1), ddof=c, keepdims=True))(_c), [R3, (X((6,)),)],
       tol={"float16": (5e-3, 5e-3), "bfloat16": (4e-2, 4e-2)})
op("var_all", lambda m, x: x.var(), lambda a: np.var(a, ddof=1), [R3])
op("std_unbiased_false", lambda m, x: x.std(1, False), lambda a: np.std(a, axis=1), [R3])
op("prod_all", lambda m, x: x.prod(), lambda a: np.prod(a, dtype=np.float64 if a.dtype.kind == "f" else np.int64),
   [(X((2, 3), "positive"),), (X((4,), "unit"),)], dtypes=ALL, out=summed)
op("prod_d1", lambda m, x: x.prod(dim=-1, keepdim=True),
   lambda a: np.prod(a, axis=-1, keepdims=True, dtype=np.float64 if a.dtype.kind == "f" else np.int64),
   [(X((3, 4), "unit"),), (X((2, 3, 4), "positive"),)], dtypes=ALL, out=summed)
op("prod_d0", lambda m, x: x.prod(dim=0),
   lambda a: np.prod(a, axis=0, dtype=np.float64 if a.dtype.kind == "f" else np.int64),
   [(X((4, 3), "unit"),)], dtypes=ALL, out=summed)
op("prod_with_zero", lambda m, x: (x * (x > 0)).prod(dim=1),
   lambda a: np.prod(a * (a > 0), axis=1), [(X((4, 3), "nonzero"),)], dtypes=("float64", "float32"))
op("prod_zeros_d1", lambda m, x: x.prod(dim=1), lambda a: np.prod(a, axis=1), [(X((8, 3), "zeros"),)])
op("prod_zeros_all", lambda m, x: x.prod(), np.prod, [(X((5,), "zeros"),), (X((2, 2), "zeros"),)])
for _n, _r in [("amax", np.max), ("amin", np.min)]:
    op(_n + "_all", (lambda n: lambda m, x: getattr(m, n)(x))(_n), _r, [R3d, (X(()),)], dtypes=ALL)
    op(_n + "_d02", (lambda n: lambda m, x: getattr(x, n)(dim=(0, 2)))(_n), (lambda r: lambda a: r(a, axis=(0, 2)))(_r),
       [R3d], dtypes=ALL)
    op(_n + "_d0", (lambda n: lambda m, x: getattr(x, n)(dim=0))(_n), (lambda r: lambda a: r(a, axis=0))(_r),
       [(X((4, 3), "distinct"),)], dtypes=ALL)
    op(_n + "_ties", (lambda n: lambda m, x: getattr(x, n)(dim=1, keepdim=True))(_n),
       (lambda r: lambda a: r(a, axis=1, keepdims=True))(_r), [(X((3, 4), "small"),)], fd=False)
op("max_all", lambda m, x: x.max(), np.max, [R3d], dtypes=ALL)
op("min_all", lambda m, x: m.min(x), np.min, [R3d], dtypes=ALL)
op("max_all_ties", lambda m, x: x.max(), np.max, [(X((3, 4), "small"),)], fd=False)
op("max_dim", lambda m, x: tuple(x.max(dim=1)), lambda a: (np.max(a, 1), np.argmax(a, 1)), [R3d, (X((3, 4), "distinct"),)],
   dtypes=ALL, out=values_indices)
op("min_dim_keep", lambda m, x: tuple(m.min(x, -1, keepdim=True)),
   lambda a: (np.min(a, -1, keepdims=True), np.argmin(a, -1, keepdims=True)), [R3d, (X((7,), "distinct"),)], dtypes=ALL, out=values_indices)
op("max_elementwise", lambda m, a, b: m.max(a, b), np.maximum, bcast("distinct", "distinct"), dtypes=NUMERIC)
op("argmax_all", lambda m, x: x.argmax(), np.argmax, [R3d], dtypes=NUMERIC, out=int64, grad=False)
op("argmax_d1", lambda m, x: m.argmax(x, dim=1), lambda a: np.argmax(a, 1), [R3d], dtypes=NUMERIC, out=int64, grad=False)
op("argmin_keep", lambda m, x: x.argmin(dim=-1, keepdim=True), lambda a: np.argmin(a, -1, keepdims=True), [R3d],
   dtypes=NUMERIC, out=int64, grad=False)
op("argmax_ties", lambda m, x: x.argmax(dim=1), lambda a: np.argmax(a, 1), [(X((5, 6), "small"),)], dtypes=NUMERIC,
   out=int64, grad=False)



def running_extremes(a, axis, is_max):
    """Running maxima (``is_max``) or minima along ``axis`` by NumPy (NaN propagates) and the index where
    each was reached: the last j <= k whose element equals the running value (NaN matching NaN), which
    is what taking ties and NaNs at the later index gives."""
    vals = (np.maximum if is_max else np.minimum).accumulate(a, axis)
    m, v = np.moveaxis(a, axis, -1), np.moveaxis(vals, axis, -1)
    n = m.shape[-1]
    if n == 0:
        return vals, np.zeros(a.shape, np.int64)
    same = v[..., :, None] == m[..., None, :]
    if a.dtype.kind == "f":
        same |= np.isnan(v[..., :, None]) & np.isnan(m[..., None, :])
    same &= np.arange(n) <= np.arange(n)[:, None]  # [..., k, j]: j <= k
    return vals, np.moveaxis(n - 1 - np.argmax(same[..., ::-1], -1), -1, axis)


op("cummax_d1", lambda m, x: tuple(m.cummax(x, 1)), lambda a: running_extremes(a, 1, True), [R3d], dtypes=ALL,
   out=values_indices)
op("cummin_d0", lambda m, x: tuple(x.cummin(0)), lambda a: running_extremes(a, 0, False), [R3d, (X((7,), "distinct"),)],
   dtypes=ALL, out=values_indices)

def _lse(a, axis, keepdims=False):
    mx = np.max(a, axis=axis, keepdims=True)
    r = np.log(np.sum(np.exp(a - mx), axis=axis, keepdims=True)) + mx
    return r if keepdims else np.squeeze(r, axis=axis)


op("logsumexp_d1", lambda m, x: m.logsumexp(x, dim=1), lambda a: _lse(a, 1), [R3, (X((3, 4)),)],
   tol={"bfloat16": (2e-2, 3e-2)})
op("logsumexp_d02_keep", lambda m, x: x.logsumexp(dim=(0, 2), keepdim=True), lambda a: _lse(a, (0, 2), True), [R3],
   tol={"bfloat16": (2e-2, 3e-2)})
op("logsumexp_int", lambda m, x: x.logsumexp(dim=-1), lambda a: _lse(a.astype(np.float64), -1), [(X((3, 4)),)],
   dtypes=("int32", "int64"), out=floating, grad=False)
for _p, _pr in [(2, 2), (1, 1), (3, 3), (float("inf"), np.inf), (0, 0)]:
    op(f"norm_p{_p}", (lambda p: lambda m, x: x.norm(p=p))(_p),
       (lambda p: lambda a: np.linalg.norm(a.reshape(-1), ord=p))(_pr), [(X((3, 4), "nonzero"),)],
       grad=_p != 0, tol={"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)})
op("norm_dim", lambda m, x: x.norm(dim=1, keepdim=True), lambda a: np.linalg.norm(a, axis=1, keepdims=True),
   [R3], tol={"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)})
op("norm_dims", lambda m, x: m.norm(x, p=1, dim=(0, 2)), lambda a: np.abs(a).sum(axis=(0, 2)), [(X((3, 4, 5), "nonzero"),)],
   tol={"bfloat16": (3e-2, 3e-2), "float16": (4e-3, 4e-3)})
for _n, _r in [("all", np.all), ("any", np.any)]:
    op(_n, (lambda n: lambda m, x: getattr(x, n)())(_n), _r, [(X((3, 4), "small"),), (X((2, 3), "nonzero"),)],
       dtypes=ALL, out=any_all)
    op(_n + "_dim", (lambda n: lambda m, x: getattr(m, n)(x, dim=1, keepdim=True))(_n),
       (lambda r: lambda a: r(a, axis=1, keepdims=True))(_r), [(X((3, 4, 5), "small"),)], dtypes=ALL, out=any_all)
    op(_n + "_dims", (lambda n: lambda m, x: getattr(m, n)(x, dim=(0, 2)))(_n),
       (lambda r: lambda a: r(a, axis=(0, 2)))(_r), [(X((3, 4, 2), "small"),)], dtypes=ALL, out=any_all)
op("cumsum_d0", lambda m, x: x.cumsum(0), lambda a: np.cumsum(a, 0, dtype=np.float64 if a.dtype.kind == "f" else np.int64),
   [R3, (X((6,)),)], dtypes=ALL, out=summed, tol={"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 5e-2)})
op("cumsum_dlast", lambda m, x: m.cumsum(x, dim=-1),
   lambda a: np.cumsum(a, -1, dtype=np.float64 if a.dtype.kind == "f" else np.int64),
   [R3], dtypes=ALL, out=summed, tol={"float16": (4e-3, 4e-3), "bfloat16": (3e-2, 5e-2)})

# ---------------------------------------------------------------- linear algebra
MM = [(X((4,)), X((4,))), (X((3, 4)), X((4,))), (X((4,)), X((4, 5))), (X((3, 4)), X((4, 5))),
      (X((2, 3, 4)), X((2, 4, 5))), (X((2, 3, 4)), X((4, 5))), (X((3, 4)), X((2, 4, 5))),
      (X((2, 1, 3, 4)), X((3, 4, 2))), (X((2, 3, 4)), X((4,)))]
_mm_tol = {"float16": (4e-3, 8e-3), "bfloat16": (2e-2, 6e-2), "float32": (1e-5, 1e-5)}
op("matmul", lambda m, a, b: a @ b, np.matmul, MM, dtypes=BLAS, tol=_mm_tol)
op("matmul_fn", lambda m, a, b: m.matmul(a, b), np.matmul, [(X((5, 7)), X((7, 3)))], dtypes=BLAS, tol=_mm_tol)
op("bmm", lambda m, a, b: m.bmm(a, b), np.matmul, [(X((2, 3, 4)), X((2, 4, 5)))], dtypes=BLAS, tol=_mm_tol)
op("mm", lambda m, a, b: m.mm(a, b), np.matmul, [(X((3, 4)), X((4, 2)))], dtypes=BLAS, tol=_mm_tol)
op("outer", lambda m, a, b: m.outer(a, b), np.outer, [(X((3,)), X((4,)))], dtypes=NUMERIC)
op("dot", lambda m, a, b: m.dot(a, b), np.dot, [(X((5,)), X((5,)))], dtypes=BLAS, tol=_mm_tol)
