"""``torch.utils`` counterparts that belong to the core: ``benchmark`` (``Timer``), ``checkpoint`` (activation
checkpointing), ``dlpack``, ``hooks`` (``RemovableHandle``), ``model_zoo`` (``load_url``) and ``_pytree``
(nested containers' leaves). The data loading utilities
(``torch.utils.data``) are the ``sneppx_data`` package."""

from . import _pytree, benchmark, checkpoint, dlpack, hooks, model_zoo  # noqa: F401

__all__ = ["benchmark", "checkpoint", "dlpack", "hooks", "model_zoo"]
