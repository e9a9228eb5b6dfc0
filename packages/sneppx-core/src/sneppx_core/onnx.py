"""``torch.onnx``'s entry points. SneppX has no ONNX exporter: the module imports (programs import it at the top
and export only when asked), :func:`export` and :func:`dynamo_export` raise NotImplementedError, and
:func:`is_in_onnx_export` is False.
"""

from __future__ import annotations

_MESSAGE = ("SneppX has no ONNX exporter; save the weights with sneppx_core.save(model.state_dict(), path) "
            "(safetensors) and export from a framework that has one")


def export(model, args=(), f=None, *more, **kwargs):
    """Raises NotImplementedError: no ONNX export in SneppX."""
    raise NotImplementedError(f"[onnx.export] {_MESSAGE}")


def dynamo_export(model, *args, **kwargs):
    """Raises NotImplementedError: no ONNX export in SneppX."""
    raise NotImplementedError(f"[onnx.dynamo_export] {_MESSAGE}")


def is_in_onnx_export() -> bool:
    """False: no code runs under an ONNX export."""
    return False


__all__ = ["export", "dynamo_export", "is_in_onnx_export"]
