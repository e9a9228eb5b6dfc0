"""Rare and legacy top-level names and Tensor methods of PyTorch: ``empty_permuted``, ``from_file``, the
deprecated autocast getters and setters for "ipu" and "xla", the removed ``solve``/``lstsq``/``eig``/``symeig``
(top level and methods) and ``Tensor.reinforce``, which only raise, and ``Tensor.module_load``.

``FUNCTIONS`` are module-level names; ``METHODS`` become Tensor methods.
"""

from __future__ import annotations

import builtins
import os
import re
import warnings

import numpy as np

from ._C_face import Tensor
from ._factories import _default_device, _float_dtype, empty
from ._tensor_strided import _ints, empty_strided
from ._torch_misc import frombuffer, get_autocast_dtype, set_autocast_dtype, set_autocast_enabled


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
                   pin_memory=False):
    """An uninitialised dense tensor of shape ``size`` whose dims lie in memory in the order ``physical_layout``
    (outermost first): ``t.stride(physical_layout[i])`` is the i-th contiguous stride of the permuted shape, so
    NHWC is ``empty_permuted((N, C, H, W), (0, 2, 3, 1))``."""
    size = _ints(size, "empty_permuted", "size")
    perm = _ints(physical_layout, "empty_permuted", "physical_layout")
    if len(size) != len(perm):
        raise RuntimeError(f"[empty_permuted] Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to len(physical_layout) = "
                           f"{len(perm)}")
    for i, d in enumerate(perm):
        if not 0 <= d < len(size):
            raise RuntimeError(f"[empty_permuted] Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {d} at index {i}); negative dims are not supported")
    if len(set(perm)) != len(perm):
        raise RuntimeError(f"[empty_permuted] Duplicate dim not allowed in physical_layout {list(perm)}")
    if any(s < 0 for s in size):
        raise RuntimeError(f"[empty_permuted] Trying to create tensor with negative dimension: {list(size)}")
    stride, step = [0] * len(size), 1
    for d in reversed(perm):
        stride[d] = step
        step *= max(size[d], 1)
    return empty_strided(size, stride, dtype=dtype, device=device, requires_grad=requires_grad)


def from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False):
    """A 1-d CPU tensor of ``size`` elements of ``dtype`` (default: the default float dtype) read from the raw
    bytes at the start of ``filename`` (native byte order), which must hold at least ``size * itemsize`` bytes.

    ``shared=False`` (or None, the default) gives PyTorch's private mapping: changes to the tensor do not reach
    the file, and here the tensor is a copy of the bytes. ``shared=True`` (a mapping whose writes reach the file)
    cannot be honoured and raises NotImplementedError.
    """
    if not isinstance(filename, str):
        raise TypeError(f"[from_file] argument 'filename' must be str, not {type(filename).__name__}")
    if shared:
        raise NotImplementedError("[from_file] shared=True (a memory mapping whose writes reach the file) is not "
                                  "supported: read with shared=False and write the file back yourself")
    if isinstance(size, builtins.bool) or not isinstance(size, (builtins.int, np.integer)) or size < 0:
        raise ValueError(f"[from_file] size must be a non-negative int, got {size!r}")
    dev = _default_device(device)
    if dev is not None and str(dev) != "cpu":
        raise RuntimeError(f"[from_file] only CPU tensors can be mapped to files, got device {dev}")
    dt = _float_dtype(dtype)
    if size == 0:
        return empty(0, dtype=dt, device="cpu")
    need = builtins.int(size) * empty(0, dtype=dt).element_size()
    try:
        with open(filename, "rb") as f:
            have = os.fstat(f.fileno()).st_size
            if have < need:
                raise RuntimeError(f"[from_file] file <{filename}> size <{have}> is smaller than the required "
                                   f"mapping size <{need}>")
            data = bytearray(f.read(need))
    except OSError as e:
        raise RuntimeError(f"[from_file] unable to open file <{filename}> in read-only mode: {e.strerror} "
                           f"({e.errno})") from None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # frombuffer's "bfloat16 data is copied": this tensor is a copy anyway
        return frombuffer(data, dtype=dt, count=builtins.int(size))


# ---------------------------------------------------------------- autocast state of "ipu" and "xla"
def _deprecated(old, new):
    warnings.warn(f"sneppx_core.{old} is deprecated. Please use sneppx_core.{new} instead.", DeprecationWarning,
                  stacklevel=3)


def _autocast_functions(device_type):
    """The four deprecated per-device autocast functions of ``device_type``, over the shared autocast state."""

    def get_dtype():
        _deprecated(f"get_autocast_{device_type}_dtype()", f"get_autocast_dtype('{device_type}')")
        return get_autocast_dtype(device_type)

    def set_dtype(dtype):
        _deprecated(f"set_autocast_{device_type}_dtype(dtype)", f"set_autocast_dtype('{device_type}', dtype)")
        set_autocast_dtype(device_type, dtype)

    def is_enabled():
        _deprecated(f"is_autocast_{device_type}_enabled()", f"is_autocast_enabled('{device_type}')")
        return False

    def set_enabled(enabled):
        _deprecated(f"set_autocast_{device_type}_enabled(enabled)", f"set_autocast_enabled('{device_type}', "
                    "enabled)")
        set_autocast_enabled(device_type, enabled)

    docs = {get_dtype: f"The dtype autocast would use on {device_type!r} (``get_autocast_dtype('{device_type}')``"
                       "; deprecated, warns).",
            set_dtype: f"Sets the dtype of ``get_autocast_{device_type}_dtype`` (deprecated, warns).",
            is_enabled: "False: autocast is never active (deprecated, warns).",
            set_enabled: f"``set_autocast_enabled('{device_type}', enabled)``: False is accepted, True raises "
                         "NotImplementedError (deprecated, warns)."}
    names = {get_dtype: f"get_autocast_{device_type}_dtype", set_dtype: f"set_autocast_{device_type}_dtype",
             is_enabled: f"is_autocast_{device_type}_enabled", set_enabled: f"set_autocast_{device_type}_enabled"}
    for fn, name in names.items():
        fn.__name__ = fn.__qualname__ = name
        fn.__doc__ = docs[fn]
    return {fn.__name__: fn for fn in names}


# ---------------------------------------------------------------- removed functions that only raise
def _sx_names(message):
    """PyTorch's message with its ``torch.`` names spelled as SneppX's."""
    return re.sub(r"\btorch\.", "sneppx_core.", message)


_REMOVED_19 = "This function was deprecated since version 1.9 and is now removed. "
_SOLVE = _sx_names(
    _REMOVED_19 + "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its "
    "arguments reversed and does not return the LU factorization.\n\nTo get the LU factorization see `torch.lu`, "
    "which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution should be "
    "replaced with:\nX = torch.linalg.solve(A, B)")
_LSTSQ = _sx_names(
    _REMOVED_19 + "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has reversed "
    "arguments and does not return the QR decomposition in the returned tuple (although it returns other "
    "information about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`.\n\nThe "
    "returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n columns of the "
    "returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field 'residuals' of the "
    "returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\n"
    "should be replaced with:\nX = torch.linalg.lstsq(A, B).solution")
_EIG = _sx_names(
    _REMOVED_19 + "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real "
    "tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
    "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
    "L_complex, V_complex = torch.linalg.eig(A)")
_SYMEIG = _sx_names(
    _REMOVED_19 + "The default behavior has changed from using the upper triangular portion of the matrix by "
    "default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be replaced "
    "with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = torch.symeig(A, "
    "eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if upper else 'L')")
_REINFORCE = _sx_names(
    "reinforce() was removed.\nUse torch.distributions instead.\nSee https://pytorch.org/docs/main/distributions.html"
    "\n\nInstead of:\n\nprobs = policy_network(state)\naction = probs.multinomial()\nnext_state, reward = "
    "env.step(action)\naction.reinforce(reward)\naction.backward()\n\nUse:\n\nprobs = policy_network(state)\n# "
    "NOTE: categorical is equivalent to what used to be called multinomial\nm = torch.distributions.Categorical("
    "probs)\naction = m.sample()\nnext_state, reward = env.step(action)\nloss = -m.log_prob(action) * reward\n"
    "loss.backward()\n")


def solve(input, A, *, out=None):
    """Removed in PyTorch 1.9: raises RuntimeError pointing to ``linalg.solve`` (arguments reversed)."""
    raise RuntimeError(_SOLVE)


def lstsq(input, A, *, out=None):
    """Removed in PyTorch 1.9: raises RuntimeError pointing to ``linalg.lstsq`` (arguments reversed)."""
    raise RuntimeError(_LSTSQ)


def eig(self, eigenvectors=False, *, e=None, v=None):
    """Removed in PyTorch 1.9: raises RuntimeError pointing to ``linalg.eig``/``linalg.eigvals``."""
    raise RuntimeError(_EIG)


def symeig(input, eigenvectors=False, upper=True, *, out=None):
    """Removed in PyTorch 1.9: raises RuntimeError pointing to ``linalg.eigh``/``linalg.eigvalsh``."""
    raise RuntimeError(_SYMEIG)


def reinforce(self, reward):
    """Removed: raises RuntimeError showing how to use ``distributions`` instead."""
    raise RuntimeError(_REINFORCE)


def module_load(self, other, assign=False):
    """How ``other`` (a state-dict value) is turned into the tensor that replaces ``self`` (a parameter or
    buffer) when ``nn.Module.load_state_dict`` swaps tensors: ``other.detach()`` with ``assign=True``, else
    ``self.copy_(other).detach()`` (``self`` is overwritten in place and a new tensor sharing its data is
    returned; ``load_state_dict`` calls it under ``no_grad``, which a leaf that requires grad needs)."""
    if not isinstance(other, Tensor):
        raise TypeError(f"[module_load] other must be a Tensor, got {type(other).__name__}")
    if assign:
        return other.detach()
    return self.copy_(other).detach()


FUNCTIONS = {"empty_permuted": empty_permuted, "from_file": from_file, "solve": solve, "lstsq": lstsq, "eig": eig,
             "symeig": symeig, **_autocast_functions("ipu"), **_autocast_functions("xla")}
METHODS = {"solve": solve, "lstsq": lstsq, "eig": eig, "symeig": symeig, "reinforce": reinforce,
           "module_load": module_load}
__all__ = list(FUNCTIONS)
