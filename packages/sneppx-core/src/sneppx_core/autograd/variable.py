"""``sneppx_core.autograd.variable``, the legacy module of ``Variable`` (as ``torch.autograd.variable``; the
package attribute of that name is the deprecated ``variable(...)`` function, as in PyTorch)."""

from __future__ import annotations

from . import Variable

__all__ = ["Variable"]
