"""Stochastic Weight Averaging and moving averages of a model's weights (``torch.optim.swa_utils``).

:class:`AveragedModel` keeps a running average of a model's parameters (SWA's equal-weight mean, or an
exponential moving average with :func:`get_ema_multi_avg_fn`), :class:`SWALR` anneals the learning rate to a
constant for the averaging phase, and :func:`update_bn` recomputes the BatchNorm statistics for the averaged
weights::

    from SneppX_ALG.optim.swa_utils import SWALR, AveragedModel, update_bn
    swa_model = AveragedModel(model)
    swa_scheduler = SWALR(optimizer, swa_lr=0.05, anneal_epochs=5)
    for epoch in range(epochs):
        train_one_epoch(model, loader, optimizer)
        if epoch >= swa_start:
            swa_model.update_parameters(model)
            swa_scheduler.step()
    update_bn(loader, swa_model)

It needs both sneppx-nn (an AveragedModel is a Module) and sneppx-optim (SWALR is a scheduler), which do not
import each other, so it lives in the meta-package: ``SneppX_ALG.optim.swa_utils`` (PyTorch's path with ``torch``
renamed, as an import and as an attribute).
"""

from __future__ import annotations

import copy
import math

import sneppx_core as sx
import sneppx_nn as nn

from sneppx_optim.lr_scheduler import LRScheduler, per_group
from sneppx_optim.optimizer import Optimizer

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]

# Every BatchNorm of sneppx_nn (the Lazy ones subclass these): update_bn resets and recomputes their statistics.
_BATCH_NORMS = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.SyncBatchNorm)


def _is_float(t) -> bool:
    return sx.is_floating_point(t) or sx.is_complex(t)


def _check_decay(decay: float) -> None:
    if not 0.0 <= decay <= 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def get_ema_multi_avg_fn(decay: float = 0.999):
    """An in-place exponential moving average for :class:`AveragedModel`'s ``multi_avg_fn``.

    The returned function sets each averaged tensor to ``decay * averaged + (1 - decay) * current``
    (integer tensors: the float result truncated, as ``copy_`` does). The first
    :meth:`AveragedModel.update_parameters` copies the model, so the average starts at its weights.

    Args:
        decay: the weight of the old average, in [0, 1].
    """
    _check_decay(decay)

    @sx.no_grad()
    def ema_update(averaged_params, current_params, num_averaged) -> None:
        for avg, cur in zip(averaged_params, current_params):
            if _is_float(avg):
                avg.lerp_(cur, 1 - decay)
            else:
                avg.copy_(avg * decay + cur * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """An in-place equal-weight running mean (SWA) for :class:`AveragedModel`'s ``multi_avg_fn``.

    The returned function sets each averaged tensor to ``averaged + (current - averaged) / (n + 1)``, ``n``
    being the number of models averaged so far (integer tensors: the float result truncated). As in PyTorch,
    ``1 / (n + 1)`` is computed from ``n``: with AveragedModel's int64 tensor it is a float32 value.
    """

    @sx.no_grad()
    def swa_update(averaged_params, current_params, num_averaged) -> None:
        weight = float(1 / (num_averaged + 1))
        for avg, cur in zip(averaged_params, current_params):
            if _is_float(avg):
                avg.lerp_(cur, weight)
            else:
                avg.copy_(avg + (cur - avg) / (num_averaged + 1))

    return swa_update


def get_ema_avg_fn(decay: float = 0.999):
    """An exponential moving average of one tensor for :class:`AveragedModel`'s ``avg_fn``.

    The returned function ``(averaged, current, num_averaged)`` returns ``decay * averaged + (1 - decay) * current``.

    Args:
        decay: the weight of the old average, in [0, 1].
    """
    _check_decay(decay)

    @sx.no_grad()
    def ema_update(averaged_param, current_param, num_averaged):
        return decay * averaged_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """An equal-weight running mean (SWA) of one tensor for :class:`AveragedModel`'s ``avg_fn``.

    The returned function ``(averaged, current, n)`` returns ``averaged + (current - averaged) / (n + 1)``.
    """

    @sx.no_grad()
    def swa_update(averaged_param, current_param, num_averaged):
        return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(nn.Module):
    """A copy of ``model`` whose parameters are a running average of ``model``'s (SWA or EMA).

    Each :meth:`update_parameters` call folds ``model``'s current parameters into the average: the first
    call copies them, later ones apply ``avg_fn`` / ``multi_avg_fn`` (default: the equal-weight mean of all
    the models seen). Calling the AveragedModel runs the averaged copy (``self.module``).

    Args:
        model: the module to average; it is deep-copied.
        device: where the copy (and ``n_averaged``) is kept; None keeps ``model``'s device.
        avg_fn: ``(averaged, current, n_averaged) -> new averaged`` for one tensor (see :func:`get_ema_avg_fn`).
        multi_avg_fn: ``(averaged list, current list, n_averaged) -> None``, updating the averaged tensors in
            place; called once per group of tensors sharing a device and dtype (see :func:`get_ema_multi_avg_fn`).
            At most one of ``avg_fn`` and ``multi_avg_fn`` may be given.
        use_buffers: average the buffers too (BatchNorm running statistics included); when False the buffers
            are copied from ``model`` at each update.

    Attributes:
        module: the averaged copy.
        n_averaged: a 0-d int64 buffer, the number of models averaged (saved in ``state_dict``;
            ``avg_fn`` and ``multi_avg_fn`` are not).
    """

    def __init__(self, model, device=None, avg_fn=None, multi_avg_fn=None, use_buffers: bool = False) -> None:
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", sx.tensor(0, dtype=sx.int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        """Runs the averaged copy: ``self.module(*args, **kwargs)``."""
        return self.module(*args, **kwargs)

    def update_parameters(self, model) -> None:
        """Folds ``model``'s parameters (and buffers, with ``use_buffers``) into the average.

        ``model`` must have the structure of the averaged one; its tensors are moved to the average's
        device. Without ``use_buffers`` the buffers are copied from ``model``.
        """
        if self.use_buffers:
            mine = [*self.module.parameters(), *self.module.buffers()]
            theirs = [*model.parameters(), *model.buffers()]
        else:
            mine, theirs = list(self.parameters()), list(model.parameters())
        pairs = [(a.detach(), b.detach().to(a.device)) for a, b in zip(mine, theirs)]
        with sx.no_grad():
            if self.n_averaged.item() == 0:
                for avg, cur in pairs:
                    avg.copy_(cur)
            elif self.multi_avg_fn is not None:
                groups: dict = {}  # (device, dtype) -> pairs, in the models' order
                for avg, cur in pairs:
                    groups.setdefault((str(avg.device), avg.dtype), []).append((avg, cur))
                for group in groups.values():
                    averaged, current = [a for a, _ in group], [c for _, c in group]
                    self.multi_avg_fn(averaged, current, self.n_averaged.to(averaged[0].device))
            else:
                avg_fn = self.avg_fn if self.avg_fn is not None else get_swa_avg_fn()
                for avg, cur in pairs:
                    avg.copy_(avg_fn(avg, cur, self.n_averaged.to(avg.device)))
            if not self.use_buffers:
                for mine_b, theirs_b in zip(self.module.buffers(), model.buffers(), strict=True):
                    mine_b.detach().copy_(theirs_b.detach().to(mine_b.device))
            self.n_averaged.add_(1)


def update_bn(loader, model, device=None) -> None:
    """Recomputes the running statistics of ``model``'s BatchNorm layers from one pass over ``loader``.

    The statistics are reset and re-estimated as the equal-weight mean of the batches' statistics
    (``momentum=None``), in training mode and without gradients; the layers' momentum and the model's
    training mode are restored afterwards. Nothing runs when the model has no BatchNorm layer.

    Args:
        loader: an iterable of batches: tensors, or lists/tuples whose first element is the model's input.
        model: the model (an :class:`AveragedModel` after SWA, typically).
        device: where each input is moved before the forward pass; None leaves it.
    """
    momenta = {m: m.momentum for m in model.modules() if isinstance(m, _BATCH_NORMS)}
    if not momenta:
        return
    was_training = model.training
    model.train()
    for bn in momenta:
        bn.reset_running_stats()
        bn.momentum = None
    try:
        with sx.no_grad():
            for batch in loader:
                if isinstance(batch, (list, tuple)):
                    batch = batch[0]
                if device is not None:
                    batch = batch.to(device)
                model(batch)
    finally:
        for bn, momentum in momenta.items():
            bn.momentum = momentum
        model.train(was_training)


def _cosine_anneal(t: float) -> float:
    return (1 - math.cos(math.pi * t)) / 2


def _linear_anneal(t: float) -> float:
    return t


class SWALR(LRScheduler):
    """Anneals each group's learning rate to ``swa_lr`` over ``anneal_epochs`` steps, then holds it there.

    At step ``t`` the learning rate is ``swa_lr * a + lr0 * (1 - a)`` with ``a = f(min(1, t / anneal_epochs))``,
    ``f(x) = (1 - cos(pi x)) / 2`` ("cos") or ``x`` ("linear"), and ``lr0`` the group's learning rate when the
    scheduler was built (the one another scheduler left, not ``initial_lr``). Like PyTorch's it works from the
    group's current ``lr`` at each step, and counts its own steps (``anneal_epochs=0`` sets ``swa_lr`` at once).

    Args:
        optimizer: the optimizer.
        swa_lr: the final learning rate, or a list of them, one per param group (stored as ``group["swa_lr"]``).
        anneal_epochs: the number of steps of the annealing (an int >= 0).
        anneal_strategy: "cos" or "linear".
        last_epoch: see :class:`LRScheduler`.
    """

    _exclude = ("optimizer", "anneal_func")

    def __init__(self, optimizer: Optimizer, swa_lr, anneal_epochs: int = 10, anneal_strategy: str = "cos",
                 last_epoch: int = -1) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"SWALR: {type(optimizer).__name__} is not an Optimizer")
        for group, lr in zip(optimizer.param_groups, per_group("SWALR", optimizer, swa_lr, "swa_lr")):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if isinstance(anneal_epochs, bool) or not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    def _set_anneal_func(self, anneal_strategy: str) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = _cosine_anneal if anneal_strategy == "cos" else _linear_anneal

    def get_lr(self) -> list:
        # Recovers lr0 from the current lr and the previous step's fraction, then applies this step's: the
        # same arithmetic as PyTorch, so the learning rates agree to the last bit.
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        span = max(1, self.anneal_epochs)
        prev = self.anneal_func(max(0, min(1, (step - 1) / span)))
        alpha = self.anneal_func(max(0, min(1, step / span)))
        lrs = []
        for group in self.optimizer.param_groups:
            swa = group["swa_lr"]
            lr0 = swa if prev == 1 else (group["lr"] - prev * swa) / (1 - prev)
            lrs.append(swa * alpha + lr0 * (1 - alpha))
        return lrs

    def load_state_dict(self, state_dict: dict) -> None:
        """Restores the attributes saved by :meth:`state_dict` (the annealing function from its name)."""
        super().load_state_dict(state_dict)
        self._set_anneal_func(self._anneal_strategy)
