"""The ``sneppx`` command: ``train``, ``generate``, ``plot``, ``info`` and ``bench``.

    sneppx train [TEXT_FILE] --out DIR      train a small GPT (default corpus: stdlib docstrings)
    sneppx generate DIR --prompt "..."      stream text from a trained model or a Hugging Face folder
    sneppx plot DIR                         draw a run's loss and learning-rate curves to a PNG
    sneppx info                             versions, build options and devices
    sneppx bench                            the benchmark suite, side by side with PyTorch
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import sys

TOKENIZER_FILE = "tokenizer.json"
MODEL_FILE = "model.safetensors"
RUN_FILE = "run.json"
EVAL_BATCHES = 8


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
    from sneppx_data import DataLoader, Subset, TokenDataset
    from sneppx_nn import Transformer
    from sneppx_optim import AdamW, CosineAnnealingLR, Trainer

    for flag in ("steps", "seq_len", "batch_size", "d_model", "n_heads", "n_layers", "vocab_size"):
        if getattr(args, flag) < 1:
            raise SystemExit(f"sneppx train: --{flag.replace('_', '-')} must be >= 1, got {getattr(args, flag)}")
    if not args.lr > 0:
        raise SystemExit(f"sneppx train: --lr must be > 0, got {args.lr}")
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
    if len(train_ds) < args.batch_size or len(eval_ds) < 1:
        raise SystemExit(f"sneppx train: the text is too short for --seq-len {args.seq_len} and --batch-size "
                         f"{args.batch_size} ({len(ids):,} tokens); give a longer text or smaller values")
    train_loader = DataLoader(train_ds, batch_size=args.batch_size, shuffle=True, drop_last=True)
    eval_loader = DataLoader(eval_ds, batch_size=args.batch_size, drop_last=False)
    # The evaluations during training use a fixed sample of EVAL_BATCHES batches spread evenly over
    # the held-out split (cheap, and not just its first pages); the final held-out loss uses all of it.
    stride = max(1, len(eval_ds) // (EVAL_BATCHES * args.batch_size))
    probe = Subset(eval_ds, range(0, len(eval_ds), stride)[:EVAL_BATCHES * args.batch_size])
    probe_loader = DataLoader(probe, batch_size=args.batch_size, drop_last=False)
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
                      checkpoint_every=max(1, args.steps // 4), seed=args.seed, progress=not args.quiet,
                      log_dir=args.log_dir)
    resume = str(out / "checkpoints") if args.resume and (out / "checkpoints").exists() else None
    history = trainer.fit(train_loader, probe_loader, resume_from=resume)
    eval_loss = float(trainer.evaluate(eval_loader))
    model.save_checkpoint(str(out / MODEL_FILE))
    tok.save(str(out / TOKENIZER_FILE))
    unigram = unigram_loss(ids[:split], ids[split:], vocab)
    (out / RUN_FILE).write_text(json.dumps({"tokenizer": args.tokenizer, "vocab_size": vocab,
                                            "seq_len": args.seq_len, "steps": args.steps,
                                            "eval_loss": eval_loss, "unigram_loss": unigram}, indent=1))
    first = history.loss[0] if history.loss else float("nan")
    print(f"trained {args.steps} steps: train loss {first:.3f} -> {history.loss[-1]:.3f}", flush=True)
    print(f"held-out loss {eval_loss:.3f} nats/token (unigram baseline {unigram:.3f}, uniform "
          f"{math.log(vocab):.3f}; perplexity {math.exp(eval_loss):.2f})", flush=True)
    _summary_paths(out, args.log_dir)
    return 0


def unigram_loss(train_ids, eval_ids, vocab: int) -> float:
    """Cross-entropy (nats/token) of ``eval_ids`` under the training tokens' frequencies (add-one smoothed).

    The loss of a model that ignores context: a language model is learning something only below it.
    """
    import numpy as np

    counts = np.bincount(np.asarray(train_ids), minlength=vocab).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[np.asarray(eval_ids)].mean())


def _summary_paths(out: pathlib.Path, log_dir: str | None) -> None:
    from .plot import INSTALL_HINT, find_metrics, plot_run

    metrics = find_metrics(out)
    print(f"model:    {out / MODEL_FILE}")
    print(f"metrics:  {metrics}")
    try:
        print(f"plot:     {plot_run(out)}")
    except ImportError:
        print(f"plot:     not drawn: {INSTALL_HINT}, then `sneppx plot {out}`")
    if log_dir is not None:
        print(f"tensorboard: tensorboard --logdir {log_dir}")
    print(f"next:     sneppx generate {out} --prompt \"The \"", flush=True)


def generate(args) -> int:
    """Streams a continuation of each ``--prompt`` from ``args.dir``: a ``sneppx train`` folder or a
    Hugging Face model folder (both through sneppx-generate's ``load_model``)."""
    from sneppx_generate import load_model, load_tokenizer

    out = pathlib.Path(args.dir)
    hf = (out / "config.json").exists()
    if not (out / MODEL_FILE).exists() and not (out / "model.safetensors.index.json").exists():
        raise SystemExit(f"sneppx generate: {out} has no {MODEL_FILE}; run `sneppx train --out {out}` first "
                         "or pass a Hugging Face model folder")
    if args.max_new_tokens < 1:
        raise SystemExit(f"sneppx generate: --max-new-tokens must be >= 1, got {args.max_new_tokens}")
    try:
        model = load_model(out)
        tok = load_tokenizer(out)
    except (OSError, ValueError, KeyError, NotImplementedError) as e:
        raise SystemExit(f"sneppx generate: {e}")
    prompts = args.prompt or ["The "]
    for i, text in enumerate(prompts):
        if len(prompts) > 1:
            sys.stdout.write(f"--- sample {i + 1} of {len(prompts)} ---\n")
        if hf:  # a pretrained model knows where a text ends: stop at its end-of-text token
            _stream_pretrained(model, tok, text, args, seed=args.seed + 1000 * i)
        else:
            _stream_one(model, tok, text, args, seed=args.seed + 1000 * i)
    return 0


def _stream_pretrained(model, tok, text: str, args, seed: int) -> None:
    from sneppx_generate.cli import stream_text

    prompt = tok.encode(text)
    if not prompt:
        raise SystemExit(f"sneppx generate: the prompt {text!r} encodes to no tokens")
    sys.stdout.write(text)
    sampling = {"temperature": args.temperature, "top_k": args.top_k, "top_p": args.top_p, "seed": seed}
    if args.temperature == 0:
        sampling = {"do_sample": False, "seed": seed}
    stream_text(model, tok, prompt, args.max_new_tokens, **sampling)
    sys.stdout.write("\n")


def _stream_one(model, tok, text: str, args, seed: int) -> None:
    from sneppx_generate import GenerationConfig, stream

    prompt = tok.encode(text)
    if not prompt:
        raise SystemExit(f"sneppx generate: the prompt {text!r} encodes to no tokens")
    eos = getattr(tok, "eos_token_id", None)
    # The model sees at most max_seq_len tokens: longer outputs are made in chunks, each
    # conditioned on the most recent half window (a sliding context).
    window = int(getattr(model, "max_positions", None) or getattr(model, "max_seq_len", 1 << 30))
    chunk = max(1, min(args.max_new_tokens, window // 2))
    sys.stdout.write(text)
    ids, shown, made = list(prompt), text, 0
    while made < args.max_new_tokens:
        n = min(chunk, args.max_new_tokens - made)
        context = ids[-(window - n):]
        # `sneppx train` never puts the end-of-text token in the training text, so the model has
        # not learned where a text ends: the token is forbidden (min_new_tokens = n) unless the run
        # says otherwise, instead of stopping the sample at a chance draw of it.
        stops = bool(args.stop_at_eos)
        cfg = GenerationConfig(max_new_tokens=n, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
                               seed=seed + made, eos_token_id=eos, min_new_tokens=0 if stops else n)
        before = made
        for _, token in stream(model, [context], cfg):
            if token == eos:
                break
            ids.append(int(token))
            made += 1
            decoded = tok.decode(ids)
            sys.stdout.write(decoded[len(shown):])
            sys.stdout.flush()
            shown = decoded
        if made - before < n:  # the model ended the text
            sys.stdout.write(" [end of text]")
            break
    sys.stdout.write("\n")


def plot(args) -> int:
    """Draws the loss and learning-rate curves of the run in ``args.dir`` to a PNG."""
    from .plot import plot_run

    print(plot_run(args.dir, args.out))
    return 0


def info(args) -> int:
    """Prints versions, the active backend, build options and devices."""
    import sneppx_core as sx

    from . import versions

    for name, v in versions.items():
        print(f"{name:20s} {v}")
    print(f"{'C backend':20s} {sx._HAS_C_BACKEND}")
    if sx._HAS_C_BACKEND:
        import scipy_openblas32

        print(f"{'backend':20s} c")
        print(f"{'BLAS':20s} OpenBLAS (scipy-openblas32 {scipy_openblas32.__version__})")
    else:
        print(f"{'backend':20s} numpy (inference only: {sx._BACKEND_REASON})")
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
    t.add_argument("--log-dir", default=None, help="also write TensorBoard event files here (needs tensorboardX)")
    t.add_argument("--quiet", action="store_true", help="no progress bar")
    t.set_defaults(fn=train)
    g = sub.add_parser("generate", help="stream text from a trained model")
    g.add_argument("dir")
    g.add_argument("--prompt", action="append", help="text to continue (repeat for several samples; default \"The \")")
    g.add_argument("--max-new-tokens", type=int, default=200)
    g.add_argument("--temperature", type=float, default=0.8, help="0 = greedy")
    g.add_argument("--top-k", type=int, default=0)
    g.add_argument("--top-p", type=float, default=0.95)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--stop-at-eos", action="store_true",
                   help="end a sample at the end-of-text token (for models trained with one)")
    g.set_defaults(fn=generate)
    pl = sub.add_parser("plot", help="draw a run's loss and learning-rate curves to a PNG (needs matplotlib)")
    pl.add_argument("dir", help="a run folder (sneppx train --out), a checkpoint folder or a metrics.jsonl")
    pl.add_argument("--out", default=None, help="the PNG to write (default: DIR/loss.png)")
    pl.set_defaults(fn=plot)
    i = sub.add_parser("info", help="versions, build options and devices")
    i.set_defaults(fn=info)
    b = sub.add_parser("bench", help="run the benchmark suite")
    b.add_argument("rest", nargs=argparse.REMAINDER)
    b.set_defaults(fn=bench)
    return p


def main(argv=None) -> int:
    """Entry point of the ``sneppx`` command.

    Errors a user can fix (a missing file, a bad value, a missing optional package) end the
    command with one line on stderr, ``sneppx <command>: <what went wrong>``, and exit status 1.
    """
    args = parser().parse_args(argv)
    try:
        return args.fn(args)
    except (OSError, ImportError, ValueError) as e:
        msg = e.strerror + f": {e.filename}" if isinstance(e, OSError) and e.filename and e.strerror else str(e)
        print(f"sneppx {args.command}: {msg}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        hint = f"; continue with `sneppx train ... --out {args.out} --resume`" if args.command == "train" else ""
        print(f"sneppx {args.command}: interrupted{hint}", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
