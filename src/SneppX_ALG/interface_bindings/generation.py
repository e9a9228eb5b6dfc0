"""Generation API under the guide's path: ``from SneppX_ALG.interface_bindings.generation import generate``."""

from sneppx_generate import GenerationConfig, generate, stream, top_k_top_p_filtering  # noqa: F401

__all__ = ["GenerationConfig", "generate", "stream", "top_k_top_p_filtering"]
