"""Learning-rate schedulers with PyTorch's semantics (``torch.optim.lr_scheduler``).

A scheduler is stepped once per optimizer step (or per epoch) *after* ``optimizer.step()``;
construction already sets the learning rates of step 0. The recursive (chainable) forms follow
PyTorch's, so the learning rates match ``torch.optim.lr_scheduler`` step for step.
"""

from __future__ import annotations

import bisect
import math

from .optimizer import Optimizer


def per_group(name: str, optimizer: Optimizer, value, what: str) -> list:
    """``value`` repeated for every param group, or checked to have one entry per group."""
    n = len(optimizer.param_groups)
    if isinstance(value, (list, tuple)):
        if len(value) != n:
            raise ValueError(f"{name}: expected {n} values of {what} (one per param group), got {len(value)}")
        return list(value)
    return [value] * n


class LRScheduler:
    """Base class: sets ``group["lr"]`` of each param group from :meth:`get_lr` at every :meth:`step`.

    Args:
        optimizer: the optimizer whose learning rates are scheduled.
        last_epoch: index of the last step taken; -1 starts a new schedule (and records each
            group's ``initial_lr``).

    Attributes:
        base_lrs: the groups' ``initial_lr`` values.
        last_epoch: the number of :meth:`step` calls since the start (the schedule's ``t``).
    """

    _is_initial = False
    _exclude: tuple = ("optimizer",)

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"{type(self).__name__}: {type(optimizer).__name__} is not an Optimizer")
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(f"{type(self).__name__}: param_groups[{i}] has no 'initial_lr'; resuming with "
                                   f"last_epoch={last_epoch} needs the optimizer state loaded first")
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        # The construction's step: the learning rates of step last_epoch + 1 (0 for a new schedule).
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def _jump(self, epoch: int) -> None:
        # The learning rates of step `epoch` set directly, in the closed form where the schedule has one
        # (SequentialLR restarts a scheduler at 0 this way, as PyTorch does).
        self.last_epoch = epoch
        closed = getattr(self, "_closed_form_lr", None)
        for group, lr in zip(self.optimizer.param_groups, closed() if closed else self.get_lr()):
            group["lr"] = lr
        self._last_lr = self._lrs()

    def get_lr(self) -> list:
        """The learning rates for step ``last_epoch`` (subclasses implement)."""
        raise NotImplementedError

    def get_last_lr(self) -> list:
        """The learning rates this scheduler set last, one per param group."""
        return self._last_lr

    def step(self) -> None:
        """Advances the schedule by one step and writes the new learning rates into the optimizer."""
        self._step_count += 1
        self.last_epoch += 1
        for group, lr in zip(self.optimizer.param_groups, self.get_lr()):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        """Every attribute except the optimizer (and functions); JSON-serializable for built-ins."""
        return {k: v for k, v in self.__dict__.items() if k not in self._exclude}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restores the attributes saved by :meth:`state_dict`."""
        self.__dict__.update({k: v for k, v in state_dict.items() if k not in self._exclude})

    def _lrs(self) -> list:
        return [group["lr"] for group in self.optimizer.param_groups]


class LambdaLR(LRScheduler):
    """``lr = initial_lr * lr_lambda(t)``.

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the step ``t``, or a list of them, one per param group.
        last_epoch: see :class:`LRScheduler`.
    """

    _exclude = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer, lr_lambda, last_epoch: int = -1) -> None:
        name = type(self).__name__
        self.lr_lambdas = per_group(name, optimizer, lr_lambda, "lr_lambda")
        for fn in self.lr_lambdas:
            if not callable(fn):
                raise TypeError(f"{name}: lr_lambda must be callable, got {type(fn).__name__}")
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class StepLR(LRScheduler):
    """Multiplies the learning rate by ``gamma`` every ``step_size`` steps: ``initial_lr * gamma**(t // step_size)``.

    Args:
        optimizer: the optimizer.
        step_size: period of the decay (>= 1).
        gamma: multiplicative factor.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1, last_epoch: int = -1) -> None:
        if not isinstance(step_size, int) or step_size < 1:
            raise ValueError(f"StepLR: step_size must be an int >= 1, got {step_size!r}")
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _closed_form_lr(self) -> list:
        return [base * self.gamma ** (self.last_epoch // self.step_size) for base in self.base_lrs]


class MultiStepLR(LRScheduler):
    """Multiplies the learning rate by ``gamma`` at each milestone: ``initial_lr * gamma**(#milestones <= t)``.

    Args:
        optimizer: the optimizer.
        milestones: step indices (a milestone listed twice decays twice).
        gamma: multiplicative factor.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, milestones, gamma: float = 0.1, last_epoch: int = -1) -> None:
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        hits = self.milestones.count(self.last_epoch)
        if not hits:
            return self._lrs()
        return [lr * self.gamma ** hits for lr in self._lrs()]

    def _closed_form_lr(self) -> list:
        return [base * self.gamma ** bisect.bisect_right(self.milestones, self.last_epoch) for base in self.base_lrs]


class ExponentialLR(LRScheduler):
    """Multiplies the learning rate by ``gamma`` every step: ``initial_lr * gamma**t``.

    Args:
        optimizer: the optimizer.
        gamma: multiplicative factor.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = gamma
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self._is_initial:
            return self._lrs()
        return [lr * self.gamma for lr in self._lrs()]

    def _closed_form_lr(self) -> list:
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class LinearLR(LRScheduler):
    """Scales the learning rate by a factor going linearly from ``start_factor`` to ``end_factor``.

    ``lr = initial_lr * (start + (end - start) * min(t, total_iters) / total_iters)``.

    Args:
        optimizer: the optimizer.
        start_factor: factor at step 0, in (0, 1].
        end_factor: factor from step ``total_iters`` on, in [0, 1].
        total_iters: number of steps of the ramp.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3, end_factor: float = 1.0,
                 total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0 < start_factor <= 1:
            raise ValueError(f"LinearLR: start_factor must be in (0, 1], got {start_factor}")
        if not 0 <= end_factor <= 1:
            raise ValueError(f"LinearLR: end_factor must be in [0, 1], got {end_factor}")
        self.start_factor, self.end_factor, self.total_iters = start_factor, end_factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in self._lrs()]
        if self._is_initial or self.last_epoch > self.total_iters:
            return self._lrs()
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor + (self.last_epoch - 1) * delta)
        return [lr * ratio for lr in self._lrs()]

    def _closed_form_lr(self) -> list:
        t = min(self.total_iters, self.last_epoch)
        return [base * (self.start_factor + (self.end_factor - self.start_factor) * t / self.total_iters)
                for base in self.base_lrs]


class CosineAnnealingLR(LRScheduler):
    r"""Cosine annealing, in two forms.

    The warmup form, ``CosineAnnealingLR(opt, min_lr=..., max_lr=..., total_steps=..., warmup_steps=0)``::

        lr(t) = max_lr * (t + 1) / warmup_steps                                 t < warmup_steps
        lr(t) = min_lr + (max_lr - min_lr) * (1 + cos(pi * s)) / 2              warmup_steps <= t <= total_steps
                with s = (t - warmup_steps) / (total_steps - warmup_steps)
        lr(t) = min_lr                                                          t > total_steps

    ``max_lr`` defaults to each group's learning rate; ``min_lr`` and ``max_lr`` may be lists
    (one per param group).

    The PyTorch form, ``CosineAnnealingLR(opt, T_max, eta_min=0.0)``, matches
    ``torch.optim.lr_scheduler.CosineAnnealingLR`` step for step:
    ``lr(t) = eta_min + (initial_lr - eta_min) * (1 + cos(pi * t / T_max)) / 2`` (in PyTorch's
    recursive form, which keeps oscillating after ``T_max``).
    """

    def __init__(self, optimizer: Optimizer, T_max: int | None = None, eta_min: float = 0.0, last_epoch: int = -1,
                 *, min_lr=None, max_lr=None, total_steps: int | None = None, warmup_steps: int = 0) -> None:
        self.total_steps = total_steps
        if total_steps is None:
            if T_max is None:
                raise TypeError("CosineAnnealingLR: pass T_max (PyTorch form) or total_steps (warmup form)")
            if min_lr is not None or max_lr is not None or warmup_steps:
                raise TypeError("CosineAnnealingLR: min_lr, max_lr and warmup_steps need total_steps")
            if not T_max > 0:
                raise ValueError(f"CosineAnnealingLR: T_max must be > 0, got {T_max}")
            self.T_max, self.eta_min = T_max, eta_min
        else:
            self._init_warmup_form(optimizer, T_max, min_lr, max_lr, total_steps, warmup_steps)
        super().__init__(optimizer, last_epoch)

    def _init_warmup_form(self, optimizer, T_max, min_lr, max_lr, total_steps, warmup_steps) -> None:
        if T_max is not None:
            raise TypeError("CosineAnnealingLR: pass either T_max or total_steps, not both")
        if not isinstance(total_steps, int) or not isinstance(warmup_steps, int) or \
                not 0 <= warmup_steps < total_steps:
            raise ValueError("CosineAnnealingLR: need integers 0 <= warmup_steps < total_steps, got "
                             f"warmup_steps={warmup_steps!r}, total_steps={total_steps!r}")
        self.warmup_steps = warmup_steps
        max_lrs = [g["lr"] for g in optimizer.param_groups] if max_lr is None else \
            per_group("CosineAnnealingLR", optimizer, max_lr, "max_lr")
        self.max_lrs = [float(v) for v in max_lrs]
        self.min_lrs = [float(v) for v in per_group("CosineAnnealingLR", optimizer, min_lr or 0.0, "min_lr")]
        for lo, hi in zip(self.min_lrs, self.max_lrs):
            if not 0 <= lo <= hi:
                raise ValueError(f"CosineAnnealingLR: need 0 <= min_lr <= max_lr, got min_lr={lo}, max_lr={hi}")

    def get_lr(self) -> list:
        if self.total_steps is not None:
            return [self._warmup_lr(lo, hi) for lo, hi in zip(self.min_lrs, self.max_lrs)]
        if self._is_initial:
            return self._lrs()
        t, T, eta = self.last_epoch, self.T_max, self.eta_min
        if self._step_count == 1 and t > 0:
            return [eta + (base - eta) * (1 + math.cos(t * math.pi / T)) / 2 for base in self.base_lrs]
        if (t - 1 - T) % (2 * T) == 0:
            return [lr + (base - eta) * (1 - math.cos(math.pi / T)) / 2
                    for base, lr in zip(self.base_lrs, self._lrs())]
        ratio = (1 + math.cos(math.pi * t / T)) / (1 + math.cos(math.pi * (t - 1) / T))
        return [ratio * (lr - eta) + eta for lr in self._lrs()]

    def _closed_form_lr(self) -> list:
        if self.total_steps is not None:
            return self.get_lr()
        t, T, eta = self.last_epoch, self.T_max, self.eta_min
        return [eta + (base - eta) * (1 + math.cos(math.pi * t / T)) / 2 for base in self.base_lrs]

    def _warmup_lr(self, lo: float, hi: float) -> float:
        t, w, total = self.last_epoch, self.warmup_steps, self.total_steps
        if t < w:
            return hi * (t + 1) / w
        if t >= total:
            return lo
        return lo + (hi - lo) * (1 + math.cos(math.pi * (t - w) / (total - w))) / 2


class MultiplicativeLR(LambdaLR):
    """Multiplies the learning rate by ``lr_lambda(t)`` at every step ``t >= 1``.

    Args:
        optimizer: the optimizer.
        lr_lambda: a function of the step ``t``, or a list of them, one per param group.
        last_epoch: see :class:`LRScheduler`.
    """

    def get_lr(self) -> list:
        if self._is_initial:
            return self._lrs()
        return [lr * fn(self.last_epoch) for fn, lr in zip(self.lr_lambdas, self._lrs())]


class ConstantLR(LRScheduler):
    """Scales the learning rate by ``factor`` for the first ``total_iters`` steps, then restores it.

    ``lr = initial_lr * factor`` for ``t < total_iters``, ``initial_lr`` from then on.

    Args:
        optimizer: the optimizer.
        factor: the scale, in [0, 1].
        total_iters: number of scaled steps.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if not 0 <= factor <= 1:
            raise ValueError(f"ConstantLR: factor must be in [0, 1], got {factor}")
        self.factor, self.total_iters = factor, total_iters
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        if self.last_epoch == 0:
            return [lr * self.factor for lr in self._lrs()]
        if self.last_epoch != self.total_iters:
            return self._lrs()
        if self.factor == 0:  # a zero factor cannot be divided out (PyTorch raises ZeroDivisionError)
            return list(self.base_lrs)
        return [lr * (1.0 / self.factor) for lr in self._lrs()]

    def _closed_form_lr(self) -> list:
        scale = 1.0 if self.last_epoch >= self.total_iters else self.factor
        return [base * scale for base in self.base_lrs]


class PolynomialLR(LRScheduler):
    """Decays the learning rate polynomially to zero over ``total_iters`` steps.

    ``lr = initial_lr * (1 - min(t, total_iters) / total_iters) ** power``.

    Args:
        optimizer: the optimizer.
        total_iters: number of steps of the decay.
        power: the polynomial's power.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, total_iters: int = 5, power: float = 1.0, last_epoch: int = -1) -> None:
        if not isinstance(total_iters, int) or total_iters < 1:
            raise ValueError(f"PolynomialLR: total_iters must be an int >= 1, got {total_iters!r}")
        self.total_iters, self.power = total_iters, power
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list:
        t, T = self.last_epoch, self.total_iters
        if self._is_initial or t > T:
            return self._lrs()
        decay = ((1.0 - t / T) / (1.0 - (t - 1) / T)) ** self.power
        return [lr * decay for lr in self._lrs()]

    def _closed_form_lr(self) -> list:
        return [base * (1.0 - min(self.total_iters, self.last_epoch) / self.total_iters) ** self.power
                for base in self.base_lrs]


class SequentialLR(LRScheduler):
    """Runs ``schedulers`` one after another, switching at the steps in ``milestones``.

    Scheduler ``i`` runs from step ``milestones[i - 1]`` (0 for the first), restarted there at its own
    step 0; a warmup then a decay is ``SequentialLR(opt, [LinearLR(opt, 0.1, total_iters=w),
    CosineAnnealingLR(opt, T_max=n - w)], milestones=[w])``. The schedulers must belong to ``optimizer``.

    Args:
        optimizer: the optimizer.
        schedulers: the schedulers, in order (built on ``optimizer``; ReduceLROnPlateau cannot be one).
        milestones: the steps where the next scheduler takes over, one fewer than the schedulers.
        last_epoch: see :class:`LRScheduler`.
    """

    def __init__(self, optimizer: Optimizer, schedulers, milestones, last_epoch: int = -1) -> None:
        schedulers, milestones = list(schedulers), [int(m) for m in milestones]
        if not schedulers:
            raise ValueError("SequentialLR: expects at least one scheduler, got none")
        for i, s in enumerate(schedulers):
            if not isinstance(s, LRScheduler):
                raise TypeError(f"SequentialLR: schedulers[{i}] is a {type(s).__name__}, not an LRScheduler "
                                "(ReduceLROnPlateau steps on a metric and cannot be sequenced)")
            if s.optimizer is not optimizer:
                raise ValueError(f"SequentialLR: schedulers[{i}] ({type(s).__name__}) belongs to another optimizer")
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(f"SequentialLR: expects one milestone fewer than schedulers, got {len(milestones)} "
                             f"milestones for {len(schedulers)} schedulers")
        self.optimizer = optimizer
        self._schedulers, self._milestones = schedulers, milestones
        self.last_epoch = last_epoch + 1
        # Each scheduler took its step 0 when it was built: undo those, and start the first one again.
        for group in optimizer.param_groups:
            group["lr"] = group["initial_lr"]
        _undo_step(self)
        first = schedulers[bisect.bisect_right(milestones, 0)]
        first._initial_step()
        self._last_lr = first.get_last_lr()

    def step(self) -> None:
        """Advances the running scheduler, or restarts the next one at a milestone."""
        self.last_epoch += 1
        i = bisect.bisect_right(self._milestones, self.last_epoch)
        s = self._schedulers[i]
        if i > 0 and self._milestones[i - 1] == self.last_epoch:
            s._jump(0)
        else:
            s.step()
        self._last_lr = s.get_last_lr()

    def state_dict(self) -> dict:
        """Its own attributes and each scheduler's state dict (under ``_schedulers``)."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("optimizer", "_schedulers")}
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restores :meth:`state_dict`'s attributes and each scheduler's state."""
        self.__dict__.update({k: v for k, v in state_dict.items() if k not in ("optimizer", "_schedulers")})
        for s, sub in zip(self._schedulers, state_dict["_schedulers"]):
            s.load_state_dict(sub)


def _undo_step(sched) -> None:
    # One step back for every scheduler inside `sched` (nested SequentialLRs included).
    if isinstance(sched, SequentialLR):
        for s in sched._schedulers:
            _undo_step(s)
    else:
        sched.last_epoch -= 1


# torch.optim.lr_scheduler's names defined in their own modules (which import this one's base class).
from .onecycle import CyclicLR, OneCycleLR  # noqa: E402, F401
from .plateau import ReduceLROnPlateau  # noqa: E402, F401
