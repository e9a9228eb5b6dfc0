"""The meta device: tensors with a shape, a dtype and strides but no memory. Ops on them compute their
outputs' geometry and run no kernel; reading values raises. The reference for every geometry is the same op
run on small CPU tensors (and PyTorch's meta device in the parity test)."""
import numpy as np
import pytest

import sneppx_core as sx
import sneppx_core.functional as F


def _cpu(shape, dtype="float32", low=0, high=4):
    rng = np.random.default_rng(0)
    if dtype.startswith("int"):
        return sx.tensor(rng.integers(low, high, shape), dtype=dtype)
    return sx.tensor(rng.standard_normal(shape).astype(np.float32), dtype=dtype)


# Each case: (name, function of the operands, the operands' shapes and dtypes). Run on CPU tensors and on their
# meta copies, the outputs must agree in shape, dtype and strides.
CASES = [
    ("matmul", lambda a, b: a @ b, [((2, 3, 4), "float32"), ((4, 5), "float32")]),
    ("add broadcast", lambda a, b: a + b, [((4, 1, 3), "float32"), ((5, 3), "float32")]),
    ("promotion", lambda a, b: a * b, [((3,), "int64"), ((3,), "float32")]),
    ("softmax", lambda a: a.softmax(-1), [((2, 7), "float32")]),
    ("sum dim", lambda a: a.sum(1, keepdim=True), [((2, 3, 4), "float32")]),
    ("mean", lambda a: a.mean((0, 2)), [((2, 3, 4), "float64")]),
    ("max values", lambda a: a.max(1).values, [((2, 5), "float32")]),
    ("argmax", lambda a: a.argmax(-1), [((2, 5), "float32")]),
    ("transpose contiguous", lambda a: a.transpose(0, 2).contiguous(), [((2, 3, 4), "float32")]),
    ("permute view", lambda a: a.permute(2, 0, 1), [((2, 3, 4), "float32")]),
    ("reshape", lambda a: a.reshape(6, -1), [((2, 3, 4), "float32")]),
    ("cat", lambda a, b: sx.cat([a, b], 1), [((2, 3), "float32"), ((2, 5), "float32")]),
    ("stack", lambda a, b: sx.stack([a, b]), [((2, 3), "float32"), ((2, 3), "float32")]),
    ("slice", lambda a: a[:, 1::2], [((3, 8), "float32")]),
    ("to bfloat16", lambda a: a.to(sx.bfloat16), [((3, 4), "float32")]),
    ("linear", lambda x, w, b: F.linear(x, w, b), [((2, 5, 8), "float32"), ((6, 8), "float32"), ((6,), "float32")]),
    ("layer_norm", lambda x, w, b: F.layer_norm(x, (8,), w, b), [((2, 5, 8), "float32"), ((8,), "float32"),
                                                                   ((8,), "float32")]),
    ("conv2d", lambda x, w: F.conv2d(x, w, stride=2, padding=1),
     [((2, 3, 9, 9), "float32"), ((4, 3, 3, 3), "float32")]),
    ("max_pool2d", lambda x: F.max_pool2d(x, 2), [((2, 3, 8, 8), "float32")]),
    ("sdpa causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
     [((2, 4, 6, 8), "float32"), ((2, 4, 6, 8), "float32"), ((2, 4, 6, 8), "float32")]),
    ("gelu", lambda a: F.gelu(a), [((3, 4), "float32")]),
    ("where", lambda c, a: sx.where(c > 0, a, 0.0), [((3, 4), "float32"), ((3, 4), "float32")]),
    ("tril", lambda a: a.tril(), [((4, 4), "float32")]),
    ("expand", lambda a: a.expand(3, 4, 5), [((4, 1), "float32")]),
    # interpolate and unfold make index tensors: on the input's device (they were made on the CPU and raised)
    ("interpolate nearest", lambda x: F.interpolate(x, scale_factor=2), [((1, 2, 4, 3), "float32")]),
    ("interpolate bilinear", lambda x: F.interpolate(x, size=(5, 7), mode="bilinear"), [((1, 2, 4, 3), "float32")]),
    ("unfold", lambda a: a.unfold(1, 3, 2), [((2, 9), "float32")]),
    ("embedding", lambda i, w: F.embedding(i, w), [((2, 5), "int64"), ((4, 3), "float32")]),
    ("cross_entropy", lambda x, t: F.cross_entropy(x, t), [((4, 6), "float32"), ((4,), "int64")]),
    ("one_hot", lambda i: F.one_hot(i, 5), [((2, 3), "int64")]),
    ("cummax", lambda a: a.cummax(1).values, [((3, 4), "float32")]),
]


@pytest.mark.parametrize("name,fn,specs", CASES, ids=[c[0] for c in CASES])
def test_outputs_have_the_cpu_geometry(name, fn, specs):
    """The op on meta tensors gives meta outputs of the shape, dtype and strides the CPU op gives."""
    cpu = [_cpu(shape, dtype) for shape, dtype in specs]
    want = fn(*cpu)
    got = fn(*[t.to("meta") for t in cpu])
    assert got.is_meta and got.device == "meta" and got.device.type == "meta"
    assert (got.shape, got.dtype, got.stride()) == (want.shape, want.dtype, want.stride())


def test_factories_allocate_nothing():
    """A 4 TiB tensor exists on the meta device; factories honour the device argument and the device block."""
    big = sx.empty(2**20, 2**20, device="meta")
    assert big.shape == (2**20, 2**20) and big.is_meta and big.element_size() == 4
    for make in (sx.zeros, sx.ones, sx.empty, sx.rand, sx.randn):
        t = make(3, 4, device="meta", dtype=sx.float64)
        assert t.is_meta and t.shape == (3, 4) and t.dtype == sx.float64
    with sx.device("meta"):
        assert sx.zeros(2, 3).is_meta and sx.full((2,), 7).is_meta and sx.empty(10**12).is_meta
    assert not sx.zeros(2).is_meta
    assert sx.empty_like(big).is_meta and sx.zeros_like(sx.ones(3), device="meta").is_meta


def test_in_place_ops_and_views_stay_meta():
    """Initialisers and in-place ops (nothing to write) keep the tensor; views share its (absent) storage."""
    w = sx.empty(4, 3, device="meta")
    assert w.uniform_(-1, 1) is w and w.normal_() is w and w.zero_() is w and w.add_(1) is w
    assert w.t().is_meta and w[1:].shape == (3, 3)
    with sx.no_grad():
        w.copy_(sx.ones(4, 3))  # a CPU source: accepted, nothing written
    assert w.is_meta


def test_reading_values_raises():
    """Everything that needs the values raises NotImplementedError naming the meta tensor; printing shows the
    geometry, as PyTorch."""
    x = sx.empty(2, 3, device="meta", dtype=sx.float64)
    for read in (x[0, 0].item, x.tolist, lambda: x.to("cpu"), lambda: x.cpu(), lambda: bool(x[0, 0]),
                 lambda: x.nonzero(), lambda: sx.ones(2, 3).copy_(x), lambda: x.norm().item()):
        with pytest.raises(NotImplementedError, match="meta"):
            read()
    for read in (x.numpy, lambda: np.asarray(x)):  # TypeError, as PyTorch
        with pytest.raises(TypeError, match="meta"):
            read()
    assert repr(x) == "tensor(..., device='meta', size=(2, 3), dtype=sneppx.float64)"
    assert repr(sx.empty(3, device="meta", requires_grad=True)) == \
        "tensor(..., device='meta', size=(3,), requires_grad=True)"
    assert repr(sx.device("meta")) == "device(type='meta')" and sx.device("meta").index is None


def test_backward_gives_meta_gradients():
    """Autograd runs on meta tensors: the gradients are meta tensors of the leaves' shapes."""
    w = sx.empty(5, 3, device="meta", requires_grad=True)
    x = sx.empty(4, 5, device="meta")
    loss = (x @ w).relu().sum()
    loss.backward()
    assert w.grad.is_meta and w.grad.shape == (5, 3)


@pytest.mark.parity
def test_geometry_matches_pytorch_meta():
    """The same ops on PyTorch's meta device give the same shapes and dtypes."""
    torch = pytest.importorskip("torch")
    for name, fn, specs in CASES:
        ours = fn(*[sx.empty(*shape, dtype=dtype, device="meta") for shape, dtype in specs])
        tfn = _torch_fn(name, fn, torch)
        theirs = tfn(*[torch.empty(*shape, dtype=getattr(torch, dtype), device="meta") for shape, dtype in specs])
        assert theirs.is_meta
        assert tuple(ours.shape) == tuple(theirs.shape), name
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1], name


def _torch_fn(name, fn, torch):
    """The case's function with PyTorch's modules in place of SneppX's."""
    import torch.nn.functional as TF

    g = dict(fn.__globals__, sx=torch, F=TF)
    return type(fn)(fn.__code__, g, fn.__name__, fn.__defaults__, fn.__closure__)
