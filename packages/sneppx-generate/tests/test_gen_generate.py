"""``generate``/``stream`` against decoding done by hand with the same models."""

import numpy as np
import pytest
import sneppx_core as sx
from gen_models import (
    BigramLM,
    EmbedMatmulLM,
    MaskedTinyAttentionLM,
    NoCache,
    TinyAttentionLM,
    cycle_table,
    greedy_by_hand,
)

from sneppx_generate import GenerationConfig, SimpleTokenizer, Tokenizer, generate, stream

PROMPTS = [[3, 7, 1], [5], [2, 2, 9, 4, 11, 6], [8, 0]]


def test_greedy_equals_argmax_by_hand_with_and_without_cache():
    model = TinyAttentionLM()
    for prompt in PROMPTS:
        expected = greedy_by_hand(model, prompt, 12)
        cached = generate(model, prompt, max_new_tokens=12)
        uncached = generate(model, prompt, max_new_tokens=12, use_cache=False)
        hidden = generate(NoCache(model), prompt, max_new_tokens=12)
        assert cached["sequences"][0] == uncached["sequences"][0] == hidden["sequences"][0] == expected
        assert cached["output_ids"].tolist() == [expected]
        assert cached["num_generated"] == [12]


def test_cache_feeds_new_tokens_and_no_cache_feeds_everything():
    model = TinyAttentionLM()
    generate(model, [[1, 2, 3], [4, 5, 6]], max_new_tokens=4)
    assert model.calls == [(2, 3), (2, 1), (2, 1), (2, 1)]
    model.calls.clear()
    generate(model, [[1, 2, 3], [4, 5, 6]], max_new_tokens=4, use_cache=False)
    assert model.calls == [(2, 3), (2, 4), (2, 5), (2, 6)]
    assert not any(model.grad_modes) and sx.is_grad_enabled()


def test_ragged_batch_equals_single_prompts_with_and_without_mask():
    for model in (TinyAttentionLM(seed=1), MaskedTinyAttentionLM(seed=1)):
        singles = [generate(model, p, max_new_tokens=8)["sequences"][0] for p in PROMPTS]
        batch = generate(model, PROMPTS, max_new_tokens=8)
        assert batch["sequences"] == singles
        nocache = generate(model, PROMPTS, max_new_tokens=8, use_cache=False)
        assert nocache["sequences"] == singles
    # the masked model runs one batch; the other runs one group per prompt length
    masked = MaskedTinyAttentionLM(seed=1)
    generate(masked, PROMPTS, max_new_tokens=2)
    assert masked.calls == [(4, 6), (4, 1)]
    plain = TinyAttentionLM(seed=1)
    generate(plain, PROMPTS, max_new_tokens=2)
    assert sorted(plain.calls) == sorted([(1, 3), (1, 1), (1, 1), (1, 1), (1, 6), (1, 1), (1, 2), (1, 1)])


def test_output_ids_are_left_padded_and_padded_after_eos():
    model = BigramLM(cycle_table(12))
    res = generate(model, [[9, 1], [3]], max_new_tokens=6, eos_token_id=5, pad_token_id=11)
    assert res["sequences"] == [[9, 1, 2, 3, 4, 5], [3, 4, 5]]
    assert res["num_generated"] == [4, 2]
    assert res["output_ids"].dtype == sx.int64
    assert res["output_ids"].tolist() == [[9, 1, 2, 3, 4, 5], [11, 3, 4, 5, 11, 11]]


def test_min_new_tokens_forbids_eos():
    table = cycle_table(8)
    res = generate(BigramLM(table), [3], max_new_tokens=5, min_new_tokens=3, eos_token_id=[5, 6])
    # by hand: step 0 picks 4, step 1 would pick 5 (an EOS) so it takes the best allowed: argmax
    # of table[4] without 5 and 6 -> index 0 (all ties at 0, first wins); step 2 picks 1, then 2.
    row4 = table[4].copy()
    row4[[5, 6]] = -np.inf
    second = int(np.argmax(row4))
    assert res["sequences"][0] == [3, 4, second, second + 1, second + 2, second + 3]


def test_input_forms_agree():
    model = TinyAttentionLM()
    ref = generate(model, [[4, 2, 7]], max_new_tokens=5)["sequences"]
    for ids in ([4, 2, 7], np.array([4, 2, 7]), np.array([[4, 2, 7]], dtype=np.int32),
                sx.Tensor([4, 2, 7], dtype=sx.int64), sx.Tensor([[4, 2, 7]], dtype=sx.int64)):
        assert generate(model, ids, max_new_tokens=5)["sequences"] == ref
    prompts = [[1, 2, 3, 4], [5, 6]]
    ragged = generate(model, prompts, max_new_tokens=5)["sequences"]
    left = sx.Tensor([[1, 2, 3, 4], [0, 0, 5, 6]], dtype=sx.int64)
    left_mask = sx.Tensor([[1, 1, 1, 1], [0, 0, 1, 1]], dtype=sx.int64)
    right_mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]])
    assert generate(model, left, attention_mask=left_mask, max_new_tokens=5)["sequences"] == ragged
    assert generate(model, [[1, 2, 3, 4], [5, 6, 0, 0]], attention_mask=right_mask,
                    max_new_tokens=5)["sequences"] == ragged


def test_seeded_sampling_is_reproducible_and_row_independent():
    model = TinyAttentionLM()
    cfg = GenerationConfig(max_new_tokens=20, temperature=1.5, top_k=10, seed=123)
    a = generate(model, PROMPTS, generation_config=cfg)["sequences"]
    assert generate(model, PROMPTS, generation_config=cfg)["sequences"] == a
    assert generate(model, PROMPTS[:1], generation_config=cfg)["sequences"][0] == a[0]
    others = [generate(model, PROMPTS, generation_config=cfg, seed=s)["sequences"] for s in (1, 2, 3)]
    assert any(o != a for o in others)
    sx.manual_seed(7)
    b = generate(model, PROMPTS, generation_config=cfg.replace(seed=None))["sequences"]
    sx.manual_seed(7)
    assert generate(model, PROMPTS, generation_config=cfg.replace(seed=None))["sequences"] == b


def test_a_rows_samples_do_not_depend_on_when_other_rows_finish():
    rng = np.random.default_rng(3)
    table = rng.normal(size=(10, 10)).astype(np.float32)
    table[:, [1, 9]] = -50.0  # 1 is EOS: never sampled, and neither is 9 ...
    table[9, 1] = 50.0  # ... but a prompt of 9 is followed by EOS
    model = BigramLM(table)
    cfg = GenerationConfig(max_new_tokens=12, do_sample=True, eos_token_id=1, pad_token_id=0, seed=11)
    early = generate(model, [[9], [3]], generation_config=cfg)
    late = generate(model, [[8], [3]], generation_config=cfg)
    assert early["num_generated"][0] == 1 and late["num_generated"][0] == 12
    assert early["sequences"][1] == late["sequences"][1]


def test_sampling_follows_the_processed_distribution():
    logits = np.array([2.0, 1.0, 0.5, 0.0, -1.0, 1.5], dtype=np.float32)
    model = BigramLM(np.tile(logits, (6, 1)))
    n = 4000
    res = generate(model, [0], max_new_tokens=1, temperature=0.8, num_return_sequences=n, seed=0)
    counts = np.bincount([s[-1] for s in res["sequences"]], minlength=6)
    p = np.exp(logits / 0.8) / np.exp(logits / 0.8).sum()
    assert np.all(np.abs(counts / n - p) < 4 * np.sqrt(p * (1 - p) / n) + 1e-3)
    topk = generate(model, [0], max_new_tokens=1, top_k=2, num_return_sequences=500, seed=0)
    assert {s[-1] for s in topk["sequences"]} == {0, 5}
    nucleus = generate(model, [0], max_new_tokens=1, top_p=0.3, num_return_sequences=200, seed=0)
    assert {s[-1] for s in nucleus["sequences"]} == {0}


def test_repetition_penalty_applies_to_greedy():
    logits = np.array([3.0, 2.9, 2.8, -1.0], dtype=np.float32)
    model = BigramLM(np.tile(logits, (4, 1)))
    plain = generate(model, [3], max_new_tokens=3)["sequences"][0]
    assert plain == [3, 0, 0, 0]
    penalised = generate(model, [3], max_new_tokens=3, repetition_penalty=2.0)["sequences"][0]
    assert penalised == [3, 0, 1, 2]


def test_streamer_and_stream_yield_tokens_in_order():
    model = TinyAttentionLM()
    seen = []
    res = generate(model, PROMPTS[:2], max_new_tokens=6, streamer=lambda i, t: seen.append((i, t)))
    for i, seq in enumerate(res["sequences"]):
        assert [t for j, t in seen if j == i] == seq[len(PROMPTS[i]):]
    streamed = list(stream(model, PROMPTS[:2], GenerationConfig(max_new_tokens=6)))
    assert streamed == seen
    gen = stream(model, [1, 2], max_new_tokens=3)
    next(gen)
    assert sx.is_grad_enabled()  # grad mode is only switched off around model calls
    with pytest.raises(ValueError, match="top_p"):
        stream(model, [1], top_p=3.0)  # validated before the first token


def test_stop_strings_need_a_tokenizer_and_stop_sequences():
    tok = SimpleTokenizer(chars="abcdefgh")
    ids = {c: tok.token_to_id(c) for c in "abcdefgh"}
    vocab = tok.vocab_size
    table = np.zeros((vocab, vocab), dtype=np.float32)
    for x, y in zip("abcdefg", "bcdefgh"):
        table[ids[x], ids[y]] = 5.0
    model = BigramLM(table)
    with pytest.raises(ValueError, match="tokenizer"):
        generate(model, [ids["a"]], stop_strings="cd")
    res = generate(model, [[ids["a"]], [ids["e"]]], max_new_tokens=6, stop_strings=["cd", "gh"],
                   tokenizer=tok, pad_token_id=tok.pad_token_id)
    assert [tok.decode(s) for s in res["sequences"]] == ["abcd", "efgh"]


def test_scores_are_the_processed_logits():
    model = TinyAttentionLM()
    res = generate(model, [[1, 2], [3, 4]], max_new_tokens=4, output_scores=True, eos_token_id=0,
                   repetition_penalty=1.2)
    assert len(res["scores"]) == max(res["num_generated"])
    for step, sc in enumerate(res["scores"]):
        arr = sc.numpy()
        for row, seq in enumerate(res["sequences"]):
            if step < res["num_generated"][row]:
                assert int(np.argmax(arr[row])) == seq[2 + step]
            else:
                assert np.all(arr[row] == -np.inf)
    first = model(sx.Tensor([[1, 2]], dtype=sx.int64)).numpy()[0, -1]
    from sneppx_generate import apply_repetition_penalty
    np.testing.assert_allclose(res["scores"][0].numpy()[0], apply_repetition_penalty(first, [1, 2], 1.2), rtol=1e-5)


def test_num_return_sequences_repeats_prompts_adjacently():
    model = TinyAttentionLM()
    res = generate(model, [[1, 2], [3]], max_new_tokens=3, do_sample=True, num_return_sequences=3, seed=5)
    assert len(res["sequences"]) == 6 and tuple(res["output_ids"].shape) == (6, 5)
    assert [s[:len(p)] for s, p in zip(res["sequences"], [[1, 2]] * 3 + [[3]] * 3)] == [[1, 2]] * 3 + [[3]] * 3


def test_model_returning_only_the_last_position_and_float64():
    base = TinyAttentionLM()

    def last_only(ids, cache=None):
        return base(ids).to(sx.float64)[:, -1:]

    ref = generate(base, [5, 6], max_new_tokens=6)["sequences"]
    assert generate(last_only, [5, 6], max_new_tokens=6)["sequences"] == ref


def test_zero_new_tokens_returns_prompts():
    res = generate(TinyAttentionLM(), [[1, 2], [3]], max_new_tokens=0, pad_token_id=0)
    assert res["sequences"] == [[1, 2], [3]] and res["output_ids"].tolist() == [[1, 2], [0, 3]]


def test_guide_snippet_runs():
    model = EmbedMatmulLM(vocab=32000, dim=8)
    gen_config = GenerationConfig(max_new_tokens=64, temperature=0.7, top_p=0.9)
    tok = Tokenizer(vocab_size=32000)
    ids = tok.encode("Hello, SneppX")
    result = generate(model, ids, generation_config=gen_config)
    text = tok.decode(result["output_ids"].tolist()[0])
    assert text.startswith("Hello, SneppX") and result["num_generated"] == [64]


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"input_ids": [[]]}, ValueError, "prompt 0 is empty"),
    ({"input_ids": []}, ValueError, "empty"),
    ({"input_ids": [1, -2]}, ValueError, "non-negative"),
    ({"input_ids": np.array([1.0, 2.0])}, TypeError, "integers"),
    ({"input_ids": "hello"}, TypeError, "input_ids"),
    ({"input_ids": [[1, 2, 3]], "attention_mask": [[1, 0, 1]]}, ValueError, "padding between tokens"),
    ({"input_ids": [[1, 2, 3]], "attention_mask": [[1, 1]]}, ValueError, "does not match"),
    ({"input_ids": [1], "max_tokens": 3}, TypeError, "max_tokens"),
    ({"input_ids": [1], "temperature": -1.0}, ValueError, "temperature"),
    ({"input_ids": [1], "generation_config": {"max_new_tokens": 3}}, TypeError, "GenerationConfig"),
    ({"input_ids": [1], "streamer": 3}, TypeError, "streamer"),
])
def test_bad_input_raises(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        generate(TinyAttentionLM(), **kwargs)


def test_bad_models_raise():
    with pytest.raises(TypeError, match="callable"):
        generate(object(), [1])
    with pytest.raises(ValueError, match=r"expected \(1, 2, V\)"):
        generate(lambda ids, cache=None: sx.zeros((1, 5)), [1, 2])
    with pytest.raises(TypeError, match="Tensor of logits"):
        generate(lambda ids, cache=None: np.zeros((1, 2, 5)), [1, 2])


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_sampling_from_nan_or_inf_logits_raises(bad):
    table = np.zeros((6, 6), dtype=np.float32)
    table[:, 2] = bad
    model = BigramLM(table)
    with pytest.raises(RuntimeError, match=r"probability tensor contains either `inf`, `nan` or element < 0"):
        generate(model, [[0], [1]], max_new_tokens=3, do_sample=True, seed=0)
    with pytest.raises(RuntimeError, match=r"row 0 of the \(2, 6\) float32 scores"):
        generate(model, [[0], [1]], max_new_tokens=3, do_sample=True, top_k=3, seed=0)



class _MaskRecorder(MaskedTinyAttentionLM):
    """Records, per call, whether an attention mask came; with ``ones`` it fills in an all-ones mask
    when none came (the meaning of no mask), so its tokens are those of a model always given one."""

    def __init__(self, ones=False):
        super().__init__()
        self.ones, self.masks = ones, []

    def forward(self, input_ids, cache=None, attention_mask=None):
        self.masks.append(attention_mask is not None)
        if attention_mask is None and self.ones:
            total = (cache.length if cache is not None else 0) + input_ids.shape[1]
            attention_mask = sx.ones((input_ids.shape[0], total), dtype=sx.int64)
        return super().forward(input_ids, cache=cache, attention_mask=attention_mask)


def test_all_ones_attention_mask_is_left_out():
    """A mask of all ones (no padding, no finished row) is not passed: the model computes the same
    without it. Padded prompts, and rows that finished (their new keys are 0), pass it."""
    same = [[4, 2, 7], [1, 5, 3]]
    plain, filled = _MaskRecorder(), _MaskRecorder(ones=True)
    assert generate(plain, same, max_new_tokens=6)["sequences"] == \
        generate(filled, same, max_new_tokens=6)["sequences"]
    assert plain.masks == [False] * 6
    ragged = _MaskRecorder()
    generate(ragged, [[4, 2, 7], [1]], max_new_tokens=4)
    assert ragged.masks == [True] * 4
    free = generate(_MaskRecorder(), same, max_new_tokens=6)["sequences"]
    eos = [t for t in free[1][3:] if t not in free[0][3:]][0]  # only the second row generates it
    step = free[1][3:].index(eos)
    stopping, always = _MaskRecorder(), _MaskRecorder(ones=True)
    out = generate(stopping, same, max_new_tokens=6, eos_token_id=eos)["sequences"]
    assert out == generate(always, same, max_new_tokens=6, eos_token_id=eos)["sequences"]
    # the EOS itself is a real token (mask 1); the positions after it are 0 from the call after next
    assert stopping.masks == [False] * (step + 2) + [True] * (6 - step - 2)
