"""Parameter initialisation in place, as ``torch.nn.init``.

Every function fills ``tensor`` under ``no_grad`` and returns it. Random ones draw from
``generator`` or, by default, from the global generator that ``sneppx_core.manual_seed`` seeds.
"""

from __future__ import annotations

import contextvars
import math
import warnings

import sneppx_core as sx

_GAINS = {"linear": 1.0, "identity": 1.0, "sigmoid": 1.0, "tanh": 5.0 / 3, "relu": math.sqrt(2.0),
          "selu": 3.0 / 4}
# True while sneppx_nn.utils.skip_init builds a module: the initialisers then leave tensors untouched.
_SKIP: contextvars.ContextVar = contextvars.ContextVar("sneppx_nn_skip_init", default=False)
_LINEAR_LIKE = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d")


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended gain for a nonlinearity: 1 (linear, sigmoid), 5/3 (tanh), sqrt(2) (relu),
    sqrt(2 / (1 + slope^2)) (leaky_relu, slope ``param`` or 0.01), 3/4 (selu)."""
    if nonlinearity in _GAINS or nonlinearity in _LINEAR_LIKE:
        return _GAINS.get(nonlinearity, 1.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        if isinstance(slope, bool) or not isinstance(slope, (int, float)):
            raise ValueError(f"[calculate_gain] negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    raise ValueError(f"[calculate_gain] unsupported nonlinearity {nonlinearity!r}")


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    """(fan_in, fan_out) = (size(1), size(0)) times the product of the remaining dims."""
    if tensor.ndim < 2:
        raise ValueError(f"[init] fan in and fan out need a tensor of 2 or more dims, got shape {tuple(tensor.shape)}")
    receptive = 1
    for s in tensor.shape[2:]:
        receptive *= s
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"[init] mode must be 'fan_in' or 'fan_out', got {mode!r}")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fills ``tensor`` with draws from U(a, b)."""
    if a > b:
        raise ValueError(f"[uniform_] expected a <= b, got a={a}, b={b}")
    if _SKIP.get():
        return tensor
    with sx.no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fills ``tensor`` with draws from N(mean, std^2)."""
    if std < 0:
        raise ValueError(f"[normal_] std must be >= 0, got {std}")
    if _SKIP.get():
        return tensor
    with sx.no_grad():
        return tensor.normal_(mean, std, generator=generator)


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0, generator=None):
    """Fills ``tensor`` with draws from N(mean, std^2) conditioned on a <= x <= b (absolute bounds),
    by redrawing the values that fall outside until none do."""
    if not a < b:
        raise ValueError(f"[trunc_normal_] expected a < b, got a={a}, b={b}")
    if std <= 0:
        raise ValueError(f"[trunc_normal_] std must be > 0, got {std}")
    if _SKIP.get():
        return tensor
    with sx.no_grad():
        tensor.normal_(mean, std, generator=generator)
        fresh = sx.empty_like(tensor)
        for _ in range(10000):
            outside = (tensor < a).logical_or(tensor > b)
            if not bool(outside.any()):
                return tensor
            fresh.normal_(mean, std, generator=generator)
            tensor.copy_(sx.where(outside, fresh, tensor))
    raise RuntimeError(f"[trunc_normal_] [{a}, {b}] is too far in the tail of N({mean}, {std}^2) to sample")


def constant_(tensor, val: float):
    """Fills ``tensor`` with ``val``."""
    if _SKIP.get():
        return tensor
    with sx.no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fills ``tensor`` with 1."""
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fills ``tensor`` with 0."""
    return constant_(tensor, 0.0)


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot uniform: U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Glorot normal: N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out))."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def kaiming_uniform_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He uniform: U(-b, b) with b = gain * sqrt(3 / fan), gain = calculate_gain(nonlinearity, a)."""
    if 0 in tensor.shape:
        return tensor
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(tensor, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None):
    """He normal: N(0, std^2) with std = gain / sqrt(fan), gain = calculate_gain(nonlinearity, a)."""
    if 0 in tensor.shape:
        return tensor
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    return normal_(tensor, 0.0, std, generator)


def _orthogonalize(matrix):
    """Q of the QR factorisation of the 2-d ``matrix`` (transposed first when wide), each column
    multiplied by the sign of R's diagonal entry so that Q is Haar-distributed for Gaussian input."""
    wide = matrix.shape[0] < matrix.shape[1]
    q, r = sx.linalg.qr(matrix.t() if wide else matrix)
    q = q * r.diagonal(0, -2, -1).sign()
    return q.t() if wide else q


def orthogonal_(tensor, gain: float = 1.0, generator=None):
    """Fills ``tensor`` (2 or more dims; trailing dims flattened into columns) with a (semi-)orthogonal
    matrix times ``gain``: the sign-corrected Q of the QR factorisation of a N(0, 1) matrix, so rows
    (or columns, whichever are fewer) are orthonormal (Saxe et al., 2013)."""
    if tensor.ndim < 2:
        raise ValueError(f"[orthogonal_] only tensors with 2 or more dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    if tensor.numel() == 0 or _SKIP.get():
        return tensor
    rows = tensor.shape[0]
    flat = sx.empty(rows, tensor.numel() // rows, dtype=tensor.dtype, device=tensor.device)
    with sx.no_grad():
        flat.normal_(0.0, 1.0, generator=generator)
        tensor.copy_(_orthogonalize(flat).reshape(tuple(tensor.shape)))
        return tensor.mul_(gain)


def dirac_(tensor, groups: int = 1):
    """Fills the 3-, 4- or 5-d convolution weight ``tensor`` with the Dirac delta: in each of the
    ``groups``, output channel d of the group gets a 1 at input channel d and the kernel centre, so
    the convolution passes through as many input channels as it can; everything else is 0."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"[dirac_] only tensors with 3, 4 or 5 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    if groups < 1 or tensor.shape[0] % groups != 0:
        raise ValueError(f"[dirac_] dim 0 ({tensor.shape[0]}) must be divisible by groups ({groups})")
    per_group = tensor.shape[0] // groups
    centre = tuple(s // 2 for s in tensor.shape[2:])
    with sx.no_grad():
        tensor.zero_()
        for g in range(groups):
            for d in range(min(per_group, tensor.shape[1])):
                tensor[(g * per_group + d, d) + centre] = 1
    return tensor


def eye_(tensor):
    """Fills the 2-d ``tensor`` with the identity matrix (ones on the main diagonal, zeros elsewhere)."""
    if tensor.ndim != 2:
        raise ValueError(f"[eye_] only tensors with 2 dimensions are supported, got shape {tuple(tensor.shape)}")
    with sx.no_grad():
        return tensor.copy_(sx.eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device))


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """Fills the 2-d ``tensor`` with N(0, std^2) draws, then sets ceil(sparsity * rows) entries of each
    column, at random rows, to zero (Martens, 2010)."""
    if tensor.ndim != 2:
        raise ValueError(f"[sparse_] only tensors with 2 dimensions are supported, got shape {tuple(tensor.shape)}")
    if not 0 <= sparsity <= 1:
        raise ValueError(f"[sparse_] sparsity must be in [0, 1], got {sparsity}")
    rows, cols = tensor.shape
    zeros = math.ceil(sparsity * rows)
    normal_(tensor, 0.0, std, generator)
    with sx.no_grad():
        for col in range(cols):
            tensor[sx.randperm(rows, generator=generator)[:zeros], col] = 0
    return tensor


def _deprecated(fn):
    """The old name of ``fn`` (without the trailing underscore): warns FutureWarning, then calls it."""
    old = fn.__name__[:-1]

    def alias(*args, **kwargs):
        warnings.warn(f"`nn.init.{old}` is now deprecated in favor of `nn.init.{fn.__name__}`.", FutureWarning,
                      stacklevel=2)
        return fn(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated alias of :func:`{fn.__name__}` (warns FutureWarning); see it for details."
    return alias


uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
dirac = _deprecated(dirac_)
eye = _deprecated(eye_)

__all__ = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_",
           "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_", "dirac_",
           "eye_", "sparse_", "uniform", "normal", "constant", "xavier_uniform", "xavier_normal", "kaiming_uniform",
           "kaiming_normal", "orthogonal", "sparse", "dirac", "eye"]
