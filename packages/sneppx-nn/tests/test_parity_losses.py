"""Parity of the loss modules with torch.nn: values, shapes and input gradients (float64)."""

import numpy as np
import pytest
import sneppx_core as sx

import sneppx_nn as nn
from conftest import to_np

torch = pytest.importorskip("torch")
tnn = torch.nn
pytestmark = [pytest.mark.parity, pytest.mark.filterwarnings("ignore:reduction:UserWarning")]


def _loss_inputs(rng):
    x = rng.standard_normal((6, 4))
    y = np.array([0, 3, 1, 2, 3, 1])
    return {
        "reg": (x, rng.standard_normal((6, 4))),
        "cls": (x, y),
        "cls_ignore": (x, np.array([0, -100, 1, 2, 3, -100])),
        "spatial": (rng.standard_normal((2, 4, 3)), rng.integers(0, 4, (2, 3))),
        "probs": (x, rng.dirichlet(np.ones(4), 6)),
        "logp": (np.log(rng.dirichlet(np.ones(4), 6)), y),
        "bce": (rng.uniform(0.05, 0.95, (6, 4)), rng.integers(0, 2, (6, 4)).astype(np.float64)),
        "logits": (x * 2, rng.integers(0, 2, (6, 4)).astype(np.float64)),
        "kl": (np.log(rng.dirichlet(np.ones(4), 6)), rng.dirichlet(np.ones(4), 6)),
        "sign": (x, np.sign(rng.standard_normal((6, 4)))),
        "multilabel": (x, np.array([[1, 3, -1, 0], [0, -1, 2, 2], [3, 3, 1, -1], [0, 1, 2, 3], [-1, 0, 1, 2],
                                    [2, -1, -1, -1]])),
    }


W4 = np.array([0.5, 1.0, 2.0, 1.5])
LOSSES = [
    ("mse", lambda m: m.MSELoss(), "reg"), ("mse_sum", lambda m: m.MSELoss(reduction="sum"), "reg"),
    ("l1_none", lambda m: m.L1Loss(reduction="none"), "reg"),
    ("smoothl1", lambda m: m.SmoothL1Loss(beta=0.5), "reg"),
    ("ce", lambda m: m.CrossEntropyLoss(), "cls"),
    ("ce_full", lambda m: m.CrossEntropyLoss(weight=_w(m), label_smoothing=0.1), "cls_ignore"),
    ("ce_none", lambda m: m.CrossEntropyLoss(reduction="none", label_smoothing=0.2), "cls_ignore"),
    ("ce_sum_weight", lambda m: m.CrossEntropyLoss(weight=_w(m), reduction="sum"), "cls"),
    ("ce_spatial", lambda m: m.CrossEntropyLoss(), "spatial"),
    ("ce_probs", lambda m: m.CrossEntropyLoss(label_smoothing=0.1), "probs"),
    ("nll", lambda m: m.NLLLoss(weight=_w(m)), "logp"),
    ("bce", lambda m: m.BCELoss(), "bce"),
    ("bce_weight", lambda m: m.BCELoss(weight=_w(m), reduction="sum"), "bce"),
    ("bce_logits", lambda m: m.BCEWithLogitsLoss(pos_weight=_w(m)), "logits"),
    ("kl_batchmean", lambda m: m.KLDivLoss(reduction="batchmean"), "kl"),
    ("kl_mean", lambda m: m.KLDivLoss(), "kl"),
    ("hinge", lambda m: m.HingeEmbeddingLoss(margin=0.6), "sign"),
    ("hinge_none", lambda m: m.HingeEmbeddingLoss(reduction="none"), "sign"),
    ("soft_margin", lambda m: m.SoftMarginLoss(), "sign"),
    ("multilabel_soft", lambda m: m.MultiLabelSoftMarginLoss(weight=_w(m)), "bce"),
    ("multilabel_soft_none", lambda m: m.MultiLabelSoftMarginLoss(reduction="none"), "logits"),
    ("multi_margin", lambda m: m.MultiMarginLoss(), "cls"),
    ("multi_margin_p2", lambda m: m.MultiMarginLoss(p=2, margin=0.7, weight=_w(m), reduction="sum"), "cls"),
    ("multilabel_margin", lambda m: m.MultiLabelMarginLoss(), "multilabel"),
    ("multilabel_margin_none", lambda m: m.MultiLabelMarginLoss(reduction="none"), "multilabel"),
]


def _w(m):
    return sx.Tensor(W4) if m is nn else torch.from_numpy(W4)


@pytest.mark.parametrize("name,make,inputs", LOSSES, ids=[c[0] for c in LOSSES])
def test_loss_parity(name, make, inputs):
    x, y = _loss_inputs(np.random.default_rng(10))[inputs]
    xs, xt = sx.Tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ls, lt = make(nn)(xs, sx.Tensor(y)), make(tnn)(xt, torch.from_numpy(y))
    assert ls.shape == tuple(lt.shape)
    np.testing.assert_allclose(to_np(ls), lt.detach().numpy(), rtol=1e-10, atol=1e-12)
    r = np.random.default_rng(11).standard_normal(tuple(lt.shape))
    (ls * sx.Tensor(r)).sum().backward()
    (lt * torch.from_numpy(r)).sum().backward()
    np.testing.assert_allclose(to_np(xs.grad), xt.grad.numpy(), rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("swap", [False, True])
def test_triplet_margin_with_distance_parity(swap):
    """TripletMarginWithDistanceLoss with the default distance and with a cosine distance, as torch's."""
    rng = np.random.default_rng(4)
    a, p, n = (rng.standard_normal((5, 3)) for _ in range(3))
    for dist in (None, "cos"):
        ours = nn.TripletMarginWithDistanceLoss(
            distance_function=None if dist is None else (lambda u, v: 1 - nn.functional.cosine_similarity(u, v)),
            margin=0.4, swap=swap)
        theirs = tnn.TripletMarginWithDistanceLoss(
            distance_function=None if dist is None else (lambda u, v: 1 - tnn.functional.cosine_similarity(u, v)),
            margin=0.4, swap=swap)
        xs = [sx.Tensor(v, requires_grad=True) for v in (a, p, n)]
        xt = [torch.tensor(v, requires_grad=True) for v in (a, p, n)]
        ls, lt = ours(*xs), theirs(*xt)
        ls.backward(), lt.backward()
        np.testing.assert_allclose(to_np(ls), lt.detach().numpy(), rtol=1e-10)
        for s_, t_ in zip(xs, xt):
            np.testing.assert_allclose(to_np(s_.grad), t_.grad.numpy(), rtol=1e-9, atol=1e-12)
