"""Adamax, NAdam and RAdam (``torch.optim``'s update rules, state names and defaults).

All keep ``exp_avg = beta1 * exp_avg + (1 - beta1) * g``; ``g`` is the gradient (negated when
``maximize``) plus ``weight_decay * p`` unless the decay is decoupled (then ``p *= 1 - lr * wd``).
"""

from __future__ import annotations

import math

import sneppx_core as sx

from .adaptive import _PerParam
from .optimizer import check_betas, check_range


class _AdamLike(_PerParam):
    _keys = ("lr", "eps", "weight_decay")

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        check_betas(type(self).__name__, group["betas"])

    def _step_group(self, group: dict, params: list, grads: list) -> None:
        if group.get("decoupled_weight_decay") and group["weight_decay"]:
            for p in params:
                p.mul_(1 - group["lr"] * group["weight_decay"])
            group = {**group, "weight_decay": 0.0}
        super()._step_group(group, params, grads)

    @staticmethod
    def _moments(st, g, b1, b2=None):
        st["exp_avg"].mul_(b1).add_(g * (1 - b1))
        if b2 is not None:
            st["exp_avg_sq"].mul_(b2).add_(g * g * (1 - b2))


class Adamax(_AdamLike):
    r"""Adamax, Adam with the infinity norm (``torch.optim.Adamax``)::

        exp_inf = max(beta2 * exp_inf, |g| + eps)
        p = p - lr / (1 - beta1^step) * exp_avg / exp_inf

    Args: params, lr (2e-3), betas ((0.9, 0.999)), eps (1e-8), weight_decay (0), foreach,
    maximize (False), differentiable, capturable.
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 foreach=None, *, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, capturable=capturable))

    def _init_state(self, p, group) -> dict:
        return {"step": sx.tensor(0.0), "exp_avg": sx.zeros_like(p), "exp_inf": sx.zeros_like(p)}

    def _update(self, p, g, st, group, step) -> None:
        b1, b2 = group["betas"]
        self._moments(st, g, b1)
        st["exp_inf"].copy_(sx.maximum(st["exp_inf"] * b2, sx.abs(g) + group["eps"]))
        p.sub_(st["exp_avg"] / st["exp_inf"] * (group["lr"] / (1 - b1 ** step)))


class NAdam(_AdamLike):
    r"""Adam with Nesterov momentum (``torch.optim.NAdam``)::

        mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)),  mu_product = prod_{i<=t} mu_i
        denom = sqrt(exp_avg_sq / (1 - beta2^t)) + eps
        p = p - lr (1 - mu_t) / (1 - mu_product) g / denom
              - lr mu_{t+1} / (1 - mu_product mu_{t+1}) exp_avg / denom

    Args: params, lr (2e-3), betas ((0.9, 0.999)), eps (1e-8), weight_decay (0),
    momentum_decay (4e-3), decoupled_weight_decay (False), foreach, maximize (False),
    capturable, differentiable.
    """

    def __init__(self, params, lr: float = 2e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 momentum_decay: float = 4e-3, decoupled_weight_decay: bool = False, *, foreach=None,
                 maximize: bool = False, capturable: bool = False, differentiable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      momentum_decay=momentum_decay, decoupled_weight_decay=decoupled_weight_decay,
                                      foreach=foreach, maximize=maximize, capturable=capturable,
                                      differentiable=differentiable))

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        check_range("NAdam", "momentum_decay", group["momentum_decay"])

    def _init_state(self, p, group) -> dict:
        return {"step": sx.tensor(0.0), "mu_product": sx.tensor(1.0), "exp_avg": sx.zeros_like(p),
                "exp_avg_sq": sx.zeros_like(p)}

    def _update(self, p, g, st, group, step) -> None:
        b1, b2 = group["betas"]
        lr, decay = group["lr"], group["momentum_decay"]
        mu = b1 * (1 - 0.5 * 0.96 ** (step * decay))
        mu_next = b1 * (1 - 0.5 * 0.96 ** ((step + 1) * decay))
        st["mu_product"].mul_(mu)
        mu_product = float(st["mu_product"].item())
        self._moments(st, g, b1, b2)
        denom = sx.sqrt(st["exp_avg_sq"] / (1 - b2 ** step)) + group["eps"]
        p.sub_(g / denom * (lr * (1 - mu) / (1 - mu_product)))
        p.sub_(st["exp_avg"] / denom * (lr * mu_next / (1 - mu_product * mu_next)))


class RAdam(_AdamLike):
    r"""Rectified Adam (``torch.optim.RAdam``)::

        rho_inf = 2 / (1 - beta2) - 1,  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        m_hat = exp_avg / (1 - beta1^t)
        rho_t > 5:  p = p - lr m_hat r_t sqrt(1 - beta2^t) / (sqrt(exp_avg_sq) + eps),
                    r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
        otherwise:  p = p - lr m_hat

    Args: params, lr (1e-3), betas ((0.9, 0.999)), eps (1e-8), weight_decay (0),
    decoupled_weight_decay (False), foreach, maximize (False), capturable, differentiable.
    """

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 0.0,
                 decoupled_weight_decay: bool = False, *, foreach=None, maximize: bool = False,
                 capturable: bool = False, differentiable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay, foreach=foreach,
                                      maximize=maximize, capturable=capturable, differentiable=differentiable))

    def _init_state(self, p, group) -> dict:
        return {"step": sx.tensor(0.0), "exp_avg": sx.zeros_like(p), "exp_avg_sq": sx.zeros_like(p)}

    def _update(self, p, g, st, group, step) -> None:
        b1, b2 = group["betas"]
        self._moments(st, g, b1, b2)
        bc1, bc2 = 1 - b1 ** step, 1 - b2 ** step
        m_hat = st["exp_avg"] / bc1
        rho_inf = 2 / (1 - b2) - 1
        rho_t = rho_inf - 2 * step * b2 ** step / bc2
        if rho_t > 5:
            rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
            p.sub_(m_hat / (sx.sqrt(st["exp_avg_sq"]) + group["eps"]) * (group["lr"] * rect * math.sqrt(bc2)))
        else:
            p.sub_(m_hat * group["lr"])
