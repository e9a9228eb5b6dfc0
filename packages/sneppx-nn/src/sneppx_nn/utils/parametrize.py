r"""Parametrizations of tensors in modules, as ``torch.nn.utils.parametrize``.

After ``register_parametrization(module, "weight", P)``, reading ``module.weight`` returns
``P(original)``, computed on each access (or once per :func:`cached` block). The unconstrained
tensor lives at ``module.parametrizations.weight.original`` (``original0``, ``original1``, ... when
``P.right_inverse`` returns several tensors), so ``state_dict`` keys become
``parametrizations.weight.original``. The module's class is replaced by a subclass named
``Parametrized<Class>`` holding the property; removing the last parametrization restores it.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence

import sneppx_core as sx
from sneppx_core import Tensor

from ..containers import ModuleDict, ModuleList
from ..parameter import Parameter

_cache_enabled = 0
_cache: dict = {}


@contextlib.contextmanager
def cached():
    """Context manager in which each parametrized tensor is computed at most once (the first read) and
    reused; the cache is emptied when the outermost ``cached()`` block exits."""
    global _cache_enabled
    _cache_enabled += 1
    try:
        yield
    finally:
        _cache_enabled -= 1
        if not _cache_enabled:
            _cache.clear()


def _register(module, name: str, tensor) -> None:
    if isinstance(tensor, Parameter):
        module.register_parameter(name, tensor)
    else:
        module.register_buffer(name, tensor)


def _store(original, new):
    """Writes ``new`` into ``original`` in place when the shapes agree; else returns a new tensor of the
    same kind (Parameter or plain) holding ``new``. Either way returns the tensor now holding it."""
    if tuple(new.shape) == tuple(original.shape):
        original.copy_(new)
        return original
    if isinstance(original, Parameter):
        return Parameter(new.detach().clone(), original.requires_grad)
    return new.detach().clone()


def _check(value, like, what: str) -> None:
    if not isinstance(value, Tensor):
        raise ValueError(f"[register_parametrization] {what} must return a Tensor, got {type(value).__name__}")
    if value.dtype != like.dtype or tuple(value.shape) != tuple(like.shape):
        raise ValueError(f"[register_parametrization] {what} changed the tensor from {tuple(like.shape)} "
                         f"{like.dtype} to {tuple(value.shape)} {value.dtype}; pass unsafe=True to allow it")


class ParametrizationList(ModuleList):
    """The parametrizations of one tensor, applied in order, with the unconstrained tensor(s) as
    ``original`` (or ``original0``, ``original1``, ...) and ``forward()`` giving the parametrized value."""

    def __init__(self, modules, original, unsafe: bool = False):
        if not modules:
            raise ValueError("[ParametrizationList] requires one or more modules")
        super().__init__(modules)
        self.unsafe = unsafe
        new = self._inverse(original, required=False)
        if not isinstance(new, (Tensor, Sequence)):
            raise ValueError(f"[register_parametrization] right_inverse must return a Tensor or a sequence of "
                             f"Tensors, got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            if new.dtype != original.dtype:
                raise ValueError(f"[register_parametrization] right_inverse may not change the dtype when it "
                                 f"returns one tensor: {original.dtype} -> {new.dtype}")
            with sx.no_grad():
                _register(self, "original", _store(original, new))
        else:
            for i, part in enumerate(new):
                if not isinstance(part, Tensor):
                    raise ValueError(f"[register_parametrization] element {i} of right_inverse's result is a "
                                     f"{type(part).__name__}, not a Tensor")
                part = part.detach()
                if isinstance(original, Parameter):
                    part = Parameter(part, original.requires_grad)
                _register(self, f"original{i}", part)
        if not unsafe:
            _check(self(), original, "the parametrization")

    def _inverse(self, value, required: bool):
        with sx.no_grad():
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        value = module.right_inverse(value)
                    except NotImplementedError:
                        if required:
                            raise
                elif required:
                    raise RuntimeError(f"[parametrize] parametrization {type(module).__name__} does not implement "
                                       "right_inverse")
        return value

    def right_inverse(self, value) -> None:
        """Sets the original tensor(s) so that the parametrized tensor becomes ``value``, by running each
        parametrization's ``right_inverse`` in reverse order (this is what ``module.<name> = value`` does)."""
        value = self._inverse(value, required=True)
        with sx.no_grad():
            if self.is_tensor:
                if not isinstance(value, Tensor) or value.dtype != self.original.dtype:
                    raise ValueError(f"[parametrize] right_inverse returned {_describe(value)}, expected a Tensor "
                                     f"of dtype {self.original.dtype}")
                _register(self, "original", _store(self.original, value))
                return
            if not isinstance(value, Sequence) or len(value) != self.ntensors:
                raise ValueError(f"[parametrize] right_inverse returned {_describe(value)}, expected a sequence "
                                 f"of {self.ntensors} tensors")
            for i, part in enumerate(value):
                old = getattr(self, f"original{i}")
                if not isinstance(part, Tensor) or part.dtype != old.dtype:
                    raise ValueError(f"[parametrize] element {i} of right_inverse's result is {_describe(part)}, "
                                     f"expected a Tensor of dtype {old.dtype}")
                _register(self, f"original{i}", _store(old, part))

    def forward(self):
        """The parametrized tensor: the parametrizations applied in turn to the original tensor(s)."""
        if self.is_tensor:
            x = self[0](self.original)
        else:
            x = self[0](*[getattr(self, f"original{i}") for i in range(self.ntensors)])
        for module in list(self)[1:]:
            x = module(x)
        return x


def _describe(value) -> str:
    return f"a Tensor of dtype {value.dtype}" if isinstance(value, Tensor) else f"a {type(value).__name__}"



def _deepcopy(self, memo):
    replica = self.__class__.__new__(self.__class__)
    memo[id(self)] = replica
    replica.__dict__.update(copy.deepcopy(self.__dict__, memo))
    return replica


def _getstate(self):
    raise RuntimeError("[parametrize] a parametrized module can only be serialised through state_dict(); "
                       "call remove_parametrizations() first to pickle it")


def _setattr(self, name, value):
    """Assigning to a parametrized name runs the parametrizations' right_inverse (the property setter)."""
    params = self.__dict__["_modules"].get("parametrizations")
    if params is not None and name in params._modules:
        object.__setattr__(self, name, value)
    else:
        type(self).__bases__[0].__setattr__(self, name, value)


def _inject_class(module) -> None:
    cls = module.__class__
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,),
                            {"__deepcopy__": _deepcopy, "__getstate__": _getstate, "__setattr__": _setattr,
                             "__doc__": f"{cls.__name__} with parametrized tensors (see sneppx_nn.utils.parametrize)."})


def _inject_property(module, name: str) -> None:
    def get(self):
        plist = self.parametrizations[name]
        if not _cache_enabled:
            return plist()
        key = (id(self), name)
        if key not in _cache:
            _cache[key] = plist()
        return _cache[key]

    def set_(self, value):
        self.parametrizations[name].right_inverse(value)

    setattr(module.__class__, name, property(get, set_, doc=f"The parametrized {name!r}."))


def register_parametrization(module, tensor_name: str, parametrization, *, unsafe: bool = False):
    """Parametrizes the parameter or buffer ``tensor_name`` of ``module`` by the module ``parametrization``:
    afterwards ``module.<tensor_name>`` reads as ``parametrization(original)``.

    If ``parametrization`` has ``right_inverse``, the original is initialised to
    ``right_inverse(current value)`` (several tensors when it returns a sequence), so the parametrized
    value starts where the tensor was; else the current value is the original. Registering on an
    already parametrized name appends to its chain. Unless ``unsafe``, the parametrized tensor must
    keep the dtype and shape. Returns ``module``."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            y = getattr(module, tensor_name)
            x = parametrization(y)
            _check(x, y, "the parametrization")
            if hasattr(parametrization, "right_inverse"):
                try:
                    _check(parametrization.right_inverse(x), y, "right_inverse")
                except NotImplementedError:
                    pass
        module.parametrizations[tensor_name].append(parametrization)
        module.parametrizations[tensor_name].unsafe |= unsafe
    elif tensor_name in module._parameters or tensor_name in module._buffers:
        plist = ParametrizationList([parametrization], getattr(module, tensor_name), unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = plist
    else:
        raise ValueError(f"[register_parametrization] {type(module).__name__} has no parameter, buffer or "
                         f"parametrized tensor named {tensor_name!r}")
    return module


def is_parametrized(module, tensor_name: str | None = None) -> bool:
    """True if ``module`` has a parametrization (on ``tensor_name``, when given)."""
    params = module.__dict__.get("_modules", {}).get("parametrizations")
    if not isinstance(params, ModuleDict):
        return False
    return len(params) > 0 if tensor_name is None else tensor_name in params._modules


def type_before_parametrizations(module) -> type:
    """The class ``module`` had before any parametrization was registered on it."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def remove_parametrizations(module, tensor_name: str, leave_parametrized: bool = True):
    """Removes the parametrizations of ``tensor_name``: it becomes a plain parameter (or buffer) again,
    holding the current parametrized value when ``leave_parametrized`` (else the original tensor, which
    needs a single original). Restores the module's class once no parametrization is left."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"[remove_parametrizations] {type(module).__name__} has no parametrization on {tensor_name!r}")
    plist = module.parametrizations[tensor_name]
    if plist.is_tensor:
        original = plist.original
        if leave_parametrized:
            with sx.no_grad():
                original = _store(original, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name).detach()
        original = Parameter(value, plist.original0.requires_grad) if isinstance(plist.original0, Parameter) else value
    else:
        raise ValueError("[remove_parametrizations] cannot leave unparametrized (leave_parametrized=False) a tensor "
                         "that is parametrized in terms of a sequence of tensors")
    delattr(module.__class__, tensor_name)
    del module.parametrizations[tensor_name]
    _register(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = module.__class__.__bases__[0]
    return module


def transfer_parametrizations_and_params(from_module, to_module, tensor_name: str | None = None):
    """Registers on ``to_module`` the parametrizations of ``tensor_name`` (every parametrized tensor when None)
    of ``from_module`` (the same parametrization modules) and shares the original tensor objects with it, so
    both modules read the same values. A tensor ``to_module`` lacks is first created from ``from_module``'s
    parametrized value. Returns ``to_module``."""
    if not is_parametrized(from_module, tensor_name):
        raise ValueError(f"[transfer_parametrizations_and_params] {type(from_module).__name__} has no "
                         f"parametrization on {tensor_name!r}")
    names = list(from_module.parametrizations._modules) if tensor_name is None else [tensor_name]
    for name in names:
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        source = from_module.parametrizations[name]
        for func in source:
            register_parametrization(to_module, name, func)
        target = to_module.parametrizations[name]
        for key in ["original"] if source.is_tensor else [f"original{i}" for i in range(source.ntensors)]:
            _register(target, key, getattr(source, key))
    return to_module


__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized", "remove_parametrizations",
           "type_before_parametrizations", "transfer_parametrizations_and_params"]
