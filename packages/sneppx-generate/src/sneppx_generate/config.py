"""``GenerationConfig``: the knobs of ``generate``, validated."""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def _is_real(v) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _need(ok: bool, field: str, value, rule: str) -> None:
    if not ok:
        raise ValueError(f"GenerationConfig: {field} must be {rule}, got {value!r}")


@dataclass
class GenerationConfig:
    """Settings for ``generate`` (names and meanings follow Hugging Face's ``GenerationConfig``).

    Args:
        max_new_tokens: most tokens to add to each sequence (>= 0).
        do_sample: True samples, False decodes greedily (argmax). None (default) samples when
            ``temperature``, ``top_k``, ``top_p`` or ``min_p`` ask for it (``temperature != 1``,
            ``top_k > 0``, ``top_p < 1``, ``min_p > 0``) and is greedy otherwise;
            ``temperature == 0`` with ``do_sample=None`` (and no other sampling knob) means greedy.
        temperature: logits are divided by it before sampling (> 0 when sampling).
        top_k: keep the k largest logits (0 = off).
        top_p: nucleus sampling, keep the smallest set of tokens whose probability sums to at
            least ``top_p``; in (0, 1], 1 = off.
        min_p: drop tokens whose probability is below ``min_p * max_prob``; in [0, 1], 0 = off.
        repetition_penalty: for tokens already in the sequence, a logit ``s`` becomes ``s / r``
            if ``s > 0`` else ``s * r`` (> 0; 1 = off). Applied for greedy decoding too.
        eos_token_id: an id (or list of ids) that ends a sequence; None = never stop early.
        pad_token_id: id written after a finished sequence and used for left padding; None
            falls back to the (first) EOS id, then to 0.
        bos_token_id: id an empty prompt starts from (None: empty prompts raise ValueError).
        min_new_tokens: EOS is forbidden until this many tokens were generated.
        stop_strings: a string or list of strings; a sequence stops once its generated text ends
            with one (needs ``generate(..., tokenizer=...)``).
        num_return_sequences: samples per prompt (rows of a prompt are adjacent in the output);
            more than 1 needs sampling.
        seed: seed for sampling; None draws one from sneppx_core's global generator, so
            ``sneppx_core.manual_seed`` also makes sampling reproducible.
        output_scores: also return the processed logits of every step (``"scores"``).
        use_cache: use the model's ``new_cache`` when it has one.

    ``generate`` fills ``eos_token_id``, ``pad_token_id`` and ``bos_token_id`` left at None from
    the model's ``generation_defaults`` dict when it has one (``load_model`` reads them from
    ``generation_config.json``).
    """

    max_new_tokens: int = 64
    do_sample: bool | None = None
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    eos_token_id: int | list | None = None
    pad_token_id: int | None = None
    bos_token_id: int | None = None
    min_new_tokens: int = 0
    stop_strings: str | list | None = None
    num_return_sequences: int = 1
    seed: int | None = None
    output_scores: bool = False
    use_cache: bool = True

    def __post_init__(self):
        self.validate()

    @property
    def sampling(self) -> bool:
        """Whether tokens are sampled (True) or picked greedily (False), resolving ``do_sample=None``."""
        if self.do_sample is not None:
            return self.do_sample
        if self.temperature == 0 and self.top_k == 0 and self.top_p == 1.0 and self.min_p == 0.0:
            return False
        return self.temperature != 1.0 or self.top_k > 0 or self.top_p < 1.0 or self.min_p > 0.0

    @property
    def eos_token_ids(self) -> list:
        """``eos_token_id`` as a list (empty when None)."""
        if self.eos_token_id is None:
            return []
        return [self.eos_token_id] if _is_int(self.eos_token_id) else list(self.eos_token_id)

    @property
    def stop_string_list(self) -> list:
        """``stop_strings`` as a list (empty when None)."""
        if self.stop_strings is None:
            return []
        return [self.stop_strings] if isinstance(self.stop_strings, str) else list(self.stop_strings)

    def resolved_pad_token_id(self) -> int:
        """The id used for padding: ``pad_token_id``, else the first EOS id, else 0."""
        if self.pad_token_id is not None:
            return int(self.pad_token_id)
        eos = self.eos_token_ids
        return int(eos[0]) if eos else 0

    def replace(self, **changes) -> "GenerationConfig":
        """A validated copy with some fields changed; unknown names raise TypeError."""
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - names)
        if unknown:
            raise TypeError(f"GenerationConfig: unknown option(s) {unknown}; valid options are {sorted(names)}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The fields as a plain dict."""
        return dataclasses.asdict(self)

    def validate(self) -> None:
        """Raise ValueError naming the first field whose value is invalid."""
        self._validate_lengths()
        self._validate_sampling()
        self._validate_tokens()
        _need(_is_int(self.num_return_sequences) and self.num_return_sequences >= 1,
              "num_return_sequences", self.num_return_sequences, "an int >= 1")
        if self.num_return_sequences > 1 and not self.sampling:
            raise ValueError(f"GenerationConfig: num_return_sequences={self.num_return_sequences} needs sampling "
                             "(greedy decoding would repeat the same sequence); set do_sample=True")
        _need(self.seed is None or (_is_int(self.seed) and self.seed >= 0), "seed", self.seed, "None or an int >= 0")
        for name in ("output_scores", "use_cache"):
            _need(isinstance(getattr(self, name), bool), name, getattr(self, name), "a bool")

    def _validate_lengths(self) -> None:
        _need(_is_int(self.max_new_tokens) and self.max_new_tokens >= 0,
              "max_new_tokens", self.max_new_tokens, "an int >= 0")
        _need(_is_int(self.min_new_tokens) and 0 <= self.min_new_tokens <= self.max_new_tokens,
              "min_new_tokens", self.min_new_tokens, f"an int in [0, max_new_tokens={self.max_new_tokens}]")

    def _validate_sampling(self) -> None:
        _need(self.do_sample is None or isinstance(self.do_sample, bool), "do_sample", self.do_sample,
              "None, True or False")
        _need(_is_real(self.temperature) and self.temperature >= 0, "temperature", self.temperature,
              "a number >= 0")
        _need(_is_int(self.top_k) and self.top_k >= 0, "top_k", self.top_k, "an int >= 0")
        _need(_is_real(self.top_p) and 0 < self.top_p <= 1, "top_p", self.top_p, "a number in (0, 1]")
        _need(_is_real(self.min_p) and 0 <= self.min_p <= 1, "min_p", self.min_p, "a number in [0, 1]")
        _need(_is_real(self.repetition_penalty) and self.repetition_penalty > 0, "repetition_penalty",
              self.repetition_penalty, "a number > 0")
        if self.sampling and self.temperature <= 0:
            raise ValueError(f"GenerationConfig: temperature must be > 0 when sampling, got {self.temperature!r} "
                             "(use do_sample=False for greedy decoding)")

    def _validate_tokens(self) -> None:
        eos = self.eos_token_id
        ok = eos is None or (_is_int(eos) and eos >= 0) or (
            isinstance(eos, (list, tuple)) and len(eos) > 0 and all(_is_int(e) and e >= 0 for e in eos))
        _need(ok, "eos_token_id", eos, "None, an int >= 0 or a non-empty list of them")
        for name in ("pad_token_id", "bos_token_id"):
            v = getattr(self, name)
            _need(v is None or (_is_int(v) and v >= 0), name, v, "None or an int >= 0")
        stops = self.stop_strings
        ok = stops is None or (isinstance(stops, str) and stops) or (
            isinstance(stops, (list, tuple)) and len(stops) > 0 and all(isinstance(s, str) and s for s in stops))
        _need(ok, "stop_strings", stops, "None, a non-empty string or a non-empty list of them")
