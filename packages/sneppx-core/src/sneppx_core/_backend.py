"""The backend under sneppx_core's Python layer, chosen once at import: the compiled C++ core
(``_SNEPPX_c``) or, when it cannot be imported or ``SNEPPX_BACKEND=numpy`` is set, the NumPy
backend (inference only).

``SNEPPX_BACKEND``: unset or ``auto`` tries the compiled core first; ``c`` requires it (its import
error propagates); ``numpy`` selects the NumPy backend. Every module of the Python layer imports
``_C`` from here.

On x86-64 the compiled core comes in two builds of the same sources: ``_SNEPPX_c`` for AVX2
(x86-64-v3, the baseline) and ``_avx512/_SNEPPX_c`` for AVX-512 (x86-64-v4), whose loops run on
512-bit vectors. The AVX-512 build is loaded where the CPU has it, under the module name
``sneppx_core._SNEPPX_c`` either way (so pickles name the same module on every machine).
``SNEPPX_CPU``: unset or ``auto`` picks by CPU; ``avx2`` forces the baseline; ``avx512`` requires
the AVX-512 build (ImportError when the CPU or the install lacks it).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import pathlib
import platform
import sys
import warnings

_V4_FLAGS = {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}  # x86-64-v4 over v3


def _cpu_has_avx512() -> bool:
    """Whether this CPU and its OS run x86-64-v4 code (Linux: the kernel lists only the features it enables)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return _V4_FLAGS <= set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return False


def _avx512_build():
    """The path of the AVX-512 build of the extension, or None when this install has none."""
    folder = pathlib.Path(__file__).parent / "_avx512"
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        path = folder / f"_SNEPPX_c{suffix}"
        if path.is_file():
            return path
    return None


def _load_compiled():
    """Import the compiled core: the AVX-512 build where the CPU has it (see ``SNEPPX_CPU``), else the AVX2 one."""
    want = os.environ.get("SNEPPX_CPU", "auto").strip().lower() or "auto"
    if want not in ("auto", "avx2", "avx512"):
        raise ImportError(f"SNEPPX_CPU must be 'auto', 'avx2' or 'avx512', got {want!r}")
    path = _avx512_build() if want != "avx2" else None
    usable = path is not None and _cpu_has_avx512()
    if want == "avx512" and not usable:
        raise ImportError("SNEPPX_CPU=avx512: " + ("this install has no AVX-512 build of sneppx-core" if path is None
                                                   else "this CPU does not run AVX-512 (x86-64-v4) code"))
    if not usable:
        from . import _SNEPPX_c

        return _SNEPPX_c, "avx2" if platform.machine().lower() in ("x86_64", "amd64") else "default"
    name = __package__ + "._SNEPPX_c"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    setattr(sys.modules[__package__], "_SNEPPX_c", module)
    return module, "avx512"


_choice = os.environ.get("SNEPPX_BACKEND", "auto").strip().lower() or "auto"
if _choice not in ("auto", "c", "numpy"):
    raise ImportError(f"SNEPPX_BACKEND must be 'auto', 'c' or 'numpy', got {_choice!r}")

_C = None
REASON = ""
CPU = ""  # the compiled core's instruction set: "avx512", "avx2" or "default" (other machines)
if _choice == "numpy":
    REASON = "SNEPPX_BACKEND=numpy is set"
else:
    try:
        import scipy_openblas32  # noqa: F401  (loads libscipy_openblas before the extension)

        _C, CPU = _load_compiled()
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
