"""functional.grouped_mm: the four layouts against NumPy per group, gradients against float64 finite
differences, errors, and PyTorch's CPU kernel on the rows it defines (marked parity)."""

import numpy as np
import pytest

import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_core.testing import gradcheck

RNG = np.random.default_rng(12)
ENDS = [8, 16, 32]


def _offs():
    return sx.tensor(ENDS, dtype=sx.int32)


def _layouts():
    """(name, a, b, offs, NumPy reference)"""
    a2, b3 = RNG.standard_normal((40, 8)), RNG.standard_normal((3, 8, 8))
    ref = np.zeros((40, 8))
    for g, (s, e) in enumerate(zip([0] + ENDS, ENDS)):
        ref[s:e] = a2[s:e] @ b3[g]
    a3 = RNG.standard_normal((3, 8, 8))
    a22, b22 = RNG.standard_normal((8, 40)), RNG.standard_normal((40, 8))
    ref22 = np.stack([a22[:, s:e] @ b22[s:e] for s, e in zip([0] + ENDS, ENDS)])
    b32 = RNG.standard_normal((8, 40))
    ref32 = np.zeros((8, 40))
    for g, (s, e) in enumerate(zip([0] + ENDS, ENDS)):
        ref32[:, s:e] = a3[g] @ b32[:, s:e]
    return [("2d3d", a2, b3, True, ref), ("3d3d", a3, b3, False, a3 @ b3), ("2d2d", a22, b22, True, ref22),
            ("3d2d", a3, b32, True, ref32)]


@pytest.mark.parametrize("case", _layouts(), ids=lambda c: c[0])
def test_layouts_against_numpy(case):
    _, a, b, with_offs, ref = case
    out = F.grouped_mm(sx.tensor(a), sx.tensor(b), offs=_offs() if with_offs else None)
    np.testing.assert_allclose(out.numpy(), ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", _layouts(), ids=lambda c: c[0])
def test_gradients(case):
    _, a, b, with_offs, _ = case
    offs = _offs() if with_offs else None
    assert gradcheck(lambda x, y: F.grouped_mm(x, y, offs=offs),
                     [sx.tensor(a, requires_grad=True), sx.tensor(b, requires_grad=True)])


def test_out_dtype_and_errors():
    a, b = sx.randn(40, 8, dtype=sx.bfloat16), sx.randn(3, 8, 8, dtype=sx.bfloat16)
    assert F.grouped_mm(a, b, offs=_offs(), out_dtype=sx.float32).dtype == sx.float32
    with pytest.raises(ValueError, match="offs is required"):
        F.grouped_mm(a, b)
    with pytest.raises(ValueError, match="offs has 2 groups; mat_b has 3"):
        F.grouped_mm(a, b, offs=sx.tensor([8, 16], dtype=sx.int32))
    with pytest.raises(ValueError, match="must increase"):
        F.grouped_mm(a, b, offs=sx.tensor([8, 4, 16], dtype=sx.int32))
    with pytest.raises(ValueError, match="within the rows of mat_a"):
        F.grouped_mm(a, b, offs=sx.tensor([8, 16, 48], dtype=sx.int32))
    with pytest.raises(TypeError, match="one dtype"):
        F.grouped_mm(a, b.float(), offs=_offs())
    with pytest.raises(TypeError, match="1-d integer tensor"):
        F.grouped_mm(a, b, offs=sx.tensor([8.0, 16.0, 32.0]))
    with pytest.raises(NotImplementedError, match="bias"):
        F.grouped_mm(a, b, offs=_offs(), bias=sx.zeros(8, dtype=sx.bfloat16))
    with pytest.raises(ValueError, match="2-d or 3-d"):
        F.grouped_mm(sx.zeros(8), b, offs=_offs())


@pytest.mark.parity
@pytest.mark.parametrize("case", _layouts(), ids=lambda c: c[0])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_matches_torch(torch, case, dtype):
    name, a, b, with_offs, _ = case
    got = F.grouped_mm(sx.tensor(a, dtype=getattr(sx, dtype)), sx.tensor(b, dtype=getattr(sx, dtype)),
                       offs=_offs() if with_offs else None).float().numpy()
    want = torch.nn.functional.grouped_mm(torch.tensor(a, dtype=getattr(torch, dtype)),
                                          torch.tensor(b, dtype=getattr(torch, dtype)),
                                          offs=torch.tensor(ENDS, dtype=torch.int32) if with_offs else None)
    want = want.float().numpy()
    if name == "2d3d":  # PyTorch leaves the rows beyond offs[-1] unset
        got, want = got[:ENDS[-1]], want[:ENDS[-1]]
    if name == "3d2d":
        got, want = got[:, :ENDS[-1]], want[:, :ENDS[-1]]
    tol = 1e-5 if dtype == "float32" else 2e-2
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 8)
