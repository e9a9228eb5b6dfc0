"""Version-range checks that sibling packages run at import time."""

from __future__ import annotations

from ._version import __version__


def _parse(v: str) -> tuple:
    parts = []
    for p in v.split("+")[0].split("."):
        digits = "".join(ch for ch in p if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    while len(parts) < 3:
        parts.append(0)
    return tuple(parts[:3])


def require_core(minimum: str, below: str, package: str) -> None:
    """Raise ImportError unless ``minimum <= sneppx_core.__version__ < below``.

    Sibling packages call this at import so that a mismatched install fails
    early with an actionable message instead of an obscure error later.
    """
    have = _parse(__version__)
    if not (_parse(minimum) <= have < _parse(below)):
        raise ImportError(
            f"{package} needs sneppx-core >={minimum},<{below} but sneppx-core "
            f"{__version__} is installed; run: pip install 'sneppx-core>={minimum},<{below}'"
        )
