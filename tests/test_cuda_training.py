"""A small GPT trained and sampled on CUDA against the same run on the CPU from the same
initialisation (marked ``cuda``; skipped when no GPU is visible)."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_data import DataLoader, TensorDataset
from sneppx_generate import generate
from sneppx_nn import Transformer
from sneppx_nn import functional as F
from sneppx_optim import AdamW, Trainer, clip_grad_norm_

pytestmark = [pytest.mark.cuda,
              pytest.mark.skipif(not sx.cuda.is_available(), reason="no CUDA device is visible")]

V, T = 64, 16


def _model(device, dropout=0.0):
    sx.manual_seed(0)
    return Transformer(V, 32, 4, 2, max_seq_len=32, dropout=dropout).to(device)


def _batches(steps):
    return np.random.default_rng(0).integers(0, V, size=(steps, 4, T + 1))


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_fifty_steps_give_the_cpu_losses(dropout):
    data = _batches(50)
    losses = {}
    for dev in ("cpu", "cuda"):
        model = _model(dev, dropout)
        opt = AdamW(model.parameters(), lr=3e-3, weight_decay=0.1)
        sx.manual_seed(1)  # the dropout masks: the same Philox counters on both devices
        run = []
        for step in range(50):
            batch = sx.tensor(data[step], device=dev)
            logits = model(batch[:, :-1])
            loss = F.cross_entropy(logits.reshape(-1, V), batch[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            run.append(loss.item())
        if dev == "cuda":
            assert all(str(p.device) == "cuda:0" and str(p.grad.device) == "cuda:0" for p in model.parameters())
        losses[dev] = run
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-4, atol=1e-4)
    assert losses["cpu"][-1] < losses["cpu"][0]


def test_greedy_generation_matches_the_cpu():
    prompts = [[1, 2, 3], [5, 6, 7, 8, 9]]
    outs = {}
    for dev in ("cpu", "cuda"):
        model = _model(dev).eval()
        for cache in (True, False):
            res = generate(model, prompts, max_new_tokens=12, do_sample=False, use_cache=cache)
            outs[dev, cache] = res["sequences"]
    assert outs["cuda", True] == outs["cpu", True] == outs["cuda", False] == outs["cpu", False]


def test_trainer_moves_cpu_batches_to_a_cuda_model():
    data = _batches(8).reshape(32, T + 1)
    ds = TensorDataset(sx.tensor(data[:, :-1]), sx.tensor(data[:, 1:]))
    model = _model("cuda")
    loss_fn = lambda logits, y: F.cross_entropy(logits.reshape(-1, V), y.reshape(-1))  # noqa: E731
    trainer = Trainer(model, AdamW(model.parameters(), lr=1e-3), loss_fn, max_steps=4, progress=False)
    history = trainer.fit(DataLoader(ds, batch_size=8))
    assert len(history.loss) == 4 and all(np.isfinite(history.loss))
    assert np.isfinite(trainer.evaluate(DataLoader(ds, batch_size=8)))
