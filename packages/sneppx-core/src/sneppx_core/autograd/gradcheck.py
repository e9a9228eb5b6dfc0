"""Finite-difference checks of analytical gradients, as ``torch.autograd.gradcheck`` and ``gradgradcheck``.

For each input ``x_i`` that requires grad and each differentiable output ``y_j``, the numerical Jacobian
``N[d, k] = (y_j[k](x + eps e_d) - y_j[k](x - eps e_d)) / (2 eps)`` (central differences, ``x`` perturbed in
place in its own dtype) must match the analytical one, whose column ``k`` is ``grad(y_j, x_i, e_k)``:
``|A - N| <= atol + rtol |N|`` elementwise. Fast mode compares the scalars ``v^T J u`` instead, for random
unit vectors ``u`` (per input) and ``v`` (per output), with ``atol`` scaled by ``sum(u) sum(v)``.
"""

from __future__ import annotations

import warnings

import numpy as np

from .. import autograd as _autograd
from .._C_face import Tensor, float64
from .._factories import tensor, zeros, zeros_like
from .._grad_mode import no_grad


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` and ``gradgradcheck`` when analytical and numerical gradients disagree."""


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    return tuple(x) if isinstance(x, list) else (x,)


def _np(t):
    return np.array(t.detach().double().numpy(), dtype=np.float64).reshape(-1)


def _reject(fname, **options):
    for name, value in options.items():
        if value:
            raise NotImplementedError(f"[{fname}] {name}=True needs vmap or forward-mode AD, which sneppx_core "
                                      "does not have; leave it False.")


def _diff_inputs(args):
    """Indices of the inputs that require grad, with PyTorch's warning for non-float64 ones."""
    idx = []
    for i, a in enumerate(args):
        if isinstance(a, Tensor) and a.requires_grad:
            if a.dtype != float64:
                warnings.warn(f"[gradcheck] Input #{i} requires gradient and is {a.dtype}, not float64: the check "
                              "will likely fail unless all the inputs are float64.", UserWarning, stacklevel=4)
            if any(st == 0 and n > 1 for st, n in zip(a.stride(), a.shape)):
                raise RuntimeError(f"[gradcheck] Input #{i} has a dimension with stride 0; gradcheck needs inputs "
                                   "without overlapping memory to perturb them. Call .contiguous() on it first.")
            idx.append(i)
    if not idx:
        raise ValueError("[gradcheck] expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True.")
    return idx


def _eval(func, args, out_idx):
    outs = _as_tuple(func(*args))
    return [_np(outs[j]) for j in out_idx]


def _numerical(func, args, in_idx, out_idx, eps):
    """``N[i][j]``: ``(x_i.numel(), y_j.numel())`` central differences, one input element at a time."""
    res = []
    for i in in_idx:
        buf = args[i].detach()
        cols = []
        for idx in np.ndindex(*buf.shape):
            with no_grad():
                orig = buf[idx].item()
                buf[idx] = orig + eps
            plus = _eval(func, args, out_idx)
            with no_grad():
                buf[idx] = orig - eps
            minus = _eval(func, args, out_idx)
            with no_grad():
                buf[idx] = orig
            cols.append([(p - m) / (2 * eps) for p, m in zip(plus, minus)])
        if not cols:  # an empty input: no columns, but the outputs' sizes still shape the result
            res.append([np.zeros((0, y.size)) for y in _eval(func, args, out_idx)])
        else:
            res.append([np.array([c[j] for c in cols]) for j in range(len(out_idx))])
    return res


def _numerical_projected(func, args, in_idx, out_idx, eps, us, vs):
    """``n[i][j] = v_j . (J_ij u_i)``, with ``J_ij u_i`` by central differences along ``u_i``."""
    res = []
    for i, u in zip(in_idx, us):
        buf = args[i].detach()
        with no_grad():
            orig = buf.clone()
            buf.copy_(orig + eps * u)
        plus = _eval(func, args, out_idx)
        with no_grad():
            buf.copy_(orig - eps * u)
        minus = _eval(func, args, out_idx)
        with no_grad():
            buf.copy_(orig)
        res.append([float(_np(v) @ ((p - m) / (2 * eps))) for p, m, v in zip(plus, minus, vs)])
    return res


def _vjp_rows(ys, xs, seeds, check_grad_dtypes):
    """``grad(y_j, xs, seed_j)`` as flat float64 arrays for each output, zeros for unused inputs."""
    res = []
    for y, seed in zip(ys, seeds):
        gs = _autograd.grad(y, xs, seed, retain_graph=True, allow_unused=True)
        for g, x in zip(gs, xs):
            if g is not None and tuple(g.shape) != tuple(x.shape):
                raise GradcheckError(f"Analytical gradient has incorrect size: {tuple(g.shape)} for an input of "
                                     f"shape {tuple(x.shape)}")
            if g is not None and check_grad_dtypes and g.dtype != x.dtype:
                raise GradcheckError(f"Gradient has dtype mismatch: {g.dtype} for a {x.dtype} input")
        res.append([np.zeros(x.numel()) if g is None else _np(g) for g, x in zip(gs, xs)])
    return res


def _analytical(ys, xs, check_grad_dtypes):
    """``A[i][j]``: ``(x_i.numel(), y_j.numel())``, one backward per output element."""
    jac = [[np.zeros((x.numel(), y.numel())) for y in ys] for x in xs]
    for j, y in enumerate(ys):
        for k in range(y.numel()):
            seed = zeros(y.numel(), dtype=y.dtype)
            seed[k] = 1.0
            (row,) = _vjp_rows([y], xs, [seed.reshape(y.shape)], check_grad_dtypes)
            for i, g in enumerate(row):
                jac[i][j][:, k] = g
    return jac


def _analytical_projected(ys, xs, us, vs, check_grad_dtypes):
    """``a[i][j] = u_i . (J_ij^T v_j)``, one backward per output."""
    rows = _vjp_rows(ys, xs, vs, check_grad_dtypes)
    return [[float(_np(u) @ rows[j][i]) for j in range(len(ys))] for i, u in enumerate(us)]


def _scales_with_seed(ys, xs):
    """Backward from all-zero seeds must give exact zeros; a backward that ignores grad_output does not."""
    gs = _autograd.grad(ys, xs, [zeros_like(y) for y in ys], retain_graph=True, allow_unused=True)
    return all(g is None or not np.any(_np(g)) for g in gs)


def _unit(rng, t):
    """A random unit vector with nonnegative entries, shaped and typed as ``t``."""
    r = rng.random(t.numel())
    r = r / max(np.linalg.norm(r), 1e-30)
    return tensor(r.reshape(tuple(t.shape)), dtype=t.dtype)


def _check_zero_numerical(func, args, in_idx, outs, eps):
    """Without differentiable outputs, finite differences must see no dependence on the inputs either."""
    out_idx = [j for j, o in enumerate(outs) if isinstance(o, Tensor)]
    for i, row in zip(in_idx, _numerical(func, args, in_idx, out_idx, eps)):
        for j, n in zip(out_idx, row):
            if not np.allclose(n, 0.0):
                raise GradcheckError(f"Numerical gradient for function expected to be zero (output {j} does not "
                                     f"require grad) but it changes with input {i}:\n{n}")


def _run(func, args, eps, atol, rtol, nondet_tol, check_grad_dtypes, fast_mode):
    in_idx = _diff_inputs(args)
    xs = [args[i] for i in in_idx]
    outs = _as_tuple(func(*args))
    out_idx = [j for j, o in enumerate(outs) if isinstance(o, Tensor) and o.requires_grad]
    ys = [outs[j] for j in out_idx]
    if not ys:
        return _check_zero_numerical(func, args, in_idx, outs, eps)
    scales = _scales_with_seed(ys, xs)  # before the perturbations, which bump the inputs' versions
    if fast_mode:
        rng = np.random.default_rng(0)
        us, vs = [_unit(rng, x) for x in xs], [_unit(rng, y) for y in ys]
        first = _analytical_projected(ys, xs, us, vs, check_grad_dtypes)
        second = _analytical_projected(ys, xs, us, vs, check_grad_dtypes)
        num = _numerical_projected(func, args, in_idx, out_idx, eps, us, vs)
    else:
        first = _analytical(ys, xs, check_grad_dtypes)
        second = _analytical(ys, xs, check_grad_dtypes)
        num = _numerical(func, args, in_idx, out_idx, eps)
    for i, j in np.ndindex(len(xs), len(ys)):
        a, n = np.asarray(first[i][j]), np.asarray(num[i][j])
        tol = atol * float(_np(us[i]).sum() * _np(vs[j]).sum()) if fast_mode else atol
        if not np.allclose(a, n, rtol=rtol, atol=tol):
            how = " (fast mode: v^T J u for random unit vectors; rerun with fast_mode=False for the full Jacobians)"
            raise GradcheckError(f"Jacobian mismatch for output {out_idx[j]} with respect to input {in_idx[i]}"
                                 f"{how if fast_mode else ''},\nnumerical:{n}\nanalytical:{a}\n")
        if np.abs(a - np.asarray(second[i][j])).max(initial=0.0) > nondet_tol:
            raise GradcheckError("Backward is not reentrant, i.e., running backward with same input and "
                                 "grad_output multiple times gives different values, although analytical gradient "
                                 f"matches numerical gradient. The tolerance for nondeterminism was {nondet_tol}.")
    if not scales:
        raise GradcheckError("backward not multiplied by grad_output: all-zero grad_outputs gave a nonzero gradient")


def gradcheck(func, inputs, *, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True, nondet_tol=0.0,
              check_undefined_grad=True, check_grad_dtypes=False, check_batched_grad=False,
              check_batched_forward_grad=False, check_forward_ad=False, check_backward_ad=True, fast_mode=False,
              masked=None):
    """Checks the gradients of ``func`` at ``inputs`` against central finite differences.

    ``inputs`` is a tensor or a tuple (non-tensors pass through); those that require grad (ideally float64)
    are perturbed in place by ``+-eps`` and restored. ``func`` returns a tensor or a tuple of tensors. Every
    analytical Jacobian (one ``autograd.grad`` per output element, run twice: the runs may differ by at most
    ``nondet_tol``) must satisfy ``|A - N| <= atol + rtol |N|``, and backward from all-zero grad_outputs must
    give zeros. Returns True, or raises GradcheckError (returns False when ``raise_exception=False``).
    ``fast_mode`` compares ``v^T J u`` for random unit ``u`` and ``v`` (seeded) instead of whole Jacobians.
    ``check_undefined_grad`` is accepted: the engine seeds every backward with a dense tensor (no undefined
    gradients), and each analytical row already backpropagates through one output alone. ``masked`` is accepted
    and has no effect (inputs are dense tensors). The vmap and forward-AD checks raise NotImplementedError.
    """
    _reject("gradcheck", check_batched_grad=check_batched_grad, check_batched_forward_grad=check_batched_forward_grad,
            check_forward_ad=check_forward_ad)
    if not check_backward_ad:
        raise ValueError("[gradcheck] check_backward_ad=False leaves nothing to check (forward AD is not available).")
    try:
        _run(func, _as_tuple(inputs), eps, atol, rtol, nondet_tol, check_grad_dtypes, fast_mode)
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def _random_like(rng, y, non_contiguous):
    """Uniform ``[-1, 1)`` values shaped and typed as ``y``, a leaf that requires grad."""
    shape = tuple(y.shape)
    if non_contiguous:
        return tensor(rng.uniform(-1.0, 1.0, shape + (2,)), dtype=y.dtype)[..., 0].detach().requires_grad_()
    return tensor(rng.uniform(-1.0, 1.0, shape), dtype=y.dtype, requires_grad=True)


def gradgradcheck(func, inputs, grad_outputs=None, *, eps=1e-6, atol=1e-5, rtol=1e-3,
                  gen_non_contig_grad_outputs=False, raise_exception=True, nondet_tol=0.0, check_undefined_grad=True,
                  check_grad_dtypes=False, check_batched_grad=False, check_fwd_over_rev=False, check_rev_over_rev=True,
                  fast_mode=False, masked=False):
    """Checks second derivatives: ``gradcheck`` of ``(x, v) -> grad(func(x), x, v, create_graph=True)``.

    ``grad_outputs`` (one per differentiable output of ``func``) default to seeded uniform ``[-1, 1)`` tensors
    that require grad, so the check covers both the inputs and the seeds; gradients that come out ``None`` are
    dropped. The other arguments are as in ``gradcheck``; ``check_fwd_over_rev`` raises NotImplementedError.
    """
    _reject("gradgradcheck", check_batched_grad=check_batched_grad, check_fwd_over_rev=check_fwd_over_rev)
    if not check_rev_over_rev:
        raise ValueError("[gradgradcheck] check_rev_over_rev=False leaves nothing to check (forward AD is not "
                         "available).")
    args = _as_tuple(inputs)
    in_idx = [i for i, a in enumerate(args) if isinstance(a, Tensor) and a.requires_grad]
    if not in_idx:
        raise ValueError("[gradgradcheck] expects at least one input tensor to require gradient, but none of them "
                         "have requires_grad=True.")
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        ys = [o for o in _as_tuple(func(*args)) if isinstance(o, Tensor) and o.requires_grad]
        grad_outputs = tuple(_random_like(rng, y, gen_non_contig_grad_outputs) for y in ys)
    seeds, n = _as_tuple(grad_outputs), len(args)

    def first_order(*a):
        ys = [o for o in _as_tuple(func(*a[:n])) if isinstance(o, Tensor) and o.requires_grad]
        if len(ys) != len(a) - n:
            raise ValueError(f"[gradgradcheck] func has {len(ys)} differentiable outputs but {len(a) - n} "
                             "grad_outputs were given")
        if not ys:
            return ()
        gs = _autograd.grad(ys, [a[i] for i in in_idx], list(a[n:]), create_graph=True, allow_unused=True)
        return tuple(g for g in gs if g is not None)

    return gradcheck(first_order, args + seeds, eps=eps, atol=atol, rtol=rtol, raise_exception=raise_exception,
                     nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
                     check_grad_dtypes=check_grad_dtypes, fast_mode=fast_mode, masked=masked)


__all__ = ["GradcheckError", "gradcheck", "gradgradcheck"]
