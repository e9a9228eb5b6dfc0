"""Differentiable neural-network functions (``import sneppx_core.functional as F``).

Names and signatures follow ``torch.nn.functional``. The heavy ones are fused C++ kernels with
hand-written backward passes: softmax and log_softmax, the norms, the activations, linear (one GEMM,
bias in the epilogue), embedding, dropout, the LSTM and GRU cells and whole-sequence recurrences
(``lstm_cell``, ``gru_cell``, ``lstm_sequence``, ``gru_sequence``, which PyTorch has no public names for),
the losses (see ``_functional_losses``), attention, the 1-d and 2-d convolutions and poolings, and the
fused optimizer steps (see ``_functional_optim``). The rest are compositions of differentiable core ops:
``pad``, ``interpolate``, the 3-d convolutions and poolings (``_functional_3d``), ``grid_sample`` and
``affine_grid`` (``_functional_grid``), ``embedding_bag`` and the random activations and dropouts
(``_functional_sample``). float16/bfloat16 inputs compute in float32 (``linear`` accumulates in float32
straight from the half-precision weight, without a float32 copy of it).

The fused kernels give first-order gradients. Differentiating their backward pass
(``autograd.grad(..., create_graph=True)``) raises RuntimeError, except for ``linear``, ``embedding``
(without ``padding_idx``/``scale_grad_by_freq``) and ``dropout``, whose backward is written with
differentiable ops.
"""

from __future__ import annotations

from ._backend import _C
from ._C_face import Tensor
from ._functional_losses import (
    binary_cross_entropy, binary_cross_entropy_with_logits, cross_entropy, huber_loss, kl_div, l1_loss, mse_loss,
    nll_loss, smooth_l1_loss,
)
from ._functional_extra import interpolate, pad
from ._functional_conv import *  # noqa: F401,F403  (convolution, pooling, batch norms, more activations)
from ._functional_conv import __all__ as _conv_all
from ._functional_losses_composed import *  # noqa: F401,F403
from ._functional_losses_composed import __all__ as _composed_all
from ._functional_more import *  # noqa: F401,F403  (old resampling names, unpooling, channel shuffle, LRN)
from ._functional_more import __all__ as _more_all
from ._functional_sample import *  # noqa: F401,F403  (embedding_bag, pdist, rrelu, alpha dropouts, gumbel_softmax)
from ._functional_sample import __all__ as _sample_all
from ._functional_3d import *  # noqa: F401,F403  (3-d convolutions and poolings, power-average pooling)
from ._functional_3d import __all__ as _3d_all
from ._functional_fractional import *  # noqa: F401,F403  (fractional max pooling)
from ._functional_fractional import __all__ as _fractional_all
from ._functional_grid import affine_grid, grid_sample
from ._functional_grouped import grouped_mm
from ._functional_linear_ce import linear_cross_entropy
from ._functional_mha import multi_head_attention_forward
from ._functional_optim import adam_step, lamb_step, lion_step, scale_, sgd_step, total_norm

_nn = _C._nn
sigmoid = _C.sigmoid
tanh = _C.tanh


def _maybe_inplace(input, out, inplace):
    return input.copy_(out) if inplace else out


def _number(value, op, param):
    """``value`` as a float, or a TypeError naming the op and the parameter."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"[{op}] {param} must be a number, got {value!r} ({type(value).__name__})") from None


def _activation(name, params):
    """The functional form of an activation of the formula sheet: f(input, *params, inplace=False)."""
    op = getattr(_C, name)
    names = [p for p, _ in params]
    defaults = dict(params)
    default_values = [float(d) for _, d in params]

    def f(input, *args, inplace=False, **kwargs):
        if not (kwargs or inplace):  # f(x) and f(x, slope): the common calls
            if not args:
                return op(input, *default_values)
            if len(args) <= len(names):  # the binding converts the numbers; what it rejects goes below
                try:
                    return op(input, *args)
                except TypeError:
                    pass
        if len(args) == len(names) + 1 and not inplace:  # inplace given by position, as PyTorch allows
            args, inplace = args[:-1], bool(args[-1])
        if len(args) > len(names):
            raise TypeError(f"[{name}] takes at most {len(names)} parameters after input ({', '.join(names)}) "
                            "and inplace")
        if kwargs:
            values = dict(defaults, **dict(zip(names, args)))
            for k, v in kwargs.items():
                if k not in defaults:
                    raise TypeError(f"[{name}] got an unexpected keyword argument {k!r}")
                values[k] = v
            values = [_number(values[p], name, p) for p in names]
        else:  # positional parameters only
            values = [*(_number(a, name, p) for a, p in zip(args, names)), *default_values[len(args):]]
        if inplace:  # the in-place method: into input's memory where autograd records nothing
            return getattr(input, name + "_")(*values)
        return op(input, *values)

    f.__name__ = f.__qualname__ = name
    sig = ", ".join(["input"] + [f"{p}={d!r}" for p, d in params] + ["inplace=False"])
    f.__doc__ = f"{name}({sig}): elementwise {name}, as ``torch.nn.functional.{name}``; " \
                "forward and gradient are fused kernels of the unary formula sheet."
    return f


ACTIVATIONS = [name for name, kind, _pred, _params, _order in _C._unary_ops() if kind == "activation"]
globals().update({name: _activation(name, params)
                  for name, kind, _pred, params, _order in _C._unary_ops() if kind == "activation"})


def gelu(input, approximate="none"):
    """Gaussian error linear unit.

    approximate="none": gelu(x) = x * Phi(x) = x/2 * (1 + erf(x / sqrt 2)).
    approximate="tanh": x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))).
    """
    return _C.gelu(input, approximate)


def glu(input, dim=-1):
    """Gated linear unit: with (a, b) the two halves of ``input`` along ``dim``, glu = a * sigmoid(b)."""
    return _nn.glu(input, dim, False)


def swiglu(input, dim=-1):
    """SwiGLU gate: silu(a) * b with (a, b) the two halves of ``input`` along ``dim``.

    ``swiglu(gate, up)`` with two tensors of the same shape computes silu(gate) * up.
    """
    if isinstance(dim, Tensor):
        return _nn.gated(input, dim, True)
    return _nn.glu(input, dim, True)


def softmax(input, dim, dtype=None):
    """softmax(x)_i = exp(x_i - max x) / sum_j exp(x_j - max x) along ``dim`` (finite for any finite x).

    ``dtype`` casts the input first. Backward: dx = y * (g - sum(g * y)).
    """
    x = input if dtype is None else input.to(dtype)
    return _nn.softmax(x, dim, False)


def log_softmax(input, dim, dtype=None):
    """log_softmax(x) = x - max x - log sum exp(x - max x) along ``dim``.

    Backward: dx = g - exp(y) * sum(g).
    """
    x = input if dtype is None else input.to(dtype)
    return _nn.softmax(x, dim, True)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Layer normalisation over the trailing ``normalized_shape`` dims.

    y = (x - mean) / sqrt(var + eps) * weight + bias, with the biased variance. Saves the input, the
    per-row mean and 1/std; backward: xh = (x - mean) * rstd, gh = g * weight,
    dx = rstd * (gh - mean(gh) - xh * mean(gh * xh)), dweight = sum(g * xh), dbias = sum(g).
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    return _nn.layer_norm(input, shape, weight, bias, float(eps))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """RMS normalisation: y = x / sqrt(mean(x^2) + eps) * weight over the trailing dims.

    ``eps=None`` uses the machine epsilon of the input's dtype (as PyTorch does). Saves the input and
    1/rms per row; backward: xh = x * rstd, dx = rstd * (g w - xh * mean(g w xh)).
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    return _nn.rms_norm(input, shape, weight, None if eps is None else float(eps))


def linear(input, weight, bias=None):
    """y = x @ weight.T + bias, with weight of shape (out_features, in_features).

    One GEMM (float32/float64 BLAS) with the bias broadcast into the output first (beta = 1).
    Backward: dx = g @ weight, dweight = g^T x, dbias = sum of g over the leading dims.
    """
    return _nn.linear(input, weight, bias)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False,
              sparse=False):
    """Rows of ``weight`` (num_embeddings, dim) picked by the integer ids in ``input``.

    Out-of-range ids raise IndexError naming the id and the table size. The backward adds each
    gradient row into the row of its id (rows of ``padding_idx`` get none); with
    ``scale_grad_by_freq`` each row's gradient is divided by its id's count in the batch.
    ``max_norm`` and ``sparse=True`` are not supported (NotImplementedError).
    """
    if max_norm is not None:
        raise NotImplementedError("[embedding] max_norm is not supported; renormalise the weight explicitly")
    if sparse:
        raise NotImplementedError("[embedding] sparse gradients are not supported; use sparse=False")
    return _nn.embedding(input, weight, padding_idx, bool(scale_grad_by_freq))


def dropout(input, p=0.5, training=True, inplace=False, generator=None):
    """Inverted dropout: each element is zeroed with probability ``p`` and the rest scaled by 1/(1-p).

    Identity (the input itself) when ``training`` is False or ``p`` is 0. The mask comes from the
    counter-based generator (``generator`` or the default one), so a seed fixes it regardless of the
    thread count; the backward regenerates it instead of storing it.
    """
    return _maybe_inplace(input, _nn.dropout(input, float(p), bool(training), generator),
                          inplace and training and p > 0)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                                 enable_gqa=False, generator=None):
    """softmax(q k^T * scale + mask) v for (..., T_q, D) queries and (..., T_k, D) keys and values.

    Leading dims broadcast; ``enable_gqa`` lets the key/value head dim (-3) divide the query's.
    ``scale`` defaults to 1/sqrt(D). ``attn_mask``: bool (True = attend) or float (added to the
    scores), broadcastable to (..., T_q, T_k). ``is_causal``: query i attends to keys
    j <= i + T_k - T_q, i.e. the mask is aligned to the end, which is what a KV cache needs
    (PyTorch aligns it to the top-left; the two agree when T_q == T_k). Rows that see no key give
    zeros and zero gradients, as PyTorch does. ``dropout_p`` drops attention weights (training use;
    the mask is regenerated from ``generator`` in the backward pass). A float mask that requires grad
    receives its gradient, which is the one case that materialises a (..., T_q, T_k) buffer.

    The kernel is tiled with an online softmax: it never builds the (T_q, T_k) score matrix, saves only
    the output and the per-row log-sum-exp, and recomputes each tile in the backward pass.
    Work is spread over the batch*heads matrices.
    """
    return _nn.scaled_dot_product_attention(query, key, value, attn_mask, float(dropout_p), bool(is_causal),
                                            None if scale is None else float(scale), bool(enable_gqa), generator)


def lstm_cell(gates, c_prev):
    """The elementwise half of an LSTM step, fused: returns ``(h, c)``.

    ``gates`` (B, 4*H) holds the pre-activations ``x W_ih^T + b_ih + h W_hh^T + b_hh`` in PyTorch's gate
    order i, f, g, o, and ``c_prev`` (B, H) the previous cell state:
    ``c = sigmoid(f) * c_prev + sigmoid(i) * tanh(g)``, ``h = sigmoid(o) * tanh(c)``.
    One kernel computes both; its backward is one kernel too (first-order gradients only).
    """
    return _nn.lstm_cell(gates, c_prev)


def gru_cell(gi, gh, h_prev):
    """The elementwise half of a GRU step, fused: returns the next hidden state (B, H).

    ``gi = x W_ih^T + b_ih`` and ``gh = h_prev W_hh^T + b_hh`` (both (B, 3*H), PyTorch's gate order
    r, z, n): ``r = sigmoid(gi_r + gh_r)``, ``z = sigmoid(gi_z + gh_z)``, ``n = tanh(gi_n + r * gh_n)``,
    ``h = (1 - z) * n + z * h_prev``. One kernel forward, one backward (first-order gradients only).
    """
    return _nn.gru_cell(gi, gh, h_prev)


def lstm_sequence(gi, h0, c0, w_hh, reverse=False):
    """One LSTM layer and direction over a whole sequence: returns ``(out, h_n, c_n)``.

    ``gi`` (T, B, 4*H) holds every step's input projection ``x_t W_ih^T + b_ih + b_hh`` (gate order
    i, f, g, o), ``h0`` and ``c0`` (B, H) the initial state and ``w_hh`` (4*H, H) the hidden weights.
    Step t (t = 0..T-1, or T-1..0 with ``reverse``) computes ``gates = gi[t] + h W_hh^T`` and then
    :func:`lstm_cell`. ``out`` (T, B, H) holds every step's ``h`` at its time index; ``h_n`` and
    ``c_n`` are the state after the last step. One node covers all steps: its backward runs the
    steps in reverse, one GEMM each, and forms the gradient of ``w_hh`` as one GEMM over all of them
    (first-order gradients only). Requires T >= 1.
    """
    return _nn.lstm_sequence(gi, h0, c0, w_hh, bool(reverse))


def gru_sequence(gi, h0, w_hh, b_hh=None, reverse=False):
    """One GRU layer and direction over a whole sequence: returns ``(out, h_n)``.

    ``gi`` (T, B, 3*H) holds every step's ``x_t W_ih^T + b_ih`` (gate order r, z, n), ``h0`` (B, H)
    the initial state, ``w_hh`` (3*H, H) and ``b_hh`` (3*H,) (or None) the hidden weights. Step t
    (t = 0..T-1, or T-1..0 with ``reverse``) computes ``gh = h W_hh^T + b_hh`` and then
    :func:`gru_cell`. ``out`` (T, B, H) holds every step's ``h`` at its time index; ``h_n`` is the
    state after the last step. One node covers all steps, as in :func:`lstm_sequence`
    (first-order gradients only). Requires T >= 1.
    """
    return _nn.gru_sequence(gi, h0, w_hh, b_hh, bool(reverse))


__all__ = ACTIVATIONS + [
    "sigmoid", "tanh", "gelu", "glu", "swiglu", "softmax",
    "log_softmax", "layer_norm", "rms_norm", "linear", "embedding", "dropout", "scaled_dot_product_attention",
    "lstm_cell", "gru_cell", "lstm_sequence", "gru_sequence",
    "cross_entropy", "nll_loss", "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy",
    "binary_cross_entropy_with_logits", "kl_div", "sgd_step", "adam_step", "lion_step", "lamb_step", "total_norm",
    "scale_", "pad", "interpolate",
    *_composed_all,
]
__all__ += _conv_all + _more_all + _3d_all + ["affine_grid", "grid_sample"]
__all__ += _sample_all + _fractional_all + ["linear_cross_entropy", "multi_head_attention_forward", "grouped_mm"]
