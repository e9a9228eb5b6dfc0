"""complex64 and complex128 tensors: NumPy's complex arithmetic is the reference for values, float64 finite
differences for gradients (a real loss L of z = x + iy has z.grad = dL/dx + i dL/dy), and PyTorch for both in
the parity tests."""
import numpy as np
import pytest

import sneppx_core as sx

RNG = np.random.default_rng(0)


def _c(shape, dtype=np.complex128):
    return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)


def _np(t):
    return t.detach().numpy()


def test_dtypes_names_and_promotion():
    assert sx.cfloat == sx.complex64 and sx.cdouble == sx.complex128
    assert sx.complex64.itemsize == 8 and sx.complex128.itemsize == 16
    assert sx.complex64.is_complex and not sx.complex64.is_floating_point and not sx.float32.is_complex
    assert sx.tensor([1 + 2j]).dtype == sx.complex64  # Python complex takes the default complex dtype
    assert sx.tensor(np.array([1j])).dtype == sx.complex128  # NumPy keeps its dtype
    f32, f64, i64 = sx.ones(2), sx.ones(2, dtype=sx.float64), sx.ones(2, dtype=sx.int64)
    z64 = sx.ones(2, dtype=sx.complex64)
    assert (f32 * 1j).dtype == sx.complex64 and (f64 * 1j).dtype == sx.complex128 and (i64 * 1j).dtype == sx.complex64
    assert (z64 + f64).dtype == sx.complex128 and (z64 + i64).dtype == sx.complex64
    assert (sx.tensor(1j) * f64).dtype == sx.complex128  # a complex 0-d with a float64 tensor: complex128
    assert (z64 * sx.tensor(2.0, dtype=sx.float64)).dtype == sx.complex64  # a float64 0-d does not widen it
    assert (sx.tensor(1j, dtype=sx.complex128) * i64).dtype == sx.complex128
    assert sx.promote_types(sx.complex64, sx.float64) == sx.complex128
    assert sx.is_complex(z64) and z64.is_complex() and not f32.is_complex()
    assert sx.finfo(sx.complex64).eps == sx.finfo(sx.float32).eps


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_arithmetic_matches_numpy(dtype):
    a, b = _c((3, 4), dtype), _c((4,), dtype)
    ta, tb = sx.tensor(a), sx.tensor(b)
    tol = 1e-6 if dtype == np.complex64 else 1e-13
    r = RNG.standard_normal(4).astype(np.float32 if dtype == np.complex64 else np.float64)
    cases = [(ta + tb, a + b), (ta - tb, a - b), (ta * tb, a * b), (ta / tb, a / b), (-ta, -a),
             (ta.t() * ta.t(), a.T * a.T), (ta * ta[:1], a * a[:1]),
             (ta * sx.tensor(r), a * r), (sx.tensor(r) * ta, r * a), (ta / sx.tensor(r), a / r),
             (sx.tensor(r) / tb, r / b), (ta + sx.tensor(r), a + r), (sx.tensor(r) - ta, r - a),
             (ta * 2.5, a * 2.5), (ta * (1 - 2j), a * (1 - 2j)), (ta.exp(), np.exp(a)), (ta.log(), np.log(a)),
             (ta.sqrt(), np.sqrt(a)), (ta.reciprocal(), 1 / a), (ta.square(), a * a), (ta.conj(), np.conj(a)),
             (ta.sum(), a.sum()), (ta.sum(0), a.sum(0)), (ta.mean(1, keepdim=True), a.mean(1, keepdims=True))]
    for got, want in cases:
        assert got.dtype == ta.dtype
        np.testing.assert_allclose(_np(got), want, rtol=tol, atol=tol)
    for got, want in [(ta.abs(), np.abs(a)), (ta.angle(), np.angle(a)), (ta.real, a.real), (ta.imag, a.imag)]:
        assert got.dtype == (sx.float32 if dtype == np.complex64 else sx.float64)
        np.testing.assert_allclose(_np(got), want, rtol=tol, atol=tol)
    assert (ta == ta).all().item() and not (ta != ta).any().item()
    assert (ta == sx.tensor(a + 1j)).sum().item() == 0


def test_indexing_scans_norms_and_powers():
    a = _c((3, 4))
    t = sx.tensor(a)
    idx = sx.tensor([[2, 0, 1, 1], [0, 0, 2, 1]])
    np.testing.assert_array_equal(_np(t.index_select(-1, sx.tensor([3, 0]))), a[:, [3, 0]])
    np.testing.assert_array_equal(_np(t.gather(0, idx)), np.take_along_axis(a, idx.numpy(), 0))
    np.testing.assert_allclose(_np(t.cumsum(-1)), np.cumsum(a, -1), rtol=1e-13)
    np.testing.assert_allclose(t.norm().item(), np.linalg.norm(a), rtol=1e-13)
    np.testing.assert_allclose(_np(sx.linalg.vector_norm(t, 1, dim=0)), np.abs(a).sum(0), rtol=1e-13)
    for got, want in [(t ** 2, a ** 2), (t ** 0.5, a ** 0.5), (t ** sx.tensor(1 + 1j), a ** (1 + 1j)), (2 ** t, 2 ** a),
                      (t ** t, a ** a), (sx.zeros(2, dtype=sx.cdouble) ** 2, np.zeros(2))]:
        np.testing.assert_allclose(_np(got), want, rtol=1e-12, atol=1e-12)
    w = sx.tensor(a, requires_grad=True)  # d/dz of sum |z_(i)|^2 over a gather and a cumsum
    (w.gather(0, idx).abs() ** 2).sum().add((w.cumsum(1).abs() ** 2).sum()).backward()
    fd = _fd_grad(lambda z: float((np.abs(np.take_along_axis(z, idx.numpy(), 0)) ** 2).sum()
                                  + (np.abs(np.cumsum(z, 1)) ** 2).sum()), a)
    np.testing.assert_allclose(w.grad.numpy(), fd, rtol=1e-6, atol=1e-6)


def test_views_share_memory():
    x = sx.randn(3, 4, 2)
    z = sx.view_as_complex(x)
    assert z.shape == (3, 4) and z.dtype == sx.complex64
    np.testing.assert_array_equal(_np(z), x.numpy()[..., 0] + 1j * x.numpy()[..., 1])
    z.imag.mul_(0)  # a write through the view of the parts reaches x
    assert (x[..., 1] == 0).all().item()
    r = sx.view_as_real(z)
    assert r.shape == (3, 4, 2) and r.data_ptr() == x.data_ptr()
    zt = z.t()  # a view of the complex view: its pairs are strided
    np.testing.assert_array_equal(sx.view_as_real(zt).numpy(), np.swapaxes(x.numpy(), 0, 1))
    np.testing.assert_array_equal(_np(zt.contiguous()), _np(z).T)
    z.real = sx.zeros(3, 4)
    assert (x == 0).all().item()


def test_view_as_complex_checks_its_input():
    with pytest.raises(RuntimeError, match="last dim must have size 2"):
        sx.view_as_complex(sx.zeros(3, 3))
    with pytest.raises(RuntimeError, match="stride 1"):
        sx.view_as_complex(sx.zeros(2, 3).t())
    with pytest.raises(RuntimeError, match="even"):
        sx.view_as_complex(sx.zeros(9)[1:].reshape(4, 2))
    with pytest.raises(TypeError, match="float32 and float64"):
        sx.view_as_complex(sx.zeros(3, 2, dtype=sx.int64))
    with pytest.raises(TypeError, match="complex"):
        sx.view_as_real(sx.zeros(3))
    with pytest.raises(RuntimeError, match="non-complex"):
        sx.zeros(3).imag


def test_factories_shape_ops_and_conversions():
    z = sx.zeros(2, 3, dtype=sx.complex128)
    assert z.dtype == sx.complex128 and (z == 0).all().item()
    np.testing.assert_array_equal(_np(sx.ones(2, dtype=sx.cfloat)), np.ones(2, np.complex64))
    np.testing.assert_array_equal(_np(sx.full((2,), 3.0, dtype=sx.cfloat)), np.full(2, 3, np.complex64))
    a = _c((2, 3))
    t = sx.tensor(a)
    np.testing.assert_array_equal(_np(sx.cat([t, t], 1)), np.concatenate([a, a], 1))
    np.testing.assert_array_equal(_np(sx.stack([t, t])), np.stack([a, a]))
    np.testing.assert_array_equal(_np(t.permute(1, 0).reshape(6)), a.T.reshape(6))
    np.testing.assert_array_equal(_np(t[:, 1:]), a[:, 1:])
    np.testing.assert_array_equal(_np(t[sx.tensor([1, 0])]), a[[1, 0]])
    np.testing.assert_array_equal(_np(t.to(sx.complex64)), a.astype(np.complex64))
    np.testing.assert_array_equal(_np(sx.tensor([1.0, 2.0]).to(sx.complex64)), np.array([1, 2], np.complex64))
    assert t[0, 1].item() == complex(a[0, 1]) and t.tolist() == a.tolist()
    assert sx.from_numpy(a).data_ptr() == a.ctypes.data  # shared, not copied
    np.testing.assert_array_equal(sx.from_dlpack(t).numpy(), a)
    u = sx.empty(2, 3, dtype=sx.complex128)
    u.copy_(t)
    u.fill_(2)
    np.testing.assert_array_equal(_np(u), np.full((2, 3), 2 + 0j))
    u[0] = t[1]
    np.testing.assert_array_equal(_np(u)[0], a[1])
    n = sx.randn(20000, dtype=sx.cfloat)
    assert abs(float(n.real.var()) - 0.5) < 0.03 and abs(float(n.imag.var()) - 0.5) < 0.03  # variance 1 in all
    assert repr(sx.tensor([1 + 2j, 0.5 - 1j])) == "tensor([1.0000+2.j, 0.5000-1.j])"
    assert repr(sx.tensor([1 + 2j], dtype=sx.cdouble)) == "tensor([1.+2.j], dtype=sneppx.complex128)"


def test_complex_polar_and_angle():
    re, im = RNG.standard_normal(5), RNG.standard_normal(5)
    z = sx.complex(sx.tensor(re, dtype=sx.float64), sx.tensor(im, dtype=sx.float64))
    np.testing.assert_array_equal(_np(z), re + 1j * im)
    r, th = np.abs(re), im
    p = sx.polar(sx.tensor(r, dtype=sx.float64), sx.tensor(th, dtype=sx.float64))
    np.testing.assert_allclose(_np(p), r * np.exp(1j * th), rtol=1e-14, atol=1e-14)
    np.testing.assert_array_equal(sx.isreal(sx.tensor([1 + 0j, 1j])).numpy(), [True, False])
    with pytest.raises(TypeError, match="one dtype"):
        sx.complex(sx.zeros(2), sx.zeros(2, dtype=sx.float64))


def test_ops_without_a_complex_form_raise():
    z = sx.tensor([1 + 2j, 3 - 1j])
    for fn in (lambda: z.sin(), lambda: z.max(), lambda: z < z, lambda: z.float(), lambda: z.softmax(0),
               lambda: sx.zeros(2).copy_(z), lambda: z.prod(), lambda: z.var(), lambda: z.scatter_add(
                   0, sx.tensor([0]), z[:1])):
        with pytest.raises(TypeError, match="complex"):
            fn()
    with pytest.raises(RuntimeError, match="real outputs"):
        z.requires_grad_().backward()


def _fd_grad(f, z, eps=1e-6):
    """dL/dx + i dL/dy of the real function f at z (complex128 NumPy), by central differences."""
    g = np.zeros_like(z)
    for idx in np.ndindex(z.shape):
        for step, unit in ((eps, 1.0), (eps * 1j, 1j)):
            zp, zm = z.copy(), z.copy()
            zp[idx] += step
            zm[idx] -= step
            g[idx] += unit * (f(zp) - f(zm)) / (2 * eps)
    return g


def test_gradients_match_finite_differences():
    a, b, w = _c((3, 2)), _c((2,)), RNG.standard_normal((3, 2))

    def loss(za, zb, lib):
        if lib is np:
            q = za * zb / (zb + 2) - np.exp(za) * np.conj(za)
            return float((np.abs(q) * w).sum() + np.angle(za.sum(0)).sum() + np.log(za).imag.sum()
                         + np.sqrt(za).real.sum())
        q = za * zb / (zb + 2) - za.exp() * za.conj()
        return ((q.abs() * sx.tensor(w)).sum() + za.sum(0).angle().sum() + za.log().imag.sum()
                + za.sqrt().real.sum())

    ta, tb = sx.tensor(a, requires_grad=True), sx.tensor(b, requires_grad=True)
    loss(ta, tb, sx).backward()
    assert ta.grad.dtype == sx.complex128
    np.testing.assert_allclose(_np(ta.grad), _fd_grad(lambda z: loss(z, b, np), a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_np(tb.grad), _fd_grad(lambda z: loss(a, z, np), b), rtol=1e-6, atol=1e-7)


def test_gradient_flows_through_the_views():
    """Rotary embeddings as written with complex numbers (view_as_complex, a product, view_as_real)."""
    x = RNG.standard_normal((2, 4, 6))
    freqs = RNG.standard_normal((4, 3))
    tx = sx.tensor(x, requires_grad=True)
    rot = sx.polar(sx.ones(4, 3, dtype=sx.float64), sx.tensor(freqs))
    out = sx.view_as_real(sx.view_as_complex(tx.reshape(2, 4, 3, 2)) * rot).flatten(2)
    c = x.reshape(2, 4, 3, 2)
    want = (c[..., 0] + 1j * c[..., 1]) * np.exp(1j * freqs)
    np.testing.assert_allclose(out.detach().numpy(), np.stack([want.real, want.imag], -1).reshape(2, 4, 6), atol=1e-14)
    wt = RNG.standard_normal((2, 4, 6))
    (out * sx.tensor(wt)).sum().backward()
    # The rotation is orthogonal: the gradient is the weights rotated back.
    wc = wt.reshape(2, 4, 3, 2)
    back = (wc[..., 0] + 1j * wc[..., 1]) * np.exp(-1j * freqs)
    np.testing.assert_allclose(tx.grad.numpy(), np.stack([back.real, back.imag], -1).reshape(2, 4, 6), atol=1e-14)


@pytest.mark.parity
def test_matches_pytorch():
    torch = pytest.importorskip("torch")
    a, b = _c((3, 4), np.complex64), _c((4,), np.complex64)
    ours = [sx.tensor(a, requires_grad=True), sx.tensor(b, requires_grad=True)]
    theirs = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
    w = RNG.standard_normal((3, 4)).astype(np.float32)

    def run(za, zb, lib):
        q = za * zb - za / (zb + 1) + za.exp() * 0.5j
        r = lib.view_as_real(q.sqrt().conj().resolve_conj())
        extra = (za.cumsum(0) ** 2).imag.sum() + za.index_select(1, lib.tensor([2, 0])).norm()
        return q, (q.abs() * lib.tensor(w)).sum() + r.sum() + q.angle().mean() + za.log().real.sum() + extra

    (qs, ls), (qt, lt) = run(*ours, sx), run(*theirs, torch)
    np.testing.assert_allclose(_np(qs), qt.detach().numpy(), rtol=2e-5, atol=2e-5)
    ls.backward()
    lt.backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(_np(o.grad), t.grad.numpy(), rtol=2e-4, atol=2e-4)
    p = torch.polar(torch.ones(3), torch.arange(3.0))
    np.testing.assert_allclose(_np(sx.polar(sx.ones(3), sx.arange(3.0))), p.numpy(), atol=1e-6)
    for x in ([1 + 2j, 0.5 - 1j], [[1 + 2j, 0.5 - 1j], [100.25 + 0j, -3 - 3.5j]]):
        assert repr(sx.tensor(x)) == repr(torch.tensor(x))


def test_save_and_load(tmp_path):
    a = _c((2, 3), np.complex64)
    state = {"z": sx.tensor(a), "w": sx.tensor(_c((4,)))}
    for fmt in ("sneppx", "torch"):
        path = tmp_path / f"state_{fmt}.pt"
        sx.save(state, path, **({"format": "torch"} if fmt == "torch" else {}))
        back = sx.load(path)
        assert back["z"].dtype == sx.complex64 and back["w"].dtype == sx.complex128
        np.testing.assert_array_equal(back["z"].numpy(), a)


@pytest.mark.parity
def test_files_cross_with_pytorch(tmp_path):
    torch = pytest.importorskip("torch")
    a = _c((3, 2), np.complex64)
    torch.save({"z": torch.tensor(a), "d": torch.tensor(a.astype(np.complex128))}, tmp_path / "t.pt")
    back = sx.load(tmp_path / "t.pt")
    np.testing.assert_array_equal(back["z"].numpy(), a)
    assert back["d"].dtype == sx.complex128
    sx.save({"z": sx.tensor(a)}, tmp_path / "s.pt", format="torch")
    np.testing.assert_array_equal(torch.load(tmp_path / "s.pt")["z"].numpy(), a)


def test_matmul_einsum_and_where():
    a, b = _c((2, 3, 4)), _c((4, 5))
    ta, tb = sx.tensor(a), sx.tensor(b)
    np.testing.assert_allclose(_np(ta @ tb), a @ b, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(_np(sx.einsum("bij,jk->bki", ta, tb)), np.einsum("bij,jk->bki", a, b), rtol=1e-13,
                               atol=1e-13)
    v = _c((4,))
    np.testing.assert_allclose(_np(sx.tensor(v) @ sx.tensor(v)), v @ v, rtol=1e-13)
    m = RNG.standard_normal((2, 3, 4)) > 0
    np.testing.assert_array_equal(_np(sx.where(sx.tensor(m), ta, 0.5j * ta)), np.where(m, a, 0.5j * a))
    np.testing.assert_array_equal(_np(ta.masked_fill(sx.tensor(m), 2.0)), np.where(m, 2.0 + 0j, a))
    with pytest.raises(TypeError, match="same dtype"):
        ta @ sx.tensor(b.real)
    # Gradients of a product written into a slice of a complex zeros tensor (a spectral layer's pattern).
    w = sx.tensor(_c((4, 5)), requires_grad=True)
    out = sx.zeros(2, 3, 6, dtype=sx.complex128)
    out[..., :5] = ta @ w
    (out.abs() ** 2).sum().backward()
    w0 = w.detach().numpy()  # dL/dx + i dL/dy of L = sum |a w|^2 at w = x + iy: 2 a^H (a w)
    np.testing.assert_allclose(w.grad.numpy(), 2 * np.einsum("bij,bik->jk", a.conj(), a @ w0), rtol=1e-12)


def _layouts(z):
    """z (2-D NumPy) as SneppX tensors of several layouts: contiguous, a transposed copy's view, a stepped slice."""
    wide = np.zeros((z.shape[0], 2 * z.shape[1]), z.dtype)
    wide[:, ::2] = z
    return {"contiguous": sx.tensor(z), "transposed": sx.tensor(np.ascontiguousarray(z.T)).t(),
            "stepped": sx.tensor(wide)[:, ::2]}


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("m,k,n", [(1, 7, 5), (6, 7, 1), (5, 1, 3), (33, 40, 37), (130, 96, 140), (24, 4200, 20)])
def test_matmul_kernel_matches_numpy(dtype, m, k, n):
    """The complex product (BLAS's cgemm / zgemm): row and column vectors, a depth of 1, products split over the
    threads by rows and into depth slices (k = 4200), operands transposed or strided."""
    a, b = _c((m, k), dtype), _c((k, n), dtype)
    want = a.astype(np.complex128) @ b.astype(np.complex128)
    tol = (2e-6 if dtype == np.complex64 else 1e-13) * np.sqrt(k) * np.abs(want).max()
    for la, ta in _layouts(a).items():
        for lb, tb in _layouts(b).items():
            got = ta @ tb
            assert got.dtype == ta.dtype and got.shape == (m, n), (la, lb)
            np.testing.assert_allclose(_np(got), want, rtol=0, atol=tol, err_msg=f"{la} @ {lb}")


def test_matmul_kernel_batches_vectors_and_empty():
    a, b = _c((4, 1, 3, 5)), _c((2, 5, 6))
    np.testing.assert_allclose(_np(sx.tensor(a) @ sx.tensor(b)), a @ b, rtol=1e-13, atol=1e-13)  # broadcast batch
    np.testing.assert_allclose(_np(sx.matmul(sx.tensor(a[0, 0]), sx.tensor(b[1]))), a[0, 0] @ b[1], rtol=1e-13)
    v, w = _c((5,)), _c((5,))
    np.testing.assert_allclose(_np(sx.tensor(b[0]).t() @ sx.tensor(v)), b[0].T @ v, rtol=1e-13)  # matrix @ vector
    np.testing.assert_allclose(_np(sx.tensor(v) @ sx.tensor(b[0])), v @ b[0], rtol=1e-13)  # vector @ matrix
    np.testing.assert_allclose(_np(sx.dot(sx.tensor(v), sx.tensor(w))), v @ w, rtol=1e-13)
    np.testing.assert_allclose(_np(sx.mm(sx.tensor(a[1, 0]), sx.tensor(b[0]))), a[1, 0] @ b[0], rtol=1e-13)
    np.testing.assert_allclose(_np(sx.bmm(sx.tensor(a[:2, 0]), sx.tensor(b))), a[:2, 0] @ b, rtol=1e-13)
    z = sx.tensor(_c((3, 0))) @ sx.tensor(_c((0, 4)))  # depth 0: zeros
    assert z.dtype == sx.complex128 and z.shape == (3, 4) and not z.abs().sum().item()
    assert (sx.ones(0, 3, dtype=sx.complex64) @ sx.ones(3, 2, dtype=sx.complex64)).shape == (0, 2)


@pytest.mark.parametrize("sa,sb", [((3, 4), (4, 2)), ((2, 3, 4), (4, 2)), ((2, 3, 4), (2, 4, 2)), ((4,), (4, 2)),
                                   ((3, 4), (4,)), ((4,), (4,)), ((1, 3, 4), (2, 4, 2))])
def test_matmul_gradients_match_finite_differences(sa, sb):
    """z.grad = dL/dx + i dL/dy for a real loss of a @ b: g @ b^H and a^H @ g, summed over broadcast batches."""
    a, b = _c(sa), _c(sb)
    wr, wi = RNG.standard_normal((2,) + (a @ b).shape)

    def loss(za, zb, lib):
        p = za @ zb
        if lib is np:
            return float((p.real * wr + p.imag * wi).sum() + (np.abs(p) ** 2).sum())
        return (p.real * sx.tensor(wr) + p.imag * sx.tensor(wi)).sum() + (p.abs() ** 2).sum()

    ta, tb = sx.tensor(a, requires_grad=True), sx.tensor(b, requires_grad=True)
    loss(ta, tb, sx).backward()
    np.testing.assert_allclose(_np(ta.grad), _fd_grad(lambda z: loss(z, b, np), a), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(_np(tb.grad), _fd_grad(lambda z: loss(a, z, np), b), rtol=1e-6, atol=1e-7)
    tb2 = sx.tensor(b, requires_grad=True)  # only one operand recording
    loss(sx.tensor(a), tb2, sx).backward()
    np.testing.assert_allclose(_np(tb2.grad), _np(tb.grad), rtol=1e-13, atol=1e-13)


def test_matmul_second_order_gradient():
    """create_graph through the product: d/da of sum |dL/db|^2 against finite differences of the first gradient."""
    a, b = _c((3, 4)), _c((4, 2))

    def grad_b_norm(za):  # |a^H g|^2 summed, with g = 2 a b (the gradient of sum |a b|^2), computed in NumPy
        gb = za.conj().T @ (2 * (za @ b))
        return float((np.abs(gb) ** 2).sum())

    ta, tb = sx.tensor(a, requires_grad=True), sx.tensor(b, requires_grad=True)
    (gb,) = sx.autograd.grad(((ta @ tb).abs() ** 2).sum(), [tb], create_graph=True)
    np.testing.assert_allclose(_np(gb), a.conj().T @ (2 * (a @ b)), rtol=1e-12)
    (gb.abs() ** 2).sum().backward()
    np.testing.assert_allclose(_np(ta.grad), _fd_grad(grad_b_norm, a), rtol=1e-6, atol=1e-6)


@pytest.mark.parity
@pytest.mark.parametrize("sa,sb", [((5, 6), (6, 4)), ((3, 5, 6), (6,)), ((2, 1, 5, 6), (3, 6, 4)), ((6,), (2, 6, 4))])
def test_matmul_matches_pytorch(sa, sb):
    """Values and gradients (PyTorch's convention) of complex64 products of every shape class."""
    torch = pytest.importorskip("torch")
    a, b = _c(sa, np.complex64), _c(sb, np.complex64)
    w = _c((a @ b).shape, np.complex64)
    ours = [sx.tensor(a, requires_grad=True), sx.tensor(b, requires_grad=True)]
    theirs = [torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)]
    ps, pt = ours[0] @ ours[1], theirs[0] @ theirs[1]
    np.testing.assert_allclose(_np(ps), pt.detach().numpy(), rtol=1e-5, atol=1e-5)
    ((ps * sx.tensor(w)).real.sum() + ps.abs().sum()).backward()
    ((pt * torch.tensor(w)).real.sum() + pt.abs().sum()).backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(_np(o.grad), t.grad.resolve_conj().numpy(), rtol=1e-4, atol=1e-4)
