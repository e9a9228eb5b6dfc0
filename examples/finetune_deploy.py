"""Fine-tune a pretrained Hugging Face model folder, then serve it with only sneppx-core and sneppx-generate.

    python examples/finetune_deploy.py --model ./gpt2 --text my-notes.txt --out ft-run
    python examples/finetune_deploy.py --tiny --out ft-run     # a small random GPT-2 folder, no download

A "model folder" is what Hugging Face's ``save_pretrained`` writes and what the Hub serves:
``config.json``, ``model.safetensors`` (or shards with an index) and ``tokenizer.json``. Get one with
``huggingface-cli download gpt2 --local-dir gpt2``, or use ``--tiny`` to make one here.

Training needs sneppx-nn, -optim and -data. Serving (the ``serve`` function, run in a separate
process) imports only ``sneppx_core`` and ``sneppx_generate``: ``sneppx_generate.load_model`` builds
a forward-only model from the folder the fine-tuning wrote.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import shutil
import subprocess
import sys

import numpy as np

TEXT = ("SneppX keeps the training loop in Trainer, the optimizers in sneppx-optim and the models in "
        "sneppx-nn. Inference needs only sneppx-core and sneppx-generate. ") * 40


def make_tiny_gpt2(folder: pathlib.Path, text: str) -> None:
    """Writes a small GPT-2 folder with random weights and a BPE tokenizer trained on ``text``."""
    from safetensors.numpy import save_file
    from sneppx_generate import Tokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(vocab_size=320)
    tok.train([text])
    tok.save(str(folder / "tokenizer.json"))
    d, layers, heads, positions, vocab = 64, 2, 4, 128, tok.vocab_size
    rng = np.random.default_rng(0)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    tensors = {"wte.weight": w(vocab, d), "wpe.weight": w(positions, d),
               "ln_f.weight": np.ones(d, np.float32), "ln_f.bias": np.zeros(d, np.float32)}
    for i in range(layers):
        p = f"h.{i}."
        tensors.update({p + "ln_1.weight": np.ones(d, np.float32), p + "ln_1.bias": np.zeros(d, np.float32),
                        p + "ln_2.weight": np.ones(d, np.float32), p + "ln_2.bias": np.zeros(d, np.float32),
                        p + "attn.c_attn.weight": w(d, 3 * d), p + "attn.c_attn.bias": np.zeros(3 * d, np.float32),
                        p + "attn.c_proj.weight": w(d, d), p + "attn.c_proj.bias": np.zeros(d, np.float32),
                        p + "mlp.c_fc.weight": w(d, 4 * d), p + "mlp.c_fc.bias": np.zeros(4 * d, np.float32),
                        p + "mlp.c_proj.weight": w(4 * d, d), p + "mlp.c_proj.bias": np.zeros(d, np.float32)})
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": vocab,
              "n_positions": positions, "n_embd": d, "n_layer": layers, "n_head": heads,
              "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new", "tie_word_embeddings": True}
    (folder / "config.json").write_text(json.dumps(config, indent=1))


def finetune(model_dir: pathlib.Path, text: str, out: pathlib.Path, steps: int, seq_len: int) -> pathlib.Path:
    """Fine-tunes the folder's model on ``text``; writes the deployable folder ``out/model`` and returns it."""
    import sneppx_core as sx
    import sneppx_core.functional as F
    from sneppx_data import DataLoader, TokenDataset
    from sneppx_generate import Tokenizer
    from sneppx_nn import Transformer
    from sneppx_optim import AdamW, CosineAnnealingLR, Trainer

    sx.manual_seed(0)
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    model = Transformer.from_pretrained(str(model_dir))          # trainable modules, pretrained weights
    ids = np.asarray(tok.encode(text), dtype=np.int32)
    cut = int(len(ids) * 0.9)
    train = DataLoader(TokenDataset(ids[:cut], seq_len), batch_size=4, shuffle=True, drop_last=True)
    held_out = DataLoader(TokenDataset(ids[cut:], seq_len), batch_size=4)

    def lm_loss(logits, targets):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))

    opt = AdamW(model.parameters(), lr=1e-4, weight_decay=0.0)   # small steps: keep what it knew
    trainer = Trainer(model, opt, lm_loss, scheduler=CosineAnnealingLR(opt, T_max=steps), max_steps=steps,
                      grad_clip=1.0, checkpoint_dir=str(out / "checkpoints"))
    before = trainer.evaluate(held_out)
    trainer.fit(train, held_out)
    after = trainer.evaluate(held_out)
    print(f"held-out loss {before:.3f} before fine-tuning, {after:.3f} after ({steps} steps)")

    deploy = out / "model"
    deploy.mkdir(parents=True, exist_ok=True)
    model.save_checkpoint(str(deploy / "model.safetensors"))   # a SneppX checkpoint: weights + config
    shutil.copy(model_dir / "tokenizer.json", deploy / "tokenizer.json")
    return deploy


def serve(folder: str, prompt: str, max_new_tokens: int = 40) -> str:
    """Loads the deployed folder with sneppx-generate alone and continues ``prompt``."""
    from sneppx_generate import GenerationConfig, Tokenizer, generate, load_model

    model = load_model(folder)                                 # forward-only, from core ops
    tok = Tokenizer.from_file(str(pathlib.Path(folder) / "tokenizer.json"))
    ids = tok.encode(prompt)
    cfg = GenerationConfig(max_new_tokens=max_new_tokens, temperature=0.7, top_p=0.9, seed=0)
    return tok.decode(generate(model, [ids], cfg)["output_ids"].tolist()[0])


# Run in a fresh interpreter where the training packages cannot be imported, to show (and check)
# that serving needs only sneppx-core and sneppx-generate.
SERVE_ALONE = """
import sys
for name in ("sneppx_nn", "sneppx_optim", "sneppx_data", "sneppx_distributed", "SneppX_ALG"):
    sys.modules[name] = None          # importing any of them now fails
sys.path.insert(0, {here!r})
from finetune_deploy import serve
print(serve({folder!r}, {prompt!r}))
"""


def main(argv=None) -> None:
    """Fine-tunes, then serves the result in a separate process without the training packages."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", help="a Hugging Face model folder (config.json, safetensors, tokenizer.json)")
    p.add_argument("--tiny", action="store_true", help="make a small random GPT-2 folder instead")
    p.add_argument("--text", help="a UTF-8 text file to fine-tune on (default: a short built-in text)")
    p.add_argument("--out", default="ft-run")
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--seq-len", type=int, default=64)
    p.add_argument("--prompt", default="Inference needs")
    args = p.parse_args(argv)
    import sneppx_generate

    if not hasattr(sneppx_generate, "load_model"):
        raise SystemExit("finetune_deploy: this sneppx-generate has no load_model; upgrade sneppx-generate")
    out = pathlib.Path(args.out)
    text = pathlib.Path(args.text).read_text(encoding="utf-8") if args.text else TEXT
    if args.tiny:
        model_dir = out / "tiny-gpt2"
        make_tiny_gpt2(model_dir, text)
    elif args.model:
        model_dir = pathlib.Path(args.model)
    else:
        raise SystemExit("finetune_deploy: give --model FOLDER or --tiny")
    deploy = finetune(model_dir, text, out, args.steps, args.seq_len)
    code = SERVE_ALONE.format(here=str(pathlib.Path(__file__).resolve().parent), folder=str(deploy),
                              prompt=args.prompt)
    served = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if served.returncode != 0:
        raise SystemExit(f"finetune_deploy: serving failed:\n{served.stderr}")
    print(f"deployed: {deploy}\n{served.stdout.strip()}")


if __name__ == "__main__":
    main()
