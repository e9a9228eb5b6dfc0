"""``Module.share_memory``: a model whose parameters a spawned process trains (Hogwild) changes here too."""

import os

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_nn as nn
from sneppx_core import multiprocessing as mp

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="needs memfd_create")


def _sgd_steps(model, steps):
    for _ in range(steps):
        x = sx.arange(12.0).reshape(4, 3).sin()
        loss = model(x).square().mean()
        model.zero_grad()
        loss.backward()
        with sx.no_grad():
            for p in model.parameters():
                p.sub_(0.1 * p.grad)


def test_a_spawned_process_trains_the_shared_model():
    sx.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Linear(5, 2))
    before = [p.detach().clone() for p in model.parameters()]
    reference = nn.Sequential(nn.Linear(3, 5), nn.BatchNorm1d(5), nn.Linear(5, 2))
    reference.load_state_dict(model.state_dict())
    assert model.share_memory() is model
    assert all(p.is_shared() and isinstance(p, nn.Parameter) for p in model.parameters())
    assert all(b.is_shared() for b in model.buffers())
    p = mp.get_context("spawn").Process(target=_sgd_steps, args=(model, 3))
    p.start()
    p.join(120)
    assert p.exitcode == 0
    _sgd_steps(reference, 3)  # the same steps here, on an unshared copy
    for got, want, old in zip(model.parameters(), reference.parameters(), before):
        assert not np.array_equal(got.detach().numpy(), old.numpy())
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(model[1].running_mean.numpy(), reference[1].running_mean.numpy(), rtol=1e-6)
