"""``torch.random``'s names: the default generator's seed and state, and ``fork_rng``."""

from __future__ import annotations

import contextlib

from ._C_face import default_generator
from ._factories import manual_seed, seed
from ._torch_more_num import get_rng_state, initial_seed, set_rng_state


@contextlib.contextmanager
def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type="cuda"):
    """Within the ``with`` block the default (CPU) generator may be reseeded or drawn from; on leaving, its state
    is restored, so the draws after the block are those there would have been without it. One generator serves
    every device in SneppX, so ``devices`` and ``device_type`` (PyTorch's per-accelerator generators) need no
    handling: restoring it restores the draws on a GPU too."""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


__all__ = ["manual_seed", "seed", "initial_seed", "get_rng_state", "set_rng_state", "fork_rng", "default_generator"]
