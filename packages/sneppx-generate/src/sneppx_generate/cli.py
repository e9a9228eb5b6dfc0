"""The ``sneppx-generate`` command: stream text from a pretrained model folder.

    sneppx-generate MODEL_DIR --prompt "Once upon a time" [--max-new-tokens N --temperature T
                    --top-k K --top-p P --seed S --dtype bfloat16 --device cuda --chat]

MODEL_DIR is a Hugging Face folder (config.json, safetensors, tokenizer.json) or a folder written
by ``sneppx train``. ``--chat`` wraps the prompt as a user message in the tokenizer's chat template
(needs Jinja2). ``--temperature 0`` decodes greedily. ``--device cuda`` runs on the GPU (a CUDA build of
sneppx-core); the CPU by default.
"""

from __future__ import annotations

import argparse
import sys

from .config import GenerationConfig
from .generation import stream
from .pretrained import load_model, load_tokenizer


def stream_text(model, tok, prompt_ids, max_new_tokens, out=None, **sampling) -> list:
    """Generate up to ``max_new_tokens`` after ``prompt_ids`` and write the new text to ``out`` as it
    comes; returns the new ids. Past the model's context, generation goes on in chunks, each
    conditioned on the most recent half window (a sliding context). ``out`` defaults to stdout."""
    out = sys.stdout if out is None else out
    window = int(getattr(model, "max_positions", None) or getattr(model, "max_seq_len", 1 << 30))
    chunk = max(1, min(max_new_tokens, window // 2))
    ids, new, shown = list(prompt_ids), [], ""
    seed = sampling.pop("seed", 0)
    while len(new) < max_new_tokens:
        n = min(chunk, max_new_tokens - len(new))
        context = ids[-(window - n):]
        before = len(new)
        cfg = GenerationConfig(max_new_tokens=n, seed=seed + len(new), **sampling)
        for _, token in stream(model, [context], cfg):
            ids.append(int(token))
            new.append(int(token))
            text = tok.decode(new)
            if len(text) > len(shown) and text.startswith(shown) and not text.endswith("\ufffd"):
                out.write(text[len(shown):])
                out.flush()
                shown = text
        if len(new) - before < n:  # the model ended the sequence
            break
    text = tok.decode(new)
    if text.startswith(shown):
        out.write(text[len(shown):])
    return new


def parser() -> argparse.ArgumentParser:
    """Arguments of ``sneppx-generate``."""
    p = argparse.ArgumentParser(prog="sneppx-generate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model_dir", help="Hugging Face model folder or `sneppx train` output")
    p.add_argument("--prompt", default="", help="text to continue (or the user message with --chat)")
    p.add_argument("--max-new-tokens", type=int, default=128)
    p.add_argument("--temperature", type=float, default=0.8, help="0 = greedy")
    p.add_argument("--top-k", type=int, default=0)
    p.add_argument("--top-p", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--device", default="cpu", help="where the model runs: cpu, cuda or cuda:N")
    p.add_argument("--chat", action="store_true", help="apply the tokenizer's chat template to the prompt")
    p.add_argument("--version", action="version", version=version_line(),
                   help="print the versions and the active sneppx-core backend, then exit")
    return p


def version_line() -> str:
    """``sneppx-generate X (sneppx-core Y, <backend> backend)``."""
    import sneppx_core as sx

    from . import __version__

    backend = "C" if sx._HAS_C_BACKEND else "NumPy (inference only)"
    return f"sneppx-generate {__version__} (sneppx-core {sx.__version__}, {backend} backend)"


def sampling_options(args) -> dict:
    """GenerationConfig fields for the command-line options (greedy when temperature is 0)."""
    if args.temperature == 0:
        return {"do_sample": False, "seed": args.seed}
    return {"temperature": args.temperature, "top_k": args.top_k, "top_p": args.top_p, "do_sample": True,
            "seed": args.seed}


def main(argv=None) -> int:
    """Entry point of ``sneppx-generate``."""
    args = parser().parse_args(argv)
    try:
        model = load_model(args.model_dir, dtype=args.dtype, device=args.device)
        tok = load_tokenizer(args.model_dir)
    except (OSError, ValueError, KeyError, NotImplementedError, RuntimeError) as e:
        raise SystemExit(f"sneppx-generate: {e}")
    if args.chat:
        if not hasattr(tok, "apply_chat_template"):
            raise SystemExit("sneppx-generate: --chat needs a tokenizer with a chat template")
        try:
            prompt = tok.apply_chat_template([{"role": "user", "content": args.prompt}], tokenize=True)
        except (ValueError, ImportError) as e:
            raise SystemExit(f"sneppx-generate: {e}")
    else:
        prompt = tok.encode(args.prompt)
        sys.stdout.write(args.prompt)
    if not prompt:
        bos = (getattr(model, "generation_defaults", None) or {}).get("bos_token_id", tok.bos_token_id)
        if bos is None:
            raise SystemExit("sneppx-generate: the prompt encodes to no tokens and the model has no BOS token")
        prompt = [bos]
    stream_text(model, tok, prompt, args.max_new_tokens, **sampling_options(args))
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
