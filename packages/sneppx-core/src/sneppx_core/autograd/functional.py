"""Higher-level autograd functions over ``autograd.grad``, as in ``torch.autograd.functional``.

``vjp`` is one backward pass: ``v^T J``. ``jvp`` and ``hvp`` need forward mode, which the engine lacks, so
they use the double-backward trick: with ``g(u) = J^T u`` (linear in ``u``), ``d(g(u) . v)/du = J v``.
``jacobian`` stacks one backward per output element; ``hessian`` is the jacobian of the gradient.
"""

from __future__ import annotations

from .. import autograd as _autograd
from .._C_face import Tensor
from .._factories import ones_like, zeros, zeros_like
from .._grad_mode import enable_grad
from .._ops import stack

_INDEPENDENT = (
    "The output of the user-provided function is independent of input {}. This is not allowed in strict mode."
)
_JAC_CONST = (
    "While computing the hessian, found that the jacobian of the user-provided function with respect to input {} "
    "is independent of the input. This is not allowed in strict mode: the function must be twice differentiable "
    "with a jacobian that depends on the inputs (a linear function violates this)."
)
_MISSING = {  # the strict-mode error for a None gradient, by the stage that produced it
    "back": _INDEPENDENT,
    "back_trick": "The gradient with respect to the input is independent of entry {} in the grad_outputs when "
    "using the double backward trick to compute forward mode gradients. This is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {}. This is not allowed "
    "in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {} in the "
    "grad_jacobian. This is not allowed in strict mode as it prevents using the double backward trick.",
}


def _as_tuple(x, what, fname):
    """``(was_tuple, tuple_of_tensors)``; a TypeError naming ``fname`` for anything else."""
    if isinstance(x, Tensor):
        return False, (x,)
    if not isinstance(x, tuple):
        raise TypeError(f"[{fname}] The {what} must be either a Tensor or a tuple of Tensors, got {type(x)}.")
    for i, el in enumerate(x):
        if not isinstance(el, Tensor):
            raise TypeError(f"[{fname}] The {what} must be a Tensor or a tuple of Tensors, but the value at "
                            f"index {i} has type {type(el)}.")
    return True, x


def _prepare(ts, create_graph, need_graph):
    """Copies the caller's tensors: a view keeps the graph under ``create_graph``, else a detached leaf."""
    return tuple(t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
                 for t in ts)


def _finish(ts, create_graph):
    return ts if create_graph else tuple(t.detach() for t in ts)


def _untuple(res, was_tuple):
    return res if was_tuple else res[0]


def _check_v(fname, v, refs, refs_tuple):
    if len(v) != len(refs):
        if refs_tuple:
            raise RuntimeError(f"[{fname}] v is a tuple of invalid length: should be {len(refs)} but got {len(v)}.")
        raise RuntimeError(f"[{fname}] The given v should contain a single Tensor.")
    for i, (a, r) in enumerate(zip(v, refs)):
        if tuple(a.shape) != tuple(r.shape):
            entry = f"Entry {i} in " if refs_tuple else ""
            raise RuntimeError(f"[{fname}] {entry}v has invalid size: should be {tuple(r.shape)} "
                               f"but got {tuple(a.shape)}.")


def _get_v(fname, v, refs, refs_tuple, create_graph, whose):
    """Validated copies of ``v``, or ``None`` when ``v`` may be omitted (one single-element ``refs``)."""
    if v is not None:
        v = _prepare(_as_tuple(v, "v", fname)[1], create_graph, need_graph=False)
        _check_v(fname, v, refs, refs_tuple)
        return v
    if len(refs) != 1 or refs[0].numel() != 1:
        raise RuntimeError(f"[{fname}] The vector v can only be None if the {whose} a single Tensor with a single "
                           "element.")
    return None


def _check_requires_grad(fname, ts, strict, msg):
    if strict:
        for i, t in enumerate(ts):
            if t is None:
                raise RuntimeError(f"[{fname}] " + _INDEPENDENT.format(i))
            if not t.requires_grad:
                raise RuntimeError(f"[{fname}] " + msg.format(i))


def _call(fname, func, inputs, strict):
    out_tuple, outputs = _as_tuple(func(*inputs), "outputs of the user-provided function", fname)
    _check_requires_grad(fname, outputs, strict, "Output {} of the user-provided function does not require "
                         "gradients. The outputs must be computed in a differentiable manner from the input "
                         "when running in strict mode.")
    return out_tuple, outputs


def _scalar_call(fname, func, inputs, strict):
    """The single-element tensor ``func(*inputs)``, which ``hessian``, ``vhp`` and ``hvp`` need."""
    out_tuple, outs = _call(fname, func, inputs, strict)
    if out_tuple:
        raise RuntimeError(f"[{fname}] The function given to {fname} should return a single Tensor")
    if outs[0].numel() != 1:
        raise RuntimeError(f"[{fname}] The Tensor returned by the function given to {fname} should contain a "
                           "single element")
    return outs[0]


def _grads(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """``autograd.grad`` over the outputs that require grad; all ``None`` when none does."""
    if grad_outputs is None:
        grad_outputs = [None if o is None else ones_like(o) for o in outputs]
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gos = zip(*pairs)
    return _autograd.grad(list(outs), list(inputs), list(gos), retain_graph=retain_graph, create_graph=create_graph,
                allow_unused=True)


def _fill(fname, grads, refs, strict, create_graph, stage, missing=None):
    """Zeros for ``None`` gradients; ``strict`` turns them (and constant ones under create_graph) into errors."""
    missing = missing or _MISSING[stage]
    res = []
    for i, (g, r) in enumerate(zip(grads, refs)):
        if g is None:
            if strict:
                raise RuntimeError(f"[{fname}] " + missing.format(i))
            g = zeros_like(r)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if stage.startswith("double") else "jacobian"
            raise RuntimeError(f"[{fname}] The {what} of the user-provided function is independent of input {i}. "
                               "This is not allowed in strict mode when create_graph=True.")
        res.append(g)
    return tuple(res)


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """Vector-Jacobian product ``v^T J`` of ``func`` at ``inputs``; returns ``(func(*inputs), vjp)``.

    ``v`` has the outputs' structure and may be omitted when ``func`` returns one single-element tensor. The
    product has the inputs' structure; inputs the outputs do not depend on get zeros (an error if ``strict``).
    """
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _call("vjp", func, inputs, strict)
        v = _get_v("vjp", v, outputs, out_tuple, create_graph, "user-provided function returns")
        res = _fill("vjp", _grads(outputs, inputs, v, create_graph), inputs, strict, create_graph, "back")
    return _untuple(_finish(outputs, create_graph), out_tuple), _untuple(_finish(res, create_graph), in_tuple)


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """Jacobian-vector product ``J v`` of ``func`` at ``inputs``; returns ``(func(*inputs), jvp)``.

    ``v`` has the inputs' structure (optional for one single-element input); the product has the outputs'.
    Computed by double backward: ``J v = d/du (J^T u . v)`` at ``u = 0``.
    """
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        v = _get_v("jvp", v, inputs, in_tuple, create_graph, "input to the user-provided function is")
        out_tuple, outputs = _call("jvp", func, inputs, strict)
        us = tuple(zeros_like(o, requires_grad=True) for o in outputs)
        gin = _grads(outputs, inputs, us, create_graph=True)
        _check_requires_grad("jvp", gin, strict, "The gradient with respect to input {} is independent of the "
                             "inputs of the user-provided function. This is not allowed in strict mode.")
        if v is None:
            v = tuple(ones_like(t) for t in inputs)
        res = _fill("jvp", _grads(gin, us, v, create_graph), outputs, strict, create_graph, "back_trick")
    return _untuple(_finish(outputs, create_graph), out_tuple), _untuple(_finish(res, create_graph), out_tuple)


def _reverse_jacobian(outputs, inputs, create_graph, strict):
    """``jac[i][j]`` of shape ``out_i.shape + in_j.shape``, one backward per output element."""
    jac = []
    for i, out in enumerate(outputs):
        rows = [[] for _ in inputs]
        flat = out.reshape(-1)
        missing = _INDEPENDENT.replace("The output", f"Output {i}")
        for k in range(out.numel()):
            gs = _grads((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
            for j, g in enumerate(_fill("jacobian", gs, inputs, strict, create_graph, "back", missing)):
                rows[j].append(g)
        jac.append(tuple(_stack(r, 0, out.shape, inp) for r, inp in zip(rows, inputs)))
    return jac


def _forward_jacobian(outputs, inputs):
    """``jac[i][j]`` column by column: ``J e_k`` for each input element by the double-backward trick."""
    us = tuple(zeros_like(o, requires_grad=True) for o in outputs)
    gin = _grads(outputs, inputs, us, create_graph=True)
    cols = [[[] for _ in inputs] for _ in outputs]
    for j, inp in enumerate(inputs):
        for k in range(inp.numel()):
            e = [zeros_like(t) for t in inputs]
            e[j].reshape(-1)[k] = 1.0
            res = _grads(gin, us, e, retain_graph=True)
            for i, (c, o) in enumerate(zip(res, outputs)):
                cols[i][j].append(zeros_like(o) if c is None else c)
    return [tuple(_stack(cols[i][j], -1, o.shape, inp) for j, inp in enumerate(inputs))
            for i, o in enumerate(outputs)]


def _stack(parts, dim, out_shape, inp):
    shape = tuple(out_shape) + tuple(inp.shape)
    if not parts:
        return zeros(shape, dtype=inp.dtype)
    return stack(parts, dim).reshape(shape)


def jacobian(func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"):
    """Jacobian of ``func`` at ``inputs``: ``d out_i / d in_j`` with shape ``out_i.shape + in_j.shape``.

    Returns a tensor for one input and one output, a tuple over the tuple side when one side is a tuple, and
    ``jac[i][j]`` when both are. ``vectorize`` computes the same rows one at a time (there is no vmap).
    ``strategy="forward-mode"`` builds columns by the double-backward trick and, as in PyTorch, needs
    ``vectorize=True`` and ``create_graph=False``.
    """
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('[jacobian] Expected strategy to be either "forward-mode" or "reverse-mode", '
                         f"got {strategy!r}.")
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError('[jacobian] create_graph=True and strategy="forward-mode" are not supported '
                                      'together. Set create_graph=False or strategy="reverse-mode".')
        if not vectorize:
            raise NotImplementedError('[jacobian] strategy="forward-mode" is only implemented for vectorize=True.')
    if strict and vectorize:
        raise RuntimeError("[jacobian] strict=True and vectorize=True are not supported together. Set strict=False "
                           "or vectorize=False.")
    with enable_grad():
        in_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, need_graph=True)
        out_tuple, outputs = _call("jacobian", func, inputs, strict)
        if strategy == "forward-mode":
            jac = _forward_jacobian(outputs, inputs)
        else:
            jac = _reverse_jacobian(outputs, inputs, create_graph, strict)
    jac = [_finish(row, create_graph) for row in jac]
    if out_tuple:
        return tuple(row if in_tuple else row[0] for row in jac)
    return jac[0] if in_tuple else jac[0][0]


def hessian(func, inputs, create_graph=False, strict=False, vectorize=False, outer_jacobian_strategy="reverse-mode"):
    """Hessian of the scalar function ``func`` at ``inputs``: ``H[i][j]`` of shape ``in_i.shape + in_j.shape``.

    A tensor for a single input, else a tuple of tuples. ``func`` must return one single-element tensor.
    Computed as the jacobian (``outer_jacobian_strategy``) of the gradient.
    """
    in_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('[hessian] Expected outer_jacobian_strategy to be either "forward-mode" or "reverse-mode", '
                         f"got {outer_jacobian_strategy!r}.")

    def gradient(*xs):
        g = jacobian(lambda *a: _scalar_call("hessian", func, a, strict).reshape(()), xs, create_graph=True)
        _check_requires_grad("hessian", g, strict, _JAC_CONST)
        return g

    res = jacobian(gradient, inputs, create_graph=create_graph, strict=strict, vectorize=vectorize,
                   strategy=outer_jacobian_strategy)
    return res if in_tuple else res[0][0]


def _hessian_setup(fname, func, inputs, v, create_graph, strict):
    """Shared start of vhp and hvp: copied inputs, checked v, the outputs and the gradient with its graph."""
    in_tuple, inputs = _as_tuple(inputs, "inputs", fname)
    inputs = _prepare(inputs, create_graph, need_graph=True)
    v = _get_v(fname, v, inputs, in_tuple, create_graph, "input to the user-provided function is")
    outputs = (_scalar_call(fname, func, inputs, strict),)
    jac = _grads(outputs, inputs, create_graph=True)
    _check_requires_grad(fname, jac, strict, _JAC_CONST)
    if v is None:
        v = tuple(ones_like(t) for t in inputs)
    return in_tuple, inputs, v, outputs, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """Vector-Hessian product ``v^T H`` of the scalar function ``func``; returns ``(func(*inputs), vhp)``.

    ``v`` has the inputs' structure (optional for one single-element input), as does the result.
    """
    with enable_grad():
        in_tuple, inputs, v, outputs, jac = _hessian_setup("vhp", func, inputs, v, create_graph, strict)
        res = _fill("vhp", _grads(jac, inputs, v, create_graph), inputs, strict, create_graph, "double_back")
    return _finish(outputs, create_graph)[0], _untuple(_finish(res, create_graph), in_tuple)


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """Hessian-vector product ``H v`` of the scalar function ``func``; returns ``(func(*inputs), hvp)``.

    Equal to ``vhp`` for a symmetric Hessian; computed by the double-backward trick on the gradient.
    """
    with enable_grad():
        in_tuple, inputs, v, outputs, jac = _hessian_setup("hvp", func, inputs, v, create_graph, strict)
        us = tuple(zeros_like(t, requires_grad=True) for t in inputs)
        back = _grads(jac, inputs, us, create_graph=True)
        res = _fill("hvp", _grads(back, us, v, create_graph), inputs, strict, create_graph, "double_back_trick")
    return _finish(outputs, create_graph)[0], _untuple(_finish(res, create_graph), in_tuple)


__all__ = ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]
