"""Fuzzing: Hypothesis draws shapes, strides, dtypes, indices and bad values for ops, indexing and
in-place writes. Each property runs in a subprocess that prints every example before running it,
so a crash fails the test and the output ends with the example that caused it.

Results are checked against NumPy where NumPy defines them; otherwise the only requirement is a
clean Python exception (ValueError, TypeError, IndexError, RuntimeError, MemoryError,
NotImplementedError). ``nox -s fuzz`` gives each property SNEPPX_FUZZ_SECONDS (default there 20);
the ordinary suite gives each a couple of seconds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("hypothesis")

pytestmark = pytest.mark.fuzz

DRIVER = textwrap.dedent(
    r'''
    import sys, time, warnings
    import numpy as np
    from hypothesis import given, settings, strategies as st, HealthCheck
    import sneppx_core as S

    FAMILY, BUDGET = sys.argv[1], float(sys.argv[2])
    CLEAN = (ValueError, TypeError, IndexError, RuntimeError, MemoryError, NotImplementedError)
    DTYPES = ["float32", "float64", "int32", "int64", "bool", "uint8", "int8", "int16", "float16"]
    T0 = time.monotonic()
    warnings.simplefilter("ignore")

    def show(*parts):
        print(*parts, file=sys.stderr, flush=True)

    shapes = st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple)

    @st.composite
    def arrays(draw, dtypes=DTYPES):
        """A NumPy array and a tensor with the same values, the tensor often a strided view."""
        shape = draw(shapes)
        dt = draw(st.sampled_from(dtypes))
        n = int(np.prod(shape)) if shape else 1
        vals = np.array(draw(st.lists(st.integers(-5, 5), min_size=n, max_size=n)) or [0])[:n]
        a = vals.reshape(shape).astype(dt)
        t = S.tensor(a)
        how = draw(st.sampled_from(["plain", "transpose", "step", "expand"]))
        if how == "transpose" and a.ndim >= 2:
            a, t = a.swapaxes(0, -1), t.transpose(0, -1)
        elif how == "step" and a.ndim >= 1:
            a, t = a[::2], t[::2]
        elif how == "expand" and a.ndim >= 1 and a.shape[0] == 1:
            a = np.broadcast_to(a, (3,) + a.shape[1:])
            t = t.expand(3, *a.shape[1:])
        return a, t

    def expect_same(got, want):
        got = got.numpy() if hasattr(got, "numpy") else np.asarray(got)
        want = np.asarray(want)
        assert got.shape == want.shape, (got.shape, want.shape)
        if want.dtype.kind == "f" or got.dtype.kind == "f":
            np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=1e-3, atol=1e-3)
        else:
            np.testing.assert_array_equal(got, want)

    def timed_out():
        return time.monotonic() - T0 > BUDGET

    SETTINGS = settings(max_examples=30, deadline=None, database=None, derandomize=False,
                        suppress_health_check=list(HealthCheck))

    UNARY = ["neg", "abs", "exp", "sqrt", "sum", "mean", "amax", "flatten", "clone", "contiguous", "t", "flip0",
             "roll", "cumsum", "argmax", "float", "long", "bool"]
    BINARY = ["add", "sub", "mul", "div", "eq", "lt", "maximum", "matmul", "cat"]

    @SETTINGS
    @given(x=arrays(), y=arrays(), op=st.sampled_from(UNARY + BINARY),
           dim=st.integers(-5, 5), bad=st.sampled_from([None, 2**63, -1, 10**30, float("nan"), "x"]))
    def ops(x, y, op, dim, bad):
        if timed_out():
            return
        (a, t), (b, u) = x, y
        show("ops", op, a.dtype, a.shape, t.stride(), b.dtype, b.shape, dim, repr(bad))
        try:
            if op == "sum" and bad is not None:
                t.sum(dim=bad)
            elif op == "sum":
                r = t.sum()
                if a.dtype.kind == "f":
                    expect_same(r, a.astype(np.float64).sum())
            elif op == "add":
                r = t + u
                if a.dtype == b.dtype == np.float64:
                    expect_same(r, a + b)
            elif op == "matmul":
                t @ u
            elif op == "cat":
                S.cat([t, u], dim)
            elif op == "roll":
                r = S.roll(t, dim, 0) if t.ndim else t.roll(dim)
                assert r is not t
            elif op == "flip0":
                r = S.flip(t, [0])
                if a.ndim:
                    expect_same(r, np.flip(a, 0))
            elif op in ("amax", "argmax", "cumsum", "mean"):
                getattr(t, op)(dim)
            elif op == "t":
                r = t.transpose(0, -1)
                if a.ndim:
                    expect_same(r, np.swapaxes(a, 0, -1))
            elif op in ("float", "long", "bool"):
                getattr(t, op)()
            elif op in ("maximum", "eq", "lt", "sub", "mul", "div"):
                r = getattr(S, op)(t, u)
                if op == "mul" and a.dtype == b.dtype == np.int64:
                    with np.errstate(all="ignore"):
                        expect_same(r, a * b)
            else:
                getattr(t, op)()
        except CLEAN:
            pass

    def index_items():
        ints = st.one_of(st.integers(-6, 6), st.sampled_from([2**63, -(2**63) - 1, 10**30, 2**31]))
        bound = st.one_of(st.none(), st.integers(-8, 8), st.sampled_from([10**30, -(10**30), 2**63]))
        slices = st.builds(slice, bound, bound, st.one_of(st.none(), st.integers(1, 3)))
        masks = st.builds(lambda s, l: np.ones(s, bool) if not l else np.ones(s, bool).tolist(),
                          st.lists(st.integers(0, 4), min_size=0, max_size=4).map(tuple), st.booleans())
        int_arrays = st.lists(st.integers(-6, 6), min_size=0, max_size=4).map(np.array)
        return st.one_of(ints, slices, st.none(), st.just(Ellipsis), masks, int_arrays)

    @SETTINGS
    @given(x=arrays(), idx=st.lists(index_items(), min_size=0, max_size=4).map(tuple), as_tuple=st.booleans())
    def indexing(x, idx, as_tuple):
        if timed_out():
            return
        a, t = x
        key = idx if as_tuple or len(idx) != 1 else idx[0]
        show("index", a.dtype, a.shape, t.stride(), repr(key)[:300])
        try:
            want = a[key]
        except Exception:
            want = None
        try:
            got = t[key]
        except CLEAN:
            return
        # NumPy treats ints as advanced indices when arrays or scalar bools are present
        # (x[0, ..., True] is (1, 4, 4) there, (4, 4, 1) in PyTorch); PyTorch, the contract here,
        # keeps them basic: compare only where the two agree by construction.
        items = idx if isinstance(key, tuple) else (key,)
        advanced = [isinstance(i, (np.ndarray, list, bool)) for i in items]
        mixed = (any(isinstance(i, int) and not isinstance(i, bool) for i in items) and any(advanced))
        # Advanced indices with only an Ellipsis between them: NumPy always calls them apart and puts
        # their dims first; PyTorch calls them adjacent when the Ellipsis stands for no dims
        # (x[:, [0], ..., [0]] of shape (2, 3, 4) is (1, 2) in NumPy, (2, 1) in PyTorch; that rule is
        # tested in test_properties.py, against PyTorch too).
        adv_at = [k for k, a in enumerate(advanced) if a]
        split = any(items[k] is Ellipsis for k in range(adv_at[0], adv_at[-1])) if adv_at else False
        if want is not None and not mixed and not split and np.asarray(want).size < 10_000:
            expect_same(got, want)

    @SETTINGS
    @given(x=arrays(dtypes=["float32", "float64", "int32", "int64", "bool"]), idx=index_items(),
           value=st.sampled_from([0, 1, -1, 2.5, 2**40, 2**63, float("nan"), float("inf"), True, [1, 2], "x", None]),
           how=st.sampled_from(["setitem", "fill_", "add_", "copy_", "mul_", "zero_"]), readonly=st.booleans())
    def inplace(x, idx, value, how, readonly):
        if timed_out():
            return
        a, t = x
        a = np.array(a)  # writable, contiguous copy
        if readonly:
            a.flags.writeable = False
        t = S.from_numpy(a)
        before = a.copy()
        show("inplace", how, a.dtype, a.shape, readonly, repr(idx)[:200], repr(value))
        try:
            if how == "setitem":
                t[idx] = value
            elif how == "fill_":
                t.fill_(value)
            elif how == "add_":
                t.add_(value)
            elif how == "mul_":
                t.mul_(value)
            elif how == "copy_":
                t.copy_(S.tensor(value))
            else:
                t.zero_()
        except CLEAN:
            pass
        if readonly:
            np.testing.assert_array_equal(a, before)

    prop = {"ops": ops, "indexing": indexing, "inplace": inplace}[FAMILY]
    prop()  # at least one batch, then fresh random batches until the time budget is spent
    while not timed_out():
        prop()
    print("DONE", FAMILY, file=sys.stderr)
    '''
)


@pytest.mark.parametrize("family", ["ops", "indexing", "inplace"])
def test_fuzz(family, tmp_path):
    budget = float(os.environ.get("SNEPPX_FUZZ_SECONDS", "2"))
    script = tmp_path / "fuzz_driver.py"
    script.write_text(DRIVER)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run(
        [sys.executable, str(script), family, str(budget)], capture_output=True, text=True,
        timeout=budget * 4 + 120, env=env,
    )
    tail = proc.stderr[-6000:]
    assert proc.returncode == 0, f"{family} fuzzing failed (rc={proc.returncode}); last examples:\n{tail}"
    assert f"DONE {family}" in proc.stderr
