"""Parity with torch.nn: same weights (through state_dict, via NumPy), same outputs and gradients."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import to_np

torch = pytest.importorskip("torch")
tnn = torch.nn
pytestmark = pytest.mark.parity


def copy_weights(src, dst):
    """Loads the sneppx module ``src``'s state_dict into the torch module ``dst`` (strict)."""
    dst.load_state_dict({k: torch.from_numpy(to_np(v)) for k, v in src.state_dict().items()}, strict=True)


def run_both(ours, theirs, arrays, extra=None, tol=1e-9):
    """Runs both modules on the same inputs; compares outputs, input grads and parameter grads."""
    extra = extra or {}
    copy_weights(ours, theirs)
    xs, ts = [], []
    for a in arrays:
        floating = a.dtype.kind == "f"
        xs.append(sx.Tensor(a, requires_grad=floating))
        ts.append(torch.tensor(a, requires_grad=floating))
    out_s, out_t = ours(*xs, **extra.get("sx", {})), theirs(*ts, **extra.get("torch", {}))
    if isinstance(out_t, tuple):
        out_s, out_t = out_s[0], out_t[0]
    np.testing.assert_allclose(to_np(out_s), out_t.detach().numpy(), rtol=tol, atol=tol)
    r = np.random.default_rng(5).standard_normal(tuple(out_t.shape))
    (out_s * sx.Tensor(r)).sum().backward()
    (out_t * torch.from_numpy(r)).sum().backward()
    for x, t in zip(xs, ts):
        if t.requires_grad:
            np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=tol * 100, atol=tol * 100)
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(to_np(p.grad), tparams[name].grad.numpy(), rtol=tol * 100, atol=tol * 100,
                                   err_msg=name)


F64 = {"dtype": sx.float64}
LAYERS = [
    ("linear", lambda: nn.Linear(5, 3, **F64), lambda: tnn.Linear(5, 3), [(2, 4, 5)]),
    ("linear_nobias", lambda: nn.Linear(5, 3, bias=False, **F64), lambda: tnn.Linear(5, 3, bias=False), [(4, 5)]),
    ("bilinear", lambda: nn.Bilinear(3, 4, 2, **F64), lambda: tnn.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
    ("layernorm", lambda: nn.LayerNorm(6, **F64), lambda: tnn.LayerNorm(6), [(3, 6)]),
    ("layernorm_nobias", lambda: nn.LayerNorm((2, 3), bias=False, **F64), lambda: tnn.LayerNorm((2, 3), bias=False),
     [(4, 2, 3)]),
    ("layernorm_noaffine", lambda: nn.LayerNorm(6, elementwise_affine=False, **F64),
     lambda: tnn.LayerNorm(6, elementwise_affine=False), [(3, 6)]),
    ("rmsnorm", lambda: nn.RMSNorm(6, **F64), lambda: tnn.RMSNorm(6), [(3, 6)]),
    ("rmsnorm_eps", lambda: nn.RMSNorm(6, eps=1e-3, **F64), lambda: tnn.RMSNorm(6, eps=1e-3), [(3, 6)]),
    ("dropout_eval", lambda: nn.Dropout(0.5).eval(), lambda: tnn.Dropout(0.5).eval(), [(3, 4)]),
    ("identity", lambda: nn.Identity(), lambda: tnn.Identity(), [(3, 4)]),
    ("flatten", lambda: nn.Flatten(), lambda: tnn.Flatten(), [(2, 3, 4)]),
    ("unflatten", lambda: nn.Unflatten(1, (2, 2)), lambda: tnn.Unflatten(1, (2, 2)), [(3, 4)]),
    ("gelu", lambda: nn.GELU(), lambda: tnn.GELU(), [(3, 4)]),
    ("gelu_tanh", lambda: nn.GELU("tanh"), lambda: tnn.GELU("tanh"), [(3, 4)]),
    ("relu", lambda: nn.ReLU(), lambda: tnn.ReLU(), [(3, 4)]),
    ("silu", lambda: nn.SiLU(), lambda: tnn.SiLU(), [(3, 4)]),
    ("tanh", lambda: nn.Tanh(), lambda: tnn.Tanh(), [(3, 4)]),
    ("sigmoid", lambda: nn.Sigmoid(), lambda: tnn.Sigmoid(), [(3, 4)]),
    ("softmax", lambda: nn.Softmax(dim=0), lambda: tnn.Softmax(dim=0), [(3, 4)]),
    ("logsoftmax", lambda: nn.LogSoftmax(dim=-1), lambda: tnn.LogSoftmax(dim=-1), [(3, 4)]),
    ("leakyrelu", lambda: nn.LeakyReLU(0.1), lambda: tnn.LeakyReLU(0.1), [(3, 4)]),
    ("sequential", lambda: nn.Sequential(nn.Linear(4, 8, **F64), nn.GELU(), nn.Linear(8, 2, **F64)),
     lambda: tnn.Sequential(tnn.Linear(4, 8), tnn.GELU(), tnn.Linear(8, 2)), [(5, 4)]),
]


@pytest.mark.parametrize("name,make_ours,make_theirs,shapes", LAYERS, ids=[c[0] for c in LAYERS])
def test_layer_parity(name, make_ours, make_theirs, shapes):
    rng = np.random.default_rng(0)
    ours, theirs = make_ours(), make_theirs().double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    with sx.no_grad():  # non-trivial norm parameters
        for p in ours.parameters():
            p.copy_(p + sx.Tensor(rng.standard_normal(p.shape) * 0.1).to(p.dtype))
    run_both(ours, theirs, [rng.standard_normal(s) for s in shapes])


@pytest.mark.parametrize("kwargs", [{"padding_idx": 2}, {"max_norm": 1.0}, {"max_norm": 0.5, "norm_type": 1.0},
                                    {"scale_grad_by_freq": True, "padding_idx": 0}])
def test_embedding_parity(kwargs):
    ours, theirs = nn.Embedding(7, 3, **kwargs, **F64), tnn.Embedding(7, 3, **kwargs).double()
    ids = np.array([[0, 2, 6], [2, 1, 1]])
    copy_weights(ours, theirs)
    out_s, out_t = ours(sx.Tensor(ids)), theirs(torch.from_numpy(ids))
    np.testing.assert_allclose(to_np(out_s), out_t.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(to_np(ours.weight), theirs.weight.detach().numpy(), rtol=1e-12)  # renormed rows
    r = np.random.default_rng(1).standard_normal((2, 3, 3))
    (out_s * sx.Tensor(r)).sum().backward()
    (out_t * torch.from_numpy(r)).sum().backward()
    np.testing.assert_allclose(to_np(ours.weight.grad), theirs.weight.grad.numpy(), rtol=1e-12)


def test_guide_mlp_parity():
    class MLP(nn.Module):
        def __init__(self):
            super().__init__()
            self.net = nn.Sequential(nn.Linear(784, 256, **F64), nn.GELU(), nn.Linear(256, 10, **F64))

        def forward(self, x):
            return self.net(x.reshape((-1, 784)))

    class TorchMLP(tnn.Module):
        def __init__(self):
            super().__init__()
            self.net = tnn.Sequential(tnn.Linear(784, 256), tnn.GELU(), tnn.Linear(256, 10))

        def forward(self, x):
            return self.net(x.flatten(1))

    run_both(MLP(), TorchMLP().double(), [np.random.default_rng(2).standard_normal((8, 28, 28))])


MHA_CASES = [
    ("self", dict(), "self", {}),
    ("cross_seq_first", dict(), "cross", {}),
    ("batch_first_masks", dict(batch_first=True), "self", {"key_padding_mask": True, "attn_mask": "bool"}),
    ("float_mask", dict(batch_first=True), "self", {"attn_mask": "float"}),
    ("causal", dict(batch_first=True), "self", {"attn_mask": "causal", "is_causal": True}),
    ("kdim_vdim", dict(kdim=3, vdim=5), "kv", {}),
    ("bias_kv_zero_attn", dict(add_bias_kv=True, add_zero_attn=True), "self", {"key_padding_mask": True}),
    ("no_bias", dict(bias=False), "cross", {"per_head": True}),
]


def _mha_inputs(kind, batch_first, rng):
    L, S, B, E = 4, 6, 2, 8
    shape = (lambda n, e: (B, n, e)) if batch_first else (lambda n, e: (n, B, e))
    if kind == "self":
        x = rng.standard_normal(shape(L, E))
        return [x, x, x], L
    if kind == "cross":
        return [rng.standard_normal(shape(L, E)), rng.standard_normal(shape(S, E)), rng.standard_normal(shape(S, E))], S
    return [rng.standard_normal(shape(L, E)), rng.standard_normal(shape(S, 3)), rng.standard_normal(shape(S, 5))], S


def _mha_masks(opts, L, S, lib):
    out = {}
    if opts.get("key_padding_mask"):
        kpm = np.zeros((2, S), dtype=bool)
        kpm[0, -1] = kpm[1, 0] = True
        out["key_padding_mask"] = lib(kpm)
    kind = opts.get("attn_mask")
    if kind == "bool":
        out["attn_mask"] = lib(np.eye(L, S, 2, dtype=bool))
    elif kind == "float":
        out["attn_mask"] = lib(np.random.default_rng(3).standard_normal((L, S)))
    elif kind == "causal":
        out["attn_mask"] = lib(np.triu(np.ones((L, S), dtype=bool), 1))
    if opts.get("is_causal"):
        out["is_causal"] = True
    if opts.get("per_head"):
        out["average_attn_weights"] = False
    return out


@pytest.mark.parametrize("need_weights", [True, False])
@pytest.mark.parametrize("name,kwargs,kind,opts", MHA_CASES, ids=[c[0] for c in MHA_CASES])
def test_multihead_attention_parity(name, kwargs, kind, opts, need_weights):
    rng = np.random.default_rng(4)
    ours, theirs = nn.MultiheadAttention(8, 2, **kwargs, **F64), tnn.MultiheadAttention(8, 2, **kwargs).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    arrays, S = _mha_inputs(kind, kwargs.get("batch_first", False), rng)
    copy_weights(ours, theirs)
    sx_in = [sx.Tensor(a, requires_grad=True) for a in arrays]
    t_in = [torch.tensor(a, requires_grad=True) for a in arrays]
    if kind == "self":
        sx_in, t_in = [sx_in[0]] * 3, [t_in[0]] * 3
    so, sw = ours(*sx_in, need_weights=need_weights, **_mha_masks(opts, 4, S, lambda a: sx.Tensor(a)))
    to_, tw = theirs(*t_in, need_weights=need_weights, **_mha_masks(opts, 4, S, torch.from_numpy))
    np.testing.assert_allclose(to_np(so), to_.detach().numpy(), rtol=1e-9, atol=1e-10)
    if need_weights:
        np.testing.assert_allclose(to_np(sw), tw.detach().numpy(), rtol=1e-9, atol=1e-10)
    so.sum().backward()
    to_.sum().backward()
    for a, b in zip(sx_in, t_in):
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=1e-8, atol=1e-9)
    tparams = dict(theirs.named_parameters())
    for pname, p in ours.named_parameters():
        np.testing.assert_allclose(to_np(p.grad), tparams[pname].grad.numpy(), rtol=1e-8, atol=1e-9, err_msg=pname)


@pytest.mark.parametrize("norm_first,activation", [(True, "gelu"), (False, "relu")])
def test_transformer_block_vs_encoder_layer(norm_first, activation):
    rng = np.random.default_rng(6)
    ours = nn.TransformerBlock(8, 2, d_ff=16, activation=activation, norm_first=norm_first, **F64)
    theirs = tnn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, activation=activation, batch_first=True,
                                         norm_first=norm_first).double()
    x = rng.standard_normal((2, 5, 8))
    causal = np.triu(np.ones((5, 5), dtype=bool), 1)
    run_both(ours, theirs, [x])
    ours.zero_grad()
    theirs.zero_grad()
    run_both(ours, theirs, [x], extra={"sx": {"attn_mask": sx.Tensor(causal)},
                                       "torch": {"src_mask": torch.from_numpy(causal)}})


class TorchGPT(tnn.Module):
    """The equivalent of ``sneppx_nn.Transformer`` (learned positions, layernorm, tied head) in torch."""

    def __init__(self, vocab, d, heads, layers, max_len, d_ff, dtype):
        super().__init__()
        self.tok_emb = tnn.Embedding(vocab, d, dtype=dtype)
        self.pos_emb = tnn.Embedding(max_len, d, dtype=dtype)
        self.blocks = tnn.ModuleList(
            tnn.TransformerEncoderLayer(d, heads, d_ff, dropout=0.0, activation="gelu", batch_first=True,
                                        norm_first=True, dtype=dtype) for _ in range(layers))
        self.norm_f = tnn.LayerNorm(d, dtype=dtype)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.tok_emb(ids) + self.pos_emb(torch.arange(t))
        mask = tnn.Transformer.generate_square_subsequent_mask(t, dtype=x.dtype)
        for blk in self.blocks:
            x = blk(x, src_mask=mask, is_causal=True)
        return self.norm_f(x) @ self.tok_emb.weight.T


def _gpt_pair(dtype_sx, dtype_t):
    sx.manual_seed(0)
    ours = nn.Transformer(64, 32, 4, 2, d_ff=64, max_seq_len=16, dtype=dtype_sx)
    theirs = TorchGPT(64, 32, 4, 2, 16, 64, dtype_t)
    assert sorted(ours.state_dict()) == sorted(theirs.state_dict())
    return ours, theirs


def test_transformer_lm_parity_logits_and_all_grads():
    ours, theirs = _gpt_pair(sx.float32, torch.float32)
    copy_weights(ours, theirs)
    ids = np.random.default_rng(7).integers(0, 64, (3, 12))
    inputs, targets = ids[:, :-1], ids[:, 1:]
    logits_s = ours(sx.Tensor(inputs))
    logits_t = theirs(torch.from_numpy(inputs))
    np.testing.assert_allclose(to_np(logits_s), logits_t.detach().numpy(), rtol=1e-4, atol=1e-5)
    loss_s = nn.CrossEntropyLoss()(logits_s.reshape((-1, 64)), sx.Tensor(targets.reshape(-1)))
    loss_t = tnn.CrossEntropyLoss()(logits_t.reshape(-1, 64), torch.from_numpy(targets.reshape(-1)))
    assert abs(loss_s.item() - loss_t.item()) < 1e-5
    loss_s.backward()
    loss_t.backward()
    tparams = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        np.testing.assert_allclose(to_np(p.grad), tparams[name].grad.numpy(), rtol=1e-3, atol=2e-6, err_msg=name)


def test_load_pytorch_safetensors_into_transformer(tmp_path):
    from safetensors.torch import save_file

    ours, theirs = _gpt_pair(sx.float32, torch.float32)
    path = tmp_path / "torch_gpt.safetensors"
    save_file(theirs.state_dict(), str(path))
    ours.load_checkpoint(path)
    ids = np.random.default_rng(8).integers(0, 64, (2, 9))
    with torch.no_grad():
        expected = theirs.eval()(torch.from_numpy(ids)).numpy()
    np.testing.assert_allclose(to_np(ours.eval()(sx.Tensor(ids))), expected, rtol=1e-4, atol=1e-5)


def test_pytorch_loads_sneppx_transformer_checkpoint(tmp_path):
    from safetensors.torch import load_file

    ours, theirs = _gpt_pair(sx.float32, torch.float32)
    path = tmp_path / "ours.safetensors"
    ours.save_checkpoint(path)
    theirs.load_state_dict(load_file(str(path)))
    ids = np.random.default_rng(9).integers(0, 64, (2, 9))
    with torch.no_grad():
        expected = theirs.eval()(torch.from_numpy(ids)).numpy()
    np.testing.assert_allclose(to_np(ours.eval()(sx.Tensor(ids))), expected, rtol=1e-4, atol=1e-5)


def test_parameter_containers_match_torch():
    """A module holding ParameterList and ParameterDict: the same state_dict keys and gradients as torch's
    after loading the same values, and ParameterList's repr."""
    class Net:
        def __init__(self, m, lib):
            class N(m.Module):
                def __init__(self):
                    super().__init__()
                    self.ws = m.ParameterList([m.Parameter(lib.ones(2, 3)), m.Parameter(lib.ones(3, 3))])
                    self.bs = m.ParameterDict({"first": m.Parameter(lib.zeros(3)), "second": m.Parameter(lib.zeros(3))})

                def forward(self, x):
                    return (x @ self.ws[0] + self.bs["first"]).tanh() @ self.ws[1] + self.bs["second"]
            self.net = N()
    ours, theirs = Net(nn, sx).net, Net(tnn, torch).net
    rng = np.random.default_rng(3)
    state = {k: rng.standard_normal(tuple(v.shape)) for k, v in theirs.state_dict().items()}
    assert list(ours.state_dict()) == list(state)
    ours.load_state_dict({k: sx.tensor(v.astype(np.float32)) for k, v in state.items()})
    theirs.load_state_dict({k: torch.from_numpy(v.astype(np.float32)) for k, v in state.items()})
    x = rng.standard_normal((4, 2)).astype(np.float32)
    ours(sx.tensor(x)).sum().backward()
    theirs(torch.from_numpy(x)).sum().backward()
    for (k, a), (_, b) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)
    assert repr(ours.ws).replace("float32", "torch.float32") == repr(theirs.ws)
