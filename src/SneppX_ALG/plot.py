"""``sneppx plot RUN_DIR``: the loss and learning-rate curves of a training run, drawn to a PNG.

The numbers come from the ``metrics.jsonl`` that ``Trainer`` writes into its checkpoint folder;
matplotlib (an optional dependency: ``pip install 'sneppx-alg[plot]'``) draws them.
"""

from __future__ import annotations

import json
import math
import pathlib

PLOT_FILE = "loss.png"
INSTALL_HINT = "pip install 'sneppx-alg[plot]' (or: pip install matplotlib)"


def find_metrics(run: str | pathlib.Path) -> pathlib.Path:
    """The ``metrics.jsonl`` of a run: ``run`` itself, ``run/metrics.jsonl`` or ``run/checkpoints/metrics.jsonl``.

    Raises:
        FileNotFoundError: none of them exists (the message names the places looked at).
    """
    run = pathlib.Path(run)
    candidates = [run] if run.suffix == ".jsonl" else [run / "metrics.jsonl", run / "checkpoints" / "metrics.jsonl"]
    for path in candidates:
        if path.is_file():
            return path
    raise FileNotFoundError(f"no metrics.jsonl at {' or '.join(str(p) for p in candidates)}")


def _smooth(values: list, window: int) -> list:
    """Running mean over the last ``window`` values (the curve a reader wants from noisy step losses)."""
    out, total = [], 0.0
    for i, v in enumerate(values):
        total += v
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def plot_run(run: str | pathlib.Path, out: str | pathlib.Path | None = None, title: str | None = None) -> pathlib.Path:
    """Draws the training loss (raw and smoothed), the evaluation loss and the learning rate of a run.

    Args:
        run: a run folder (``sneppx train --out``), a Trainer checkpoint folder, or a metrics file.
        out: the PNG to write (default: ``loss.png`` beside the run's ``run.json``, else beside
            the metrics file).
        title: the figure title (default: the run folder's name).

    Returns:
        The path of the PNG.

    Raises:
        FileNotFoundError: the run has no metrics file.
        ImportError: matplotlib is not installed.
        ValueError: the metrics file holds no training steps.
    """
    path = find_metrics(run)
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    steps = [r for r in rows if r.get("loss") is not None]
    if not steps:
        raise ValueError(f"{path} holds no training steps yet")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ImportError(f"plotting needs matplotlib: {INSTALL_HINT}", name="matplotlib") from None
    folder = path.parent.parent if path.parent.name == "checkpoints" else path.parent
    out = pathlib.Path(out) if out is not None else folder / PLOT_FILE
    x = [r["step"] for r in steps]
    loss = [r["loss"] for r in steps]
    evals = [(r["step"], r["eval_loss"]) for r in rows if r.get("eval_loss") is not None]
    fig, (ax, ax_lr) = plt.subplots(2, 1, figsize=(8, 6), sharex=True, height_ratios=[3, 1])
    window = max(1, len(loss) // 50)
    if window > 1:
        ax.plot(x, loss, color="tab:blue", alpha=0.25, linewidth=1, label="train loss (per step)")
        ax.plot(x, _smooth(loss, window), color="tab:blue", linewidth=2, label=f"train loss (mean of {window} steps)")
    else:
        ax.plot(x, loss, color="tab:blue", linewidth=2, label="train loss")
    if evals:
        ax.plot(*zip(*evals), "o-", color="tab:orange", linewidth=2, label="held-out loss")
    if all(v > 0 for v in loss) and max(loss) / min(loss) > 20:
        ax.set_yscale("log")
    ax.set_ylabel("loss")
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title or folder.resolve().name)
    ax_lr.plot(x, [r.get("lr", math.nan) for r in steps], color="tab:green")
    ax_lr.set_ylabel("learning rate")
    ax_lr.set_xlabel("step")
    ax_lr.grid(alpha=0.3)
    ax_lr.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3))
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
