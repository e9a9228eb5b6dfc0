"""``nn.utils.prune``: masks checked against NumPy (smallest |w|, smallest row norms), the reparametrisation
(``<name>_orig`` trained, ``<name>_mask`` kept, the hook), iterative and global pruning, ``remove``; the
parity test compares every mask and gradient with PyTorch's."""

import numpy as np
import pytest
import sneppx_core as sx
import sneppx_nn as nn
from sneppx_nn.utils import prune

W = np.random.default_rng(0).standard_normal((6, 4)).astype(np.float32)


def _linear():
    m = nn.Linear(4, 6)
    with sx.no_grad():
        m.weight.copy_(sx.tensor(W))
    return m


def test_l1_unstructured_masks_the_smallest_entries():
    m = prune.l1_unstructured(_linear(), "weight", amount=0.3)
    want = np.ones(24)
    want[np.argsort(np.abs(W).reshape(-1))[:7]] = 0  # round(0.3 * 24) = 7
    np.testing.assert_array_equal(m.weight_mask.numpy().reshape(-1), want)
    assert sorted(n for n, _ in m.named_parameters()) == ["bias", "weight_orig"]
    assert sorted(m.state_dict()) == ["bias", "weight_mask", "weight_orig"]
    assert isinstance(m.weight_orig, nn.Parameter) and not isinstance(m.weight, nn.Parameter)
    np.testing.assert_array_equal(m.weight.detach().numpy(), W * want.reshape(6, 4))
    m(sx.ones(2, 4)).sum().backward()  # the pruned entries get no gradient
    np.testing.assert_array_equal(m.weight_orig.grad.numpy(), 2 * np.ones((6, 4)) * want.reshape(6, 4))


def test_structured_pruning_of_a_pruned_tensor_keeps_the_earlier_mask():
    m = prune.l1_unstructured(_linear(), "weight", amount=5)
    first = m.weight_mask.numpy().copy()
    prune.ln_structured(m, "weight", amount=2, n=2, dim=0)
    rows = np.argsort(np.linalg.norm(W, axis=1))[:2]  # the two rows of smallest norm go
    want = first.copy()
    want[rows] = 0
    np.testing.assert_array_equal(m.weight_mask.numpy(), want)
    assert len(m._forward_pre_hooks) == 1 and isinstance(next(iter(m._forward_pre_hooks.values())),
                                                         prune.PruningContainer)
    with sx.no_grad():
        m.weight_orig.fill_(1.0)
    m(sx.ones(1, 4))  # the hook recomputes weight before the forward
    np.testing.assert_array_equal(m.weight.detach().numpy(), want)


def test_remove_makes_it_permanent():
    m = prune.l1_unstructured(_linear(), "weight", amount=0.5)
    assert prune.is_pruned(m)
    prune.remove(m, "weight")
    assert not prune.is_pruned(m) and isinstance(m.weight, nn.Parameter)
    assert sorted(m.state_dict()) == ["bias", "weight"] and int((m.weight.detach().numpy() == 0).sum()) == 12
    with pytest.raises(ValueError, match="has to be pruned before"):
        prune.remove(m, "weight")


def test_global_random_and_custom():
    a, b = nn.Linear(3, 5), nn.Linear(5, 2)
    with sx.no_grad():
        a.weight.copy_(sx.arange(15.0).reshape(5, 3) - 7)
        b.weight.copy_(sx.arange(10.0).reshape(2, 5) * 0.3 - 1.4)
    prune.global_unstructured([(a, "weight"), (b, "weight")], pruning_method=prune.L1Unstructured, amount=8)
    both = np.concatenate([np.abs(np.arange(15.0) - 7), np.abs(np.arange(10.0) * 0.3 - 1.4)])
    kept = np.concatenate([a.weight_mask.numpy().reshape(-1), b.weight_mask.numpy().reshape(-1)])
    assert kept.sum() == 17 and both[kept == 0].max() <= both[kept == 1].min()
    prune.random_unstructured(a, "bias", amount=2)
    assert int(a.bias_mask.sum()) == 3
    c = prune.random_structured(nn.Conv2d(2, 4, 3), "weight", amount=0.5, dim=0)
    per_channel = c.weight_mask.sum(dim=(1, 2, 3)).numpy()
    assert sorted(per_channel.tolist()) == [0, 0, 18, 18]
    d = prune.custom_from_mask(nn.Linear(2, 2), "weight", mask=sx.tensor([[1.0, 0.0], [0.0, 1.0]]))
    assert d.weight.detach().numpy()[0, 1] == 0 and d.weight.detach().numpy()[1, 0] == 0
    with pytest.raises(ValueError, match="should be a float in"):
        prune.l1_unstructured(nn.Linear(2, 2), "weight", amount=1.5)
    with pytest.raises(TypeError, match="needs an unstructured pruning method"):
        prune.global_unstructured([(d, "bias")], pruning_method=prune.LnStructured, amount=1, n=2, dim=0)


@pytest.mark.parity
def test_masks_and_gradients_match_pytorch():
    torch = pytest.importorskip("torch")
    import torch.nn.utils.prune as tprune

    ours, theirs = _linear(), torch.nn.Linear(4, 6)
    with torch.no_grad():
        theirs.weight.copy_(torch.from_numpy(W))
        theirs.bias.copy_(torch.from_numpy(ours.bias.detach().numpy()))
    for lib, m in ((prune, ours), (tprune, theirs)):
        lib.l1_unstructured(m, "weight", amount=0.3)
        lib.ln_structured(m, "weight", amount=2, n=1, dim=1)
        lib.l1_unstructured(m, "bias", amount=2)
    np.testing.assert_array_equal(ours.weight_mask.numpy(), theirs.weight_mask.numpy())
    np.testing.assert_array_equal(ours.bias_mask.numpy(), theirs.bias_mask.numpy())
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    ours(sx.ones(3, 4)).square().sum().backward()
    theirs(torch.ones(3, 4)).square().sum().backward()
    np.testing.assert_allclose(ours.weight_orig.grad.numpy(), theirs.weight_orig.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(ours.bias_orig.grad.numpy(), theirs.bias_orig.grad.numpy(), rtol=1e-6)
