"""Evaluation and prediction loops shared by the Trainer (no gradients, model in eval mode)."""

from __future__ import annotations

import sneppx_core as sx

from .callbacks import batch_size, model_device, split_batch


def set_mode(model, training: bool) -> None:
    """Calls ``model.train()`` or ``model.eval()`` when the model has them."""
    fn = getattr(model, "train" if training else "eval", None)
    if callable(fn):
        fn()


def evaluate_loss(model, loss_fn, loader) -> float:
    """The mean of ``loss_fn(model(x), y)`` over ``loader``, each batch weighted by its size.

    For a loss that averages over the batch, this is the mean over all samples.
    """
    total, count = 0.0, 0
    set_mode(model, False)
    try:
        with sx.no_grad():
            for batch in loader:
                x, y = split_batch(batch, device=model_device(model))
                n = batch_size(y)
                total += float(loss_fn(model(x), y).item()) * n
                count += n
    finally:
        set_mode(model, True)
    if count == 0:
        raise ValueError("Trainer.evaluate: the loader yielded no batches")
    return total / count


def predict_outputs(model, loader):
    """``model(x)`` for every batch of ``loader``, concatenated along dim 0 when all are Tensors."""
    outs = []
    set_mode(model, False)
    try:
        with sx.no_grad():
            for batch in loader:
                outs.append(model(split_batch(batch, need_target=False, device=model_device(model))[0]))
    finally:
        set_mode(model, True)
    if outs and all(isinstance(o, sx.Tensor) for o in outs):
        return sx.cat(outs, 0)
    return outs
