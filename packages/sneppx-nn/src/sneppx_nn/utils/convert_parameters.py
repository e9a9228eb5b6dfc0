"""Flattening parameters to one vector and back, as ``torch.nn.utils``."""

from __future__ import annotations

import sneppx_core as sx


def parameters_to_vector(parameters):
    """All ``parameters`` flattened and concatenated into one 1-d tensor (differentiable)."""
    params = list(parameters)
    if not params:
        raise ValueError("[parameters_to_vector] received no parameters")
    return sx.cat([p.reshape(-1) for p in params], 0)


def vector_to_parameters(vec, parameters) -> None:
    """Copies consecutive slices of the 1-d tensor ``vec`` into ``parameters`` (in place)."""
    if not isinstance(vec, sx.Tensor) or vec.ndim != 1:
        raise TypeError(f"[vector_to_parameters] expected a 1-d Tensor, got "
                        f"{tuple(vec.shape) if isinstance(vec, sx.Tensor) else type(vec).__name__}")
    params = list(parameters)
    total = sum(p.numel() for p in params)
    if total != vec.numel():
        raise ValueError(f"[vector_to_parameters] the vector has {vec.numel()} elements, the parameters {total}")
    start = 0
    with sx.no_grad():
        for p in params:
            p.copy_(vec.narrow(0, start, p.numel()).reshape(tuple(p.shape)))
            start += p.numel()


__all__ = ["parameters_to_vector", "vector_to_parameters"]
