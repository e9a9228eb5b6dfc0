"""What PyTorch's ``device`` and ``Generator`` classes also do: ``with torch.device("cpu"):`` makes factories
inside the block create tensors there (``set_default_device`` for the block, as PyTorch), and
``Generator(device="cpu")`` takes PyTorch's argument (one generator serves every device here, so the device is
checked and otherwise unused; a number as the first argument is SneppX's seed). ``torch.dtype`` is ``Dtype``."""

from __future__ import annotations

import threading

from ._C_face import Device, Dtype, Generator
from ._torch_reach import get_default_device, set_default_device

_STACK = threading.local()  # per thread: the default devices to restore, innermost last


def _enter(self):
    stack = _STACK.__dict__.setdefault("saved", [])
    stack.append(get_default_device())
    set_default_device(self)
    return self


def _exit(self, *exc) -> None:
    set_default_device(_STACK.saved.pop())


Device.__enter__, Device.__exit__ = _enter, _exit
_generator_init = Generator.__init__


def _init(self, device=None, seed=None) -> None:
    if seed is None and device is not None and not isinstance(device, (str, Device)):
        device, seed = None, device  # Generator(seed): SneppX's form (the seed is checked there)
    if isinstance(device, str):
        device = Device(device)  # a name this build does not know raises here
    if isinstance(device, Device) and device.type == "meta":
        raise RuntimeError("[Generator] the meta device has no random numbers (no generator)")
    _generator_init(self, seed)


_init.__doc__ = ("Generator(device='cpu') as PyTorch's (one generator serves every device, so the device is only "
                 "checked); Generator(seed) seeds it.")
Generator.__init__ = _init
dtype = Dtype  # torch.dtype: the class of float32, int64, ...
