"""Logits processors against formulas written out here (and HF transformers under ``-m parity``)."""

import math

import numpy as np
import pytest
import sneppx_core as sx

from sneppx_generate import (
    GenerationConfig,
    apply_min_p,
    apply_repetition_penalty,
    apply_temperature,
    apply_top_k,
    apply_top_p,
    process_logits,
    top_k_top_p_filtering,
)

RNG = np.random.default_rng(0)
LOGITS = RNG.normal(size=(4, 50)).astype(np.float32) * 3
NEG = -math.inf


def softmax(row):
    e = np.exp(row.astype(np.float64) - np.max(row))
    return e / e.sum()


def ref_top_k(row, k, fill=NEG, keep=1):
    k = min(max(k, keep), len(row))
    threshold = sorted(row.tolist(), reverse=True)[k - 1]
    return np.array([v if v >= threshold else fill for v in row], dtype=row.dtype)


def ref_top_p(row, p, fill=NEG, keep=1):
    """Keep tokens (largest first) while the probability of the ones before them is < p."""
    probs = softmax(row)
    out = np.full_like(row, fill)
    before = 0.0
    for rank, j in enumerate(sorted(range(len(row)), key=lambda j: -row[j])):
        if before < p or rank < keep:
            out[j] = row[j]
        before += probs[j]
    return out


def ref_min_p(row, min_p, fill=NEG):
    probs = softmax(row)
    return np.where(probs >= min_p * probs.max(), row, fill).astype(row.dtype)


def ref_penalty(row, ids, penalty):
    out = row.copy()
    for t in set(ids):
        out[t] = row[t] / penalty if row[t] > 0 else row[t] * penalty
    return out


@pytest.mark.parametrize("k", [1, 5, 49, 50, 80])
def test_top_k_matches_formula(k):
    got = apply_top_k(LOGITS, k)
    for b in range(LOGITS.shape[0]):
        np.testing.assert_array_equal(got[b], ref_top_k(LOGITS[b], k))
    assert np.isfinite(got).sum(axis=-1).tolist() == [min(k, 50)] * 4


def test_top_k_keeps_ties_and_min_tokens():
    row = np.array([1.0, 3.0, 3.0, 0.5, 2.0], dtype=np.float32)
    np.testing.assert_array_equal(apply_top_k(row, 1), [NEG, 3.0, 3.0, NEG, NEG])
    np.testing.assert_array_equal(apply_top_k(row, 1, filter_value=-9.0, min_tokens_to_keep=4),
                                  ref_top_k(row, 4, fill=-9.0))


@pytest.mark.parametrize("p", [0.05, 0.3, 0.7, 0.95, 0.999])
def test_top_p_matches_formula(p):
    got = apply_top_p(LOGITS, p)
    for b in range(LOGITS.shape[0]):
        np.testing.assert_array_equal(got[b], ref_top_p(LOGITS[b], p))
        kept = np.isfinite(got[b])
        assert softmax(LOGITS[b])[kept].sum() >= p - 1e-6


def test_top_p_min_tokens_to_keep():
    got = apply_top_p(LOGITS, 0.01, min_tokens_to_keep=3)
    assert (np.isfinite(got).sum(axis=-1) >= 3).all()
    for b in range(LOGITS.shape[0]):
        np.testing.assert_array_equal(got[b], ref_top_p(LOGITS[b], 0.01, keep=3))


@pytest.mark.parametrize("m", [0.0, 0.05, 0.2, 0.9, 1.0])
def test_min_p_matches_formula(m):
    got = apply_min_p(LOGITS, m)
    for b in range(LOGITS.shape[0]):
        np.testing.assert_array_equal(got[b], ref_min_p(LOGITS[b], m) if m > 0 else LOGITS[b])


def test_repetition_penalty_matches_formula():
    ids = [[0, 3, 3, 7], [1], [49, 2, 0], [5, 6, 7, 8, 9]]
    mixed = LOGITS.copy()
    mixed[0, 3], mixed[0, 7] = -2.0, 2.0  # one negative and one positive seen token
    got = apply_repetition_penalty(mixed, ids, 1.5)
    for b in range(4):
        np.testing.assert_allclose(got[b], ref_penalty(mixed[b], ids[b], 1.5), rtol=1e-6)
    assert got[0, 3] == pytest.approx(-3.0) and got[0, 7] == pytest.approx(2.0 / 1.5)
    np.testing.assert_array_equal(apply_repetition_penalty(mixed[0], ids[0], 1.0), mixed[0])


def test_temperature():
    np.testing.assert_allclose(apply_temperature(LOGITS, 0.5), LOGITS * 2, rtol=1e-6)


def test_top_k_top_p_filtering_is_top_k_then_top_p():
    got = top_k_top_p_filtering(LOGITS, top_k=10, top_p=0.8, filter_value=-1e9)
    for b in range(4):
        expected = ref_top_p(ref_top_k(LOGITS[b], 10), 0.8, fill=-1e9)
        np.testing.assert_array_equal(got[b], np.where(np.isfinite(expected), expected, -1e9))
    np.testing.assert_array_equal(top_k_top_p_filtering(LOGITS), LOGITS)


def test_numpy_in_numpy_out_without_mutation():
    original = LOGITS.copy()
    for out in (apply_top_k(LOGITS, 3), apply_top_p(LOGITS, 0.5), apply_min_p(LOGITS, 0.1),
                top_k_top_p_filtering(LOGITS[0], 3, 0.5)):
        assert isinstance(out, np.ndarray) and out.dtype == np.float32
    np.testing.assert_array_equal(LOGITS, original)
    half = top_k_top_p_filtering(LOGITS.astype(np.float16), top_k=5)
    assert half.dtype == np.float16 and np.isfinite(half).sum() == 20
    assert apply_top_k(LOGITS.astype(np.float64), 2).dtype == np.float64


@pytest.mark.parametrize("dtype", [sx.float32, sx.float64])
def test_tensor_in_tensor_out(dtype):
    t = sx.Tensor(LOGITS.tolist(), dtype=dtype)
    out = top_k_top_p_filtering(t, top_k=7, top_p=0.9)
    assert isinstance(out, sx.Tensor) and out.dtype == dtype and tuple(out.shape) == LOGITS.shape
    expected = top_k_top_p_filtering(LOGITS.astype(np.float64), top_k=7, top_p=0.9)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-6)
    one = apply_min_p(t[0], 0.2)
    assert isinstance(one, sx.Tensor) and tuple(one.shape) == (50,)
    np.testing.assert_array_equal(np.isfinite(one.numpy()), np.isfinite(ref_min_p(LOGITS[0], 0.2)))
    np.testing.assert_array_equal(t.numpy(), LOGITS.astype(t.numpy().dtype))  # input unchanged


@pytest.mark.parametrize("dtype", [sx.float16, sx.bfloat16])
def test_half_precision_tensors_keep_their_dtype(dtype):
    t = sx.Tensor(LOGITS.tolist(), dtype=dtype)
    rounded = t.float().numpy()
    out = apply_top_k(t, 5)
    assert out.dtype == dtype
    np.testing.assert_array_equal(out.float().numpy(), np.stack([ref_top_k(r, 5) for r in rounded]))


def test_process_logits_applies_hf_order():
    ids = [[1, 2], [3], [4, 4], [0]]
    cfg = GenerationConfig(repetition_penalty=1.3, temperature=0.7, top_k=20, top_p=0.9, min_p=0.05)
    step = apply_repetition_penalty(LOGITS, ids, 1.3)
    step = apply_min_p(apply_top_p(apply_top_k(apply_temperature(step, 0.7), 20), 0.9), 0.05)
    np.testing.assert_allclose(process_logits(LOGITS, ids, cfg), step, rtol=1e-6)
    greedy = GenerationConfig(repetition_penalty=1.3, top_k=3, do_sample=False)
    np.testing.assert_allclose(process_logits(LOGITS, ids, greedy), apply_repetition_penalty(LOGITS, ids, 1.3))


@pytest.mark.parametrize("call, match", [
    (lambda: apply_top_k(LOGITS, -1), "top_k"),
    (lambda: apply_top_k(LOGITS, 2.5), "top_k"),
    (lambda: apply_top_p(LOGITS, 0.0), "top_p"),
    (lambda: apply_top_p(LOGITS, 1.5), "top_p"),
    (lambda: apply_min_p(LOGITS, -0.1), "min_p"),
    (lambda: apply_temperature(LOGITS, 0), "temperature"),
    (lambda: apply_repetition_penalty(LOGITS, [[0]] * 4, 0), "penalty"),
    (lambda: apply_repetition_penalty(LOGITS, [[0]] * 3, 1.2), "3 rows"),
    (lambda: apply_repetition_penalty(LOGITS, [[50]] * 4, 1.2), r"\[0, 50\)"),
    (lambda: top_k_top_p_filtering(LOGITS, min_tokens_to_keep=0), "min_tokens_to_keep"),
    (lambda: top_k_top_p_filtering(np.zeros((2, 3, 4), np.float32)), r"shape \(V,\) or \(B, V\)"),
])
def test_bad_arguments_raise_value_error(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_bad_types_raise_type_error():
    with pytest.raises(TypeError, match="floating"):
        apply_top_k(np.arange(5), 2)
    with pytest.raises(TypeError, match="NumPy array or a sneppx_core Tensor"):
        apply_top_k([1.0, 2.0], 1)


@pytest.mark.parametrize("name", ["repetition", "temperature", "top_k", "top_p", "min_p"])
@pytest.mark.parity
def test_matches_transformers_processors(name):
    torch = pytest.importorskip("torch")
    tgen = pytest.importorskip("transformers.generation.logits_process")
    ids = np.array([[0, 3, 7], [1, 1, 2], [49, 2, 0], [5, 6, 7]])
    scores = torch.tensor(LOGITS)
    hf = {"repetition": tgen.RepetitionPenaltyLogitsProcessor(1.4),
          "temperature": tgen.TemperatureLogitsWarper(0.6),
          "top_k": tgen.TopKLogitsWarper(7),
          "top_p": tgen.TopPLogitsWarper(0.8),
          "min_p": tgen.MinPLogitsWarper(0.1)}[name]
    ours = {"repetition": lambda: apply_repetition_penalty(LOGITS, ids, 1.4),
            "temperature": lambda: apply_temperature(LOGITS, 0.6),
            "top_k": lambda: apply_top_k(LOGITS, 7),
            "top_p": lambda: apply_top_p(LOGITS, 0.8),
            "min_p": lambda: apply_min_p(LOGITS, 0.1)}[name]()
    expected = hf(torch.tensor(ids), scores.clone()).numpy()
    np.testing.assert_allclose(ours, expected, rtol=1e-6)
