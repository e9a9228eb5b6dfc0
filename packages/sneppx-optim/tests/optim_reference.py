"""Float64 NumPy implementations of the update rules, written from the papers / PyTorch docs."""

import numpy as np


def sgd(params, grad_seq, lr, momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0, maximize=False):
    """SGD with momentum (PyTorch's formulation: the first step's buffer is the gradient)."""
    p = [a.copy() for a in params]
    buf = [None] * len(p)
    for grads in grad_seq:
        for i, g in enumerate(grads):
            g = -g if maximize else g
            g = g + weight_decay * p[i]
            if momentum:
                buf[i] = g.copy() if buf[i] is None else momentum * buf[i] + (1 - dampening) * g
                g = g + momentum * buf[i] if nesterov else buf[i]
            p[i] = p[i] - lr * g
    return p


def adam(params, grad_seq, lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, decoupled=False,
         maximize=False):
    """Adam (Kingma & Ba 2015) / AdamW (Loshchilov & Hutter 2019), AMSGrad (Reddi et al. 2018)."""
    b1, b2 = betas
    p = [a.copy() for a in params]
    m = [np.zeros_like(a) for a in p]
    v = [np.zeros_like(a) for a in p]
    vmax = [np.zeros_like(a) for a in p]
    for t, grads in enumerate(grad_seq, start=1):
        for i, g in enumerate(grads):
            g = -g if maximize else g
            if decoupled:
                p[i] = p[i] * (1 - lr * weight_decay)
            else:
                g = g + weight_decay * p[i]
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            vmax[i] = np.maximum(vmax[i], v[i])
            vv = vmax[i] if amsgrad else v[i]
            denom = np.sqrt(vv / (1 - b2 ** t)) + eps
            p[i] = p[i] - lr / (1 - b1 ** t) * m[i] / denom
    return p


def lion(params, grad_seq, lr, betas=(0.9, 0.99), weight_decay=0.0):
    """Lion, Algorithm 2 of Chen et al. 2023 ("Symbolic Discovery of Optimization Algorithms")."""
    b1, b2 = betas
    p = [a.copy() for a in params]
    m = [np.zeros_like(a) for a in p]
    for grads in grad_seq:
        for i, g in enumerate(grads):
            update = np.sign(b1 * m[i] + (1 - b1) * g) + weight_decay * p[i]
            p[i] = p[i] - lr * update
            m[i] = b2 * m[i] + (1 - b2) * g
    return p


def lamb(params, grad_seq, lr, betas=(0.9, 0.999), eps=1e-6, weight_decay=0.0):
    """LAMB, Algorithm 2 of You et al. 2019 ("Large Batch Optimization for Deep Learning"), phi = identity."""
    b1, b2 = betas
    p = [a.copy() for a in params]
    m = [np.zeros_like(a) for a in p]
    v = [np.zeros_like(a) for a in p]
    for t, grads in enumerate(grad_seq, start=1):
        for i, g in enumerate(grads):
            m[i] = b1 * m[i] + (1 - b1) * g
            v[i] = b2 * v[i] + (1 - b2) * g * g
            r = (m[i] / (1 - b1 ** t)) / (np.sqrt(v[i] / (1 - b2 ** t)) + eps)
            u = r + weight_decay * p[i]
            pn, un = np.linalg.norm(p[i]), np.linalg.norm(u)
            trust = pn / un if pn > 0 and un > 0 else 1.0
            p[i] = p[i] - lr * trust * u
    return p
