"""sneppx_nn.utils: conv/linear + batch-norm fusion, get_total_norm, clip_grads_with_norm_ and
functional_call (values, gradients, errors, parity with torch)."""

import math

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import to_np

U = nn.utils


def _trained_bn(bn, shape):
    for _ in range(3):
        bn(sx.randn(*shape) * 2 + 1)
    with sx.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
    return bn.eval()


@pytest.mark.parametrize("conv,bn,shape,transpose", [
    (lambda: nn.Conv2d(3, 4, 3, padding=1), lambda: nn.BatchNorm2d(4), (2, 3, 5, 5), False),
    (lambda: nn.Conv1d(3, 4, 3, bias=False), lambda: nn.BatchNorm1d(4), (2, 3, 7), False),
    (lambda: nn.ConvTranspose2d(3, 4, 3), lambda: nn.BatchNorm2d(4), (2, 3, 4, 4), True),
])
def test_fuse_conv_bn_eval_matches_conv_then_bn(conv, bn, shape, transpose):
    conv, bn = conv().eval(), bn()
    x = sx.randn(*shape)
    bn = _trained_bn(bn, tuple(conv(x).shape))
    fused = U.fuse_conv_bn_eval(conv, bn, transpose=transpose)
    assert fused is not conv and isinstance(fused.bias, nn.Parameter)
    np.testing.assert_allclose(to_np(fused(x)), to_np(bn(conv(x))), rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match=r"\[fuse_conv_bn_eval\] fusion is only for eval mode"):
        U.fuse_conv_bn_eval(conv.train(), bn)


def test_fuse_linear_bn_eval_and_weights():
    lin, bn = nn.Linear(3, 4).eval(), nn.BatchNorm1d(4)
    x = sx.randn(5, 3)
    bn = _trained_bn(bn, (8, 4))
    fused = U.fuse_linear_bn_eval(lin, bn)
    np.testing.assert_allclose(to_np(fused(x)), to_np(bn(lin(x))), rtol=1e-5, atol=1e-6)
    w, b = U.fuse_linear_bn_weights(lin.weight, None, bn.running_mean, bn.running_var, bn.eps, None, None)
    s = 1 / np.sqrt(to_np(bn.running_var) + bn.eps)
    np.testing.assert_allclose(to_np(w), to_np(lin.weight) * s[:, None], rtol=1e-6)
    np.testing.assert_allclose(to_np(b), -to_np(bn.running_mean) * s, rtol=1e-6)
    with pytest.raises(ValueError, match=r"\[fuse_linear_bn_eval\] linear.out_features \(4\)"):
        U.fuse_linear_bn_eval(lin, _trained_bn(nn.BatchNorm1d(3), (4, 3)))
    with pytest.raises(ValueError, match=r"\[fuse_conv_bn_weights\].*\(4, 3\)"):
        U.fuse_conv_bn_weights(lin.weight, None, bn.running_mean, bn.running_var, 1e-5, None, None)


def test_get_total_norm_and_clip_grads_with_norm():
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal(5)
    ts = [sx.tensor(a), sx.tensor(b)]
    allv = np.concatenate([a.ravel(), b])
    for q in [2.0, 1.0, 3.5, math.inf, "inf"]:
        qq = math.inf if q == "inf" else q
        want = np.abs(allv).max() if qq == math.inf else (np.abs(allv) ** qq).sum() ** (1 / qq)
        assert U.get_total_norm(ts, q).item() == pytest.approx(want, rel=1e-12)
    assert U.get_total_norm(ts, 0).item() == 2  # as PyTorch: the 0-"norm" of the per-tensor norms
    assert U.get_total_norm([]).item() == 0.0 and U.get_total_norm(ts[1]).item() == pytest.approx(np.linalg.norm(b))
    with pytest.raises(RuntimeError, match=r"\[get_total_norm\]"):
        U.get_total_norm([sx.tensor([1.0, math.inf])], error_if_nonfinite=True)
    with pytest.raises(ValueError, match=r"\[get_total_norm\] norm_type"):
        U.get_total_norm(ts, -1)
    ps = [nn.Parameter(sx.zeros(3, 4)), nn.Parameter(sx.zeros(5)), nn.Parameter(sx.zeros(2))]
    ps[0].grad, ps[1].grad = sx.tensor(a, dtype=sx.float32), sx.tensor(b, dtype=sx.float32)
    total = U.get_total_norm([p.grad for p in ps if p.grad is not None])
    U.clip_grads_with_norm_(ps, 1.0, total)
    assert U.get_total_norm([ps[0].grad, ps[1].grad]).item() == pytest.approx(1.0, rel=1e-5)
    U.clip_grads_with_norm_(ps, 10.0, 1.0)  # coefficient capped at 1: unchanged
    assert U.get_total_norm([ps[0].grad, ps[1].grad]).item() == pytest.approx(1.0, rel=1e-5)
    with pytest.raises(TypeError, match=r"\[clip_grads_with_norm_\] total_norm"):
        U.clip_grads_with_norm_(ps, 1.0, sx.ones(2))


class TwoLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.bn = nn.Linear(3, 4), nn.BatchNorm1d(4)
        self.b = nn.Linear(4, 3)
        self.b.weight = nn.Parameter(sx.randn(3, 4))

    def forward(self, x, scale=1.0):
        return self.b(self.bn(self.a(x)).tanh()) * scale


def test_functional_call_uses_given_tensors_and_leaves_module_unchanged():
    m = TwoLayer()
    before = {k: to_np(v) for k, v in m.state_dict().items()}
    x = sx.randn(6, 3)
    new = {k: (v.detach() * 0.5).requires_grad_(True) if v.is_floating_point() else v.detach().clone()
           for k, v in m.state_dict().items()}
    ref = TwoLayer()
    ref.load_state_dict(new)
    y = U.stateless.functional_call(m, new, (x,), {"scale": 2.0})
    np.testing.assert_allclose(to_np(y), to_np(ref(x, scale=2.0)), rtol=1e-5, atol=1e-6)
    y.sum().backward()
    assert new["a.weight"].grad is not None and m.a.weight.grad is None
    np.testing.assert_allclose(to_np(new["bn.running_mean"]), to_np(ref.bn.running_mean), rtol=1e-5)  # updated
    for k, v in m.state_dict().items():
        np.testing.assert_array_equal(to_np(v), before[k])
    part = U.stateless.functional_call(m, {"b.bias": sx.zeros(3)}, x)  # a single argument, not a tuple
    assert part.shape == (6, 3) and to_np(m.b.bias).any()
    with pytest.raises(RuntimeError, match=r"Missing key\(s\): 'a.bias'"):
        U.stateless.functional_call(m, {"b.bias": sx.zeros(3)}, x, strict=True)
    with pytest.raises(ValueError, match="appeared in multiple dictionaries"):
        U.stateless.functional_call(m, ({"b.bias": sx.zeros(3)}, {"b.bias": sx.zeros(3)}), x)
    with pytest.raises(TypeError, match=r"\[functional_call\] the value for 'b.bias' is a int"):
        U.stateless.functional_call(m, {"b.bias": 3}, x)


def test_functional_call_ties_shared_weights():
    first, second = nn.Linear(2, 2, bias=False), nn.Linear(2, 2, bias=False)
    second.weight = first.weight  # one Parameter under two names
    seq = nn.Sequential(first, nn.Tanh(), second)
    w = sx.eye(2) * 0.5
    x = sx.randn(3, 2)
    y = U.stateless.functional_call(seq, {"0.weight": w}, x)
    np.testing.assert_allclose(to_np(y), to_np((x * 0.5).tanh() * 0.5), rtol=1e-6)
    y2 = U.stateless.functional_call(seq, {"0.weight": w}, x, tie_weights=False)
    np.testing.assert_allclose(to_np(y2), to_np(second((x * 0.5).tanh())), rtol=1e-6)
    assert seq[2].weight is seq[0].weight
    with pytest.raises(ValueError, match="which are tied"):
        U.stateless.functional_call(seq, {"0.weight": w, "2.weight": w * 2}, x)


@pytest.mark.parity
def test_fusion_and_functional_call_parity_with_torch():
    torch = pytest.importorskip("torch")
    tc, tb = torch.nn.Conv2d(3, 4, 3).double().eval(), torch.nn.BatchNorm2d(4).double()
    tb.running_mean.uniform_(-1, 1)
    tb.running_var.uniform_(0.5, 2)
    with torch.no_grad():
        tb.weight.uniform_(0.5, 1.5)
        tb.bias.uniform_(-1, 1)
    tb.eval()
    c, b = nn.Conv2d(3, 4, 3, dtype=sx.float64).eval(), nn.BatchNorm2d(4, dtype=sx.float64).eval()
    c.load_state_dict({k: v.detach().numpy() for k, v in tc.state_dict().items()})
    b.load_state_dict({k: v.detach().numpy() for k, v in tb.state_dict().items()})  # 0-d num_batches_tracked too
    tf, f = torch.nn.utils.fuse_conv_bn_eval(tc, tb), U.fuse_conv_bn_eval(c, b)
    np.testing.assert_allclose(to_np(f.weight), tf.weight.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_np(f.bias), tf.bias.detach().numpy(), rtol=1e-12)
    x = np.random.default_rng(0).standard_normal((2, 3, 6, 6))
    np.testing.assert_allclose(to_np(f(sx.tensor(x))), tb(tc(torch.tensor(x))).detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    ps = [torch.tensor(x[0, 0]), torch.tensor(x[1, 1, :2])]
    for q in [2.0, 1.5, math.inf, 0]:
        assert U.get_total_norm([sx.tensor(p.numpy()) for p in ps], q).item() == pytest.approx(
            torch.nn.utils.get_total_norm(ps, q).item(), rel=1e-12)
    w = torch.randn(4, 3, 3, 3, dtype=torch.float64)
    ty = torch.func.functional_call(tc, {"weight": w}, torch.tensor(x))
    y = U.stateless.functional_call(c, {"weight": sx.tensor(w.numpy())}, sx.tensor(x))
    np.testing.assert_allclose(to_np(y), ty.detach().numpy(), rtol=1e-12)


def test_load_state_dict_accepts_0d_numpy_arrays():
    bn = nn.BatchNorm1d(3)
    state = {k: to_np(v) for k, v in bn.state_dict().items()}
    state["num_batches_tracked"] = np.array(7, dtype=np.int64)
    bn.load_state_dict(state)
    assert bn.num_batches_tracked.shape == () and bn.num_batches_tracked.item() == 7
