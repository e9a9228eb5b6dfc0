"""Train a character-level GPT on a text file with Trainer, resume it, and plot its loss.

    python examples/char_gpt.py input.txt --out char-run --steps 600
    python examples/char_gpt.py input.txt --out char-run --steps 900 --resume   # 300 more steps
    python examples/char_gpt.py --out char-run ...      # no file: Python's own docstrings as text

The run folder gets the model (model.safetensors), the tokenizer, the Trainer's checkpoints and
metrics.jsonl, and loss.png (when matplotlib is installed).
"""

from __future__ import annotations

import argparse
import math
import pathlib

import numpy as np
import sneppx_core as sx
import sneppx_core.functional as F
from sneppx_data import DataLoader, Subset, TokenDataset
from sneppx_generate import GenerationConfig, SimpleTokenizer, generate
from sneppx_nn import Transformer
from sneppx_optim import AdamW, CosineAnnealingLR, Trainer
from sneppx_optim.metrics import read_metrics


def read_text(path: str | None) -> str:
    """The training text: the file, or (without one) docstrings of Python's standard library."""
    if path is None:
        from SneppX_ALG.corpus import default_corpus

        return default_corpus(max_chars=300_000)
    return pathlib.Path(path).read_text(encoding="utf-8")


def lm_loss(logits, targets):
    """Next-token cross-entropy: logits (B, T, V) against targets (B, T)."""
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def plot_loss(metrics_file: pathlib.Path, png: pathlib.Path) -> bool:
    """Draws training and held-out loss from metrics.jsonl; False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    rows = read_metrics(str(metrics_file))
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([r["step"] for r in rows], [r["loss"] for r in rows], alpha=0.4, label="train")
    evals = [(r["step"], r["eval_loss"]) for r in rows if "eval_loss" in r]
    if evals:
        ax.plot(*zip(*evals), "o-", label="held-out")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats/char)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    plt.close(fig)
    return True


def continue_text(model, tok, prompt: str, n: int, window: int) -> str:
    """Samples ``n`` characters after ``prompt``, in chunks of half the model's window.

    The model has seen positions up to ``window`` only, so each chunk is conditioned on the most
    recent characters that fit (a sliding context).
    """
    ids = tok.encode(prompt)
    while n > 0:
        k = min(n, window // 2)
        context = ids[-(window - k):]
        cfg = GenerationConfig(max_new_tokens=k, temperature=0.8, top_p=0.95, seed=len(ids))
        ids += generate(model, [context], cfg)["output_ids"].tolist()[0][len(context):]
        n -= k
    return tok.decode(ids)


def main(argv=None) -> dict:
    """Trains (or resumes), samples, plots; returns the numbers it printed."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("text", nargs="?", default=None, help="a UTF-8 text file")
    p.add_argument("--out", default="char-run")
    p.add_argument("--steps", type=int, default=600, help="total optimizer steps (including resumed ones)")
    p.add_argument("--resume", action="store_true", help="continue from the latest checkpoint in --out")
    p.add_argument("--seq-len", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--d-model", type=int, default=128)
    p.add_argument("--n-layers", type=int, default=3)
    p.add_argument("--n-heads", type=int, default=4)
    args = p.parse_args(argv)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sx.manual_seed(0)

    # 1. Characters to ids, ids to (input, next-character) windows.
    text = read_text(args.text)
    tok = SimpleTokenizer().train(text)
    ids = np.asarray(tok.encode(text), dtype=np.int32)
    cut = int(len(ids) * 0.9)
    train_ds = TokenDataset(ids[:cut], args.seq_len)
    eval_ds = TokenDataset(ids[cut:], args.seq_len)
    train = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, drop_last=True)
    probe = DataLoader(Subset(eval_ds, range(min(len(eval_ds), 4 * args.batch_size))), batch_size=args.batch_size)

    # 2. The model, optimizer and schedule. Resuming restores all three from the checkpoint.
    model = Transformer(tok.vocab_size, d_model=args.d_model, n_heads=args.n_heads, n_layers=args.n_layers,
                        max_seq_len=args.seq_len, positional="rope")
    opt = AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = CosineAnnealingLR(opt, min_lr=3e-4, max_lr=3e-3, total_steps=args.steps,
                              warmup_steps=max(1, args.steps // 20))
    trainer = Trainer(model, opt, lm_loss, scheduler=sched, max_steps=args.steps, grad_clip=1.0,
                      eval_every=max(1, args.steps // 6), checkpoint_dir=str(out / "checkpoints"),
                      checkpoint_every=max(1, args.steps // 6), seed=0)
    history = trainer.fit(train, probe, resume_from=str(out / "checkpoints") if args.resume else None)

    # 3. How good is it? The full held-out split, against a model that ignores context.
    held_out = trainer.evaluate(DataLoader(eval_ds, batch_size=args.batch_size))
    counts = np.bincount(ids[:cut], minlength=tok.vocab_size) + 1.0
    unigram = float(-np.log(counts / counts.sum())[ids[cut:]].mean())
    print(f"steps {history.step[0]}..{history.step[-1]}: train loss {history.loss[0]:.3f} -> {history.loss[-1]:.3f}")
    print(f"held-out loss {held_out:.3f} nats/char (unigram {unigram:.3f}, uniform {math.log(tok.vocab_size):.3f})")

    # 4. Save what inference needs, and sample.
    model.save_checkpoint(str(out / "model.safetensors"))
    tok.save(str(out / "tokenizer.json"))
    model.eval()
    sample = continue_text(model, tok, text[:20], 200, window=args.seq_len)
    print(f"--- sample ---\n{sample}\n---")

    # 5. The loss curve.
    png = out / "loss.png"
    print(f"plot: {png}" if plot_loss(out / "checkpoints" / "metrics.jsonl", png)
          else "plot: skipped (pip install matplotlib)")
    return {"held_out": held_out, "unigram": unigram, "steps": history.step, "sample": sample}


if __name__ == "__main__":
    main()
