"""Samplers, including DistributedSampler's partition and PyTorch-identical permutation."""

import math

import numpy as np
import pytest
import sneppx_core as sx

from sneppx_data import (
    RANK_ENV,
    WORLD_SIZE_ENV,
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from sneppx_data._rng import draw_seed, torch_randperm


def test_sequential_sampler():
    assert list(SequentialSampler(range(5))) == [0, 1, 2, 3, 4]
    assert len(SequentialSampler(range(5))) == 5


def test_random_sampler_is_a_permutation_and_seeded():
    s = RandomSampler(range(50), seed=3)
    first, second = list(s), list(s)
    assert sorted(first) == list(range(50)) and sorted(second) == list(range(50))
    assert first != second  # the stream continues across epochs
    again = RandomSampler(range(50), seed=3)
    assert list(again) == first and list(again) == second


def test_random_sampler_follows_core_manual_seed():
    sx.manual_seed(11)
    a = list(RandomSampler(range(40)))
    sx.manual_seed(11)
    b = list(RandomSampler(range(40)))
    assert a == b and sorted(a) == list(range(40))
    g = sx.Generator(5)
    c = list(RandomSampler(range(40), generator=g))
    g.manual_seed(5)
    assert list(RandomSampler(range(40), generator=g)) == c


def test_random_sampler_num_samples_and_replacement():
    s = RandomSampler(range(7), num_samples=17, seed=0)
    out = list(s)
    assert len(out) == len(s) == 17
    # two whole permutations, then 3 items of a third
    assert sorted(out[:7]) == list(range(7)) and sorted(out[7:14]) == list(range(7))
    assert len(set(out[14:])) == 3
    r = list(RandomSampler(range(5), replacement=True, num_samples=2000, seed=1))
    counts = np.bincount(r, minlength=5)
    assert counts.sum() == 2000 and min(r) >= 0 and max(r) <= 4
    assert np.all(np.abs(counts - 400) < 5 * math.sqrt(400))
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler(range(5), num_samples=0)
    with pytest.raises(ValueError, match="num_samples"):
        RandomSampler([])
    with pytest.raises(TypeError, match="replacement"):
        RandomSampler(range(5), replacement=1)
    with pytest.raises(ValueError, match="either"):
        RandomSampler(range(5), generator=1, seed=2)


def test_subset_random_sampler():
    idx = [10, 20, 30, 40]
    out = list(SubsetRandomSampler(idx, generator=0))
    assert sorted(out) == idx and len(SubsetRandomSampler(idx)) == 4


def test_weighted_random_sampler_frequencies():
    w = [1.0, 0.0, 3.0, 6.0]
    n = 20000
    out = np.array(list(WeightedRandomSampler(w, n, generator=0)))
    freq = np.bincount(out, minlength=4) / n
    p = np.array(w) / sum(w)
    sd = np.sqrt(p * (1 - p) / n)
    assert np.all(np.abs(freq - p) <= 5 * sd + 1e-12)
    no_rep = list(WeightedRandomSampler(w, 3, replacement=False, generator=1))
    assert sorted(no_rep) == [0, 2, 3]
    with pytest.raises(ValueError, match="without replacement"):
        WeightedRandomSampler(w, 4, replacement=False)
    with pytest.raises(ValueError, match="non-negative"):
        WeightedRandomSampler([1.0, -1.0], 2)
    with pytest.raises(ValueError, match="1-D"):
        WeightedRandomSampler([[1.0, 2.0]], 2)


def test_batch_sampler_lists_and_fast_path_agree():
    for drop_last in (False, True):
        b = BatchSampler(SequentialSampler(range(10)), 3, drop_last)
        lists = list(b)
        want = [[0, 1, 2], [3, 4, 5], [6, 7, 8]] + ([] if drop_last else [[9]])
        assert lists == want and len(b) == len(want)
        assert [a.tolist() for a in b._index_batches()] == want
    with pytest.raises(ValueError, match="batch_size"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="drop_last"):
        BatchSampler(range(3), 2, 0)


def test_batch_sampler_respects_overridden_sampler_iter():
    class Reversed(SequentialSampler):
        def __iter__(self):
            return iter(range(len(self.data_source) - 1, -1, -1))

    b = BatchSampler(Reversed(range(5)), 2, False)
    assert [list(x) for x in b._index_batches()] == [[4, 3], [2, 1], [0]]


def _reference_partition(n, replicas, rank, order, drop_last):
    """DistributedSampler's partition written from its definition, with plain lists."""
    if drop_last and n % replicas:
        num = math.ceil((n - replicas) / replicas)
    else:
        num = math.ceil(n / replicas)
    total = num * replicas
    idx = list(order)
    if drop_last:
        idx = idx[:total]
    else:
        while len(idx) < total:
            idx += list(order)[: total - len(idx)]
    return idx[rank:total:replicas]


@pytest.mark.parametrize("n,replicas", [(10, 3), (11, 4), (4, 4), (2, 5), (0, 2)])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_partition(n, replicas, drop_last):
    shards = [list(DistributedSampler(range(n), replicas, r, shuffle=False, drop_last=drop_last))
              for r in range(replicas)]
    for r, shard in enumerate(shards):
        assert shard == _reference_partition(n, replicas, r, range(n), drop_last)
        assert len(shard) == len(DistributedSampler(range(n), replicas, r, drop_last=drop_last))
    assert len({len(s) for s in shards}) == 1
    if not drop_last and n:
        assert set().union(*map(set, shards)) == set(range(n))


def test_distributed_sampler_shuffle_uses_seed_plus_epoch():
    s = DistributedSampler(range(23), 2, 1, shuffle=True, seed=4)
    e0 = list(s)
    assert e0 == _reference_partition(23, 2, 1, torch_randperm(23, 4), False)
    s.set_epoch(3)
    assert list(s) == _reference_partition(23, 2, 1, torch_randperm(23, 7), False)
    assert list(s) != e0


def test_distributed_sampler_reads_process_group_env(monkeypatch):
    monkeypatch.setenv(WORLD_SIZE_ENV, "3")
    monkeypatch.setenv(RANK_ENV, "2")
    s = DistributedSampler(range(9), shuffle=False)
    assert (s.num_replicas, s.rank) == (3, 2) and list(s) == [2, 5, 8]
    monkeypatch.delenv(RANK_ENV)
    with pytest.raises(RuntimeError, match="num_replicas= and rank="):
        DistributedSampler(range(9))
    monkeypatch.delenv(WORLD_SIZE_ENV)
    with pytest.raises(RuntimeError, match="process group"):
        DistributedSampler(range(9), rank=0)
    with pytest.raises(ValueError, match="invalid rank"):
        DistributedSampler(range(9), num_replicas=2, rank=2)


def test_torch_randperm_is_a_permutation_and_masks_seed():
    p = torch_randperm(1000, 5)
    assert sorted(p) == list(range(1000))
    assert torch_randperm(1000, 5 + 2**32) == p
    assert torch_randperm(0, 1) == [] and torch_randperm(1, 1) == [0]
    with pytest.raises(ValueError):
        torch_randperm(-1, 0)


def test_draw_seed_inputs():
    assert draw_seed(12) == 12
    sx.manual_seed(3)
    a = draw_seed(None)
    sx.manual_seed(3)
    assert draw_seed(None) == a and 0 <= a < 2**62
    with pytest.raises(TypeError, match="generator"):
        draw_seed("seed")
    with pytest.raises(ValueError):
        draw_seed(-1)


@pytest.mark.parity
@pytest.mark.parametrize("n", [1, 2, 7, 100, 1000, 50000])
@pytest.mark.parametrize("seed", [0, 1, 1234, 2**31 + 7, 2**40 + 3])
def test_torch_randperm_matches_torch(n, seed):
    torch = pytest.importorskip("torch")
    g = torch.Generator()
    g.manual_seed(seed)
    assert torch_randperm(n, seed) == torch.randperm(n, generator=g).tolist()


@pytest.mark.parity
@pytest.mark.parametrize("n,replicas,shuffle,drop_last,seed,epoch", [
    (10, 3, True, False, 0, 0), (101, 4, True, True, 7, 2), (5, 8, True, False, 1, 5),
    (60000, 8, True, False, 42, 1), (37, 2, False, False, 0, 0), (37, 5, False, True, 0, 0),
])
def test_distributed_sampler_matches_torch(n, replicas, shuffle, drop_last, seed, epoch):
    torch = pytest.importorskip("torch")
    from torch.utils.data.distributed import DistributedSampler as TorchDS

    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle, seed, drop_last)
        theirs = TorchDS(range(n), replicas, rank, shuffle, seed, drop_last)
        ours.set_epoch(epoch)
        theirs.set_epoch(epoch)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)
