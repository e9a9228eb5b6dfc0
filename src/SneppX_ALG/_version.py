"""Version of the sneppx-alg meta-package (the single place it is defined)."""

__version__ = "0.1.0"
