"""Reduce the learning rate when a metric stops improving (``torch.optim.lr_scheduler.ReduceLROnPlateau``)."""

from __future__ import annotations

import math

from .lr_scheduler import per_group
from .optimizer import Optimizer


class ReduceLROnPlateau:
    """Multiplies the learning rates by ``factor`` after ``patience`` steps without improvement.

    A value ``a`` improves on the best ``b`` when ``a < b * (1 - threshold)`` (mode ``"min"``,
    ``threshold_mode="rel"``), ``a < b - threshold`` (``"abs"``), and mirrored for mode ``"max"``.
    After a reduction, ``cooldown`` steps pass before bad steps count again. A reduction smaller
    than ``eps`` is skipped, and no learning rate goes below ``min_lr``.

    Args:
        optimizer: the optimizer.
        mode: ``"min"`` (the metric should decrease) or ``"max"``.
        factor: multiplicative factor, in [0, 1).
        patience: number of non-improving steps tolerated.
        threshold: the minimal significant change.
        threshold_mode: ``"rel"`` or ``"abs"``.
        cooldown: steps to wait after a reduction.
        min_lr: lower bound on the learning rate (or one per param group).
        eps: smallest reduction applied.
    """

    def __init__(self, optimizer: Optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0.0,
                 eps: float = 1e-8) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"ReduceLROnPlateau: {type(optimizer).__name__} is not an Optimizer")
        if not 0 <= factor < 1:
            raise ValueError(f"ReduceLROnPlateau: factor must be in [0, 1), got {factor}")
        if mode not in ("min", "max"):
            raise ValueError(f"ReduceLROnPlateau: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise ValueError(f"ReduceLROnPlateau: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        self.optimizer = optimizer
        self.mode, self.factor, self.patience, self.threshold = mode, factor, patience, threshold
        self.threshold_mode, self.cooldown, self.eps = threshold_mode, cooldown, eps
        self.min_lrs = per_group("ReduceLROnPlateau", optimizer, min_lr, "min_lr")
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self.best = math.inf if mode == "min" else -math.inf
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def _is_better(self, a: float, best: float) -> bool:
        if self.mode == "min":
            return a < best * (1.0 - self.threshold) if self.threshold_mode == "rel" else a < best - self.threshold
        return a > best * (self.threshold + 1.0) if self.threshold_mode == "rel" else a > best + self.threshold

    def step(self, metrics) -> None:
        """Records ``metrics`` (a number or 0-d Tensor) and reduces the learning rates if it has plateaued."""
        current = float(metrics)
        self.last_epoch += 1
        if self._is_better(current, self.best):
            self.best, self.num_bad_epochs = current, 0
        else:
            self.num_bad_epochs += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0
        if self.num_bad_epochs > self.patience:
            self._reduce_lr()
            self.cooldown_counter, self.num_bad_epochs = self.cooldown, 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self) -> None:
        for group, floor in zip(self.optimizer.param_groups, self.min_lrs):
            old = float(group["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:
                group["lr"] = new

    def get_last_lr(self) -> list:
        """The learning rates after the last :meth:`step`, one per param group."""
        return self._last_lr

    def state_dict(self) -> dict:
        """Every attribute except the optimizer (JSON-serializable)."""
        return {k: v for k, v in self.__dict__.items() if k != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restores the attributes saved by :meth:`state_dict`."""
        self.__dict__.update({k: v for k, v in state_dict.items() if k != "optimizer"})
