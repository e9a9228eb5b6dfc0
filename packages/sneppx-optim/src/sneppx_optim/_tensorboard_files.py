"""Event files through the ``tensorboard`` package (what ``torch.utils.tensorboard`` needs), for
``SummaryWriter`` when ``tensorboardX`` is not installed: scalars (``add_scalars`` writes one folder per curve,
as PyTorch does), histograms (TensorFlow's exponential buckets by default) and text; ``add_hparams`` needs
tensorboardX."""

from __future__ import annotations

import functools
import os
import socket
import time
from datetime import datetime

import numpy as np
from tensorboard.compat.proto.event_pb2 import Event, SessionLog
from tensorboard.compat.proto.summary_pb2 import HistogramProto, Summary, SummaryMetadata
from tensorboard.compat.proto.tensor_pb2 import TensorProto
from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto
from tensorboard.plugins.text.plugin_data_pb2 import TextPluginData
from tensorboard.summary.writer.event_file_writer import EventFileWriter


@functools.cache
def _tensorflow_bins() -> tuple:
    v, pos = 1e-12, []
    while v < 1e20:
        pos.append(v)
        v *= 1.1
    return tuple([-x for x in reversed(pos)] + [0.0] + pos)


def histogram_proto(values: np.ndarray, bins) -> HistogramProto:
    """The histogram of ``values``: buckets from the first to the last non-empty one (right edges and counts)."""
    counts, edges = np.histogram(values, bins=_tensorflow_bins() if bins == "tensorflow" else bins)
    nonzero = np.flatnonzero(counts)
    lo, hi = (nonzero[0], nonzero[-1] + 1) if nonzero.size else (0, 0)
    return HistogramProto(min=float(values.min()), max=float(values.max()), num=int(values.size),
                          sum=float(values.sum()), sum_squares=float(values.dot(values)),
                          bucket_limit=edges[lo + 1:hi + 1].tolist(), bucket=counts[lo:hi].tolist())


class FileWriter:
    """``tensorboardX.SummaryWriter``'s methods that ``sneppx_optim.SummaryWriter`` calls, over the ``tensorboard``
    package's event file writer."""

    def __init__(self, logdir=None, comment: str = "", purge_step=None, max_queue: int = 10, flush_secs: int = 120,
                 filename_suffix: str = "") -> None:
        if logdir is None:
            stamp = datetime.now().strftime("%b%d_%H-%M-%S")
            logdir = os.path.join("runs", f"{stamp}_{socket.gethostname()}{comment}")
        self.logdir, self._queue, self._flush, self._suffix = str(logdir), max_queue, flush_secs, filename_suffix
        self._writer = EventFileWriter(self.logdir, max_queue, flush_secs, filename_suffix)
        self._curves: dict = {}  # add_scalars' folders
        if purge_step is not None:
            self._writer.add_event(Event(step=purge_step, file_version="brain.Event:2"))
            self._writer.add_event(Event(step=purge_step, session_log=SessionLog(status=SessionLog.START)))

    def _add(self, summary: Summary, step, walltime, writer=None) -> None:
        event = Event(summary=summary, wall_time=time.time() if walltime is None else walltime)
        if step is not None:
            event.step = int(step)
        (writer or self._writer).add_event(event)

    def add_scalar(self, tag: str, value: float, step=None, walltime=None) -> None:
        """One number under ``tag``."""
        self._add(Summary(value=[Summary.Value(tag=tag, simple_value=value)]), step, walltime)

    def add_scalars(self, main_tag: str, values: dict, step=None, walltime=None) -> None:
        """Several curves of one chart: each in its own folder ``<logdir>/<main_tag>_<name>``, tagged ``main_tag``."""
        for name, value in values.items():
            folder = os.path.join(self.logdir, f"{main_tag.replace('/', '_')}_{name}")
            if folder not in self._curves:
                self._curves[folder] = EventFileWriter(folder, self._queue, self._flush, self._suffix)
            self._add(Summary(value=[Summary.Value(tag=main_tag, simple_value=value)]), step, walltime,
                      self._curves[folder])

    def add_histogram(self, tag: str, values: np.ndarray, step=None, bins="tensorflow", walltime=None,
                      max_bins=None) -> None:
        """The distribution of ``values``."""
        self._add(Summary(value=[Summary.Value(tag=tag, histo=histogram_proto(values, bins))]), step, walltime)

    def add_text(self, tag: str, text: str, step=None, walltime=None) -> None:
        """Text for TensorBoard's text tab (tag ``<tag>/text_summary``, as PyTorch writes it)."""
        meta = SummaryMetadata(plugin_data=SummaryMetadata.PluginData(
            plugin_name="text", content=TextPluginData(version=0).SerializeToString()))
        tensor = TensorProto(dtype="DT_STRING", string_val=[text.encode("utf-8")],
                             tensor_shape=TensorShapeProto(dim=[TensorShapeProto.Dim(size=1)]))
        self._add(Summary(value=[Summary.Value(tag=f"{tag}/text_summary", metadata=meta, tensor=tensor)]), step,
                  walltime)

    def add_hparams(self, hparam_dict: dict, metric_dict: dict) -> None:
        """Not written by this fallback (TensorBoard's hparams records need tensorboardX here)."""
        raise NotImplementedError("SummaryWriter.add_hparams needs the tensorboardX package: pip install "
                                  "tensorboardX")

    def flush(self) -> None:
        """Writes pending events."""
        for w in (self._writer, *self._curves.values()):
            w.flush()

    def close(self) -> None:
        """Flushes and closes every event file."""
        for w in (self._writer, *self._curves.values()):
            w.close()
