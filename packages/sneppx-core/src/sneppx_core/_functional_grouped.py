"""``functional.grouped_mm``: the grouped matrix multiply of mixture-of-experts layers (PyTorch's
``torch.nn.functional.grouped_mm``), as one ``matmul`` per group on slices, so it runs on every dtype and device
and is differentiable in both operands.

The four layouts (G groups, ``offs`` the increasing ends of the groups along the jagged dimension):

- ``a`` (M, K) 2-d, ``b`` (G, K, N): rows ``offs[g-1]:offs[g]`` of ``a`` times ``b[g]``; result (M, N);
- ``a`` (G, M, K), ``b`` (G, K, N): a batched product; result (G, M, N);
- ``a`` (M, K) 2-d, ``b`` (K, N) 2-d: the shared K is split, ``a[:, s:e] @ b[s:e]`` per group; result (G, M, N);
- ``a`` (G, M, K), ``b`` (K, N) 2-d: columns ``offs[g-1]:offs[g]`` of ``b`` times ``a[g]``; result (M, N).

Rows (or columns) beyond ``offs[-1]`` are zeros (PyTorch leaves them unset). ``bias`` raises, as PyTorch's
does ("not supported yet").
"""

from __future__ import annotations

import numpy as np

from ._C_face import Tensor
from ._ops import cat, matmul, stack


def _ends(offs, groups, length, what):
    """``offs`` as a list of ints: one end per group, increasing, within ``length``."""
    if not isinstance(offs, Tensor) or offs.dtype.is_floating_point or offs.ndim != 1:
        raise TypeError(f"[grouped_mm] offs must be a 1-d integer tensor, got "
                        f"{offs.dtype if isinstance(offs, Tensor) else type(offs).__name__}")
    ends = [int(v) for v in np.asarray(offs.detach().to("cpu").numpy())]
    if groups is not None and len(ends) != groups:
        raise ValueError(f"[grouped_mm] offs has {len(ends)} groups; mat_b has {groups}")
    if any(e < s for s, e in zip([0] + ends, ends)) or (ends and ends[-1] > length):
        raise ValueError(f"[grouped_mm] offs must increase and stay within the {what} ({length}), got {ends}")
    return ends


def grouped_mm(mat_a, mat_b, *, offs=None, bias=None, out_dtype=None):
    """Grouped matrix multiply of 2-d or 3-d ``mat_a`` and ``mat_b`` (see the module's note for the layouts);
    ``out_dtype`` sets the result's dtype (the operands are converted to it first, so float32 accumulates
    half-precision inputs)."""
    if bias is not None:
        raise NotImplementedError("[grouped_mm] bias is not supported (as in PyTorch)")
    for name, t in (("mat_a", mat_a), ("mat_b", mat_b)):
        if not isinstance(t, Tensor) or t.ndim not in (2, 3):
            raise ValueError(f"[grouped_mm] {name} must be a 2-d or 3-d tensor, got "
                             f"{tuple(t.shape) if isinstance(t, Tensor) else type(t).__name__}")
    if mat_a.dtype != mat_b.dtype:
        raise TypeError(f"[grouped_mm] mat_a and mat_b must have one dtype, got {mat_a.dtype} and {mat_b.dtype}")
    a, b = mat_a, mat_b
    if out_dtype is not None:
        a, b = a.to(out_dtype), b.to(out_dtype)
    if a.ndim == 3 and b.ndim == 3:
        if offs is not None:
            raise ValueError("[grouped_mm] offs must be None when both operands are 3-d")
        if a.shape[0] != b.shape[0]:
            raise ValueError(f"[grouped_mm] group counts differ: mat_a {tuple(a.shape)}, mat_b {tuple(b.shape)}")
        return matmul(a, b)
    if offs is None:
        raise ValueError(f"[grouped_mm] offs is required with a 2-d operand, got mat_a {tuple(a.shape)} and mat_b "
                         f"{tuple(b.shape)}")
    parts = []
    if a.ndim == 2 and b.ndim == 3:
        ends = _ends(offs, b.shape[0], a.shape[0], "rows of mat_a")
        for g, (s, e) in enumerate(zip([0] + ends, ends)):
            parts.append(matmul(a[s:e], b[g]))
        rest = a.shape[0] - (ends[-1] if ends else 0)
        if rest:
            parts.append(a.new_zeros((rest, b.shape[2])))
        return cat(parts, 0)
    if a.ndim == 2 and b.ndim == 2:
        ends = _ends(offs, None, a.shape[1], "shared dimension")
        return stack([matmul(a[:, s:e], b[s:e]) for s, e in zip([0] + ends, ends)], 0)
    ends = _ends(offs, a.shape[0], b.shape[1], "columns of mat_b")
    for g, (s, e) in enumerate(zip([0] + ends, ends)):
        parts.append(matmul(a[g], b[:, s:e]))
    rest = b.shape[1] - (ends[-1] if ends else 0)
    if rest:
        parts.append(a.new_zeros((a.shape[1], rest)))
    return cat(parts, 1)


__all__ = ["grouped_mm"]
