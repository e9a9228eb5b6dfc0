"""PyTorch's implementation switches (``foreach``, ``fused``, ``capturable``, ``differentiable``) are accepted by
the optimizers that take them in PyTorch: they are kept in the param groups and leave the update unchanged
(checked against the update without them); ``differentiable=True`` raises."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_optim as optim

FLAGS = {"SGD": dict(foreach=None, fused=False, differentiable=False),
         "Adam": dict(foreach=False, fused=True, capturable=False, differentiable=False),
         "AdamW": dict(foreach=True, fused=False, capturable=True, differentiable=False)}


def _step(name, **kw):
    p = sx.tensor(np.array([0.5, -1.0, 2.0], np.float32), requires_grad=True)
    opt = getattr(optim, name)([p], lr=0.1, **kw)
    for _ in range(3):
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()
    return p.detach().numpy().copy(), opt


@pytest.mark.parametrize("name", sorted(FLAGS))
def test_flags_are_kept_and_change_nothing(name):
    plain, _ = _step(name)
    flagged, opt = _step(name, **FLAGS[name])
    np.testing.assert_array_equal(flagged, plain)
    for key, value in FLAGS[name].items():
        assert opt.param_groups[0][key] == value
    with pytest.raises(NotImplementedError, match="differentiable"):
        getattr(optim, name)([sx.ones(1, requires_grad=True)], differentiable=True)


@pytest.mark.parity
@pytest.mark.parametrize("name", sorted(FLAGS))
def test_parity_param_group_keys(name):
    torch = pytest.importorskip("torch")
    theirs = getattr(torch.optim, name)([torch.ones(1, requires_grad=True)], lr=0.1).param_groups[0]
    ours = getattr(optim, name)([sx.ones(1, requires_grad=True)], lr=0.1).param_groups[0]
    assert set(FLAGS[name]) <= set(theirs) and set(FLAGS[name]) <= set(ours)
