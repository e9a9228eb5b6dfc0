"""``Dropout``, ``Dropout1d`` and ``Dropout2d``: random zeroing during training."""

from __future__ import annotations

import sneppx_core.functional as F

from .module import Module


class Dropout(Module, record_config=True):
    """In training mode zeroes each element with probability ``p`` and scales the rest by
    1 / (1 - p), so the expectation is unchanged; in eval mode it returns the input.

    Randomness comes from the global generator (``sneppx_core.manual_seed``).
    """

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
            raise ValueError(f"[Dropout] dropout probability has to be between 0 and 1, but got {p!r}")
        self.p, self.inplace = float(p), inplace

    def forward(self, input):
        """dropout(input, p, training)."""
        if not self.training or self.p == 0.0:
            return input
        return F.dropout(input, self.p, True)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout, record_config=True):
    """Zeroes whole channels of (N, C, L) or (C, L) input with probability ``p`` in training mode and scales
    the kept ones by 1 / (1 - p)."""

    def forward(self, input):
        """dropout1d(input, p, training)."""
        return F.dropout1d(input, self.p, self.training)


class Dropout2d(Dropout, record_config=True):
    """Zeroes whole channels of (N, C, H, W) or (C, H, W) input with probability ``p`` in training mode and
    scales the kept ones by 1 / (1 - p)."""

    def forward(self, input):
        """dropout2d(input, p, training)."""
        return F.dropout2d(input, self.p, self.training)
