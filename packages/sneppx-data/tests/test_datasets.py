"""Datasets: TensorDataset, Subset, ConcatDataset, ChainDataset, random_split, TokenDataset."""

import pickle

import numpy as np
import pytest
import sneppx_core as sx
from conftest import to_np

from sneppx_data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackedSamples,
    Subset,
    TensorDataset,
    TokenDataset,
    random_split,
)


class Squares(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return i * i


class Count(IterableDataset):
    def __init__(self, start, stop):
        self.start, self.stop = start, stop

    def __iter__(self):
        return iter(range(self.start, self.stop))

    def __len__(self):
        return self.stop - self.start


def _xy(n=10, d=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)).astype(np.float32)
    y = rng.integers(0, 5, n).astype(np.int64)
    return x, y


def test_tensor_dataset_items_and_batches_match_numpy():
    x, y = _xy()
    ds = TensorDataset(sx.Tensor(x), sx.Tensor(y))
    assert len(ds) == 10
    xi, yi = ds[4]
    np.testing.assert_array_equal(to_np(xi), x[4])
    assert int(to_np(yi)) == y[4]
    idx = [7, 0, 3, 3, -1]
    batch = ds.__getitems__(idx)
    assert isinstance(batch, StackedSamples) and len(batch) == 5
    np.testing.assert_array_equal(to_np(batch.fields[0]), x[idx])
    np.testing.assert_array_equal(to_np(batch.fields[1]), y[idx])
    # the lazy container behaves like the list of per-sample tuples
    np.testing.assert_array_equal(to_np(batch[1][0]), x[0])
    assert [int(to_np(s[1])) for s in batch] == list(y[idx])


def test_tensor_dataset_accepts_numpy_and_checks_sizes():
    x, y = _xy()
    ds = TensorDataset(x, y)
    np.testing.assert_array_equal(to_np(ds[2][0]), x[2])
    with pytest.raises(ValueError, match="size mismatch"):
        TensorDataset(sx.Tensor(x), sx.Tensor(y[:5]))
    with pytest.raises(TypeError, match="TensorDataset"):
        TensorDataset([1, 2, 3])
    with pytest.raises(IndexError, match="out of range"):
        ds.__getitems__([0, 10])


def test_subset_and_getitems_delegation():
    x, y = _xy()
    ds = TensorDataset(sx.Tensor(x), sx.Tensor(y))
    sub = Subset(ds, [9, 2, 5])
    assert len(sub) == 3
    np.testing.assert_array_equal(to_np(sub[0][0]), x[9])
    batch = sub.__getitems__([2, 0])
    np.testing.assert_array_equal(to_np(batch.fields[0]), x[[5, 9]])
    plain = Subset(Squares(10), [3, 4])
    assert plain.__getitems__([1, 0]) == [16, 9]


def test_concat_dataset_indexing():
    a, b = Squares(3), Squares(4)
    cat = a + b
    assert isinstance(cat, ConcatDataset)
    assert len(cat) == 7 and cat.cumulative_sizes == [3, 7]
    assert [cat[i] for i in range(7)] == [0, 1, 4, 0, 1, 4, 9]
    assert cat[-1] == 9 and cat[-7] == 0
    with pytest.raises(ValueError):
        cat[-8]
    with pytest.raises(IndexError):
        cat[7]
    with pytest.raises(ValueError, match="empty"):
        ConcatDataset([])
    with pytest.raises(TypeError, match="IterableDataset"):
        ConcatDataset([Count(0, 3)])


def test_chain_dataset():
    chain = Count(0, 3) + Count(10, 12)
    assert isinstance(chain, ChainDataset)
    assert list(chain) == [0, 1, 2, 10, 11]
    assert len(chain) == 5


def test_random_split_partitions_and_is_seeded():
    ds = Squares(10)
    a, b = random_split(ds, [3, 7], generator=42)
    assert len(a) == 3 and len(b) == 7
    assert sorted(list(a.indices) + list(b.indices)) == list(range(10))
    a2, _ = random_split(ds, [3, 7], generator=42)
    assert list(a2.indices) == list(a.indices)
    parts = random_split(ds, [0.5, 0.3, 0.2], generator=1)
    assert [len(p) for p in parts] == [5, 3, 2]
    parts = random_split(Squares(11), [0.5, 0.5], generator=1)
    assert [len(p) for p in parts] == [6, 5]
    with pytest.raises(ValueError, match="sum of lengths"):
        random_split(ds, [3, 3])
    with pytest.raises(ValueError, match="fraction"):
        random_split(ds, [1.5, -0.5])


def test_random_split_uses_the_core_generator():
    sx.manual_seed(7)
    a = random_split(Squares(20), [10, 10])[0].indices
    sx.manual_seed(7)
    b = random_split(Squares(20), [10, 10])[0].indices
    assert a == b


@pytest.mark.parity
def test_random_split_matches_torch():
    torch = pytest.importorskip("torch")
    for n, lengths, seed in [(10, [3, 7], 0), (100, [0.8, 0.2], 123), (37, [0.3, 0.3, 0.4], 9)]:
        ours = random_split(Squares(n), lengths, generator=seed)
        theirs = torch.utils.data.random_split(
            range(n), lengths, generator=torch.Generator().manual_seed(seed)
        )
        assert [list(s.indices) for s in ours] == [list(s.indices) for s in theirs]


def _tokens(n=103, dtype=np.uint16, seed=0):
    return np.random.default_rng(seed).integers(0, 60000, n).astype(dtype)


def test_token_dataset_windows_shift_by_one():
    tok = _tokens()
    ds = TokenDataset(tok, seq_len=8)
    assert len(ds) == (103 - 9) // 8 + 1
    for i in [0, 5, len(ds) - 1, -1]:
        x, y = ds[i]
        s = (i % len(ds)) * 8
        assert x.dtype == sx.int64 and y.dtype == sx.int64
        np.testing.assert_array_equal(to_np(x), tok[s : s + 8].astype(np.int64))
        np.testing.assert_array_equal(to_np(y), tok[s + 1 : s + 9].astype(np.int64))
    batch = ds.__getitems__([3, 0, 11])
    starts = np.array([3, 0, 11]) * 8
    want_x = np.stack([tok[s : s + 8] for s in starts]).astype(np.int64)
    np.testing.assert_array_equal(to_np(batch.fields[0]), want_x)
    np.testing.assert_array_equal(to_np(batch.fields[1]), np.stack([tok[s + 1 : s + 9] for s in starts]))
    with pytest.raises(IndexError, match="out of range"):
        ds[len(ds)]
    with pytest.raises(IndexError, match="out of range"):
        ds.__getitems__([0, len(ds)])


def test_token_dataset_stride_and_validation():
    tok = _tokens(50, np.int32)
    ds = TokenDataset(tok, seq_len=10, stride=3)
    assert len(ds) == (50 - 11) // 3 + 1
    np.testing.assert_array_equal(to_np(ds[2][0]), tok[6:16])
    with pytest.raises(ValueError, match="seq_len"):
        TokenDataset(tok, seq_len=0)
    with pytest.raises(ValueError, match="at least"):
        TokenDataset(tok[:5], seq_len=10)
    with pytest.raises(TypeError, match="integer dtype"):
        TokenDataset(tok.astype(np.float32), seq_len=4)
    with pytest.raises(ValueError, match="1-D"):
        TokenDataset(tok.reshape(5, 10), seq_len=4)


def test_token_dataset_from_files_is_memory_mapped(tmp_path):
    tok = _tokens(1000, np.uint16)
    raw = tmp_path / "train.bin"
    tok.tofile(raw)
    ds = TokenDataset(raw, seq_len=16, dtype="uint16")
    assert isinstance(ds.tokens, np.memmap)
    np.testing.assert_array_equal(to_np(ds[3][1]), tok[49:65])
    npy = tmp_path / "train.npy"
    np.save(npy, tok.astype(np.int64))
    ds2 = TokenDataset(str(npy), seq_len=16)
    assert isinstance(ds2.tokens, np.memmap)
    np.testing.assert_array_equal(to_np(ds2[3][0]), to_np(ds[3][0]))
    with pytest.raises(ValueError, match="dtype"):
        TokenDataset(raw, seq_len=16)
    with pytest.raises(FileNotFoundError):
        TokenDataset(tmp_path / "missing.bin", seq_len=4, dtype="uint16")
    # a file-backed dataset pickles as its path and reopens the map
    blob = pickle.dumps(ds)
    assert len(blob) < 1000
    again = pickle.loads(blob)
    np.testing.assert_array_equal(to_np(again[5][0]), to_np(ds[5][0]))


_WRITE_SAMPLES = """
import sys
import numpy as np
from sneppx_data import TokenDataset

path = sys.argv[1]
ro = np.arange(100, dtype=np.int64)
ro.flags.writeable = False
for ds in (TokenDataset(path, seq_len=8), TokenDataset(ro, seq_len=8)):
    for x, y in (ds[1], tuple(ds.__getitems__([0, 2]).fields)):
        x[0] = 5
        y[..., -1] = 7
        assert int(x.numpy().reshape(-1)[0]) == 5 and int(y.numpy().reshape(-1)[-1]) == 7
print("ok")
"""


def test_token_dataset_samples_from_a_read_only_map_can_be_written(tmp_path):
    import subprocess
    import sys

    npy = tmp_path / "tokens.npy"
    tok = np.arange(100, dtype=np.int64)  # int64 on disk: no dtype conversion to force a copy
    np.save(npy, tok)
    done = subprocess.run([sys.executable, "-c", _WRITE_SAMPLES, str(npy)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", (done.returncode, done.stderr[-2000:])
    np.testing.assert_array_equal(np.load(npy), tok)  # the file is untouched
