"""SyncBatchNorm in one process (it is BatchNorm there) and convert_sync_batchnorm; the multi-process checks are in
sneppx-distributed's tests (mpi_syncbn_program.py)."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn

RNG = np.random.default_rng(4)


def _copy(dst, src):
    dst.load_state_dict(src.state_dict())
    return dst


@pytest.mark.parametrize("shape", [(6, 3), (4, 3, 5), (2, 3, 4, 4), (2, 3, 2, 3, 2)])
def test_alone_it_is_batch_norm(shape):
    bn = {2: nn.BatchNorm1d, 3: nn.BatchNorm1d, 4: nn.BatchNorm2d, 5: nn.BatchNorm3d}[len(shape)](3, dtype=sx.float64)
    with sx.no_grad():
        bn.weight.copy_(sx.tensor(RNG.standard_normal(3)))
        bn.bias.copy_(sx.tensor(RNG.standard_normal(3)))
    sync = _copy(nn.SyncBatchNorm(3, dtype=sx.float64), bn)
    a, seed = RNG.standard_normal(shape), RNG.standard_normal(shape)
    for layer in (bn, sync):
        x = sx.tensor(a, requires_grad=True)
        (layer(x) * sx.tensor(seed)).sum().backward()
        layer.grads = [x.grad.numpy(), layer.weight.grad.numpy(), layer.bias.grad.numpy()]
    for g, w in zip(sync.grads, bn.grads):
        np.testing.assert_allclose(g, w, rtol=1e-14, atol=1e-14)
    np.testing.assert_allclose(sync.running_var.numpy(), bn.running_var.numpy(), rtol=1e-14)
    sync.eval()
    bn.eval()
    np.testing.assert_allclose(sync(sx.tensor(a)).detach().numpy(), bn(sx.tensor(a)).detach().numpy(), rtol=1e-14)


def test_convert_sync_batchnorm_keeps_the_tensors():
    net = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.Sequential(nn.BatchNorm2d(4)))
    net[1].eval()
    weight, mean = net[1].weight, net[1].running_mean
    keys = list(net.state_dict())
    out = nn.SyncBatchNorm.convert_sync_batchnorm(net)
    assert out is net and isinstance(net[1], nn.SyncBatchNorm) and isinstance(net[3][0], nn.SyncBatchNorm)
    assert net[1].weight is weight and net[1].running_mean is mean and not net[1].training
    assert list(net.state_dict()) == keys
    single = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm1d(5))
    assert isinstance(single, nn.SyncBatchNorm) and single.num_features == 5
    with pytest.raises(ValueError, match=r"\[SyncBatchNorm\] expected 2-D or 3-D or 4-D or 5-D input"):
        nn.SyncBatchNorm(3)(sx.zeros(3))


@pytest.mark.parity
def test_matches_torch():
    torch = pytest.importorskip("torch")
    a = RNG.standard_normal((4, 3, 5))
    tm = torch.nn.SyncBatchNorm(3).double()
    sm = nn.SyncBatchNorm(3, dtype=sx.float64)
    with torch.no_grad():
        tm.weight.copy_(torch.tensor(RNG.standard_normal(3)))
    sm.load_state_dict({k: v.numpy() for k, v in tm.state_dict().items()})
    xt, xs = torch.tensor(a, requires_grad=True), sx.tensor(a, requires_grad=True)
    tm(xt).pow(2).sum().backward()
    sm(xs).pow(2).sum().backward()
    np.testing.assert_allclose(xs.grad.numpy(), xt.grad.numpy(), rtol=1e-12, atol=1e-13)
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(np.asarray(sm.state_dict()[k].numpy(), dtype=np.float64), v.double().numpy(),
                                   rtol=1e-12, err_msg=k)
