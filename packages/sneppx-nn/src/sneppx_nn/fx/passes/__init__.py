"""``torch.fx.passes``: graph passes (``shape_prop``)."""

from . import shape_prop  # noqa: F401
