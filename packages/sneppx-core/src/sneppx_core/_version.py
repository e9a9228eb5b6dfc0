"""Version of the sneppx-core distribution (the single place it is defined)."""

__version__ = "0.1.0"
