"""The migration guide's Optimizers and Training-loop snippets, as written (with a core-ops model)."""

import math

import numpy as np

from sneppx_optim import AdamW, CosineAnnealingLR, Trainer
from optim_helpers import TinyModel, to_np
from test_optim_trainer import Loader, make_data


def MSELoss():  # noqa: N802  (the guide's name; sneppx-nn provides the real one)
    return lambda pred, y: ((pred - y) * (pred - y)).mean()


def test_optimizers_snippet():
    model = TinyModel()
    opt = AdamW(model.parameters(), lr=2e-4, weight_decay=0.01)
    sched = CosineAnnealingLR(opt, min_lr=1e-5, max_lr=2e-4, total_steps=100)
    lrs = []
    for _ in range(100):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs[0] == 2e-4 and opt.param_groups[0]["lr"] == 1e-5
    assert abs(lrs[50] - (1e-5 + (2e-4 - 1e-5) * (1 + math.cos(math.pi * 50 / 100)) / 2)) < 1e-18


def test_training_loop_snippet():
    x_all, y_all = make_data(32)
    loader = Loader(x_all, y_all, 8)
    model = TinyModel()
    before = [to_np(p) for p in model.parameters()]
    opt = AdamW(model.parameters(), lr=1e-3)
    loss_fn = MSELoss()
    for x, y in loader:
        opt.zero_grad()
        pred = model(x)
        loss = loss_fn(pred, y)
        loss.backward()
        opt.step()
    assert all(not np.array_equal(a, to_np(b)) for a, b in zip(before, model.parameters()))
    assert opt.state[model.w]["step"] == 4


def test_trainer_fit_snippet():
    x_all, y_all = make_data(32)
    model = TinyModel()
    opt = AdamW(model.parameters(), lr=0.05)
    trainer = Trainer(model, opt, MSELoss(), max_epochs=20, progress=False)
    first = trainer.evaluate(Loader(x_all, y_all, 32))
    history = trainer.fit(Loader(x_all, y_all, 8))
    assert len(history.loss) == 80 and trainer.evaluate(Loader(x_all, y_all, 32)) < 0.5 * first
