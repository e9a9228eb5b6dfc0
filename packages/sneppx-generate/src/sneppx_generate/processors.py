"""Logits processors: repetition penalty, temperature, top-k, top-p, min-p.

Each public function takes logits of shape ``(V,)`` or ``(B, V)`` as a NumPy array or a
sneppx_core Tensor and returns a new object of the same type, shape and dtype (the input is not
modified). The maths follows Hugging Face's processors of the same names, applied in the same
order by ``process_logits``: repetition penalty, temperature, top-k, top-p, min-p.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import sneppx_core as sx

_NEG_INF = -math.inf


def _check(ok: bool, where: str, name: str, value, rule: str) -> None:
    if not ok:
        raise ValueError(f"{where}: {name} must be {rule}, got {value!r}")


def _as_2d(logits, where: str):
    """Copy ``logits`` into a float (B, V) NumPy array; return it and a function that restores the type."""
    if isinstance(logits, sx.Tensor):
        t = logits.detach()
        if str(t.device) != "cpu":
            t = t.to("cpu")
        if t.dtype not in (sx.float32, sx.float64):
            t = t.float()
        arr = np.array(t.numpy(), copy=True)
    elif isinstance(logits, np.ndarray):
        arr = np.array(logits, dtype=np.float32 if logits.dtype == np.float16 else None, copy=True)
    else:
        raise TypeError(f"{where}: logits must be a NumPy array or a sneppx_core Tensor, got {type(logits).__name__}")
    if not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(f"{where}: logits must be floating point, got dtype {arr.dtype}")
    if arr.ndim not in (1, 2) or arr.shape[-1] == 0:
        raise ValueError(f"{where}: logits must have shape (V,) or (B, V) with V > 0, got {arr.shape}")
    one_d = arr.ndim == 1
    arr2 = arr[None, :] if one_d else arr

    def restore(out: np.ndarray):
        out = out[0] if one_d else out
        if isinstance(logits, np.ndarray):
            return out.astype(logits.dtype, copy=False)
        res = sx.Tensor.from_numpy(np.ascontiguousarray(out))
        if res.dtype != logits.dtype:
            res = res.to(logits.dtype)
        return res if str(logits.device) == "cpu" else res.to(logits.device)

    return arr2, restore


def softmax_np(s: np.ndarray) -> np.ndarray:
    """Row-wise softmax in float64: ``exp(s - max) / sum(exp(s - max))``."""
    s = s.astype(np.float64, copy=False)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _remove_sorted(s: np.ndarray, order: np.ndarray, remove_sorted: np.ndarray, fill: float) -> None:
    mask = np.zeros(s.shape, dtype=bool)
    np.put_along_axis(mask, order, remove_sorted, axis=-1)
    s[mask] = fill


def repetition_penalty_(s: np.ndarray, rows, penalty: float) -> None:
    """In place on (B, V): for ids in ``rows[b]``, ``s -> s / penalty`` if ``s > 0`` else ``s * penalty``."""
    for b, ids in enumerate(rows):
        ids = np.unique(np.asarray(ids, dtype=np.int64))
        vals = s[b, ids]
        s[b, ids] = np.where(vals < 0, vals * penalty, vals / penalty)


def top_k_(s: np.ndarray, top_k: int, fill: float, keep: int) -> None:
    """In place: every logit below the k-th largest of its row becomes ``fill`` (ties kept)."""
    k = min(max(top_k, keep), s.shape[-1])
    kth = np.partition(s, s.shape[-1] - k, axis=-1)[:, s.shape[-1] - k][:, None]
    s[s < kth] = fill


def top_p_(s: np.ndarray, top_p: float, fill: float, keep: int) -> None:
    """In place: sort ascending, drop tokens whose cumulative probability is <= 1 - top_p."""
    order = np.argsort(s, axis=-1, kind="stable")
    cum = np.cumsum(softmax_np(np.take_along_axis(s, order, axis=-1)), axis=-1)
    remove = cum <= 1.0 - top_p
    remove[:, -keep:] = False
    _remove_sorted(s, order, remove, fill)


def min_p_(s: np.ndarray, min_p: float, fill: float, keep: int) -> None:
    """In place: drop tokens with probability < min_p * (largest probability of the row)."""
    probs = softmax_np(s)
    remove = probs < min_p * probs.max(axis=-1, keepdims=True)
    order = np.argsort(-s, axis=-1, kind="stable")
    remove_sorted = np.take_along_axis(remove, order, axis=-1)
    remove_sorted[:, :keep] = False
    _remove_sorted(s, order, remove_sorted, fill)


def _id_rows(input_ids, batch: int, vocab: int, where: str) -> list:
    if hasattr(input_ids, "tolist") and not isinstance(input_ids, (list, tuple)):
        input_ids = input_ids.tolist()
    rows = list(input_ids)
    if batch == 1 and (not rows or isinstance(rows[0], numbers.Integral)):
        rows = [rows]
    if len(rows) != batch:
        raise ValueError(f"{where}: input_ids has {len(rows)} rows but logits has {batch}")
    for r in rows:
        if any(isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < vocab for i in r):
            raise ValueError(f"{where}: input_ids must be ints in [0, {vocab}), got {list(r)[:8]!r}...")
    return rows


def _keep_and_fill(where: str, filter_value, min_tokens_to_keep) -> None:
    _check(isinstance(filter_value, numbers.Real), where, "filter_value", filter_value, "a number")
    _check(isinstance(min_tokens_to_keep, numbers.Integral) and min_tokens_to_keep >= 1, where,
           "min_tokens_to_keep", min_tokens_to_keep, "an int >= 1")


def apply_repetition_penalty(logits, input_ids, penalty: float):
    """Penalise tokens already present (CTRL, Keskar et al. 2019; HF ``RepetitionPenaltyLogitsProcessor``).

    For each row ``b`` and each distinct id ``t`` in ``input_ids[b]``:
    ``s[b, t] = s[b, t] / penalty`` if ``s[b, t] > 0`` else ``s[b, t] * penalty``.

    Args:
        logits: (V,) or (B, V) NumPy array or Tensor.
        input_ids: ids seen so far: (T,) for 1-D logits, else (B, T) or a list of B id lists.
        penalty: > 0; 1 leaves the logits unchanged, > 1 discourages repetition.
    """
    where = "apply_repetition_penalty"
    _check(isinstance(penalty, numbers.Real) and penalty > 0, where, "penalty", penalty, "a number > 0")
    s, restore = _as_2d(logits, where)
    repetition_penalty_(s, _id_rows(input_ids, s.shape[0], s.shape[1], where), float(penalty))
    return restore(s)


def apply_temperature(logits, temperature: float):
    """Divide logits by ``temperature`` (> 0): ``softmax(s / T)`` is flatter for T > 1, sharper for T < 1."""
    where = "apply_temperature"
    _check(isinstance(temperature, numbers.Real) and temperature > 0, where, "temperature", temperature,
           "a number > 0")
    s, restore = _as_2d(logits, where)
    return restore(s / temperature)


def apply_top_k(logits, top_k: int, filter_value: float = _NEG_INF, min_tokens_to_keep: int = 1):
    """Keep the ``top_k`` largest logits of each row (ties with the k-th are kept); set the rest to
    ``filter_value``. ``top_k=0`` disables the filter; at least ``min_tokens_to_keep`` survive."""
    where = "apply_top_k"
    _check(isinstance(top_k, numbers.Integral) and not isinstance(top_k, bool) and top_k >= 0, where,
           "top_k", top_k, "an int >= 0")
    _keep_and_fill(where, filter_value, min_tokens_to_keep)
    s, restore = _as_2d(logits, where)
    if top_k > 0:
        top_k_(s, int(top_k), filter_value, int(min_tokens_to_keep))
    return restore(s)


def apply_top_p(logits, top_p: float, filter_value: float = _NEG_INF, min_tokens_to_keep: int = 1):
    """Nucleus filtering (Holtzman et al. 2019): with tokens sorted by ascending logit and ``c`` the
    cumulative softmax probability, drop those with ``c <= 1 - top_p`` (set to ``filter_value``), so
    the kept set is the smallest whose probability reaches ``top_p``. ``top_p=1`` disables it."""
    where = "apply_top_p"
    _check(isinstance(top_p, numbers.Real) and 0 < top_p <= 1, where, "top_p", top_p, "a number in (0, 1]")
    _keep_and_fill(where, filter_value, min_tokens_to_keep)
    s, restore = _as_2d(logits, where)
    if top_p < 1.0:
        top_p_(s, float(top_p), filter_value, int(min_tokens_to_keep))
    return restore(s)


def apply_min_p(logits, min_p: float, filter_value: float = _NEG_INF, min_tokens_to_keep: int = 1):
    """Min-p filtering (Nguyen et al. 2024): with ``p = softmax(s)``, drop tokens where
    ``p < min_p * max(p)`` (set to ``filter_value``). ``min_p=0`` disables it."""
    where = "apply_min_p"
    _check(isinstance(min_p, numbers.Real) and 0 <= min_p <= 1, where, "min_p", min_p, "a number in [0, 1]")
    _keep_and_fill(where, filter_value, min_tokens_to_keep)
    s, restore = _as_2d(logits, where)
    if min_p > 0:
        min_p_(s, float(min_p), filter_value, int(min_tokens_to_keep))
    return restore(s)


def top_k_top_p_filtering(logits, top_k: int = 0, top_p: float = 1.0, filter_value: float = _NEG_INF,
                          min_tokens_to_keep: int = 1):
    """Top-k then top-p filtering of (V,) or (B, V) logits (NumPy array or Tensor, returned as given).

    Equivalent to ``apply_top_p(apply_top_k(logits, top_k, ...), top_p, ...)``; filtered entries
    become ``filter_value``. ``top_k=0`` and ``top_p=1`` disable the respective filter.
    """
    where = "top_k_top_p_filtering"
    _check(isinstance(top_k, numbers.Integral) and not isinstance(top_k, bool) and top_k >= 0, where,
           "top_k", top_k, "an int >= 0")
    _check(isinstance(top_p, numbers.Real) and 0 < top_p <= 1, where, "top_p", top_p, "a number in (0, 1]")
    _keep_and_fill(where, filter_value, min_tokens_to_keep)
    s, restore = _as_2d(logits, where)
    if top_k > 0:
        top_k_(s, int(top_k), filter_value, int(min_tokens_to_keep))
    if top_p < 1.0:
        top_p_(s, float(top_p), filter_value, int(min_tokens_to_keep))
    return restore(s)


def process_scores_(s: np.ndarray, rows, config) -> None:
    """In place on (B, V) float scores: the full chain for ``config`` (a ``GenerationConfig``).

    Repetition penalty always; temperature, top-k, top-p and min-p only when sampling.
    """
    if config.repetition_penalty != 1.0:
        repetition_penalty_(s, rows, float(config.repetition_penalty))
    if not config.sampling:
        return
    if config.temperature != 1.0:
        s /= config.temperature
    if config.top_k > 0:
        top_k_(s, config.top_k, _NEG_INF, 1)
    if config.top_p < 1.0:
        top_p_(s, config.top_p, _NEG_INF, 1)
    if config.min_p > 0.0:
        min_p_(s, config.min_p, _NEG_INF, 1)


def process_logits(logits, input_ids, config):
    """Apply ``config``'s processors in HF order (repetition penalty, temperature, top-k, top-p,
    min-p) to (V,) or (B, V) logits; ``input_ids`` are the ids seen so far (for the penalty).
    Warpers run only when ``config.sampling`` is true, as in ``generate``."""
    where = "process_logits"
    s, restore = _as_2d(logits, where)
    process_scores_(s, _id_rows(input_ids, s.shape[0], s.shape[1], where), config)
    return restore(s)
