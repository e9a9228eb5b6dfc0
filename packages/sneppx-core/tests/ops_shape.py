"""Op-table entries: shapes, views, joining, indexing and sorting."""

from __future__ import annotations

import numpy as np

from optable_base import *  # noqa: F401,F403  (specs, input descriptions, dtype rules, op())
from optable_base import X, I, M, functional, nn_functional, op  # noqa: E741

# ---------------------------------------------------------------- shapes and views
op("reshape", lambda m, x: x.reshape(-1, 2), lambda a: a.reshape(-1, 2), [(X((3, 4)),), (X((2, 3, 4)),)], dtypes=ALL)
op("reshape_fn", lambda m, x: m.reshape(x, (2, -1)), lambda a: a.reshape(2, -1), [(X((2, 3, 4)),)], dtypes=ALL)
op("view_flat", lambda m, x: x.contiguous().view(-1), lambda a: a.reshape(-1), [(X((3, 4)),)], dtypes=ALL)
op("view_split", lambda m, x: x.view(2, 3, 2) if x.is_contiguous() else x.reshape(2, 3, 2),
   lambda a: a.reshape(2, 3, 2), [(X((3, 4)),)], dtypes=ALL)
op("transpose", lambda m, x: x.transpose(0, -1), lambda a: np.swapaxes(a, 0, -1), [(X((3, 4)),), (X((2, 3, 4)),)],
   dtypes=ALL)
op("permute", lambda m, x: x.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1), [(X((2, 3, 4)),)], dtypes=ALL)
op("permute_fn", lambda m, x: m.permute(x, (1, 2, 0)), lambda a: a.transpose(1, 2, 0), [(X((2, 3, 4)),)], dtypes=ALL)
op("T", lambda m, x: x.T, lambda a: a.T, [(X((3, 4)),)], dtypes=ALL)
op("mT", lambda m, x: x.mT, lambda a: np.swapaxes(a, -1, -2), [(X((2, 3, 4)),)], dtypes=ALL)
op("squeeze", lambda m, x: x.squeeze(), lambda a: a.squeeze(), [(X((3, 1, 4, 1)),)], dtypes=ALL,
   layouts=("contiguous", "transposed", "sliced"))
op("squeeze_dim", lambda m, x: x.squeeze(1), lambda a: a.squeeze(1), [(X((3, 1, 4)),)], dtypes=ALL)
op("unsqueeze", lambda m, x: x.unsqueeze(1), lambda a: np.expand_dims(a, 1), [(X((3, 4)),)], dtypes=ALL)
op("unsqueeze_neg", lambda m, x: m.unsqueeze(x, -1), lambda a: np.expand_dims(a, -1), [(X((3, 4)),), (X(()),)],
   dtypes=ALL)
op("expand", lambda m, x: x.expand(2, 3, 4), lambda a: np.broadcast_to(a, (2, 3, 4)), [(X((3, 1)),), (X((4,)),)],
   dtypes=ALL)
op("expand_neg1", lambda m, x: x.expand(2, -1, 4), lambda a: np.broadcast_to(a, (2, 3, 4)), [(X((3, 1)),)], dtypes=ALL)
op("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 3, 4)), lambda a: np.broadcast_to(a, (2, 3, 4)),
   [(X((1, 4)),)], dtypes=ALL)
op("flatten", lambda m, x: x.flatten(), lambda a: a.reshape(-1), [(X((2, 3, 4)),), (X(()),)], dtypes=ALL)
op("flatten_mid", lambda m, x: m.flatten(x, 1, 2), lambda a: a.reshape(a.shape[0], -1, *a.shape[3:]),
   [(X((2, 3, 4, 2)),)], dtypes=ALL)
op("unflatten", lambda m, x: x.unflatten(1, (2, -1)), lambda a: a.reshape(a.shape[0], 2, -1, *a.shape[2:]),
   [(X((3, 6)),), (X((2, 4, 3)),)], dtypes=ALL)
op("narrow", lambda m, x: x.narrow(1, 1, 2), lambda a: a[:, 1:3], [(X((3, 4)),)], dtypes=ALL)
op("narrow_neg", lambda m, x: m.narrow(x, -1, -3, 2), lambda a: a[..., -3:-1], [(X((2, 3, 4)),)], dtypes=ALL)
op("contiguous", lambda m, x: x.contiguous(), lambda a: a, [(X((3, 4)),)], dtypes=ALL)
op("clone", lambda m, x: x.clone(), lambda a: a, [(X((3, 4)),)], dtypes=ALL)
op("select", lambda m, x: x.select(1, -1), lambda a: a[:, -1], [(X((3, 4)),)], dtypes=ALL)
op("getitem_slices", lambda m, x: x[1:, ::2], lambda a: a[1:, ::2], [(X((3, 4)),), (X((4, 5, 2)),)], dtypes=ALL)
op("getitem_adv", lambda m, x, i: x[i], lambda a, i: a[i], [(X((5, 3)), I((4,), 5)), (X((5,)), I((2, 3), 5))],
   dtypes=ALL)
op("getitem_mask", lambda m, x, k: x[k], lambda a, k: a[k], [(X((3, 4)), M((3, 4))), (X((3, 4)), M((3,)))], dtypes=ALL)

# ---------------------------------------------------------------- joining, splitting, triangles
op("cat0", lambda m, a, b, c: m.cat([a, b, c]), lambda a, b, c: np.concatenate([a, b, c]),
   [(X((2, 3)), X((1, 3)), X((4, 3)))], dtypes=ALL)
op("cat1", lambda m, a, b: m.cat((a, b), dim=-1), lambda a, b: np.concatenate([a, b], -1),
   [(X((2, 3, 1)), X((2, 3, 4)))], dtypes=ALL)
op("cat_promote", lambda m, a: m.cat([a, (a * 2).double() if a.dtype != m.bool else a.double()]),
   lambda a: np.concatenate([a, (a * 2 if a.dtype != bool else a)]).astype(np.float64), [(X((2, 3)),)],
   dtypes=FLOATS + ("int64",), out=lambda *d: "float64", grad=False)
op("stack0", lambda m, a, b: m.stack([a, b]), lambda a, b: np.stack([a, b]), [(X((3, 4)), X((3, 4)))], dtypes=ALL)
op("stack_last", lambda m, a, b, c: m.stack([a, b, c], dim=-1), lambda a, b, c: np.stack([a, b, c], -1),
   [(X((3, 4)), X((3, 4)), X((3, 4)))], dtypes=ALL)
op("split_size", lambda m, x: tuple(x.split(2, dim=1)), lambda a: tuple(np.split(a, [2, 4], 1)), [(X((3, 5)),)],
   dtypes=ALL)
op("split_sections", lambda m, x: tuple(m.split(x, [1, 3], 0)), lambda a: tuple(np.split(a, [1], 0)),
   [(X((4, 3)),)], dtypes=ALL)
op("chunk", lambda m, x: tuple(x.chunk(3, -1)), lambda a: tuple(np.array_split(a, [3, 6], -1)), [(X((2, 7)),)],
   dtypes=ALL)
op("unbind", lambda m, x: tuple(x.unbind(1)), lambda a: tuple(np.moveaxis(a, 1, 0)), [(X((2, 3)),)], dtypes=ALL)
for _k in (0, 1, -1):
    op(f"tril_{_k}", (lambda k: lambda m, x: m.tril(x, k))(_k), (lambda k: lambda a: np.tril(a, k))(_k),
       [(X((4, 5)),), (X((2, 3, 3)),)], dtypes=ALL)
    op(f"triu_{_k}", (lambda k: lambda m, x: x.triu(k))(_k), (lambda k: lambda a: np.triu(a, k))(_k),
       [(X((4, 5)),), (X((2, 3, 3)),)], dtypes=ALL)
op("flip", lambda m, x: m.flip(x, (0, -1)), lambda a: np.flip(a, (0, -1)), [(X((3, 4)),), (X((2, 3, 4)),)], dtypes=ALL)
op("roll", lambda m, x: x.roll(1, 1), lambda a: np.roll(a, 1, 1), [(X((3, 4)),)], dtypes=ALL)
op("roll_multi", lambda m, x: m.roll(x, (2, -1), (0, 1)), lambda a: np.roll(a, (2, -1), (0, 1)), [(X((3, 4)),)],
   dtypes=ALL)
op("roll_flat", lambda m, x: m.roll(x, 5), lambda a: np.roll(a, 5), [(X((3, 4)),)], dtypes=ALL)
op("repeat", lambda m, x: x.repeat(2, 3), lambda a: np.tile(a, (2, 3)), [(X((2, 3)),)], dtypes=ALL)
op("repeat_lead", lambda m, x: x.repeat(2, 1, 2), lambda a: np.tile(a, (2, 1, 2)), [(X((2, 3)),), (X((3,)),)],
   dtypes=ALL)

# ---------------------------------------------------------------- gather, scatter, sorting
op("gather", lambda m, x, i: m.gather(x, 1, i), lambda a, i: np.take_along_axis(a, i, 1),
   [(X((3, 5)), I((3, 4), 5)), (X((2, 4, 3)), I((2, 2, 3), 4))], dtypes=ALL)
op("gather_d0", lambda m, x, i: x.gather(0, i), lambda a, i: np.take_along_axis(a, i, 0),
   [(X((4, 3)), I((6, 3), 4))], dtypes=ALL)


def _scatter_ref(a, i, s, add=False, axis=1):
    out = a.copy()
    src = np.take(s, np.arange(i.shape[axis]), axis=axis)
    src = src[tuple(slice(0, n) for n in i.shape)]
    idx = list(np.indices(i.shape))  # (put_along_axis would broadcast a short index over all rows)
    idx[axis] = i
    if add:
        np.add.at(out, tuple(idx), src)
    else:
        out[tuple(idx)] = src
    return out


_SCATTER_LAYOUTS = ("contiguous", "transposed", "sliced")
op("scatter", lambda m, x, i, s: m.scatter(x, 1, i, s), _scatter_ref,
   [(X((3, 5)), I((3, 3), 5, perm_axis=1), X((3, 3))), (X((2, 6)), I((1, 4), 6, perm_axis=1), X((1, 4)))],
   dtypes=ALL, layouts=_SCATTER_LAYOUTS)
op("scatter_src_larger", lambda m, x, i, s: m.scatter(x, 1, i, s), _scatter_ref,
   [(X((3, 5)), I((3, 3), 5, perm_axis=1), X((3, 4)))], dtypes=ALL, layouts=_SCATTER_LAYOUTS, torch_grad=False)
op("scatter_scalar", lambda m, x, i: x.scatter(1, i, 2), lambda a, i: _scatter_ref(a, i, np.full(i.shape, 2)),
   [(X((3, 5)), I((3, 2), 5, perm_axis=1))], dtypes=NUMERIC, layouts=_SCATTER_LAYOUTS)
op("scatter_add", lambda m, x, i, s: x.scatter_add(1, i, s), lambda a, i, s: _scatter_ref(a, i, s, add=True),
   [(X((3, 5)), I((3, 6), 5), X((3, 6))), (X((2, 4)), I((2, 3), 4), X((2, 3)))], dtypes=NUMERIC,
   layouts=_SCATTER_LAYOUTS)
op("scatter_add_src_larger", lambda m, x, i, s: x.scatter_add(1, i, s), lambda a, i, s: _scatter_ref(a, i, s, add=True),
   [(X((2, 4)), I((2, 3), 4), X((2, 5)))], dtypes=NUMERIC, layouts=_SCATTER_LAYOUTS, torch_grad=False)
op("index_select", lambda m, x, i: m.index_select(x, 1, i), lambda a, i: np.take(a, i, 1),
   [(X((3, 5)), I((4,), 5)), (X((2, 5, 3)), I((7,), 5))], dtypes=ALL)


def _index_add_ref(a, i, s, alpha=1):
    out = a.copy()
    np.add.at(out, (slice(None), i), alpha * s) if a.ndim == 2 else np.add.at(out, i, alpha * s)
    return out


op("index_add", lambda m, x, i, s: m.index_add(x, 1, i, s), _index_add_ref,
   [(X((3, 5)), I((4,), 5), X((3, 4)))], dtypes=NUMERIC)
op("index_add_alpha", lambda m, x, i, s: x.index_add(0, i, s, alpha=2), lambda a, i, s: _index_add_ref(a, i, s, 2),
   [(X((5,)), I((6,), 5), X((6,)))], dtypes=SIGNED)


def _index_copy_ref(a, i, s, dim):
    out = a.copy()
    np.moveaxis(out, dim, 0)[i] = np.moveaxis(s, dim, 0)
    return out


op("index_copy", lambda m, x, i, s: x.index_copy(1, i, s), lambda a, i, s: _index_copy_ref(a, i, s, 1),
   [(X((3, 5)), I((4,), 5, perm_axis=0), X((3, 4)))], dtypes=NUMERIC)
op("index_copy_d0", lambda m, x, i, s: m.index_copy(x, 0, i, s), lambda a, i, s: _index_copy_ref(a, i, s, 0),
   [(X((5, 3)), I((2,), 5, perm_axis=0), X((2, 3)))], dtypes=NUMERIC)
op("repeat_interleave", lambda m, x: x.repeat_interleave(3, dim=1), lambda a: np.repeat(a, 3, 1),
   [(X((3, 4)),), (X((2, 3, 2)),)], dtypes=ALL)
op("one_hot", lambda m, i: nn_functional(m).one_hot(i, 6),
   lambda i: np.eye(6, dtype=np.int64)[i], [(I((3, 4), 6),), (I((5,), 6),)], dtypes=("int64",), out=int64, grad=False)
def _desc(a, axis):
    idx = np.flip(np.argsort(a, axis, kind="stable"), axis)
    return np.take_along_axis(a, idx, axis), idx


op("topk", lambda m, x: tuple(x.topk(3, dim=1)), lambda a: tuple(r[:, :3] for r in _desc(a, 1)), [(X((3, 6), "distinct"),)],
   dtypes=NUMERIC, layouts=("contiguous", "transposed", "sliced"), out=values_indices)
op("topk_smallest", lambda m, x: tuple(m.topk(x, 2, dim=0, largest=False)),
   lambda a: (np.sort(a, 0)[:2], np.argsort(a, 0, kind="stable")[:2]), [(X((5, 3), "distinct"),)], dtypes=NUMERIC,
   layouts=("contiguous", "transposed", "sliced"), out=values_indices)
op("sort", lambda m, x: tuple(x.sort(dim=-1)), lambda a: (np.sort(a, -1), np.argsort(a, -1, kind="stable")),
   [(X((3, 6), "distinct"),), (X((2, 3, 4), "distinct"),)], dtypes=NUMERIC,
   layouts=("contiguous", "transposed", "sliced"), out=values_indices)
op("sort_desc", lambda m, x: tuple(m.sort(x, dim=0, descending=True)),
   lambda a: _desc(a, 0), [(X((5, 3), "distinct"),)], dtypes=NUMERIC,
   layouts=("contiguous", "transposed", "sliced"), out=values_indices)
op("sort_stable_ties", lambda m, x: tuple(m.sort(x, dim=-1, stable=True)),
   lambda a: (np.sort(a, -1, kind="stable"), np.argsort(a, -1, kind="stable")), [(X((4, 7), "small"),)],
   dtypes=SIGNED, grad=False, out=values_indices)
op("argsort", lambda m, x: m.argsort(x, dim=1), lambda a: np.argsort(a, 1, kind="stable"), [(X((3, 6), "distinct"),)],
   dtypes=NUMERIC, out=int64, grad=False, layouts=("contiguous", "transposed", "sliced"))
op("argsort_desc", lambda m, x: x.argsort(dim=0, descending=True), lambda a: _desc(a, 0)[1],
   [(X((5, 3), "distinct"),)], dtypes=SIGNED, out=int64, grad=False, layouts=("contiguous", "transposed", "sliced"))


def _np_diag_embed(a, offset):
    """a's last dim on the diagonal (offset) of new square matrices in the last two dims."""
    n = a.shape[-1] + abs(offset)
    out = np.zeros(a.shape[:-1] + (n, n), a.dtype)
    i = np.arange(a.shape[-1])
    out[..., i + max(-offset, 0), i + max(offset, 0)] = a
    return out


def _np_pad(a, pad, **kw):
    """np.pad with F.pad's pad order (the last dim first)."""
    k = len(pad) // 2
    return np.pad(a, [(0, 0)] * (a.ndim - k) + [(pad[2 * j], pad[2 * j + 1]) for j in reversed(range(k))], **kw)


op("diag_embed", lambda m, x: m.diag_embed(x, 1), lambda a: _np_diag_embed(a, 1), [(X((3, 4)),), (X((2, 3, 5)),)])
op("trace", lambda m, x: m.trace(x), lambda a: np.asarray(np.trace(a)), [(X((5, 7)),), (X((6, 4)),)])


_PAD = (1, 2, 2, 0)
op("pad_constant", lambda m, x: functional(m).pad(x, _PAD, value=0.5),
   lambda a: _np_pad(a, _PAD, constant_values=0.5), [(X((2, 3, 4, 5)),), (X((3, 4)),)])
op("pad_reflect", lambda m, x: functional(m).pad(x, _PAD, mode="reflect"), lambda a: _np_pad(a, _PAD, mode="reflect"),
   [(X((2, 3, 4, 5)),)])
op("pad_replicate", lambda m, x: functional(m).pad(x, _PAD, mode="replicate"),
   lambda a: _np_pad(a, _PAD, mode="edge"), [(X((2, 3, 4, 5)),)])
op("pad_circular", lambda m, x: functional(m).pad(x, _PAD, mode="circular"),
   lambda a: _np_pad(a, _PAD, mode="wrap"), [(X((2, 3, 4, 5)),)])
