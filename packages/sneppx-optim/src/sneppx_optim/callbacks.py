"""Trainer callbacks, the training history, and how loader items are unpacked."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import sneppx_core as sx

INPUT_KEYS = ("input", "x", "inputs", "input_ids")
TARGET_KEYS = ("target", "y", "targets", "labels")


class Callback:
    """Base class for Trainer callbacks; every hook is optional and does nothing by default.

    A callback may also be any object with some of these methods. Setting
    ``trainer.should_stop = True`` in a hook ends training after the current step.
    """

    def on_step_end(self, trainer, step: int, logs: dict) -> None:
        """After optimizer step ``step`` (1-based).

        ``logs`` has loss, lr, epoch, samples_per_s, and grad_norm, tokens_per_s and eval_loss
        when they were measured.
        """

    def on_epoch_end(self, trainer, epoch: int, logs: dict) -> None:
        """After epoch ``epoch`` (0-based); ``logs`` has step (and eval_loss when evaluated)."""

    def on_fit_end(self, trainer, history) -> None:
        """When :meth:`Trainer.fit` finishes, with its :class:`History`."""


@dataclass
class History:
    """What :meth:`Trainer.fit` records.

    Attributes:
        step: optimizer step numbers (1-based), one per step.
        loss: the training loss of each step (mean over its accumulated micro-batches).
        lr: the learning rate of the first param group used by each step.
        eval_step: the step after which each evaluation ran.
        eval_loss: the mean evaluation loss of each evaluation.
        skipped: the number of micro-batches skipped for a non-finite loss.
    """

    step: list = field(default_factory=list)
    loss: list = field(default_factory=list)
    lr: list = field(default_factory=list)
    eval_step: list = field(default_factory=list)
    eval_loss: list = field(default_factory=list)
    skipped: int = 0

    def as_dict(self) -> dict:
        """The history as a plain (JSON-serializable) dict."""
        return asdict(self)


def _pick(batch: dict, keys: tuple, what: str):
    for k in keys:
        if k in batch:
            return batch[k]
    raise KeyError(f"Trainer: a dict batch needs a {what} under one of {list(keys)}, got keys {sorted(batch)}")


def model_device(model):
    """The device of the model's first parameter (None for a model without parameters)."""
    params = getattr(model, "parameters", None)
    if callable(params):
        for p in params():
            return p.device
    return None


def _to(value, device):
    if device is not None and isinstance(value, sx.Tensor) and value.device != device:
        return value.to(device)
    return value


def split_batch(batch, need_target: bool = True, device=None):
    """Unpacks a loader item into ``(input, target)``, moving tensors to ``device`` when it is given.

    Accepted items: an ``(input, target)`` tuple or list; a dict with the input under ``"input"``,
    ``"x"``, ``"inputs"`` or ``"input_ids"`` and the target under ``"target"``, ``"y"``,
    ``"targets"`` or ``"labels"``; and, when ``need_target`` is False, a bare input (target None).
    """
    x, y = _split(batch, need_target)
    return _to(x, device), _to(y, device)


def _split(batch, need_target: bool):
    if isinstance(batch, dict):
        x = _pick(batch, INPUT_KEYS, "input")
        y = _pick(batch, TARGET_KEYS, "target") if need_target else None
        return x, y
    if isinstance(batch, (tuple, list)):
        if len(batch) == 2:
            return batch[0], batch[1]
        if len(batch) == 1 and not need_target:
            return batch[0], None
        raise ValueError(f"Trainer: a tuple batch must be (input, target), got {len(batch)} items")
    if need_target:
        raise TypeError(f"Trainer: a batch must be an (input, target) tuple or a dict, got {type(batch).__name__}")
    return batch, None


def batch_size(x) -> int:
    """Number of samples in ``x``: the first dimension of a Tensor (or of the first Tensor inside)."""
    if isinstance(x, sx.Tensor):
        return x.shape[0] if x.ndim else 1
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (tuple, list)) and x:
        return batch_size(x[0])
    return 1
