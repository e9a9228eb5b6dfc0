"""DataLoader arguments that PyTorch programs pass, and lazily drawn random indices."""

import inspect
import itertools

import numpy as np
import pytest
import sneppx_core as sx

from sneppx_data import BatchSampler, DataLoader, RandomSampler, TensorDataset


def _ds(n=10):
    return TensorDataset(sx.arange(n))


def test_huge_num_samples_with_replacement_is_drawn_lazily():
    s = RandomSampler(range(7), replacement=True, num_samples=int(1e10), generator=3)
    assert len(s) == int(1e10)
    first = list(itertools.islice(iter(s), 200_000))  # spans several chunks
    assert len(first) == 200_000 and min(first) >= 0 and max(first) <= 6
    counts = np.bincount(first, minlength=7) / len(first)
    assert np.all(np.abs(counts - 1 / 7) < 0.01)  # uniform draws
    batches = BatchSampler(s, batch_size=1000, drop_last=True)._index_batches()
    assert [len(b) for b in itertools.islice(batches, 3)] == [1000] * 3
    loader = DataLoader(_ds(7), batch_size=4, sampler=s)
    assert next(iter(loader))[0].shape == (4,)


@pytest.mark.parametrize("replacement", [True, False])
def test_chunked_batches_cover_the_same_indices_as_iteration(replacement, monkeypatch):
    import sneppx_data.sampler as sampler_mod

    monkeypatch.setattr(sampler_mod, "_CHUNK", 7)
    s = RandomSampler(range(5), replacement=replacement, num_samples=23, generator=np.random.default_rng(1))
    flat = list(s)
    s2 = RandomSampler(range(5), replacement=replacement, num_samples=23, generator=np.random.default_rng(1))
    batched = [int(i) for b in BatchSampler(s2, 4, drop_last=False)._index_batches() for i in b]
    assert batched == flat and len(flat) == 23
    if not replacement:
        assert sorted(flat[:20]) == sorted(list(range(5)) * 4)


def test_pin_memory_and_worker_options_are_accepted():
    with pytest.warns(UserWarning, match="pin_memory"):
        loader = DataLoader(_ds(), batch_size=4, pin_memory=True, pin_memory_device="cuda")
    assert [b[0].tolist() for b in loader][0] == [0, 1, 2, 3]
    assert loader.pin_memory is True
    loader = DataLoader(_ds(), batch_size=5, num_workers=1, prefetch_factor=4, persistent_workers=True,
                        in_order=False)
    assert loader.prefetch_factor == 4
    assert sorted(i for b in loader for i in b[0].tolist()) == list(range(10))
    assert DataLoader(_ds(), num_workers=2).prefetch_factor == 2
    with pytest.raises(ValueError, match="prefetch_factor option could only be specified in multiprocessing"):
        DataLoader(_ds(), prefetch_factor=2)


class _Pinnable:
    """A custom batch type: DataLoader(pin_memory=True) calls its pin_memory(), as PyTorch's does."""

    def __init__(self, v):
        self.v, self.pinned = v, False

    def pin_memory(self):
        out = _Pinnable(self.v)
        out.pinned = True
        return out


def test_pin_memory_walks_batches_and_keeps_their_types():
    import collections

    from sneppx_data.dataloader import pin_memory

    Pair = collections.namedtuple("Pair", "a b")
    batch = {"x": [_Pinnable(1), (_Pinnable(2), "s")], "p": Pair(_Pinnable(3), 4),
             "o": collections.OrderedDict(k=_Pinnable(5))}
    out = pin_memory(batch)
    assert out["x"][0].pinned and out["x"][1][0].pinned and out["x"][1][1] == "s"
    assert isinstance(out["x"], list) and isinstance(out["x"][1], tuple)
    assert isinstance(out["p"], Pair) and out["p"].a.pinned and out["p"].b == 4
    assert isinstance(out["o"], collections.OrderedDict) and out["o"]["k"].pinned
    assert not batch["x"][0].pinned  # the input batch is left as it was


@pytest.mark.cuda
@pytest.mark.skipif(not sx.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("num_workers", [0, 2])
def test_pin_memory_loader_batches_are_pinned(num_workers):
    ds = TensorDataset(sx.arange(12, dtype=sx.float32), sx.arange(12))
    loader = DataLoader(ds, batch_size=4, pin_memory=True, num_workers=num_workers)
    batches = list(loader)
    assert len(batches) == 3 and all(x.is_pinned() and y.is_pinned() for x, y in batches)
    assert [x.tolist() for x, _ in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]
    x = batches[1][0].to("cuda", non_blocking=True)
    sx.cuda.synchronize()
    assert x.cpu().tolist() == [4, 5, 6, 7]


@pytest.mark.parity
def test_signature_matches_torch():
    torch_data = pytest.importorskip("torch.utils.data")
    ours = inspect.signature(DataLoader).parameters
    theirs = inspect.signature(torch_data.DataLoader).parameters
    assert list(ours) == list(theirs)
    for name, p in theirs.items():
        assert (ours[name].default, ours[name].kind) == (p.default, p.kind), name
