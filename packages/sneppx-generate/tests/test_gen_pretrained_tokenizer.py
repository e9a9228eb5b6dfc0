"""Tokenizer.from_pretrained against the tokenizers library (and transformers for chat templates)."""

import json

import pytest
from tokenizers import Tokenizer as HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, processors, trainers

from sneppx_generate import Tokenizer

TEXT = ["The quick brown fox jumps over the lazy dog.", "Grüße aus Köln — 東京 🚀!", "def f(x):\n    return x ** 2",
        "  leading spaces and\ttabs", "numbers 1234567 and symbols #@$%"] * 20
SAMPLES = ["Hello world", "Grüße 東京 🚀", "<s>special</s> inside", "", "   ", "x" * 50, "unseen ẞ 𝔘"]
TEMPLATE = ("{{ bos_token }}{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{{ eos_token }}{% endfor %}"
            "{% if add_generation_prompt %}<|assistant|>{% endif %}")


def _byte_level():
    tok = HFTokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<pad>", "<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(TEXT, trainer)
    return tok


def _metaspace():
    tok = HFTokenizer(models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Sequence([decoders.Metaspace(), decoders.ByteFallback(), decoders.Fuse()])
    trainer = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False,
                                  initial_alphabet=[f"<0x{b:02X}>" for b in range(256)])
    tok.train_from_iterator(TEXT, trainer)
    return tok


def _folder(tmp_path, hf_tok, with_config=True):
    bos = hf_tok.token_to_id("<s>")
    hf_tok.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                          special_tokens=[("<s>", bos)])
    hf_tok.save(str(tmp_path / "tokenizer.json"))
    if with_config:
        eos = {"__type": "AddedToken", "content": "</s>", "lstrip": False, "normalized": False, "rstrip": False,
               "single_word": False, "special": True}
        cfg = {"bos_token": "<s>", "eos_token": eos, "chat_template": TEMPLATE}
        (tmp_path / "tokenizer_config.json").write_text(json.dumps(cfg))
    return HFTokenizer.from_file(str(tmp_path / "tokenizer.json"))


@pytest.mark.parametrize("make", [_byte_level, _metaspace])
def test_encode_and_decode_match_the_tokenizers_library(tmp_path, make):
    ref = _folder(tmp_path, make())
    tok = Tokenizer.from_pretrained(tmp_path)
    for text in SAMPLES:
        ids = ref.encode(text).ids
        assert tok.encode(text) == ids
        assert tok.decode(ids) == ref.decode(ids)
        assert tok.encode(text, add_special_tokens=False) == ref.encode(text, add_special_tokens=False).ids
    assert tok.encode_batch(SAMPLES) == [e.ids for e in ref.encode_batch(SAMPLES)]


def test_special_tokens_come_from_tokenizer_config(tmp_path):
    ref = _folder(tmp_path, _byte_level())
    tok = Tokenizer.from_pretrained(tmp_path)
    assert tok.bos_token_id == ref.token_to_id("<s>") and tok.eos_token_id == ref.token_to_id("</s>")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<pad>"}))
    assert Tokenizer.from_pretrained(tmp_path).eos_token_id == ref.token_to_id("<pad>")
    (tmp_path / "config.json").write_text(json.dumps({"vocab_size": 512}))
    assert Tokenizer.from_pretrained(tmp_path).vocab_size == 512
    with pytest.raises(FileNotFoundError, match="tokenizer.json"):
        Tokenizer.from_pretrained(tmp_path / "nothing")


def test_chat_template_is_rendered(tmp_path):
    pytest.importorskip("jinja2")
    _folder(tmp_path, _byte_level())
    tok = Tokenizer.from_pretrained(tmp_path)
    msgs = [{"role": "user", "content": "Hi"}]
    assert tok.apply_chat_template(msgs) == "<s><|user|>Hi</s><|assistant|>"
    assert tok.apply_chat_template(msgs, add_generation_prompt=False) == "<s><|user|>Hi</s>"
    assert tok.apply_chat_template(msgs, tokenize=True) == tok.encode("<s><|user|>Hi</s><|assistant|>",
                                                                      add_special_tokens=False)
    (tmp_path / "tokenizer_config.json").unlink()
    with pytest.raises(ValueError, match="no chat_template"):
        Tokenizer.from_pretrained(tmp_path).apply_chat_template(msgs)


@pytest.mark.parity
def test_chat_template_matches_transformers(tmp_path):
    transformers = pytest.importorskip("transformers")
    _folder(tmp_path, _byte_level())
    ref = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    tok = Tokenizer.from_pretrained(tmp_path)
    msgs = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Grüße"}]
    assert tok.apply_chat_template(msgs) == ref.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    for text in SAMPLES:
        assert tok.encode(text) == ref.encode(text)
