"""CPU autocasting (``torch.autocast("cpu", dtype=torch.bfloat16)``), as PyTorch does it.

While a thread has CPU autocast on, the ops of PyTorch's CPU lists run with their floating arguments (float32,
float16 or bfloat16 CPU tensors; float64 is never cast) cast first: matrix products, convolutions, ``linear``,
``prelu`` and attention to the autocast dtype, losses and the other precision-sensitive ops of the float32 list
to float32. Inside such an op autocasting is off, as PyTorch's dispatcher excludes it, so an op's own inner
products keep its dtype. Casts of leaf tensors that require grad (parameters) are cached until the outermost
region ends, as PyTorch's are. Calls with ``out=`` or an explicit ``dtype=`` are not cast.

The casts are wrappers put, while any thread has autocast on, in place of those functions in every public
module holding them and in place of the Tensor methods (``utils.wrapping``); each wrapper reads the calling
thread's state, so other threads are unaffected. When the last thread turns autocast off they are put back, so
code that never autocasts never meets them.
"""

from __future__ import annotations

import functools
import importlib
import threading

from ._C_face import Dtype, Tensor

# PyTorch 2.13's CPU lists, by the names SneppX has (module, names).
_LOWER = {
    "sneppx_core": ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "conv1d", "conv2d", "conv3d",
                    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "conv_tbc", "prelu", "einsum",
                    "tensordot", "inner", "chain_matmul"),
    "sneppx_core.functional": ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                               "conv_transpose3d", "prelu", "scaled_dot_product_attention", "bilinear"),
    "sneppx_core.linalg": ("matmul", "multi_dot", "vecdot"),
}
_LOSSES = ("cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
           "binary_cross_entropy_with_logits", "kl_div", "margin_ranking_loss", "cosine_embedding_loss",
           "hinge_embedding_loss", "poisson_nll_loss", "soft_margin_loss", "triplet_margin_loss", "multi_margin_loss",
           "multilabel_margin_loss", "ctc_loss")
_FP32 = {
    "sneppx_core": _LOSSES + ("prod", "cdist", "trace", "quantile", "nanquantile", "inverse", "pinverse", "cholesky",
                              "cholesky_solve", "cholesky_inverse", "lu_solve", "orgqr", "ormqr", "max_pool3d"),
    "sneppx_core.functional": _LOSSES + ("grid_sample", "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d",
                                         "max_unpool2d", "max_unpool3d"),
    "sneppx_core.linalg": ("cholesky", "cholesky_ex", "inv", "inv_ex", "det", "slogdet", "eigh", "eigvalsh", "lstsq",
                           "lu", "lu_factor", "lu_factor_ex", "lu_solve", "matrix_norm", "matrix_rank", "pinv", "qr",
                           "solve", "solve_ex", "solve_triangular", "svd", "svdvals", "tensorinv", "tensorsolve",
                           "householder_product", "ldl_factor", "ldl_factor_ex", "ldl_solve", "matrix_exp"),
}
_LOWER_METHODS = ("matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "inner", "prelu", "__matmul__", "__rmatmul__")
_FP32_METHODS = ("prod", "trace", "quantile", "nanquantile", "inverse", "pinverse", "cholesky", "cholesky_solve",
                 "cholesky_inverse", "lu_solve", "orgqr", "ormqr")
_ELIGIBLE = (Dtype.FLOAT32, Dtype.FLOAT16, Dtype.BFLOAT16)

_local = threading.local()  # .dtype: the autocast dtype while on (None when off); .cache: {id: (t, version, cast)}
_lock = threading.Lock()
_threads_on = [0]
CACHE = [True]  # set_autocast_cache_enabled; an autocast region's cache_enabled sets it for the region
_installed: list = []


def is_enabled() -> bool:
    """Whether CPU autocast is on in this thread."""
    return getattr(_local, "dtype", None) is not None


def set_enabled(enabled: bool, dtype) -> None:
    """Turns CPU autocast on (with ``dtype``) or off in this thread; the wrappers are in place while any
    thread has it on."""
    was = is_enabled()
    _local.dtype = dtype if enabled else None
    if enabled != was:
        with _lock:
            _threads_on[0] += 1 if enabled else -1
            if enabled and _threads_on[0] == 1:
                _install()
            elif not enabled and _threads_on[0] == 0:
                _uninstall()


def enter(enabled: bool, dtype, cache_enabled=None) -> tuple:
    """Starts an ``autocast("cpu")`` region in this thread; returns what :func:`leave` restores."""
    saved = (is_enabled(), getattr(_local, "dtype", None), CACHE[0])
    _local.depth = getattr(_local, "depth", 0) + 1
    if cache_enabled is not None:
        CACHE[0] = bool(cache_enabled)
    set_enabled(enabled, dtype)
    return saved


def leave(saved: tuple) -> None:
    """Ends a region: the state before it comes back, and the cast cache goes with the outermost one."""
    was, dtype, CACHE[0] = saved
    _local.depth -= 1
    if _local.depth == 0:
        clear_cache()
    set_enabled(was, dtype)


def clear_cache() -> None:
    """Drops this thread's cached casts (at the end of the outermost autocast region)."""
    _local.cache = {}


def _cast(t, dtype):
    if not isinstance(t, Tensor) or t.dtype == dtype or t.dtype not in _ELIGIBLE or t.device.type != "cpu":
        return t
    if t.is_leaf and t.requires_grad and CACHE[0]:
        cache = getattr(_local, "cache", None)
        if cache is None:
            cache = _local.cache = {}
        hit = cache.get(id(t))
        if hit is not None and hit[0] is t and hit[1] == t._version and hit[2].dtype == dtype:
            return hit[2]
        out = t.to(dtype)
        cache[id(t)] = (t, t._version, out)
        return out
    return t.to(dtype)


def _cast_arg(a, dtype):
    if isinstance(a, (list, tuple)) and any(isinstance(e, Tensor) for e in a):
        return type(a)(_cast(e, dtype) for e in a)
    return _cast(a, dtype)


def _wrapper(fn, lower: bool):
    @functools.wraps(fn, updated=())
    def autocast_wrapper(*args, **kwargs):  # calls through __wrapped__, which utils.wrapping.put_back may re-point
        fn = autocast_wrapper.__wrapped__
        dtype = getattr(_local, "dtype", None)
        if dtype is None or kwargs.get("out") is not None or kwargs.get("dtype") is not None:
            return fn(*args, **kwargs)
        target = dtype if lower else Dtype.FLOAT32
        args = tuple(_cast_arg(a, target) for a in args)
        kwargs = {k: _cast_arg(v, target) for k, v in kwargs.items()}
        _local.dtype = None  # inner ops keep the op's dtype, as under PyTorch's dispatcher
        try:
            return fn(*args, **kwargs)
        finally:
            _local.dtype = dtype

    return autocast_wrapper


def _install() -> None:
    from .utils import wrapping

    wrappers = {}
    for table, lower in ((_LOWER, True), (_FP32, False)):
        for modname, names in table.items():
            module = importlib.import_module(modname)
            for fn in filter(None, (vars(module).get(name) for name in names)):
                wrappers.setdefault(id(fn), (fn, _wrapper(fn, lower)))
    _installed.extend(wrapping.replace_everywhere(wrappers))
    for names, lower in ((_LOWER_METHODS, True), (_FP32_METHODS, False)):
        _installed.extend(wrapping.replace_methods(Tensor, names, lambda _, method, low=lower: _wrapper(method, low)))


def _uninstall() -> None:
    from .utils import wrapping

    wrapping.put_back(_installed)


__all__: list = []
