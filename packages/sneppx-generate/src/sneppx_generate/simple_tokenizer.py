"""Character-level tokenizer for tiny demos and tests."""

from __future__ import annotations

import json
import os

from ._tokenizer_base import TokenizerBase, as_id_list, find_roles
from .tokenizer import DEFAULT_SPECIAL_TOKENS

_FORMAT = "sneppx-simple-tokenizer"


class SimpleTokenizer(TokenizerBase):
    """Character-level tokenizer: one id per special token, then one id per known character.

    Args:
        chars: initial characters (a string or iterable of single characters), or None for none
            (call ``train``).
        special_tokens: special tokens, given ids 0, 1, ... in order; roles are found by name
            (``<pad>``, ``<bos>``, ``<eos>``, ``<unk>``).
        add_bos, add_eos: defaults for ``encode``'s options of the same names.

    Characters not in the vocabulary encode to ``<unk>`` (ValueError if there is no ``<unk>``).
    Special-token strings in the text are *not* parsed: ``"<eos>"`` is five characters.
    """

    def __init__(self, chars=None, special_tokens=DEFAULT_SPECIAL_TOKENS,
                 add_bos: bool = False, add_eos: bool = False):
        special_tokens = tuple(special_tokens)
        if any(not isinstance(t, str) or not t for t in special_tokens):
            raise TypeError(f"SimpleTokenizer: special_tokens must be non-empty strings, got {special_tokens!r}")
        if len(set(special_tokens)) != len(special_tokens):
            raise ValueError(f"SimpleTokenizer: special_tokens has duplicates: {special_tokens!r}")
        self._specials = special_tokens
        self.add_bos, self.add_eos = bool(add_bos), bool(add_eos)
        self._set_chars([])
        if chars is not None:
            self._set_chars(self._clean_chars(chars, "SimpleTokenizer"))

    @staticmethod
    def _clean_chars(chars, where: str) -> list:
        chars = list(chars)
        bad = [c for c in chars if not isinstance(c, str) or len(c) != 1]
        if bad:
            raise ValueError(f"{where}: chars must be single characters, got {bad[:3]!r}")
        return sorted(set(chars))

    def _set_chars(self, chars: list) -> None:
        self._itos = list(self._specials) + [c for c in chars if c not in self._specials]
        self._stoi = {s: i for i, s in enumerate(self._itos)}
        self._roles = find_roles(self._stoi.get)

    def train(self, texts) -> "SimpleTokenizer":
        """Add every character seen in ``texts`` (a string or iterable of strings). Returns ``self``.

        Known characters keep being known; ids are reassigned in sorted character order.
        """
        if isinstance(texts, str):
            texts = [texts]
        seen = set(self._itos[len(self._specials):])
        for t in texts:
            if not isinstance(t, str):
                raise TypeError(f"SimpleTokenizer.train: expected strings, got {type(t).__name__}")
            seen.update(t)
        self._set_chars(sorted(seen))
        return self

    @property
    def vocab_size(self) -> int:
        """Number of ids: special tokens plus known characters."""
        return len(self._itos)

    @property
    def special_tokens(self) -> list:
        """The special-token strings, in id order."""
        return list(self._specials)

    def get_vocab(self) -> dict:
        """Mapping token string -> id."""
        return dict(self._stoi)

    def token_to_id(self, token: str):
        """Id of ``token`` (a character or special token), or None if unknown."""
        if not isinstance(token, str):
            raise TypeError(f"SimpleTokenizer.token_to_id: expected a str, got {type(token).__name__}")
        return self._stoi.get(token)

    def id_to_token(self, token_id: int) -> str:
        """Token string of ``token_id``; IndexError outside ``[0, vocab_size)``."""
        if isinstance(token_id, bool) or not isinstance(token_id, int) or not 0 <= token_id < self.vocab_size:
            raise IndexError(f"SimpleTokenizer.id_to_token: id {token_id!r} is outside [0, {self.vocab_size})")
        return self._itos[token_id]

    def encode(self, text: str, add_bos=None, add_eos=None) -> list:
        """Encode ``text`` character by character; unknown characters become ``<unk>``."""
        if not isinstance(text, str):
            raise TypeError(f"SimpleTokenizer.encode: expected a str, got {type(text).__name__}")
        unk = self.unk_token_id
        ids = []
        for ch in text:
            i = self._stoi.get(ch, unk)
            if i is None:
                raise ValueError(f"SimpleTokenizer.encode: unknown character {ch!r} and no <unk> token")
            ids.append(i)
        return self._with_specials(ids, add_bos, add_eos, "SimpleTokenizer.encode")

    def decode(self, ids, skip_special_tokens: bool = True) -> str:
        """Join the tokens of ``ids``; special tokens are dropped unless ``skip_special_tokens=False``."""
        ids = as_id_list(ids, "SimpleTokenizer.decode")
        self._check_range(ids, "SimpleTokenizer.decode")
        n_special = len(self._specials)
        return "".join(self._itos[i] for i in ids if not (skip_special_tokens and i < n_special))

    def save(self, path) -> None:
        """Write the vocabulary to ``path`` as JSON (written to a temporary file, then renamed)."""
        data = {"format": _FORMAT, "version": 1, "special_tokens": list(self._specials),
                "chars": self._itos[len(self._specials):], "add_bos": self.add_bos, "add_eos": self.add_eos}
        tmp = f"{os.fspath(path)}.tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False)
        os.replace(tmp, path)

    @classmethod
    def from_file(cls, path) -> "SimpleTokenizer":
        """Load a tokenizer written by ``save``."""
        with open(path, encoding="utf-8") as fh:
            try:
                data = json.load(fh)
            except json.JSONDecodeError as exc:
                raise ValueError(f"SimpleTokenizer.from_file: {os.fspath(path)!r} is not JSON: {exc}") from exc
        if not isinstance(data, dict) or data.get("format") != _FORMAT:
            raise ValueError(f"SimpleTokenizer.from_file: {os.fspath(path)!r} is not a SimpleTokenizer file")
        tok = cls(special_tokens=data["special_tokens"], add_bos=data.get("add_bos", False),
                  add_eos=data.get("add_eos", False))
        tok._set_chars(cls._clean_chars(data["chars"], "SimpleTokenizer.from_file"))
        return tok

    load = from_file

    def __repr__(self) -> str:
        return f"SimpleTokenizer(vocab_size={self.vocab_size}, special_tokens={self._specials})"
