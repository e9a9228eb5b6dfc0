"""DataLoader in the main process: batching, shuffling, lengths, iterable datasets, errors."""

import numpy as np
import pytest
import sneppx_core as sx
from conftest import to_np

from sneppx_data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    Subset,
    TensorDataset,
)


class Pairs(Dataset):
    """Item i is (array of i's, i) built in Python: the per-item path."""

    def __len__(self):
        return 23

    def __getitem__(self, i):
        return np.full(4, i, np.float32), i


class Stream(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def _data(n=103, d=5):
    rng = np.random.default_rng(0)
    return rng.standard_normal((n, d)).astype(np.float32), np.arange(n, dtype=np.int64)


@pytest.mark.parametrize("batch_size,drop_last", [(1, False), (10, False), (10, True), (103, False), (200, True)])
def test_sequential_batches_match_numpy(batch_size, drop_last):
    x, y = _data()
    loader = DataLoader(TensorDataset(sx.Tensor(x), sx.Tensor(y)), batch_size=batch_size, drop_last=drop_last)
    batches = list(loader)
    stop = len(x) - len(x) % batch_size if drop_last else len(x)
    starts = list(range(0, stop, batch_size))
    assert len(batches) == len(loader) == len(starts)
    for (xb, yb), s in zip(batches, starts):
        np.testing.assert_array_equal(to_np(xb), x[s : s + batch_size])
        np.testing.assert_array_equal(to_np(yb), y[s : s + batch_size])


def test_per_item_path_collates_like_fast_path():
    loader = DataLoader(Pairs(), batch_size=5)
    xb, yb = next(iter(loader))
    np.testing.assert_array_equal(to_np(xb), np.repeat(np.arange(5, dtype=np.float32)[:, None], 4, 1))
    assert to_np(yb).tolist() == [0, 1, 2, 3, 4]
    assert len(loader) == 5


def test_shuffle_is_a_permutation_and_follows_manual_seed():
    x, y = _data()
    ds = TensorDataset(sx.Tensor(x), sx.Tensor(y))
    sx.manual_seed(0)
    a = np.concatenate([to_np(b[1]) for b in DataLoader(ds, batch_size=16, shuffle=True)])
    sx.manual_seed(0)
    b = np.concatenate([to_np(b[1]) for b in DataLoader(ds, batch_size=16, shuffle=True)])
    assert sorted(a.tolist()) == list(range(103))
    np.testing.assert_array_equal(a, b)
    assert a.tolist() != list(range(103))
    loader = DataLoader(ds, batch_size=16, shuffle=True, generator=5)
    e1 = np.concatenate([to_np(b[1]) for b in loader])
    e2 = np.concatenate([to_np(b[1]) for b in loader])
    assert e1.tolist() != e2.tolist()  # a new order each epoch
    again = DataLoader(ds, batch_size=16, shuffle=True, generator=5)
    np.testing.assert_array_equal(np.concatenate([to_np(b[1]) for b in again]), e1)


def test_custom_collate_sampler_and_batch_sampler():
    ds = Pairs()
    loader = DataLoader(ds, batch_size=4, collate_fn=lambda items: [i for _, i in items])
    assert next(iter(loader)) == [0, 1, 2, 3]
    loader = DataLoader(ds, batch_sampler=[[3, 1], [7]])
    assert [to_np(b[1]).tolist() for b in loader] == [[3, 1], [7]]
    assert len(loader) == 2 and loader.batch_size is None
    bs = BatchSampler(SequentialSampler(range(6)), 4, True)
    assert [to_np(b[1]).tolist() for b in DataLoader(ds, batch_sampler=bs)] == [[0, 1, 2, 3]]
    sub = DataLoader(Subset(ds, [5, 9]), batch_size=2)
    assert to_np(next(iter(sub))[1]).tolist() == [5, 9]


def test_custom_collate_receives_sequence_of_samples_from_tensor_dataset():
    x, y = _data(8)
    ds = TensorDataset(sx.Tensor(x), sx.Tensor(y))
    seen = []
    loader = DataLoader(ds, batch_size=4, collate_fn=lambda items: seen.append(len(items)) or [s[1] for s in items])
    out = next(iter(loader))
    assert seen == [4] and [int(to_np(v)) for v in out] == [0, 1, 2, 3]


def test_batch_size_none_converts_single_samples():
    loader = DataLoader(Pairs(), batch_size=None)
    x, i = next(iter(loader))
    assert isinstance(x, sx.Tensor) and to_np(x).tolist() == [0.0] * 4 and i == 0
    assert len(loader) == 23


def test_iterable_dataset_batches_and_len():
    loader = DataLoader(Stream(10), batch_size=4)
    assert [to_np(b).tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert len(loader) == 3
    loader = DataLoader(Stream(10), batch_size=4, drop_last=True)
    assert [to_np(b).tolist() for b in loader] == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert len(loader) == 2
    assert [int(to_np(v)) for v in DataLoader(Stream(3), batch_size=None)] == [0, 1, 2]


def test_argument_validation():
    ds = Pairs()
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(ds, sampler=SequentialSampler(ds), shuffle=True)
    with pytest.raises(ValueError, match="batch_sampler"):
        DataLoader(ds, batch_sampler=[[0]], batch_size=2)
    with pytest.raises(ValueError, match="drop_last"):
        DataLoader(ds, batch_size=None, drop_last=True)
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(Stream(3), shuffle=True)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError, match="persistent_workers"):
        DataLoader(ds, persistent_workers=True)
    with pytest.raises(ValueError, match="prefetch_factor"):
        DataLoader(ds, num_workers=1, prefetch_factor=0)
    with pytest.raises(ValueError, match="timeout"):
        DataLoader(ds, timeout=-1)
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader(ds, batch_size=0)


@pytest.mark.parity
def test_sequential_loader_matches_torch():
    torch = pytest.importorskip("torch")
    x, y = _data()
    ours = list(DataLoader(TensorDataset(sx.Tensor(x), sx.Tensor(y)), batch_size=7, drop_last=True))
    theirs = list(torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.from_numpy(x), torch.from_numpy(y)), batch_size=7, drop_last=True))
    assert len(ours) == len(theirs)
    for (a, b), (c, d) in zip(ours, theirs):
        np.testing.assert_array_equal(to_np(a), c.numpy())
        np.testing.assert_array_equal(to_np(b), d.numpy())
