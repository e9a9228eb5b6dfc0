"""``generate`` and ``stream``: autoregressive decoding for any model following the generation protocol.

Protocol: ``model(input_ids, cache=None) -> logits`` with ``input_ids`` an int64 Tensor (B, T) and
logits (B, T, V) (a model may also return only the last position, (B, 1, V)). A model with
``new_cache(batch_size, max_len)`` gets a cache from it; each call then passes ``cache=`` and
only the tokens not yet fed (the cache tracks its own length). Without ``new_cache`` (or with
``use_cache=False``) the whole sequence is fed at every step.

Prompts of unequal length are left-padded with the pad id. If the model's ``forward`` (or
``__call__``) names an ``attention_mask`` parameter, one batch is run and the model receives
``attention_mask``, an int64 Tensor (B, tokens so far) with 0 at padding, covering cached and
new tokens; it must mask those keys (and derive positions from it if it uses positions).
Otherwise the prompts are decoded in groups of equal length, so the model never sees padding.
A model whose ``forward`` names a ``logits_to_keep`` parameter is called with
``logits_to_keep=1``: only the last position's logits are used.
"""

from __future__ import annotations

import inspect

import numpy as np
import sneppx_core as sx

from ._inputs import prompts_from_inputs
from .config import GenerationConfig
from .processors import process_scores_, softmax_np


def _accepts(model, name: str) -> bool:
    fn = getattr(model, "forward", None) or model
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _model_device(model) -> str:
    dev = getattr(model, "device", None)
    if dev is not None and not callable(dev):
        return str(dev)
    params = getattr(model, "parameters", None)
    if callable(params):
        for p in params():
            return str(p.device)
    return "cpu"


def _as_tensor(a: np.ndarray, device: str):
    t = sx.Tensor.from_numpy(np.array(a, dtype=np.int64, copy=True, order="C"))
    return t if device == "cpu" else t.to(device)


def _last_logits(logits, batch: int, fed: int) -> np.ndarray:
    """The (B, V) float scores of the last position, as a fresh NumPy array."""
    if not isinstance(logits, sx.Tensor):
        raise TypeError(f"generate: the model must return a sneppx_core Tensor of logits, got {type(logits).__name__}")
    shape = tuple(logits.shape)
    if len(shape) != 3 or shape[0] != batch or shape[1] not in (fed, 1) or shape[2] == 0:
        raise ValueError(f"generate: the model returned logits of shape {shape} for input of shape "
                         f"({batch}, {fed}); expected ({batch}, {fed}, V)")
    last = logits.detach()[:, shape[1] - 1]
    if str(last.device) != "cpu":
        last = last.to("cpu")
    if last.dtype not in (sx.float32, sx.float64):
        last = last.float()
    return np.array(last.numpy(), dtype=np.float32 if last.dtype == sx.float32 else np.float64, copy=True)


class _Decoder:
    """Decoding state of one batch of prompts that run together."""

    def __init__(self, model, prompts, cfg, rngs, pass_mask, tokenizer):
        self.model, self.cfg, self.rngs, self.tokenizer = model, cfg, rngs, tokenizer
        self.pass_mask, self.device = pass_mask, _model_device(model)
        self.last_only = _accepts(model, "logits_to_keep")
        self.pad, self.eos = cfg.resolved_pad_token_id(), np.array(cfg.eos_token_ids, dtype=np.int64)
        self.eos_set = {int(e) for e in self.eos}
        self.stops = cfg.stop_string_list
        b, self.plen = len(prompts), max(len(p) for p in prompts)
        self.starts = [self.plen - len(p) for p in prompts]
        self.tokens = np.full((b, self.plen + cfg.max_new_tokens), self.pad, dtype=np.int64)
        self.mask = np.zeros_like(self.tokens)
        for i, p in enumerate(prompts):
            self.tokens[i, self.starts[i]:self.plen] = p
            self.mask[i, self.starts[i]:self.plen] = 1
        use_cache = cfg.use_cache and callable(getattr(model, "new_cache", None))
        self.cache = model.new_cache(b, self.tokens.shape[1]) if use_cache else None
        self.cur, self.fed = self.plen, 0
        self.finished = np.zeros(b, dtype=bool)
        self.new = [[] for _ in range(b)]

    def _forward(self) -> np.ndarray:
        start = self.fed if self.cache is not None else 0
        kwargs = {} if self.cache is None else {"cache": self.cache}
        mask = self.mask[:, :self.cur]
        if self.pass_mask and not mask.all():  # all ones (no padding, no finished row) means no mask
            kwargs["attention_mask"] = _as_tensor(mask, self.device)
        if self.last_only:
            kwargs["logits_to_keep"] = 1
        ids = _as_tensor(self.tokens[:, start:self.cur], self.device)
        with sx.no_grad():
            logits = self.model(ids, **kwargs)
        self.fed = self.cur
        return _last_logits(logits, self.tokens.shape[0], self.cur - start)

    def _pick(self, scores: np.ndarray) -> np.ndarray:
        if not self.cfg.sampling:
            return np.argmax(scores, axis=-1).astype(np.int64)
        out = np.full(scores.shape[0], self.pad, dtype=np.int64)
        for i in np.flatnonzero(~self.finished):
            with np.errstate(invalid="ignore"):  # inf - inf: reported below
                probs = softmax_np(scores[i:i + 1])[0]
            if not np.isfinite(probs).all():  # NaN or +inf logits, or every token filtered out
                row = scores[i]
                raise RuntimeError(
                    "generate: probability tensor contains either `inf`, `nan` or element < 0 "
                    f"(row {i} of the {tuple(scores.shape)} {scores.dtype} scores has {int(np.isnan(row).sum())} "
                    f"NaN, {int(np.isposinf(row).sum())} +inf and {int(np.isfinite(row).sum())} finite values)"
                )
            cdf = np.cumsum(probs)
            u = self.rngs[i].random() * cdf[-1]
            out[i] = min(int(np.searchsorted(cdf, u, side="right")), scores.shape[1] - 1)
        return out

    def _hit_stop(self, i: int) -> bool:
        if not self.stops:
            return False
        text = self.tokenizer.decode(self.new[i])
        return any(text.endswith(s) for s in self.stops)

    def step(self, step: int):
        """Run one decoding step; return (next ids, rows active before the step, scores)."""
        scores = self._forward()
        if step < self.cfg.min_new_tokens and self.eos.size:
            scores[:, self.eos[self.eos < scores.shape[1]]] = -np.inf
        rows = [self.tokens[i, self.starts[i]:self.cur] for i in range(len(self.starts))]
        process_scores_(scores, rows, self.cfg)
        nxt = self._pick(scores)
        active = ~self.finished
        nxt[~active] = self.pad
        scores[~active] = -np.inf
        self.tokens[:, self.cur], self.mask[:, self.cur] = nxt, active
        self.cur += 1
        for i in np.flatnonzero(active):
            token = int(nxt[i])
            self.new[i].append(token)
            self.finished[i] = token in self.eos_set or self._hit_stop(i)
        return nxt, active, scores


_DEFAULTED = ("eos_token_id", "pad_token_id", "bos_token_id")


def _resolve(model, generation_config, overrides) -> GenerationConfig:
    """The config of one call: ``generation_config`` with ``overrides``, and special-token ids left
    at None taken from the model's ``generation_defaults`` (e.g. a loaded generation_config.json)."""
    if generation_config is None:
        generation_config = GenerationConfig()
    if not isinstance(generation_config, GenerationConfig):
        raise TypeError(f"generate: generation_config must be a GenerationConfig, got "
                        f"{type(generation_config).__name__}")
    cfg = generation_config.replace(**overrides)
    defaults = getattr(model, "generation_defaults", None)
    if isinstance(defaults, dict):
        fill = {k: defaults[k] for k in _DEFAULTED if getattr(cfg, k) is None and defaults.get(k) is not None}
        cfg = cfg.replace(**fill) if fill else cfg
    return cfg


def _seed(cfg: GenerationConfig) -> int:
    if cfg.seed is not None:
        return cfg.seed
    return int(sx.randint(0, 2**31 - 1, (1,)).item())


def _plan(model, input_ids, attention_mask, cfg, tokenizer):
    """Validate, expand prompts for num_return_sequences, and split into groups that run together."""
    if not callable(model):
        raise TypeError(f"generate: model must be callable (the generation protocol), got {type(model).__name__}")
    if cfg.stop_strings is not None and (tokenizer is None or not callable(getattr(tokenizer, "decode", None))):
        raise ValueError("generate: stop_strings needs tokenizer= (an object with decode(ids) -> str)")
    prompts = prompts_from_inputs(input_ids, attention_mask, cfg.bos_token_id)
    prompts = [p for p in prompts for _ in range(cfg.num_return_sequences)]
    pass_mask = _accepts(model, "attention_mask")
    if pass_mask or len({len(p) for p in prompts}) == 1:
        groups = [list(range(len(prompts)))]
    else:
        by_len = {}
        for i, p in enumerate(prompts):
            by_len.setdefault(len(p), []).append(i)
        groups = [by_len[k] for k in sorted(by_len)]
    seed = _seed(cfg) if cfg.sampling else 0
    rngs = [np.random.default_rng([seed, i]) for i in range(len(prompts))] if cfg.sampling else None
    return prompts, groups, pass_mask, rngs


def _events(model, prompts, groups, pass_mask, rngs, cfg, tokenizer):
    """Yield (decoder, global row ids, step, next ids, active rows, scores) for every step."""
    for rows in groups:
        dec = _Decoder(model, [prompts[i] for i in rows], cfg, rngs and [rngs[i] for i in rows],
                       pass_mask, tokenizer)
        for step in range(cfg.max_new_tokens):
            nxt, active, scores = dec.step(step)
            yield dec, rows, step, nxt, active, scores
            if dec.finished.all():
                break


def stream(model, input_ids, generation_config=None, attention_mask=None, tokenizer=None, **overrides):
    """Like ``generate`` but a generator: yields ``(sequence_index, token_id)`` as each token is made.

    Sequences are numbered as the rows of ``generate``'s output. When prompts of unequal length
    run in separate groups (a model without ``attention_mask``), groups are streamed one after
    the other.
    """
    cfg = _resolve(model, generation_config, overrides)
    plan = _plan(model, input_ids, attention_mask, cfg, tokenizer)  # validate now, not at first next()

    def tokens():
        for _, rows, _, nxt, active, _ in _events(model, *plan, cfg, tokenizer):
            for j in np.flatnonzero(active):
                yield rows[j], int(nxt[j])

    return tokens()


def generate(model, input_ids, generation_config=None, streamer=None, attention_mask=None,
             tokenizer=None, **overrides):
    """Generate continuations of prompts with ``model`` (see the module docstring for the protocol).

    Args:
        model: callable ``model(input_ids, cache=None) -> logits`` (B, T, V).
        input_ids: one prompt (list of ints, 1-D array/Tensor) or several (list of lists of any
            lengths, 2-D array/Tensor, int64).
        generation_config: a ``GenerationConfig`` (default ``GenerationConfig()``).
        streamer: optional callable ``streamer(sequence_index, token_id)`` called for each token.
        attention_mask: for 2-D input, 1 at tokens and 0 at (left or right) padding.
        tokenizer: object with ``decode(ids) -> str``; needed for ``stop_strings``.
        **overrides: ``GenerationConfig`` fields that replace those of ``generation_config``.

    Each step takes the last position's logits, forbids EOS before ``min_new_tokens``, applies
    the processors (``process_logits``), then picks ``argmax`` (greedy) or samples from
    ``softmax`` with a NumPy generator seeded from ``(seed, row)`` (so a row's samples do not
    depend on the other rows' content). A sequence ends at EOS, a stop string or
    ``max_new_tokens``. Runs under ``no_grad``.

    Returns:
        dict with ``"output_ids"`` (int64 Tensor (N, L + S): left-padded prompt, new tokens, pad
        after the end), ``"sequences"`` (lists: prompt + new tokens, no padding),
        ``"num_generated"`` (list of ints) and, with ``output_scores=True``, ``"scores"``: a list
        of S float Tensors (N, V) of processed logits, rows of finished sequences set to -inf.
        N = prompts x ``num_return_sequences``.
    """
    if streamer is not None and not callable(streamer):
        raise TypeError(f"generate: streamer must be callable(sequence_index, token_id), got {type(streamer).__name__}")
    cfg = _resolve(model, generation_config, overrides)
    prompts, groups, pass_mask, rngs = _plan(model, input_ids, attention_mask, cfg, tokenizer)
    n = len(prompts)
    new = [[] for _ in range(n)]
    scores = []
    for dec, rows, step, nxt, active, sc in _events(model, prompts, groups, pass_mask, rngs, cfg, tokenizer):
        for j in np.flatnonzero(active):
            new[rows[j]].append(int(nxt[j]))
            if streamer is not None:
                streamer(rows[j], int(nxt[j]))
        if cfg.output_scores:
            if step == len(scores):
                scores.append(np.full((n, sc.shape[1]), -np.inf, dtype=np.float32))
            scores[step][rows] = sc
    return _result(prompts, new, scores, cfg)


def _result(prompts, new, scores, cfg) -> dict:
    pad = cfg.resolved_pad_token_id()
    plen = max(len(p) for p in prompts)
    width = plen + max(len(g) for g in new)
    out = np.full((len(prompts), width), pad, dtype=np.int64)
    for i, (p, g) in enumerate(zip(prompts, new)):
        out[i, plen - len(p):plen + len(g)] = p + g
    res = {"output_ids": sx.Tensor.from_numpy(out), "sequences": [p + g for p, g in zip(prompts, new)],
           "num_generated": [len(g) for g in new]}
    if cfg.output_scores:
        res["scores"] = [sx.Tensor.from_numpy(s) for s in scores]
    return res
