"""Names PyTorch programs use around their models: Size, compile, jit, random.fork_rng, serialization."""

import pytest
import sneppx_core as sx


def test_size():
    s = sx.Size([2, 3, 4])
    assert s == (2, 3, 4) and s == sx.zeros(2, 3, 4).shape and isinstance(s, tuple)
    assert s.numel() == 24 and sx.Size([]).numel() == 1 and sx.Size([3, 0]).numel() == 0
    assert isinstance(s[1:], sx.Size) and s[1:] == (3, 4) and s[0] == 2 and isinstance(s + (5,), sx.Size)
    assert repr(s) == "sneppx.Size([2, 3, 4])" and sx.zeros(s).shape == (2, 3, 4)
    assert sx.Size(sx.tensor([2, 5]).tolist()) == (2, 5)
    for bad in ([1.5], [True], ["a"]):
        with pytest.raises(TypeError, match="Size"):
            sx.Size(bad)


def test_compile_returns_the_code_unchanged():
    def f(x):
        return x * 2 if x.sum() > 0 else -x  # data-dependent control flow keeps working

    assert sx.compile(f) is f
    g = sx.compile(mode="max-autotune", fullgraph=True)(f)
    assert g is f and sx.equal(g(sx.ones(3)), sx.full((3,), 2.0)) and sx.equal(g(-sx.ones(3)), sx.ones(3))
    with pytest.raises(RuntimeError, match="mode"):
        sx.compile(f, mode="fastest")
    with pytest.raises(RuntimeError, match="both"):
        sx.compile(f, mode="default", options={})
    with pytest.raises(RuntimeError, match="callable"):
        sx.compile(3)
    assert not sx.compiler.is_compiling() and sx.compiler.disable(f) is f and sx.compiler.disable()(f) is f


def test_jit():
    @sx.jit.script
    def f(x):
        return x + 1

    assert sx.equal(f(sx.zeros(2)), sx.ones(2)) and sx.jit.trace(f, (sx.zeros(2),)) is f
    assert not sx.jit.is_scripting() and not sx.jit.is_tracing()
    assert sx.jit.ignore(f) is f and sx.jit.ignore(drop=True)(f) is f and sx.jit.unused(f) is f
    assert sx.jit.annotate(list, [1]) == [1]
    with pytest.raises(NotImplementedError, match="TorchScript"):
        sx.jit.save(f, "x.pt")
    with pytest.raises(NotImplementedError, match="TorchScript"):
        sx.jit.load("x.pt")
    with pytest.raises(TypeError, match="jit.trace"):
        sx.jit.trace(3)


def test_random_fork_rng():
    sx.random.manual_seed(7)
    with sx.random.fork_rng():
        inside = sx.rand(5)
        sx.manual_seed(123)
        sx.rand(3)
    after = sx.rand(5)
    assert sx.equal(inside, after)  # the draws after the block are those without it
    sx.random.manual_seed(7)
    with sx.random.fork_rng(enabled=False):
        sx.rand(5)
    assert not sx.equal(sx.rand(5), after)  # not restored: the stream moved on
    assert sx.random.initial_seed() == 7
    state = sx.random.get_rng_state()
    a = sx.rand(4)
    sx.random.set_rng_state(state)
    assert sx.equal(a, sx.rand(4))


def test_serialization_safe_globals(tmp_path):
    ser = sx.serialization
    ser.clear_safe_globals()
    ser.add_safe_globals([sx.Tensor, (sx.Size, "sneppx.Size")])
    assert ser.get_safe_globals() == [sx.Tensor, (sx.Size, "sneppx.Size")]
    with ser.safe_globals([dict]):
        assert ser.get_safe_globals()[-1] is dict
        ser.save({"w": sx.ones(2)}, tmp_path / "a.pt")
        assert sx.equal(ser.load(tmp_path / "a.pt")["w"], sx.ones(2))
    assert dict not in ser.get_safe_globals()
    with pytest.raises(TypeError, match="list"):
        ser.add_safe_globals(sx.Tensor)
    ser.clear_safe_globals()
    assert ser.get_safe_globals() == []
