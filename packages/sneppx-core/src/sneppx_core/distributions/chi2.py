"""The chi-squared distribution: ``Gamma(df / 2, 1 / 2)``."""

from __future__ import annotations

from . import constraints
from .gamma import Gamma


class Chi2(Gamma):
    """The chi-squared distribution with ``df`` degrees of freedom, exactly ``Gamma(0.5 * df, 0.5)``."""

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        """A new Chi2 with ``df`` expanded to ``batch_shape``."""
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        """The degrees of freedom: ``2 * concentration``."""
        return self.concentration * 2


__all__ = ["Chi2"]
