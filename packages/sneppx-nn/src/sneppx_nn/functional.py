"""``torch.nn.functional``'s place in sneppx-nn: the functional ops of ``sneppx_core.functional``.

The ops live in core (inference installs have them without sneppx-nn); this module re-exports them
so that ``import sneppx_nn.functional as F`` and ``SneppX_ALG.nn.functional`` work as
``import torch.nn.functional as F`` and ``torch.nn.functional`` do.
"""

import sneppx_core.functional as _F
from sneppx_core.functional import *  # noqa: F401,F403

__all__ = list(_F.__all__)
