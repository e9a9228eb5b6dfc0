"""``Trainer``: the training loop with accumulation, clipping, evaluation, checkpoints and resuming."""

from __future__ import annotations

import logging
import math
import os
import sys
import time

import sneppx_core as sx
from tqdm.auto import tqdm

from .callbacks import History, batch_size, model_device, split_batch
from .checkpoint import checkpoint_name, load_checkpoint, save_checkpoint
from .clip_grad import clip_grad_norm_
from .evaluation import evaluate_loss, predict_outputs, set_mode
from .metrics import MetricsLog, Throughput, count_tokens
from .optimizer import Optimizer
from .plateau import ReduceLROnPlateau

log = logging.getLogger("sneppx_optim")


def _positive(name: str, value, allow_none: bool = True) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"Trainer: {name} must be an int >= 1{' or None' if allow_none else ''}, got {value!r}")


class Trainer:
    """Runs the training loop: forward, loss, backward, (clip), optimizer step, scheduler step.

    Args:
        model: a callable ``model(x)`` with ``parameters()``, ``state_dict()`` and
            ``load_state_dict()`` (and optionally ``train()`` / ``eval()``).
        optimizer: the :class:`Optimizer` over the model's parameters.
        loss_fn: ``loss_fn(prediction, target)`` returning a scalar Tensor.
        scheduler: stepped after every optimizer step; a :class:`ReduceLROnPlateau` is stepped
            with the evaluation loss after every evaluation instead.
        max_epochs: number of passes over the training loader (when ``max_steps`` is None).
        max_steps: if set, train for exactly this many optimizer steps (over as many epochs as
            needed); it overrides ``max_epochs``.
        grad_clip: if set, clip the gradients' total 2-norm to this value before each step.
        grad_accum_steps: micro-batches per optimizer step; each micro-batch loss is divided by it.
            A shorter last group at the end of an epoch still makes a step.
        eval_loader: default evaluation loader of :meth:`fit`.
        eval_every: evaluate every this many steps (default: at the end of each epoch).
        log_every: refresh the progress bar's loss/lr and log at INFO level every this many steps.
        checkpoint_dir: folder for checkpoints (``checkpoint-<step>.safetensors``); the end of
            training is always saved when it is set.
        checkpoint_every: also save every this many steps.
        log_dir: if set, also write the step metrics as TensorBoard event files there (needs the
            optional ``tensorboardX`` package: ``pip install 'sneppx-optim[tensorboard]'``).
        seed: if set, ``sneppx_core.manual_seed(seed)`` at the start of a fresh :meth:`fit`.
        callbacks: objects with optional ``on_step_end(trainer, step, logs)``,
            ``on_epoch_end(trainer, epoch, logs)`` and ``on_fit_end(trainer, history)``.
        progress: show a tqdm progress bar (only when stderr is a terminal).
        skip_nonfinite: skip micro-batches whose loss is NaN or infinite instead of raising (they
            get no backward pass but still count toward ``grad_accum_steps``).

    Watching training: with ``checkpoint_dir`` set, every optimizer step appends a line to
    ``checkpoint_dir/metrics.jsonl`` (step, epoch, time, loss, lr, grad_norm, samples_per_s,
    tokens_per_s for integer inputs, and eval_loss after an evaluation); see
    :mod:`sneppx_optim.metrics`. ``log_dir`` sends the same numbers to TensorBoard.

    Loader items are ``(input, target)`` tuples or dicts with the input under ``"input"``/``"x"``
    (or ``"inputs"``/``"input_ids"``) and the target under ``"target"``/``"y"`` (or
    ``"targets"``/``"labels"``).

    Resuming mid-epoch: each checkpoint records the RNG state at the start of the current
    epoch and the number of loader items already consumed. ``fit(resume_from=...)`` restores
    that RNG state, calls ``iter(loader)`` (so a loader that shuffles with sneppx_core's global
    generator, like ``sneppx_data.DataLoader(shuffle=True)``, draws the same order), replays and
    discards the consumed items, then restores the RNG state saved at the checkpoint. Loaders
    that are deterministic, or expose ``set_epoch(epoch)`` (called at every epoch start, on the
    loader and on its ``sampler``), resume the same way.
    """

    def __init__(self, model, optimizer, loss_fn, scheduler=None, max_epochs: int = 1, max_steps: int | None = None,
                 grad_clip: float | None = None, grad_accum_steps: int = 1, eval_loader=None,
                 eval_every: int | None = None, log_every: int = 50, checkpoint_dir: str | None = None,
                 checkpoint_every: int | None = None, seed: int | None = None, callbacks=(), progress: bool = True,
                 skip_nonfinite: bool = False, log_dir: str | None = None) -> None:
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"Trainer: optimizer must be a sneppx_optim Optimizer, got {type(optimizer).__name__}")
        if not callable(model) or not callable(loss_fn):
            raise TypeError("Trainer: model and loss_fn must be callable")
        _positive("max_epochs", max_epochs, allow_none=False)
        for name, value in [("max_steps", max_steps), ("eval_every", eval_every),
                            ("checkpoint_every", checkpoint_every), ("log_every", log_every)]:
            _positive(name, value)
        _positive("grad_accum_steps", grad_accum_steps, allow_none=False)
        if grad_clip is not None and not grad_clip > 0:
            raise ValueError(f"Trainer: grad_clip must be > 0 or None, got {grad_clip!r}")
        if checkpoint_every is not None and checkpoint_dir is None:
            raise ValueError("Trainer: checkpoint_every needs checkpoint_dir")
        self.model, self.optimizer, self.loss_fn, self.scheduler = model, optimizer, loss_fn, scheduler
        self.max_epochs, self.max_steps, self.grad_clip = max_epochs, max_steps, grad_clip
        self.grad_accum_steps, self.eval_loader, self.eval_every = grad_accum_steps, eval_loader, eval_every
        self.log_every, self.checkpoint_dir, self.checkpoint_every = log_every, checkpoint_dir, checkpoint_every
        self.seed, self.callbacks, self.progress = seed, list(callbacks), progress
        self.skip_nonfinite, self.log_dir = skip_nonfinite, log_dir
        self._reset()

    def _reset(self) -> None:
        self.step, self.epoch, self.batch_in_epoch = 0, 0, 0
        self.history, self.should_stop = History(), False
        self._epoch_rng, self._resume_rng, self._skip, self._last_eval = None, None, 0, None

    # ----------------------------------------------------------------------------- fit
    def fit(self, train_loader, eval_loader=None, resume_from: str | None = None) -> History:
        """Trains on ``train_loader`` until ``max_steps`` steps or ``max_epochs`` epochs.

        Args:
            train_loader: an iterable of batches, iterated once per epoch.
            eval_loader: overrides the constructor's ``eval_loader``.
            resume_from: a checkpoint file, or a folder (its latest checkpoint), to continue from.

        Returns:
            The :class:`History` (including the steps before a resumed checkpoint).

        Raises:
            FloatingPointError: a loss is NaN or infinite (unless ``skip_nonfinite``).
            RuntimeError: sneppx_core runs on its NumPy backend, which cannot train.
        """
        sx._require_training("Trainer.fit")
        eval_loader = self.eval_loader if eval_loader is None else eval_loader
        if isinstance(self.scheduler, ReduceLROnPlateau) and eval_loader is None:
            raise ValueError("Trainer.fit: ReduceLROnPlateau needs an eval_loader (it steps on the eval loss)")
        self._reset()
        if resume_from is not None:
            self._resume(resume_from)
        elif self.seed is not None:
            sx.manual_seed(self.seed)
        self._eval_loader = eval_loader
        self._metrics = MetricsLog(self.checkpoint_dir, self.log_dir, self.step)
        self._bar = self._progress_bar(train_loader)
        self._t0, self._meter = time.perf_counter(), Throughput()
        try:
            while not self._done():
                self._run_epoch(train_loader)
        finally:
            self._bar.close()
            self._metrics.close()
        if self.checkpoint_dir is not None:
            self.save_checkpoint()  # the end state (after any end-of-epoch evaluation)
        self._call("on_fit_end", self, self.history)
        return self.history

    def _done(self) -> bool:
        if self.should_stop:
            return True
        if self.max_steps is not None:
            return self.step >= self.max_steps
        return self.epoch >= self.max_epochs

    def _run_epoch(self, loader) -> None:
        rng = sx.default_generator()
        if self._skip:
            rng.set_state(tuple(self._epoch_rng))
        else:
            self._epoch_rng, self.batch_in_epoch = list(rng.get_state()), 0
        for obj in (loader, getattr(loader, "sampler", None)):
            if callable(getattr(obj, "set_epoch", None)):
                obj.set_epoch(self.epoch)
        it = iter(loader)
        for _ in zip(range(self._skip), it):
            pass
        if self._skip:
            rng.set_state(tuple(self._resume_rng))
            self._skip = 0
        set_mode(self.model, True)
        losses, micro = [], 0
        for batch in it:
            self.batch_in_epoch += 1
            if micro == 0:
                self.optimizer.zero_grad()
            loss = self._forward_backward(batch)
            micro += 1
            if loss is not None:
                losses.append(loss)
            if micro == self.grad_accum_steps:
                self._optimizer_step(losses)
                losses, micro = [], 0
                if self._done():
                    return
        if micro:
            self._optimizer_step(losses)
        self._end_epoch()

    def _forward_backward(self, batch):
        x, y = split_batch(batch, device=model_device(self.model))  # a CPU batch goes to a CUDA model
        loss = self.loss_fn(self.model(x), y)
        value = float(loss.item())
        if not math.isfinite(value):
            if self.skip_nonfinite:
                self.history.skipped += 1
                return None
            raise FloatingPointError(
                f"Trainer.fit: the loss is {value} at step {self.step + 1} (epoch {self.epoch}, batch "
                f"{self.batch_in_epoch}); pass skip_nonfinite=True to skip such batches")
        (loss / self.grad_accum_steps if self.grad_accum_steps > 1 else loss).backward()
        self._meter.add(batch_size(x), count_tokens(x))
        return value

    def _optimizer_step(self, losses: list) -> None:
        if not losses:
            self.optimizer.zero_grad()
            return
        logs = {}
        if self.grad_clip is not None or self._metrics.active:
            params = [p for g in self.optimizer.param_groups for p in g["params"]]
            max_norm = self.grad_clip if self.grad_clip is not None else math.inf  # inf: measure only
            logs["grad_norm"] = float(clip_grad_norm_(params, max_norm).item())
        lr = self.optimizer.param_groups[0]["lr"]
        self.optimizer.step()
        self.optimizer.zero_grad()
        if self.scheduler is not None and not isinstance(self.scheduler, ReduceLROnPlateau):
            self.scheduler.step()
        self.step += 1
        loss = sum(losses) / len(losses)
        self.history.step.append(self.step)
        self.history.loss.append(loss)
        self.history.lr.append(lr)
        logs.update(loss=loss, lr=lr, epoch=self.epoch, **self._meter.step())
        if self._eval_loader is not None and self.eval_every and self.step % self.eval_every == 0:
            logs["eval_loss"] = self._evaluate_and_record()
        self._report(logs)
        self._call("on_step_end", self, self.step, logs)
        if self.checkpoint_every and self.step % self.checkpoint_every == 0:
            self.save_checkpoint()
        self._meter.restart()  # evaluation and checkpoints do not count toward throughput

    def _end_epoch(self) -> None:
        logs = {"step": self.step}
        if self._eval_loader is not None and not self.eval_every:
            logs["eval_loss"] = self._evaluate_and_record()
        epoch = self.epoch
        self.epoch, self.batch_in_epoch = epoch + 1, 0
        self._call("on_epoch_end", self, epoch, logs)

    def _evaluate_and_record(self) -> float:
        loss = self.evaluate(self._eval_loader)
        self.history.eval_step.append(self.step)
        self.history.eval_loss.append(loss)
        if isinstance(self.scheduler, ReduceLROnPlateau):
            self.scheduler.step(loss)
        return loss

    def _call(self, hook: str, *args) -> None:
        for cb in self.callbacks:
            fn = getattr(cb, hook, None)
            if callable(fn):
                fn(*args)

    # ----------------------------------------------------------------------------- progress
    def _progress_bar(self, loader):
        total = self.max_steps
        if total is None and hasattr(loader, "__len__"):
            total = self.max_epochs * math.ceil(len(loader) / self.grad_accum_steps)
        enabled = self.progress and bool(getattr(sys.stderr, "isatty", lambda: False)())
        return tqdm(total=total, initial=self.step, desc="training", unit="step", disable=not enabled,
                    dynamic_ncols=True)

    def _report(self, logs: dict) -> None:
        self._metrics.write({"step": self.step, "time": round(time.perf_counter() - self._t0, 3), **logs})
        self._bar.update(1)
        self._last_eval = logs.get("eval_loss", self._last_eval)
        if self.step % self.log_every and self.step != self.max_steps:
            return
        post = {"loss": f"{logs['loss']:.4f}", "lr": f"{logs['lr']:.3g}"}
        if self._last_eval is not None:
            post["eval"] = f"{self._last_eval:.4f}"
        rate = logs.get("tokens_per_s", logs["samples_per_s"])
        post["tok/s" if "tokens_per_s" in logs else "samples/s"] = f"{rate:.0f}" if rate >= 100 else f"{rate:.1f}"
        self._bar.set_postfix(post)
        log.info("step %d: loss %.6g, lr %.6g, %.1f samples/s", self.step, logs["loss"], logs["lr"],
                 logs["samples_per_s"])

    # ----------------------------------------------------------------------------- eval / predict
    def evaluate(self, loader) -> float:
        """The mean loss over ``loader`` (each batch weighted by its size), without gradients.

        The model is put in eval mode (if it has ``eval()``) and back in train mode afterwards.
        """
        return evaluate_loss(self.model, self.loss_fn, loader)

    def predict(self, loader):
        """The model's outputs over ``loader`` (items: inputs, ``(input, target)`` or dicts), without gradients.

        Returns:
            The outputs concatenated along dim 0 when they are Tensors, else a list of them.
        """
        return predict_outputs(self.model, loader)

    # ----------------------------------------------------------------------------- checkpoints
    def save_checkpoint(self, path: str | None = None) -> str:
        """Saves model, optimizer, scheduler and trainer state (step, epoch, RNG) and returns the path.

        ``path`` defaults to ``checkpoint_dir/checkpoint-<step>.safetensors``.
        """
        if path is None:
            if self.checkpoint_dir is None:
                raise ValueError("Trainer.save_checkpoint: give a path or set checkpoint_dir")
            path = os.path.join(self.checkpoint_dir, checkpoint_name(self.step))
        state = {"step": self.step, "epoch": self.epoch, "batch_in_epoch": self.batch_in_epoch,
                 "rng": list(sx.default_generator().get_state()), "epoch_rng": self._epoch_rng,
                 "history": self.history.as_dict()}
        return save_checkpoint(path, self.model, self.optimizer, self.scheduler, state)

    def _resume(self, path: str) -> None:
        state = load_checkpoint(path, self.model, self.optimizer, self.scheduler)
        self.step, self.epoch, self.batch_in_epoch = state["step"], state["epoch"], state["batch_in_epoch"]
        self.history = History(**state["history"])
        self._epoch_rng, self._resume_rng = state["epoch_rng"], state["rng"]
        self._skip = self.batch_in_epoch
        if not self._skip:
            sx.default_generator().set_state(tuple(self._resume_rng))
