"""``torch.ops``: operators reached by namespace. ``ops.aten.<name>`` is the public function of that name
(``ops.aten.add``, with ``.default`` and overload names such as ``ops.aten.add.Tensor`` giving the same
function); ``ops.profiler`` holds the record-function calls (``_record_function_enter``,
``_record_function_enter_new``, ``_record_function_exit``); ``ops.<namespace>.<name>`` are the custom operators
defined with ``library.custom_op``. Other namespaces (``ops.torchvision``) raise AttributeError."""

from __future__ import annotations

import types


class OpOverloadPacket:
    """An operator of ``ops.aten``: calling it calls the function; any overload name (``.default``, ``.Tensor``,
    ``.Scalar``, ...) is the same packet."""

    def __init__(self, name: str, fn) -> None:
        self._name, self._fn = name, fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload: str):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return self

    def __repr__(self) -> str:
        return f"<OpOverloadPacket(op='aten.{self._name}')>"


class _Aten:
    """``ops.aten``: PyTorch's ATen operators by name, as SneppX's public functions."""

    def __getattr__(self, name: str) -> OpOverloadPacket:
        from . import functional
        import sneppx_core
        fn = getattr(sneppx_core, name, None) if not name.startswith("_") else None
        if not callable(fn) or isinstance(fn, type):
            fn = getattr(functional, name, None)
        if not callable(fn) or isinstance(fn, type):
            raise AttributeError(f"[ops.aten] no operator {name!r}")
        packet = OpOverloadPacket(name, fn)
        setattr(self, name, packet)  # found once
        return packet


def _record_function_enter(name: str, args: str | None = None):
    """Opens a ``record_function`` range and returns its handle (for ``_record_function_exit``)."""
    from .profiler import record_function
    return record_function(name, args).__enter__()


def _record_function_exit(handle) -> None:
    """Closes the range ``_record_function_enter`` opened."""
    handle.__exit__(None, None, None)


aten = _Aten()
profiler = types.SimpleNamespace(_record_function_enter=_record_function_enter,
                                 _record_function_enter_new=_record_function_enter,
                                 _record_function_exit=_record_function_exit)
profiler.__doc__ = "``torch.ops.profiler``: the record-function calls."


def __getattr__(name: str):
    from . import library
    found = library.namespace(name)
    if found is None:
        raise AttributeError(f"[ops] no operator namespace {name!r}: no custom op was defined in it "
                             "(torch.library.custom_op); ops.aten and ops.profiler exist")
    return found
