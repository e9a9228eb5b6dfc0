"""sneppx-generate: text generation, logits processors and tokenizers for SneppX models.

With only ``sneppx-core`` and this package installed, any model that follows the generation
protocol (``model(input_ids, cache=None) -> logits``, optional ``new_cache``) can generate text::

    from sneppx_generate import GenerationConfig, Tokenizer, generate
    tok = Tokenizer(vocab_size=32000)
    ids = tok.encode("Hello, SneppX")
    result = generate(model, ids, generation_config=GenerationConfig(max_new_tokens=64, top_p=0.9))
    print(tok.decode(result["output_ids"].tolist()[0]))

Pretrained models (Hugging Face folders of gpt2, llama, mistral, qwen2 and qwen3, and SneppX
checkpoints) load with ``load_model(folder)`` and ``Tokenizer.from_pretrained(folder)``.
"""

__version__ = "0.1.0"

from sneppx_core import require_core

require_core("0.1", "0.2", "sneppx-generate")

from .config import GenerationConfig  # noqa: E402
from .generation import generate, stream  # noqa: E402
from .processors import (  # noqa: E402
    apply_min_p,
    apply_repetition_penalty,
    apply_temperature,
    apply_top_k,
    apply_top_p,
    process_logits,
    top_k_top_p_filtering,
)
from .pretrained import load_model, load_tokenizer  # noqa: E402
from .simple_tokenizer import SimpleTokenizer  # noqa: E402
from .tokenizer import Tokenizer  # noqa: E402

__all__ = [
    "GenerationConfig",
    "generate",
    "stream",
    "apply_repetition_penalty",
    "apply_temperature",
    "apply_top_k",
    "apply_top_p",
    "apply_min_p",
    "process_logits",
    "top_k_top_p_filtering",
    "Tokenizer",
    "SimpleTokenizer",
    "load_model",
    "load_tokenizer",
]
