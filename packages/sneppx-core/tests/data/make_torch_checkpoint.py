"""Writes torch_checkpoint.pt and torch_checkpoint_legacy.pt (the same object in PyTorch's zip format and in its
legacy format), the PyTorch-written files that test_torch_file.py reads without PyTorch.

Run with PyTorch installed: ``python make_torch_checkpoint.py`` (in this folder). Every tensor is
made from ``arange`` so that the tests know the values without PyTorch; ``expected()`` in the test
file lists them, and the parity test writes this file again and compares.
"""

import collections
import os

import torch


def checkpoint():
    """The object saved: tensors of every dtype SneppX has, views that share storage, plain values."""
    w = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 4
    model = collections.OrderedDict(weight=w[:2].clone(), bias=torch.arange(2, dtype=torch.float64) - 0.5)
    return {
        "model": model,
        "half": torch.arange(5, dtype=torch.float16) / 2,
        "bf16": torch.tensor([1.5, -2.0, 0.25], dtype=torch.bfloat16),
        "long": torch.arange(-3, 3, dtype=torch.int64) * 1000000007,
        "int": torch.arange(4, dtype=torch.int32) - 2,
        "u8": torch.arange(250, 256, dtype=torch.uint8),
        "mask": torch.arange(5) % 2 == 0,
        "tied": (w, w.t(), w[1], w[:, ::2]),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 4),
        "param": torch.nn.Parameter(torch.arange(3, dtype=torch.float32)),
        "step": 7, "lr": 0.5, "name": "run", "none": None, "flag": True, "data": b"\x00\xff",
        "ids": {1, 2}, "size": torch.Size([2, 3]), "dtype": torch.bfloat16, "device": torch.device("cpu"),
        "nested": [1, (2.5, "x"), {"k": torch.ones(2)}],
    }


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    torch.save(checkpoint(), os.path.join(here, "torch_checkpoint.pt"))
    torch.save(checkpoint(), os.path.join(here, "torch_checkpoint_legacy.pt"), _use_new_zipfile_serialization=False)
