"""Classifier heads with their loss: AdaptiveLogSoftmaxWithLoss and LinearCrossEntropyLoss (with
LinearCrossEntropyOptions)."""

from __future__ import annotations

import math
from collections import namedtuple

import sneppx_core as sx
import sneppx_core.functional as F

from .containers import ModuleList, Sequential
from .linear import Linear
from .loss import _Loss, _weight_buffer
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module, record_config=True):
    """Adaptive softmax (Grave et al., 2016): a cheap approximation of log softmax over many classes.

    Classes are split by ``cutoffs`` [c_1, ..., c_k] (increasing, in 1..n_classes-1) into a shortlist [0, c_1)
    and clusters [c_i, c_{i+1}). The ``head`` Linear(in_features, c_1 + k) scores the shortlist classes and one
    entry per cluster; cluster i's ``tail[i]`` = Sequential(Linear(in_features, in_features // div_value^(i+1)),
    Linear(that, cluster size)), both without bias, scores the classes inside it. Then

        log p(y) = log_softmax(head(x))_y                                  for y in the shortlist,
        log p(y) = log_softmax(head(x))_{c_1 + i} + log_softmax(tail_i(x))_{y - c_i}   for y in cluster i.

    ``forward(input, target)`` returns ``(output, loss)``: output the log p of each target (N,) (or a 0-d tensor
    for (in_features,) input and a 0-d target) and loss = mean(-output). Parameter names (``head.weight``,
    ``tail.i.0.weight``, ``tail.i.1.weight``) are PyTorch's, so its ``state_dict`` loads.
    """

    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0, head_bias: bool = False,
                 device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("[AdaptiveLogSoftmaxWithLoss] cutoffs should be a sequence of length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 \
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError("[AdaptiveLogSoftmaxWithLoss] cutoffs should be a sequence of unique, positive integers "
                             f"sorted in an increasing order, each between 1 and n_classes-1, got {cutoffs} for "
                             f"n_classes={n_classes}")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs, self.div_value, self.head_bias = cutoffs + [n_classes], div_value, head_bias
        self.shortlist_size, self.n_clusters = self.cutoffs[0], len(cutoffs)
        self.head_size = self.shortlist_size + self.n_clusters
        kw = {"device": device, "dtype": dtype}
        self.head = Linear(in_features, self.head_size, bias=head_bias, **kw)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **kw),
                                        Linear(hidden, self.cutoffs[i + 1] - self.cutoffs[i], bias=False, **kw)))

    def reset_parameters(self) -> None:
        """Re-initialises the head and every tail projection as new Linear layers."""
        self.head.reset_parameters()
        for proj in self.tail:
            for lin in proj:
                lin.reset_parameters()

    def _check(self, input, target):
        name = "[AdaptiveLogSoftmaxWithLoss]"
        if target.ndim not in (0, 1) or input.ndim != target.ndim + 1 or input.shape[-1] != self.in_features \
                or (target.ndim == 1 and input.shape[0] != target.shape[0]):
            raise ValueError(f"{name} expected input (N, {self.in_features}) with target (N,), or input "
                             f"({self.in_features},) with a 0-d target, got {tuple(input.shape)} and "
                             f"{tuple(target.shape)}")
        if target.is_floating_point() or target.dtype == sx.bool_:
            raise TypeError(f"{name} target must hold integer class indices, got {target.dtype}")
        if target.numel() and ((target < 0).any().item() or (target >= self.n_classes).any().item()):
            raise ValueError(f"{name} target values should be in [0, {self.n_classes - 1}], but values in range "
                             f"[{target.min().item()}, {target.max().item()}] were found")

    def forward(self, input, target):
        """``(output, loss)``: the log-probability of each target class, and the mean negative log-likelihood."""
        self._check(input, target)
        batched = target.ndim == 1
        x, y = (input, target) if batched else (input.unsqueeze(0), target.reshape((1,)))
        head = F.log_softmax(self.head(x), 1)
        index = y.clone()
        output = sx.zeros((x.shape[0],), dtype=head.dtype, device=x.device)
        for i in range(self.n_clusters):
            low, high = self.cutoffs[i], self.cutoffs[i + 1]
            in_cluster = (y >= low) & (y < high)
            rows = in_cluster.nonzero().reshape(-1)
            if rows.numel() == 0:
                continue
            index = index.masked_fill(in_cluster, self.shortlist_size + i)
            local = F.log_softmax(self.tail[i](x.index_select(0, rows)), 1)
            picked = local.gather(1, (y.index_select(0, rows) - low).unsqueeze(1)).reshape(-1)
            output = output.index_add(0, rows, picked)
        output = output + head.gather(1, index.unsqueeze(1)).reshape(-1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _full_log_prob(self, input, head_output):
        head = F.log_softmax(head_output, 1)
        parts = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            parts.append(F.log_softmax(self.tail[i](input), 1) + head[:, self.shortlist_size + i].unsqueeze(1))
        return sx.cat(parts, 1)

    def log_prob(self, input):
        """log p(class) for every class: (N, in_features) -> (N, n_classes) ((in_features,) -> (n_classes,))."""
        x = input if input.ndim == 2 else input.unsqueeze(0)
        out = self._full_log_prob(x, self.head(x))
        return out if input.ndim == 2 else out.squeeze(0)

    def predict(self, input):
        """The most likely class of each row of (N, in_features) input: the head's argmax when it is a shortlist
        class, otherwise the argmax of the full log-probabilities (as PyTorch computes it)."""
        with sx.no_grad():
            head_output = self.head(input)
            output = head_output.argmax(1)
            outside = output >= self.shortlist_size
            rows = outside.nonzero().reshape(-1)
            if rows.numel() == 0:
                return output
            full = self._full_log_prob(input.index_select(0, rows), head_output.index_select(0, rows))
            return output.index_copy(0, rows, full.argmax(1))

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, n_classes={self.n_classes}, cutoffs={self.cutoffs[:-1]}, "
                f"div_value={self.div_value}, head_bias={self.head_bias}")


class LinearCrossEntropyOptions:
    """Chunking of :class:`LinearCrossEntropyLoss` / ``linear_cross_entropy``: the rows are processed
    ``batch_chunk_size`` at a time (None: one chunk), or by ``chunking_method`` "aspect_ratio[:k]" (chunks whose
    logits are about the size of the whole input, divided by k; "auto" is "aspect_ratio:2" unless
    ``batch_chunk_size`` is given). Chunking computes the gradients during the forward pass (first order only).
    """

    def __init__(self, batch_chunk_size=None, chunking_method="auto"):
        size_ok = type(batch_chunk_size) is int and batch_chunk_size > 0
        if batch_chunk_size is not None and not size_ok:
            raise ValueError(f"[LinearCrossEntropyOptions] batch_chunk_size must be a positive int or None, got "
                             f"{batch_chunk_size!r}")
        name, _, factor = str(chunking_method).partition(":")
        method_ok = name == "aspect_ratio" and (not factor or factor.isdigit() and int(factor) > 0)
        if chunking_method not in (None, "auto") and not method_ok:
            raise ValueError(f"[LinearCrossEntropyOptions] invalid chunking_method: {chunking_method!r}")
        self.batch_chunk_size, self.chunking_method = batch_chunk_size, chunking_method

    def __repr__(self) -> str:
        return f"LinearCrossEntropyOptions(batch_chunk_size={self.batch_chunk_size}, " \
               f"chunking_method={self.chunking_method!r})"


class LinearCrossEntropyLoss(_Loss):
    """Cross entropy of ``Linear(in_features, num_classes * prod(out_features), bias)`` logits:
    ``linear_cross_entropy(input, W, target, ...)`` with the weight (stored flat in ``linear.weight``, as
    PyTorch stores it) viewed as (num_classes, *out_features, in_features). ``weight`` (class weights, a
    buffer), ``ignore_index`` (None means -100), ``label_smoothing`` and ``reduction`` are those of
    CrossEntropyLoss; ``options`` (a LinearCrossEntropyOptions) processes the rows in chunks.
    """

    def __init__(self, in_features: int, num_classes: int, *, out_features=(), bias: bool = False, device=None,
                 dtype=None, reduction: str = "mean", weight=None, ignore_index=None, label_smoothing: float = 0.0,
                 options=None):
        super().__init__(reduction)
        if weight is not None and tuple(weight.shape) != (num_classes,):
            raise ValueError(f"[LinearCrossEntropyLoss] expected weight shape {(num_classes,)}, got "
                             f"{tuple(weight.shape)}")
        if not 0.0 <= label_smoothing <= 1.0:
            raise ValueError(f"[LinearCrossEntropyLoss] label_smoothing must be in [0, 1], got {label_smoothing}")
        _weight_buffer(self, "weight", weight)
        self.num_classes, self.out_features = num_classes, tuple(out_features)
        self.ignore_index, self.label_smoothing, self.options = ignore_index, label_smoothing, options
        self.linear = Linear(in_features, num_classes * math.prod(self.out_features), bias=bias, device=device,
                             dtype=dtype)

    def forward(self, input, target):
        """linear_cross_entropy(input, linear weight, target)."""
        w = self.linear.weight.reshape((self.num_classes,) + self.out_features + (self.linear.in_features,))
        b = None if self.linear.bias is None else self.linear.bias.reshape((self.num_classes,) + self.out_features)
        return F.linear_cross_entropy(input, w, target, linear_bias=b, weight=self.weight, reduction=self.reduction,
                                      ignore_index=self.ignore_index, label_smoothing=self.label_smoothing,
                                      options=self.options)

    def extra_repr(self) -> str:
        return (f"in_features={self.linear.in_features}, num_classes={self.num_classes}, "
                f"out_features={self.out_features}, bias={self.linear.bias is not None}, reduction={self.reduction}")
