"""PyTorch's top-level names added by ``_torch_reach``, ``_torch_rnn`` and ``_torch_nn_forms``: the default
device and tensor type, device modules, histogramdd, ormqr, the functional RNNs (lstm, gru, rnn_tanh, rnn_relu),
embedding_bag, affine_grid_generator and grid_sampler_2d/3d, against NumPy references and against torch's
functions called with the same positional arguments."""

from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import sneppx_core as sx
from opcheck import matches_torch

RNG = np.random.default_rng(53)
NEW = ["set_default_device", "get_default_device", "set_default_tensor_type", "init_num_threads",
       "get_device_module", "is_distributed", "histogramdd", "ormqr", "lstm", "gru", "rnn_tanh", "rnn_relu",
       "embedding_bag", "affine_grid_generator", "grid_sampler_2d", "grid_sampler_3d"]


def _np(t):
    return t.detach().numpy()


def _seed(shape):
    return np.random.default_rng(11).standard_normal(shape)


@pytest.fixture
def restore_device():
    yield
    sx.set_default_device(None)


def test_names_are_exported_with_docs():
    for name in NEW:
        assert name in sx.__all__ and getattr(sx, name).__doc__, name
    assert sx.Tensor.ormqr.__doc__ and sx.Tensor.is_distributed.__doc__
    assert not hasattr(sx.Tensor, "histogramdd")  # a function only, as in PyTorch
    assert sx.embedding_bag is not sx.functional.embedding_bag


# ---------------------------------------------------------------- default device
def test_default_device_defaults_to_cpu(restore_device):
    assert sx.get_default_device() == sx.Device("cpu")
    sx.set_default_device("cpu")
    assert sx.get_default_device() == sx.Device("cpu") and sx.zeros(2).device.type == "cpu"
    sx.set_default_device(sx.Device("cpu"))
    assert sx.tensor([1.0]).device.type == "cpu"
    sx.set_default_device(None)
    assert sx.get_default_device() == sx.Device("cpu")


_FACTORIES = [lambda: sx.zeros(2), lambda: sx.ones(2), lambda: sx.empty(2), lambda: sx.full((2,), 1.0),
              lambda: sx.arange(3), lambda: sx.linspace(0, 1, 3), lambda: sx.logspace(0, 1, 3), lambda: sx.eye(2),
              lambda: sx.rand(2), lambda: sx.randn(2), lambda: sx.randint(0, 3, (2,)), lambda: sx.randperm(3),
              lambda: sx.tensor([1.0]), lambda: sx.as_tensor([1.0]), lambda: sx.asarray([1.0]),
              lambda: sx.scalar_tensor(1.0), lambda: sx.tril_indices(3, 3), lambda: sx.hann_window(4)]


@pytest.mark.skipif(sx.cuda.is_available(), reason="checks a build or machine without CUDA")
def test_default_cuda_raises_at_factory_time(restore_device):
    sx.set_default_device("cuda")  # accepted, as PyTorch
    assert sx.get_default_device() == sx.Device("cuda:0")
    for make in _FACTORIES:
        with pytest.raises(RuntimeError, match="CUDA"):
            make()
    x = np.zeros(2, np.float32)  # forms that do not take the default
    assert sx.from_numpy(x).device.type == "cpu" and sx.FloatTensor(2).device.type == "cpu"
    assert sx.Tensor([1.0]).device.type == "cpu"
    assert sx.zeros(2, device="cpu").device.type == "cpu"
    sx.set_default_device(None)
    assert all(make().device.type == "cpu" for make in _FACTORIES)


def test_default_device_is_per_thread(restore_device):
    sx.set_default_device("cuda")
    seen = []
    worker = threading.Thread(target=lambda: seen.append((sx.get_default_device(), sx.zeros(1).device.type)))
    worker.start()
    worker.join()
    assert seen == [(sx.Device("cpu"), "cpu")]


def test_set_default_device_errors(restore_device):
    with pytest.raises(ValueError, match=r"\[set_default_device\]"):
        sx.set_default_device("foo")
    with pytest.raises(TypeError, match=r"\[set_default_device\] expected a device"):
        sx.set_default_device(1.5)
    if not sx._HAS_CUDA:
        with pytest.raises(RuntimeError, match=r"\[set_default_device\] an int names an accelerator"):
            sx.set_default_device(0)
    assert sx.get_default_device() == sx.Device("cpu")


def test_set_default_tensor_type(restore_device):
    for t in ("torch.FloatTensor", "sneppx.FloatTensor", sx.FloatTensor):
        with pytest.warns(UserWarning, match="deprecated"):
            sx.set_default_tensor_type(t)
        assert sx.get_default_dtype() == sx.float32 and sx.get_default_device() == sx.Device("cpu")
    for t in ("torch.LongTensor", sx.LongTensor, sx.BoolTensor):
        with pytest.raises(TypeError, match="only floating-point types"):
            sx.set_default_tensor_type(t)
    for t in ("foo", "FloatTensor", "torch.Float"):
        with pytest.raises(TypeError, match="unknown tensor type"):
            sx.set_default_tensor_type(t)
    with pytest.raises(TypeError, match="invalid type object"):
        sx.set_default_tensor_type(sx.float64)
    try:
        with pytest.warns(UserWarning, match="deprecated"):
            sx.set_default_tensor_type("torch.DoubleTensor")
        assert sx.get_default_dtype() == sx.float64 and sx.zeros(1).dtype == sx.float64
    finally:
        sx.set_default_dtype(sx.float32)
    if not sx._HAS_CUDA:
        with pytest.raises(TypeError, match="torch.cuda.FloatTensor is not available"):
            sx.set_default_tensor_type("torch.cuda.FloatTensor")


@pytest.mark.parity
def test_tensor_type_and_device_parity(torch):
    assert str(sx.get_default_device()) == str(torch.get_default_device()) == "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch warns on every call, even those that raise
        for t in ("torch.LongTensor", "torch.ByteTensor"):
            with pytest.raises(TypeError):
                torch.set_default_tensor_type(t)
            with pytest.raises(TypeError):
                sx.set_default_tensor_type(t)
        torch.set_default_tensor_type("torch.FloatTensor")
        sx.set_default_tensor_type("torch.FloatTensor")
    assert torch.zeros(1).dtype == torch.float32 and sx.zeros(1).dtype == sx.float32


# ---------------------------------------------------------------- small switches
def test_threads_device_modules_is_distributed():
    assert sx.init_num_threads() is None
    cpu = sx.get_device_module("cpu")
    assert cpu is sx.cpu and sx.get_device_module(sx.Device("cpu")) is cpu
    assert cpu.is_available() and cpu.device_count() == 1 and cpu.current_device() == "cpu"
    assert cpu.synchronize() is None and cpu.current_stream().record_event().query()
    with cpu.stream(cpu.current_stream()):
        pass
    assert sx.get_device_module("cuda") is sx.cuda and sx.get_device_module("cuda:1") is sx.cuda
    assert sx.get_device_module() is (sx.cpu if sx.accelerator.current_accelerator() is None else sx.cuda)
    with pytest.raises(ValueError, match=r"\[get_device_module\]"):
        sx.get_device_module("foo")
    with pytest.raises(TypeError, match=r"\[get_device_module\]"):
        sx.get_device_module(3)
    x = sx.zeros(2)
    assert sx.is_distributed(x) is False and x.is_distributed() is False
    with pytest.raises(TypeError, match=r"\[is_distributed\] expected input to be a Tensor"):
        sx.is_distributed([1.0])


@pytest.mark.parity
def test_device_module_parity(torch):
    for name in ("is_available", "device_count", "current_device", "is_initialized"):
        assert getattr(sx.get_device_module("cpu"), name)() == getattr(torch.get_device_module("cpu"), name)()
    assert torch.init_num_threads() is None and sx.init_num_threads() is None
    assert torch.is_distributed(torch.zeros(1)) is sx.is_distributed(sx.zeros(1)) is False


# ---------------------------------------------------------------- histogramdd
def test_histogramdd_against_numpy():
    x, w = RNG.standard_normal((40, 3)), RNG.random(40)
    rng = [-1.0, 1.0, -2.0, 2.0, 0.0, 1.5]
    hist, edges = sx.histogramdd(sx.tensor(x), [2, 3, 4], range=rng, weight=sx.tensor(w), density=True)
    ref, ref_edges = np.histogramdd(x, bins=[2, 3, 4], range=np.reshape(rng, (3, 2)), weights=w, density=True)
    np.testing.assert_allclose(_np(hist), ref, rtol=1e-12)
    for e, r in zip(edges, ref_edges):
        np.testing.assert_allclose(_np(e), r, rtol=1e-12, atol=1e-15)
    res = sx.histogramdd(sx.tensor(x.reshape(2, 20, 3)), 3)  # leading dims are flattened; range from the data
    assert res.hist.dtype == sx.float64 and tuple(res.hist.shape) == (3, 3, 3) and res.hist.sum().item() == 40
    for d, e in enumerate(res.bin_edges):
        assert e[0].item() == x[:, d].min() and e[-1].item() == x[:, d].max()


def test_histogramdd_edges_and_special_ranges():
    pts = sx.tensor([[0.0, 1.0], [1.0, 0.0], [2.0, 0.0], [2.0, 2.0]])
    hist, edges = sx.histogramdd(pts, [sx.tensor([0.0, 1.0, 2.0]), sx.tensor([0.0, 0.5, 2.5])])
    np.testing.assert_array_equal(_np(hist), [[0, 1], [2, 1]])  # the last bin is closed on the right
    assert hist.dtype == sx.float32 and [tuple(e.shape) for e in edges] == [(3,), (3,)]
    one = sx.histogramdd(sx.tensor([[5.0]]), 2)
    np.testing.assert_array_equal(_np(one.bin_edges[0]), [4.5, 5.0, 5.5])  # equal min and max widen by 0.5
    empty = sx.histogramdd(sx.zeros(0, 2), 2)
    assert _np(empty.hist).sum() == 0 and _np(empty.bin_edges[1]).tolist() == [0.0, 0.5, 1.0]


def test_histogramdd_errors():
    x = sx.randn(4, 2)
    cases = [((x.to(sx.int64), 2), {}, TypeError, "float32 or float64"),
             ((sx.randn(4), 2), {}, ValueError, "at least 2 dims"),
             ((x, [2]), {}, ValueError, "sequence of 2"),
             ((x, [2, 0]), {}, ValueError, "bins must be > 0"),
             ((x, 2), {"range": [0.0, 1.0]}, ValueError, "range must have 4"),
             ((x, 2), {"range": [1.0, 0.0, 0.0, 1.0]}, ValueError, r"dimension 0: max \(0.0\) must be >= min \(1.0\)"),
             ((x, 2), {"range": [0.0, float("inf"), 0.0, 1.0]}, ValueError, "not finite"),
             ((x, 2), {"weight": sx.ones(3)}, ValueError, "weight must have shape"),
             ((x, [sx.tensor([1.0, 0.0]), sx.tensor([0.0, 1.0])]), {}, ValueError, "increasing"),
             ((x, [sx.tensor([0.0]), sx.tensor([0.0, 1.0])]), {}, ValueError, "at least 2 values"),
             ((x, [sx.tensor([0.0, 1.0], dtype=sx.float64), sx.tensor([0.0, 1.0])]), {}, ValueError, "float32")]
    for args, kwargs, exc, msg in cases:
        with pytest.raises(exc, match=r"\[histogramdd\].*" + msg):
            sx.histogramdd(*args, **kwargs)
    with pytest.raises(ValueError, match="not finite"):
        sx.histogramdd(sx.tensor([[float("nan"), 1.0]]), 2)
    with pytest.raises(TypeError, match=r"\[histogramdd\] density must be a bool"):
        sx.histogramdd(x, 2, density=np.zeros(2))
    with pytest.raises(ValueError, match=r"\[histogramdd\] bins must be > 0 \(and < 2\*\*31\)"):
        sx.histogramdd(x, 2 ** 70)


@pytest.mark.parity
def test_histogramdd_parity(torch):
    x, w = RNG.standard_normal((60, 3)), RNG.random(60)
    edges = [np.array([-1.0, 0.0, 1.0]), np.array([-2.0, 0.5, 3.0]), np.array([0.0, 1.0])]
    for dt, tdt in ((sx.float64, torch.float64), (sx.float32, torch.float32)):
        runs = [((3,), {}), (([2, 3, 4],), {"range": [-1.0, 1.0, -2.0, 2.0, 0.0, 1.0]}),
                ((2,), {"weight": w, "density": True}), ((edges,), {})]
        for args, kwargs in runs:
            targs = [[torch.tensor(e, dtype=tdt) for e in a] if isinstance(a, list) and isinstance(a[0], np.ndarray)
                     else a for a in args]
            sargs = [[sx.tensor(e, dtype=dt) for e in a] if isinstance(a, list) and isinstance(a[0], np.ndarray)
                     else a for a in args]
            tk = {k: (torch.tensor(v, dtype=tdt) if k == "weight" else v) for k, v in kwargs.items()}
            sk = {k: (sx.tensor(v, dtype=dt) if k == "weight" else v) for k, v in kwargs.items()}
            th, te = torch.histogramdd(torch.tensor(x, dtype=tdt), *targs, **tk)
            sh, se = sx.histogramdd(sx.tensor(x, dtype=dt), *sargs, **sk)
            tol = 1e-12 if dt == sx.float64 else 1e-6
            np.testing.assert_allclose(_np(sh), th.numpy(), rtol=tol)
            for a, b in zip(se, te):
                np.testing.assert_allclose(_np(a), b.numpy(), rtol=tol, atol=tol)


# ---------------------------------------------------------------- ormqr
def _q_full(a, tau):
    """Q = H_1 ... H_r from geqrf's reflectors, in NumPy."""
    m, q = a.shape[0], np.eye(a.shape[0])
    for i in range(len(tau)):
        v = np.zeros(m)
        v[i], v[i + 1:] = 1.0, a[i + 1:, i]
        q = q @ (np.eye(m) - tau[i] * np.outer(v, v))
    return q


def test_ormqr_against_numpy():
    A = RNG.standard_normal((5, 3))
    a, tau = sx.geqrf(sx.tensor(A))
    q = _q_full(_np(a), _np(tau))
    c, c2 = RNG.standard_normal((5, 4)), RNG.standard_normal((4, 5))
    for left, trans, other, ref in [(True, False, c, q @ c), (True, True, c, q.T @ c),
                                    (False, False, c2, c2 @ q), (False, True, c2, c2 @ q.T)]:
        np.testing.assert_allclose(_np(sx.ormqr(a, tau, sx.tensor(other), left, trans)), ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(sx.ormqr(a, tau, sx.eye(5, dtype=sx.float64)))[:, :3] @ np.triu(_np(a))[:3],
                               A, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(_np(a.ormqr(tau, sx.tensor(c))), q @ c, rtol=1e-10, atol=1e-12)
    wide = sx.tensor(RNG.standard_normal((2, 3, 5)))  # k > mn: the first mn columns hold reflectors
    assert tuple(sx.ormqr(wide, sx.randn(2, 3, dtype=sx.float64), sx.randn(2, 3, 4, dtype=sx.float64)).shape) == \
        (2, 3, 4)


def test_ormqr_errors():
    a, tau, c = sx.randn(5, 3), sx.randn(3), sx.randn(5, 4)
    cases = [((a, tau, sx.randn(4, 5)), ValueError, r"other.shape\[-2\] == input.shape\[-2\]"),
             ((a, sx.randn(2), c), ValueError, r"tau.shape\[-1\] == min"),
             ((a, tau, c.to(sx.float64)), TypeError, "share a float32 or float64 dtype"),
             ((a.to(sx.int64), tau.to(sx.int64), c.to(sx.int64)), TypeError, "float32 or float64"),
             ((sx.randn(5), tau, c), ValueError, "expects input"),
             ((sx.randn(2, 5, 3), sx.randn(1, 3), sx.randn(2, 5, 4)), ValueError, "equal batch dims"),
             ((a, [1.0], c), TypeError, "expected input2 to be a Tensor")]
    for args, exc, msg in cases:
        with pytest.raises(exc, match=r"\[ormqr\].*" + msg):
            sx.ormqr(*args)
    with pytest.raises(ValueError, match=r"other.shape\[-1\]"):
        sx.ormqr(a, tau, c, left=False)
    with pytest.raises(TypeError, match=r"\[ormqr\] transpose must be a bool"):
        sx.ormqr(a, tau, c, True, "yes")


@pytest.mark.parity
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_parity_values_and_gradients(torch, left, transpose):
    a, tau = RNG.standard_normal((2, 5, 3)), RNG.standard_normal((2, 3))
    c = RNG.standard_normal((2, 5, 4) if left else (2, 4, 5))
    matches_torch(torch, lambda lib, x, t, o: lib.ormqr(x, t, o, left, transpose), [a, tau, c], _seed,
                  rtol=1e-10, atol=1e-12, grad_rtol=1e-9, grad_atol=1e-11, name=f"ormqr {left} {transpose}")


# ---------------------------------------------------------------- functional RNNs
def _rnn_params(mode, inp, hidden, layers, bidir, bias, proj=0):
    """Random flat weights in torch's order, shaped as torch.nn's (NumPy float64 arrays)."""
    gates, out, dirs, params = {"lstm": 4, "gru": 3}.get(mode, 1) * hidden, proj or hidden, 1 + bidir, []
    for j in range(layers * dirs):
        width = inp if j < dirs else out * dirs
        shapes = [(gates, width), (gates, out)] + ([(gates,), (gates,)] if bias else []) + ([(proj, hidden)] if proj
                                                                                           else [])
        params += [RNG.uniform(-0.6, 0.6, s) for s in shapes]
    return params


def _run_rnn(lib, mode, x, h, c, params, flags):
    hx = (h, c) if mode == "lstm" else h
    return getattr(lib, mode)(x, hx, params, *flags)


def _compare(torch, mode, x, h, c, params, flags, packed=None):
    """Values and gradients (of every input, state and weight) of sneppx and torch for the same call."""
    leaves = [x, h] + ([c] if mode == "lstm" else []) + params
    s_in = [sx.tensor(a, requires_grad=True) for a in leaves]
    t_in = [torch.tensor(a, requires_grad=True) for a in leaves]
    outs = []
    for lib, ins in ((sx, s_in), (torch, t_in)):
        cc = ins[2] if mode == "lstm" else None
        ps = ins[3:] if mode == "lstm" else ins[2:]
        if packed is None:
            outs.append(_run_rnn(lib, mode, ins[0], ins[1], cc, ps, flags))
        else:
            sizes = lib.tensor(packed)
            outs.append(getattr(lib, mode)(ins[0], sizes, (ins[1], cc) if mode == "lstm" else ins[1], ps, *flags))
    for k, (a, b) in enumerate(zip(*outs)):
        np.testing.assert_allclose(_np(a), b.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=f"{mode} out {k}")
    for lib, res in zip((sx, torch), outs):
        sum((r * lib.tensor(_seed(tuple(r.shape)) + k)).sum() for k, r in enumerate(res)).backward()
    for k, (a, b) in enumerate(zip(s_in, t_in)):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-9, atol=1e-11, err_msg=f"{mode} grad {k}")


@pytest.mark.parity
@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_tanh", "rnn_relu"])
@pytest.mark.parametrize("bidir,bias,batch_first", [(False, True, False), (True, False, True), (True, True, False)])
def test_rnn_parity(torch, mode, bidir, bias, batch_first):
    layers, dirs = 2, 1 + bidir
    x = RNG.standard_normal((2, 4, 3) if batch_first else (4, 2, 3))
    h, c = RNG.standard_normal((layers * dirs, 2, 5)), RNG.standard_normal((layers * dirs, 2, 5))
    params = _rnn_params(mode, 3, 5, layers, bidir, bias)
    _compare(torch, mode, x, h, c, params, (bias, layers, 0.0, False, bidir, batch_first))
    # dropout between layers: train=False ignores it; p=1 zeroes the second layer's input (deterministic)
    _compare(torch, mode, x, h, c, params, (bias, layers, 0.5, False, bidir, batch_first))
    _compare(torch, mode, x, h, c, params, (bias, layers, 1.0, True, bidir, batch_first))


@pytest.mark.parity
def test_lstm_projection_parity(torch):
    x, h, c = RNG.standard_normal((4, 2, 3)), RNG.standard_normal((4, 2, 2)), RNG.standard_normal((4, 2, 5))
    _compare(torch, "lstm", x, h, c, _rnn_params("lstm", 3, 5, 2, True, True, proj=2),
             (True, 2, 0.0, False, True, False))


@pytest.mark.parity
@pytest.mark.parametrize("mode", ["lstm", "gru", "rnn_relu"])
def test_rnn_packed_parity(torch, mode):
    sizes = [4, 3, 1, 1]  # sequences of lengths 4, 2, 2, 1
    x = RNG.standard_normal((sum(sizes), 3))
    h, c = RNG.standard_normal((4, 4, 5)), RNG.standard_normal((4, 4, 5))
    _compare(torch, mode, x, h, c, _rnn_params(mode, 3, 5, 2, True, True), (True, 2, 0.0, False, True),
             packed=sizes)


def test_rnn_tanh_against_numpy_and_cells():
    x, h0 = RNG.standard_normal((5, 2, 3)), RNG.standard_normal((1, 2, 4))
    w_ih, w_hh, b_ih, b_hh = _rnn_params("rnn_tanh", 3, 4, 1, False, True)
    h, ref = h0[0], []
    for t in range(5):
        h = np.tanh(x[t] @ w_ih.T + b_ih + h @ w_hh.T + b_hh)
        ref.append(h)
    out, h_n = sx.rnn_tanh(sx.tensor(x), sx.tensor(h0), [sx.tensor(p) for p in (w_ih, w_hh, b_ih, b_hh)],
                           True, 1, 0.0, False, False, False)
    np.testing.assert_allclose(_np(out), np.stack(ref), rtol=1e-12)
    np.testing.assert_allclose(_np(h_n)[0], ref[-1], rtol=1e-12)
    ps = [sx.tensor(p) for p in _rnn_params("lstm", 3, 4, 1, False, True)]
    hc = (sx.tensor(h0[0]), sx.tensor(RNG.standard_normal((2, 4))))
    out, h_n, c_n = sx.lstm(sx.tensor(x), (hc[0].unsqueeze(0), hc[1].unsqueeze(0)), ps, True, 1, 0.0, False, False,
                            False)
    for t in range(5):
        hc = sx.lstm_cell(sx.tensor(x[t]), hc, *ps)
        np.testing.assert_allclose(_np(out[t]), _np(hc[0]), rtol=1e-12)
    np.testing.assert_allclose(_np(c_n[0]), _np(hc[1]), rtol=1e-12)


def test_rnn_errors():
    x, h = sx.randn(4, 2, 3), sx.randn(1, 2, 5)
    ps = [sx.randn(15, 3), sx.randn(15, 5), sx.randn(15), sx.randn(15)]
    args = (True, 1, 0.0, False, False, False)
    with pytest.raises(ValueError, match=r"\[gru\] expected 4 weights"):
        sx.gru(x, h, ps[:3], *args)
    with pytest.raises(ValueError, match=r"\[gru\] w_hh of layer 0 direction 0 must have shape \(15, 5\)"):
        sx.gru(x, h, [ps[0], sx.randn(15, 4)] + ps[2:], *args)
    with pytest.raises(ValueError, match=r"\[gru\] hidden states must be"):
        sx.gru(x, sx.randn(2, 2, 5), ps, *args)
    with pytest.raises(ValueError, match=r"\[lstm\] hx must be a pair"):
        sx.lstm(x, [h], ps, *args)
    with pytest.raises(ValueError, match=r"\[gru\] input must be 3-d"):
        sx.gru(x[0], h, ps, *args)
    with pytest.raises(ValueError, match="at least one step"):
        sx.gru(sx.randn(0, 2, 3), h, ps, *args)
    with pytest.raises(ValueError, match="num_layers must be an int >= 1"):
        sx.gru(x, h, ps, True, 0, 0.0, False, False, False)
    with pytest.raises(TypeError, match=r"\[rnn_tanh\] expected \(input, hx, params"):
        sx.rnn_tanh(x, h, ps)
    with pytest.raises(TypeError, match=r"\[gru\] batch_first must be a bool"):
        sx.gru(x, h, ps, True, 1, 0.0, False, False, None)
    with pytest.raises(ValueError, match=r"\[gru\] dropout must be in \[0, 1\]"):
        sx.gru(x, h, ps, True, 1, "0.5", False, False, False)
    with pytest.raises(ValueError, match=r"\[gru\] expects data \(N, input_size\) and int64 batch_sizes"):
        sx.gru(sx.randn(5, 3), sx.tensor([2, 3]), h, ps, True, 1, 0.0, False, False)


# ---------------------------------------------------------------- embedding_bag and the grid functions
def test_embedding_bag_results_against_numpy():
    w, ids = RNG.standard_normal((10, 3)), np.array([1, 2, 4, 5, 4, 3, 2, 9])
    out, bag, size, top = sx.embedding_bag(sx.tensor(w), sx.tensor(ids), sx.tensor([0, 4, 4]), False, 2, False,
                                           None, False, 2)
    rows = [ids[0:4][ids[0:4] != 2], ids[4:8][ids[4:8] != 2]]
    np.testing.assert_allclose(_np(out), [w[rows[0]].max(0), np.zeros(3), w[rows[1]].max(0)])
    assert _np(bag).tolist() == [0, 0, 0, 0, 2, 2, 2, 2] and _np(size).tolist() == [3, 0, 3]
    tops = [r[w[r].argmax(0)].tolist() for r in rows]
    assert _np(top).tolist() == [tops[0], [0, 0, 0], tops[1]]
    with pytest.raises(ValueError, match=r"\[embedding_bag\] mode must be 0"):
        sx.embedding_bag(sx.tensor(w), sx.tensor(ids), sx.tensor([0]), False, 3)
    with pytest.raises(TypeError, match=r"\[embedding_bag\] sparse must be a bool"):
        sx.embedding_bag(sx.tensor(w), sx.tensor(ids), sx.tensor([0]), False, 0, np.zeros(2))
    with pytest.raises(TypeError, match=r"\[embedding_bag\] padding_idx must be None or an int"):
        sx.embedding_bag(sx.tensor(w), sx.tensor(ids), sx.tensor([0]), False, 0, False, None, False, "x")
    with pytest.raises(ValueError, match=r"\[embedding_bag\] indices must be 1-d"):
        sx.embedding_bag(sx.tensor(w), sx.tensor(ids.reshape(2, 4)), sx.tensor([0, 1]))


@pytest.mark.parity
@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_parity(torch, mode):
    w, ids = RNG.standard_normal((10, 3)), np.array([1, 2, 4, 5, 4, 3, 2, 9])
    for offs, last, pad in [([0, 4, 4], False, None), ([0, 4, 8], True, None), ([0, 2, 4], False, 4),
                            ([0, 4, 4], False, -1)]:
        psw = RNG.random(8) if mode == 0 else None
        sw, tw = sx.tensor(w, requires_grad=True), torch.tensor(w, requires_grad=True)
        s = sx.embedding_bag(sw, sx.tensor(ids), sx.tensor(offs), False, mode, False,
                             None if psw is None else sx.tensor(psw), last, pad)
        t = torch.embedding_bag(tw, torch.tensor(ids), torch.tensor(offs), False, mode, False,
                                None if psw is None else torch.tensor(psw), last, pad)
        np.testing.assert_allclose(_np(s[0]), t[0].detach().numpy(), rtol=1e-12)
        for k in (1, 2, 3):
            if not (mode == 0 and k == 1):  # torch's sum fast path may leave offset2bag empty
                np.testing.assert_array_equal(_np(s[k]), t[k].numpy(), err_msg=f"{offs} {last} {pad} result {k}")
        seed = _seed(tuple(t[0].shape))
        (s[0] * sx.tensor(seed)).sum().backward()
        (t[0] * torch.tensor(seed)).sum().backward()
        np.testing.assert_allclose(sw.grad.numpy(), tw.grad.numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parity
def test_grid_functions_parity(torch):
    theta = RNG.standard_normal((2, 2, 3))
    for ac in (False, True):
        matches_torch(torch, lambda lib, t: lib.affine_grid_generator(t, [2, 1, 3, 4], ac), [theta], _seed,
                      rtol=1e-12, atol=1e-14, grad_rtol=1e-10, grad_atol=1e-12, name="affine_grid_generator")
    for nd, modes in ((2, [(0, 0, False), (1, 1, True), (2, 2, False), (0, 2, True)]),
                      (3, [(0, 0, False), (1, 1, True), (0, 2, True)])):
        inp, grid = RNG.standard_normal((1, 2, 3, 4, 5)[:nd + 2]), RNG.uniform(-1.1, 1.1, (1, 2, 3, 3)[:nd + 1] + (nd,))
        fn = f"grid_sampler_{nd}d"
        for im, pm, ac in modes:
            def run(lib, x, g=None):  # nearest (1) has a zero grid gradient: torch gives zeros, sneppx none
                return getattr(lib, fn)(x, lib.tensor(grid) if g is None else g, im, pm, ac)

            matches_torch(torch, run, [inp] if im == 1 else [inp, grid], _seed, rtol=1e-10, atol=1e-12,
                          grad_rtol=1e-9, grad_atol=1e-11, name=f"{fn} {im} {pm}")


def test_grid_function_errors():
    x4, g4, x5, g5 = sx.randn(1, 1, 3, 3), sx.rand(1, 2, 2, 2), sx.randn(1, 1, 3, 3, 3), sx.rand(1, 2, 2, 2, 3)
    with pytest.raises(ValueError, match=r"\[grid_sampler_2d\] expected 4-d input and grid"):
        sx.grid_sampler_2d(x5, g5, 0, 0, False)
    with pytest.raises(ValueError, match=r"\[grid_sampler_3d\] expected 5-d input and grid"):
        sx.grid_sampler_3d(x4, g4, 0, 0, False)
    with pytest.raises(ValueError, match=r"\[grid_sampler_3d\] bicubic"):
        sx.grid_sampler_3d(x5, g5, 2, 0, False)
    with pytest.raises(ValueError, match=r"\[grid_sampler\] padding_mode must be 0, 1 or 2"):
        sx.grid_sampler_2d(x4, g4, 0, 3, False)
    with pytest.raises(TypeError, match="align_corners"):
        sx.affine_grid_generator(sx.randn(2, 2, 3), [2, 1, 3, 4])
    with pytest.raises(TypeError, match=r"\[affine_grid_generator\] size must be a sequence of ints"):
        sx.affine_grid_generator(sx.randn(2, 2, 3), 4, False)
    with pytest.raises(ValueError, match=r"\[grid_sampler\] interpolation_mode must be 0, 1 or 2"):
        sx.grid_sampler_3d(x5, g5, [2], 0, False)


# ---------------------------------------------------------------- NumPy backend
def test_numpy_backend():
    from test_numpy_backend import _import_numpy_copy

    npx = _import_numpy_copy()[0]
    a, tau, c = RNG.standard_normal((5, 3)), RNG.standard_normal(3), RNG.standard_normal((5, 4))
    np.testing.assert_allclose(npx.ormqr(npx.tensor(a), npx.tensor(tau), npx.tensor(c)).numpy(), _np(
        sx.ormqr(sx.tensor(a), sx.tensor(tau), sx.tensor(c))), rtol=1e-12)
    pts = RNG.standard_normal((20, 2))
    np.testing.assert_array_equal(npx.histogramdd(npx.tensor(pts), 3).hist.numpy(),
                                  _np(sx.histogramdd(sx.tensor(pts), 3).hist))
    assert npx.get_default_device() == npx.Device("cpu") and npx.zeros(1).device.type == "cpu"
    with pytest.raises(NotImplementedError, match=r"\[lstm\]"):
        npx.lstm(npx.zeros(3, 2, 2), (npx.zeros(1, 2, 2), npx.zeros(1, 2, 2)), [npx.zeros(8, 2), npx.zeros(8, 2)],
                 False, 1, 0.0, False, False, False)
