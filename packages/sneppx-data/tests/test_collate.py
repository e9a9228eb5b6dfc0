"""default_collate / default_convert against NumPy and (under parity) PyTorch."""

from collections import namedtuple

import numpy as np
import pytest
import sneppx_core as sx
from conftest import to_np

from sneppx_data import default_collate, default_convert

Point = namedtuple("Point", ["x", "label"])


def _dtype_name(t):
    if isinstance(t, sx.Tensor):
        return t.dtype.name.lower()
    return str(t.dtype).replace("torch.", "")


def test_tensors_are_stacked():
    rng = np.random.default_rng(0)
    arrs = [rng.standard_normal((2, 3)).astype(np.float32) for _ in range(4)]
    out = default_collate([sx.Tensor(a) for a in arrs])
    assert tuple(out.shape) == (4, 2, 3)
    np.testing.assert_array_equal(to_np(out), np.stack(arrs))
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([sx.Tensor(arrs[0]), sx.Tensor(arrs[1][:1])])


def test_numpy_arrays_and_scalars():
    arrs = [np.arange(3, dtype=np.int32) + i for i in range(5)]
    out = default_collate(arrs)
    assert isinstance(out, sx.Tensor)
    np.testing.assert_array_equal(to_np(out), np.stack(arrs))
    assert to_np(out).dtype == np.int32
    sc = default_collate([np.float32(1.5), np.float32(2.5)])
    assert to_np(sc).dtype == np.float32 and to_np(sc).tolist() == [1.5, 2.5]
    with pytest.raises(TypeError, match="found"):
        default_collate([np.array(["a", "b"])])
    small = default_collate([np.array([-3, 7], np.int16), np.array([1, 2], np.int16)])  # kept, as in PyTorch
    assert to_np(small).dtype == np.int16 and to_np(small).tolist() == [[-3, 7], [1, 2]]
    # integer types the core has no tensor type for are widened, values kept
    unsigned = default_collate([np.array([3, 60000], np.uint16), np.array([1, 2], np.uint16)])
    assert to_np(unsigned).dtype == np.int32 and to_np(unsigned).tolist() == [[3, 60000], [1, 2]]
    big = default_collate([np.uint32(2**32 - 1), np.uint32(5)])
    assert to_np(big).dtype == np.int64 and to_np(big).tolist() == [2**32 - 1, 5]


def test_python_numbers_strings_and_containers():
    ints = default_collate([1, 2, 3])
    assert to_np(ints).dtype == np.int64 and to_np(ints).tolist() == [1, 2, 3]
    floats = default_collate([0.5, 1.5])
    assert to_np(floats).dtype == np.float64
    bools = default_collate([True, False])
    assert to_np(bools).dtype == np.bool_
    assert default_collate(["a", "b"]) == ["a", "b"]
    batch = [{"x": np.ones(2, np.float32) * i, "name": f"s{i}", "y": i} for i in range(3)]
    out = default_collate(batch)
    assert set(out) == {"x", "name", "y"} and out["name"] == ["s0", "s1", "s2"]
    np.testing.assert_array_equal(to_np(out["x"]), np.stack([b["x"] for b in batch]))
    pts = default_collate([Point(np.zeros(2), 1), Point(np.ones(2), 2)])
    assert isinstance(pts, Point) and to_np(pts.label).tolist() == [1, 2]
    tup = default_collate([(1, 2.0), (3, 4.0)])
    assert isinstance(tup, list) and to_np(tup[0]).tolist() == [1, 3]
    lst = default_collate([[1, 2], [3, 4]])
    assert isinstance(lst, list) and to_np(lst[1]).tolist() == [2, 4]
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])
    with pytest.raises(TypeError, match="found"):
        default_collate([object(), object()])
    with pytest.raises(ValueError, match="empty"):
        default_collate([])


def test_default_convert():
    a = np.arange(4.0)
    out = default_convert({"a": a, "t": (np.int64(3), "s")})
    assert isinstance(out["a"], sx.Tensor) and to_np(out["a"]).tolist() == a.tolist()
    assert isinstance(out["t"], list) and to_np(out["t"][0]).tolist() == 3 and out["t"][1] == "s"
    assert default_convert(5) == 5


@pytest.mark.parity
def test_default_collate_matches_torch():
    torch = pytest.importorskip("torch")
    from torch.utils.data import default_collate as torch_collate

    rng = np.random.default_rng(1)
    cases = [
        [rng.standard_normal((3, 2)).astype(np.float32) for _ in range(4)],
        [np.int32(i) for i in range(5)],
        [1, 2, 3],
        [1.5, 2.5],
        [True, False, True],
        [(np.arange(2, dtype=np.int64) + i, float(i)) for i in range(3)],
        [{"a": np.full(3, i, np.float64), "b": [i, i + 1]} for i in range(2)],
    ]
    for batch in cases:
        _assert_same(default_collate(batch), torch_collate(batch))


def _assert_same(ours, theirs):
    if hasattr(theirs, "numpy") and not isinstance(theirs, (list, tuple, dict)):
        assert isinstance(ours, sx.Tensor)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert _dtype_name(ours) == _dtype_name(theirs)
        np.testing.assert_array_equal(to_np(ours), theirs.numpy())
    elif isinstance(theirs, dict):
        assert set(ours) == set(theirs)
        for k in theirs:
            _assert_same(ours[k], theirs[k])
    elif isinstance(theirs, (list, tuple)):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for o, t in zip(ours, theirs):
            _assert_same(o, t)
    else:
        assert ours == theirs
