"""Shared helpers for the sneppx-data tests."""

import gc
import glob
import os

import numpy as np
import pytest
import sneppx_core as sx


def to_np(t):
    """A NumPy copy of a Tensor (or pass-through for arrays)."""
    return np.array(t.numpy()) if isinstance(t, sx.Tensor) else np.asarray(t)


def shm_segments():
    """Names of this package's shared-memory segments currently in /dev/shm."""
    return sorted(os.path.basename(p) for p in glob.glob("/dev/shm/sxd*"))


@pytest.fixture
def no_shm_leak():
    """Fail the test if it leaves any sneppx-data segment behind in /dev/shm."""
    if not os.path.isdir("/dev/shm"):
        pytest.skip("needs /dev/shm")
    before = set(shm_segments())
    yield
    gc.collect()  # loaders and iterators the test dropped (exceptions keep frames in cycles)
    leaked = set(shm_segments()) - before
    assert not leaked, f"leaked shared-memory segments: {sorted(leaked)}"
