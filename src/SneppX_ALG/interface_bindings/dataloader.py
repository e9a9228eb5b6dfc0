"""The DataLoader under the guide's path: ``SneppX_ALG.interface_bindings.dataloader.DataLoader``."""

from sneppx_data import DataLoader, default_collate, get_worker_info  # noqa: F401

__all__ = ["DataLoader", "default_collate", "get_worker_info"]
