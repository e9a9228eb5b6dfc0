"""Muon (``torch.optim.Muon``): momentum, then the update orthogonalized by a Newton-Schulz iteration."""

from __future__ import annotations

import math

import sneppx_core as sx

from .optimizer import Optimizer, check_range

_NS_COEFFICIENTS = (3.4445, -4.7750, 2.0315)


def zeropower_via_newtonschulz(grad, ns_coefficients=_NS_COEFFICIENTS, ns_steps: int = 5, eps: float = 1e-7):
    """An approximately orthogonal matrix ``U S' V^T`` (``S'`` near 1) for the 2-d ``grad = U S V^T``, computed as
    PyTorch does, in bfloat16: ``X = G / max(||G||_F, eps)`` (transposed when it has more rows than columns),
    then ``ns_steps`` times ``A = X X^T``, ``X = a X + (b A + c A A) X``. Returns bfloat16."""
    if ns_steps >= 100:
        raise ValueError(f"Muon: ns_steps must be less than 100, got {ns_steps}")
    if grad.ndim != 2:
        raise ValueError(f"Muon: the gradient must be a 2-d matrix, got shape {tuple(grad.shape)}")
    if len(ns_coefficients) != 3:
        raise ValueError(f"Muon: ns_coefficients must be three numbers, got {ns_coefficients!r}")
    a, b, c = ns_coefficients
    x = grad.bfloat16()
    tall = grad.shape[0] > grad.shape[1]
    if tall:
        x = x.T
    x = x / x.float().norm().bfloat16().clamp(min=eps)  # the norm summed in float32, rounded once
    for _ in range(ns_steps):  # each product accumulated in float32 and rounded once to bfloat16, as PyTorch's
        x32 = x.float()
        gram = (x32 @ x32.T).bfloat16().float()
        update = sx.addmm(gram, gram, gram, beta=b, alpha=c).bfloat16().float()
        x = sx.addmm(x32, update, x32, beta=a).bfloat16()
    return x.T if tall else x


def _adjust_lr(lr: float, adjust_lr_fn, shape) -> float:
    rows, cols = shape[:2]
    if adjust_lr_fn is None or adjust_lr_fn == "original":
        return lr * math.sqrt(max(1.0, rows / cols))
    return lr * 0.2 * math.sqrt(max(rows, cols))  # "match_rms_adamw"


class Muon(Optimizer):
    r"""Muon (``torch.optim.Muon``) for 2-d parameters (hidden-layer weights; use AdamW for biases and
    embeddings)::

        buf = momentum * buf + (1 - momentum) * g                  (buf.lerp_(g, 1 - momentum))
        u = (1 - momentum) * g + momentum * buf  if nesterov,  else  buf
        O = NS(u)                                                  (:func:`zeropower_via_newtonschulz`)
        p = p * (1 - lr * weight_decay)                            (decoupled weight decay)
        p = p - lr' * O,   lr' = lr * sqrt(max(1, rows / cols))    ("original")
                           lr' = lr * 0.2 * sqrt(max(rows, cols))  ("match_rms_adamw")

    The state of a parameter is ``momentum_buffer`` (zeros at first), as in PyTorch; the orthogonalization
    runs in bfloat16 there and here.

    Args: params, lr (1e-3), weight_decay (0.1), momentum (0.95), nesterov (True), ns_coefficients
    ((3.4445, -4.7750, 2.0315)), eps (1e-7), ns_steps (5), adjust_lr_fn (None: "original", or
    "match_rms_adamw").
    """

    def __init__(self, params, lr: float = 1e-3, weight_decay: float = 0.1, momentum: float = 0.95,
                 nesterov: bool = True, ns_coefficients=_NS_COEFFICIENTS, eps: float = 1e-7, ns_steps: int = 5,
                 adjust_lr_fn=None) -> None:
        super().__init__(params, dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                                      ns_coefficients=ns_coefficients, eps=eps, ns_steps=ns_steps,
                                      adjust_lr_fn=adjust_lr_fn))

    def _validate(self, group: dict) -> None:
        for key in ("lr", "momentum", "weight_decay"):
            check_range("Muon", key, group[key])
        if group["adjust_lr_fn"] not in (None, "original", "match_rms_adamw"):
            raise ValueError(f"Muon: adjust_lr_fn must be None, 'original' or 'match_rms_adamw', "
                             f"got {group['adjust_lr_fn']!r}")
        for p in group["params"]:
            if p.ndim != 2:
                raise ValueError(f"Muon: only 2-d parameters are supported, got one of shape {tuple(p.shape)}")
            if p.is_complex():
                raise RuntimeError("Muon does not support complex parameters")

    def _step_group(self, group: dict, params: list, grads: list) -> None:
        lr, momentum = group["lr"], group["momentum"]
        for p, g in zip(params, grads):
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = {"momentum_buffer": sx.zeros_like(g)}
            buf = st["momentum_buffer"]
            buf.lerp_(g, 1 - momentum)
            update = g.lerp(buf, momentum) if group["nesterov"] else buf
            update = zeropower_via_newtonschulz(update, group["ns_coefficients"], group["ns_steps"], group["eps"])
            p.mul_(1 - lr * group["weight_decay"])
            p.add_(update.to(p.dtype), alpha=-_adjust_lr(lr, group["adjust_lr_fn"], tuple(p.shape)))
