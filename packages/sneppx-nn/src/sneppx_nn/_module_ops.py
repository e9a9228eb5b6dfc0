"""``ModuleOps``: the bulk operations of ``Module`` (modes, dtype/device moves, state, checkpoints).

They rely only on ``modules()``, ``parameters()`` and the registries that ``Module`` maintains.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING

from sneppx_core.utils.hooks import RemovableHandle

from . import _preflight, _state, checkpoint

if TYPE_CHECKING:
    from .module import Module


class ModuleOps:
    """Mixin of ``Module``: training mode, ``to``, ``zero_grad``, ``state_dict`` and checkpoints."""

    __slots__ = ()

    # ----- modes and bulk operations ------------------------------------------------------
    def train(self, mode: bool = True) -> "Module":
        """Sets training mode (``training = mode``) here and in every descendant; returns self."""
        if not isinstance(mode, bool):
            raise ValueError(f"[train] training mode is expected to be a bool, got {mode!r}")
        for m in self.modules():
            m.__dict__["training"] = mode
        return self

    def eval(self) -> "Module":
        """Sets evaluation mode (``train(False)``); returns self."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> "Module":
        """Sets ``requires_grad`` on every parameter; returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def apply(self, fn) -> "Module":
        """Calls ``fn(m)`` on every submodule (children first) and then on self; returns self."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears parameter gradients: sets them to None, or to zeros when ``set_to_none=False``."""
        _state.zero_grad(self, set_to_none)

    def to(self, *args, **kwargs) -> "Module":
        """Moves/casts parameters and buffers: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``,
        ``to(tensor)``; only floating-point tensors change dtype. Returns self.

        Parameters whose dtype or device changes are replaced by new Parameter objects (build
        optimizers after calling ``to``). ``memory_format`` (e.g. ``channels_last``) is accepted and leaves the
        parameters row-major (a layout changes no result; SneppX's ops return row-major tensors anyway)."""
        return _state.module_to(self, args, kwargs)

    def to_empty(self, *, device, recurse: bool = True) -> "Module":
        """Replaces every parameter and buffer by an uninitialised tensor of the same shape and dtype on
        ``device`` (the way out of the meta device: build the model under ``with device("meta")``, then
        ``to_empty(device="cpu")`` and load or initialise the weights). Returns self."""
        return _state.module_to_empty(self, device, recurse)

    def float(self) -> "Module":
        """Casts floating-point parameters and buffers to float32."""
        return self.to("float32")

    def double(self) -> "Module":
        """Casts floating-point parameters and buffers to float64."""
        return self.to("float64")

    def bfloat16(self) -> "Module":
        """Casts floating-point parameters and buffers to bfloat16."""
        return self.to("bfloat16")

    def half(self) -> "Module":
        """Casts floating-point parameters and buffers to float16."""
        return self.to("float16")

    def cpu(self) -> "Module":
        """Moves parameters and buffers to the CPU."""
        return self.to("cpu")

    def cuda(self, device=None) -> "Module":
        """Moves parameters and buffers to a CUDA device."""
        return self.to(device or "cuda")

    def share_memory(self) -> "Module":
        """Moves parameters, their gradients and buffers into shared memory (``Tensor.share_memory_``),
        so that processes started afterwards with ``multiprocessing`` update the same weights
        (Hogwild training); returns self."""
        for p in self.parameters():
            p.share_memory_()
            if p.grad is not None:
                p.grad.share_memory_()
        for b in self.buffers():
            b.share_memory_()
        return self

    # ----- state --------------------------------------------------------------------------
    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        """An ordered dict from qualified names to parameters and persistent buffers (detached
        views sharing memory unless ``keep_vars``)."""
        return _state.state_dict(self, destination, prefix, keep_vars)

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copies values from ``state_dict`` (Tensors or NumPy arrays) into the parameters and
        buffers in place, under ``no_grad``; with ``assign``, the state's tensors take their places
        instead (parameters keep their ``requires_grad``; the dtype is the state's).

        The pre-hooks registered on each module run first (they may rename or add keys), then the checks:
        RuntimeError, before copying anything, on shape mismatches and, when ``strict``, on missing or
        unexpected keys. The post-hooks see the result. Returns ``(missing_keys, unexpected_keys)``."""
        return _state.load_state_dict(self, state_dict, strict, assign)

    def register_load_state_dict_pre_hook(self, hook) -> RemovableHandle:
        """Runs ``hook(module, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs)`` before ``load_state_dict`` reads this module's keys (``prefix`` + name); it may change
        ``state_dict`` in place."""
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False) -> RemovableHandle:
        """PyTorch's older form: ``hook(state_dict, prefix, local_metadata, strict, missing_keys,
        unexpected_keys, error_msgs)`` (the module first with ``with_module``)."""
        hooks = self.__dict__.setdefault("_load_state_dict_pre_hooks", {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = (hook, with_module)
        return handle

    def register_load_state_dict_post_hook(self, hook) -> RemovableHandle:
        """Runs ``hook(module, incompatible_keys)`` after ``load_state_dict``; it may edit the missing and
        unexpected key lists in place."""
        hooks = self.__dict__.setdefault("_load_state_dict_post_hooks", {})
        handle = RemovableHandle(hooks)
        hooks[handle.id] = hook
        return handle

    def get_config(self):
        """The recorded constructor call ``{"class", "module", "args", "kwargs"}``, or None."""
        return self.__dict__.get("_config")

    def save_checkpoint(self, path, metadata=None) -> None:
        """Writes ``state_dict()`` and this module's constructor config to a safetensors file
        (atomically); ``metadata`` adds JSON-serialisable entries."""
        checkpoint.save(self.state_dict(), path, config=self.get_config(), metadata=metadata)

    def load_checkpoint(self, path, strict: bool = True):
        """Loads a checkpoint written by ``save_checkpoint`` (or any safetensors file) into this module."""
        return self.load_state_dict(checkpoint.load(path), strict=strict)

    @classmethod
    def from_checkpoint(cls, path, strict: bool = True):
        """Builds a module from the constructor config stored in ``path`` and loads its weights.

        When every floating-point tensor in the file has one dtype (a model saved after
        ``to(bfloat16)``, say), the module is cast to it first, so values and dtype round-trip.
        The file's header is read and checked first; with ``strict``, a config that creates a
        parameter whose shape no tensor of the file has raises ValueError before allocating it."""
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"[from_checkpoint] no such checkpoint file: {path}")
        _, header = _preflight.read_header(path)
        meta = checkpoint.read_metadata(path)
        check = contextlib.nullcontext()
        if strict and meta.get("config"):
            check = _preflight.expect_parameters(path, _preflight.tensors_of(header), meta["config"])
        with check:
            model = checkpoint.build_from_config(cls, meta, path)
        state = checkpoint.load(path)
        dtypes = {t.dtype for t in state.values() if t.is_floating_point()}
        if len(dtypes) == 1:
            model.to(dtypes.pop())
        model.load_state_dict(state, strict=strict)
        return model
