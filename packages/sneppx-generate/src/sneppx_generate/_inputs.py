"""Turn the many accepted forms of ``input_ids``/``attention_mask`` into lists of prompt ids."""

from __future__ import annotations

import numbers

import numpy as np
import sneppx_core as sx

_WHERE = "generate"


def _tensor_to_numpy(t, name: str) -> np.ndarray:
    if t.dtype in (sx.float16, sx.bfloat16, sx.float32, sx.float64):
        raise TypeError(f"{_WHERE}: {name} must be an integer Tensor (int64), got dtype {t.dtype}")
    t = t.detach()
    if str(t.device) != "cpu":
        t = t.to("cpu")
    return np.array(t.numpy(), copy=True)


def _to_rows(x, name: str):
    """Return (rows, rectangular) where rows is a list of lists of ints."""
    if isinstance(x, sx.Tensor):
        x = _tensor_to_numpy(x, name)
    if isinstance(x, np.ndarray):
        if x.dtype == np.bool_ and name == "attention_mask":
            x = x.astype(np.int64)
        if not np.issubdtype(x.dtype, np.integer):
            raise TypeError(f"{_WHERE}: {name} must hold integers, got dtype {x.dtype}")
        if x.ndim not in (1, 2):
            raise ValueError(f"{_WHERE}: {name} must be 1-D or 2-D, got shape {x.shape}")
        return (x[None, :] if x.ndim == 1 else x).tolist(), True
    if isinstance(x, (list, tuple)):
        if len(x) == 0:
            raise ValueError(f"{_WHERE}: {name} is empty")
        if all(isinstance(i, numbers.Integral) for i in x):
            return [list(x)], True
        if all(isinstance(r, (list, tuple)) or (isinstance(r, np.ndarray) and r.ndim == 1) for r in x):
            rows = [list(r.tolist() if isinstance(r, np.ndarray) else r) for r in x]
            return rows, len({len(r) for r in rows}) == 1
        raise TypeError(f"{_WHERE}: {name} must be a list of ints or a list of lists of ints")
    raise TypeError(f"{_WHERE}: {name} must be a list, NumPy array or sneppx_core Tensor, got {type(x).__name__}")


def _check_ids(rows: list, bos) -> None:
    for r, row in enumerate(rows):
        if not row and bos is not None:
            row.append(bos)
        if not row:
            raise ValueError(f"{_WHERE}: prompt {r} is empty; give at least one token (e.g. a BOS id)")
        for i in row:
            if isinstance(i, bool) or not isinstance(i, numbers.Integral) or i < 0:
                raise ValueError(f"{_WHERE}: input_ids must be non-negative ints, prompt {r} holds {i!r}")


def _apply_mask(rows: list, mask, shape: tuple) -> list:
    mrows, rect = _to_rows(mask, "attention_mask")
    mshape = (len(mrows), len(mrows[0]) if rect else -1)
    if not rect or mshape != shape:
        raise ValueError(f"{_WHERE}: attention_mask shape {mshape} does not match input_ids shape {shape}")
    out = []
    for r, (row, m) in enumerate(zip(rows, mrows)):
        m = np.asarray(m)
        if not np.isin(m, (0, 1)).all():
            raise ValueError(f"{_WHERE}: attention_mask must hold only 0 and 1, row {r} is {m.tolist()}")
        ones = np.flatnonzero(m)
        if len(ones) and ones[-1] - ones[0] + 1 != len(ones):
            raise ValueError(f"{_WHERE}: attention_mask row {r} has padding between tokens; "
                             f"only left or right padding is supported, got {m.tolist()}")
        out.append([row[i] for i in ones])
    return out


def prompts_from_inputs(input_ids, attention_mask=None, bos=None) -> list:
    """Prompts as a list of lists of ints, padding removed.

    ``input_ids`` may be a list of ints (one prompt), a list of lists (prompts of any lengths), a
    1-D/2-D integer NumPy array or Tensor. ``attention_mask`` (same shape, 1 = token, 0 = padding,
    left or right padding) strips the padding. An empty prompt becomes ``[bos]`` when ``bos`` is
    an id, and raises ValueError otherwise.
    """
    rows, rect = _to_rows(input_ids, "input_ids")
    if attention_mask is not None:
        if not rect:
            raise ValueError(f"{_WHERE}: attention_mask needs rectangular input_ids; "
                             "a list of unequal lists needs no mask")
        rows = _apply_mask(rows, attention_mask, (len(rows), len(rows[0])))
    _check_ids(rows, bos)
    return [[int(i) for i in r] for r in rows]
