"""sneppx_data: datasets, samplers and a multi-process DataLoader for SneppX.

The API follows ``torch.utils.data``::

    from sneppx_data import TensorDataset, DataLoader
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, num_workers=2)
    for xb, yb in loader:
        ...

Process-group contract (DistributedSampler)
-------------------------------------------
This package never imports sneppx_distributed. When a process group is initialised the
distributed package sets the environment variables ``SNEPPX_RANK`` (this process's rank) and
``SNEPPX_WORLD_SIZE`` (the group size) in its own process, and removes them when the group is
destroyed. :class:`DistributedSampler` reads them when ``num_replicas`` / ``rank`` are not
passed, and raises ``RuntimeError`` telling the user to pass them or initialise a process group
when they are absent. The variable names are exported as ``RANK_ENV`` and ``WORLD_SIZE_ENV``.
"""

from sneppx_core import require_core

require_core("0.1", "0.2", "sneppx-data")

from .collate import default_collate, default_convert  # noqa: E402
from .dataloader import DataLoader  # noqa: E402
from .dataset import (  # noqa: E402
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    Subset,
    random_split,
)
from .distributed import RANK_ENV, WORLD_SIZE_ENV, DistributedSampler, process_group_info  # noqa: E402
from .sampler import (  # noqa: E402
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)
from .tensor_dataset import StackedSamples, TensorDataset  # noqa: E402
from .token_dataset import TokenDataset  # noqa: E402
from .worker import WorkerInfo, get_worker_info  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "BatchSampler",
    "ChainDataset",
    "ConcatDataset",
    "DataLoader",
    "Dataset",
    "DistributedSampler",
    "IterableDataset",
    "RANK_ENV",
    "RandomSampler",
    "Sampler",
    "SequentialSampler",
    "StackedSamples",
    "Subset",
    "SubsetRandomSampler",
    "TensorDataset",
    "TokenDataset",
    "WORLD_SIZE_ENV",
    "WeightedRandomSampler",
    "WorkerInfo",
    "default_collate",
    "default_convert",
    "get_worker_info",
    "process_group_info",
    "random_split",
]
