"""``testing.assert_close`` and ``testing.make_tensor``: what passes and fails (tolerances by dtype, NaN, inf,
shape/dtype/stride checks, nested containers, scalars), checked against the closeness rule computed with NumPy;
the parity tests compare each outcome and message with PyTorch's."""

import numpy as np
import pytest

import sneppx_core as sx
from sneppx_core.testing import assert_close, make_tensor

NAN, INF = float("nan"), float("inf")


def _outcome(fn):
    try:
        fn()
        return "ok"
    except (AssertionError, TypeError, ValueError) as e:
        return f"{type(e).__name__}: {e}"


@pytest.mark.parametrize("dtype, rtol, atol", [("float32", 1.3e-6, 1e-5), ("float64", 1e-7, 1e-7),
                                               ("float16", 1e-3, 1e-5), ("bfloat16", 1.6e-2, 1e-5)])
def test_default_tolerances_follow_the_dtype(dtype, rtol, atol):
    base = np.array([1.0, -2.0, 4.0])
    for factor, want in ((1 + 0.9 * rtol, True), (1 + 3 * rtol + 3 * atol, False)):
        a = sx.tensor(base * factor, dtype=getattr(sx, dtype))
        e = sx.tensor(base, dtype=getattr(sx, dtype))
        an, en = a.float().numpy().astype(np.float64), e.float().numpy().astype(np.float64)
        close = bool(np.all(np.abs(an - en) <= atol + rtol * np.abs(en)))  # the rule, on the stored values
        assert close == want or dtype in ("float16", "bfloat16")  # low precision may round the factor away
        assert (_outcome(lambda: assert_close(a, e)) == "ok") == close


def test_failure_message_names_count_and_greatest_differences():
    msg = _outcome(lambda: assert_close(sx.tensor([1.0, 2.0, 3.0]), sx.tensor([1.0, 2.5, 3.0])))
    assert msg.startswith("AssertionError: Tensor-likes are not close!")
    assert "Mismatched elements: 1 / 3 (33.3%)" in msg
    assert "Greatest absolute difference: 0.5 at index (1,) (up to 1e-05 allowed)" in msg
    assert "Greatest relative difference: 0.2 at index (1,) (up to 1.3e-06 allowed)" in msg


def test_integers_and_bools_compare_exactly():
    assert "Tensor-likes are not equal!" in _outcome(lambda: assert_close(sx.tensor([1, 2]), sx.tensor([1, 3])))
    assert "not equal" in _outcome(lambda: assert_close(sx.tensor([True]), sx.tensor([False])))
    assert_close(sx.tensor([5, 6]), sx.tensor([5, 6]))


def test_nan_inf_and_explicit_tolerances():
    assert _outcome(lambda: assert_close(sx.tensor([NAN]), sx.tensor([NAN]))) != "ok"
    assert_close(sx.tensor([NAN, 1.0]), sx.tensor([NAN, 1.0]), equal_nan=True)
    assert_close(sx.tensor([INF, -INF]), sx.tensor([INF, -INF]))
    assert _outcome(lambda: assert_close(sx.tensor([INF]), sx.tensor([-INF]))) != "ok"
    assert_close(sx.ones(2), sx.ones(2) * 1.5, rtol=0.5, atol=0.0)  # |1 - 1.5| <= 0.5 * 1.5
    with pytest.raises(ValueError, match="rtol' and 'atol"):
        assert_close(sx.ones(2), sx.ones(2), rtol=1.0)


def test_attribute_checks():
    assert "'shape' do not match" in _outcome(lambda: assert_close(sx.ones(3), sx.ones(2)))
    assert "'dtype' do not match" in _outcome(lambda: assert_close(sx.ones(2), sx.ones(2, dtype=sx.float64)))
    assert_close(sx.ones(2), sx.ones(2, dtype=sx.float64), check_dtype=False)
    x = sx.ones(2, 2)
    assert_close(x, x.t())
    assert "'stride()' do not match: (2, 1) != (1, 2)" in _outcome(lambda: assert_close(x, x.t(), check_stride=True))
    assert_close(sx.ones(2, requires_grad=True), sx.ones(2))


def test_containers_scalars_and_arrays():
    msg = _outcome(lambda: assert_close({"a": [sx.ones(2)]}, {"a": [sx.ones(2) * 2]}))
    assert msg.endswith("The failure occurred for item ['a'][0]")
    assert "length of the sequences" in _outcome(lambda: assert_close([1.0], [1.0, 2.0]))
    assert "keys of the mappings" in _outcome(lambda: assert_close({"a": 1}, {"b": 1}))
    assert_close(1.0, 1.0 + 1e-9)
    assert "Scalars are not equal!" in _outcome(lambda: assert_close(1, 2))
    assert _outcome(lambda: assert_close(sx.tensor(1.0), 1.0)).startswith("TypeError: No comparison pair")
    assert "not close" in _outcome(lambda: assert_close(np.ones(2), np.ones(2) * 2))
    assert _outcome(lambda: assert_close(sx.ones(2), sx.ones(2) * 2, msg="custom")) == "AssertionError: custom"


def test_make_tensor_ranges_and_layout():
    sx.manual_seed(0)
    f = make_tensor((50, 4), dtype=sx.float32, low=-1, high=2)
    assert f.shape == (50, 4) and f.dtype == sx.float32
    v = f.numpy()
    assert v.min() >= -1 and v.max() < 2 and v.std() > 0.5
    i = make_tensor(200, dtype=sx.int64, noncontiguous=True)
    assert not i.is_contiguous() and -9 <= i.numpy().min() and i.numpy().max() <= 9
    assert make_tensor(3, dtype=sx.float32, requires_grad=True).requires_grad
    assert (make_tensor(500, dtype=sx.int64, low=-1, high=2, exclude_zero=True).numpy() != 0).all()
    sx.manual_seed(1)
    a = make_tensor(5, dtype=sx.float32)
    sx.manual_seed(1)
    np.testing.assert_array_equal(a.numpy(), make_tensor(5, dtype=sx.float32).numpy())


CASES = [
    lambda m: m.assert_close(m.tensor([1.0, 2.0, 3.0]), m.tensor([1.0, 2.5, 3.0])),
    lambda m: m.assert_close(m.tensor([1, 2, 7]), m.tensor([1, 3, 7])),
    lambda m: m.assert_close(m.tensor([1.0, 2.0]), m.tensor([1.0, 2.0], dtype=m.float64)),
    lambda m: m.assert_close(m.tensor([NAN]), m.tensor([NAN])),
    lambda m: m.assert_close([m.ones(2)], [m.ones(2) * 2]),
    lambda m: m.assert_close({"k": m.ones(2)}, {"k": m.ones(2) * 2}),
    lambda m: m.assert_close(1.0, 2.0),
    lambda m: m.assert_close(1, 2),
    lambda m: m.assert_close(m.ones(2), m.ones(2) * 1.5, rtol=1),
    lambda m: m.assert_close(m.ones(2, 2), m.ones(2, 2).t(), check_stride=True),
    lambda m: m.assert_close(m.tensor([True, False]), m.tensor([False, False])),
    lambda m: m.assert_close(m.tensor([1.0, 1.0 + 1e-6]), m.tensor([1.0, 1.0])),
]


@pytest.mark.parity
@pytest.mark.parametrize("case", range(len(CASES)))
def test_parity_outcomes_and_messages(case):
    torch = pytest.importorskip("torch")

    class T:  # torch's names for what CASES uses
        tensor, ones, float64, assert_close = torch.tensor, torch.ones, torch.float64, torch.testing.assert_close

    class S:
        tensor, ones, float64, assert_close = sx.tensor, sx.ones, sx.float64, assert_close

    want = _outcome(lambda: CASES[case](T)).replace("torch.", "").replace("Size([", "(").replace("])", ",)")
    got = _outcome(lambda: CASES[case](S)).replace("sneppx.", "")
    assert got.split("\n")[0] == want.split("\n")[0]
    for line in want.split("\n")[1:]:  # the same counts and indices; differences to 6 significant digits
        if "difference" in line:
            head, value = line.split(": ", 1)
            num, _, rest = value.partition(" ")
            got_line = next(g for g in got.split("\n") if g.startswith(head))
            g_num, _, g_rest = got_line.split(": ", 1)[1].partition(" ")
            assert float(g_num) == pytest.approx(float(num), rel=1e-6, nan_ok=True) and g_rest == rest
        else:
            assert line in got.split("\n")
