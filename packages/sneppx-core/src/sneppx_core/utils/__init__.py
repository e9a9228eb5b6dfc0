"""``torch.utils`` counterparts that belong to the core: ``benchmark`` (``Timer``), ``checkpoint`` (activation
checkpointing), ``dlpack``, ``hooks`` (``RemovableHandle``), ``model_zoo`` (``load_url``) and ``_pytree``
(nested containers' leaves); SneppX's ``wrapping`` replaces the library's functions with wrappers (the profiler's
and fx's). The data loading utilities
(``torch.utils.data``) are the ``sneppx_data`` package."""

from . import _pytree, benchmark, checkpoint, dlpack, hooks, model_zoo, wrapping  # noqa: F401

__all__ = ["benchmark", "checkpoint", "dlpack", "hooks", "model_zoo"]
