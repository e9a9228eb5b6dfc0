"""Cyclical learning-rate policies: ``CyclicLR`` (Smith 2017) and the 1cycle policy (Smith & Topin 2019), as
``torch.optim.lr_scheduler.CyclicLR`` and ``OneCycleLR``."""

from __future__ import annotations

import math

from .lr_scheduler import LRScheduler, per_group
from .optimizer import Optimizer


def _positive_int(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"OneCycleLR: {name} must be a positive int, got {value!r}")
    return value


class _CyclesMomentum:
    """Momentum (or Adam's beta1) cycled against the learning rate, for OneCycleLR and CyclicLR."""

    def _init_momentum(self, optimizer, base_momentum, max_momentum, last_epoch) -> tuple:
        # Checks the optimizer, records each group's range and, for a new schedule, starts at the top;
        # returns the (base, max) momenta, one per group.
        name = type(self).__name__
        if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
            raise ValueError(f"{name}: cycle_momentum needs an optimizer with momentum or betas, "
                             f"{type(optimizer).__name__} has neither (pass cycle_momentum=False)")
        self.use_beta1 = "betas" in optimizer.defaults
        highs = per_group(name, optimizer, max_momentum, "max_momentum")
        lows = per_group(name, optimizer, base_momentum, "base_momentum")
        if last_epoch == -1:
            for hi, lo, group in zip(highs, lows, optimizer.param_groups):
                self._set_momentum(group, hi)
                group["max_momentum"], group["base_momentum"] = hi, lo
        return lows, highs

    def _set_momentum(self, group: dict, value: float) -> None:
        if self.use_beta1:
            group["betas"] = (value, *group["betas"][1:])
        else:
            group["momentum"] = value


class OneCycleLR(_CyclesMomentum, LRScheduler):
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


class CyclicLR(_CyclesMomentum, LRScheduler):
    """The learning rate goes from ``base_lr`` up to ``max_lr`` over ``step_size_up`` steps and back down over
    ``step_size_down`` (default the same), cycle after cycle; the momentum (or Adam's beta1) goes the other way
    between ``max_momentum`` and ``base_momentum`` with ``cycle_momentum``.

    The height of each cycle is scaled by ``mode``: "triangular" (constant), "triangular2" (halved every
    cycle) or "exp_range" (``gamma ** step``), or by ``scale_fn(x)`` with x the cycle number
    (``scale_mode="cycle"``) or the step (``"iterations"``). Building it sets the learning rates to
    ``base_lr``; the schedule then matches ``torch.optim.lr_scheduler.CyclicLR`` step for step.
    """

    _exclude = ("optimizer", "scale_fn_custom")

    def __init__(self, optimizer: Optimizer, base_lr, max_lr, step_size_up: int = 2000, step_size_down=None,
                 mode: str = "triangular", gamma: float = 1.0, scale_fn=None, scale_mode: str = "cycle",
                 cycle_momentum: bool = True, base_momentum=0.8, max_momentum=0.9, last_epoch: int = -1) -> None:
        if mode not in ("triangular", "triangular2", "exp_range") and scale_fn is None:
            raise ValueError(f"CyclicLR: mode must be 'triangular', 'triangular2' or 'exp_range' (or pass scale_fn), "
                             f"got {mode!r}")
        if scale_mode not in ("cycle", "iterations"):
            raise ValueError(f"CyclicLR: scale_mode must be 'cycle' or 'iterations', got {scale_mode!r}")
        base_lrs = [float(v) for v in per_group("CyclicLR", optimizer, base_lr, "base_lr")]
        if last_epoch == -1:
            for lr, group in zip(base_lrs, optimizer.param_groups):
                group["lr"] = lr
        self.max_lrs = [float(v) for v in per_group("CyclicLR", optimizer, max_lr, "max_lr")]
        up = float(step_size_up)
        down = float(step_size_down) if step_size_down is not None else up
        if not (up > 0 and down >= 0):
            raise ValueError(f"CyclicLR: step_size_up must be > 0 and step_size_down >= 0, got {up} and {down}")
        self.total_size, self.step_ratio = up + down, up / (up + down)
        self.mode, self.gamma, self.scale_fn_custom = mode, gamma, scale_fn
        self.scale_mode = scale_mode if scale_fn is not None else ("iterations" if mode == "exp_range" else "cycle")
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            self.base_momentums, self.max_momentums = self._init_momentum(optimizer, base_momentum, max_momentum,
                                                                          last_epoch)
        super().__init__(optimizer, last_epoch)
        self.base_lrs = base_lrs

    def scale_fn(self, x: float) -> float:
        """The height scale of cycle (or step) ``x``."""
        if self.scale_fn_custom is not None:
            return self.scale_fn_custom(x)
        if self.mode == "triangular2":
            return 1 / (2.0 ** (x - 1))
        if self.mode == "exp_range":
            return self.gamma ** x
        return 1.0

    def get_lr(self) -> list:
        cycle = math.floor(1 + self.last_epoch / self.total_size)
        x = 1.0 + self.last_epoch / self.total_size - cycle
        factor = x / self.step_ratio if x <= self.step_ratio else (x - 1) / (self.step_ratio - 1)
        scale = self.scale_fn(cycle if self.scale_mode == "cycle" else self.last_epoch)
        lrs = [lo + (hi - lo) * factor * scale for lo, hi in zip(self.base_lrs, self.max_lrs)]
        if self.cycle_momentum:
            for lo, hi, group in zip(self.base_momentums, self.max_momentums, self.optimizer.param_groups):
                self._set_momentum(group, hi - (hi - lo) * factor * scale)
        return lrs
