"""What ``Trainer`` records while it trains: ``metrics.jsonl`` lines, TensorBoard scalars, throughput.

``metrics.jsonl`` holds one JSON object per optimizer step, for example::

    {"step": 120, "epoch": 0, "time": 41.3, "loss": 2.41, "lr": 0.003, "grad_norm": 0.82,
     "samples_per_s": 45.1, "tokens_per_s": 5773.0, "eval_loss": 2.47}

``eval_loss`` appears on the steps after which an evaluation ran, ``tokens_per_s`` when the inputs
are integer token ids. The file is plain text: ``pandas.read_json(path, lines=True)`` reads it, and
``sneppx plot`` draws it.
"""

from __future__ import annotations

import json
import math
import os
import time

import sneppx_core as sx

METRICS_FILE = "metrics.jsonl"
TB_TAGS = {"loss": "train/loss", "lr": "train/lr", "grad_norm": "train/grad_norm",
           "samples_per_s": "train/samples_per_s", "tokens_per_s": "train/tokens_per_s", "eval_loss": "eval/loss"}


def count_tokens(x) -> int:
    """The number of token ids in ``x`` when it is an integer Tensor (a batch of ids), else 0."""
    if isinstance(x, sx.Tensor) and x.dtype in (sx.int32, sx.int64, sx.int16):
        return x.numel()
    return 0


def read_metrics(path: str) -> list:
    """The records of a ``metrics.jsonl`` file (a file, or a folder holding one), as a list of dicts."""
    if os.path.isdir(path):
        path = os.path.join(path, METRICS_FILE)
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class Throughput:
    """Samples and tokens per second of each optimizer step, timing only the training work.

    ``add`` counts a micro-batch; ``step`` closes an optimizer step and returns its rates;
    ``restart`` starts the clock again after work that is not training (evaluation, checkpoints).
    """

    def __init__(self) -> None:
        self.restart()

    def restart(self) -> None:
        """Starts timing the next step now."""
        self._t, self._samples, self._tokens = time.perf_counter(), 0, 0

    def add(self, samples: int, tokens: int) -> None:
        """Counts one micro-batch of ``samples`` samples holding ``tokens`` token ids."""
        self._samples += samples
        self._tokens += tokens

    def step(self) -> dict:
        """The rates of the step that just ended (``tokens_per_s`` only when tokens were counted)."""
        dt = max(time.perf_counter() - self._t, 1e-9)
        rates = {"samples_per_s": self._samples / dt}
        if self._tokens:
            rates["tokens_per_s"] = self._tokens / dt
        self.restart()
        return rates


class MetricsLog:
    """Writes step records to ``<folder>/metrics.jsonl`` and, with ``log_dir``, to TensorBoard.

    Args:
        folder: where ``metrics.jsonl`` goes (the Trainer's ``checkpoint_dir``); None: no file.
        log_dir: a TensorBoard log folder (needs ``tensorboardX``); None: no event files.
        resume_step: the step training restarts from. Records after it, left by an earlier run
            that went further than its last checkpoint, are dropped (from the file, and hidden in
            TensorBoard with ``purge_step``), so the curves never hold two versions of a step.
    """

    def __init__(self, folder: str | None, log_dir: str | None, resume_step: int = 0) -> None:
        self.path = os.path.join(folder, METRICS_FILE) if folder is not None else None
        self._file = self._writer = None
        if self.path is not None:
            os.makedirs(folder, exist_ok=True)
            self._truncate(resume_step)
            self._file = open(self.path, "a", encoding="utf-8")
        if log_dir is not None:
            from .tensorboard import SummaryWriter

            self._writer = SummaryWriter(log_dir, purge_step=resume_step + 1 if resume_step else None)

    @property
    def active(self) -> bool:
        """Whether anything is recorded."""
        return self._file is not None or self._writer is not None

    def _truncate(self, resume_step: int) -> None:
        if not os.path.exists(self.path):
            return
        if resume_step == 0:
            os.remove(self.path)
            return
        keep = [r for r in read_metrics(self.path) if r.get("step", 0) <= resume_step]
        with open(self.path, "w", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in keep)

    def write(self, record: dict) -> None:
        """Records one step (a dict with ``step`` and numbers); non-finite numbers are written as null."""
        clean = {k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in record.items()}
        if self._file is not None:
            self._file.write(json.dumps(clean) + "\n")
            self._file.flush()
        if self._writer is not None:
            for key, tag in TB_TAGS.items():
                if clean.get(key) is not None:
                    self._writer.add_scalar(tag, clean[key], record["step"])

    def close(self) -> None:
        """Closes the file and the event writer."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if self._writer is not None:
            self._writer.close()
            self._writer = None
