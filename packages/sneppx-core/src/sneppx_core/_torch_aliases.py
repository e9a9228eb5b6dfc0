"""PyTorch's top-level forms of functionality that lives elsewhere in sneppx_core, with ``torch.``'s
signatures (which often differ from ``torch.nn.functional``'s in argument order and defaults):

- the in-place functions (``sneppx_core.exp_(x)`` is ``x.exp_()``), generated from the Tensor methods;
- the neural-network functions PyTorch exposes at top level (``batch_norm``, ``dropout``, ``conv2d``,
  the losses with integer ``reduction``, ...), delegating to ``sneppx_core.functional``;
- predicates and dtype helpers (``is_floating_point``, ``promote_types``, ``can_cast``, ...) and a few
  numerical functions (``gradient``, ``histogram``, ``chain_matmul``, ``spmm``, ``frobenius_norm``, ``fill``).

``FUNCTIONS`` holds the module-level names (none of them becomes a Tensor method).
"""

from __future__ import annotations

import builtins
import numbers
from collections import namedtuple

import numpy as np

from . import functional as F
from ._backend import _C
from ._C_face import Dtype, Tensor
from ._factories import _default_float, _set_default_float, ones, tensor
from ._functional_composed import _feature_dropout as _channels_dropout
from ._functional_composed import _probability
from ._tensor_extra import _need
from ._tensor_math import _FLOATS
from ._torch_more import _guarded, _promoted

_RANK = {Dtype.BOOL: 0, Dtype.UINT8: 1, Dtype.INT8: 1, Dtype.INT16: 1, Dtype.INT32: 1, Dtype.INT64: 1,
         Dtype.FLOAT16: 2, Dtype.BFLOAT16: 2, Dtype.FLOAT32: 2, Dtype.FLOAT64: 2, Dtype.COMPLEX64: 3,
         Dtype.COMPLEX128: 3}
_REDUCTIONS = {0: "none", 1: "mean", 2: "sum"}


def _need_dtype(d, op, what):
    if not isinstance(d, Dtype):
        raise TypeError(f"[{op}] expected {what} to be a dtype such as sneppx_core.float32, got {d!r}")
    return d


def _reduction(r, op):
    """PyTorch's top-level losses take ``reduction`` as an int: 0 'none', 1 'mean', 2 'sum'."""
    if isinstance(r, builtins.bool) or not isinstance(r, numbers.Integral) or int(r) not in _REDUCTIONS:
        raise TypeError(f"[{op}] reduction must be the int 0 (none), 1 (mean) or 2 (sum), got {r!r}; "
                        "the string names are for sneppx_core.functional")
    return _REDUCTIONS[int(r)]


def _stride(stride):
    """``stride=[]`` (PyTorch's top-level default) means the kernel size."""
    return None if stride is None or (isinstance(stride, (list, tuple)) and len(stride) == 0) else stride


def _in_place(input, out):
    return input if out is input else input.copy_(out)


# ---------------------------------------------------------------- in-place forms of Tensor methods
INPLACE = [
    "abs_", "acos_", "acosh_", "arccos_", "arccosh_", "arcsin_", "arcsinh_", "arctan_", "arctanh_", "asin_",
    "asinh_", "atan_", "atanh_", "ceil_", "clamp_", "clamp_max_", "clamp_min_", "clip_", "cos_", "cosh_",
    "deg2rad_", "detach_", "erf_", "erfc_", "exp_", "exp2_", "expm1_", "fix_", "floor_", "frac_", "log_", "log10_",
    "log1p_", "log2_", "logit_", "nan_to_num_", "neg_", "negative_", "rad2deg_", "reciprocal_", "relu_", "round_",
    "rsqrt_", "selu_", "celu_", "sigmoid_", "sin_", "sinc_", "sinh_", "sqrt_", "square_", "tan_", "tanh_",
    "trunc_", "xlogy_", "addmv_", "index_put_", "fill_", "zero_", "gcd_", "lcm_", "ldexp_", "i0_",
]


def _method_form(name):
    """``name(input, *args, **kwargs)`` calling the Tensor method ``input.name(*args, **kwargs)``."""

    def op(input, *args, **kwargs):
        return getattr(_need(input, name), name)(*args, **kwargs)

    op.__name__ = op.__qualname__ = name
    base = name[:-1]
    op.__doc__ = (f"In-place ``{base}`` as a function: ``{name}(input, ...)`` is ``input.{name}(...)`` "
                  f"(same arguments as the method); modifies and returns ``input``.")
    return op


# The Tensor methods are attached after this module is imported (sneppx_core/__init__.py): looked up per call.
_GENERATED = {name: _method_form(name) for name in INPLACE}


# ---------------------------------------------------------------- predicates and dtype helpers
def is_floating_point(input):
    """True if ``input``'s dtype is a floating-point type (float16, bfloat16, float32, float64)."""
    return _need(input, "is_floating_point").is_floating_point()


def is_complex(input):
    """True if ``input``'s dtype is complex (complex64, complex128)."""
    return _need(input, "is_complex").is_complex()


def is_nonzero(input):
    """Whether the single value of a one-element tensor is nonzero (RuntimeError for any other size)."""
    return _need(input, "is_nonzero").is_nonzero()


def is_same_size(input, other):
    """True if ``input`` and ``other`` have the same shape."""
    return _need(input, "is_same_size").is_same_size(_need(other, "is_same_size", "other"))


def is_signed(input):
    """True if ``input``'s dtype is signed (every dtype but bool and uint8)."""
    return _need(input, "is_signed").is_signed()


def is_inference(input):
    """True if ``input`` was created under ``inference_mode``."""
    return _need(input, "is_inference").is_inference()


def is_storage(obj):
    """True for the storage objects of ``Tensor.untyped_storage()`` and ``Tensor.storage()``."""
    from ._tensor_storage import TypedStorage, UntypedStorage

    return isinstance(obj, (TypedStorage, UntypedStorage))


def get_default_dtype():
    """The default floating dtype (float32 unless ``set_default_dtype`` changed it): what factories without a
    dtype, Python floats and integer operands of floating ops (``/``, ``sqrt``, ...) give."""
    return _default_float()


def set_default_dtype(d):
    """Sets the default floating dtype (float32, float64, float16 or bfloat16), process-wide, as
    ``torch.set_default_dtype``: later factories without a dtype, ``tensor([1.5])``, ``int_tensor / 2`` and
    ``int_tensor.sqrt()`` give it. Tensors that exist keep their dtypes. The NumPy backend keeps float32."""
    d = _need_dtype(d, "set_default_dtype", "d")
    if not d.is_floating_point:
        raise TypeError(f"[set_default_dtype] only floating-point types are supported as the default type, got {d}")
    _set_default_float(d)


def promote_types(type1, type2):
    """The smallest dtype both ``type1`` and ``type2`` convert to without losing category (PyTorch's rules:
    bool < integers < floating point < complex; float16 with bfloat16 gives float32, uint8 with int32 gives
    int32, complex64 with float64 gives complex128)."""
    a = _need_dtype(type1, "promote_types", "type1")
    b = _need_dtype(type2, "promote_types", "type2")
    return _promoted(a, b)


def can_cast(from_, to):
    """Whether PyTorch's casting rules allow ``from_`` to ``to``: any cast that does not lower the category
    (bool < integer < floating point < complex), so float64 -> float16 and int64 -> uint8 are allowed, float ->
    int and complex -> float not."""
    a = _need_dtype(from_, "can_cast", "from_")
    b = _need_dtype(to, "can_cast", "to")
    return _RANK[a] <= _RANK[b]


def positive(input):
    """``input`` itself (unary plus); bool tensors raise TypeError, as in PyTorch."""
    _need(input, "positive")
    if input.dtype == Dtype.BOOL:
        raise TypeError("[positive] the `+` operator on a bool tensor is not supported")
    return input.positive()


def fill(input, value):
    """A new tensor of ``input``'s shape, dtype and device filled with ``value`` (a number or a 0-d tensor, whose
    gradient is the sum of the output's); the gradient reaching ``input`` is zero."""
    _need(input, "fill")
    if isinstance(value, Tensor):
        if value.ndim != 0:
            raise ValueError(f"[fill] value must be a number or a 0-d tensor, got shape {tuple(value.shape)}")
        v = value.to(input.dtype)
    elif isinstance(value, (numbers.Number, np.generic)):
        v = tensor(value, dtype=input.dtype)
    else:
        raise TypeError(f"[fill] value must be a number or a 0-d tensor, got {type(value).__name__}")
    if str(v.device) != str(input.device):
        v = v.to(input.device)
    return _C.where(ones(tuple(input.shape), dtype=Dtype.BOOL, device=input.device), v, input)


def frobenius_norm(input, dim, keepdim=False):
    """sqrt(sum(input ** 2)) over ``dim`` (one or two dims)."""
    _need(input, "frobenius_norm")
    dims = (dim,) if isinstance(dim, numbers.Integral) else tuple(dim)
    if not 1 <= len(dims) <= 2:
        raise ValueError(f"[frobenius_norm] dim must name one or two dims, got {dim!r}")
    return _C.norm(input, 2.0, dims if len(dims) > 1 else dims[0], bool(keepdim))


def chain_matmul(*matrices, out=None):
    """The product of two or more 2-d tensors, multiplied in the order that needs the fewest scalar
    multiplications (one matrix gives a copy). With ``out`` (of the result's shape) the result is copied there."""
    if not matrices:
        raise ValueError("[chain_matmul] expected one or more matrices")
    for i, m in enumerate(matrices):
        _need(m, "chain_matmul", f"matrix {i}")
        if m.ndim != 2:
            raise ValueError(f"[chain_matmul] matrix {i} has shape {tuple(m.shape)}, expected 2 dims")
    for i in range(len(matrices) - 1):
        if matrices[i].shape[1] != matrices[i + 1].shape[0]:
            raise ValueError(f"[chain_matmul] matrices {i} and {i + 1} cannot be multiplied: shapes "
                             f"{tuple(matrices[i].shape)} and {tuple(matrices[i + 1].shape)}")
    n = len(matrices)
    dims = [matrices[0].shape[0]] + [m.shape[1] for m in matrices]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(2, n + 1):  # the textbook matrix-chain order
        for i in range(n - length + 1):
            j = i + length - 1
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + dims[i] * dims[k + 1] * dims[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k

    def product(i, j):
        if i == j:
            return matrices[i]
        return _C.mm(product(i, split[i][j]), product(split[i][j] + 1, j))

    return _into_out(matrices[0].clone() if n == 1 else product(0, n - 1), out, "chain_matmul")


def _into_out(result, out, op):
    """``result``, or (with ``out``, of the result's shape) ``out`` holding a copy of it."""
    if out is None:
        return result
    _need(out, op, "out")
    if tuple(out.shape) != tuple(result.shape):
        raise ValueError(f"[{op}] out has shape {tuple(out.shape)}, the result {tuple(result.shape)}")
    return out.copy_(result)


def spmm(input, mat2, *, out=None):
    """The matrix product ``mm(input, mat2)``: a sparse ``input`` (COO, CSR, CSC) times a dense ``mat2`` gives a
    dense result; two dense tensors multiply as ``mm``. With ``out`` (of the result's shape) the result is copied
    there."""
    if not isinstance(input, Tensor) or not isinstance(mat2, Tensor):
        from ._sparse import _Sparse, _matmul
        if isinstance(input, _Sparse) or isinstance(mat2, _Sparse):
            return _into_out(_matmul(input, mat2, "spmm"), out, "spmm")
    return _into_out(_C.mm(_need(input, "spmm", "input"), _need(mat2, "spmm", "mat2")), out, "spmm")


# ---------------------------------------------------------------- gradient
def _along(t, d, ndim):
    """A 1-d tensor shaped to broadcast along dim ``d`` of an ``ndim``-dim tensor."""
    shape = [1] * ndim
    shape[d] = t.shape[0]
    return t.reshape(tuple(shape))


def _gradient_dim(f, d, h, edge_order):
    """The derivative of ``f`` along dim ``d``: central differences inside, one-sided of ``edge_order`` at the
    ends; ``h`` is a uniform spacing (float) or the coordinates (1-d tensor, f's dtype)."""
    n = f.shape[d]

    def s(start, stop):
        return f.narrow(d, start, stop - start)

    def at(i):
        return f.narrow(d, i % n, 1)

    if isinstance(h, Tensor):
        dx = h[1:] - h[:-1]
        pieces = []
        dx1, dx2 = dx[:-1], dx[1:]
        if edge_order == 1:
            first = (at(1) - at(0)) / dx[0]
            last = (at(-1) - at(-2)) / dx[-1]
        else:
            a1, a2 = dx[0], dx[1]
            first = (at(0) * (-(2 * a1 + a2) / (a1 * (a1 + a2))) + at(1) * ((a1 + a2) / (a1 * a2))
                     + at(2) * (-a1 / (a2 * (a1 + a2))))
            b1, b2 = dx[-2], dx[-1]
            last = (at(-3) * (b2 / (b1 * (b1 + b2))) + at(-2) * (-(b1 + b2) / (b1 * b2))
                    + at(-1) * ((2 * b2 + b1) / (b2 * (b1 + b2))))
        pieces.append(first)
        if n > 2:
            a = _along(-dx2 / (dx1 * (dx1 + dx2)), d, f.ndim)
            b = _along((dx2 - dx1) / (dx1 * dx2), d, f.ndim)
            c = _along(dx1 / (dx2 * (dx1 + dx2)), d, f.ndim)
            pieces.append(s(0, n - 2) * a + s(1, n - 1) * b + s(2, n) * c)
        pieces.append(last)
        return _C.cat(pieces, d)
    if edge_order == 1:
        first = (at(1) - at(0)) / h
        last = (at(-1) - at(-2)) / h
    else:
        first = (at(0) * -1.5 + at(1) * 2.0 - at(2) * 0.5) / h
        last = (at(-3) * 0.5 - at(-2) * 2.0 + at(-1) * 1.5) / h
    middle = [(s(2, n) - s(0, n - 2)) / (2.0 * h)] if n > 2 else []
    return _C.cat([first, *middle, last], d)


def gradient(input, *, spacing=1, dim=None, edge_order=1):
    """Estimates the derivative of ``input`` along each dim in ``dim`` (all by default) with second-order
    central differences inside and first- or second-order (``edge_order``) one-sided differences at the ends,
    as NumPy's ``np.gradient``. ``spacing`` is a number (the same step for every dim), a list of numbers (one
    step per dim) or a list of 1-d tensors (the coordinates along each dim). Returns a tuple with one tensor per
    dim (integer input gives float32). Differentiable."""
    op = "gradient"
    _need(input, op)
    nd = input.ndim
    if edge_order not in (1, 2) or isinstance(edge_order, builtins.bool):
        raise ValueError(f"[{op}] only edge_order=1 and edge_order=2 are supported, got {edge_order!r}")
    if nd == 0:
        raise ValueError(f"[{op}] expected a tensor with at least one dim, got a 0-d tensor")
    if dim is None:
        dims = list(range(nd))
    else:
        dims = [dim] if isinstance(dim, numbers.Integral) else list(dim)
        for d in dims:
            if isinstance(d, builtins.bool) or not isinstance(d, numbers.Integral) or not -nd <= d < nd:
                raise IndexError(f"[{op}] dim {d!r} is out of range for a tensor with {nd} dims")
        dims = [int(d) % nd for d in dims]
        if len(set(dims)) != len(dims):
            raise ValueError(f"[{op}] dim {dim!r} names a dim more than once")
    f = input if input.dtype in _FLOATS else input.to(Dtype.FLOAT32)
    if isinstance(spacing, Tensor):
        raise TypeError(f"[{op}] spacing must be a number or a list of numbers or of 1-d tensors, got a Tensor "
                        "(wrap the coordinates in a list)")
    if isinstance(spacing, (list, tuple)):
        if len(spacing) != len(dims):
            raise ValueError(f"[{op}] spacing has {len(spacing)} entries but {len(dims)} dims are differentiated")
        steps = list(spacing)
    else:
        steps = [spacing] * len(dims)
    for d in dims:
        if f.shape[d] < edge_order + 1:
            raise ValueError(f"[{op}] every differentiated dim needs at least edge_order + 1 = {edge_order + 1} "
                             f"values, got shape {tuple(input.shape)}")
    results = []
    for d, h in zip(dims, steps):
        if isinstance(h, Tensor):
            if h.ndim != 1 or h.shape[0] != f.shape[d]:
                raise ValueError(f"[{op}] the coordinates along dim {d} must be a 1-d tensor of {f.shape[d]} "
                                 f"values, got shape {tuple(h.shape)}")
            h = h.to(f.dtype)
        elif isinstance(h, (numbers.Number, np.generic)) and not isinstance(h, builtins.bool):
            h = float(h)
        else:
            raise TypeError(f"[{op}] spacing entries must be numbers or 1-d tensors, got {type(h).__name__}")
        results.append(_gradient_dim(f, d, h, edge_order))
    return tuple(results)


# ---------------------------------------------------------------- histogram
HistogramResult = namedtuple("HistogramResult", ["hist", "bin_edges"])
HistogramResult.__doc__ = "The (hist, bin_edges) result of histogram, as in PyTorch."


def _equal_edges(op, lo, hi, n, dt, where=""):
    """The ``n + 1`` equal-width edges over [lo, hi] in dtype ``dt``, widened by 0.5 each way when lo == hi
    (``histogram``, ``histogramdd``); ``where`` names the dimension in errors."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"[{op}] {where}range [{lo}, {hi}] is not finite")
    if lo > hi:
        raise ValueError(f"[{op}] {where}max ({hi}) must be >= min ({lo})")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return _C._linspace(lo, hi, n + 1, dt)


def histogram(input, bins=100, *, range=None, weight=None, density=False):  # noqa: A002
    """(hist, bin_edges): the counts (or summed ``weight``) of ``input``'s values in ``bins`` equal-width bins over
    ``range`` (default: the data's min and max, widened by 0.5 each way when they are equal; [0, 1] when empty), or
    in the bins whose edges are the increasing 1-d tensor ``bins``. Each bin is closed on the left, the last one
    also on the right; values outside are ignored. ``density=True`` divides by the total and the bin widths.
    Floating-point input only; not differentiable."""
    op = "histogram"
    _need(input, op)
    if input.dtype not in _FLOATS:
        raise TypeError(f"[{op}] expects a floating-point input, got {input.dtype}")
    dt = input.dtype
    work = np.float64 if dt == Dtype.FLOAT64 else np.float32
    x = np.asarray(input.detach().to("cpu").to(Dtype.FLOAT64).numpy(), dtype=work).reshape(-1)
    w = None
    if weight is not None:
        _need(weight, op, "weight")
        if tuple(weight.shape) != tuple(input.shape):
            raise ValueError(f"[{op}] weight must have the input's shape {tuple(input.shape)}, "
                             f"got {tuple(weight.shape)}")
        w = np.asarray(weight.detach().to("cpu").to(Dtype.FLOAT64).numpy(), dtype=work).reshape(-1)
    if isinstance(bins, Tensor):
        if range is not None:
            raise ValueError(f"[{op}] range cannot be given with a tensor of bin edges")
        if bins.ndim != 1 or bins.shape[0] < 2:
            raise ValueError(f"[{op}] bin edges must be a 1-d tensor of at least 2 values, got {tuple(bins.shape)}")
        edges = np.asarray(bins.detach().to("cpu").to(Dtype.FLOAT64).numpy(), dtype=work)
        if np.any(np.diff(edges) < 0):
            raise ValueError(f"[{op}] bin edges must be increasing")
    else:
        if isinstance(bins, builtins.bool) or not isinstance(bins, numbers.Integral) or bins <= 0:
            raise ValueError(f"[{op}] bins must be a positive integer or a 1-d tensor of edges, got {bins!r}")
        if range is not None:
            if len(range) != 2:
                raise ValueError(f"[{op}] range must be (min, max), got {range!r}")
            lo, hi = float(range[0]), float(range[1])
        elif x.size:
            lo, hi = float(x.min()), float(x.max())
        else:
            lo, hi = 0.0, 1.0
        edges = _equal_edges(op, lo, hi, int(bins), dt if dt in (Dtype.FLOAT32, Dtype.FLOAT64) else Dtype.FLOAT32)
        edges = np.asarray(edges.numpy(), dtype=work)
    keep = (x >= edges[0]) & (x <= edges[-1])
    idx = np.searchsorted(edges, x[keep], side="right") - 1
    idx = np.minimum(idx, len(edges) - 2)
    hist = np.bincount(idx, weights=None if w is None else w[keep].astype(np.float64), minlength=len(edges) - 1)
    hist = hist.astype(np.float64)
    if density:  # no values in range: 0 / 0, NaN as in PyTorch
        with np.errstate(invalid="ignore", divide="ignore"):
            hist = hist / (hist.sum() * np.diff(edges.astype(np.float64)))
    device = input.device
    return HistogramResult(Tensor.from_numpy(hist.astype(work)).to(dt).to(device),
                           Tensor.from_numpy(np.ascontiguousarray(edges)).to(dt).to(device))


# ---------------------------------------------------------------- neural-network functions (torch.* signatures)
def conv_tbc(input, weight, bias, pad=0):
    """1-d convolution of time-batch-channel input: ``input`` (T, N, C_in), ``weight`` (K, C_in, C_out), ``bias``
    (C_out,), ``pad`` zeros at both ends of the time axis; the result is (T_out, N, C_out). Computed as
    ``conv1d`` of the permuted tensors."""
    op = "conv_tbc"
    for name, t in (("input", input), ("weight", weight), ("bias", bias)):
        _need(t, op, name)
    if input.ndim != 3 or weight.ndim != 3 or bias.ndim != 1:
        raise ValueError(f"[{op}] expected input (T, N, C_in), weight (K, C_in, C_out) and bias (C_out,), got "
                         f"{tuple(input.shape)}, {tuple(weight.shape)} and {tuple(bias.shape)}")
    if input.shape[2] != weight.shape[1] or bias.shape[0] != weight.shape[2]:
        raise ValueError(f"[{op}] channel mismatch: input {tuple(input.shape)}, weight {tuple(weight.shape)}, "
                         f"bias {tuple(bias.shape)}")
    out = F.conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, int(pad))
    return out.permute(2, 0, 1)


def dropout(input, p, train):
    """Inverted dropout (``functional.dropout(input, p, train)``): elements zeroed with probability ``p``, the rest
    scaled by 1 / (1 - p); ``input`` itself when not ``train``."""
    return F.dropout(_need(input, "dropout"), _probability(p, "dropout"), bool(train))


def dropout_(input, p, train):
    """In-place :func:`dropout`; returns ``input``."""
    return _in_place(_need(input, "dropout_"), F.dropout(input, _probability(p, "dropout_"), bool(train)))


def alpha_dropout(input, p, train):
    """``functional.alpha_dropout(input, p, train)``: dropout keeping SELU activations' mean and variance."""
    return F.alpha_dropout(_need(input, "alpha_dropout"), p, bool(train))


def alpha_dropout_(input, p, train):
    """In-place :func:`alpha_dropout`; returns ``input``."""
    return _in_place(_need(input, "alpha_dropout_"), F.alpha_dropout(input, p, bool(train)))


def feature_alpha_dropout(input, p, train):
    """``functional.feature_alpha_dropout(input, p, train)``: alpha dropout of whole channels of (N, C, *) input."""
    return F.feature_alpha_dropout(_need(input, "feature_alpha_dropout"), p, bool(train))


def feature_alpha_dropout_(input, p, train):
    """In-place :func:`feature_alpha_dropout`; returns ``input``."""
    return _in_place(_need(input, "feature_alpha_dropout_"), F.feature_alpha_dropout(input, p, bool(train)))


def _feature_dropout(input, p, train, op):
    return _channels_dropout(_need(input, op), _probability(p, op), train, False, 2, op)


def feature_dropout(input, p, train):
    """Dropout of whole channels: every element of channel (n, c) of (N, C, *) input is zeroed together with
    probability ``p``, the kept ones scaled by 1 / (1 - p); ``input`` itself when not ``train``."""
    return _feature_dropout(input, p, train, "feature_dropout")


def feature_dropout_(input, p, train):
    """In-place :func:`feature_dropout`; returns ``input``."""
    return _in_place(input, _feature_dropout(input, p, train, "feature_dropout_"))


def batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps, cudnn_enabled):
    """PyTorch's top-level order of ``functional.batch_norm`` (``cudnn_enabled`` only picks a backend there and
    changes no result)."""
    return F.batch_norm(_need(input, "batch_norm"), running_mean, running_var, weight, bias, bool(training),
                        momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats, momentum, eps, cudnn_enabled):
    """PyTorch's top-level order of ``functional.instance_norm`` (``cudnn_enabled`` changes no result)."""
    return F.instance_norm(_need(input, "instance_norm"), running_mean, running_var, weight, bias,
                           bool(use_input_stats), momentum, eps)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05, cudnn_enable=True):
    """``functional.layer_norm`` (``cudnn_enable`` changes no result)."""
    return F.layer_norm(_need(input, "layer_norm"), normalized_shape, weight, bias, eps)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05, cudnn_enabled=True):
    """``functional.group_norm`` (``cudnn_enabled`` changes no result)."""
    return F.group_norm(_need(input, "group_norm"), num_groups, weight, bias, eps)


def embedding(weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False):
    """Rows of ``weight`` picked by ``indices`` (note the order: weight first). A negative ``padding_idx`` means
    none, as in PyTorch's top-level form; otherwise that row gets no gradient. ``sparse=True`` raises
    NotImplementedError."""
    _need(weight, "embedding", "weight")
    pad = None if padding_idx is None or int(padding_idx) < 0 else int(padding_idx)
    return F.embedding(indices, weight, pad, None, 2.0, scale_grad_by_freq, sparse)


def bilinear(input1, input2, weight, bias=None):
    """``functional.bilinear``: y = x1^T A x2 + b."""
    return F.bilinear(input1, input2, weight, bias)


def pixel_shuffle(input, upscale_factor):
    """``functional.pixel_shuffle``."""
    return F.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input, downscale_factor):
    """``functional.pixel_unshuffle``."""
    return F.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input, groups):
    """``functional.channel_shuffle``."""
    return F.channel_shuffle(input, groups)


def native_channel_shuffle(input, groups):
    """``functional.native_channel_shuffle``."""
    return F.native_channel_shuffle(input, groups)


def pdist(input, p=2):
    """``functional.pdist``: the p-norm distances between the rows of a 2-d tensor (upper triangle, flattened)."""
    return F.pdist(input, p)


def pairwise_distance(x1, x2, p=2.0, eps=1e-06, keepdim=False):
    """``functional.pairwise_distance``."""
    return F.pairwise_distance(x1, x2, p, eps, keepdim)


def cosine_similarity(x1, x2, dim=1, eps=1e-08):
    """``functional.cosine_similarity``."""
    return F.cosine_similarity(x1, x2, dim, eps)


def cosine_embedding_loss(input1, input2, target, margin=0.0, reduction=1):
    """``functional.cosine_embedding_loss`` with ``reduction`` as an int (0 none, 1 mean, 2 sum)."""
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction, "cosine_embedding_loss"))


def margin_ranking_loss(input1, input2, target, margin=0.0, reduction=1):
    """``functional.margin_ranking_loss`` with ``reduction`` as an int (0 none, 1 mean, 2 sum)."""
    return F.margin_ranking_loss(input1, input2, target, margin,
                                 reduction=_reduction(reduction, "margin_ranking_loss"))


def hinge_embedding_loss(input, target, margin=1.0, reduction=1):
    """``functional.hinge_embedding_loss`` with ``reduction`` as an int (0 none, 1 mean, 2 sum)."""
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction, "hinge_embedding_loss"))


def kl_div(input, target, reduction=1, *, log_target=False):
    """``functional.kl_div`` with ``reduction`` as an int (0 none, 1 mean over all elements, 2 sum)."""
    return F.kl_div(input, target, reduction=_reduction(reduction, "kl_div"), log_target=log_target)


def poisson_nll_loss(input, target, log_input, full, eps, reduction):
    """``functional.poisson_nll_loss`` with every argument required and ``reduction`` as an int."""
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction, "poisson_nll_loss"))


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    """``functional.binary_cross_entropy_with_logits`` in PyTorch's top-level order (``pos_weight`` before
    ``reduction``, an int)."""
    return F.binary_cross_entropy_with_logits(input, target, weight, pos_weight=pos_weight,
                                              reduction=_reduction(reduction, "binary_cross_entropy_with_logits"))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction=1, zero_infinity=False):
    """``functional.ctc_loss`` with ``reduction`` as an int (0 none, 1 mean, 2 sum)."""
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction, "ctc_loss"), zero_infinity)


def max_pool1d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``functional.max_pool1d`` (an empty ``stride`` means the kernel size)."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool1d_with_indices(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """(values, indices) of ``functional.max_pool1d`` (an empty ``stride`` means the kernel size)."""
    return F.max_pool1d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode, True)


def max_pool2d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``functional.max_pool2d`` (an empty ``stride`` means the kernel size)."""
    return F.max_pool2d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def max_pool3d(input, kernel_size, stride=(), padding=0, dilation=1, ceil_mode=False):
    """``functional.max_pool3d`` (an empty ``stride`` means the kernel size)."""
    return F.max_pool3d(input, kernel_size, _stride(stride), padding, dilation, ceil_mode)


def avg_pool1d(input, kernel_size, stride=(), padding=0, ceil_mode=False, count_include_pad=True):
    """``functional.avg_pool1d`` (an empty ``stride`` means the kernel size)."""
    return F.avg_pool1d(input, kernel_size, _stride(stride), padding, ceil_mode, count_include_pad)


def adaptive_avg_pool1d(input, output_size):
    """``functional.adaptive_avg_pool1d``."""
    return F.adaptive_avg_pool1d(input, output_size)


def adaptive_max_pool1d(input, output_size):
    """(values, indices) of ``functional.adaptive_max_pool1d``: PyTorch's top-level form always returns both."""
    return F.adaptive_max_pool1d(input, output_size, True)


def constant_pad_nd(input, pad, value=0):
    """``functional.pad(input, pad, 'constant', value)``: ``pad`` pairs from the last dim backwards; negative
    pads crop."""
    return F.pad(_need(input, "constant_pad_nd"), pad, "constant", value)


def _no_generator(generator, op):
    if generator is not None:
        raise NotImplementedError(f"[{op}] a generator is not supported: the slopes come from the default "
                                  "generator (sneppx_core.manual_seed)")


def rrelu(input, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """``functional.rrelu``: random leaky-ReLU slopes from uniform(lower, upper) in training, their mean
    otherwise. Only ``generator=None`` (the default generator) is supported."""
    _no_generator(generator, "rrelu")
    return F.rrelu(_need(input, "rrelu"), lower, upper, training)


def rrelu_(input, lower=0.125, upper=0.3333333333333333, training=False, generator=None):
    """In-place :func:`rrelu`; returns ``input``. Only ``generator=None`` is supported."""
    _no_generator(generator, "rrelu_")
    return F.rrelu_(_need(input, "rrelu_"), lower, upper, training)


_SAME = ["conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"]
_PLAIN = [
    is_floating_point, is_complex, is_nonzero, is_same_size, is_signed, is_inference, is_storage,
    get_default_dtype, set_default_dtype, promote_types, can_cast, positive, fill, frobenius_norm, chain_matmul,
    spmm, gradient,
    histogram, conv_tbc, dropout, dropout_, alpha_dropout, alpha_dropout_, feature_alpha_dropout,
    feature_alpha_dropout_, feature_dropout, feature_dropout_, batch_norm, instance_norm, layer_norm,
    group_norm, embedding, bilinear, pixel_shuffle, pixel_unshuffle, channel_shuffle, native_channel_shuffle,
    pdist, pairwise_distance, cosine_similarity, cosine_embedding_loss, margin_ranking_loss, hinge_embedding_loss,
    kl_div, poisson_nll_loss, binary_cross_entropy_with_logits, ctc_loss, max_pool1d, max_pool1d_with_indices,
    max_pool2d, max_pool3d, avg_pool1d, adaptive_avg_pool1d, adaptive_max_pool1d, constant_pad_nd, rrelu, rrelu_,
]
# The convolutions already have torch's top-level signature in functional. Every name turns a stray
# AttributeError (a non-tensor where a tensor was needed) into TypeError naming the op.
FUNCTIONS = {**_GENERATED, **{n: getattr(F, n) for n in _SAME}, **{f.__name__: f for f in _PLAIN}}
FUNCTIONS = {k: _guarded(v, k) for k, v in FUNCTIONS.items()}
__all__ = list(FUNCTIONS)
