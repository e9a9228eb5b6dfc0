"""Trainer: the loop against a hand-written loop, accumulation, clipping, evaluation, callbacks."""

import math

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_optim as so
from optim_helpers import TinyModel, mse, to_np


def make_data(n=32, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = (x @ np.array([[1.0, -2.0], [0.5, 0.0], [-1.0, 3.0]]) + 0.3).astype(np.float32)
    return x, y


class Loader:
    """Batches of (x, y) in order, or shuffled with sneppx_core's global generator at each iter()."""

    def __init__(self, x, y, batch_size, shuffle=False, as_dict=False):
        self.x, self.y, self.bs, self.shuffle, self.as_dict = x, y, batch_size, shuffle, as_dict

    def __len__(self):
        return math.ceil(len(self.x) / self.bs)

    def __iter__(self):
        order = sx.randperm(len(self.x)).numpy() if self.shuffle else np.arange(len(self.x))
        for i in range(0, len(order), self.bs):
            idx = order[i:i + self.bs]
            x, y = sx.Tensor(self.x[idx]), sx.Tensor(self.y[idx])
            yield {"input": x, "target": y} if self.as_dict else (x, y)


def manual_loop(model, opt, loader, epochs, sched=None, clip=None):
    """The guide's training loop, written out."""
    for _ in range(epochs):
        for x, y in loader:
            opt.zero_grad()
            loss = mse(model(x), y)
            loss.backward()
            if clip is not None:
                so.clip_grad_norm_(model.parameters(), clip)
            opt.step()
            if sched is not None:
                sched.step()


def test_fit_equals_the_hand_written_loop():
    x, y = make_data()
    ref = TinyModel()
    opt = so.AdamW(ref.parameters(), lr=0.05)
    manual_loop(ref, opt, Loader(x, y, 8), 3, so.CosineAnnealingLR(opt, T_max=12), clip=0.5)
    model = TinyModel()
    opt = so.AdamW(model.parameters(), lr=0.05)
    sched = so.CosineAnnealingLR(opt, T_max=12)
    hist = so.Trainer(model, opt, mse, sched, max_epochs=3, grad_clip=0.5, progress=False).fit(Loader(x, y, 8))
    for a, b in zip(model.parameters(), ref.parameters()):
        np.testing.assert_array_equal(to_np(a), to_np(b))
    assert hist.step == list(range(1, 13)) and len(hist.loss) == 12
    expected_lr = [0.05 * (1 + math.cos(math.pi * t / 12)) / 2 for t in range(12)]
    np.testing.assert_allclose(hist.lr, expected_lr, rtol=1e-9, atol=1e-15)
    assert sum(hist.loss[8:]) < sum(hist.loss[:4])  # same batches, third epoch vs first


def test_loss_history_is_the_loss_of_each_step():
    x, y = make_data(16)
    model = TinyModel()
    start = [to_np(p) for p in model.parameters()]
    hist = so.Trainer(model, so.SGD(model.parameters(), lr=0.0), mse, progress=False).fit(Loader(x, y, 4))
    w, b = start
    want = [np.mean((x[i:i + 4] @ w + b - y[i:i + 4]) ** 2) for i in range(0, 16, 4)]
    np.testing.assert_allclose(hist.loss, want, rtol=1e-5)


def test_grad_accumulation_equals_a_bigger_batch():
    x, y = make_data(32)
    big, small = TinyModel(), TinyModel()
    so.Trainer(big, so.SGD(big.parameters(), lr=0.1, momentum=0.9), mse, max_epochs=2,
               progress=False).fit(Loader(x, y, 8))
    hist = so.Trainer(small, so.SGD(small.parameters(), lr=0.1, momentum=0.9), mse, max_epochs=2,
                      grad_accum_steps=4, progress=False).fit(Loader(x, y, 2))
    assert len(hist.step) == 8
    for a, b in zip(small.parameters(), big.parameters()):
        np.testing.assert_allclose(to_np(a), to_np(b), rtol=1e-5, atol=1e-6)


def test_max_steps_overrides_epochs_and_dict_batches():
    x, y = make_data(12)
    model = TinyModel()
    seen = []

    class Recorder(so.Callback):
        def on_epoch_end(self, trainer, epoch, logs):
            seen.append(("epoch", epoch, logs["step"]))

    trainer = so.Trainer(model, so.SGD(model.parameters(), lr=0.01), mse, max_steps=7, progress=False,
                         callbacks=[Recorder()])
    hist = trainer.fit(Loader(x, y, 4, as_dict=True))
    assert hist.step[-1] == 7 and trainer.step == 7
    assert seen == [("epoch", 0, 3), ("epoch", 1, 6)]


def test_nonfinite_loss_raises_with_the_step_or_is_skipped():
    x, y = make_data(16)
    y[9] = np.nan  # in the third batch of 4
    model = TinyModel()
    trainer = so.Trainer(model, so.SGD(model.parameters(), lr=0.01), mse, progress=False)
    with pytest.raises(FloatingPointError, match="step 3 .*skip_nonfinite"):
        trainer.fit(Loader(x, y, 4))
    model = TinyModel()
    hist = so.Trainer(model, so.SGD(model.parameters(), lr=0.01), mse, progress=False,
                      skip_nonfinite=True).fit(Loader(x, y, 4))
    assert hist.skipped == 1 and len(hist.step) == 3 and all(map(math.isfinite, hist.loss))
    assert all(np.isfinite(to_np(p)).all() for p in model.parameters())


def test_evaluate_and_predict():
    x, y = make_data(10)
    model = TinyModel()
    trainer = so.Trainer(model, so.SGD(model.parameters(), lr=0.01), mse, progress=False)
    w, b = (to_np(p) for p in model.parameters())
    pred = x @ w + b
    want = np.mean((pred - y) ** 2)  # batches of 4, 4, 2 weighted by size = the mean over all rows
    assert trainer.evaluate(Loader(x, y, 4)) == pytest.approx(want, rel=1e-5)
    assert model.training
    out = trainer.predict(Loader(x, y, 4))
    np.testing.assert_allclose(to_np(out), pred, rtol=1e-5, atol=1e-6)
    out = trainer.predict([sx.Tensor(x[:3]), sx.Tensor(x[3:])])
    assert out.shape == (10, 2)
    with pytest.raises(ValueError, match="no batches"):
        trainer.evaluate([])


def test_eval_every_callbacks_and_should_stop():
    x, y = make_data(16)
    model = TinyModel()
    calls, evals = [], []

    class Stopper:
        def on_step_end(self, trainer, step, logs):
            calls.append((step, sorted(logs)))
            if step % 2 == 0:
                evals.append(trainer.evaluate(Loader(x, y, 5)))
            if step == 5:
                trainer.should_stop = True

        def on_fit_end(self, trainer, history):
            calls.append("end")

    trainer = so.Trainer(model, so.SGD(model.parameters(), lr=0.01), mse, max_epochs=5, eval_every=2,
                         callbacks=[Stopper()], progress=False)
    hist = trainer.fit(Loader(x, y, 4), eval_loader=Loader(x, y, 8))
    assert hist.step == [1, 2, 3, 4, 5] and hist.eval_step == [2, 4]
    assert calls[1] == (2, ["epoch", "eval_loss", "loss", "lr", "samples_per_s"]) and calls[-1] == "end"
    np.testing.assert_allclose(hist.eval_loss, evals, rtol=1e-5)


def test_plateau_scheduler_steps_on_eval_loss():
    x, y = make_data(16)
    model = TinyModel()
    opt = so.SGD(model.parameters(), lr=0.01)
    # with an absolute threshold of 1e9 only the first evaluation counts as an improvement
    sched = so.ReduceLROnPlateau(opt, factor=0.5, patience=1, threshold=1e9, threshold_mode="abs")
    trainer = so.Trainer(model, opt, mse, sched, max_epochs=4, progress=False)
    with pytest.raises(ValueError, match="eval_loader"):
        trainer.fit(Loader(x, y, 4))
    hist = trainer.fit(Loader(x, y, 4), eval_loader=Loader(x, y, 16))
    assert hist.eval_step == [4, 8, 12, 16]
    assert opt.param_groups[0]["lr"] == 0.005  # evals 2 and 3 are bad -> one reduction; eval 4 is bad again


@pytest.mark.parametrize("kwargs, match", [
    (dict(max_epochs=0), "max_epochs"), (dict(grad_accum_steps=0), "grad_accum_steps"),
    (dict(grad_clip=-1.0), "grad_clip"), (dict(checkpoint_every=2), "checkpoint_dir"),
    (dict(max_steps=1.5), "max_steps"),
])
def test_bad_trainer_arguments(kwargs, match):
    model = TinyModel()
    with pytest.raises(ValueError, match=match):
        so.Trainer(model, so.SGD(model.parameters(), lr=0.1), mse, **kwargs)


def test_bad_batches():
    model = TinyModel()
    trainer = so.Trainer(model, so.SGD(model.parameters(), lr=0.1), mse, progress=False)
    with pytest.raises(KeyError, match="target"):
        trainer.fit([{"input": sx.zeros((2, 3))}])
    with pytest.raises(ValueError, match="got 3 items"):
        trainer.fit([(sx.zeros((2, 3)), sx.zeros((2, 2)), 1)])


def test_no_progress_output_when_not_a_terminal(capsys):
    x, y = make_data(8)
    model = TinyModel()
    so.Trainer(model, so.SGD(model.parameters(), lr=0.01), mse, progress=True).fit(Loader(x, y, 4))
    assert capsys.readouterr().err == ""


def test_progress_bar_on_a_terminal_shows_loss_lr_and_throughput(monkeypatch):
    import io
    import sys

    class FakeTerminal(io.StringIO):
        def isatty(self):
            return True

    term = FakeTerminal()
    monkeypatch.setattr(sys, "stderr", term)
    x, y = make_data(16)
    model = TinyModel()
    so.Trainer(model, so.SGD(model.parameters(), lr=0.01), mse, log_every=2, progress=True).fit(Loader(x, y, 4))
    out = term.getvalue()
    assert "4/4" in out and "loss=" in out and "lr=0.01" in out and "samples/s=" in out
    term.truncate(0)
    so.Trainer(model, so.SGD(model.parameters(), lr=0.01), mse, progress=False).fit(Loader(x, y, 4))
    assert term.getvalue().strip("\x00") == ""


def test_batches_follow_the_model_device():
    from sneppx_optim.callbacks import model_device, split_batch

    model = TinyModel()
    assert model_device(model) == "cpu" and model_device(lambda x: x) is None
    x, y = sx.ones(2, 3), sx.zeros(2)
    assert split_batch((x, y), device="cpu") == (x, y)  # already there: the same tensors
    got = split_batch({"input_ids": x, "labels": y}, device=model_device(model))
    assert got[0] is x and got[1] is y
    assert split_batch([x, 3], device="cpu")[1] == 3  # only tensors move
    if not sx.cuda.is_available():
        with pytest.raises(RuntimeError, match="(no CUDA device is visible|has no CUDA)"):
            split_batch((x, y), device="cuda")  # a batch for a CUDA model needs the GPU
