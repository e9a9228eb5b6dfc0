"""``Dropout``, ``Dropout1d``, ``Dropout2d`` and ``Dropout3d``: random zeroing during training; ``AlphaDropout``
and ``FeatureAlphaDropout``: its form for SELU networks."""

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
        """dropout(input, p, training, inplace): with ``inplace``, ``input`` itself is overwritten and returned."""
        if not self.training or self.p == 0.0:
            return input
        return F.dropout(input, self.p, True, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout1d(Dropout, record_config=True):
    """Zeroes whole channels of (N, C, L) or (C, L) input with probability ``p`` in training mode and scales
    the kept ones by 1 / (1 - p)."""

    def forward(self, input):
        """dropout1d(input, p, training, inplace)."""
        return F.dropout1d(input, self.p, self.training, self.inplace)


class Dropout2d(Dropout, record_config=True):
    """Zeroes whole channels of (N, C, H, W) input with probability ``p`` in training mode and scales the kept
    ones by 1 / (1 - p). As in PyTorch, 3-D input is read as (N, C, L) and other ranks as (N, C, *), with a
    UserWarning (see ``sneppx_core.functional.dropout2d``)."""

    def forward(self, input):
        """dropout2d(input, p, training, inplace)."""
        return F.dropout2d(input, self.p, self.training, self.inplace)


class Dropout3d(Dropout, record_config=True):
    """Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input with probability ``p`` in training mode
    and scales the kept ones by 1 / (1 - p)."""

    def forward(self, input):
        """dropout3d(input, p, training, inplace)."""
        return F.dropout3d(input, self.p, self.training, self.inplace)


class AlphaDropout(Dropout, record_config=True):
    """Dropout for SELU networks: in training mode each element is set with probability ``p`` to SELU's
    saturation value and all go through an affine map that keeps zero mean and unit variance (see
    ``sneppx_core.functional.alpha_dropout``); in eval mode it returns the input."""

    def forward(self, input):
        """alpha_dropout(input, p, training)."""
        return F.alpha_dropout(input, self.p, self.training)


class FeatureAlphaDropout(Dropout, record_config=True):
    """:class:`AlphaDropout` of whole channels of (N, C, *) input: each channel is masked as one."""

    def forward(self, input):
        """feature_alpha_dropout(input, p, training)."""
        return F.feature_alpha_dropout(input, self.p, self.training)
