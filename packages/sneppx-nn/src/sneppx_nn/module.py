"""``Module``: the base class of every layer, as ``torch.nn.Module``."""

from __future__ import annotations

import functools
import inspect

from sneppx_core import Tensor
from sneppx_core.utils.hooks import RemovableHandle

from . import checkpoint
from ._module_ops import ModuleOps
from .parameter import Parameter


def _recording_init(init):
    """Wraps ``__init__`` so the most derived constructor's arguments are kept as ``_config``."""
    sig = inspect.signature(init)

    @functools.wraps(init)
    def wrapper(self, *args, **kwargs):
        if "_config" not in self.__dict__ and type(self).__init__ is wrapper:
            config = checkpoint.capture_config(type(self), sig, self, args, kwargs)
            object.__setattr__(self, "_config", config)
        init(self, *args, **kwargs)

    return wrapper


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    return lines[0] if len(lines) == 1 else "\n".join([lines[0]] + [" " * spaces + ln for ln in lines[1:]])


class Module(ModuleOps):
    """Base class of all layers: subclasses assign layers and parameters in ``__init__`` and
    define ``forward``.

    Assigning a :class:`Parameter` to an attribute registers it as a parameter, a ``Module`` as a
    submodule; ``register_buffer`` registers a state tensor that is not learned. Calling the module
    runs the forward pre-hooks, ``forward`` and the forward hooks.

    A subclass declared as ``class Net(Module, record_config=True)`` records the arguments its
    constructor was called with (JSON values, dtypes and devices); ``save_checkpoint`` stores them
    so that ``Net.from_checkpoint(path)`` can rebuild the model with no other information.
    """

    _record_config = False

    def __init_subclass__(cls, record_config=None, **kwargs):
        super().__init_subclass__(**kwargs)
        if record_config is not None:
            cls._record_config = bool(record_config)
        if cls._record_config:
            cls.__init__ = _recording_init(cls.__init__)

    def __init__(self):
        d = self.__dict__
        d["training"] = True
        d["_parameters"], d["_buffers"], d["_modules"] = {}, {}, {}
        d["_non_persistent_buffers"] = set()
        d["_forward_pre_hooks"], d["_forward_hooks"] = {}, {}

    def forward(self, *args, **kwargs):
        """The computation of this module; every subclass overrides it."""
        raise NotImplementedError(f'Module [{type(self).__name__}] is missing the required "forward" function')

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        for hook in list(self._forward_pre_hooks.values()):
            res = hook(self, args)
            if res is not None:
                args = res if isinstance(res, tuple) else (res,)
        out = self.forward(*args, **kwargs)
        for hook in list(self._forward_hooks.values()):
            res = hook(self, args, out)
            if res is not None:
                out = res
        return out

    def register_forward_pre_hook(self, hook) -> RemovableHandle:
        """Runs ``hook(module, args)`` before ``forward``; a non-None result replaces ``args``."""
        handle = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[handle.id] = hook
        return handle

    def register_forward_hook(self, hook) -> RemovableHandle:
        """Runs ``hook(module, args, output)`` after ``forward``; a non-None result replaces the output."""
        handle = RemovableHandle(self._forward_hooks)
        self._forward_hooks[handle.id] = hook
        return handle

    # ----- registration -------------------------------------------------------------------
    def _check_name(self, fn: str, name) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"[{fn}] cannot assign before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"[{fn}] name must be a str, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f"[{fn}] name can't be empty or contain '.', got {name!r}")

    def register_parameter(self, name: str, param) -> None:
        """Registers ``param`` (a Parameter or None) under ``name``."""
        self._check_name("register_parameter", name)
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"[register_parameter] cannot assign '{type(param).__name__}' as parameter "
                            f"'{name}' (Parameter or None expected)")
        self._forget(name, "_parameters")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor, persistent: bool = True) -> None:
        """Registers ``tensor`` (or None) as a buffer: module state saved in ``state_dict`` (when
        ``persistent``) and moved by ``to``, but not a parameter."""
        self._check_name("register_buffer", name)
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"[register_buffer] cannot assign '{type(tensor).__name__}' as buffer '{name}' "
                            "(Tensor or None expected)")
        self._forget(name, "_buffers")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module) -> None:
        """Registers ``module`` (or None) as a submodule under ``name``."""
        self._check_name("add_module", name)
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"[add_module] {type(module).__name__} is not a Module subclass")
        self._forget(name, "_modules")
        self._modules[name] = module

    register_module = add_module

    def _forget(self, name: str, keep: str = "") -> None:
        """Removes ``name`` from the instance dict and every registry except ``keep``."""
        d = self.__dict__
        d.pop(name, None)
        for store in ("_parameters", "_buffers", "_modules"):
            if store != keep:
                d[store].pop(name, None)
        d["_non_persistent_buffers"].discard(name)

    def __getattr__(self, name):
        d = self.__dict__  # parameters, then buffers, then submodules (unrolled: this runs on every access)
        s = d.get("_parameters")
        if s is not None and name in s:
            return s[name]
        s = d.get("_buffers")
        if s is not None and name in s:
            return s[name]
        s = d.get("_modules")
        if s is not None and name in s:
            return s[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __setattr__(self, name, value):
        d = self.__dict__
        if isinstance(value, Parameter):
            self.register_parameter(name, value)
        elif isinstance(value, Module):
            self.add_module(name, value)
        elif "_parameters" in d and name in d["_parameters"]:
            self.register_parameter(name, value)
        elif "_modules" in d and name in d["_modules"]:
            self.add_module(name, value)
        elif "_buffers" in d and name in d["_buffers"]:
            self.register_buffer(name, value, name not in d["_non_persistent_buffers"])
        else:
            object.__setattr__(self, name, value)

    def __delattr__(self, name):
        for store in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(store, ()):
                self._forget(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    # ----- traversal ----------------------------------------------------------------------
    def named_modules(self, memo=None, prefix: str = "", remove_duplicate: bool = True):
        """Yields ``(qualified name, module)`` for this module and every descendant."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                sub = prefix + ("." if prefix else "") + name
                yield from module.named_modules(memo, sub, remove_duplicate)

    def modules(self):
        """Yields this module and every descendant once."""
        for _, m in self.named_modules():
            yield m

    def named_children(self):
        """Yields ``(name, module)`` for each direct submodule once."""
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self):
        """Yields each direct submodule once."""
        for _, m in self.named_children():
            yield m

    def _named_members(self, store: str, prefix: str, recurse: bool, remove_duplicate: bool = True):
        seen = set()
        mods = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, m in mods:
            for name, t in getattr(m, store).items():
                if t is None or (remove_duplicate and id(t) in seen):
                    continue
                seen.add(id(t))
                yield mod_prefix + ("." if mod_prefix else "") + name, t

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yields ``(qualified name, parameter)``, each shared parameter once."""
        return self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        """Yields every parameter once (of descendants too when ``recurse``)."""
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate: bool = True):
        """Yields ``(qualified name, buffer)``, each shared buffer once."""
        return self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Yields every buffer once."""
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> "Module":
        """The submodule at the dotted path ``target`` ("" is this module)."""
        mod = self
        for part in target.split(".") if target else []:
            child = mod._modules.get(part)
            if child is None:
                raise AttributeError(f"[get_submodule] {type(mod).__name__} has no submodule {part!r} (in {target!r})")
            mod = child
        return mod

    def num_parameters(self, only_trainable: bool = False) -> int:
        """Number of scalar parameters (those with ``requires_grad`` only, if ``only_trainable``)."""
        return sum(p.numel() for p in self.parameters() if p.requires_grad or not only_trainable)

    # ----- printing -----------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in ``repr`` (subclasses override it)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self):
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [f"({k}): " + _addindent(repr(m), 2) for k, m in self._modules.items()]
        lines = extra_lines + child_lines
        body = ""
        if len(extra_lines) == 1 and not child_lines:
            body = extra_lines[0]
        elif lines:
            body = "\n  " + "\n  ".join(lines) + "\n"
        return self._get_name() + "(" + body + ")"
