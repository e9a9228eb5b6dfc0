"""The legacy ``size_average``/``reduce`` constructor flags choose the reduction, as in PyTorch, for every loss
that accepts them: against the explicit reduction, and against PyTorch's modules."""

import inspect
import itertools
import warnings

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from sneppx_nn import loss as loss_mod, loss_extra

RNG = np.random.default_rng(11)
FLAGS = list(itertools.product([None, True, False], repeat=2))


def _pm1(*shape):
    return np.where(RNG.random(shape) < 0.5, -1.0, 1.0)


def _label_rows():
    y = RNG.integers(0, 5, (4, 5))
    y[:, 2] = -1
    return y


INPUTS = {
    "MarginRankingLoss": lambda: [RNG.standard_normal(6), RNG.standard_normal(6), _pm1(6)],
    "CosineEmbeddingLoss": lambda: [RNG.standard_normal((5, 4)), RNG.standard_normal((5, 4)), _pm1(5)],
    "TripletMarginLoss": lambda: [RNG.standard_normal((5, 3)) for _ in range(3)],
    "HingeEmbeddingLoss": lambda: [RNG.standard_normal((4, 3)), _pm1(4, 3)],
    "SoftMarginLoss": lambda: [RNG.standard_normal((4, 3)), _pm1(4, 3)],
    "MultiLabelSoftMarginLoss": lambda: [RNG.standard_normal((4, 3)), (RNG.random((4, 3)) < 0.5).astype(float)],
    "MultiMarginLoss": lambda: [RNG.standard_normal((4, 5)), RNG.integers(0, 5, 4)],
    "MultiLabelMarginLoss": lambda: [RNG.standard_normal((4, 5)), _label_rows()],
    "PoissonNLLLoss": lambda: [RNG.standard_normal((3, 4)), RNG.poisson(2.0, (3, 4)).astype(float)],
    "NLLLoss2d": lambda: [np.log(RNG.dirichlet(np.ones(4), (2, 3, 5))).transpose(0, 3, 1, 2),
                          RNG.integers(0, 4, (2, 3, 5))],
}


def _expected(size_average, reduce):
    """torch.nn._reduction.legacy_get_string, with None counting as True."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    return ("mean" if size_average else "sum") if reduce else "none"


def test_every_loss_with_the_legacy_flags_is_covered():
    found = {name for mod in (loss_mod, loss_extra) for name, cls in vars(mod).items()
             if inspect.isclass(cls) and issubclass(cls, nn.Module) and not name.startswith("_")
             and {"size_average", "reduce"} <= set(inspect.signature(cls.__init__).parameters)}
    assert found == set(INPUTS)


@pytest.mark.parametrize("size_average, reduce", FLAGS)
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_flags_choose_the_reduction(name, size_average, reduce):
    cls, args = getattr(nn, name), [sx.tensor(a) for a in INPUTS[name]()]
    if size_average is None and reduce is None:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            m = cls(size_average=None, reduce=None, reduction="sum")
        assert m.reduction == "sum"
        return
    with pytest.warns(DeprecationWarning, match=f"{name}.*reduction='{_expected(size_average, reduce)}'") as rec:
        m = cls(size_average=size_average, reduce=reduce, reduction="sum" if reduce is False else "none")
    assert rec[0].filename == __file__  # points at the caller
    assert m.reduction == _expected(size_average, reduce)
    want = cls(reduction=_expected(size_average, reduce))(*args)
    np.testing.assert_allclose(m(*args).numpy(), want.numpy(), rtol=1e-12)


@pytest.mark.parity
@pytest.mark.parametrize("size_average, reduce", FLAGS)
@pytest.mark.parametrize("name", sorted(INPUTS))
def test_flags_match_torch(name, size_average, reduce):
    torch = pytest.importorskip("torch")
    data = INPUTS[name]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = getattr(torch.nn, name)(size_average=size_average, reduce=reduce)(*[torch.tensor(a) for a in data])
        s = getattr(nn, name)(size_average=size_average, reduce=reduce)(*[sx.tensor(a) for a in data])
    assert tuple(s.shape) == tuple(t.shape)
    np.testing.assert_allclose(s.numpy(), t.numpy(), rtol=1e-10, atol=1e-12)
