"""State handling behind ``Module``: state_dict, load_state_dict, to and zero_grad."""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping

import numpy as np
import sneppx_core as sx
from sneppx_core import Dtype, Tensor

from .parameter import Parameter, _rebuild_parameter

IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])
IncompatibleKeys.__doc__ = "What ``load_state_dict`` returns: the missing and the unexpected keys."

_DTYPE_NAMES = {"float32", "float64", "float16", "bfloat16", "int32", "int64", "bool", "uint8", "int8", "int16"}
_FLOATING = {sx.float32, sx.float64, sx.float16, sx.bfloat16}


def state_dict(module, destination, prefix: str, keep_vars: bool):
    """Collects parameters and persistent buffers of ``module`` and its descendants."""
    if destination is None:
        destination = OrderedDict()
    for name, p in module._parameters.items():
        if p is not None:
            destination[prefix + name] = p if keep_vars else p.detach()
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent_buffers:
            destination[prefix + name] = b if keep_vars else b.detach()
    for name, m in module._modules.items():
        if m is not None:
            state_dict(m, destination, prefix + name + ".", keep_vars)
    return destination


def _slots(module, prefix: str = "", out=None) -> dict:
    """Qualified name -> (owning module, store name, attribute) for every loadable tensor."""
    out = {} if out is None else out
    for name, p in module._parameters.items():
        if p is not None:
            out[prefix + name] = (module, "_parameters", name)
    for name, b in module._buffers.items():
        if b is not None and name not in module._non_persistent_buffers:
            out[prefix + name] = (module, "_buffers", name)
    for name, m in module._modules.items():
        if m is not None:
            _slots(m, prefix + name + ".", out)
    return out


def _as_tensor(value, key: str) -> Tensor:
    if isinstance(value, Tensor):
        return value.detach()
    if isinstance(value, np.ndarray):
        return Tensor(np.ascontiguousarray(value).reshape(value.shape))  # ascontiguousarray makes 0-d arrays 1-d
    kind = f"{type(value).__module__}.{type(value).__qualname__}"
    hint = " (a PyTorch tensor: pass value.numpy(), or save it and read the file with sneppx_core.load)" \
        if kind.startswith("torch.") else ""
    raise TypeError(f"[load_state_dict] value for {key!r} must be a Tensor or NumPy array, got {kind}{hint}")


def _run_pre_hooks(module, state: dict, strict: bool, missing: list, unexpected: list, errors: list) -> None:
    """Each module's load_state_dict pre-hooks, with its prefix, on the (copied, mutable) ``state``."""
    for prefix, sub in list(module.named_modules()):
        for hook, with_module in sub.__dict__.get("_load_state_dict_pre_hooks", {}).values():
            args = (state, prefix + "." if prefix else "", {}, strict, missing, unexpected, errors)
            hook(sub, *args) if with_module else hook(*args)


def load_state_dict(module, state, strict: bool, assign: bool = False) -> IncompatibleKeys:
    """Checks ``state`` against ``module`` and copies it in place, or with ``assign`` puts its tensors in place of
    the module's (see ``Module.load_state_dict``)."""
    if not isinstance(state, Mapping):
        raise TypeError(f"[load_state_dict] expected a mapping of names to tensors, got {type(state).__name__}")
    state, errors, hook_missing, hook_unexpected = OrderedDict(state), [], [], []
    _run_pre_hooks(module, state, strict, hook_missing, hook_unexpected, errors)
    for prefix, sub in list(module.named_modules()):
        materialize = getattr(sub, "_materialize_from", None)  # lazy layers take their size from the state
        if materialize is not None:
            materialize(state, prefix + "." if prefix else "")
    slots = _slots(module)
    missing = [k for k in slots if k not in state] + hook_missing
    unexpected = [k for k in state if k not in slots] + hook_unexpected
    pairs = []
    if strict and unexpected:
        errors.append("Unexpected key(s) in state_dict: " + ", ".join(repr(k) for k in unexpected) + ".")
    if strict and missing:
        errors.append("Missing key(s) in state_dict: " + ", ".join(repr(k) for k in missing) + ".")
    for key, (owner, store, name) in slots.items():
        if key not in state:
            continue
        value, target = _as_tensor(state[key], key), getattr(owner, store)[name]
        if target.ndim == 0 and tuple(value.shape) == (1,):  # PyTorch's backward compatibility: [x] loads into 0-d
            value = value[0]
        if tuple(value.shape) != tuple(target.shape):
            errors.append(f"size mismatch for {key}: copying a param with shape {tuple(value.shape)} from "
                          f"checkpoint, the shape in current model is {tuple(target.shape)}.")
        pairs.append((owner, store, name, target, value))
    if errors:
        raise RuntimeError(f"[load_state_dict] Error(s) in loading state_dict for {type(module).__name__}:\n\t"
                           + "\n\t".join(errors))
    _place(pairs, assign)
    result = IncompatibleKeys(missing, unexpected)
    for _, sub in list(module.named_modules()):
        for hook in list(sub.__dict__.get("_load_state_dict_post_hooks", {}).values()):
            hook(sub, result)
    return result


def _place(pairs: list, assign: bool) -> None:
    """Copies each checked value into its tensor, or with ``assign`` puts it in the tensor's place."""
    with sx.no_grad():
        for owner, store, name, target, value in pairs:
            if not assign:
                target.copy_(value.to(target.dtype))
            elif store == "_parameters":  # over the checkpoint tensor's memory, keeping requires_grad
                owner._parameters[name] = _rebuild_parameter(value, target.requires_grad)
            else:
                owner._buffers[name] = value


def _parse_to(args, kwargs):
    dtype, device = kwargs.pop("dtype", None), kwargs.pop("device", None)
    kwargs.pop("non_blocking", None)
    fmt = kwargs.pop("memory_format", None)  # a layout hint: accepted, parameters stay row-major (same values)
    if fmt is not None and not isinstance(fmt, sx.memory_format):
        raise TypeError(f"[Module.to] memory_format must be a sneppx_core.memory_format, got {fmt!r}")
    if kwargs:
        raise TypeError(f"[Module.to] unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            dtype, device = a.dtype, a.device
        elif isinstance(a, Dtype) or (isinstance(a, str) and a in _DTYPE_NAMES):
            dtype = a
        elif isinstance(a, (str, sx.Device)):
            device = a
        else:
            raise TypeError(f"[Module.to] expected a device, dtype or tensor, got {a!r}")
    if isinstance(dtype, str):
        dtype = getattr(sx, dtype)
    if dtype is not None and dtype not in _FLOATING:
        raise TypeError(f"[Module.to] only floating-point dtypes are accepted, got {dtype!r}")
    return dtype, device


def _convert(t: Tensor, dtype, device) -> Tensor:
    if device is not None:
        t = t.to(device)
    if dtype is not None and t.dtype in _FLOATING:
        t = t.to(dtype)
    return t


def module_to(module, args, kwargs):
    """Implements ``Module.to``: replaces changed parameters by new Parameters, converts buffers."""
    dtype, device = _parse_to(args, dict(kwargs))
    done = {}
    for m in module.modules():
        for name, p in m._parameters.items():
            if p is None:
                continue
            if id(p) not in done:
                new = _convert(p.detach(), dtype, device)
                if new.dtype == p.dtype and new.device == p.device:
                    done[id(p)] = p
                else:
                    q = Parameter(new, p.requires_grad)
                    if p.grad is not None:
                        q.grad = _convert(p.grad, dtype, device)
                    done[id(p)] = q
            m._parameters[name] = done[id(p)]
        for name, b in m._buffers.items():
            if b is not None:
                m._buffers[name] = _convert(b, dtype, device)
    return module


def module_to_empty(module, device, recurse: bool):
    """Implements ``Module.to_empty``: every parameter and buffer becomes an uninitialised tensor of its
    shape, dtype and strides on ``device`` (parameters new Parameters, tied ones staying tied)."""
    done = {}
    for m in module.modules() if recurse else [module]:
        for name, p in m._parameters.items():
            if p is not None:
                if id(p) not in done:
                    done[id(p)] = Parameter(sx.empty_like(p.detach(), device=device), p.requires_grad)
                m._parameters[name] = done[id(p)]
        for name, b in m._buffers.items():
            if b is not None:
                m._buffers[name] = sx.empty_like(b, device=device)
    return module


def zero_grad(module, set_to_none: bool) -> None:
    """Implements ``Module.zero_grad``."""
    for p in module.parameters():
        if p.grad is None:
            continue
        if set_to_none:
            p.grad = None
        else:
            g = p.grad
            with sx.no_grad():
                g.zero_()
            p.grad = g
