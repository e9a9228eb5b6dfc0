"""``einsum``: Einstein summation lowered to permute, reshape, matmul and sum (so it is differentiable)."""

from __future__ import annotations

import functools
import string

from ._C_face import Tensor

_LETTERS = set(string.ascii_letters)


def _fail(msg, exc=ValueError):
    raise exc(f"[einsum] {msg}")


def _parse(equation, operands):
    """Splits the equation into per-operand label lists and the output labels (``operands``: their
    shapes).

    ``...`` becomes one private label per broadcast dim (upper-case Greek letters here, so they never
    clash with the user's ASCII labels), right-aligned across operands as broadcasting is.
    """
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        _fail(f"equation {equation!r} has {len(terms)} operands but {len(operands)} tensors were given")
    ell_dims = 0
    for term, op in zip(terms, operands):
        n = len(term.replace("...", ""))
        if "..." in term:
            ell_dims = max(ell_dims, len(op) - n)
    ell = [chr(0x391 + i) for i in range(ell_dims)]
    labels = []
    for k, (term, op) in enumerate(zip(terms, operands)):
        chars = [c for c in term.replace("...", "")]
        bad = [c for c in chars if c not in _LETTERS]
        if bad or term.count("...") > 1:
            _fail(f"operand {k} subscripts {term!r} must be letters with at most one '...'")
        if "..." in term:
            before, _, after = term.partition("...")
            k_ell = len(op) - len(before) - len(after)
            if k_ell < 0:
                _fail(f"operand {k} has {len(op)} dims but subscripts {term!r}")
            labels.append(list(before) + ell[ell_dims - k_ell:] + list(after))
        else:
            if len(chars) != len(op):
                _fail(f"operand {k} has shape {tuple(op)} ({len(op)} dims) but subscripts {term!r}")
            labels.append(chars)
    if arrow:
        if "..." in rhs:
            before, _, after = rhs.partition("...")
            out = list(before) + ell + list(after)
        else:
            out = list(rhs)
        for c in out:
            if c not in ell and c not in _LETTERS:
                _fail(f"output subscript {c!r} is not a letter")
            if out.count(c) > 1:
                _fail(f"output subscript {c!r} appears more than once")
            if not any(c in lab for lab in labels):
                _fail(f"output subscript {c!r} does not appear in any operand")
    else:  # implicit output: broadcast dims, then labels seen exactly once, in alphabetical order
        counts = {}
        for lab in labels:
            for c in lab:
                counts[c] = counts.get(c, 0) + 1
        out = ell + sorted(c for c, n in counts.items() if n == 1 and c not in ell)
    return labels, out


def _sizes(labels, operands):
    """The size of every label (``operands``: their shapes); size-1 dims broadcast against the others."""
    sizes = {}
    for lab, op in zip(labels, operands):
        for c, n in zip(lab, op):
            have = sizes.get(c)
            if have is None or have == 1:
                sizes[c] = n
            elif n not in (1, have):
                _fail(f"subscript {c!r} has size {n} in one operand and {have} in another "
                      f"(shapes {[tuple(o) for o in operands]})")
    return sizes


@functools.lru_cache(maxsize=256)
def _plan(equation, shapes):
    """(labels per operand, output labels, size of every label) for operands of these shapes; kept
    for the next call with the same equation and shapes (a bad one raises, and is not kept)."""
    labels, out = _parse(equation, shapes)
    return labels, out, _sizes(labels, shapes)


def _diagonals(t, lab):
    """Removes repeated labels within one operand by taking the diagonal (mask with eye, sum)."""
    lab = list(lab)
    while len(set(lab)) < len(lab):
        from ._factories import eye

        c = next(c for c in lab if lab.count(c) > 1)
        p = lab.index(c)
        q = lab.index(c, p + 1)
        n = t.shape[p]
        shape = [1] * t.ndim
        shape[p], shape[q] = n, n
        t = (t * eye(n, dtype=t.dtype, device=t.device).reshape(shape)).sum(q)
        lab.pop(q)
    return t, lab


def _sum_out(t, lab, keep):
    """Sums the labels of ``t`` that are not in ``keep``."""
    dims = [i for i, c in enumerate(lab) if c not in keep]
    if not dims:
        return t, lab
    return t.sum(dim=dims), [c for c in lab if c in keep]


def _contract(a, la, b, lb, keep, sizes):
    """a (labels la) x b (labels lb) with the labels outside ``keep`` summed, as one batched matmul."""
    batch = [c for c in la if c in lb and c in keep]
    inner = [c for c in la if c in lb and c not in keep]
    left = [c for c in la if c not in lb]
    right = [c for c in lb if c not in la]

    def arrange(t, lab, order, shape_groups):
        # Views only where they change something: each costs a call, and einsum is often called on
        # small operands.
        if order != lab:
            t = t.permute(*[lab.index(c) for c in order])
        full = tuple(sizes[c] for c in order)
        if tuple(t.shape) != full:
            t = t.expand(*full)
        shape = tuple(_prod(sizes[c] for c in g) for g in shape_groups)
        return t if tuple(t.shape) == shape else t.reshape(*shape)

    lead, rest = _leading(lb, inner, right, sizes) if not batch else ([], [])
    if lead:  # b's leading labels as a batch that a broadcasts over: no copy of b to put them last
        out = arrange(a, la, left + inner, [left, inner]) @ arrange(b, lb, lb, [lead, inner, rest])
        labels = lead + left + rest
    else:
        groups_a = [batch, left, inner] if batch else [left, inner]  # no batch: a 2-D product
        groups_b = [batch, inner, right] if batch else [inner, right]
        out = arrange(a, la, batch + left + inner, groups_a) @ arrange(b, lb, batch + inner + right, groups_b)
        labels = batch + left + right
    shape = tuple(sizes[c] for c in labels)
    return (out if tuple(out.shape) == shape else out.reshape(*shape)), labels


def _leading(lb, inner, right, sizes):
    """(b's labels before its summed ones, its labels after them), where b is laid out as (those, the summed
    labels in a's order, at least 16 elements of its own): the product then runs as a batch over the
    leading labels with a broadcast, where putting them after the summed labels for one 2-D product would
    copy b ("bn,anm->bam" copied its (a, n, m) weight to (n, a m)). Else ([], [])."""
    k = 0
    while k < len(lb) and lb[k] in right:
        k += 1
    rest = lb[k + len(inner):]
    if k == 0 or not inner or not rest or lb[k:k + len(inner)] != inner or _prod(sizes[c] for c in rest) < 16:
        return [], []
    return lb[:k], rest


def _prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def einsum(equation, *operands):
    """Einstein summation: ``einsum("ij,jk->ik", a, b)`` is ``a @ b``.

    Each operand's subscripts name its dims; a subscript shared between operands multiplies along
    it, and one missing from the output (after ``->``) is summed: out[o] = sum_{s} prod_k op_k[l_k].
    Without ``->`` the output is the subscripts seen once, in alphabetical order. ``...`` stands for
    broadcast dims; a repeated subscript within one operand takes a diagonal ("ii->i"). Operands
    are contracted left to right, each pair as one batched matmul, so everything is differentiable.

    Args:
        equation: the subscripts, e.g. "bij,bjk->bik", "i,i->", "...ij->...ji".
        operands: tensors (or one list of tensors), all of the same dtype.
    """
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        _fail(f"equation must be a string, got {type(equation).__name__}", TypeError)
    if not operands or not all(isinstance(o, Tensor) for o in operands):
        _fail("expected one or more Tensor operands", TypeError)
    dtype = operands[0].dtype
    if any(o.dtype != dtype for o in operands[1:]):
        _fail(f"operands must have the same dtype, got {[repr(o.dtype) for o in operands]}", TypeError)
    labels, out, sizes = _plan(equation, tuple(tuple(o.shape) for o in operands))
    terms = [_diagonals(t, lab) for t, lab in zip(operands, labels)]
    cur, lab = terms[0]
    for k in range(1, len(terms) + 1):
        later = set(out).union(*[set(lb) for _, lb in terms[k:]])
        cur, lab = _sum_out(cur, lab, later)  # labels needed by no one later are summed right away
        if k == len(terms):
            break
        nxt, nlab = _sum_out(*terms[k], later | set(lab))
        after = set(out).union(*[set(lb) for _, lb in terms[k + 1:]])  # needed once this pair is contracted
        cur, lab = _contract(cur, lab, nxt, nlab, after, sizes)
    if not out:
        return cur.reshape(())
    cur = cur.permute(*[lab.index(c) for c in out]) if lab != out else cur
    full = tuple(sizes[c] for c in out)
    return cur if tuple(cur.shape) == full else cur.expand(*full)


__all__ = ["einsum"]
