"""``torch.nn.modules``' layout: ``sneppx_nn.modules.dropout.Dropout`` is ``sneppx_nn.Dropout``.

Programs name layers by their PyTorch file (``torch.nn.modules.rnn.LSTM`` in allow-lists and
``isinstance`` checks, ``from torch.nn.modules.utils import _pair`` in layer code); with ``torch`` renamed
these paths reach the same classes here. Each file is a module holding sneppx_nn's own classes (nothing is
copied), importable by name (``import sneppx_nn.modules.conv``) and reachable as an attribute.
"""

from __future__ import annotations

import collections.abc
import itertools
import sys
import types

import sneppx_nn
from sneppx_nn.linear import Linear

# PyTorch's file for each class.
_LAYOUT = {
    "activation": "CELU ELU GELU GLU Hardshrink Hardsigmoid Hardswish Hardtanh LeakyReLU LogSigmoid LogSoftmax Mish "
                  "MultiheadAttention PReLU RReLU ReLU ReLU6 SELU SiLU Sigmoid Softmax Softmax2d Softmin Softplus "
                  "Softshrink Softsign Tanh Tanhshrink Threshold",
    "adaptive": "AdaptiveLogSoftmaxWithLoss",
    "batchnorm": "BatchNorm1d BatchNorm2d BatchNorm3d LazyBatchNorm1d LazyBatchNorm2d LazyBatchNorm3d SyncBatchNorm",
    "channelshuffle": "ChannelShuffle",
    "container": "ModuleDict ModuleList ParameterDict ParameterList Sequential",
    "conv": "Conv1d Conv2d Conv3d ConvTranspose1d ConvTranspose2d ConvTranspose3d LazyConv1d LazyConv2d LazyConv3d "
            "LazyConvTranspose1d LazyConvTranspose2d LazyConvTranspose3d",
    "distance": "CosineSimilarity PairwiseDistance",
    "dropout": "AlphaDropout Dropout Dropout1d Dropout2d Dropout3d FeatureAlphaDropout",
    "flatten": "Flatten Unflatten",
    "fold": "Fold Unfold",
    "instancenorm": "InstanceNorm1d InstanceNorm2d InstanceNorm3d LazyInstanceNorm1d LazyInstanceNorm2d "
                    "LazyInstanceNorm3d",
    "linear": "Bilinear Identity LazyLinear Linear",
    "loss": "BCELoss BCEWithLogitsLoss CTCLoss CosineEmbeddingLoss CrossEntropyLoss GaussianNLLLoss HingeEmbeddingLoss "
            "HuberLoss KLDivLoss L1Loss LinearCrossEntropyLoss MSELoss MarginRankingLoss MultiLabelMarginLoss "
            "MultiLabelSoftMarginLoss MultiMarginLoss NLLLoss NLLLoss2d PoissonNLLLoss SmoothL1Loss SoftMarginLoss "
            "TripletMarginLoss TripletMarginWithDistanceLoss",
    "module": "Module",
    "normalization": "CrossMapLRN2d GroupNorm LayerNorm LocalResponseNorm RMSNorm",
    "padding": "CircularPad1d CircularPad2d CircularPad3d ConstantPad1d ConstantPad2d ConstantPad3d ReflectionPad1d "
               "ReflectionPad2d ReflectionPad3d ReplicationPad1d ReplicationPad2d ReplicationPad3d ZeroPad1d ZeroPad2d "
               "ZeroPad3d",
    "pixelshuffle": "PixelShuffle PixelUnshuffle",
    "pooling": "AdaptiveAvgPool1d AdaptiveAvgPool2d AdaptiveAvgPool3d AdaptiveMaxPool1d AdaptiveMaxPool2d "
               "AdaptiveMaxPool3d AvgPool1d AvgPool2d AvgPool3d FractionalMaxPool2d FractionalMaxPool3d LPPool1d "
               "LPPool2d LPPool3d MaxPool1d MaxPool2d MaxPool3d MaxUnpool1d MaxUnpool2d MaxUnpool3d",
    "rnn": "GRU GRUCell LSTM LSTMCell RNN RNNBase RNNCell RNNCellBase",
    "sparse": "Embedding EmbeddingBag",
    "transformer": "Transformer TransformerDecoder TransformerDecoderLayer TransformerEncoder TransformerEncoderLayer",
    "upsampling": "Upsample UpsamplingBilinear2d UpsamplingNearest2d",
}


class NonDynamicallyQuantizableLinear(Linear):
    """A ``Linear`` under PyTorch's name for the output projection of ``MultiheadAttention`` (in PyTorch a
    marker for its quantization tools; SneppX has none, so it is a plain ``Linear``)."""


def _ntuple(n, name="parse"):
    """A function making an ``n``-tuple of an int (repeated) or returning an iterable as a tuple."""

    def parse(x):
        if isinstance(x, collections.abc.Iterable):
            return tuple(x)
        return tuple(itertools.repeat(x, n))

    parse.__name__ = name
    return parse


_single, _pair, _triple, _quadruple = (_ntuple(n, nm) for n, nm in ((1, "_single"), (2, "_pair"), (3, "_triple"),
                                                                    (4, "_quadruple")))


def _reverse_repeat_tuple(t, n):
    """Each element of ``t`` repeated ``n`` times, in reverse order (the padding order of ``F.pad``)."""
    return tuple(x for x in reversed(t) for _ in range(n))


def _file(name, doc, names):
    mod = types.ModuleType(f"{__name__}.{name}", doc)
    for n, obj in names.items():
        setattr(mod, n, obj)
    mod.__all__ = [n for n in names if not n.startswith("_")]
    sys.modules[mod.__name__] = mod
    globals()[name] = mod
    return mod


__all__ = []
for _name, _classes in _LAYOUT.items():
    _found = {c: getattr(sneppx_nn, c) for c in _classes.split()}
    if _name == "linear":
        _found["NonDynamicallyQuantizableLinear"] = NonDynamicallyQuantizableLinear
    if _name == "module":
        _found["Parameter"] = sneppx_nn.Parameter
    _file(_name, f"torch.nn.modules.{_name}'s classes", _found)
    globals().update(_found)
    __all__ += [c for c in _found if c != "Parameter"]
_file("utils", "torch.nn.modules.utils' tuple helpers", {
    "_single": _single, "_pair": _pair, "_triple": _triple, "_quadruple": _quadruple, "_ntuple": _ntuple,
    "_reverse_repeat_tuple": _reverse_repeat_tuple})
