"""Sparse tensors (COO, CSR, CSC) and ``sneppx_core.sparse``: dense forms, products, sums and softmax against
NumPy, gradients against float64 finite differences, the index checks, the operators' hand-over from dense
tensors, and parity with PyTorch's indices, values and results."""

from __future__ import annotations

import numpy as np
import pytest

import sneppx_core as sx

RNG = np.random.default_rng(20261206)


def _coo(shape=(4, 5), nnz=7, dense=(), dtype=sx.float64, dup=True, grad=False):
    """A random COO tensor (duplicates included when ``dup``) and its dense NumPy form."""
    idx = np.stack([RNG.integers(0, s, nnz) for s in shape])
    if dup and nnz > 2:
        idx[:, -1] = idx[:, 0]
    vals = RNG.standard_normal((nnz, *dense))
    ref = np.zeros(shape + dense)
    for k in range(nnz):
        ref[tuple(idx[:, k])] += vals[k]
    s = sx.sparse_coo_tensor(sx.tensor(idx), sx.tensor(vals, dtype=dtype), shape + dense, requires_grad=grad)
    return s, ref, idx, vals


def _np(t):
    return t.detach().numpy()


def _fd(f, x, eps=1e-6):
    """Central finite differences of the scalar f at the float64 array x."""
    g = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        xp, xm = x.copy(), x.copy()
        xp[k] += eps
        xm[k] -= eps
        g[k] = (f(xp) - f(xm)) / (2 * eps)
    return g


# ------------------------------------------------------------------ construction and forms
def test_to_dense_sums_duplicates():
    s, ref, _, _ = _coo()
    assert s.is_sparse and s.layout is sx.sparse_coo and not isinstance(s, sx.Tensor)
    assert s.shape == (4, 5) and s.dim() == 2 and s._nnz() == 7 and s.sparse_dim() == 2 and s.dense_dim() == 0
    np.testing.assert_allclose(_np(s.to_dense()), ref)


def test_hybrid_to_dense():
    s, ref, _, _ = _coo(shape=(3, 4), nnz=5, dense=(2,))
    assert s.sparse_dim() == 2 and s.dense_dim() == 1 and s.shape == (3, 4, 2)
    np.testing.assert_allclose(_np(s.to_dense()), ref)


def test_size_inferred():
    s = sx.sparse_coo_tensor([[0, 2], [1, 4]], [1.0, 2.0])
    assert s.shape == (3, 5) and s.dtype == sx.float32


def test_coalesce():
    s, ref, idx, vals = _coo()
    assert not s.is_coalesced()
    with pytest.raises(RuntimeError, match="uncoalesced"):
        s.indices()
    c = s.coalesce()
    lin = np.ravel_multi_index(tuple(idx), (4, 5))
    uniq = np.unique(lin)
    assert c.is_coalesced() and c._nnz() == len(uniq)
    np.testing.assert_array_equal(_np(c.indices()), np.stack(np.unravel_index(uniq, (4, 5))))
    np.testing.assert_allclose(_np(c.values()), ref.reshape(-1)[uniq])
    assert c.coalesce() is c


def test_dense_to_sparse_round_trip():
    a = RNG.standard_normal((3, 4)) * (RNG.random((3, 4)) < 0.4)
    s = sx.tensor(a).to_sparse()
    assert s.is_coalesced() and s._nnz() == np.count_nonzero(a)
    np.testing.assert_array_equal(_np(s.indices()), np.stack(np.nonzero(a)))
    np.testing.assert_array_equal(_np(s.to_dense()), a)
    h = sx.tensor(a).to_sparse(1)  # rows indexed, each stored row dense
    assert h.sparse_dim() == 1 and h.dense_dim() == 1
    np.testing.assert_array_equal(_np(h.indices())[0], np.flatnonzero(np.abs(a).sum(1)))
    np.testing.assert_array_equal(_np(h.to_dense()), a)


@pytest.mark.parametrize("bad, match", [
    (dict(indices=[[0, 5]], values=[1.0, 2.0], size=(3,)), "outside size 3"),
    (dict(indices=[[0, -1]], values=[1.0, 2.0], size=(3,)), "outside size"),
    (dict(indices=[[0, 1]], values=[1.0], size=(3,)), "disagree on nnz"),
    (dict(indices=[[0, 1]], values=[1.0, 2.0], size=(3, 3)), "sparse_dim \\+ dense_dim"),
    (dict(indices=[[[0, 1]]], values=[1.0, 2.0], size=(3,)), "must be 2-D"),
])
def test_construction_errors(bad, match):
    with pytest.raises(RuntimeError, match=match):
        sx.sparse_coo_tensor(bad["indices"], bad["values"], bad["size"])


def test_float_indices_rejected():
    with pytest.raises(TypeError, match="indices must be integers"):
        sx.sparse_coo_tensor(sx.tensor([[0.0, 1.0]]), sx.tensor([1.0, 2.0]), (3,))


def test_dense_only_methods():
    x = sx.ones(2, 3)
    assert x.sparse_dim() == 0 and x.dense_dim() == 2
    for name in ("indices", "values", "coalesce", "crow_indices"):
        with pytest.raises(RuntimeError, match=f"\\[{name}\\] expected a sparse tensor"):
            getattr(x, name)()


# ------------------------------------------------------------------ products
@pytest.mark.parametrize("form", ["mm", "matmul", "op", "spmm", "sparse.mm", "method"])
def test_sparse_dense_product(form):
    s, ref, _, _ = _coo()
    d = RNG.standard_normal((5, 3))
    dt = sx.tensor(d)
    out = {"mm": lambda: sx.mm(s, dt), "matmul": lambda: sx.matmul(s, dt), "op": lambda: s @ dt,
           "spmm": lambda: sx.spmm(s, dt), "sparse.mm": lambda: sx.sparse.mm(s, dt), "method": lambda: s.mm(dt)}[form]()
    assert isinstance(out, sx.Tensor)
    np.testing.assert_allclose(_np(out), ref @ d, rtol=1e-12, atol=1e-12)


def test_dense_sparse_vector_and_sparse_sparse_products():
    s, ref, _, _ = _coo()
    d = RNG.standard_normal((2, 4))
    np.testing.assert_allclose(_np(sx.tensor(d) @ s), d @ ref, atol=1e-12)
    np.testing.assert_allclose(_np(sx.mm(sx.tensor(d), s)), d @ ref, atol=1e-12)
    v = RNG.standard_normal(5)
    np.testing.assert_allclose(_np(s @ sx.tensor(v)), ref @ v, atol=1e-12)
    s2, ref2, _, _ = _coo(shape=(5, 2), nnz=4)
    p = s @ s2
    assert p.is_sparse
    np.testing.assert_allclose(_np(p.to_dense()), ref @ ref2, atol=1e-12)


def test_addmm_smm_hspmm_sspaddmm():
    s, ref, _, _ = _coo()
    d, m = RNG.standard_normal((5, 3)), RNG.standard_normal((4, 3))
    np.testing.assert_allclose(_np(sx.addmm(sx.tensor(m), s, sx.tensor(d), beta=0.5, alpha=2.0)),
                               0.5 * m + 2.0 * ref @ d, atol=1e-12)
    np.testing.assert_allclose(_np(sx.sparse.addmm(sx.tensor(m), s, sx.tensor(d))), m + ref @ d, atol=1e-12)
    sm = sx.smm(s, sx.tensor(d))
    assert sm.is_sparse
    np.testing.assert_allclose(_np(sm.to_dense()), ref @ d, atol=1e-12)
    h = sx.hspmm(s, sx.tensor(d))
    assert h.sparse_dim() == 1 and h.dense_dim() == 1
    rows = np.flatnonzero(np.abs(ref).sum(1))
    np.testing.assert_array_equal(_np(h.indices())[0], np.unique(s._indices().numpy()[0]))
    np.testing.assert_allclose(_np(h.to_dense())[rows], (ref @ d)[rows], atol=1e-12)
    t, tref, _, _ = _coo(shape=(4, 3), nnz=3)
    np.testing.assert_allclose(_np(sx.sspaddmm(t, s, sx.tensor(d), beta=2.0, alpha=0.5).to_dense()),
                               2.0 * tref + 0.5 * ref @ d, atol=1e-12)


def test_product_errors():
    s, _, _, _ = _coo()
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        sx.mm(s, sx.ones(4, 2, dtype=sx.float64))
    with pytest.raises(TypeError, match="same dtype"):
        s @ sx.ones(5, 2)
    with pytest.raises(TypeError, match="\\[mm\\] expected two tensors, got Tensor and str"):
        sx.mm(sx.ones(2, 2), "x")
    with pytest.raises(TypeError, match="\\[matmul\\] expected two tensors"):
        sx.matmul([1.0], sx.ones(1))


# ------------------------------------------------------------------ gradients
def test_mm_gradients_match_finite_differences():
    s, _, idx, vals = _coo(grad=True)
    d = RNG.standard_normal((5, 3))
    w = RNG.standard_normal((4, 3))
    dt = sx.tensor(d, requires_grad=True)
    ((s @ dt) * sx.tensor(w)).sum().backward()

    def loss(v, dd):
        ref = np.zeros((4, 5))
        np.add.at(ref, tuple(idx), v)
        return ((ref @ dd) * w).sum()

    g = s.grad
    assert g.is_sparse and g._nnz() == len(vals)
    np.testing.assert_array_equal(_np(g._indices()), idx)
    np.testing.assert_allclose(_np(g._values()), _fd(lambda v: loss(v, d), vals), atol=1e-7)
    np.testing.assert_allclose(_np(dt.grad), _fd(lambda dd: loss(vals, dd), d), atol=1e-7)


def test_gradient_flows_to_values_through_dense_form_and_softmax():
    v = sx.tensor(RNG.standard_normal(6), requires_grad=True)
    idx = np.array([[0, 0, 1, 2, 2, 2], [1, 3, 0, 0, 2, 3]])
    w = RNG.standard_normal((3, 4))

    def f(vals):
        s = sx.sparse_coo_tensor(sx.tensor(idx), vals, (3, 4))
        return (sx.sparse.softmax(s, 1).to_dense() * sx.tensor(w)).sum()

    f(v).backward()
    num = _fd(lambda a: float(f(sx.tensor(a)).item()), _np(v))
    np.testing.assert_allclose(_np(v.grad), num, atol=1e-7)


# ------------------------------------------------------------------ sums, softmax, elementwise
def test_sum():
    s, ref, _, _ = _coo(shape=(3, 4), nnz=6, dense=(2,))
    np.testing.assert_allclose(s.sum().item(), ref.sum())
    r1 = s.sum(dim=1)
    assert r1.is_sparse and r1.shape == (3, 2)
    np.testing.assert_allclose(_np(r1.to_dense()), ref.sum(1), atol=1e-12)
    r = sx.sparse.sum(s, dim=(0, 1))
    assert isinstance(r, sx.Tensor)
    np.testing.assert_allclose(_np(r), ref.sum((0, 1)), atol=1e-12)
    np.testing.assert_allclose(_np(s.sum(dim=2).to_dense()), ref.sum(2), atol=1e-12)


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize("dim", [0, 1])
def test_softmax_over_stored_elements(log, dim):
    s, ref, idx, _ = _coo(dup=True)
    stored = np.zeros((4, 5), bool)
    stored[tuple(idx)] = True
    masked = np.where(stored, ref, -np.inf)
    with np.errstate(invalid="ignore", divide="ignore"):  # rows or columns with nothing stored
        e = np.exp(masked - masked.max(dim, keepdims=True))
        soft = e / e.sum(dim, keepdims=True)
        logs = np.log(soft)
    f = sx.sparse.log_softmax if log else sx.sparse.softmax
    out = f(s, dim)
    assert out.is_sparse
    got = _np(out.to_dense())
    want = np.where(stored, logs if log else soft, 0.0)
    np.testing.assert_allclose(got, np.nan_to_num(want), atol=1e-12)


def test_elementwise():
    s, ref, _, _ = _coo()
    t, tref, _, _ = _coo()
    d = RNG.standard_normal((4, 5))
    np.testing.assert_allclose(_np((s + t).to_dense()), ref + tref, atol=1e-12)
    np.testing.assert_allclose(_np((s - t).to_dense()), ref - tref, atol=1e-12)
    np.testing.assert_allclose(_np((s * t).to_dense()), ref * tref, atol=1e-12)
    np.testing.assert_allclose(_np((s * 3).to_dense()), 3 * ref)
    np.testing.assert_allclose(_np((2 * s / 4).to_dense()), ref / 2)
    np.testing.assert_allclose(_np((s * sx.tensor(d)).to_dense()), ref * d, atol=1e-12)
    np.testing.assert_allclose(_np((-s).to_dense()), -ref)
    np.testing.assert_allclose(_np(s.abs().to_dense()), np.abs(ref), atol=1e-12)
    np.testing.assert_allclose(_np((s.abs() ** 2).to_dense()), ref ** 2, atol=1e-12)


def test_dense_operators_hand_over_to_sparse():
    s, ref, _, _ = _coo()
    d = RNG.standard_normal((4, 5))
    for got, want in [(sx.tensor(d) + s, d + ref), (s + sx.tensor(d), ref + d), (sx.tensor(d) - s, d - ref),
                      (s - sx.tensor(d), ref - d)]:
        assert isinstance(got, sx.Tensor)
        np.testing.assert_allclose(_np(got), want, atol=1e-12)
    got = sx.tensor(d) * s
    assert got.is_sparse
    np.testing.assert_allclose(_np(got.to_dense()), d * ref, atol=1e-12)
    with pytest.raises(TypeError, match="\\[binary\\] unsupported operand type object"):
        sx.ones(2) + object()


def test_transpose_casts_and_moves():
    s, ref, _, _ = _coo()
    np.testing.assert_allclose(_np(s.t().to_dense()), ref.T)
    f = s.float()
    assert f.dtype == sx.float32 and f.is_sparse
    assert s.to("cpu").device == s.device and s.clone()._nnz() == s._nnz()
    assert "layout=sneppx.sparse_coo" in repr(s) and "indices=tensor(" in repr(s)


# ------------------------------------------------------------------ compressed layouts
def test_csr_and_csc_forms():
    a = RNG.standard_normal((4, 6)) * (RNG.random((4, 6)) < 0.5)
    x = sx.tensor(a)
    csr = x.to_sparse_csr()
    rows, cols = np.nonzero(a)
    assert csr.layout is sx.sparse_csr and csr.is_sparse_csr and not csr.is_sparse
    np.testing.assert_array_equal(_np(csr.crow_indices()), np.concatenate([[0], np.cumsum((a != 0).sum(1))]))
    np.testing.assert_array_equal(_np(csr.col_indices()), cols)
    np.testing.assert_array_equal(_np(csr.values()), a[rows, cols])
    csc = x.to_sparse_csc()
    c_rows, c_cols = np.nonzero(a.T)
    np.testing.assert_array_equal(_np(csc.ccol_indices()), np.concatenate([[0], np.cumsum((a != 0).sum(0))]))
    np.testing.assert_array_equal(_np(csc.row_indices()), c_cols)
    np.testing.assert_array_equal(_np(csc.values()), a.T[c_rows, c_cols])
    for m in (csr, csc):
        np.testing.assert_array_equal(_np(m.to_dense()), a)
        np.testing.assert_array_equal(_np(m.to_sparse().to_dense()), a)
        d = RNG.standard_normal((6, 2))
        np.testing.assert_allclose(_np(m @ sx.tensor(d)), a @ d, atol=1e-12)
    np.testing.assert_array_equal(_np(csr.t().to_dense()), a.T)
    assert csr.t().layout is sx.sparse_csc


def test_csr_constructor_checks():
    s = sx.sparse_csr_tensor([0, 2, 3], [0, 2, 1], [1.0, 2.0, 3.0], (2, 3))
    np.testing.assert_array_equal(_np(s.to_dense()), [[1, 0, 2], [0, 3, 0]])
    with pytest.raises(RuntimeError, match="sorted and unique"):
        sx.sparse_csr_tensor([0, 2, 3], [2, 0, 1], [1.0, 2.0, 3.0], (2, 3))
    with pytest.raises(RuntimeError, match="start at 0"):
        sx.sparse_csr_tensor([0, 2, 4], [0, 2, 1], [1.0, 2.0, 3.0], (2, 3))
    with pytest.raises(RuntimeError, match="does not fit"):
        sx.sparse_csr_tensor([0, 2, 3], [0, 3, 1], [1.0, 2.0, 3.0], (2, 3))
    with pytest.raises(NotImplementedError, match="blocked"):
        sx.ones(2, 2).to_sparse_bsr((1, 1))


def test_spdiags_matches_scipy_rule():
    diags = RNG.standard_normal((3, 5))
    s = sx.sparse.spdiags(sx.tensor(diags), sx.tensor([0, -1, 2]), (5, 5))
    want = np.zeros((5, 5))
    for k, off in enumerate([0, -1, 2]):
        for j in range(5):
            if 0 <= j - off < 5:
                want[j - off, j] = diags[k, j]
    np.testing.assert_array_equal(_np(s.to_dense()), want)


# ------------------------------------------------------------------ parity with PyTorch
@pytest.mark.parity
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_parity(torch):
    idx = np.array([[0, 1, 1, 0, 2], [2, 0, 2, 2, 1]])
    vals = RNG.standard_normal(5)
    s = sx.sparse_coo_tensor(sx.tensor(idx), sx.tensor(vals), (3, 3))
    ts = torch.sparse_coo_tensor(torch.tensor(idx), torch.tensor(vals), (3, 3))
    c, tc = s.coalesce(), ts.coalesce()
    np.testing.assert_array_equal(_np(c.indices()), tc.indices().numpy())
    np.testing.assert_allclose(_np(c.values()), tc.values().numpy())
    d = RNG.standard_normal((3, 4))
    np.testing.assert_allclose(_np(sx.mm(s, sx.tensor(d))), torch.mm(ts, torch.tensor(d)).numpy(), atol=1e-12)
    for dim in (0, 1):
        np.testing.assert_allclose(_np(sx.sparse.softmax(s, dim).to_dense()),
                                   torch.sparse.softmax(ts, dim).to_dense().numpy(), atol=1e-12)
        got, want = s.sum(dim), torch.sum(ts, dim)
        np.testing.assert_array_equal(_np(got.indices()), want.indices().numpy())
        np.testing.assert_allclose(_np(got.values()), want.values().numpy(), atol=1e-12)
    csr, tcsr = s.to_sparse_csr(), ts.to_sparse_csr()
    for a, b in [(csr.crow_indices(), tcsr.crow_indices()), (csr.col_indices(), tcsr.col_indices()),
                 (csr.values(), tcsr.values())]:
        np.testing.assert_allclose(_np(a), b.numpy())
    h, th = sx.hspmm(s, sx.tensor(d)), torch.hspmm(ts, torch.tensor(d))
    np.testing.assert_array_equal(_np(h.indices()), th.coalesce().indices().numpy())
    np.testing.assert_allclose(_np(h.values()), th.coalesce().values().numpy(), atol=1e-12)
    diags = RNG.standard_normal((2, 4))
    np.testing.assert_array_equal(
        _np(sx.sparse.spdiags(sx.tensor(diags), sx.tensor([0, 1]), (4, 4)).to_dense()),
        torch.sparse.spdiags(torch.tensor(diags), torch.tensor([0, 1]), (4, 4)).to_dense().numpy())
    # the sparse operand's gradient: torch.sparse.mm's, masked to the stored pattern
    s.requires_grad_()
    ts = ts.coalesce().requires_grad_()
    w = RNG.standard_normal((3, 4))
    (sx.sparse.mm(s.coalesce(), sx.tensor(d)) * sx.tensor(w)).sum().backward()
    (torch.sparse.mm(ts, torch.tensor(d)) * torch.tensor(w)).sum().backward()
    got = np.zeros((3, 3))
    np.add.at(got, tuple(idx), _np(s.grad._values()))
    ref = ts.grad.to_dense().numpy()
    stored = np.zeros((3, 3), bool)
    stored[tuple(idx)] = True
    # each stored copy gets the same gradient; summed copies count once per copy
    counts = np.zeros((3, 3))
    np.add.at(counts, tuple(idx), 1)
    np.testing.assert_allclose(got[stored] / counts[stored], ref[stored], atol=1e-12)


@pytest.mark.parity
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_gcn_training_matches_torch(torch):
    """pytorch/examples' GCN pattern: a normalised sparse adjacency, sparse features, torch.mm and torch.spmm,
    trained by gradient descent; losses and gradients agree with PyTorch's for the same weights."""
    n, f, h, c = 40, 12, 8, 3
    feats = (RNG.random((n, f)) < 0.2) * RNG.random((n, f))
    edges = RNG.integers(0, n, (2, 90))
    labels = RNG.integers(0, c, n)
    w1, w2 = RNG.standard_normal((f, h)) * 0.3, RNG.standard_normal((h, c)) * 0.3
    losses = {}
    for lib in (sx, torch):
        adj = lib.sparse_coo_tensor(lib.tensor(edges), lib.ones(edges.shape[1]), (n, n))
        adj = lib.eye(n) + adj
        deg = lib.diag(lib.sqrt(1 / lib.sum(adj, dim=1))).to_sparse()
        adj = (deg @ adj @ deg).to_sparse()
        x = lib.tensor(feats, dtype=lib.float32).to_sparse()
        p1 = lib.tensor(w1, dtype=lib.float32, requires_grad=True)
        p2 = lib.tensor(w2, dtype=lib.float32, requires_grad=True)
        y = lib.tensor(labels)
        out = []
        for _ in range(5):
            hid = lib.relu(lib.spmm(adj, lib.mm(x, p1)))
            logits = lib.spmm(adj, lib.mm(hid, p2))
            loss = lib.nn.functional.cross_entropy(logits, y) if lib is torch else \
                sx.functional.cross_entropy(logits, y)
            for p in (p1, p2):
                p.grad = None
            loss.backward()
            out.append((loss.item(), p1.grad.numpy().copy(), p2.grad.numpy().copy()))
            with lib.no_grad():
                p1 -= 0.5 * p1.grad
                p2 -= 0.5 * p2.grad
        losses[lib.__name__] = out
    for (ls, g1s, g2s), (lt, g1t, g2t) in zip(losses["sneppx_core"], losses["torch"]):
        assert abs(ls - lt) < 1e-5
        np.testing.assert_allclose(g1s, g1t, atol=1e-5)
        np.testing.assert_allclose(g2s, g2t, atol=1e-5)


def test_numpy_backend():
    """The NumPy backend's dense tensors hand their operators to sparse ones too; products go through ``@``,
    ``spmm`` and ``sparse.mm`` (its ``mm`` function takes dense tensors only)."""
    from test_numpy_backend import _import_numpy_copy

    nx, _ = _import_numpy_copy()
    s, ref, idx, vals = _coo(dup=True)
    ns = nx.sparse_coo_tensor(idx, vals, (4, 5))
    d = RNG.standard_normal((5, 2))
    for got in (ns @ nx.tensor(d), nx.spmm(ns, nx.tensor(d)), nx.sparse.mm(ns, nx.tensor(d))):
        np.testing.assert_allclose(got.numpy(), ref @ d, atol=1e-12)
    e = RNG.standard_normal((4, 5))
    np.testing.assert_allclose((nx.tensor(e) + ns).numpy(), e + ref, atol=1e-12)
    np.testing.assert_allclose((nx.tensor(e) * ns).to_dense().numpy(), e * ref, atol=1e-12)
    np.testing.assert_allclose((nx.tensor(d.T) @ ns.t()).numpy(), d.T @ ref.T, atol=1e-12)
