"""``torch.testing``: ``assert_close`` and ``make_tensor`` (PyTorch's), and numerical gradient checks against
float64 central differences.

Only floating inputs are differentiated (and, when any input has ``requires_grad``, only those);
integer and bool inputs (indices, masks) pass through unchanged, so ``gather``, ``scatter`` and
``where`` can be checked like any other op.
"""

from __future__ import annotations

import numpy as np

from ._C_face import Tensor, float64
from ._testing_close import assert_allclose, assert_close, make_tensor


def _as_list(inputs):
    return [inputs] if isinstance(inputs, Tensor) else list(inputs)


def _wrt(inputs):
    """Indices of the inputs to differentiate: those requiring grad, else every floating one."""
    flagged = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if flagged:
        return flagged
    return [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.dtype.is_floating_point]


def _float64_leaves(inputs, wrt, requires_grad):
    """Fresh float64 leaves for the differentiated inputs; the others are passed as given."""
    out = list(inputs)
    for i in wrt:
        a = np.array(inputs[i].detach().to(float64).numpy(), dtype=np.float64)
        out[i] = Tensor(a, dtype=float64, requires_grad=requires_grad)
    return out


def numerical_grad(fn, inputs, eps=1e-6, seed=None):
    """Central finite differences of ``sum(fn(*inputs) * seed)`` in float64.

    Args:
        fn: maps the inputs to one tensor.
        inputs: a tensor or a sequence of tensors (non-floating ones are held fixed).
        eps: the step; d/dx_i ~ (f(x + eps e_i) - f(x - eps e_i)) / (2 eps).
        seed: the output projection (an array of the output's shape); random when None.

    Returns:
        (seed, grads): grads[k] is the gradient for the k-th differentiated input, in the order
        given by the inputs (only floating inputs, or those requiring grad, are differentiated).
    """
    inputs = _as_list(inputs)
    wrt = _wrt(inputs)
    xs = _float64_leaves(inputs, wrt, False)
    arrays = {i: xs[i].numpy() for i in wrt}  # the leaves share memory with these arrays

    def evaluate():  # a copy: a view op's output shares memory with the perturbed input
        return np.array(fn(*xs).detach().to(float64).numpy(), dtype=np.float64, copy=True)

    out0 = evaluate()
    if seed is None:
        seed = np.random.default_rng(0).standard_normal(out0.shape)
    grads = []
    for i in wrt:
        flat = arrays[i].reshape(-1)
        g = np.zeros(flat.shape, dtype=np.float64)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            plus = evaluate()
            flat[j] = old - eps
            minus = evaluate()
            flat[j] = old
            g[j] = np.sum((plus - minus) * seed) / (2 * eps)
        grads.append(g.reshape(arrays[i].shape))
    return seed, grads


def gradcheck(fn, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compares analytic gradients of ``fn`` with float64 central finite differences.

    ``inputs`` is a tensor or a sequence of tensors; those with ``requires_grad`` are checked
    (every floating input when none has it). Each is copied to a float64 leaf, ``fn`` is run on
    the copies, and ``backward`` with a random seed gives the analytic vector-Jacobian product.
    Returns True, or raises AssertionError naming the input and the worst element.
    """
    inputs = _as_list(inputs)
    wrt = _wrt(inputs)
    xs = _float64_leaves(inputs, wrt, True)
    out = fn(*xs)
    seed, num = numerical_grad(fn, inputs, eps)
    out.backward(Tensor(seed, dtype=out.dtype))
    for i, n in zip(wrt, num):
        g = xs[i].grad
        a = np.zeros_like(n) if g is None else np.asarray(g.detach().to(float64).numpy(), dtype=np.float64)
        if a.shape != n.shape or not np.allclose(a, n, atol=atol, rtol=rtol):
            if not raise_exception:
                return False
            if a.shape != n.shape:
                raise AssertionError(f"[gradcheck] input {i}: gradient shape {a.shape} != input shape {n.shape}")
            worst = np.unravel_index(np.argmax(np.abs(a - n)), a.shape) if a.ndim else ()
            raise AssertionError(f"[gradcheck] input {i}: analytic {a[worst]} vs numerical {n[worst]} at {worst}")
    return True


__all__ = ["assert_allclose", "assert_close", "gradcheck", "make_tensor", "numerical_grad"]
