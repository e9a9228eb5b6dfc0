"""``torch.utils`` counterparts that belong to the core: ``checkpoint`` (activation checkpointing), ``dlpack``,
``hooks`` (``RemovableHandle``) and ``model_zoo`` (``load_url``). The data loading utilities
(``torch.utils.data``) are the ``sneppx_data`` package."""

from . import checkpoint, dlpack, hooks, model_zoo  # noqa: F401

__all__ = ["checkpoint", "dlpack", "hooks", "model_zoo"]
