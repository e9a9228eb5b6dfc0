"""``kl_divergence(p, q)`` and ``register_kl``: the KL divergence between two distributions, looked up by type.

Implementations for pairs of distribution classes are registered with ``@register_kl(TypeP, TypeQ)``; a call
uses the most specific registered pair for the arguments' classes (by their method resolution orders), as
``torch.distributions.kl`` does. The closed forms PyTorch registers live in ``_kl_pairs``, which the package
imports after the family modules (this module is imported before them).
"""

from __future__ import annotations

import functools
import warnings

_KL_REGISTRY: dict = {}  # (type_p, type_q) -> function
_KL_MEMOIZE: dict = {}  # (type_p, type_q) -> function, the lookup's cache


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as the KL divergence of ``type_p`` instances from ``type_q`` ones."""
    from .distribution import Distribution

    if not isinstance(type_p, type) or not issubclass(type_p, Distribution):
        raise TypeError(f"Expected type_p to be a Distribution subclass but got {type_p}")
    if not isinstance(type_q, type) or not issubclass(type_q, Distribution):
        raise TypeError(f"Expected type_q to be a Distribution subclass but got {type_q}")

    def decorator(fun):
        """Registers ``fun`` and returns it unchanged."""
        _KL_REGISTRY[type_p, type_q] = fun
        _KL_MEMOIZE.clear()  # reset since lookup order may have changed
        return fun

    return decorator


@functools.total_ordering
class _Match:
    __slots__ = ["types"]

    def __init__(self, *types):
        self.types = types

    def __eq__(self, other):
        return self.types == other.types

    def __le__(self, other):
        for x, y in zip(self.types, other.types):
            if not issubclass(x, y):
                return False
            if x is not y:
                break
        return True


def _dispatch_kl(type_p, type_q):
    """The most specific registered implementation for (type_p, type_q), or NotImplemented."""
    matches = [(super_p, super_q) for super_p, super_q in _KL_REGISTRY
               if issubclass(type_p, super_p) and issubclass(type_q, super_q)]
    if not matches:
        return NotImplemented
    left_p, left_q = min(_Match(*m) for m in matches).types
    right_q, right_p = min(_Match(*reversed(m)) for m in matches).types
    left_fun = _KL_REGISTRY[left_p, left_q]
    right_fun = _KL_REGISTRY[right_p, right_q]
    if left_fun is not right_fun:
        warnings.warn(f"Ambiguous kl_divergence({type_p.__name__}, {type_q.__name__}). Please register_kl"
                      f"({left_p.__name__}, {right_q.__name__})", RuntimeWarning)
    return left_fun


def kl_divergence(p, q):
    """``KL(p || q) = E_p[log p(x) - log q(x)]``, of shape ``batch_shape``; NotImplementedError when no
    implementation is registered for the pair of types."""
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(f"No KL(p || q) is implemented for p type {p.__class__.__name__} and q type "
                                  f"{q.__class__.__name__}")
    return fun(p, q)


_KL_DOC = kl_divergence.__doc__


def _add_kl_info():
    """Lists the registered pairs at the end of ``kl_divergence``'s docstring (called once they are loaded)."""
    if not _KL_DOC:  # docstrings stripped (python -OO)
        return
    rows = ["KL divergence is implemented for the following distribution pairs:"]
    rows += [f"* {p.__name__} and {q.__name__}"
             for p, q in sorted(_KL_REGISTRY, key=lambda pq: (pq[0].__name__, pq[1].__name__))]
    kl_divergence.__doc__ = _KL_DOC + "\n\n    " + "\n    ".join(rows) + "\n"


__all__ = ["register_kl", "kl_divergence"]
