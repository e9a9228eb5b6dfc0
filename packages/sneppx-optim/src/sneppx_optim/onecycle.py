"""The 1cycle learning-rate policy (Smith & Topin 2019), as ``torch.optim.lr_scheduler.OneCycleLR``."""

from __future__ import annotations

import math

from .lr_scheduler import LRScheduler, per_group
from .optimizer import Optimizer


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"OneCycleLR: {name} must be a positive int, got {value!r}")
    return value


class OneCycleLR(LRScheduler):
    r"""Warm up from ``max_lr / div_factor`` to ``max_lr``, then anneal to ``initial_lr / final_div_factor``.

    Phase 1 lasts ``pct_start * total_steps - 1`` steps, phase 2 the rest (``three_phase`` adds a
    symmetric way down before the final annealing). Each phase interpolates with
    ``end + (start - end) * (1 + cos(pi * pct)) / 2`` (``anneal_strategy="cos"``) or linearly. When
    ``cycle_momentum``, the momentum (or Adam's beta1) moves the opposite way between
    ``max_momentum`` and ``base_momentum``.

    Args:
        optimizer: the optimizer (with ``momentum`` or ``betas`` when ``cycle_momentum``).
        max_lr: peak learning rate (or one per param group).
        total_steps: the number of steps in the cycle, or give ``epochs`` and ``steps_per_epoch``.
        epochs, steps_per_epoch: ``total_steps = epochs * steps_per_epoch``.
        pct_start: fraction of the cycle spent increasing the learning rate.
        anneal_strategy: ``"cos"`` or ``"linear"``.
        cycle_momentum: cycle the momentum inversely to the learning rate.
        base_momentum, max_momentum: the momentum range.
        div_factor: ``initial_lr = max_lr / div_factor``.
        final_div_factor: ``min_lr = initial_lr / final_div_factor``.
        three_phase: use the three-phase schedule.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, max_lr, total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"OneCycleLR: {type(optimizer).__name__} is not an Optimizer")
        if total_steps is not None:
            self.total_steps = _positive_int("total_steps", total_steps)
        elif epochs is not None and steps_per_epoch is not None:
            self.total_steps = _positive_int("epochs", epochs) * _positive_int("steps_per_epoch", steps_per_epoch)
        else:
            raise ValueError("OneCycleLR: give total_steps, or epochs and steps_per_epoch")
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError(f"OneCycleLR: pct_start must be a float in [0, 1], got {pct_start!r}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        self.anneal_strategy = anneal_strategy
        self._phases = self._make_phases(pct_start, three_phase)
        if last_epoch == -1:
            for peak, group in zip(per_group("OneCycleLR", optimizer, max_lr, "max_lr"), optimizer.param_groups):
                group["initial_lr"] = peak / div_factor
                group["max_lr"] = peak
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self._init_momentum(optimizer, base_momentum, max_momentum, last_epoch)
        super().__init__(optimizer, last_epoch)

    def _make_phases(self, pct: float, three_phase: bool) -> list:
        n = self.total_steps
        if three_phase:
            return [[float(pct * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"],
                    [float(2 * pct * n) - 2, "max_lr", "initial_lr", "base_momentum", "max_momentum"],
                    [n - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"]]
        return [[float(pct * n) - 1, "initial_lr", "max_lr", "max_momentum", "base_momentum"],
                [n - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"]]

    def _init_momentum(self, optimizer, base_momentum, max_momentum, last_epoch) -> None:
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError(f"OneCycleLR: cycle_momentum needs an optimizer with momentum or betas, "
                             f"{type(optimizer).__name__} has neither (pass cycle_momentum=False)")
        self.use_beta1 = "betas" in optimizer.defaults
        highs = per_group("OneCycleLR", optimizer, max_momentum, "max_momentum")
        lows = per_group("OneCycleLR", optimizer, base_momentum, "base_momentum")
        if last_epoch == -1:
            for hi, lo, group in zip(highs, lows, optimizer.param_groups):
                self._set_momentum(group, hi)
                group["max_momentum"], group["base_momentum"] = hi, lo

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list:
        t = self.last_epoch
        if t > self.total_steps:
            raise ValueError(f"OneCycleLR: stepped {t} times, but total_steps is {self.total_steps}")
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if t <= end or i == len(self._phases) - 1:
                    pct = (t - start) / (end - start)
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[m0], group[m1], pct))
                    break
                start = end
        return lrs
