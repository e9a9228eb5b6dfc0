"""``torch.nn.utils.prune``: pruning a module's tensor by a mask, as PyTorch does it.

Pruning parameter ``name`` moves it to ``<name>_orig`` (still the parameter the optimizer trains), adds
the buffer ``<name>_mask`` (1 keeps an entry, 0 prunes it) and makes ``module.<name>`` a plain tensor,
``<name>_orig * <name>_mask``, recomputed by a forward pre-hook (the pruning method itself) before every
forward; the state_dict keys are PyTorch's. Pruning the same tensor again prunes among the entries still
kept (a :class:`PruningContainer` combines the masks). :func:`remove` makes the pruning permanent.
"""

from __future__ import annotations

import numbers

import sneppx_core as sx


def _check_amount(amount) -> None:
    if isinstance(amount, bool) or not isinstance(amount, numbers.Real):
        raise TypeError(f"[prune] amount must be an int or a float, got {type(amount).__name__}")
    if (isinstance(amount, numbers.Integral) and amount < 0) or (
            not isinstance(amount, numbers.Integral) and not 0.0 <= float(amount) <= 1.0):
        raise ValueError(f"[prune] amount={amount} should be a float in [0, 1] or a non-negative int")


def _to_prune(amount, size: int) -> int:
    """How many of ``size`` entries ``amount`` (a count, or a fraction rounded) prunes; ValueError when
    more than there are."""
    n = int(amount) if isinstance(amount, numbers.Integral) else round(float(amount) * size)
    if n > size:
        raise ValueError(f"[prune] amount={amount} should be smaller than the number of parameters to prune ({size})")
    return n


def _check_structured(t, dim: int) -> int:
    if t.ndim <= 1:
        raise ValueError(f"[prune] structured pruning needs a tensor of at least 2 dims, got shape {tuple(t.shape)}")
    if not -t.ndim <= dim < t.ndim:
        raise IndexError(f"[prune] dim {dim} is out of range for a tensor of shape {tuple(t.shape)}")
    return dim % t.ndim


def _channel_mask(t, dim: int, keep):
    """Zeros like ``t`` with ones along ``dim`` at ``keep`` (indices or a bool vector)."""
    mask = sx.zeros_like(t)
    index = [slice(None)] * t.ndim
    index[dim] = keep
    mask[tuple(index)] = 1
    return mask


class BasePruningMethod:
    """A pruning method: ``compute_mask(t, default_mask)`` gives the new mask. An instance is the forward
    pre-hook that recomputes the pruned tensor; ``apply`` prunes a module's tensor with it."""

    PRUNING_TYPE = "unstructured"  # "unstructured", "structured" (whole slices along dim) or "global"
    _tensor_name: str | None = None

    def __call__(self, module, inputs):
        setattr(module, self._tensor_name, self.apply_mask(module))

    def compute_mask(self, t, default_mask):
        """The mask for tensor ``t`` (importance scores) given the mask so far."""
        raise NotImplementedError(f"[prune] {type(self).__name__} does not define compute_mask")

    def apply_mask(self, module):
        """``<name>_orig * <name>_mask`` of ``module``."""
        if self._tensor_name is None:
            raise ValueError("[prune] the method has not been applied to a tensor")
        orig = getattr(module, self._tensor_name + "_orig")
        return getattr(module, self._tensor_name + "_mask").to(orig.dtype) * orig

    @classmethod
    def apply(cls, module, name: str, *args, importance_scores=None, **kwargs):
        """Prunes ``module.<name>`` with ``cls(*args, **kwargs)`` (combined with an earlier pruning of it)."""
        hooks = module._forward_pre_hooks
        old = [(k, h) for k, h in hooks.items() if isinstance(h, BasePruningMethod) and h._tensor_name == name]
        if len(old) > 1:
            raise RuntimeError(f"[prune] {name!r} of {type(module).__name__} has {len(old)} pruning hooks")
        method = cls(*args, **kwargs)
        method._tensor_name = name
        if old:
            del hooks[old[0][0]]
            container = old[0][1] if isinstance(old[0][1], PruningContainer) else PruningContainer(old[0][1])
            container.add_pruning_method(method)
            method = container
        orig = getattr(module, name)
        if importance_scores is None:
            importance_scores = orig
        elif tuple(importance_scores.shape) != tuple(orig.shape):
            raise ValueError(f"[prune] importance_scores of shape {tuple(importance_scores.shape)} do not match "
                             f"{name!r} of shape {tuple(orig.shape)}")
        first = not old
        if first:
            module.register_parameter(name + "_orig", orig)
            del module._parameters[name]
            default_mask = sx.ones_like(orig)
        else:
            default_mask = getattr(module, name + "_mask").detach().clone()
        try:
            mask = method.compute_mask(importance_scores.detach(), default_mask=default_mask)
            module.register_buffer(name + "_mask", mask)
            setattr(module, name, method.apply_mask(module))
            module.register_forward_pre_hook(method)
        except Exception:
            if first:
                module.register_parameter(name, module._parameters.pop(name + "_orig"))
            raise
        return method

    def prune(self, t, default_mask=None, importance_scores=None):
        """``t`` times the mask computed from ``importance_scores`` (default ``t``)."""
        scores = t if importance_scores is None else importance_scores
        return t * self.compute_mask(scores, sx.ones_like(t) if default_mask is None else default_mask)

    def remove(self, module) -> None:
        """Makes the pruning permanent: ``<name>`` becomes the parameter again, holding the pruned values,
        and ``<name>_orig`` and ``<name>_mask`` go."""
        if self._tensor_name is None:
            raise ValueError("[prune] the method has not been applied to a tensor")
        weight = self.apply_mask(module)
        if self._tensor_name in module.__dict__:
            del module.__dict__[self._tensor_name]
        orig = module._parameters.pop(self._tensor_name + "_orig")
        orig.data = weight.detach()
        del module._buffers[self._tensor_name + "_mask"]
        module.register_parameter(self._tensor_name, orig)


class PruningContainer(BasePruningMethod):
    """The pruning methods applied, in order, to one tensor: each later one prunes among the entries (or,
    structured, the slices) the earlier ones kept."""

    def __init__(self, *args):
        self._pruning_methods: tuple = ()
        if len(args) == 1 and not isinstance(args[0], BasePruningMethod):
            args = tuple(args[0])
        for method in args:
            self.add_pruning_method(method)

    def add_pruning_method(self, method) -> None:
        """Appends ``method`` (it must prune the same tensor)."""
        if not isinstance(method, BasePruningMethod):
            raise TypeError(f"[prune] {type(method).__name__} is not a pruning method")
        if self._tensor_name is None:
            self._tensor_name = method._tensor_name
        elif method._tensor_name != self._tensor_name:
            raise ValueError(f"[prune] a container for {self._tensor_name!r} cannot take a method for "
                             f"{method._tensor_name!r}")
        self._pruning_methods += (method,)

    def __len__(self):
        return len(self._pruning_methods)

    def __iter__(self):
        return iter(self._pruning_methods)

    def __getitem__(self, i):
        return self._pruning_methods[i]

    def compute_mask(self, t, default_mask):
        """The last method's mask over what ``default_mask`` still keeps."""
        method = self._pruning_methods[-1]
        mask = default_mask.to(t.dtype)
        if method.PRUNING_TYPE == "unstructured":
            keep = default_mask == 1
        elif method.PRUNING_TYPE == "structured":
            dim = _check_structured(t, method.dim)
            others = [d for d in range(t.ndim) if d != dim]
            keep = [slice(None)] * t.ndim
            keep[dim] = default_mask.sum(dim=others) != 0
            keep = tuple(keep)
        elif method.PRUNING_TYPE == "global":
            keep = tuple([slice(None)] * t.ndim)
        else:
            raise ValueError(f"[prune] unknown PRUNING_TYPE {method.PRUNING_TYPE!r}")
        mask[keep] = method.compute_mask(t[keep], default_mask=default_mask[keep]).to(mask.dtype)
        return mask


class Identity(BasePruningMethod):
    """Prunes nothing (the mask is all ones)."""

    def compute_mask(self, t, default_mask):
        """The mask so far, unchanged."""
        return default_mask

    @classmethod
    def apply(cls, module, name):  # noqa: D102
        return super().apply(module, name)


class _Unstructured(BasePruningMethod):
    """Prunes ``amount`` (a count, or a fraction) of the entries: those whose ``_scores`` rank first."""

    def __init__(self, amount):
        _check_amount(amount)
        self.amount = amount

    def compute_mask(self, t, default_mask):
        """Zeros at the ``amount`` entries that ``_scores(t)`` ranks first."""
        n = _to_prune(self.amount, t.numel())
        mask = default_mask.clone()
        if n:
            scores, largest = self._scores(t)
            mask.view(-1)[sx.topk(scores, n, largest=largest).indices] = 0
        return mask


class RandomUnstructured(_Unstructured):
    """Prunes ``amount`` (a count, or a fraction) of the entries, chosen at random."""

    @staticmethod
    def _scores(t):
        return sx.rand(t.numel()), True

    @classmethod
    def apply(cls, module, name, amount):  # noqa: D102
        return super().apply(module, name, amount=amount)


class L1Unstructured(_Unstructured):
    """Prunes ``amount`` (a count, or a fraction) of the entries, those of the smallest absolute value."""

    @staticmethod
    def _scores(t):
        return t.abs().reshape(-1), False

    @classmethod
    def apply(cls, module, name, amount, importance_scores=None):  # noqa: D102
        return super().apply(module, name, amount=amount, importance_scores=importance_scores)


class _Structured(BasePruningMethod):
    """Prunes ``amount`` (a count, or a fraction) of the slices along ``dim``: all but those ``_keep`` picks."""

    PRUNING_TYPE = "structured"

    def compute_mask(self, t, default_mask):
        """Zeros over the ``amount`` slices along ``dim`` that ``_keep`` leaves out."""
        dim = _check_structured(t, self.dim)
        size = t.shape[dim]
        n = _to_prune(self.amount, size)
        if n == 0:
            return default_mask
        mask = _channel_mask(t, dim, self._keep(t, dim, size, n))
        return mask * default_mask.to(mask.dtype)


class RandomStructured(_Structured):
    """Prunes ``amount`` of the slices along ``dim`` (channels), chosen at random."""

    def __init__(self, amount, dim: int = -1):
        _check_amount(amount)
        self.amount, self.dim = amount, dim

    @staticmethod
    def _keep(t, dim, size, n):
        prob = sx.rand(size)
        return prob > sx.kthvalue(prob, n).values

    @classmethod
    def apply(cls, module, name, amount, dim=-1):  # noqa: D102
        return super().apply(module, name, amount=amount, dim=dim)


class LnStructured(_Structured):
    """Prunes ``amount`` of the slices along ``dim``, those of the smallest ``n``-norm (``"fro"``: 2)."""

    def __init__(self, amount, n, dim: int = -1):
        _check_amount(amount)
        self.amount, self.n, self.dim = amount, n, dim

    def _keep(self, t, dim, size, n):
        others = [d for d in range(t.ndim) if d != dim]
        norms = sx.linalg.vector_norm(t, ord=2 if self.n == "fro" else self.n, dim=others)
        return sx.topk(norms, size - n, largest=True).indices

    @classmethod
    def apply(cls, module, name, amount, n, dim, importance_scores=None):  # noqa: D102
        return super().apply(module, name, amount=amount, n=n, dim=dim, importance_scores=importance_scores)


class CustomFromMask(BasePruningMethod):
    """Prunes by a given mask."""

    PRUNING_TYPE = "global"

    def __init__(self, mask):
        self.mask = mask

    def compute_mask(self, t, default_mask):
        """``default_mask`` times the given mask."""
        if tuple(default_mask.shape) != tuple(self.mask.shape):
            raise ValueError(f"[prune] the mask of shape {tuple(self.mask.shape)} does not match the tensor's "
                             f"{tuple(default_mask.shape)}")
        return default_mask * self.mask.to(default_mask.dtype)

    @classmethod
    def apply(cls, module, name, mask):  # noqa: D102
        return super().apply(module, name, mask=mask)


def identity(module, name: str):
    """Prunes nothing, but sets up ``<name>_orig``, ``<name>_mask`` and the hook; returns ``module``."""
    Identity.apply(module, name)
    return module


def random_unstructured(module, name: str, amount):
    """Prunes ``amount`` random entries of ``module.<name>``; returns ``module``."""
    RandomUnstructured.apply(module, name, amount)
    return module


def l1_unstructured(module, name: str, amount, importance_scores=None):
    """Prunes the ``amount`` entries of ``module.<name>`` of smallest absolute value (of
    ``importance_scores`` when given); returns ``module``."""
    L1Unstructured.apply(module, name, amount=amount, importance_scores=importance_scores)
    return module


def random_structured(module, name: str, amount, dim: int):
    """Prunes ``amount`` random slices of ``module.<name>`` along ``dim``; returns ``module``."""
    RandomStructured.apply(module, name, amount, dim)
    return module


def ln_structured(module, name: str, amount, n, dim: int, importance_scores=None):
    """Prunes the ``amount`` slices of ``module.<name>`` along ``dim`` of smallest ``n``-norm; returns ``module``."""
    LnStructured.apply(module, name, amount, n, dim, importance_scores=importance_scores)
    return module


def custom_from_mask(module, name: str, mask):
    """Prunes ``module.<name>`` where ``mask`` is 0; returns ``module``."""
    CustomFromMask.apply(module, name, mask)
    return module


def global_unstructured(parameters, pruning_method, importance_scores=None, **kwargs) -> None:
    """Prunes the ``(module, name)`` tensors of ``parameters`` together: ``pruning_method(**kwargs)``
    (an unstructured method, e.g. ``L1Unstructured`` with ``amount``) ranks all their entries at once."""
    parameters = list(parameters)
    scores = importance_scores or {}
    flat = sx.cat([scores.get((m, n), getattr(m, n)).detach().reshape(-1) for m, n in parameters])
    masks = sx.cat([getattr(m, n + "_mask", None).reshape(-1) if hasattr(m, n + "_mask")
                    else sx.ones(getattr(m, n).numel(), dtype=getattr(m, n).dtype) for m, n in parameters])
    method = pruning_method(**kwargs)
    if method.PRUNING_TYPE != "unstructured":
        raise TypeError(f"[global_unstructured] needs an unstructured pruning method, got {pruning_method.__name__} "
                        f"({method.PRUNING_TYPE})")
    method._tensor_name = "temp"
    container = PruningContainer(method)
    final = container.compute_mask(flat, masks)
    start = 0
    for m, n in parameters:
        p = getattr(m, n)
        custom_from_mask(m, n, mask=final[start:start + p.numel()].reshape(p.shape))
        start += p.numel()


def remove(module, name: str):
    """Makes the pruning of ``module.<name>`` permanent (see ``BasePruningMethod.remove``); returns ``module``."""
    for k, hook in list(module._forward_pre_hooks.items()):
        if isinstance(hook, BasePruningMethod) and hook._tensor_name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"[prune.remove] parameter {name!r} of {type(module).__name__} has to be pruned before the "
                     "pruning can be removed")


def is_pruned(module) -> bool:
    """True when ``module`` or a submodule has a pruned tensor."""
    return any(isinstance(h, BasePruningMethod) for m in module.modules() for h in m._forward_pre_hooks.values())


__all__ = ["BasePruningMethod", "PruningContainer", "Identity", "RandomUnstructured", "L1Unstructured",
           "RandomStructured", "LnStructured", "CustomFromMask", "identity", "random_unstructured", "l1_unstructured",
           "random_structured", "ln_structured", "custom_from_mask", "global_unstructured", "remove", "is_pruned"]
