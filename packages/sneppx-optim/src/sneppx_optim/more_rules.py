"""Rprop, ASGD and Adafactor (``torch.optim``'s update rules, state names and defaults).

Like Adagrad & co. (adaptive.py) they update each parameter with a few core tensor ops. In every
rule ``g`` is the gradient, negated when ``maximize``; only ASGD adds ``weight_decay * p`` to it.
"""

from __future__ import annotations

import math

import sneppx_core as sx

from .adaptive import _PerParam
from .optimizer import check_range


def _check_pair(opt_name: str, key: str, value) -> None:
    if not isinstance(value, (tuple, list)) or len(value) != 2:
        raise ValueError(f"{opt_name}: {key} must be a pair, got {value!r}")


class Rprop(_PerParam):
    r"""Resilient backpropagation (``torch.optim.Rprop``): a per-element step size driven by gradient signs::

        s = sign(g * prev)
        step_size = clamp(step_size * (etaplus if s > 0, etaminus if s < 0, 1 if s == 0),
                          step_size_min, step_size_max)
        g = 0 where s < 0                    (a sign change skips the update)
        p = p - sign(g) * step_size
        prev = g

    ``step_size`` starts at ``lr``; ``prev`` at 0.

    Args: params, lr (1e-2), etas ((etaminus, etaplus) = (0.5, 1.2)), step_sizes ((min, max) = (1e-6, 50)),
    capturable, foreach, maximize (False), differentiable.
    """

    _decay_in_gradient = False  # torch's Rprop has no weight decay

    def __init__(self, params, lr: float = 1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 capturable: bool = False, foreach=None, maximize: bool = False,
                 differentiable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, etas=etas, step_sizes=step_sizes, foreach=foreach, maximize=maximize,
                                      differentiable=differentiable, capturable=capturable))

    def _validate(self, group: dict) -> None:
        check_range("Rprop", "lr", group["lr"])
        _check_pair("Rprop", "etas", group["etas"])
        check_range("Rprop", "etas[0] (etaminus)", group["etas"][0], 0.0, 1.0, low_open=True)
        check_range("Rprop", "etas[1] (etaplus)", group["etas"][1], 1.0, low_open=True)
        _check_pair("Rprop", "step_sizes", group["step_sizes"])
        low, high = group["step_sizes"]
        check_range("Rprop", "step_sizes[0] (min)", low)
        check_range("Rprop", "step_sizes[1] (max)", high, low)


    def _init_state(self, p, group) -> dict:
        return {"step": sx.tensor(0.0), "prev": sx.zeros_like(p), "step_size": sx.full_like(p, group["lr"])}

    def _update(self, p, g, st, group, step) -> None:
        etaminus, etaplus = group["etas"]
        s = sx.sign(g * st["prev"])
        # masks come from s, not from the partly filled result; a NaN sign stays NaN, as in torch
        factor = s.masked_fill(s > 0, etaplus).masked_fill(s < 0, etaminus).masked_fill(s == 0, 1.0)
        st["step_size"].mul_(factor).clamp_(*group["step_sizes"])
        g = g.masked_fill(s < 0, 0.0)
        p.sub_(sx.sign(g) * st["step_size"])
        st["prev"].copy_(g)


class ASGD(_PerParam):
    r"""Averaged SGD (``torch.optim.ASGD``), keeping a running average ``ax`` of the iterates::

        p = p * (1 - lambd * eta) - eta * g
        ax = p  if mu == 1,  else  ax + mu * (p - ax)
        eta = lr / (1 + lambd * lr * step)^alpha,   mu = 1 / max(1, step - t0)   (for the next step)

    ``eta`` starts at ``lr`` and ``mu`` at 1; both are kept as 0-d tensors of the parameter's dtype.

    Args: params, lr (1e-2), lambd (1e-4), alpha (0.75), t0 (1e6), weight_decay (0), foreach,
    maximize (False), differentiable, capturable.
    """

    _keys = ("lr", "lambd", "alpha", "t0", "weight_decay")

    def __init__(self, params, lr: float = 1e-2, lambd: float = 1e-4, alpha: float = 0.75, t0: float = 1e6,
                 weight_decay: float = 0.0, foreach=None, maximize: bool = False, differentiable: bool = False,
                 capturable: bool = False) -> None:
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize, differentiable=differentiable,
                                      capturable=capturable))

    def _init_state(self, p, group) -> dict:
        return {"step": sx.tensor(0.0), "eta": sx.tensor(float(group["lr"]), dtype=p.dtype),
                "mu": sx.tensor(1.0, dtype=p.dtype), "ax": sx.zeros_like(p)}

    def _update(self, p, g, st, group, step) -> None:
        lr, lambd = group["lr"], group["lambd"]
        eta, mu = float(st["eta"].item()), float(st["mu"].item())
        p.mul_(1 - lambd * eta).sub_(g * eta)
        if mu != 1:
            st["ax"].add_((p - st["ax"]) * mu)
        else:
            st["ax"].copy_(p)
        st["eta"].fill_(lr / (1 + lambd * lr * step) ** group["alpha"])
        st["mu"].fill_(1 / max(1.0, step - group["t0"]))


class Adafactor(_PerParam):
    r"""Adafactor (``torch.optim.Adafactor``; Shazeer & Stern 2018) with factored second moments.

    For a parameter of 2 or more dims the second moment is kept as a row factor (mean of ``g^2``
    over the last dim) and a column factor (mean over the second-to-last dim); a vector or scalar
    keeps the full ``variance``::

        beta = step^beta2_decay                 (that is, 1 - beta2_t)
        rho = min(lr, 1 / sqrt(step)),  alpha = max(eps2, rms(p)) * rho
        p = p * (1 - lr * weight_decay)
        row_var = lerp(row_var, mean(g^2, dim=-1), beta),  col_var = lerp(col_var, mean(g^2, dim=-2), beta)
        v = row_var @ col_var / max(mean(row_var, dim=-2), eps1)          (>= 2-D)
        v = variance = lerp(variance, g^2, beta)                           (0-D and 1-D)
        u = g / sqrt(max(v, eps1^2))
        p = p - alpha / max(1, rms(u) / d) * u

    with ``rms(x) = norm(x) / sqrt(numel(x))``, ``alpha`` taken before the weight decay and ``eps1 = None``
    meaning the machine epsilon of the parameter's dtype.

    Args: params, lr (1e-2), beta2_decay (-0.8), eps ((eps1, eps2) = (None, 1e-3)), d (1.0),
    weight_decay (0), foreach, maximize (False).
    """

    _decay_in_gradient = False  # the weights decay apart from the gradient (in _update)
    _complex = False

    def __init__(self, params, lr: float = 1e-2, beta2_decay: float = -0.8, eps=(None, 1e-3), d: float = 1.0,
                 weight_decay: float = 0.0, *, foreach=None, maximize: bool = False) -> None:
        super().__init__(params, dict(lr=lr, beta2_decay=beta2_decay, eps=eps, d=d, weight_decay=weight_decay,
                                      foreach=foreach, maximize=maximize))

    def _validate(self, group: dict) -> None:
        check_range("Adafactor", "lr", group["lr"])
        check_range("Adafactor", "beta2_decay", group["beta2_decay"], -math.inf, 0.0, high_open=False)
        _check_pair("Adafactor", "eps", group["eps"])
        if group["eps"][0] is not None:
            check_range("Adafactor", "eps[0] (eps1)", group["eps"][0])
        check_range("Adafactor", "eps[1] (eps2)", group["eps"][1])
        check_range("Adafactor", "d", group["d"], 1.0)
        check_range("Adafactor", "weight_decay", group["weight_decay"])

    def _init_state(self, p, group) -> dict:
        if p.dim() < 2:
            return {"step": sx.tensor(0.0), "variance": sx.zeros_like(p)}
        shape = list(p.shape)
        return {"step": sx.tensor(0.0), "row_var": sx.zeros(shape[:-1] + [1], dtype=p.dtype),
                "col_var": sx.zeros(shape[:-2] + [1, shape[-1]], dtype=p.dtype)}

    def _update(self, p, g, st, group, step) -> None:
        lr, (eps1, eps2) = group["lr"], group["eps"]
        eps1 = sx.finfo(p.dtype).eps if eps1 is None else eps1
        beta = step ** group["beta2_decay"]
        alpha = max(eps2, float(p.norm().item()) / math.sqrt(p.numel())) * min(lr, 1 / math.sqrt(step))
        if group["weight_decay"]:
            p.mul_(1 - lr * group["weight_decay"])
        g2 = g * g
        if g.dim() >= 2:
            row, col = st["row_var"], st["col_var"]
            row.lerp_(g2.mean(dim=-1, keepdim=True), beta)
            col.lerp_(g2.mean(dim=-2, keepdim=True), beta)
            v = (row @ col) / row.mean(dim=-2, keepdim=True).clamp(min=eps1)
        else:
            v = st["variance"].lerp_(g2, beta)
        u = v.clamp(min=eps1 * eps1).rsqrt() * g
        denom = max(1.0, float(u.norm().item()) / (math.sqrt(u.numel()) * group["d"]))
        p.sub_(u * (alpha / denom))
