"""``GenerationConfig`` validation and the do_sample rule."""

import pytest

from sneppx_generate import GenerationConfig


def test_defaults_match_the_documented_signature():
    cfg = GenerationConfig()
    assert (cfg.max_new_tokens, cfg.do_sample, cfg.temperature, cfg.top_k, cfg.top_p, cfg.min_p) == \
        (64, None, 1.0, 0, 1.0, 0.0)
    assert (cfg.repetition_penalty, cfg.eos_token_id, cfg.pad_token_id, cfg.min_new_tokens) == (1.0, None, None, 0)
    assert (cfg.stop_strings, cfg.num_return_sequences, cfg.seed) == (None, 1, None)
    assert cfg.sampling is False


@pytest.mark.parametrize("kwargs, sampling", [
    ({}, False),
    ({"temperature": 0.7}, True),
    ({"top_k": 5}, True),
    ({"top_p": 0.9}, True),
    ({"min_p": 0.1}, True),
    ({"temperature": 0.0}, False),
    ({"repetition_penalty": 1.3}, False),
    ({"do_sample": False, "temperature": 0.7, "top_p": 0.9}, False),
    ({"do_sample": True}, True),
])
def test_do_sample_none_resolves_from_the_knobs(kwargs, sampling):
    assert GenerationConfig(**kwargs).sampling is sampling


@pytest.mark.parametrize("field, value", [
    ("max_new_tokens", -1), ("max_new_tokens", 2.5), ("max_new_tokens", True),
    ("temperature", -0.1), ("temperature", "hot"),
    ("top_k", -1), ("top_k", 1.5),
    ("top_p", 0.0), ("top_p", 1.01), ("top_p", -0.5),
    ("min_p", -0.1), ("min_p", 1.5),
    ("repetition_penalty", 0.0), ("repetition_penalty", -1.0),
    ("eos_token_id", -1), ("eos_token_id", []), ("eos_token_id", [1, -2]), ("eos_token_id", "2"),
    ("pad_token_id", -3),
    ("min_new_tokens", -1), ("min_new_tokens", 100),
    ("stop_strings", ""), ("stop_strings", []), ("stop_strings", ["ok", 3]),
    ("num_return_sequences", 0),
    ("seed", -1), ("seed", 1.5),
    ("do_sample", "yes"),
    ("output_scores", 1),
])
def test_invalid_values_name_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        GenerationConfig(**{field: value})


def test_zero_temperature_with_sampling_is_rejected():
    with pytest.raises(ValueError, match="temperature must be > 0 when sampling"):
        GenerationConfig(temperature=0.0, do_sample=True)
    with pytest.raises(ValueError, match="temperature"):
        GenerationConfig(temperature=0.0, top_p=0.9)


def test_num_return_sequences_needs_sampling():
    with pytest.raises(ValueError, match="num_return_sequences"):
        GenerationConfig(num_return_sequences=3)
    assert GenerationConfig(num_return_sequences=3, do_sample=True).num_return_sequences == 3


def test_replace_validates_and_rejects_unknown_names():
    cfg = GenerationConfig(max_new_tokens=8)
    assert cfg.replace(top_k=3).top_k == 3 and cfg.top_k == 0
    with pytest.raises(TypeError, match="max_tokens"):
        cfg.replace(max_tokens=3)
    with pytest.raises(ValueError, match="top_p"):
        cfg.replace(top_p=2.0)


def test_token_helpers():
    assert GenerationConfig(eos_token_id=[5, 7]).eos_token_ids == [5, 7]
    assert GenerationConfig(eos_token_id=5).resolved_pad_token_id() == 5
    assert GenerationConfig(eos_token_id=5, pad_token_id=0).resolved_pad_token_id() == 0
    assert GenerationConfig().resolved_pad_token_id() == 0
    assert GenerationConfig(stop_strings="\n").stop_string_list == ["\n"]
    assert GenerationConfig(seed=3).to_dict()["seed"] == 3
