"""Byte-level BPE tokenizer on the ``tokenizers`` library, reading and writing ``tokenizer.json``."""

from __future__ import annotations

import json
import os

from tokenizers import Tokenizer as _HFTokenizer
from tokenizers import decoders, models, pre_tokenizers, trainers

from . import chat
from ._tokenizer_base import TokenizerBase, as_id_list, find_roles

DEFAULT_SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>", "<unk>")
_N_BYTES = 256


def _byte_level(special_tokens) -> _HFTokenizer:
    """An untrained byte-level BPE: special tokens, then the 256 byte symbols, no merges."""
    vocab = {tok: i for i, tok in enumerate(special_tokens)}
    for sym in sorted(pre_tokenizers.ByteLevel.alphabet()):
        vocab[sym] = len(vocab)
    unk = "<unk>" if "<unk>" in vocab else None
    tok = _HFTokenizer(models.BPE(vocab=vocab, merges=[], unk_token=unk))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(list(special_tokens))
    return tok


def _iter_texts(texts_or_files):
    """Yield training text: a path (``os.PathLike`` or a str naming an existing file) is read line
    by line, any other str is used as text."""
    if isinstance(texts_or_files, (str, os.PathLike)):
        texts_or_files = [texts_or_files]
    for item in texts_or_files:
        is_path = isinstance(item, os.PathLike) or (
            isinstance(item, str) and "\n" not in item and len(item) < 4096 and os.path.isfile(item))
        if is_path:
            with open(item, encoding="utf-8") as fh:
                yield from fh
        elif isinstance(item, str):
            yield item
        else:
            raise TypeError(f"Tokenizer.train: expected strings or paths, got {type(item).__name__}")


class Tokenizer(TokenizerBase):
    """Byte-level BPE tokenizer (GPT-2 style) built on the ``tokenizers`` library.

    Text is turned into UTF-8 bytes, each byte maps to one of 256 base symbols, and learned merges
    join frequent symbol pairs into longer tokens. Untrained, every byte is its own token, so any
    Unicode text encodes and decodes back exactly. ``train`` learns merges until the vocabulary has
    ``vocab_size`` entries.

    Args:
        vocab_size: size of the id space (special tokens + 256 bytes + merges). Ids from the
            number of learned tokens up to ``vocab_size`` are reserved: they decode to nothing,
            so a model sized to ``vocab_size`` can be used before training.
        special_tokens: special tokens, given ids 0, 1, ... in order. The roles pad/bos/eos/unk
            are found by name (``<pad>``, ``<bos>``/``<s>``, ``<eos>``/``</s>``, ``<unk>``, ...).
        add_bos, add_eos: defaults for ``encode``'s options of the same names.

    Special-token strings inside the input text are encoded as the special token.
    ``save``/``from_file`` use the standard ``tokenizer.json`` format, so tokenizers saved by
    other libraries (GPT-2, Llama, Mistral styles, BPE or otherwise) load too.
    """

    def __init__(self, vocab_size: int = 32000, special_tokens=DEFAULT_SPECIAL_TOKENS,
                 add_bos: bool = False, add_eos: bool = False):
        special_tokens = tuple(special_tokens)
        if any(not isinstance(t, str) or not t for t in special_tokens):
            raise TypeError(f"Tokenizer: special_tokens must be non-empty strings, got {special_tokens!r}")
        if len(set(special_tokens)) != len(special_tokens):
            raise ValueError(f"Tokenizer: special_tokens has duplicates: {special_tokens!r}")
        minimum = len(special_tokens) + _N_BYTES
        if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < minimum:
            raise ValueError(f"Tokenizer: vocab_size must be an int >= {minimum} "
                             f"({len(special_tokens)} special tokens + 256 bytes), got {vocab_size!r}")
        self._target = vocab_size
        self.add_bos, self.add_eos = bool(add_bos), bool(add_eos)
        self._tok = _byte_level(special_tokens)
        self._byte_level = True
        self._post, self.chat_template = False, None
        self._refresh()

    def _refresh(self) -> None:
        self._roles = find_roles(self._tok.token_to_id)
        added = sorted(self._tok.get_added_tokens_decoder().items())
        self._special = [t.content for _, t in added if t.special]

    @classmethod
    def _wrap(cls, hf_tok, vocab_size=None, add_bos=False, add_eos=False) -> "Tokenizer":
        obj = cls.__new__(cls)
        obj._tok = hf_tok
        obj.add_bos, obj.add_eos = bool(add_bos), bool(add_eos)
        pre = json.loads(hf_tok.to_str()).get("pre_tokenizer") or {}
        obj._byte_level = pre.get("type") == "ByteLevel"
        obj._target = 0
        obj._post, obj.chat_template = False, None
        obj._refresh()
        if vocab_size is not None and vocab_size < obj.num_tokens:
            raise ValueError(f"Tokenizer.from_file: vocab_size={vocab_size} is smaller than the "
                             f"{obj.num_tokens} tokens in the file")
        obj._target = vocab_size or 0
        return obj

    @classmethod
    def from_file(cls, path, vocab_size=None, add_bos: bool = False, add_eos: bool = False) -> "Tokenizer":
        """Load a ``tokenizer.json`` (ours or one written by the ``tokenizers`` library).

        Args:
            path: file path.
            vocab_size: id space to report (default: the number of tokens in the file).
            add_bos, add_eos: defaults for ``encode``. The file's own post-processor (e.g. a
                Llama template that prepends ``<s>``) is not applied; use these flags instead.
        """
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Tokenizer.from_file: no such file {os.fspath(path)!r}")
        try:
            hf_tok = _HFTokenizer.from_file(os.fspath(path))
        except Exception as exc:  # the library raises a bare Exception for malformed JSON
            raise ValueError(f"Tokenizer.from_file: {os.fspath(path)!r} is not a valid tokenizer.json: {exc}") from exc
        return cls._wrap(hf_tok, vocab_size, add_bos, add_eos)

    @classmethod
    def from_pretrained(cls, folder, vocab_size=None) -> "Tokenizer":
        """Load the tokenizer of a Hugging Face model folder.

        Reads ``tokenizer.json``; the special tokens (bos/eos/pad/unk) and the chat template come
        from ``tokenizer_config.json`` (or ``chat_template.jinja``) when present. ``encode`` then
        applies the file's post-processor (e.g. Llama's leading ``<s>``) as the ``tokenizers``
        library does by default. ``vocab_size`` defaults to the model's ``config.json`` value
        when that is larger than the tokenizer (ids beyond its tokens decode to nothing).
        """
        folder = os.fspath(folder)
        path = os.path.join(folder, "tokenizer.json")
        if not os.path.isfile(path):
            raise FileNotFoundError(f"Tokenizer.from_pretrained: {folder!r} has no tokenizer.json")
        obj = cls.from_file(path)
        if vocab_size is None:
            model_cfg = os.path.join(folder, "config.json")
            if os.path.isfile(model_cfg):
                with open(model_cfg, encoding="utf-8") as fh:
                    vocab_size = json.load(fh).get("vocab_size")
            vocab_size = vocab_size if isinstance(vocab_size, int) and vocab_size > obj.num_tokens else None
        obj._target = vocab_size or 0
        cfg = chat.read_tokenizer_config(folder)
        for role, token in chat.special_tokens(cfg).items():
            if obj._tok.token_to_id(token) is not None:
                obj._roles[role] = obj._tok.token_to_id(token)
        obj._post, obj.chat_template = True, cfg.get("chat_template")
        return obj

    def apply_chat_template(self, messages, add_generation_prompt: bool = True, tokenize: bool = False,
                            template_name=None):
        """Format a conversation with the tokenizer's chat template (needs Jinja2).

        Args:
            messages: list of {"role": ..., "content": ...} dicts.
            add_generation_prompt: end with the prompt that opens the assistant's turn.
            tokenize: return ids (the template's text encoded without adding special tokens)
                instead of the text.
            template_name: which template when the file names several.
        """
        if not self.chat_template:
            raise ValueError("Tokenizer.apply_chat_template: this tokenizer has no chat_template")
        template = chat.pick_template(self.chat_template, template_name)
        names = {role: self._tok.id_to_token(i) for role, i in self._roles.items() if i is not None}
        variables = {f"{role}_token": tok for role, tok in names.items()}
        text = chat.render(template, messages, add_generation_prompt, variables)
        return self.encode(text, add_special_tokens=False) if tokenize else text

    def save(self, path) -> None:
        """Write the tokenizer to ``path`` in the standard ``tokenizer.json`` format.

        The reserved-id range (``vocab_size`` beyond the learned tokens) is not part of that format;
        pass ``vocab_size=`` to ``from_file`` to restore it.
        """
        self._tok.save(os.fspath(path))

    def train(self, texts_or_files, min_frequency: int = 2) -> "Tokenizer":
        """Learn BPE merges from text until the vocabulary holds ``vocab_size`` tokens.

        Args:
            texts_or_files: a string, a path, or an iterable of strings and paths. A str that names
                an existing file (and has no newline) is read as a file.
            min_frequency: a pair must occur at least this often to be merged.

        Training restarts from bytes, so earlier merges are replaced. Returns ``self``.
        """
        if not self._byte_level:
            raise ValueError("Tokenizer.train: only byte-level BPE tokenizers can be trained; this one was "
                             "loaded from a file with another pre-tokenizer")
        specials = self._special
        trainer = trainers.BpeTrainer(vocab_size=self.vocab_size, min_frequency=min_frequency,
                                      special_tokens=specials, show_progress=False,
                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
        fresh = _byte_level(specials)
        fresh.train_from_iterator(_iter_texts(texts_or_files), trainer=trainer)
        self._tok = fresh
        self._refresh()
        return self

    @property
    def num_tokens(self) -> int:
        """Number of ids that have a token (special tokens, bytes and learned merges)."""
        return self._tok.get_vocab_size(with_added_tokens=True)

    @property
    def vocab_size(self) -> int:
        """Size of the id space: the larger of the configured ``vocab_size`` and ``num_tokens``."""
        return max(self._target, self.num_tokens)

    @property
    def special_tokens(self) -> list:
        """The special-token strings, in id order."""
        return list(self._special)

    def get_vocab(self) -> dict:
        """Mapping token string -> id for every token."""
        return self._tok.get_vocab(with_added_tokens=True)

    def token_to_id(self, token: str):
        """Id of ``token``, or None if it is not in the vocabulary."""
        if not isinstance(token, str):
            raise TypeError(f"Tokenizer.token_to_id: expected a str, got {type(token).__name__}")
        return self._tok.token_to_id(token)

    def id_to_token(self, token_id: int) -> str:
        """Token string of ``token_id``; IndexError outside ``[0, num_tokens)``."""
        if isinstance(token_id, bool) or not isinstance(token_id, int) or not 0 <= token_id < self.num_tokens:
            raise IndexError(f"Tokenizer.id_to_token: id {token_id!r} is outside [0, {self.num_tokens})")
        return self._tok.id_to_token(token_id)

    def encode(self, text: str, add_bos=None, add_eos=None, add_special_tokens=None) -> list:
        """Encode ``text`` to a list of ids, optionally with BOS first / EOS last.

        ``add_bos``/``add_eos`` default to the values given at construction (False).
        ``add_special_tokens`` applies the file's post-processor; it defaults to True for
        tokenizers from ``from_pretrained`` and False otherwise.
        """
        if not isinstance(text, str):
            raise TypeError(f"Tokenizer.encode: expected a str, got {type(text).__name__}")
        post = self._post if add_special_tokens is None else bool(add_special_tokens)
        ids = self._tok.encode(text, add_special_tokens=post).ids
        return self._with_specials(ids, add_bos, add_eos, "Tokenizer.encode")

    def encode_batch(self, texts, add_bos=None, add_eos=None) -> list:
        """Encode several strings at once (in parallel inside ``tokenizers``)."""
        texts = list(texts) if not isinstance(texts, str) else texts
        if isinstance(texts, str) or any(not isinstance(t, str) for t in texts):
            raise TypeError("Tokenizer.encode_batch: expected a list of strings")
        encs = self._tok.encode_batch(texts, add_special_tokens=self._post)
        return [self._with_specials(e.ids, add_bos, add_eos, "Tokenizer.encode_batch") for e in encs]

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        """Decode ids (list, 1-D array or Tensor) to text.

        Special tokens are dropped unless ``skip_special_tokens=False``; reserved ids (see
        ``vocab_size``) decode to nothing. Ids outside ``[0, vocab_size)`` raise ValueError.
        """
        ids = as_id_list(ids, "Tokenizer.decode")
        self._check_range(ids, "Tokenizer.decode")
        return self._tok.decode(ids, skip_special_tokens=skip_special_tokens)

    def __repr__(self) -> str:
        return (f"Tokenizer(vocab_size={self.vocab_size}, num_tokens={self.num_tokens}, "
                f"special_tokens={tuple(self._special)})")
