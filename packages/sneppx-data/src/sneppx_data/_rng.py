"""Random numbers for samplers and splits.

Two tools live here:

* :func:`torch_randperm` reproduces PyTorch's CPU ``torch.randperm(n, generator=g)`` for a
  generator seeded with ``g.manual_seed(seed)``, bit for bit, using only NumPy. PyTorch's CPU
  generator is MT19937 seeded from the low 32 bits of the seed with the reference
  ``init_genrand`` recurrence, which is exactly how NumPy's legacy ``RandomState(seed)`` seeds
  its MT19937; both then emit the same raw 32-bit words. PyTorch's CPU ``randperm`` is a forward
  Fisher-Yates shuffle driven by those words::

      a = [0, 1, ..., n-1]
      for i in 0 .. n-2:
          z = r_i mod (n - i)          # r_i: the i-th raw 32-bit MT19937 output
          swap(a[i], a[i + z])

  The draws are vectorised; the swaps are a Python loop (about 0.6 s per million elements).
* :func:`draw_seed` turns the ``generator`` argument accepted across this package (``None``, an
  ``int`` seed, a ``sneppx_core.Generator`` or a ``numpy.random.Generator``) into a fresh seed.
"""

from __future__ import annotations

import numpy as np
import sneppx_core as sx

_MASK32 = 0xFFFFFFFF
_SEED_HALF = 2**31 - 1


def torch_randperm(n: int, seed: int) -> list[int]:
    """Return the permutation of ``range(n)`` that PyTorch's CPU randperm gives for ``seed``.

    Args:
        n: length of the permutation (``n >= 0``).
        seed: the value passed to ``torch.Generator().manual_seed``; only its low 32 bits matter,
            as in PyTorch.

    Returns:
        A list of ``n`` ints.
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"torch_randperm: n must be >= 0, got {n}")
    if n < 2:
        return list(range(n))
    state = np.random.RandomState(int(seed) & _MASK32)
    raw = state.randint(0, 2**32, size=n - 1, dtype=np.uint32).astype(np.int64)
    offsets = (raw % np.arange(n, 1, -1, dtype=np.int64)).tolist()
    perm = list(range(n))
    for i, z in enumerate(offsets):
        if z:
            j = i + z
            perm[i], perm[j] = perm[j], perm[i]
    return perm


def _seed_from_core(generator) -> int:
    # Two 31-bit draws give a 62-bit seed without relying on 64-bit bounds in randint.
    kwargs = {} if generator is None else {"generator": generator}
    hi, lo = sx.randint(0, _SEED_HALF, (2,), **kwargs).tolist()
    return (int(hi) << 31) | int(lo)


def draw_seed(generator=None) -> int:
    """Draw a non-negative seed from ``generator``.

    Args:
        generator: ``None`` (draws from sneppx_core's global generator, so ``sx.manual_seed``
            controls it), an ``int`` (returned unchanged), a ``sneppx_core.Generator`` or a
            ``numpy.random.Generator``.

    Returns:
        An int in ``[0, 2**62)`` (or the int that was passed).
    """
    if generator is None or isinstance(generator, sx.Generator):
        return _seed_from_core(generator)
    if isinstance(generator, (bool, np.bool_)):
        raise TypeError(f"draw_seed: generator must not be a bool, got {generator!r}")
    if isinstance(generator, (int, np.integer)):
        if generator < 0:
            raise ValueError(f"draw_seed: seed must be >= 0, got {generator}")
        return int(generator)
    if isinstance(generator, np.random.Generator):
        return int(generator.integers(0, 2**62))
    raise TypeError(
        "draw_seed: generator must be None, an int seed, a sneppx_core.Generator or a "
        f"numpy.random.Generator, got {type(generator).__name__}"
    )


def numpy_generator(generator=None) -> np.random.Generator:
    """Return a NumPy ``Generator`` (PCG64) seeded from :func:`draw_seed` of ``generator``."""
    if isinstance(generator, np.random.Generator):
        return generator
    return np.random.default_rng(draw_seed(generator))
