"""``SummaryWriter``: TensorBoard event files with ``torch.utils.tensorboard``'s method names.

The event files are written by the ``tensorboardX`` library (an optional dependency: install
``sneppx-optim[tensorboard]``), or, without it, through the ``tensorboard`` package (what
``torch.utils.tensorboard`` uses; ``add_hparams`` then raises NotImplementedError); this class only
turns SneppX tensors into NumPy values on the way.
Code written for PyTorch migrates with an import change::

    from sneppx_optim.tensorboard import SummaryWriter   # was: from torch.utils.tensorboard import ...
    writer = SummaryWriter("runs/exp1")
    writer.add_scalar("loss/train", loss, step)
    writer.close()

Then ``tensorboard --logdir runs`` shows the curves.
"""

from __future__ import annotations

import numpy as np
import sneppx_core as sx

INSTALL_HINT = "pip install 'sneppx-optim[tensorboard]' (or: pip install tensorboardX)"


def _backend():
    """tensorboardX's ``SummaryWriter`` class, or else ``_tensorboard_files.FileWriter`` over the ``tensorboard``
    package (the one ``torch.utils.tensorboard`` uses)."""
    try:
        import tensorboardX
    except ImportError:
        try:
            from ._tensorboard_files import FileWriter
        except ImportError:
            msg = f"SummaryWriter needs the tensorboardX or the tensorboard package: {INSTALL_HINT}"
            raise ImportError(msg, name="tensorboardX") from None
        return FileWriter
    return tensorboardX.SummaryWriter


def _np(value):
    """A Tensor (any device), NumPy array or number as a NumPy value."""
    if isinstance(value, sx.Tensor):
        return value.detach().to("cpu").numpy()
    return np.asarray(value)


def _scalar(value) -> float:
    arr = _np(value)
    if arr.size != 1:
        raise ValueError(f"SummaryWriter.add_scalar: expected one value, got shape {tuple(arr.shape)}")
    return float(arr.reshape(()))


class SummaryWriter:
    """Writes TensorBoard event files to ``log_dir`` (like ``torch.utils.tensorboard.SummaryWriter``).

    Args:
        log_dir: the folder of the event files (default ``runs/<date>_<host><comment>``).
        comment: appended to the default ``log_dir``.
        purge_step: when resuming a run, events at and after this step from an earlier writer in
            the same folder are hidden by TensorBoard (as in PyTorch).
        max_queue: events kept in memory before a write.
        flush_secs: how often pending events are flushed to disk, in seconds.
        filename_suffix: appended to the event file's name.

    Raises:
        ImportError: neither ``tensorboardX`` nor ``tensorboard`` is installed (the message says how to
            install it).
    """

    def __init__(self, log_dir: str | None = None, comment: str = "", purge_step: int | None = None,
                 max_queue: int = 10, flush_secs: int = 120, filename_suffix: str = "") -> None:
        self._w = _backend()(logdir=log_dir, comment=comment, purge_step=purge_step, max_queue=max_queue,
                                    flush_secs=flush_secs, filename_suffix=filename_suffix)

    @property
    def log_dir(self) -> str:
        """The folder the event files are written to."""
        return self._w.logdir

    def get_logdir(self) -> str:
        """The folder the event files are written to (PyTorch's name for :attr:`log_dir`)."""
        return self.log_dir

    def add_scalar(self, tag: str, scalar_value, global_step: int | None = None, walltime: float | None = None):
        """Records one number (a float, or a one-element Tensor/array) under ``tag`` at ``global_step``."""
        self._w.add_scalar(tag, _scalar(scalar_value), global_step, walltime)

    def add_scalars(self, main_tag: str, tag_scalar_dict: dict, global_step: int | None = None,
                    walltime: float | None = None):
        """Records several numbers as curves of one chart: ``{"train": 0.3, "eval": 0.4}`` under ``main_tag``."""
        values = {k: _scalar(v) for k, v in tag_scalar_dict.items()}
        self._w.add_scalars(main_tag, values, global_step, walltime)

    def add_histogram(self, tag: str, values, global_step: int | None = None, bins: str = "tensorflow",
                      walltime: float | None = None, max_bins: int | None = None):
        """Records the distribution of ``values`` (a Tensor or array, e.g. a layer's weights or gradients).

        ``bins`` is ``"tensorflow"`` (exponential buckets), a NumPy bin rule such as ``"auto"``, or a
        number of bins.
        """
        arr = _np(values).astype(np.float64, copy=False).reshape(-1)
        self._w.add_histogram(tag, arr, global_step, bins=bins, walltime=walltime, max_bins=max_bins)

    def add_text(self, tag: str, text_string: str, global_step: int | None = None, walltime: float | None = None):
        """Records a piece of text (shown in TensorBoard's Text tab)."""
        self._w.add_text(tag, text_string, global_step, walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict) -> None:
        """Records a run's hyperparameters with its final metrics (TensorBoard's HParams tab)."""
        self._w.add_hparams(dict(hparam_dict), {k: _scalar(v) for k, v in metric_dict.items()})

    def flush(self) -> None:
        """Writes pending events to disk."""
        self._w.flush()

    def close(self) -> None:
        """Flushes and closes the event files."""
        self._w.close()

    def __enter__(self) -> "SummaryWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
