"""Lion (Chen et al. 2023) and LAMB (You et al. 2019)."""

from __future__ import annotations

import sneppx_core as sx
import sneppx_core.functional as F

from .adam import Adam, step_of
from .optimizer import Optimizer, check_betas, check_range


class Lion(Optimizer):
    r"""Lion, EvoLved Sign Momentum (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms").

    With gradient ``g``::

        c = beta1 * m + (1 - beta1) * g
        p = p - lr * (sign(c) + weight_decay * p)
        m = beta2 * m + (1 - beta2) * g

    Args:
        params: Tensors or parameter-group dicts.
        lr: learning rate (>= 0); usually 3-10x smaller than AdamW's.
        betas: (beta1, beta2), each in [0, 1).
        weight_decay: decoupled weight decay coefficient (>= 0).
    """

    def __init__(self, params, lr: float = 1e-4, betas=(0.9, 0.99), weight_decay: float = 0.0) -> None:
        super().__init__(params, dict(lr=lr, betas=tuple(betas) if isinstance(betas, list) else betas,
                                      weight_decay=weight_decay))

    def _validate(self, group: dict) -> None:
        name = type(self).__name__
        check_range(name, "lr", group["lr"])
        check_range(name, "weight_decay", group["weight_decay"])
        check_betas(name, group["betas"])

    def _step_group(self, group: dict, params: list, grads: list) -> None:
        beta1, beta2 = group["betas"]
        for _, bucket, bucket_grads, states in self._buckets(params, grads, _lion_init):
            F.lion_step(bucket, bucket_grads, [st["exp_avg"] for st in states], lr=group["lr"], beta1=beta1,
                        beta2=beta2, weight_decay=group["weight_decay"])


def _lion_init(p) -> dict:
    return {"exp_avg": sx.zeros_like(p)}


class LAMB(Optimizer):
    r"""LAMB, layer-wise adaptive moments (You et al. 2019, "Large Batch Optimization for Deep Learning").

    With gradient ``g`` at step ``t``, for each parameter tensor (layer) ``p``::

        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        r = (m / (1 - beta1**t)) / (sqrt(v / (1 - beta2**t)) + eps)
        u = r + weight_decay * p
        trust = ||p|| / ||u||   (1 when either norm is 0)
        p = p - lr * trust * u

    Args:
        params: Tensors or parameter-group dicts.
        lr: learning rate (>= 0).
        betas: (beta1, beta2), each in [0, 1).
        eps: added to the denominator (>= 0).
        weight_decay: weight decay coefficient (>= 0), inside the trust ratio.
    """

    _int_step = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-6,
                 weight_decay: float = 0.0) -> None:
        super().__init__(params, dict(lr=lr, betas=tuple(betas) if isinstance(betas, list) else betas, eps=eps,
                                      weight_decay=weight_decay))

    # Same hyperparameters and moment state as Adam.
    _validate = Adam._validate
    _init = staticmethod(Adam._init)

    def _step_group(self, group: dict, params: list, grads: list) -> None:
        beta1, beta2 = group["betas"]
        for step, bucket, bucket_grads, states in self._buckets(params, grads, self._init, key=step_of):
            F.lamb_step(bucket, bucket_grads, [st["exp_avg"] for st in states], [st["exp_avg_sq"] for st in states],
                        step=step + 1, lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                        weight_decay=group["weight_decay"])
            for st in states:
                st["step"] = step + 1
