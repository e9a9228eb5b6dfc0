"""Bad input: every error is a ValueError, TypeError, IndexError, RuntimeError or MemoryError whose
message names the op and the offending shapes/dtypes/values, and no input crashes the interpreter."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
import sneppx_core as sx

ones, T = sx.ones, sx.tensor

CASES = [
    # (call, exception, regex the message must match: op name and the offending shapes/dtypes/values)
    (lambda: ones(2, 3) @ ones(4, 5), ValueError, r"\[matmul\] shapes \(2, 3\) and \(4, 5\)"),
    (lambda: ones(2, 3) @ ones(3, 2, dtype="float64"), TypeError, r"\[matmul\].*float32 and float64"),
    (lambda: sx.matmul(ones(()), ones(3)), ValueError, r"\[matmul\].*\(\).*\(3,\)"),
    (lambda: ones(2, 3) + ones(4, 3), ValueError, r"\[add\] shapes \(2, 3\) and \(4, 3\) cannot be broadcast"),
    (lambda: sx.maximum(ones(2), ones(3)), ValueError, r"\[maximum\] shapes \(2,\) and \(3,\)"),
    (lambda: sx.where(ones(2) > 0, ones(3), ones(2)), ValueError, r"\[where\].*\(2,\).*\(3,\)"),
    (lambda: sx.where(ones(2), ones(2), ones(2)), TypeError, r"\[where\].*bool.*float32 \(2,\)"),
    (lambda: ones(2).masked_fill(ones(2), 1), TypeError, r"\[masked_fill\].*float32 \(2,\)"),
    (lambda: ones(2).masked_fill(ones(3) > 0, 1), ValueError, r"\[masked_fill\].*\(2,\).*\(3,\)|\(3,\).*\(2,\)"),
    (lambda: ones(2) + "a", TypeError, r"unsupported operand type str.*float32 \(2,\)"),
    (lambda: ones(2) * None, TypeError, r"NoneType.*float32 \(2,\)"),
    (lambda: ones(2) + 2**70, ValueError, r"1180591620717411303424 does not fit in int64"),
    (lambda: -T([True]), TypeError, r"\[neg\].*bool"),
    (lambda: T([True]) - T([True]), TypeError, r"\[sub\].*bool \(1,\)"),
    (lambda: sx.arange(4) // 0, RuntimeError, r"\[floor_divide\].*division by zero"),
    (lambda: sx.arange(4) % sx.zeros(4, dtype="int64"), RuntimeError, r"\[remainder\].*division by zero"),
    (lambda: ones(3, dtype="int64").mean(), TypeError, r"\[mean\].*int64 \(3,\)"),
    (lambda: ones(3, dtype="int32").var(), TypeError, r"\[var\].*int32 \(3,\)"),
    (lambda: ones(3).sum(dim=5), IndexError, r"\[sum\] dim 5 is out of range.*1 dim"),
    (lambda: ones(2).sum(dim=(0, 0)), ValueError, r"\[sum\] dim appears twice"),
    (lambda: ones(2).sum(dim="a"), TypeError, r"\[sum\].*'a'"),
    (lambda: ones(3).cumsum(2), IndexError, r"\[cumsum\] dim 2"),
    (lambda: ones(2, 0).max(dim=1), IndexError, r"\[max\].*empty.*\(2, 0\)"),
    (lambda: ones(0).amax(), IndexError, r"\[amax\].*\(0,\)"),
    (lambda: ones(3).topk(5), IndexError, r"\[topk\] k=5.*size 3"),
    (lambda: sx.zeros(-1), ValueError, r"negative dimension.*\(-1,\)"),
    (lambda: sx.zeros(2.5), TypeError, r"\[zeros\].*2.5"),
    (lambda: sx.ones((2, "a")), TypeError, r"\[ones\].*'a'"),
    (lambda: sx.zeros(2, dtype="uint16"), TypeError, r"dtype.*uint16"),
    (lambda: sx.tensor([1 + 2j]).sin(), TypeError, r"sin.*complex64 \(1,\)"),
    (lambda: ones(2).to("tpu"), ValueError, r"\[device\].*tpu"),
    (lambda: ones(2, 3).permute(0, 0), ValueError, r"\[permute\].*\(0, 0\)"),
    (lambda: ones(2, 3).permute(0), ValueError, r"\[permute\] expected 2 dims"),
    (lambda: ones(2).transpose(0, 3), IndexError, r"\[transpose\] dim 3"),
    (lambda: ones(2).unsqueeze(5), IndexError, r"\[unsqueeze\] dim 5"),
    (lambda: ones(2, 3).squeeze(4), IndexError, r"\[squeeze\] dim 4"),
    (lambda: ones(2).expand(3), ValueError, r"\[expand\].*\(2,\) to \(3,\)"),
    (lambda: ones(2, 3).reshape(4, 2), ValueError, r"\[reshape\] shape \(4, 2\).*\(2, 3\)"),
    (lambda: ones(2).reshape(-1, -1), ValueError, r"\[reshape\].*-1"),
    (lambda: ones(2, 2).T.view(-1), RuntimeError, r"\[view\].*\(2, 2\).*strides"),
    (lambda: ones(3).view(2, 2), ValueError, r"\[view\].*\(2, 2\).*\(3,\)"),
    (lambda: ones(2).narrow(0, 1, 5), IndexError, r"\[narrow\].*size 2"),
    (lambda: ones(2, 3).unflatten(1, (2, -1)), ValueError, r"\[unflatten\].*\(2, -1\)"),
    (lambda: sx.cat([ones(2, 3), ones(2, 4)]), ValueError, r"\[cat\].*\(2, 3\).*\(2, 4\)"),
    (lambda: sx.cat([ones(2, 3), ones(3)], dim=0), ValueError, r"\[cat\].*\(2, 3\).*\(3,\)"),
    (lambda: sx.cat([]), ValueError, r"\[cat\].*non-empty"),
    (lambda: sx.stack([ones(2), ones(3)]), ValueError, r"\[stack\].*\(2,\).*\(3,\)"),
    (lambda: ones(3).split([1, 1]), ValueError, r"\[split\].*\(1, 1\).*3"),
    (lambda: ones(3).chunk(0), ValueError, r"\[chunk\].*0"),
    (lambda: sx.bmm(ones(2, 2), ones(2, 2)), ValueError, r"\[bmm\].*\(2, 2\)"),
    (lambda: sx.outer(ones(2, 2), ones(2)), ValueError, r"\[outer\].*\(2, 2\)"),
    (lambda: ones(2).dot(ones(3)), ValueError, r"\(2,\).*\(3,\)"),
    (lambda: ones(2).flip((0, 0)), ValueError, r"\[flip\]"),
    (lambda: ones(3).roll(1, (0, 0)), ValueError, r"\[roll\]"),
    (lambda: ones(2).repeat(1, -1), ValueError, r"\[repeat\].*\(1, -1\)"),
    (lambda: ones(2).clamp(), ValueError, r"\[clamp\]"),
    (lambda: ones(3).gather(0, T([5])), IndexError, r"\[gather\] index 5.*size 3"),
    (lambda: ones(3).gather(0, T([1.0])), TypeError, r"\[gather\].*float32 \(1,\)"),
    (lambda: ones(2, 3).gather(1, T([0, 1])), ValueError, r"\[gather\].*\(2,\).*\(2, 3\)"),
    (lambda: ones(2, 3).scatter(1, T([[0, 1, 2, 0]]), ones(1, 3)), ValueError, r"\[scatter\].*\(1, 4\).*\(1, 3\)"),
    (lambda: ones(2, 3).scatter_add(1, T([[3]]), ones(1, 1)), IndexError, r"\[scatter_add\] index 3"),
    (lambda: ones(3).index_select(0, T([3])), IndexError, r"index 3 is out of bounds"),
    (lambda: ones(2, 2).index_add(0, T([0]), ones(2, 2)), ValueError, r"\[index_add\].*\(2, 2\).*\(1, 2\)"),
    (lambda: sx.one_hot(T([3]), 2), IndexError, r"\[one_hot\] class 3"),
    (lambda: sx.one_hot(T([1.0]), 2), TypeError, r"\[one_hot\].*float32"),
    (lambda: sx.multinomial(T([-1.0, 2.0]), 1), ValueError, r"\[multinomial\].*-1"),
    (lambda: sx.multinomial(T([0.0, 0.0]), 1), ValueError, r"\[multinomial\]"),
    (lambda: sx.multinomial(T([1.0, 2.0]), 3), ValueError, r"\[multinomial\].*3 samples.*2 categories"),
    (lambda: sx.multinomial(T([1.0, float("nan")]), 1), ValueError, r"\[multinomial\].*nan"),
    (lambda: sx.randint(5, 2, (3,)), ValueError, r"\[randint\].*low=5 high=2"),
    (lambda: sx.randn(2, dtype="int64"), TypeError, r"\[randn\].*int64"),
    (lambda: sx.arange(0, 5, 0), ValueError, r"\[arange\]"),
    (lambda: sx.arange(0, float("inf")), ValueError, r"\[arange\]"),
    (lambda: sx.linspace(0, 1, -2), ValueError, r"\[linspace\].*-2"),
    (lambda: sx.eye(-1), ValueError, r"\[eye\]"),
    (lambda: sx.randperm(-1), ValueError, r"\[randperm\]"),
    (lambda: sx.manual_seed(float("nan")), ValueError, r"\[manual_seed\].*nan"),
    (lambda: sx.manual_seed("abc"), TypeError, r"\[manual_seed\]"),
    (lambda: sx.Generator(2**65), ValueError, r"\[Generator\]"),
    (lambda: ones(2).item(), ValueError, r"\[item\].*2 elements"),
    (lambda: bool(ones(2)), RuntimeError, r"\[bool\].*2 elements"),
    (lambda: ones(1).backward(), RuntimeError, r"\[backward\].*does not require grad"),
    (lambda: T([1, 2], requires_grad=True), RuntimeError, r"floating.*int64"),
    (lambda: T([[1, 2], [3]]), TypeError, r"\[tensor\]"),
    (lambda: T("abc"), TypeError, r"\[tensor\].*'abc'"),
    (lambda: T([2**63]), ValueError, r"\[tensor\].*does not fit in int64"),
    (lambda: sx.Tensor.from_numpy(np.zeros(2, dtype=">f4")), TypeError, r"\[from_numpy\].*byte order"),
    (lambda: sx.Tensor.from_numpy(np.zeros(2, dtype=np.uint16)), TypeError, r"\[from_numpy\].*uint16"),
    (lambda: ones(2, 3)[0, 5], IndexError, r"index 5 is out of bounds.*size 3"),
    (lambda: ones(2, 3)[0, 0, 0], IndexError, r"\[index\] too many indices"),
    (lambda: ones(2, 3)[::-1], ValueError, r"\[index\].*step.*-1"),
    (lambda: ones(2, 3)["a"], IndexError, r"\[index\].*str"),
    (lambda: ones(3).pow("a"), TypeError, r"\[pow\].*str"),
    (lambda: ones(2).numpy() if False else sx.ones(2, requires_grad=True).numpy(), RuntimeError, r"\[numpy\]"),
    (lambda: sx.tensor([1.0], dtype=sx.bfloat16).numpy(), TypeError, r"\[numpy\].*bfloat16"),
    (lambda: sx.zeros(2).to("cuda"), RuntimeError, r"CUDA"),
    (lambda: ones(3).softmax(5), IndexError, r"dim 5"),
    (lambda: sx.autograd.grad(ones(2, requires_grad=True) * 2, ones(1, requires_grad=True)), RuntimeError,
     r"\[grad\]"),
    (lambda: ones(3) & 1, TypeError, r"\[bitwise_and\].*integer and bool.*float32 \(3,\)"),
    (lambda: ~ones(2), TypeError, r"\[bitwise_not\].*float32 \(2,\)"),
    (lambda: T([True]) << T([True]), TypeError, r"\[bitwise_left_shift\].*integer tensors.*bool \(1,\)"),
    (lambda: T([1, 2]).__ior__(ones(2)), TypeError, r"\[bitwise_or\].*float32"),
    # in-place results must cast to the tensor's dtype as in PyTorch (no float into int, no int into bool)
    (lambda: T([4, 9]).sqrt_(), TypeError, r"\[sqrt_\] result type float32.*output type int64"),
    (lambda: T([4, 9]).mul_(1.5), TypeError, r"\[mul_\] result type float32.*output type int64"),
    (lambda: T([True]).add_(1), TypeError, r"\[add_\] result type int64.*output type bool"),
    (lambda: T([1, 2]).lerp_(ones(2), 0.5), TypeError, r"\[lerp_\] result type float32.*output type int64"),
    (lambda: T([True]).cumsum_(0), TypeError, r"\[cumsum_\] result type int64 can't be cast to the output type bool"),
]


@pytest.mark.parametrize("call,exc,pattern", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_bad_input_raises_clear_error(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


@pytest.mark.parametrize(
    "call",
    [lambda: sx.zeros(10**12, 10**12), lambda: sx.zeros(2**40), lambda: sx.ones(2**40), lambda: sx.empty(2**40),
     lambda: sx.rand(2**40), lambda: sx.randn(2**20, 2**20), lambda: sx.full((2**40,), 1.0), lambda: sx.arange(2**40),
     lambda: sx.empty(2**62), lambda: sx.zeros(2**31, 2**31, 2**31), lambda: sx.ones(2).expand(2**40, 2).contiguous(),
     lambda: sx.ones(1).repeat(2**40), lambda: sx.zeros(2**30, 2**30).numel()],
)
def test_huge_sizes_raise_memory_error_quickly(call):
    start = time.perf_counter()
    with pytest.raises(MemoryError):
        call()
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("dtype,bits", [("int64", 64), ("int32", 32), ("int16", 16), ("int8", 8),
                                        ("uint8", 8)])
def test_shift_counts_outside_the_width(dtype, bits):
    """Shifts by a count below 0 or at least the width give 0 (left) or the sign fill (right), as in
    PyTorch; in range they are the storage type's own shifts (reference: Python ints, wrapped)."""
    signed = dtype != "uint8"
    xs = [1, 5, -7, -(2 ** (bits - 1))] if signed else [1, 5, 200, 255]
    counts = [0, 1, 3, bits - 1, bits, bits + 3, 70 if bits > 8 else 100] + ([-1, -3] if signed else [])
    counts = (counts * 9)[:67]  # long rows: the vector loops and their ragged ends

    def wrap(v):
        v &= (1 << bits) - 1
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    x = sx.tensor([[v] for v in xs], dtype=dtype)
    c = sx.tensor([counts], dtype=dtype)
    left = [[0 if k < 0 or k >= bits else wrap(v << k) for k in counts] for v in xs]
    right = [[(-1 if v < 0 else 0) if k < 0 or k >= bits else v >> k for k in counts] for v in xs]
    assert (x << c).tolist() == left
    assert (x >> c).tolist() == right
    y = sx.tensor([[v] * len(counts) for v in xs], dtype=dtype)
    y <<= c  # in place, into y's memory
    assert y.tolist() == left


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_integer_division_extremes_do_not_trap(dtype):
    lo = -(2**63) if dtype == "int64" else -(2**31)
    a = sx.tensor([lo, 7, -7, lo], dtype=dtype)
    b = sx.tensor([-1, -1, 2, 3], dtype=dtype)
    assert (a % b).tolist() == [0, 0, 1, (lo % 3)]
    assert (a // b).tolist() == [lo, -7, -4, lo // 3]  # lo // -1 wraps to lo, as in PyTorch
    assert (a % -1).tolist() == [0, 0, 0, 0]


def test_huge_view_is_fine_and_its_copy_is_not():
    e = sx.ones(3).expand(2**40, 3)
    assert e.shape == (2**40, 3) and e.stride() == (0, 1)
    assert e[2**40 - 1, 2].item() == 1.0


FUZZ = textwrap.dedent(
    r"""
    import itertools, random, sys
    import numpy as np
    import sneppx_core as sx

    random.seed(0)
    ALLOWED = (ValueError, TypeError, IndexError, RuntimeError, MemoryError, NotImplementedError)
    values = [None, "x", 1.5, -1, 0, 2**70, -2**70, float("nan"), float("inf"), (), (2, -3), [[1], [2, 3]], [1, "a"],
              object(), sx.ones(0), sx.ones(2, 3), sx.ones(3, dtype=sx.int64), sx.tensor(True), sx.ones(2, 1, 0),
              sx.ones(4).expand(3, 4), sx.ones(2, 3).T, sx.tensor([5, -7]), np.zeros((2, 2)), 10**12, -2**63,
              sx.tensor([1.0], dtype=sx.bfloat16), sx.ones(2, requires_grad=True), sx.ones(1, 1, 1, 1, 1),
              sx.tensor([-2**63, -1, 2**63 - 1]), sx.tensor([-2**31, -1], dtype=sx.int32), sx.tensor(-1),
              sx.tensor([float("nan"), float("-inf")])]
    mod_fns = [getattr(sx, n) for n in sorted(dir(sx)) if not n.startswith("_") and callable(getattr(sx, n))
               and n not in ("set_num_threads", "seed", "manual_seed", "empty_cache", "Generator", "Device", "require_core",
                             "save", "load")]  # save/load would write and read files named by the fuzzer
    methods = [n for n in sorted(dir(sx.Tensor)) if not n.startswith("_") and n not in ("backward", "register_hook",
               "register_post_accumulate_grad_hook")] + ["__getitem__", "__setitem__", "__add__", "__matmul__",
               "__pow__", "__truediv__", "__floordiv__", "__mod__", "__lt__", "__iadd__", "__imul__"]
    calls = bad = 0
    for i in range(6000):
        args = [random.choice(values) for _ in range(random.randint(0, 3))]
        try:
            if random.random() < 0.5:
                f = random.choice(mod_fns)
                name = getattr(f, "__name__", "?")
                f(*args)
            else:
                name = random.choice(methods)
                t = random.choice([v for v in values if isinstance(v, sx.Tensor)])
                attr = getattr(t, name)
                attr(*args) if callable(attr) else None
        except ALLOWED:
            pass
        except Exception as e:
            bad += 1
            print(f"UNEXPECTED {type(e).__name__} from {name}{tuple(map(type, args))}: {e}"[:300])
        calls += 1
    print("CALLS", calls, "BAD", bad)
    """
)


def test_fuzzed_bad_calls_never_crash(tmp_path):
    script = tmp_path / "fuzz.py"
    script.write_text(FUZZ)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, f"interpreter died (rc={proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "CALLS 6000" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    unexpected = [ln for ln in proc.stdout.splitlines() if ln.startswith("UNEXPECTED")]
    assert not unexpected, "\n".join(unexpected[:30])


def test_clamp_to_float_bounds_promotes_integer_tensors():
    """clamp with a float bound computes in float32 for integer tensors (PyTorch's type promotion);
    integer bounds keep the dtype; the in-place form refuses the float result and leaves x as it was."""
    x = sx.arange(5)
    got = x.clamp(min=0.5)
    assert got.dtype == sx.float32 and got.tolist() == [0.5, 1.0, 2.0, 3.0, 4.0]
    assert sx.clamp(x.to(sx.int32), max=2.5).dtype == sx.float32
    assert sx.clamp_min(x, 1.5).tolist() == [1.5, 1.5, 2.0, 3.0, 4.0]
    assert sx.clamp_max(x.to(sx.uint8), 2.5).tolist() == [0.0, 1.0, 2.0, 2.5, 2.5]
    assert x.clamp(-1, 2).dtype == sx.int64 and x.clamp(-1, 2).tolist() == [0, 1, 2, 2, 2]
    assert sx.tensor([1.0, 3.0], dtype=sx.float16).clamp(max=2).dtype == sx.float16
    with pytest.raises(TypeError, match="clamp_|cast"):
        x.clamp_(min=0.5)
    assert x.dtype == sx.int64 and x.tolist() == [0, 1, 2, 3, 4]
    y = sx.arange(5)
    y.clamp_(1, 3)
    assert y.tolist() == [1, 1, 2, 3, 3]
