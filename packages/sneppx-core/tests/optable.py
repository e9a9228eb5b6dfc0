"""The op table that drives the op tests: every ``OpSpec`` registered by the ops_* modules.

Each spec names an op, gives one function ``fn(m, *inputs)`` written against a module ``m``
(``sneppx_core`` or ``torch``: both speak the same API, so one function drives both), a NumPy
reference ``ref(*arrays)``, the dtypes the op supports, the rule for the result dtype, and a list
of cases (the inputs' shapes and value domains). ``test_ops.py`` runs every spec:

* forward against NumPy for every supported dtype on contiguous, transposed, sliced (stepped)
  and broadcast inputs;
* backward against float64 central finite differences (``sneppx_core.testing``);
* forward and backward against PyTorch under ``pytest -m parity``.
"""

from __future__ import annotations

import ops_elementwise  # noqa: F401  (each module registers its specs with op())
import ops_reduce  # noqa: F401
import ops_shape  # noqa: F401
from optable_base import *  # noqa: F401,F403
from optable_base import OPS

OPS_BY_NAME = {s.name: s for s in OPS}
assert len(OPS_BY_NAME) == len(OPS), "op names must be unique"
