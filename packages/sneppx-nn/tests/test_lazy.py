"""Lazy layers: the size from the first input or from a state_dict, the same initial values as the layer built
directly, the same parameter objects before and after, and parity with torch's lazy layers."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import to_np

RNG = np.random.default_rng(53)

CASES = [  # lazy name, its arguments, the layer it becomes with the size given first, an input shape
    ("LazyLinear", (5,), "Linear", (3, 4, 7)),
    ("LazyConv1d", (4, 3), "Conv1d", (2, 6, 9)),
    ("LazyConv2d", (6, 3), "Conv2d", (2, 4, 7, 8)),
    ("LazyConv3d", (4, (2, 3, 3)), "Conv3d", (1, 2, 4, 5, 6)),
    ("LazyConvTranspose1d", (4, 3), "ConvTranspose1d", (2, 6, 5)),
    ("LazyConvTranspose2d", (2, 3), "ConvTranspose2d", (2, 4, 5, 4)),
    ("LazyConvTranspose3d", (2, 2), "ConvTranspose3d", (1, 3, 3, 4, 3)),
    ("LazyBatchNorm1d", (), "BatchNorm1d", (8, 5)),
    ("LazyBatchNorm2d", (), "BatchNorm2d", (4, 3, 5, 5)),
    ("LazyBatchNorm3d", (), "BatchNorm3d", (2, 3, 2, 3, 4)),
    ("LazyInstanceNorm1d", (), "InstanceNorm1d", (2, 3, 9)),
    ("LazyInstanceNorm2d", (), "InstanceNorm2d", (2, 3, 4, 5)),
    ("LazyInstanceNorm3d", (), "InstanceNorm3d", (2, 3, 2, 3, 4)),
]


def _size(name, shape):
    return shape[-1] if name == "LazyLinear" else shape[1]


@pytest.mark.parametrize("name, args, real, shape", CASES, ids=[c[0] for c in CASES])
def test_lazy_layer_becomes_the_layer_with_the_same_values(name, args, real, shape):
    x = sx.tensor(RNG.standard_normal(shape), dtype=sx.float32)
    sx.manual_seed(7)
    lazy = getattr(nn, name)(*args)
    assert lazy.has_uninitialized_params()
    before = {k: id(v) for k, v in lazy.named_parameters()}
    assert all(p.numel() == 0 for p in lazy.parameters())
    out = lazy(x)
    assert type(lazy) is getattr(nn, real) and isinstance(lazy, getattr(nn, real))
    assert {k: id(v) for k, v in lazy.named_parameters()} == before  # the same objects, now filled
    sx.manual_seed(7)
    lazy_defaults = dict(affine=True, track_running_stats=True) if "Instance" in name else {}  # PyTorch's
    direct = getattr(nn, real)(_size(name, shape), *args, **lazy_defaults)
    assert repr(lazy) == repr(direct)
    np.testing.assert_allclose(to_np(out), to_np(direct(x)), rtol=1e-6, atol=1e-6)
    assert list(lazy.state_dict()) == list(direct.state_dict())
    for (k, a), b in zip(lazy.state_dict().items(), direct.state_dict().values()):  # running statistics too
        np.testing.assert_array_equal(to_np(a), to_np(b), err_msg=k)


def test_an_optimizer_made_before_the_first_call_updates_the_filled_parameters():
    optim = pytest.importorskip("sneppx_optim")  # not a dependency of sneppx-nn (nox -s isolated)

    sx.manual_seed(3)
    lazy = nn.Sequential(nn.LazyLinear(8), nn.ReLU(), nn.LazyLinear(2))
    opt = optim.Adam(lazy.parameters(), lr=0.1)
    x, y = sx.tensor(RNG.standard_normal((6, 5)), dtype=sx.float32), sx.tensor(RNG.standard_normal((6, 2)))
    loss = ((lazy(x) - y.float()) ** 2).mean()
    sx.manual_seed(3)
    direct = nn.Sequential(nn.Linear(5, 8), nn.ReLU(), nn.Linear(8, 2))
    opt2 = optim.Adam(direct.parameters(), lr=0.1)
    loss2 = ((direct(x) - y.float()) ** 2).mean()
    loss.backward(), loss2.backward()
    opt.step(), opt2.step()
    for a, b in zip(lazy.parameters(), direct.parameters()):
        np.testing.assert_allclose(to_np(a), to_np(b), rtol=1e-6)


def test_load_state_dict_gives_the_sizes_and_to_before_the_first_call():
    src = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.Flatten(), nn.Linear(4 * 3 * 3, 2))
    lazy = nn.Sequential(nn.LazyConv2d(4, 3), nn.LazyBatchNorm2d(), nn.Flatten(), nn.LazyLinear(2))
    lazy.load_state_dict(src.state_dict())
    assert [type(m).__name__ for m in lazy] == ["Conv2d", "BatchNorm2d", "Flatten", "Linear"]
    assert lazy[0].in_channels == 3 and lazy[1].num_features == 4 and lazy[3].in_features == 36
    x = sx.randn(2, 3, 5, 5)
    src.eval(), lazy.eval()
    np.testing.assert_array_equal(to_np(lazy(x)), to_np(src(x)))
    wide = nn.LazyLinear(3).to(sx.float64)
    assert wide(sx.randn(2, 4, dtype=sx.float64)).dtype == sx.float64 and wide.weight.dtype == sx.float64
    norm = nn.LazyInstanceNorm1d(affine=False, track_running_stats=False)  # unbatched: torch's raises here
    assert norm(sx.randn(5, 7)).shape == (5, 7) and norm.num_features == 5 and list(norm.state_dict()) == []
    inorm = nn.LazyInstanceNorm2d()
    inorm(sx.randn(2, 3, 4, 4))
    assert inorm.affine and inorm.track_running_stats  # PyTorch's lazy defaults
    with pytest.raises(ValueError, match=r"\[Conv2d\] in_channels 3 and out_channels 4 must be divisible by groups"):
        nn.LazyConv2d(4, 3, groups=2)(sx.randn(1, 3, 5, 5))


@pytest.mark.parity
@pytest.mark.parametrize("name, args, real, shape", CASES, ids=[c[0] for c in CASES])
def test_lazy_layer_parity(name, args, real, shape):
    torch = pytest.importorskip("torch")
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    x = RNG.standard_normal(shape).astype(np.float32)
    out_s, out_t = ours(sx.tensor(x)), theirs(torch.tensor(x))
    assert type(ours).__name__ == type(theirs).__name__ == real
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert tuple(out_s.shape) == tuple(out_t.shape)
    theirs.load_state_dict({k: torch.from_numpy(np.array(to_np(v))) for k, v in ours.state_dict().items()})
    ours.eval(), theirs.eval()
    np.testing.assert_allclose(to_np(ours(sx.tensor(x))), theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                               atol=1e-5)
