"""``torch.utils`` counterparts that belong to the core: ``benchmark`` (``Timer``), ``checkpoint`` (activation
checkpointing), ``dlpack``,
``hooks`` (``RemovableHandle``) and ``model_zoo`` (``load_url``). The data loading utilities
(``torch.utils.data``) are the ``sneppx_data`` package."""

from . import benchmark, checkpoint, dlpack, hooks, model_zoo  # noqa: F401

__all__ = ["benchmark", "checkpoint", "dlpack", "hooks", "model_zoo"]
