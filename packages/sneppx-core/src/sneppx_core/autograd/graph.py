"""``torch.autograd.graph``: ``Node`` (the type of ``grad_fn``, for ``isinstance``), and the saved-tensor hook
context managers. SneppX's compiled autograd engine keeps the tensors a backward step needs itself and offers
no pack/unpack hooks, so ``saved_tensors_hooks`` raises NotImplementedError; ``save_on_cpu`` keeps CPU tensors
where they are, which is what it asks for (it raises when a GPU is present, where it would have to move them)."""

from __future__ import annotations

import abc

from .._backend import _C

__all__ = ["Node", "disable_saved_tensors_hooks", "save_on_cpu", "saved_tensors_hooks"]

_DISABLED: list = []  # the messages of the disable_saved_tensors_hooks blocks entered


class Node(abc.ABC):
    """A step of the backward graph (``tensor.grad_fn``): ``name()`` and ``next_functions``."""

    @classmethod
    def __subclasshook__(cls, other):
        node = getattr(_C, "Node", None)  # the compiled core's class (the NumPy backend has its own or none)
        return True if node is not None and issubclass(other, node) else NotImplemented


class saved_tensors_hooks:
    """``pack_hook``/``unpack_hook`` for the tensors autograd saves: not available (the compiled engine holds
    saved tensors itself); entering raises NotImplementedError."""

    def __init__(self, pack_hook, unpack_hook) -> None:
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        if _DISABLED:
            raise RuntimeError(_DISABLED[-1])
        raise NotImplementedError("[autograd.graph.saved_tensors_hooks] SneppX's autograd engine offers no hooks "
                                  "on saved tensors (it keeps them itself)")

    def __exit__(self, *exc) -> None:
        return None


class save_on_cpu(saved_tensors_hooks):
    """Keeps the tensors autograd saves in CPU memory. They are there already when no GPU is used, so this
    changes nothing; with a GPU present it raises NotImplementedError (moving them needs saved-tensor hooks)."""

    def __init__(self, pin_memory: bool = False, device_type: str = "cuda") -> None:
        super().__init__(None, None)
        self.pin_memory, self.device_type = pin_memory, device_type

    def __enter__(self):
        if _DISABLED:
            raise RuntimeError(_DISABLED[-1])
        from .. import cuda
        if cuda.is_available():
            raise NotImplementedError("[autograd.graph.save_on_cpu] moving saved GPU tensors to the CPU needs "
                                      "saved-tensor hooks, which SneppX's autograd engine does not offer")
        return self


class disable_saved_tensors_hooks:
    """Inside it, entering ``saved_tensors_hooks`` (or ``save_on_cpu``) raises RuntimeError(error_message)."""

    def __init__(self, error_message: str) -> None:
        self.error_message = error_message

    def __enter__(self) -> None:
        _DISABLED.append(self.error_message)

    def __exit__(self, *exc) -> None:
        _DISABLED.pop()
