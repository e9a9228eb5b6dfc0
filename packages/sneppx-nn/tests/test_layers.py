"""Layers against NumPy references (forward, and gradients against formulas or finite differences)."""

import math

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import numeric_grad, tensor, to_np


def _weighted_sum_grad(out, r):
    """Backpropagates sum(out * r) for a fixed random ``r``."""
    (out * tensor(r, dtype=out.dtype)).sum().backward()


def test_linear_forward_backward_and_init(rng):
    lin = nn.Linear(5, 3)
    bound = 1 / math.sqrt(5)
    assert np.abs(to_np(lin.weight)).max() <= bound and np.abs(to_np(lin.bias)).max() <= bound
    x = rng.standard_normal((2, 4, 5)).astype(np.float32)
    xt = tensor(x, requires_grad=True)
    out = lin(xt)
    w, b = to_np(lin.weight), to_np(lin.bias)
    np.testing.assert_allclose(to_np(out), x @ w.T + b, rtol=1e-5, atol=1e-6)
    r = rng.standard_normal(out.shape)
    _weighted_sum_grad(out, r)
    np.testing.assert_allclose(to_np(lin.weight.grad), r.reshape(-1, 3).T @ x.reshape(-1, 5), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_np(lin.bias.grad), r.sum((0, 1)), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_np(xt.grad), r @ w, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="Linear"):
        lin(sx.zeros(2, 4))
    assert nn.Linear(2, 2, bias=False).bias is None


def test_linear_init_is_seeded():
    sx.manual_seed(3)
    a = to_np(nn.Linear(6, 4).weight)
    sx.manual_seed(3)
    b = to_np(nn.Linear(6, 4).weight)
    np.testing.assert_array_equal(a, b)


def test_bilinear_matches_einsum(rng):
    bil = nn.Bilinear(3, 4, 2)
    x1, x2 = rng.standard_normal((5, 3)), rng.standard_normal((5, 4))
    t1, t2 = tensor(x1, requires_grad=True), tensor(x2, requires_grad=True)
    out = bil(t1, t2)
    w, b = to_np(bil.weight), to_np(bil.bias)
    np.testing.assert_allclose(to_np(out), np.einsum("ni,kij,nj->nk", x1, w, x2) + b, rtol=1e-4, atol=1e-5)
    r = rng.standard_normal((5, 2))
    _weighted_sum_grad(out, r)
    np.testing.assert_allclose(to_np(bil.weight.grad), np.einsum("nk,ni,nj->kij", r, x1, x2), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(to_np(t1.grad), np.einsum("nk,kij,nj->ni", r, w, x2), rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match="Bilinear"):
        bil(t1, t1)


def test_embedding_lookup_grad_and_padding(rng):
    emb = nn.Embedding(6, 3, padding_idx=-1)
    assert emb.padding_idx == 5 and np.all(to_np(emb.weight)[5] == 0)
    ids = np.array([[0, 5, 2], [2, 2, 1]])
    out = emb(tensor(ids, dtype=sx.int64))
    np.testing.assert_array_equal(to_np(out), to_np(emb.weight)[ids])
    r = rng.standard_normal(out.shape)
    _weighted_sum_grad(out, r)
    expected = np.zeros((6, 3))
    np.add.at(expected, ids, r)
    expected[5] = 0.0  # the padding row receives no gradient
    np.testing.assert_allclose(to_np(emb.weight.grad), expected, rtol=1e-5, atol=1e-6)
    with pytest.raises(ValueError):
        nn.Embedding(4, 2, padding_idx=4)
    frozen = nn.Embedding.from_pretrained(tensor(np.eye(3)))
    assert not frozen.weight.requires_grad and frozen.weight.shape == (3, 3)


def _layer_norm_ref(x, w, b, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w + b


def test_layer_norm_forward_and_input_grad(rng):
    ln = nn.LayerNorm(4, dtype=sx.float64)
    with sx.no_grad():
        ln.weight.copy_(tensor(rng.standard_normal(4), dtype=sx.float64))
        ln.bias.copy_(tensor(rng.standard_normal(4), dtype=sx.float64))
    w, b = to_np(ln.weight), to_np(ln.bias)
    x = rng.standard_normal((3, 4))
    xt = tensor(x, requires_grad=True, dtype=sx.float64)
    out = ln(xt)
    np.testing.assert_allclose(to_np(out), _layer_norm_ref(x, w, b, 1e-5), rtol=1e-10, atol=1e-12)
    r = rng.standard_normal((3, 4))
    _weighted_sum_grad(out, r)
    num = numeric_grad(lambda a: float((_layer_norm_ref(a, w, b, 1e-5) * r).sum()), x.copy())
    np.testing.assert_allclose(to_np(xt.grad), num, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(to_np(ln.bias.grad), r.sum(0), rtol=1e-10)
    assert nn.LayerNorm(4, bias=False).bias is None
    assert nn.LayerNorm(4, elementwise_affine=False).weight is None
    with pytest.raises(ValueError, match="LayerNorm"):
        ln(sx.zeros(3, 5, dtype=sx.float64))


def test_rms_norm_forward_and_grad(rng):
    rms = nn.RMSNorm((2, 3), eps=1e-6, dtype=sx.float64)
    x = rng.standard_normal((4, 2, 3))

    def ref(a):
        return a / np.sqrt((a ** 2).mean((-2, -1), keepdims=True) + 1e-6)

    xt = tensor(x, requires_grad=True, dtype=sx.float64)
    out = rms(xt)
    np.testing.assert_allclose(to_np(out), ref(x), rtol=1e-10, atol=1e-12)
    r = rng.standard_normal(x.shape)
    _weighted_sum_grad(out, r)
    num = numeric_grad(lambda a: float((ref(a) * r).sum()), x.copy())
    np.testing.assert_allclose(to_np(xt.grad), num, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(to_np(rms.weight.grad), (ref(x) * r).sum(0), rtol=1e-8)


def test_dropout_train_eval_and_seed():
    drop = nn.Dropout(0.3)
    x = sx.ones(200, 100)
    sx.manual_seed(1)
    a = to_np(drop(x))
    sx.manual_seed(1)
    b = to_np(drop(x))
    np.testing.assert_array_equal(a, b)
    assert abs((a == 0).mean() - 0.3) < 0.02
    np.testing.assert_allclose(a[a != 0], 1 / 0.7, rtol=1e-6)
    drop.eval()
    np.testing.assert_array_equal(to_np(drop(x)), to_np(x))
    with pytest.raises(ValueError):
        nn.Dropout(1.5)


def _gelu(x):
    return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def _softmax(x, dim):
    e = np.exp(x - x.max(dim, keepdims=True))
    return e / e.sum(dim, keepdims=True)


ACTS = [
    (nn.ReLU(), lambda x: np.maximum(x, 0)),
    (nn.GELU(), _gelu),
    (nn.GELU(approximate="tanh"), _gelu_tanh),
    (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
    (nn.Tanh(), np.tanh),
    (nn.Sigmoid(), lambda x: 1 / (1 + np.exp(-x))),
    (nn.LeakyReLU(0.2), lambda x: np.where(x >= 0, x, 0.2 * x)),
    (nn.Softmax(dim=1), lambda x: _softmax(x, 1)),
    (nn.LogSoftmax(dim=-1), lambda x: np.log(_softmax(x, -1))),
]


@pytest.mark.parametrize("layer,ref", ACTS, ids=lambda v: type(v).__name__ if isinstance(v, nn.Module) else "")
def test_activations_forward_and_grad(layer, ref, rng):
    x = rng.standard_normal((3, 5)) + 0.05  # keep away from relu's kink at 0
    xt = tensor(x, requires_grad=True, dtype=sx.float64)
    out = layer(xt)
    np.testing.assert_allclose(to_np(out), ref(x), rtol=1e-7, atol=1e-9)
    r = rng.standard_normal(x.shape)
    _weighted_sum_grad(out, r)
    num = numeric_grad(lambda a: float((ref(a) * r).sum()), x.copy())
    np.testing.assert_allclose(to_np(xt.grad), num, rtol=1e-5, atol=1e-7)


def test_activation_argument_errors():
    with pytest.raises(ValueError, match="approximate"):
        nn.GELU("fast")
    with pytest.raises(ValueError):
        nn.LeakyReLU(float("nan"))
    with pytest.warns(UserWarning, match="Implicit dimension"):
        out = nn.Softmax()(sx.zeros(2, 3))
    np.testing.assert_allclose(to_np(out), np.full((2, 3), 1 / 3), rtol=1e-6)


def test_shape_layers():
    x = sx.randn(2, 3, 4)
    assert nn.Flatten()(x).shape == (2, 12)
    assert nn.Flatten(0, 1)(x).shape == (6, 4)
    assert nn.Unflatten(2, (2, 2))(x).shape == (2, 3, 2, 2)
    assert nn.Identity(5, foo=1)(x) is x
    with pytest.raises(TypeError):
        nn.Unflatten(1, 3)


def test_sequential_indexing_slicing_append():
    layers = [nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1)]
    seq = nn.Sequential(*layers)
    assert len(seq) == 3 and seq[0] is layers[0] and seq[-1] is layers[2]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[1] is layers[1]
    x = sx.randn(4, 2)
    np.testing.assert_allclose(to_np(seq(x)), to_np(layers[2](layers[1](layers[0](x)))), rtol=1e-6)
    seq.append(nn.Sigmoid())
    assert len(seq) == 4 and list(seq.state_dict()) == ["0.weight", "0.bias", "2.weight", "2.bias"]
    del seq[1]
    assert [type(m).__name__ for m in seq] == ["Linear", "Linear", "Sigmoid"]
    assert list(seq.state_dict()) == ["0.weight", "0.bias", "1.weight", "1.bias"]
    with pytest.raises(IndexError):
        seq[7]
    from collections import OrderedDict

    named = nn.Sequential(OrderedDict(first=nn.Linear(2, 2), act=nn.Tanh()))
    assert list(named.state_dict()) == ["first.weight", "first.bias"] and named[1] is named.act


def test_module_list_and_dict():
    ml = nn.ModuleList([nn.Linear(1, 1) for _ in range(3)])
    ml.append(nn.ReLU())
    ml.insert(0, nn.Tanh())
    assert len(ml) == 5 and isinstance(ml[0], nn.Tanh) and isinstance(ml[1:3], nn.ModuleList)
    assert [n for n, _ in ml.named_parameters()][:2] == ["1.weight", "1.bias"]
    md = nn.ModuleDict({"a": nn.Linear(1, 2), "b": nn.ReLU()})
    md["c"] = nn.Tanh()
    assert list(md) == ["a", "b", "c"] and "b" in md and len(md) == 3
    del md["b"]
    assert list(md.keys()) == ["a", "c"]
    assert [n for n, _ in md.named_parameters()] == ["a.weight", "a.bias"]
    with pytest.raises(KeyError):
        md["zz"]


def test_parameter_list_and_dict():
    """Parameters in ParameterList and ParameterDict register under their index or key (tensors become
    Parameters), reach parameters(), state_dict and an optimizer's gradients, and support the list and
    dict operations."""
    pl = nn.ParameterList([nn.Parameter(sx.ones(2)), sx.zeros(3)])
    assert len(pl) == 2 and all(isinstance(p, nn.Parameter) for p in pl) and pl[1].requires_grad
    pl.append(sx.full((2, 2), 2.0))
    pl += [sx.ones(1)]
    pl[0] = sx.full((2,), 3.0)
    assert [tuple(p.shape) for p in pl] == [(2,), (3,), (2, 2), (1,)]
    assert isinstance(pl[1:3], nn.ParameterList) and pl[1:3][0] is pl[1] and pl[-1] is pl[3]
    assert [n for n, _ in pl.named_parameters()] == ["0", "1", "2", "3"]
    with pytest.raises(IndexError, match="ParameterList"):
        pl[4]
    with pytest.raises(TypeError, match=r"\[ParameterList\] holds Parameters or tensors, got str"):
        pl.append("w")
    pd = nn.ParameterDict({"a": sx.ones(2), "b": nn.Parameter(sx.zeros(1))})
    pd["c"] = sx.ones(3)
    assert list(pd) == ["a", "b", "c"] and "b" in pd and len(pd) == 3 and pd.get("zz") is None
    assert pd.setdefault("d", sx.zeros(2)) is pd["d"] and isinstance(pd["d"], nn.Parameter)
    assert pd.pop("b").shape == (1,) and list(pd.keys()) == ["a", "c", "d"]
    del pd["a"]
    assert list(pd.copy()) == ["c", "d"] and pd.copy()["c"] is pd["c"]
    with pytest.raises(KeyError, match="ParameterDict"):
        pd["zz"]
    with pytest.raises(TypeError, match="ParameterDict"):
        pd["e"] = 1.0

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.scales = nn.ParameterList([sx.ones(3) for _ in range(2)])
            self.bias = nn.ParameterDict({"x": sx.zeros(3)})

        def forward(self, x):
            for s in self.scales:
                x = x * s
            return x + self.bias["x"]
    net = Net()
    assert list(net.state_dict()) == ["scales.0", "scales.1", "bias.x"]
    x = np.array([1.0, 2.0, 3.0], np.float32)
    net(sx.tensor(x)).sum().backward()
    np.testing.assert_allclose(net.scales[0].grad.numpy(), x)
    np.testing.assert_allclose(net.bias["x"].grad.numpy(), np.ones(3))
    assert len(list(net.parameters())) == 3


def test_dropout_inplace_overwrites_its_input():
    x = sx.ones(1000).requires_grad_(True)
    h = x * 1
    y = nn.Dropout(0.5, inplace=True)(h)
    assert y is h  # PyTorch's inplace=True: the input itself, dropped and scaled
    kept = h.detach().numpy() != 0
    assert 0.4 < kept.mean() < 0.6 and set(h.detach().numpy()[kept].tolist()) == {2.0}
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(kept, 2.0, 0.0))
    z = sx.ones(10)
    assert nn.Dropout(0.5)(z) is not z and z.numpy().tolist() == [1.0] * 10
    with pytest.raises(RuntimeError, match="leaf"):
        nn.Dropout(0.5, inplace=True)(sx.ones(3, requires_grad=True))
