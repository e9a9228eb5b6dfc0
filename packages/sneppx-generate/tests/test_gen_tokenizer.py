"""Byte-level BPE ``Tokenizer``: round trips, training, tokenizer.json files in several styles."""

import json
import os
import pathlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors, trainers

from sneppx_generate import GenerationConfig, Tokenizer

CORPUS = ["the quick brown fox jumps over the lazy dog"] * 50 + ["hello world, hello tokens"] * 50


def gpt2_byte_map():
    """GPT-2's byte -> printable character table, written out from its definition."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    extra = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + extra)
            extra += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


SPECIAL_FREE_TEXT = st.text(max_size=80).filter(lambda t: not any(s in t for s in ("<pad>", "<bos>", "<eos>", "<unk>")))


@settings(max_examples=150, deadline=None)
@given(SPECIAL_FREE_TEXT)
def test_untrained_round_trip_is_exact_and_bytewise(text):
    tok = Tokenizer(vocab_size=32000)
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    byte_map = gpt2_byte_map()
    assert [tok.id_to_token(i) for i in ids] == [byte_map[b] for b in text.encode("utf-8")]


def test_guide_snippet_round_trips():
    tok = Tokenizer(vocab_size=32000)
    ids = tok.encode("Hello, SneppX")
    assert len(ids) == len("Hello, SneppX".encode())
    assert tok.decode(ids) == "Hello, SneppX"
    assert tok.vocab_size == 32000 and len(tok) == 32000 and tok.num_tokens == 4 + 256


def test_special_tokens_and_generation_defaults():
    tok = Tokenizer(vocab_size=1000)
    assert [tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id] == [0, 1, 2, 3]
    assert [tok.id_to_token(i) for i in range(4)] == ["<pad>", "<bos>", "<eos>", "<unk>"]
    defaults = tok.generation_defaults()
    assert defaults == {"eos_token_id": tok.token_to_id("<eos>"), "pad_token_id": tok.token_to_id("<pad>")}
    cfg = GenerationConfig(**defaults)
    assert cfg.eos_token_id == 2 and cfg.pad_token_id == 0
    # a special-token string inside text is the special token
    ids = tok.encode("a<eos>b")
    assert ids[1] == 2 and tok.decode(ids) == "ab" and tok.decode(ids, skip_special_tokens=False) == "a<eos>b"


def test_bos_eos_options():
    tok = Tokenizer(vocab_size=1000)
    plain = tok.encode("hi")
    assert tok.encode("hi", add_bos=True) == [1] + plain
    assert tok.encode("hi", add_eos=True) == plain + [2]
    auto = Tokenizer(vocab_size=1000, add_bos=True, add_eos=True)
    assert auto.encode("hi") == [1] + plain + [2]
    assert auto.encode("hi", add_bos=False) == plain + [2]
    no_bos = Tokenizer(vocab_size=1000, special_tokens=("<pad>", "<eos>"))
    with pytest.raises(ValueError, match="no BOS"):
        no_bos.encode("hi", add_bos=True)


def test_reserved_ids_decode_to_nothing_and_out_of_range_raises():
    tok = Tokenizer(vocab_size=1000)
    a = tok.encode("a")
    assert tok.decode(a + [500, 999] + a) == "aa"
    with pytest.raises(ValueError, match="outside"):
        tok.decode([1000])
    with pytest.raises(ValueError, match="outside"):
        tok.decode([-1])
    with pytest.raises(IndexError):
        tok.id_to_token(500)
    assert tok.token_to_id("not-a-token") is None


def test_train_learns_merges_and_still_round_trips():
    tok = Tokenizer(vocab_size=400)
    before = tok.encode("the quick brown fox")
    tok.train(CORPUS)
    after = tok.encode("the quick brown fox")
    assert 260 < tok.num_tokens <= 400 and tok.vocab_size == 400
    assert len(after) < len(before)
    assert tok.decode(after) == "the quick brown fox"
    assert tok.decode(tok.encode("unseen ÿ 文字 😀")) == "unseen ÿ 文字 😀"
    # special ids keep their places after training
    assert [tok.pad_token_id, tok.bos_token_id, tok.eos_token_id, tok.unk_token_id] == [0, 1, 2, 3]
    assert tok.token_to_id("Ġquick") is not None


def test_train_from_files(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(CORPUS), encoding="utf-8")
    from_path = Tokenizer(vocab_size=400).train(path)
    from_str_path = Tokenizer(vocab_size=400).train([str(path)])
    from_texts = Tokenizer(vocab_size=400).train([line + "\n" for line in CORPUS])
    text = "the lazy dog says hello world"
    assert from_path.encode(text) == from_str_path.encode(text) == from_texts.encode(text)
    assert len(from_path.encode(text)) < len(text)


def test_save_and_load_standard_json(tmp_path):
    tok = Tokenizer(vocab_size=400).train(CORPUS)
    path = tmp_path / "tokenizer.json"
    tok.save(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["model"]["type"] == "BPE" and data["pre_tokenizer"]["type"] == "ByteLevel"
    loaded = Tokenizer.from_file(path)
    raw = HFTokenizer.from_file(str(path))
    text = "hello world, the quick fox"
    assert loaded.encode(text) == tok.encode(text) == raw.encode(text, add_special_tokens=False).ids
    assert loaded.eos_token_id == tok.eos_token_id and loaded.special_tokens == tok.special_tokens
    assert loaded.vocab_size == tok.num_tokens
    assert Tokenizer.from_file(path, vocab_size=512).vocab_size == 512
    loaded.train(CORPUS)  # a byte-level tokenizer read from a file can be retrained


def test_batch_methods_match_single():
    tok = Tokenizer(vocab_size=400).train(CORPUS)
    texts = ["hello", "the quick brown fox", ""]
    batch = tok.encode_batch(texts, add_eos=True)
    assert batch == [tok.encode(t, add_eos=True) for t in texts]
    assert tok.decode_batch(batch) == texts
    assert tok.decode(np.array(batch[1])) == texts[1]


def test_bad_arguments():
    with pytest.raises(ValueError, match="vocab_size"):
        Tokenizer(vocab_size=100)
    with pytest.raises(ValueError, match="duplicates"):
        Tokenizer(special_tokens=("<pad>", "<pad>"))
    tok = Tokenizer(vocab_size=400)
    with pytest.raises(TypeError, match="encode"):
        tok.encode(b"bytes")
    with pytest.raises(ValueError, match="nested"):
        tok.decode([[1, 2]])
    with pytest.raises(TypeError, match="ints"):
        tok.decode([1.5])
    with pytest.raises(TypeError, match="encode_batch"):
        tok.encode_batch("one string")


def test_from_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        Tokenizer.from_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(ValueError, match="tokenizer.json"):
        Tokenizer.from_file(bad)


# --- tokenizer.json files in the styles of well-known models, built here with `tokenizers` -----

def _gpt2_style(path: pathlib.Path) -> None:
    hf = HFTokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    hf.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    hf.train_from_iterator(CORPUS, trainer=trainer)
    hf.save(str(path))


def _sentencepiece_bpe(metaspace: bool) -> HFTokenizer:
    """Llama-2 style (metaspace=False: Prepend/Replace normalizer) or Mistral style (Metaspace
    pre-tokenizer), both BPE with byte fallback."""
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    tmp = HFTokenizer(models.BPE(unk_token="<unk>"))
    tmp.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    trainer = trainers.BpeTrainer(vocab_size=500, special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens,
                                  show_progress=False)
    tmp.train_from_iterator(CORPUS, trainer=trainer)
    model_json = json.loads(tmp.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model_json["merges"]]
    hf = HFTokenizer(models.BPE(model_json["vocab"], merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    if metaspace:
        hf.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first")
        hf.decoder = decoders.Sequence([decoders.ByteFallback(), decoders.Metaspace(replacement="▁", prepend_scheme="first")])
    else:
        hf.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        hf.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                        decoders.Strip(" ", 1, 0)])
    hf.add_special_tokens(["<unk>", "<s>", "</s>"])
    hf.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return hf


TEXTS = ["hello world", "the quick brown fox", "naïve café 😀 文字", "  two  spaces", ""]


def test_gpt2_style_file_loads(tmp_path):
    path = tmp_path / "gpt2.json"
    _gpt2_style(path)
    raw = HFTokenizer.from_file(str(path))
    tok = Tokenizer.from_file(path)
    eot = raw.token_to_id("<|endoftext|>")
    assert tok.eos_token_id == tok.bos_token_id == eot and tok.pad_token_id is None
    assert tok.generation_defaults() == {"eos_token_id": eot, "pad_token_id": eot}
    for text in TEXTS:
        ids = tok.encode(text)
        assert ids == raw.encode(text, add_special_tokens=False).ids
        assert tok.decode(ids) == text
    assert tok.encode("hi", add_eos=True)[-1] == eot


@pytest.mark.parametrize("metaspace", [False, True], ids=["llama", "mistral"])
def test_sentencepiece_style_files_load(tmp_path, metaspace):
    path = tmp_path / "tokenizer.json"
    raw = _sentencepiece_bpe(metaspace)
    raw.save(str(path))
    tok = Tokenizer.from_file(path)
    assert (tok.unk_token_id, tok.bos_token_id, tok.eos_token_id, tok.pad_token_id) == (0, 1, 2, None)
    assert tok.vocab_size == raw.get_vocab_size()
    for text in TEXTS[:-1]:
        ids = tok.encode(text)
        assert ids == raw.encode(text, add_special_tokens=False).ids
        assert tok.encode(text, add_bos=True) == raw.encode(text).ids  # the file's template adds <s>
        assert tok.decode(ids) == raw.decode(ids)
    # characters outside the vocabulary fall back to byte tokens, and decode back exactly
    ids = tok.encode("😀")
    assert [tok.id_to_token(i) for i in ids if tok.id_to_token(i).startswith("<0x")] == \
        [f"<0x{b:02X}>" for b in "😀".encode("utf-8")]
    assert tok.decode(tok.encode("hello 😀 world")) == "hello 😀 world"
    with pytest.raises(ValueError, match="byte-level"):
        tok.train(CORPUS)


def test_save_writes_a_file_other_loaders_read(tmp_path):
    tok = Tokenizer(vocab_size=300)
    path = os.path.join(tmp_path, "t.json")
    tok.save(path)
    raw = HFTokenizer.from_file(path)
    assert raw.decode(tok.encode("round ✓ trip")) == "round ✓ trip"
