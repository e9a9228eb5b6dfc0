r"""Running a module with other parameters and buffers, as ``torch.func.functional_call`` (also
``torch.nn.utils.stateless.functional_call``).

The given tensors take the place of the module's own for one call and are swapped back afterwards,
so the module is unchanged and gradients flow to the given tensors.
"""

from __future__ import annotations

from collections.abc import Mapping

from sneppx_core import Tensor

_MISSING = object()


def _merge(dicts) -> dict:
    if isinstance(dicts, Mapping):
        return dict(dicts)
    if not isinstance(dicts, (tuple, list)) or not all(isinstance(d, Mapping) for d in dicts):
        raise TypeError(f"[functional_call] expected a dict or a tuple of dicts of tensors, got {type(dicts).__name__}")
    merged: dict = {}
    for d in dicts:
        repeated = sorted(set(merged) & set(d))
        if repeated:
            raise ValueError(f"[functional_call] {repeated} appeared in multiple dictionaries; behavior of "
                             "functional call is ambiguous")
        merged.update(d)
    return merged


def _untie(module, given: dict) -> dict:
    """Gives every name of a tied (shared) tensor the value given for any one of its names."""
    groups: dict = {}
    for name, t in list(module.named_parameters(remove_duplicate=False)) + list(
            module.named_buffers(remove_duplicate=False)):
        groups.setdefault(id(t), set()).add(name)
    out = dict(given)
    for names in groups.values():
        named = sorted(names & set(given))
        if len(names) < 2 or not named:
            continue
        if len({id(given[n]) for n in named}) > 1:
            raise ValueError(f"[functional_call] got multiple values for keys {sorted(names)}, which are tied; "
                             "pass tie_weights=False to give them different values")
        out.update({n: given[named[0]] for n in names})
    return out


def _check_strict(module, given: dict) -> None:
    slots = {n for n, _ in module.named_parameters(remove_duplicate=False)}
    slots |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
    errors = []
    unexpected, missing = sorted(set(given) - slots), sorted(slots - set(given))
    if unexpected:
        errors.append("Unexpected key(s): " + ", ".join(map(repr, unexpected)) + ".")
    if missing:
        errors.append("Missing key(s): " + ", ".join(map(repr, missing)) + ".")
    if errors:
        raise RuntimeError(f"[functional_call] Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                           + "\n\t".join(errors))


def _swap(module, key: str, tensor):
    """Puts ``tensor`` (or removes it, for ``_MISSING``) at ``key``; returns what was there."""
    prefix, _, name = key.rpartition(".")
    owner = module.get_submodule(prefix)
    for store in ("_parameters", "_buffers"):
        registry = getattr(owner, store)
        if name in registry:
            old = registry[name]
            if tensor is _MISSING:
                del registry[name]
            else:
                registry[name] = tensor
            return old
    old = getattr(owner, name, _MISSING)
    if old is not _MISSING and not isinstance(old, Tensor):
        raise TypeError(f"[functional_call] attribute {key!r} of {type(owner).__name__} is not a Tensor")
    if tensor is not _MISSING:
        setattr(owner, name, tensor)
    elif old is not _MISSING:
        delattr(owner, name)
    return old


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights: bool = True,
                    strict: bool = False):
    r"""Calls ``module(*args, **kwargs)`` with the parameters and buffers named (as in ``state_dict``) in
    ``parameter_and_buffer_dicts`` (a dict, or a tuple of dicts with distinct keys) in place of the
    module's own, then puts the module's own back: the module is unchanged, gradients flow to the
    given tensors, and in-place updates during the call (batch-norm running statistics) go to the
    given buffers. Names left out keep the module's tensors (``strict=True`` raises RuntimeError on
    missing or unexpected names). With ``tie_weights``, a value given for one name of a shared tensor
    is used for all its names. ``args`` that is not a tuple is passed as the single argument.
    Returns the module's output."""
    given = _merge(parameter_and_buffer_dicts)
    for key, value in given.items():
        if not isinstance(value, Tensor):
            raise TypeError(f"[functional_call] the value for {key!r} is a {type(value).__name__}, not a Tensor")
    if tie_weights:
        given = _untie(module, given)
    if strict:
        _check_strict(module, given)
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    saved = {}
    try:
        for key, value in given.items():
            saved[key] = _swap(module, key, value)
        return module(*args, **(kwargs or {}))
    finally:
        for key, old in reversed(list(saved.items())):
            now = _swap(module, key, old)
            if isinstance(parameter_and_buffer_dicts, dict) and key in parameter_and_buffer_dicts:
                parameter_and_buffer_dicts[key] = now


__all__ = ["functional_call"]
