"""einsum against NumPy (forward), finite differences (backward) and PyTorch (under parity)."""

from __future__ import annotations

import numpy as np
import pytest
import sneppx_core as sx
from sneppx_core.testing import gradcheck

CASES = [
    ("ij,jk->ik", [(3, 4), (4, 5)]), ("ij,jk", [(3, 4), (4, 2)]), ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("i,i->", [(5,), (5,)]), ("i,j->ij", [(3,), (4,)]), ("ij->ji", [(3, 4)]), ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]), ("ii->i", [(4, 4)]), ("ii", [(4, 4)]), ("ij,ij->ij", [(3, 4), (3, 4)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]), ("bhqk,bhkd->bhqd", [(2, 3, 4, 6), (2, 3, 6, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)]), ("...ij,jk->...ik", [(2, 2, 3, 4), (4, 5)]),
    ("...ij->...ji", [(2, 3, 4)]), ("i...->...", [(3, 2, 4)]), ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 5)]),
    ("ab,bc,ca->", [(3, 4), (4, 5), (5, 3)]), ("ijk,ikl->jl", [(2, 3, 4), (2, 4, 5)]), ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("ij,kj->ik", [(3, 4), (5, 4)]), ("bi,bi->b", [(4, 6), (4, 6)]), ("ij,j->i", [(3, 4), (4,)]),
    ("i,i,i->i", [(4,), (4,), (4,)]), ("bij,bj->bi", [(1, 3, 4), (5, 4)]), ("ijk->kji", [(2, 3, 4)]),
    (" ij , jk -> ik ", [(2, 3), (3, 2)]), ("iij->j", [(3, 3, 2)]),
    # the second operand's leading labels as a broadcast batch (16 or more of its own labels' elements last)
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 17), (2, 17)]), ("bn,anm->bam", [(2, 3), (4, 3, 16)]),
    ("n,anm->am", [(3,), (2, 3, 20)]), ("bn,acnm->bacm", [(2, 3), (2, 2, 3, 16)]),
    ("bn,anm->mab", [(2, 3), (3, 3, 16)]),
    ("bnk,ankm->bam", [(2, 3, 2), (2, 3, 2, 16)]), ("bkn,ankm->bam", [(2, 2, 3), (2, 3, 2, 16)]),
    ("bn,amn->bam", [(2, 3), (2, 16, 3)]), ("bn,anm->bam", [(2, 3), (4, 3, 15)]),
]


def _operands(shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s) for s in shapes]


@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0].replace(" ", "_") for c in CASES])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_einsum_matches_numpy(eq, shapes, dtype):
    arrs = _operands(shapes)
    out = sx.einsum(eq, *[sx.tensor(a, dtype=dtype) for a in arrs])
    ref = np.einsum(eq.replace(" ", ""), *arrs)
    assert out.shape == ref.shape and out.dtype == dtype
    tol = 1e-12 if dtype == "float64" else 1e-5
    np.testing.assert_allclose(out.numpy(), ref, rtol=tol, atol=tol)


def test_einsum_integer_and_list_form():
    a, b = sx.arange(6).reshape(2, 3), sx.arange(12).reshape(3, 4)
    out = sx.einsum("ij,jk->ik", [a, b])
    assert out.dtype == sx.int64
    np.testing.assert_array_equal(out.numpy(), np.arange(6).reshape(2, 3) @ np.arange(12).reshape(3, 4))


@pytest.mark.parametrize("eq,shapes", [c for c in CASES if c[0] not in ("ii->i", "ii", "iij->j")],
                         ids=[c[0].replace(" ", "_") for c in CASES if c[0] not in ("ii->i", "ii", "iij->j")])
def test_einsum_gradients(eq, shapes):
    xs = [sx.tensor(a, dtype=sx.float64, requires_grad=True) for a in _operands(shapes, 1)]
    assert gradcheck(lambda *t: sx.einsum(eq, *t), xs)


def test_einsum_diagonal_gradient():
    x = sx.tensor(_operands([(3, 3)])[0], requires_grad=True, dtype=sx.float64)
    sx.einsum("ii->", x).backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.eye(3))


def test_einsum_plan_is_per_shape():
    """The parsed plan is kept per equation and shapes: the same equation on other shapes, a call that
    fails and the first shapes again each give their own result."""
    rng = np.random.default_rng(5)
    arrs = [rng.standard_normal(s) for s in [(3, 4), (5, 4), (2, 6), (7, 6)]]
    t = [sx.tensor(a) for a in arrs]
    for _ in range(2):
        np.testing.assert_allclose(sx.einsum("ij,kj->ik", t[0], t[1]).numpy(), arrs[0] @ arrs[1].T, rtol=1e-12)
        np.testing.assert_allclose(sx.einsum("ij,kj->ik", t[2], t[3]).numpy(), arrs[2] @ arrs[3].T, rtol=1e-12)
        with pytest.raises(ValueError, match=r"\[einsum\].*'j'"):
            sx.einsum("ij,kj->ik", t[0], t[3])


@pytest.mark.parametrize(
    "args,exc,pattern",
    [(("ij,jk->ik", sx.ones(2, 3), sx.ones(4, 5)), ValueError, r"\[einsum\].*'j'.*size"),
     (("ij,jk->ik", sx.ones(2, 3)), ValueError, r"\[einsum\].*2 operands but 1"),
     (("ijk->i", sx.ones(2, 3)), ValueError, r"\[einsum\].*\(2, 3\)"),
     (("ij->iq", sx.ones(2, 3)), ValueError, r"\[einsum\].*'q'"),
     (("ij->ii", sx.ones(2, 3)), ValueError, r"\[einsum\].*more than once"),
     (("i1->i", sx.ones(2, 3)), ValueError, r"\[einsum\].*letters"),
     (("ij,jk", sx.ones(2, 3), sx.ones(3, 2, dtype=sx.float64)), TypeError, r"\[einsum\].*dtype"),
     ((3, sx.ones(2)), TypeError, r"\[einsum\].*string"),
     (("i->i", [1, 2]), TypeError, r"\[einsum\].*Tensor")],
)
def test_einsum_errors(args, exc, pattern):
    with pytest.raises(exc, match=pattern):
        sx.einsum(*args)


@pytest.mark.parity
@pytest.mark.parametrize("eq,shapes", CASES, ids=[c[0].replace(" ", "_") for c in CASES])
def test_einsum_matches_torch(eq, shapes, torch):
    arrs = [a.astype(np.float32) for a in _operands(shapes, 2)]
    xs = [sx.tensor(a, requires_grad=True) for a in arrs]
    ts = [torch.tensor(a, dtype=torch.float32, requires_grad=True) for a in arrs]
    out, tout = sx.einsum(eq, *xs), torch.einsum(eq, *ts)
    np.testing.assert_allclose(out.detach().numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5)
    seed = np.random.default_rng(3).standard_normal(tuple(out.shape)).astype(np.float32)
    out.backward(sx.tensor(seed))
    tout.backward(torch.from_numpy(seed))
    for x, t in zip(xs, ts):
        np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)
