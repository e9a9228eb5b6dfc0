"""Fused optimizer steps of ``sneppx_core.functional``.

Each call updates a whole list of parameters in place in one C++ pass, outside autograd, and bumps
every written tensor's version counter. All tensors must be contiguous float32/float64 CPU tensors,
each with its parameter's shape and dtype (TypeError / ValueError otherwise). Work is split into
ranges of all tensors and spread over the thread pool.
"""

from __future__ import annotations

from ._backend import _C
from ._C_face import Tensor

_nn = _C._nn


def sgd_step(params, grads, momentum_buffers, *, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0,
             maximize=False, first_step=False):
    """One step of SGD (torch.optim.SGD semantics) for every parameter.

    g = -grad if maximize else grad;  g = g + weight_decay * p
    if momentum != 0:  b = g on the first step (``first_step=True``), else b = momentum * b + (1 - dampening) * g;
                       g = g + momentum * b if nesterov else b
    p = p - lr * g
    ``momentum_buffers`` (same shapes) are read and written only when momentum != 0.
    """
    _nn.sgd_step(params, grads, momentum_buffers, lr=float(lr), momentum=float(momentum), dampening=float(dampening),
                 nesterov=bool(nesterov), weight_decay=float(weight_decay), maximize=bool(maximize),
                 first_step=bool(first_step))


def adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, *, step, lr, beta1, beta2, eps,
              weight_decay=0.0, amsgrad=False, decoupled_weight_decay=False, maximize=False):
    """One step of Adam, or AdamW with ``decoupled_weight_decay=True`` (torch.optim semantics).

    ``step`` is the step count after the increment (1 on the first step).
    g = -grad if maximize else grad
    AdamW: p = p * (1 - lr * weight_decay);  Adam: g = g + weight_decay * p
    m = m + (1 - beta1) (g - m);  v = beta2 v + (1 - beta2) g^2
    amsgrad: vmax = max(vmax, v) and vmax replaces v below (``max_exp_avg_sqs`` may be None otherwise)
    p = p - lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
    """
    _nn.adam_step(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, step=int(step), lr=float(lr),
                  beta1=float(beta1), beta2=float(beta2), eps=float(eps), weight_decay=float(weight_decay),
                  amsgrad=bool(amsgrad), decoupled_weight_decay=bool(decoupled_weight_decay),
                  maximize=bool(maximize))


def lion_step(params, grads, exp_avgs, *, lr, beta1=0.9, beta2=0.99, weight_decay=0.0):
    """One step of Lion (Chen et al. 2023, "Symbolic Discovery of Optimization Algorithms").

    c = beta1 m + (1 - beta1) g;  p = p * (1 - lr * weight_decay) - lr * sign(c)
    m = beta2 m + (1 - beta2) g
    """
    _nn.lion_step(params, grads, exp_avgs, lr=float(lr), beta1=float(beta1), beta2=float(beta2),
                  weight_decay=float(weight_decay))


def lamb_step(params, grads, exp_avgs, exp_avg_sqs, *, step, lr, beta1=0.9, beta2=0.999, eps=1e-6,
              weight_decay=0.0):
    """One step of LAMB (You et al. 2019, "Large Batch Optimization for Deep Learning"), per tensor.

    m = beta1 m + (1 - beta1) g;  v = beta2 v + (1 - beta2) g^2
    r = (m / (1 - beta1^step)) / (sqrt(v / (1 - beta2^step)) + eps) + weight_decay * p
    p = p - lr * (||p|| / ||r||) * r, with the trust ratio ||p|| / ||r|| taken as 1 where either norm is 0.
    """
    _nn.lamb_step(params, grads, exp_avgs, exp_avg_sqs, step=int(step), lr=float(lr), beta1=float(beta1),
                  beta2=float(beta2), eps=float(eps), weight_decay=float(weight_decay))


def total_norm(tensors, norm_type=2.0):
    """The norm of all tensors taken together, as a 0-d float32 tensor.

    (sum over every element x of |x|^norm_type)^(1/norm_type), accumulated in float64;
    ``norm_type=inf`` gives max |x|. An empty list gives 0.
    """
    return _nn.total_norm(list(tensors), float(norm_type))


def scale_(tensors, factor):
    """Multiplies every tensor by ``factor`` (a number or a 0-d tensor) in place."""
    if isinstance(factor, Tensor):
        factor = factor.item()
    _nn.scale_(list(tensors), float(factor))
