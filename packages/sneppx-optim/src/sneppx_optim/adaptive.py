"""Adagrad, Adadelta and RMSprop (``torch.optim``'s update rules, state names and defaults).

These update each parameter with a few core tensor ops (there is no fused kernel for them yet).
In every rule ``g`` is the gradient, negated when ``maximize``, plus ``weight_decay * p``.
"""

from __future__ import annotations

import sneppx_core as sx

from .optimizer import Optimizer, check_range


class _PerParam(Optimizer):
    """An optimizer whose step visits the parameters one by one."""

    _keys: tuple = ()
    _decay_in_gradient = True  # adds weight_decay * p to g (Adafactor decays the weights apart; Rprop has none)
    _complex = True  # complex parameters step as their (real, imaginary) pairs (Adafactor refuses them, as PyTorch)

    def _validate(self, group: dict) -> None:
        for key in self._keys:
            check_range(type(self).__name__, key, group[key])

    def _step_group(self, group: dict, params: list, grads: list) -> None:
        for param, g in zip(params, grads):
            p = param
            if p.is_complex():  # as Optimizer._buckets does
                if not self._complex:
                    raise RuntimeError(f"[{type(self).__name__}] does not support complex parameters")
                p, g = sx.view_as_real(p), sx.view_as_real(g)
            st = self.state.get(param)
            if st is None:
                st = self.state[param] = self._init_state(p, group)
            st["step"] += 1
            g = -g if group["maximize"] else g
            if self._decay_in_gradient and group["weight_decay"]:
                g = g + p * group["weight_decay"]
            self._update(p, g, st, group, float(st["step"].item()))

    def _init_state(self, p, group) -> dict:
        raise NotImplementedError

    def _update(self, p, g, st, group, step) -> None:
        raise NotImplementedError


class Adagrad(_PerParam):
    r"""Adagrad (``torch.optim.Adagrad``)::

        sum = sum + g * g
        p = p - lr / (1 + (step - 1) * lr_decay) * g / (sqrt(sum) + eps)

    Args: params, lr (1e-2), lr_decay (0), weight_decay (0), initial_accumulator_value (0),
    eps (1e-10), foreach (accepted), maximize (False).
    """

    _keys = ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps")

    def __init__(self, params, lr: float = 1e-2, lr_decay: float = 0.0, weight_decay: float = 0.0,
                 initial_accumulator_value: float = 0.0, eps: float = 1e-10, foreach=None, *,
                 maximize: bool = False, differentiable: bool = False, fused=None) -> None:
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay, eps=eps,
                                      initial_accumulator_value=initial_accumulator_value, foreach=foreach,
                                      maximize=maximize, differentiable=differentiable, fused=fused))

    def _init_state(self, p, group) -> dict:
        return {"step": sx.tensor(0.0), "sum": sx.full_like(p, group["initial_accumulator_value"])}

    def _update(self, p, g, st, group, step) -> None:
        clr = group["lr"] / (1 + (step - 1) * group["lr_decay"])
        st["sum"].add_(g * g)
        p.sub_(g / (sx.sqrt(st["sum"]) + group["eps"]) * clr)


class Adadelta(_PerParam):
    r"""Adadelta (``torch.optim.Adadelta``)::

        square_avg = rho * square_avg + (1 - rho) * g * g
        delta = sqrt(acc_delta + eps) / sqrt(square_avg + eps) * g
        acc_delta = rho * acc_delta + (1 - rho) * delta * delta
        p = p - lr * delta

    Args: params, lr (1.0), rho (0.9), eps (1e-6), weight_decay (0), foreach, capturable,
    maximize (False), differentiable.
    """

    _keys = ("lr", "eps", "weight_decay")

    def __init__(self, params, lr: float = 1.0, rho: float = 0.9, eps: float = 1e-6, weight_decay: float = 0.0,
                 foreach=None, *, capturable: bool = False, maximize: bool = False,
                 differentiable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, foreach=foreach,
                                      capturable=capturable, maximize=maximize, differentiable=differentiable))

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        check_range("Adadelta", "rho", group["rho"], 0.0, 1.0, high_open=False)

    def _init_state(self, p, group) -> dict:
        return {"step": sx.tensor(0.0), "square_avg": sx.zeros_like(p), "acc_delta": sx.zeros_like(p)}

    def _update(self, p, g, st, group, step) -> None:
        rho, eps = group["rho"], group["eps"]
        sq, acc = st["square_avg"], st["acc_delta"]
        sq.mul_(rho).add_(g * g * (1 - rho))
        delta = sx.sqrt(acc + eps) / sx.sqrt(sq + eps) * g
        acc.mul_(rho).add_(delta * delta * (1 - rho))
        p.sub_(delta * group["lr"])


class RMSprop(_PerParam):
    r"""RMSprop (``torch.optim.RMSprop``)::

        square_avg = alpha * square_avg + (1 - alpha) * g * g
        avg = sqrt(square_avg - grad_avg^2) + eps   (centered: grad_avg = alpha grad_avg + (1 - alpha) g)
        avg = sqrt(square_avg) + eps                (otherwise)
        buf = momentum * buf + g / avg;  p = p - lr * buf     (momentum > 0)
        p = p - lr * g / avg                                   (momentum == 0)

    Args: params, lr (1e-2), alpha (0.99), eps (1e-8), weight_decay (0), momentum (0),
    centered (False), capturable, foreach, maximize (False), differentiable.
    """

    _keys = ("lr", "alpha", "eps", "weight_decay", "momentum")

    def __init__(self, params, lr: float = 1e-2, alpha: float = 0.99, eps: float = 1e-8, weight_decay: float = 0.0,
                 momentum: float = 0.0, centered: bool = False, capturable: bool = False, foreach=None,
                 maximize: bool = False, differentiable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay, momentum=momentum,
                                      centered=centered, capturable=capturable, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable))

    def _init_state(self, p, group) -> dict:
        st = {"step": sx.tensor(0.0), "square_avg": sx.zeros_like(p)}
        if group["momentum"] > 0:
            st["momentum_buffer"] = sx.zeros_like(p)
        if group["centered"]:
            st["grad_avg"] = sx.zeros_like(p)
        return st

    def _update(self, p, g, st, group, step) -> None:
        alpha = group["alpha"]
        sq = st["square_avg"]
        sq.mul_(alpha).add_(g * g * (1 - alpha))
        if group["centered"]:
            ga = st["grad_avg"]
            ga.mul_(alpha).add_(g * (1 - alpha))
            avg = sx.sqrt(sq - ga * ga) + group["eps"]
        else:
            avg = sx.sqrt(sq) + group["eps"]
        if group["momentum"] > 0:
            buf = st["momentum_buffer"]
            buf.mul_(group["momentum"]).add_(g / avg)
            p.sub_(buf * group["lr"])
        else:
            p.sub_(g / avg * group["lr"])
