"""AdaptiveLogSoftmaxWithLoss and LinearCrossEntropyLoss: against NumPy written from the definitions (float64),
finite-difference gradients, errors, and parity with torch.nn (a torch state_dict loads; same outputs and
gradients)."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import numeric_grad, to_np


def np_log_softmax(z):
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def np_asm_log_prob(m, x):
    """log p(class) for every class, from the parameters, by the two-level definition."""
    sd = {k: to_np(v) for k, v in m.state_dict().items()}
    head = x @ sd["head.weight"].T + sd.get("head.bias", 0.0)
    lp_head = np_log_softmax(head)
    cut = m.cutoffs
    parts = [lp_head[:, :cut[0]]]
    for i in range(len(cut) - 1):
        tail = (x @ sd[f"tail.{i}.0.weight"].T) @ sd[f"tail.{i}.1.weight"].T
        parts.append(np_log_softmax(tail) + lp_head[:, cut[0] + i:cut[0] + i + 1])
    return np.concatenate(parts, 1)


def make_asm(**kw):
    sx.manual_seed(3)
    return nn.AdaptiveLogSoftmaxWithLoss(12, 30, [4, 11, 20], div_value=2.0, dtype=sx.float64, **kw)


def test_adaptive_softmax_matches_the_definition(rng):
    m = make_asm(head_bias=True)
    x = rng.standard_normal((17, 12))
    y = rng.integers(0, 30, 17)
    y[:4] = [0, 4, 11, 29]  # the edges of every cluster
    full = np_asm_log_prob(m, x)
    out, loss = m(sx.tensor(x), sx.tensor(y))
    np.testing.assert_allclose(to_np(out), full[np.arange(17), y], rtol=1e-12)
    np.testing.assert_allclose(to_np(loss), -full[np.arange(17), y].mean(), rtol=1e-12)
    np.testing.assert_allclose(to_np(m.log_prob(sx.tensor(x))), full, rtol=1e-12)
    np.testing.assert_allclose(np.exp(full).sum(1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(to_np(m.predict(sx.tensor(x))), full.argmax(1))
    one = m(sx.tensor(x[3]), sx.tensor(y[3]))
    assert one.output.ndim == 0 and np.isclose(to_np(one.loss), -full[3, y[3]])
    assert tuple(m.tail[1][0].weight.shape) == (3, 12) and tuple(m.tail[1][1].weight.shape) == (9, 3)


def test_adaptive_softmax_gradients_match_finite_differences(rng):
    m = make_asm()
    x = rng.standard_normal((9, 12))
    y = np.array([0, 3, 4, 10, 11, 19, 20, 29, 7])
    xt = sx.tensor(x, requires_grad=True)
    m(xt, sx.tensor(y)).loss.backward()
    ref = numeric_grad(lambda a: -np_asm_log_prob(m, a)[np.arange(9), y].mean(), x.copy())
    np.testing.assert_allclose(to_np(xt.grad), ref, rtol=1e-6, atol=1e-8)
    w = m.tail[2][0].weight
    wn = to_np(w).copy()

    def loss_of(a):
        with sx.no_grad():
            w.copy_(sx.tensor(a))
            return float(m(sx.tensor(x), sx.tensor(y)).loss.item())

    ref_w = numeric_grad(loss_of, wn)
    loss_of(wn)
    np.testing.assert_allclose(to_np(w.grad), ref_w, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("args,match", [
    (dict(cutoffs=[]), "length larger than 0"),
    (dict(cutoffs=[5, 3]), r"sorted.*\[5, 3\]"),
    (dict(cutoffs=[4, 30]), "n_classes=30"),
])
def test_adaptive_softmax_constructor_errors(args, match):
    with pytest.raises(ValueError, match=match):
        nn.AdaptiveLogSoftmaxWithLoss(12, 30, **args)


def test_adaptive_softmax_input_errors(rng):
    m = make_asm()
    x = sx.tensor(rng.standard_normal((4, 12)))
    with pytest.raises(ValueError, match=r"AdaptiveLogSoftmaxWithLoss.*\[0, 29\].*\[0, 30\]"):
        m(x, sx.tensor(np.array([0, 30, 2, 3])))
    with pytest.raises(ValueError, match=r"AdaptiveLogSoftmaxWithLoss.*\(4, 12\) and \(3,\)"):
        m(x, sx.tensor(np.array([0, 1, 2])))
    with pytest.raises(TypeError, match="AdaptiveLogSoftmaxWithLoss.*float64"):
        m(x, sx.tensor(np.zeros(4)))


def test_linear_cross_entropy_loss_module(rng):
    sx.manual_seed(1)
    m = nn.LinearCrossEntropyLoss(5, 7, bias=True, dtype=sx.float64, weight=sx.tensor(rng.random(7)),
                                  label_smoothing=0.1)
    assert sorted(m.state_dict()) == ["linear.bias", "linear.weight", "weight"]
    x, y = rng.standard_normal((6, 5)), rng.integers(0, 7, 6)
    ref = nn.CrossEntropyLoss(weight=m.weight, label_smoothing=0.1)(m.linear(sx.tensor(x)), sx.tensor(y))
    np.testing.assert_allclose(to_np(m(sx.tensor(x), sx.tensor(y))), to_np(ref), rtol=1e-12)
    k = nn.LinearCrossEntropyLoss(5, 4, out_features=(3,), dtype=sx.float64, reduction="none")
    assert tuple(k.linear.weight.shape) == (12, 5) and tuple(k(sx.tensor(x), sx.tensor(y % 4)[:, None].expand(
        (6, 3)).contiguous()).shape) == (6, 3)
    c = nn.LinearCrossEntropyLoss(5, 7, dtype=sx.float64, options=nn.LinearCrossEntropyOptions(batch_chunk_size=4))
    c.load_state_dict({"linear.weight": m.linear.weight.detach()})
    plain = nn.CrossEntropyLoss()(sx.tensor(x) @ m.linear.weight.detach().t(), sx.tensor(y))
    np.testing.assert_allclose(to_np(c(sx.tensor(x), sx.tensor(y))), to_np(plain), rtol=1e-12)
    with pytest.raises(ValueError, match=r"LinearCrossEntropyLoss.*\(7,\).*\(6,\)"):
        nn.LinearCrossEntropyLoss(5, 7, weight=sx.ones(6))
    with pytest.raises(ValueError, match="batch_chunk_size"):
        nn.LinearCrossEntropyOptions(batch_chunk_size=0)
    with pytest.raises(ValueError, match="chunking_method"):
        nn.LinearCrossEntropyOptions(chunking_method="rows:3")


@pytest.mark.parity
def test_adaptive_softmax_loads_torch_state_dict_and_matches(rng):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    tm = torch.nn.AdaptiveLogSoftmaxWithLoss(12, 30, [4, 11, 20], div_value=2.0, head_bias=True).double()
    m = nn.AdaptiveLogSoftmaxWithLoss(12, 30, [4, 11, 20], div_value=2.0, head_bias=True, dtype=sx.float64)
    assert list(m.state_dict()) == list(tm.state_dict())
    m.load_state_dict({k: sx.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x, y = rng.standard_normal((23, 12)), rng.integers(0, 30, 23)
    tx, sxx = torch.tensor(x, requires_grad=True), sx.tensor(x, requires_grad=True)
    tout, sout = tm(tx, torch.tensor(y)), m(sxx, sx.tensor(y))
    np.testing.assert_allclose(to_np(sout.output), tout.output.detach().numpy(), rtol=1e-12)
    (tout.loss + tout.output[::3].sum()).backward()
    (sout.loss + sout.output[::3].sum()).backward()
    np.testing.assert_allclose(to_np(sxx.grad), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for (name, p), tp in zip(m.named_parameters(), tm.parameters()):
        np.testing.assert_allclose(to_np(p.grad), tp.grad.numpy(), rtol=1e-10, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(to_np(m.log_prob(sx.tensor(x))), tm.log_prob(torch.tensor(x)).detach().numpy(),
                               rtol=1e-12)
    np.testing.assert_array_equal(to_np(m.predict(sx.tensor(x))), tm.predict(torch.tensor(x)).numpy())


@pytest.mark.parity
@pytest.mark.parametrize("chunked", [False, True])
def test_linear_cross_entropy_loss_matches_torch(rng, chunked):
    torch = pytest.importorskip("torch")
    tm = torch.nn.LinearCrossEntropyLoss(6, 9, bias=True, dtype=torch.float64, weight=torch.rand(9).double())
    opts = nn.LinearCrossEntropyOptions(batch_chunk_size=5) if chunked else None
    m = nn.LinearCrossEntropyLoss(6, 9, bias=True, dtype=sx.float64, weight=sx.zeros(9, dtype=sx.float64),
                                  options=opts)
    m.load_state_dict({k: sx.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    x, y = rng.standard_normal((13, 6)), rng.integers(0, 9, 13)
    tl, sl = tm(torch.tensor(x), torch.tensor(y)), m(sx.tensor(x), sx.tensor(y))
    np.testing.assert_allclose(to_np(sl), tl.detach().numpy(), rtol=1e-12)
    tl.backward()
    sl.backward()
    np.testing.assert_allclose(to_np(m.linear.weight.grad), tm.linear.weight.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_np(m.linear.bias.grad), tm.linear.bias.grad.numpy(), rtol=1e-10, atol=1e-12)
