"""The ``sneppx`` command: ``train``, ``generate``, ``info`` and ``bench``.

    sneppx train [TEXT_FILE] --out DIR      train a small GPT (default corpus: stdlib docstrings)
    sneppx generate DIR --prompt "..."      stream text from a trained model or a Hugging Face folder
    sneppx info                             versions, build options and devices
    sneppx bench                            the benchmark suite, side by side with PyTorch
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

TOKENIZER_FILE = "tokenizer.json"
MODEL_FILE = "model.safetensors"
RUN_FILE = "run.json"


def _load_text(path: str | None) -> str:
    if path is None:
        from .corpus import default_corpus

        return default_corpus()
    try:
        return pathlib.Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise SystemExit(f"sneppx train: cannot read {path}: {e.strerror}")


def _tokenizer(kind: str, vocab_size: int, text: str):
    from sneppx_generate import SimpleTokenizer, Tokenizer

    if kind == "char":
        tok = SimpleTokenizer()
        tok.train(text)
        return tok
    tok = Tokenizer(vocab_size=vocab_size)
    tok.train([text])
    return tok


def train(args) -> int:
    """Trains a small Transformer language model with the Trainer and saves it to ``args.out``."""
    import numpy as np

    import sneppx_core as sx
    import sneppx_core.functional as F
    from sneppx_data import DataLoader, TokenDataset
    from sneppx_nn import Transformer
    from sneppx_optim import AdamW, CosineAnnealingLR, Trainer

    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sx.manual_seed(args.seed)
    text = _load_text(args.text_file)
    print(f"corpus: {len(text):,} characters", flush=True)
    tok = _tokenizer(args.tokenizer, args.vocab_size, text)
    ids = np.asarray(tok.encode(text), dtype=np.int32)
    split = int(len(ids) * 0.95)
    vocab = tok.vocab_size
    train_ds, eval_ds = TokenDataset(ids[:split], args.seq_len), TokenDataset(ids[split:], args.seq_len)
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, drop_last=True)
    eval_loader = DataLoader(eval_ds, batch_size=args.batch_size, drop_last=False)
    model = Transformer(vocab, d_model=args.d_model, n_heads=args.n_heads, n_layers=args.n_layers,
                        max_seq_len=args.seq_len, positional="rope")
    print(f"model: {model.num_parameters():,} parameters, vocabulary {vocab}, {len(ids):,} tokens", flush=True)

    def loss_fn(logits, target):
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))

    opt = AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = CosineAnnealingLR(opt, min_lr=args.lr / 10, max_lr=args.lr, total_steps=args.steps,
                              warmup_steps=max(1, args.steps // 20))
    trainer = Trainer(model, opt, loss_fn, scheduler=sched, max_steps=args.steps, grad_clip=1.0,
                      eval_every=max(1, args.steps // 4), checkpoint_dir=str(out / "checkpoints"),
                      checkpoint_every=max(1, args.steps // 4), seed=args.seed, progress=not args.quiet)
    resume = str(out / "checkpoints") if args.resume and (out / "checkpoints").exists() else None
    history = trainer.fit(train_loader, eval_loader, resume_from=resume)
    eval_loss = trainer.evaluate(eval_loader)
    model.save_checkpoint(str(out / MODEL_FILE))
    tok.save(str(out / TOKENIZER_FILE))
    (out / RUN_FILE).write_text(json.dumps({"tokenizer": args.tokenizer, "vocab_size": vocab,
                                            "seq_len": args.seq_len, "steps": args.steps,
                                            "eval_loss": float(eval_loss)}, indent=1))
    first = history.loss[0] if history.loss else float("nan")
    print(f"trained {args.steps} steps: first loss {first:.3f}, held-out loss {float(eval_loss):.3f}; "
          f"saved to {out}", flush=True)
    return 0


def generate(args) -> int:
    """Streams a continuation of ``args.prompt`` from ``args.dir``: a ``sneppx train`` folder or a
    Hugging Face model folder (both through sneppx-generate's ``load_model``)."""
    from sneppx_generate import load_model, load_tokenizer
    from sneppx_generate.cli import stream_text

    out = pathlib.Path(args.dir)
    if not (out / MODEL_FILE).exists() and not (out / "model.safetensors.index.json").exists():
        raise SystemExit(f"sneppx generate: {out} has no {MODEL_FILE}; run `sneppx train --out {out}` first "
                         "or pass a Hugging Face model folder")
    try:
        model = load_model(out)
        tok = load_tokenizer(out)
    except (OSError, ValueError, KeyError, NotImplementedError) as e:
        raise SystemExit(f"sneppx generate: {e}")
    prompt = tok.encode(args.prompt)
    if not prompt:
        raise SystemExit("sneppx generate: the prompt encodes to no tokens")
    sys.stdout.write(args.prompt)
    sampling = {"temperature": args.temperature, "top_k": args.top_k, "top_p": args.top_p, "seed": args.seed}
    if args.temperature == 0:
        sampling = {"do_sample": False, "seed": args.seed}
    stream_text(model, tok, prompt, args.max_new_tokens, **sampling)
    sys.stdout.write("\n")
    return 0


def info(args) -> int:
    """Prints versions, build options and devices."""
    import scipy_openblas32

    import sneppx_core as sx

    from . import versions

    for name, v in versions.items():
        print(f"{name:20s} {v}")
    print(f"{'C backend':20s} {sx._HAS_C_BACKEND}")
    print(f"{'BLAS':20s} OpenBLAS (scipy-openblas32 {scipy_openblas32.__version__})")
    print(f"{'threads':20s} {sx.get_num_threads()}")
    print(f"{'CUDA in this build':20s} {sx._HAS_CUDA}")
    print(f"{'devices':20s} cpu" + "".join(f", cuda:{i}" for i in range(sx.cuda.device_count())))
    return 0


def bench(args) -> int:
    """Runs benchmarks/run.py from the source tree (it measures PyTorch too when installed)."""
    candidates = [pathlib.Path.cwd() / "benchmarks" / "run.py",
                  pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"]
    for path in candidates:
        if path.exists():
            os.execv(sys.executable, [sys.executable, str(path), *args.rest])
    raise SystemExit("sneppx bench: benchmarks/run.py not found; run this from a SneppX source checkout")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="sneppx", description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    t = sub.add_parser("train", help="train a small GPT on a text file (or the default corpus)")
    t.add_argument("text_file", nargs="?", default=None)
    t.add_argument("--out", required=True, help="folder for the checkpoint and tokenizer")
    t.add_argument("--tokenizer", choices=["char", "bpe"], default="char")
    t.add_argument("--vocab-size", type=int, default=512, help="BPE vocabulary size")
    t.add_argument("--steps", type=int, default=500)
    t.add_argument("--seq-len", type=int, default=128)
    t.add_argument("--batch-size", type=int, default=16)
    t.add_argument("--d-model", type=int, default=128)
    t.add_argument("--n-heads", type=int, default=4)
    t.add_argument("--n-layers", type=int, default=3)
    t.add_argument("--lr", type=float, default=3e-3)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--resume", action="store_true", help="continue from the last checkpoint in --out")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(fn=train)
    g = sub.add_parser("generate", help="stream text from a trained model")
    g.add_argument("dir")
    g.add_argument("--prompt", default="The ")
    g.add_argument("--max-new-tokens", type=int, default=200)
    g.add_argument("--temperature", type=float, default=0.8, help="0 = greedy")
    g.add_argument("--top-k", type=int, default=0)
    g.add_argument("--top-p", type=float, default=0.95)
    g.add_argument("--seed", type=int, default=0)
    g.set_defaults(fn=generate)
    i = sub.add_parser("info", help="versions, build options and devices")
    i.set_defaults(fn=info)
    b = sub.add_parser("bench", help="run the benchmark suite")
    b.add_argument("rest", nargs=argparse.REMAINDER)
    b.set_defaults(fn=bench)
    return p


def main(argv=None) -> int:
    """Entry point of the ``sneppx`` command."""
    args = parser().parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
