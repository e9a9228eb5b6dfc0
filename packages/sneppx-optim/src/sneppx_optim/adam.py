"""Adam and AdamW (Kingma & Ba 2015; Loshchilov & Hutter 2019), with AMSGrad."""

from __future__ import annotations

import sneppx_core as sx
import sneppx_core.functional as F

from .optimizer import Optimizer, check_betas, check_range


class Adam(Optimizer):
    r"""Adam (``torch.optim.Adam``), with optional AMSGrad and decoupled weight decay.

    With gradient ``g`` (negated when ``maximize``) at step ``t``::

        g = g + weight_decay * p                  (coupled: Adam)
        p = p * (1 - lr * weight_decay)           (decoupled: AdamW)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g**2
        v_max = max(v_max, v)                     (amsgrad; v_max replaces v below)
        p = p - lr / (1 - beta1**t) * m / (sqrt(v / (1 - beta2**t)) + eps)

    Args:
        params: Tensors or parameter-group dicts.
        lr: learning rate (>= 0).
        betas: (beta1, beta2), each in [0, 1).
        eps: added to the denominator (>= 0).
        weight_decay: weight decay coefficient (>= 0).
        amsgrad: use the AMSGrad variant (Reddi et al. 2018).
        maximize: maximize the objective instead of minimizing it.
        foreach, fused, capturable: PyTorch's implementation choices, kept in the param groups; SneppX always
            updates a group through its fused kernel.
        differentiable: True raises NotImplementedError (steps run outside autograd).
        decoupled_weight_decay: decay the weights directly (AdamW) instead of through the gradient.
    """

    _int_step = True

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 amsgrad: bool = False, *, foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused=None, decoupled_weight_decay: bool = False) -> None:
        defaults = dict(lr=lr, betas=tuple(betas) if isinstance(betas, list) else betas, eps=eps,
                        weight_decay=weight_decay, amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        name = type(self).__name__
        check_range(name, "lr", group["lr"])
        check_range(name, "eps", group["eps"])
        check_range(name, "weight_decay", group["weight_decay"])
        check_betas(name, group["betas"])

    @staticmethod
    def _init(p) -> dict:
        return {"step": 0, "exp_avg": sx.zeros_like(p), "exp_avg_sq": sx.zeros_like(p)}

    def _step_group(self, group: dict, params: list, grads: list) -> None:
        amsgrad = group["amsgrad"]
        beta1, beta2 = group["betas"]
        for step, bucket, bucket_grads, states in self._buckets(params, grads, self._init, key=step_of):
            if amsgrad:
                for st in states:
                    if "max_exp_avg_sq" not in st:
                        st["max_exp_avg_sq"] = sx.zeros_like(st["exp_avg_sq"])
            F.adam_step(bucket, bucket_grads, [st["exp_avg"] for st in states], [st["exp_avg_sq"] for st in states],
                        [st["max_exp_avg_sq"] for st in states] if amsgrad else [],
                        step=step + 1, lr=group["lr"], beta1=beta1, beta2=beta2, eps=group["eps"],
                        weight_decay=group["weight_decay"], amsgrad=amsgrad,
                        decoupled_weight_decay=group["decoupled_weight_decay"], maximize=group["maximize"])
            for st in states:
                st["step"] = step + 1


def step_of(state: dict) -> int:
    """The step count in an optimizer state (the bucket key of Adam and LAMB)."""
    return state["step"]


class AdamW(Adam):
    r"""AdamW (``torch.optim.AdamW``): Adam with decoupled weight decay.

    Each step first shrinks the weights, ``p = p * (1 - lr * weight_decay)``, then applies the Adam
    update of :class:`Adam` to the raw gradient.

    Args:
        params: Tensors or parameter-group dicts.
        lr: learning rate (>= 0).
        betas: (beta1, beta2), each in [0, 1).
        eps: added to the denominator (>= 0).
        weight_decay: decoupled weight decay coefficient (>= 0), 0.01 by default.
        amsgrad: use the AMSGrad variant.
        maximize: maximize the objective instead of minimizing it.
        foreach, fused, capturable, differentiable: as for :class:`Adam`.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2,
                 amsgrad: bool = False, *, foreach=None, maximize: bool = False, capturable: bool = False,
                 differentiable: bool = False, fused=None) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad,
                         foreach=foreach, maximize=maximize, capturable=capturable, differentiable=differentiable,
                         fused=fused, decoupled_weight_decay=True)


class SparseAdam:
    """``torch.optim.SparseAdam`` is not available: parameters' gradients are always dense in SneppX (its
    sparse tensors are not parameters' gradients), so there is nothing for a sparse update to skip. Making one raises
    ``NotImplementedError``; :class:`Adam` with the ordinary dense gradients is the alternative
    (``Embedding(sparse=True)`` raises as well)."""

    def __init__(self, params=None, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, maximize: bool = False):
        raise NotImplementedError(
            "[SparseAdam] sparse gradients are not supported: parameters' gradients are always dense. Use "
            "sneppx_optim.Adam, which updates with the dense gradients (lazy per-row updates are not available)")
