"""PyTorch's top-level forms of neural-network functions (``torch.threshold``, ``torch.convolution``,
``torch.gru_cell``, ...), with ``torch.``'s signatures: integer ``reduction``, integer grid-sampler modes,
the RNN cells taking the weights directly, ``embedding_bag`` with its four results. They delegate to
``sneppx_core.functional``.

``FUNCTIONS`` holds the module-level names (none of them becomes a Tensor method).
"""

from __future__ import annotations

import numbers

import numpy as np

from . import functional as F
from ._backend import _C
from ._C_face import Dtype, Tensor
from ._functional_sample import _renorm_rows
from ._tensor_extra import _need
from ._torch_aliases import _reduction
from ._torch_reach import _flag


def threshold(input, threshold, value):
    """``value`` where ``input <= threshold``, else ``input`` (``functional.threshold``)."""
    return F.threshold(_need(input, "threshold"), threshold, value)


def threshold_(input, threshold, value):
    """In-place :func:`threshold`; returns ``input``."""
    return F.threshold_(_need(input, "threshold_"), threshold, value)


def triplet_margin_loss(anchor, positive, negative, margin=1.0, p=2, eps=1e-6, swap=False, reduction=1):
    """``functional.triplet_margin_loss`` with ``reduction`` as an int (0 none, 1 mean, 2 sum):
    ``max(d(a, p) - d(a, n) + margin, 0)`` with the p-norm distance ``d``."""
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction, "triplet_margin_loss"))


def rms_norm(input, normalized_shape, weight=None, eps=None):
    """``x / sqrt(mean(x^2) + eps) * weight`` over the trailing ``normalized_shape`` dims
    (``functional.rms_norm``; ``eps`` None means the dtype's machine epsilon)."""
    return F.rms_norm(_need(input, "rms_norm"), normalized_shape, weight, eps)


def adjoint(input):
    """``input`` with its last two dims swapped (the conjugate transpose of a real tensor), as ``input.adjoint()``."""
    return _need(input, "adjoint").adjoint()


def get_device(input):
    """The device index of ``input``, or -1 for a CPU tensor."""
    return _need(input, "get_device").get_device()


def norm_except_dim(v, pow=2, dim=0):
    """The ``pow``-norm of ``v`` over every dim but ``dim``, kept as size-1 dims (weight norm's ``||v||``);
    ``dim=-1`` means the norm of the whole tensor, a 0-d result."""
    _need(v, "norm_except_dim", "v")
    if dim == -1:
        return _C.norm(v, float(pow), None, False)
    if not isinstance(dim, numbers.Integral) or not 0 <= dim < max(v.ndim, 1):
        raise IndexError(f"[norm_except_dim] dim {dim!r} is out of range for a tensor with {v.ndim} dims")
    others = [d for d in range(v.ndim) if d != dim]
    if not others:
        return _C.abs(v) if pow != 0 else (v != 0).to(v.dtype)
    return _C.norm(v, float(pow), others, True)


def embedding_renorm_(input, indices, max_norm, norm_type):
    """Scales the rows of ``input`` (an embedding weight) that ``indices`` names and whose ``norm_type``-norm
    exceeds ``max_norm`` by ``max_norm / (norm + 1e-7)``, in place and unrecorded; returns ``input``."""
    _need(input, "embedding_renorm_")
    _need(indices, "embedding_renorm_", "indices")
    if input.ndim != 2:
        raise ValueError(f"[embedding_renorm_] input must be 2-d, got shape {tuple(input.shape)}")
    if indices.is_floating_point() or indices.dtype == Dtype.BOOL:
        raise TypeError(f"[embedding_renorm_] indices must be an integer tensor, got {indices.dtype!r}")
    _renorm_rows(input, indices.reshape(-1).unique().to(Dtype.INT64), float(max_norm), float(norm_type))
    return input


def convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups):
    """The generic convolution: ``conv1d``/``conv2d``/``conv3d`` (or their transposed forms when ``transposed``)
    chosen by ``weight``'s dims (3, 4 or 5)."""
    _need(input, "convolution")
    _need(weight, "convolution", "weight")
    n = weight.ndim - 2
    if n not in (1, 2, 3):
        raise ValueError(f"[convolution] weight must have 3, 4 or 5 dims, got shape {tuple(weight.shape)}")
    if transposed:
        fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[n - 1]
        return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)
    return (F.conv1d, F.conv2d, F.conv3d)[n - 1](input, weight, bias, stride, padding, dilation, groups)


_INTERPOLATION = {0: "bilinear", 1: "nearest", 2: "bicubic"}
_PADDING = {0: "zeros", 1: "border", 2: "reflection"}


def grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners):
    """``functional.grid_sample`` with integer modes: interpolation 0 bilinear, 1 nearest, 2 bicubic;
    padding 0 zeros, 1 border, 2 reflection."""
    for name, v in (("interpolation_mode", interpolation_mode), ("padding_mode", padding_mode)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v not in (0, 1, 2):
            raise ValueError(f"[grid_sampler] {name} must be 0, 1 or 2, got {v!r}")
    return F.grid_sample(_need(input, "grid_sampler"), _need(grid, "grid_sampler", "grid"),
                         _INTERPOLATION[interpolation_mode], _PADDING[padding_mode],
                         _flag(align_corners, "grid_sampler", "align_corners"))


def _grid_sampler_nd(op, nd, input, grid, interpolation_mode, padding_mode, align_corners):
    _need(input, op)
    _need(grid, op, "grid")
    if input.ndim != nd + 2 or grid.ndim != nd + 2:
        raise ValueError(f"[{op}] expected {nd + 2}-d input and grid, got input of shape {tuple(input.shape)} and "
                         f"grid of shape {tuple(grid.shape)}")
    if nd == 3 and isinstance(interpolation_mode, numbers.Integral) and interpolation_mode == 2:
        raise ValueError(f"[{op}] bicubic interpolation (mode 2) only supports 4-d input")
    return grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_2d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` for 4-d ``input`` (N, C, H, W) and ``grid`` (N, H_out, W_out, 2) only."""
    return _grid_sampler_nd("grid_sampler_2d", 2, input, grid, interpolation_mode, padding_mode, align_corners)


def grid_sampler_3d(input, grid, interpolation_mode, padding_mode, align_corners):
    """:func:`grid_sampler` for 5-d ``input`` (N, C, D, H, W) and ``grid`` (N, D_out, H_out, W_out, 3) only
    (interpolation 0 bilinear or 1 nearest)."""
    return _grid_sampler_nd("grid_sampler_3d", 3, input, grid, interpolation_mode, padding_mode, align_corners)


def affine_grid_generator(theta, size, align_corners):
    """``functional.affine_grid(theta, size, align_corners)`` with ``align_corners`` required: the sampling
    grid (N, H, W, 2) of the affine maps ``theta`` (N, 2, 3) for ``size`` (N, C, H, W), or (N, D, H, W, 3) of
    ``theta`` (N, 3, 4) for (N, C, D, H, W)."""
    op = "affine_grid_generator"
    if not isinstance(size, (list, tuple)) or not all(isinstance(v, numbers.Integral) for v in size):
        raise TypeError(f"[{op}] size must be a sequence of ints, got {size!r}")
    return F.affine_grid(_need(theta, op, "theta"), size, _flag(align_corners, op, "align_corners"))


_BAG_MODES = {0: "sum", 1: "mean", 2: "max"}


def _bag_extras(indices, offsets, weight, mode, padding_idx, bags):
    """PyTorch's CPU by-products of embedding_bag: offset2bag, bag_size and max_indices."""
    ids = indices.detach().to("cpu").numpy().astype(np.int64)
    offs = offsets.detach().to("cpu").numpy().astype(np.int64)
    bag = np.searchsorted(offs[:bags], np.arange(ids.size), side="right") - 1
    size = np.zeros(bags, np.int64)
    top = size
    if mode != 0:
        keep = (ids != (-1 if padding_idx is None else padding_idx % weight.shape[0])) & (bag >= 0)
        size = top = np.bincount(bag[keep], minlength=bags)[:bags]
    if mode == 2:
        rows = weight.detach().to("cpu").numpy()[ids]
        top = np.zeros((bags, weight.shape[1]), np.int64)
        for b in range(bags):
            sel = np.nonzero((bag == b) & keep)[0]
            if sel.size:
                top[b] = ids[sel[np.argmax(rows[sel], axis=0)]]
    return [Tensor.from_numpy(np.ascontiguousarray(a)).to(indices.dtype).to(indices.device) for a in (bag, size, top)]


def embedding_bag(weight, indices, offsets, scale_grad_by_freq=False, mode=0, sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """``(output, offset2bag, bag_size, max_indices)``: ``output`` is ``functional.embedding_bag(indices, weight,
    offsets, ...)`` with ``mode`` an int (0 sum, 1 mean, 2 max) and 1-d ``indices``; ``offset2bag`` gives each
    index's bag, ``bag_size`` the count of non-padding indices per bag (zeros for sum), ``max_indices`` the
    index chosen for each bag and column by max (the bag sizes for mean, zeros for sum). The by-products
    are computed on the host and have ``indices``' dtype; only ``output`` is differentiable."""
    op = "embedding_bag"
    for name, t in (("weight", weight), ("indices", indices), ("offsets", offsets)):
        _need(t, op, name)
    if isinstance(mode, bool) or not isinstance(mode, numbers.Integral) or mode not in _BAG_MODES:
        raise ValueError(f"[{op}] mode must be 0 (sum), 1 (mean) or 2 (max), got {mode!r}")
    if padding_idx is not None and (isinstance(padding_idx, bool) or not isinstance(padding_idx, numbers.Integral)):
        raise TypeError(f"[{op}] padding_idx must be None or an int, got {type(padding_idx).__name__}")
    flags = [_flag(v, op, name) for name, v in (("scale_grad_by_freq", scale_grad_by_freq), ("sparse", sparse),
                                                ("include_last_offset", include_last_offset))]
    if indices.ndim != 1:
        raise ValueError(f"[{op}] indices must be 1-d (bags given by offsets), got shape {tuple(indices.shape)}; "
                         "functional.embedding_bag takes 2-d bags")
    out = F.embedding_bag(indices, weight, offsets, None, 2, flags[0], _BAG_MODES[mode], flags[1], per_sample_weights,
                          flags[2], padding_idx)
    return (out, *_bag_extras(indices, offsets, weight, mode, padding_idx, out.shape[0]))


def _cell_check(op, input, hx, w_ih, w_hh, gates):
    for name, t in (("input", input), ("hx", hx), ("w_ih", w_ih), ("w_hh", w_hh)):
        _need(t, op, name)
    h = hx.shape[-1] if hx.ndim else 0
    ok = (input.ndim == 2 and hx.ndim == 2 and input.shape[0] == hx.shape[0] and w_ih.ndim == 2 and w_hh.ndim == 2
          and tuple(w_ih.shape) == (gates * h, input.shape[1]) and tuple(w_hh.shape) == (gates * h, h))
    if not ok:
        raise ValueError(f"[{op}] expected input (B, I), hx (B, H), w_ih ({gates}*H, I), w_hh ({gates}*H, H); got "
                         f"input {tuple(input.shape)}, hx {tuple(hx.shape)}, w_ih {tuple(w_ih.shape)}, "
                         f"w_hh {tuple(w_hh.shape)}")


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step: ``h' = tanh(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    _cell_check("rnn_tanh_cell", input, hx, w_ih, w_hh, 1)
    return _C.tanh(F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh))


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One Elman RNN step with ReLU: ``h' = relu(x W_ih^T + b_ih + h W_hh^T + b_hh)``."""
    _cell_check("rnn_relu_cell", input, hx, w_ih, w_hh, 1)
    return _C.relu(F.linear(input, w_ih, b_ih) + F.linear(hx, w_hh, b_hh))


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step; ``hx`` is the pair ``(h, c)``; returns ``(h', c')`` (gate order i, f, g, o):
    ``c' = sigmoid(f) c + sigmoid(i) tanh(g)``, ``h' = sigmoid(o) tanh(c')``."""
    if not isinstance(hx, (tuple, list)) or len(hx) != 2:
        raise TypeError(f"[lstm_cell] hx must be a pair (h, c) of tensors, got {type(hx).__name__}")
    h, c = hx
    _cell_check("lstm_cell", input, h, w_ih, w_hh, 4)
    _need(c, "lstm_cell", "c")
    if tuple(c.shape) != tuple(h.shape):
        raise ValueError(f"[lstm_cell] c must have h's shape {tuple(h.shape)}, got {tuple(c.shape)}")
    return tuple(F.lstm_cell(F.linear(input, w_ih, b_ih) + F.linear(h, w_hh, b_hh), c))


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One GRU step (gate order r, z, n): ``r = sigmoid(x_r + h_r)``, ``z = sigmoid(x_z + h_z)``,
    ``n = tanh(x_n + r h_n)``, ``h' = (1 - z) n + z h`` with ``x_* = x W_ih^T + b_ih``, ``h_* = h W_hh^T + b_hh``."""
    _cell_check("gru_cell", input, hx, w_ih, w_hh, 3)
    return F.gru_cell(F.linear(input, w_ih, b_ih), F.linear(hx, w_hh, b_hh), hx)


_PLAIN = [threshold, threshold_, triplet_margin_loss, rms_norm, adjoint, get_device, norm_except_dim,
          embedding_renorm_, convolution, grid_sampler, rnn_tanh_cell, rnn_relu_cell, lstm_cell, gru_cell,
          grid_sampler_2d, grid_sampler_3d, affine_grid_generator, embedding_bag]
FUNCTIONS = {f.__name__: f for f in _PLAIN}
__all__ = list(FUNCTIONS)
