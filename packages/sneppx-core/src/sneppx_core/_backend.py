"""The backend under sneppx_core's Python layer, chosen once at import: the compiled C++ core
(``_SNEPPX_c``) or, when it cannot be imported or ``SNEPPX_BACKEND=numpy`` is set, the NumPy
backend (inference only).

``SNEPPX_BACKEND``: unset or ``auto`` tries the compiled core first; ``c`` requires it (its import
error propagates); ``numpy`` selects the NumPy backend. Every module of the Python layer imports
``_C`` from here.
"""

from __future__ import annotations

import os
import warnings

_choice = os.environ.get("SNEPPX_BACKEND", "auto").strip().lower() or "auto"
if _choice not in ("auto", "c", "numpy"):
    raise ImportError(f"SNEPPX_BACKEND must be 'auto', 'c' or 'numpy', got {_choice!r}")

_C = None
REASON = ""
if _choice == "numpy":
    REASON = "SNEPPX_BACKEND=numpy is set"
else:
    try:
        import scipy_openblas32  # noqa: F401  (loads libscipy_openblas before the extension)

        from . import _SNEPPX_c as _C
    except ImportError as e:
        if _choice == "c":
            raise
        REASON = f"the compiled extension _SNEPPX_c could not be imported ({type(e).__name__}: {e})"

if _C is None:
    from . import _numpy_backend as _C

    warnings.warn(f"sneppx_core runs on its NumPy backend (inference only; training needs the C backend): {REASON}",
                  ImportWarning, stacklevel=2)
    NAME = "numpy"
else:
    NAME = "c"


def require_training(op: str) -> None:
    """Raises RuntimeError naming ``op`` unless the C backend (with its autograd tape) is active."""
    if NAME != "c":
        _C.needs_tape(op)
