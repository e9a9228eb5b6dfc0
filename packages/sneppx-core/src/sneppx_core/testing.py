"""Test helpers: numerical gradient checks against float64 central differences."""

from __future__ import annotations

import numpy as np

from ._C_face import Tensor, float64


def numerical_grad(fn, inputs, eps=1e-6):
    """Central finite differences of ``sum(fn(*inputs) * seed)`` for each input, in float64.

    Returns (seed, grads) where seed is a fixed random projection of the output.
    """
    xs = [np.array(x.detach().to(float64).numpy(), dtype=np.float64) for x in inputs]
    out0 = fn(*[Tensor(x, dtype=float64) for x in xs]).detach().numpy()
    seed = np.random.default_rng(0).standard_normal(out0.shape)
    grads = []
    for k, x in enumerate(xs):
        g = np.zeros_like(x)
        flat = x.reshape(-1)
        for i in range(flat.size):
            old = flat[i]
            flat[i] = old + eps
            plus = fn(*[Tensor(v, dtype=float64) for v in xs]).detach().numpy()
            flat[i] = old - eps
            minus = fn(*[Tensor(v, dtype=float64) for v in xs]).detach().numpy()
            flat[i] = old
            g.reshape(-1)[i] = np.sum((plus - minus) * seed) / (2 * eps)
        grads.append(g)
    return seed, grads


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compares analytic gradients of ``fn`` with float64 central finite differences.

    ``inputs`` is a tensor or a sequence of tensors; those with ``requires_grad`` are checked.
    Returns True, or raises AssertionError naming the input and the worst element.
    """
    inputs = [inputs] if isinstance(inputs, Tensor) else list(inputs)
    xs = [Tensor(x.detach().to(float64).numpy(), dtype=float64, requires_grad=x.requires_grad) for x in inputs]
    out = fn(*xs)
    seed, num = numerical_grad(fn, inputs, eps)
    out.backward(Tensor(seed, dtype=float64))
    for i, (x, n) in enumerate(zip(xs, num)):
        if not x.requires_grad:
            continue
        a = np.zeros_like(n) if x.grad is None else x.grad.numpy()
        if not np.allclose(a, n, atol=atol, rtol=rtol):
            worst = np.unravel_index(np.argmax(np.abs(a - n)), a.shape) if a.ndim else ()
            if raise_exception:
                raise AssertionError(f"[gradcheck] input {i}: analytic {a[worst]} vs numerical {n[worst]} at {worst}")
            return False
    return True


__all__ = ["gradcheck", "numerical_grad"]
