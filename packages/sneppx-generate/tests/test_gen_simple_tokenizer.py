"""Character-level ``SimpleTokenizer``."""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sneppx_generate import GenerationConfig, SimpleTokenizer

TEXT = "hello world, hello sneppx"


def test_vocab_is_specials_then_sorted_characters():
    tok = SimpleTokenizer().train(TEXT)
    expected = ["<pad>", "<bos>", "<eos>", "<unk>"] + sorted(set(TEXT))
    assert [tok.id_to_token(i) for i in range(tok.vocab_size)] == expected
    assert tok.vocab_size == len(tok) == len(expected)
    assert tok.encode(TEXT) == [expected.index(c) for c in TEXT]


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
def test_round_trip_of_trained_text(text):
    tok = SimpleTokenizer().train([text])
    assert tok.decode(tok.encode(text)) == text


def test_unknown_characters_map_to_unk():
    tok = SimpleTokenizer(chars="abc")
    ids = tok.encode("abz")
    assert ids == [tok.token_to_id("a"), tok.token_to_id("b"), tok.unk_token_id]
    assert tok.decode(ids, skip_special_tokens=False) == "ab<unk>"
    assert tok.decode(ids) == "ab"
    strict = SimpleTokenizer(chars="abc", special_tokens=("<pad>", "<eos>"))
    with pytest.raises(ValueError, match="unknown character 'z'"):
        strict.encode("abz")


def test_training_extends_the_vocabulary():
    tok = SimpleTokenizer(chars="ab")
    tok.train(["bc", "d"])
    assert [tok.id_to_token(i) for i in range(4, tok.vocab_size)] == ["a", "b", "c", "d"]


def test_bos_eos_and_generation_defaults():
    tok = SimpleTokenizer(chars="xy", add_bos=True)
    assert tok.encode("xy") == [1, tok.token_to_id("x"), tok.token_to_id("y")]
    assert tok.encode("xy", add_bos=False, add_eos=True) == [tok.token_to_id("x"), tok.token_to_id("y"), 2]
    cfg = GenerationConfig(**tok.generation_defaults())
    assert (cfg.eos_token_id, cfg.pad_token_id) == (2, 0)
    # special-token strings in text are plain characters here
    tok.train("<eos>")
    assert len(tok.encode("<eos>", add_bos=False)) == 5


def test_save_and_load(tmp_path):
    tok = SimpleTokenizer(special_tokens=("<pad>", "<eos>", "<unk>"), add_eos=True).train(TEXT + " é😀")
    path = tmp_path / "simple.json"
    tok.save(path)
    loaded = SimpleTokenizer.from_file(path)
    assert loaded.get_vocab() == tok.get_vocab()
    assert loaded.encode("hello 😀") == tok.encode("hello 😀")
    assert loaded.special_tokens == ["<pad>", "<eos>", "<unk>"] and loaded.bos_token_id is None
    assert SimpleTokenizer.load(path).get_vocab() == tok.get_vocab()
    assert json.loads(path.read_text(encoding="utf-8"))["chars"][-1] == "😀"


def test_batches_and_array_input():
    tok = SimpleTokenizer().train(TEXT)
    batch = tok.encode_batch(["hello", "world"])
    assert tok.decode_batch(np.array(batch)) == ["hello", "world"]


def test_errors(tmp_path):
    tok = SimpleTokenizer(chars="ab")
    with pytest.raises(ValueError, match=r"outside \[0, 6\)"):
        tok.decode([6])
    with pytest.raises(IndexError):
        tok.id_to_token(-1)
    with pytest.raises(TypeError):
        tok.encode(3)
    with pytest.raises(ValueError, match="single characters"):
        SimpleTokenizer(chars=["ab"])
    with pytest.raises(TypeError, match="train"):
        tok.train([1, 2])
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}', encoding="utf-8")
    with pytest.raises(ValueError, match="not a SimpleTokenizer file"):
        SimpleTokenizer.from_file(other)
