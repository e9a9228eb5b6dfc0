"""Shared helpers for the sneppx-optim tests (imported as a module: unique name across packages)."""

import numpy as np
import sneppx_core as sx


def to_np(t):
    """A float64 NumPy copy of a Tensor."""
    return np.array(t.detach().numpy(), dtype=np.float64)


def make_params(shapes, seed=0, dtype=np.float32):
    """Leaf tensors (requires_grad) with N(0, 1) values, and their NumPy float64 copies."""
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s) for s in shapes]
    params = [sx.Tensor(a.astype(dtype), requires_grad=True) for a in arrays]
    return params, [a.astype(dtype).astype(np.float64) for a in arrays]


def grad_sequence(shapes, steps, seed=1, dtype=np.float32):
    """``steps`` lists of random gradients (float64 arrays exactly representable in ``dtype``)."""
    rng = np.random.default_rng(seed)
    return [[rng.standard_normal(s).astype(dtype).astype(np.float64) for s in shapes] for _ in range(steps)]


def set_grads(params, grads, dtype=np.float32):
    """Assigns ``grads`` (NumPy arrays) as the ``.grad`` of ``params``."""
    for p, g in zip(params, grads):
        p.grad = sx.Tensor(g.astype(dtype))


def step_with(params, opt, grads):
    """One ``opt.step()`` per entry of ``grads`` (lists of NumPy arrays set as the ``.grad`` of ``params``)."""
    for g in grads:
        set_grads(params, g)
        opt.step()


def stepped(cls, kwargs, shapes, grads):
    """Fresh parameters of ``shapes`` (``make_params``) and ``cls(params, **kwargs)`` stepped through ``grads``."""
    params, _ = make_params(shapes)
    opt = cls(params, **kwargs)
    step_with(params, opt, grads)
    return params, opt


def rel_err(a, b):
    """max |a - b| / max |b|: the error relative to the reference's scale."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


class TinyModel:
    """y = x @ w + b, written with core ops; the parameter interface the Trainer expects."""

    def __init__(self, n_in=3, n_out=2, seed=0):
        rng = np.random.default_rng(seed)
        self.w = sx.Tensor(rng.standard_normal((n_in, n_out)).astype(np.float32) * 0.5, requires_grad=True)
        self.b = sx.Tensor(np.zeros(n_out, dtype=np.float32), requires_grad=True)
        self.training = True

    def __call__(self, x):
        return x @ self.w + self.b

    def parameters(self):
        return [self.w, self.b]

    def state_dict(self):
        return {"w": self.w.detach(), "b": self.b.detach()}

    def load_state_dict(self, state):
        with sx.no_grad():
            self.w.copy_(state["w"])
            self.b.copy_(state["b"])

    def train(self):
        self.training = True

    def eval(self):
        self.training = False


def mse(pred, target):
    """Mean squared error with core ops."""
    d = pred - target
    return (d * d).mean()
