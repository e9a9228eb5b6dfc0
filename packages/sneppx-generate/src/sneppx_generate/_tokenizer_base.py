"""Behaviour shared by ``Tokenizer`` and ``SimpleTokenizer``: id checks, batches, special ids."""

from __future__ import annotations

import numbers

# Names that mark a special token's role, most common spelling first. Used to find the
# pad/bos/eos/unk ids of tokenizer files written by other libraries (GPT-2, Llama, Mistral...).
ROLE_NAMES = {
    "pad": ("<pad>", "[PAD]", "<|pad|>", "<|padding|>", "<|finetune_right_pad_id|>"),
    "bos": ("<bos>", "<s>", "[CLS]", "<|begin_of_text|>", "<|startoftext|>", "<|endoftext|>"),
    "eos": ("<eos>", "</s>", "[SEP]", "<|end_of_text|>", "<|endoftext|>", "<|eot_id|>", "<|im_end|>"),
    "unk": ("<unk>", "[UNK]", "<|unk|>"),
}


def find_roles(token_to_id) -> dict:
    """Map 'pad'/'bos'/'eos'/'unk' to the id of the first known spelling (or None)."""
    roles = {}
    for role, names in ROLE_NAMES.items():
        roles[role] = next((token_to_id(n) for n in names if token_to_id(n) is not None), None)
    return roles


def as_id_list(ids, where: str) -> list:
    """Turn a 1-D sequence of ints (list, tuple, NumPy array, Tensor) into a list of Python ints."""
    if hasattr(ids, "tolist") and not isinstance(ids, (list, tuple)):
        ids = ids.tolist()
    if isinstance(ids, numbers.Integral):
        raise TypeError(f"{where}: expected a sequence of token ids, got the single int {ids}; wrap it in a list")
    if not isinstance(ids, (list, tuple)):
        raise TypeError(f"{where}: expected a sequence of token ids, got {type(ids).__name__}")
    out = []
    for i in ids:
        if isinstance(i, (list, tuple)):
            raise ValueError(f"{where}: expected a 1-D sequence of token ids, got a nested sequence; "
                             "use the *_batch method for several sequences")
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"{where}: token ids must be ints, got {i!r} ({type(i).__name__})")
        out.append(int(i))
    return out


class TokenizerBase:
    """Methods common to both tokenizers; subclasses provide ``encode``/``decode`` and the vocab."""

    _roles: dict

    @property
    def pad_token_id(self):
        """Id of the padding token, or None if the vocabulary has none."""
        return self._roles.get("pad")

    @property
    def bos_token_id(self):
        """Id of the beginning-of-sequence token, or None."""
        return self._roles.get("bos")

    @property
    def eos_token_id(self):
        """Id of the end-of-sequence token, or None."""
        return self._roles.get("eos")

    @property
    def unk_token_id(self):
        """Id of the unknown token, or None."""
        return self._roles.get("unk")

    def generation_defaults(self) -> dict:
        """Special-token ids as ``GenerationConfig`` keyword arguments.

        Returns ``{"eos_token_id": ..., "pad_token_id": ...}`` so that
        ``GenerationConfig(**tok.generation_defaults(), max_new_tokens=32)`` stops on this
        tokenizer's EOS and pads with its pad token (or EOS when there is no pad token).
        """
        pad = self.pad_token_id if self.pad_token_id is not None else self.eos_token_id
        return {"eos_token_id": self.eos_token_id, "pad_token_id": pad}

    def encode_batch(self, texts, add_bos=None, add_eos=None) -> list:
        """Encode each string of ``texts``; returns a list of id lists (see ``encode``)."""
        if isinstance(texts, str):
            raise TypeError(f"{type(self).__name__}.encode_batch: expected a list of strings, got one string; "
                            "use encode()")
        return [self.encode(t, add_bos=add_bos, add_eos=add_eos) for t in texts]

    def decode_batch(self, batch, skip_special_tokens: bool = True) -> list:
        """Decode each id sequence of ``batch`` (list of lists, 2-D array or Tensor) to a string."""
        if hasattr(batch, "tolist") and not isinstance(batch, (list, tuple)):
            batch = batch.tolist()
        return [self.decode(ids, skip_special_tokens=skip_special_tokens) for ids in batch]

    def _with_specials(self, ids: list, add_bos, add_eos, where: str) -> list:
        add_bos = self.add_bos if add_bos is None else add_bos
        add_eos = self.add_eos if add_eos is None else add_eos
        if add_bos:
            if self.bos_token_id is None:
                raise ValueError(f"{where}: add_bos=True but the tokenizer has no BOS token")
            ids = [self.bos_token_id] + ids
        if add_eos:
            if self.eos_token_id is None:
                raise ValueError(f"{where}: add_eos=True but the tokenizer has no EOS token")
            ids = ids + [self.eos_token_id]
        return ids

    def _check_range(self, ids: list, where: str) -> None:
        for i in ids:
            if i < 0 or i >= self.vocab_size:
                raise ValueError(f"{where}: token id {i} is outside [0, {self.vocab_size})")

    def __len__(self) -> int:
        return self.vocab_size
