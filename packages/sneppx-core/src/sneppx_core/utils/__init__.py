"""``torch.utils`` counterparts that belong to the core: ``utils.checkpoint`` (activation checkpointing). The
data loading utilities (``torch.utils.data``) are the ``sneppx_data`` package."""

from . import checkpoint  # noqa: F401

__all__ = ["checkpoint"]
