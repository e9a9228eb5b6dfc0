"""Stochastic gradient descent with momentum, dampening, Nesterov momentum and weight decay."""

from __future__ import annotations

import sneppx_core as sx
import sneppx_core.functional as F

from .optimizer import Optimizer, check_range


class SGD(Optimizer):
    r"""Stochastic gradient descent (``torch.optim.SGD``).

    For each parameter ``p`` with gradient ``g`` (negated when ``maximize``)::

        g = g + weight_decay * p
        b = g                                       (first step)
        b = momentum * b + (1 - dampening) * g      (later steps)
        d = g + momentum * b if nesterov else b     (d = g when momentum == 0)
        p = p - lr * d

    Args:
        params: Tensors or parameter-group dicts.
        lr: learning rate (>= 0).
        momentum: momentum factor (>= 0).
        dampening: dampening of the momentum (>= 0).
        weight_decay: L2 penalty coefficient (>= 0).
        nesterov: use Nesterov momentum (needs momentum > 0 and dampening == 0).
        maximize: maximize the objective instead of minimizing it.
        foreach, fused: PyTorch's implementation choices, kept in the param groups; SneppX always updates a
            group through its fused kernel.
        differentiable: True raises NotImplementedError (steps run outside autograd).
    """

    def __init__(self, params, lr: float = 1e-3, momentum: float = 0.0, dampening: float = 0.0,
                 weight_decay: float = 0.0, nesterov: bool = False, *, maximize: bool = False, foreach=None,
                 differentiable: bool = False, fused=None) -> None:
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay,
                        nesterov=nesterov, maximize=maximize, foreach=foreach, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        name = type(self).__name__
        for key in ("lr", "momentum", "dampening", "weight_decay"):
            check_range(name, key, group[key])
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"{name}: nesterov needs momentum > 0 and dampening == 0, "
                             f"got momentum={group['momentum']}, dampening={group['dampening']}")

    def _step_group(self, group: dict, params: list, grads: list) -> None:
        momentum = group["momentum"]
        for first, bucket, bucket_grads, states in self._buckets(
                params, grads, lambda p: {"momentum_buffer": None}, key=lambda st: st["momentum_buffer"] is None):
            bufs = [self._buffer(p, st) for p, st in zip(bucket, states)] if momentum else []
            F.sgd_step(bucket, bucket_grads, bufs, lr=group["lr"], momentum=momentum,
                       dampening=group["dampening"], nesterov=group["nesterov"], weight_decay=group["weight_decay"],
                       maximize=group["maximize"], first_step=first and bool(momentum))

    @staticmethod
    def _buffer(p, st: dict):
        if st["momentum_buffer"] is None:
            st["momentum_buffer"] = sx.zeros_like(p)
        return st["momentum_buffer"]
