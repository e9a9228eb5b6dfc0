"""sneppx_nn: neural-network modules for SneppX, following ``torch.nn``.

``Module`` and ``Parameter``; layers (Linear, Bilinear, Embedding, LayerNorm, RMSNorm, Dropout,
activations, containers; convolutions, pooling, BatchNorm/GroupNorm/InstanceNorm, resampling); recurrent
layers (RNN, LSTM, GRU and cells); ``MultiheadAttention``, PyTorch's Transformer encoder/decoder layers,
``TransformerBlock`` and a decoder-only ``Transformer`` language model with a KV cache; losses;
``sneppx_nn.utils`` (grad clipping, packed sequences, weight and spectral norms, parametrizations,
conv/linear-batch-norm fusion, ``stateless.functional_call``); ``sneppx_nn.init``; and safetensors
checkpoints (``save``/``load``, ``Module.save_checkpoint``/``load_checkpoint``/``from_checkpoint``)::

    from sneppx_nn import Module, Sequential, Linear, GELU

    class MLP(Module):
        def __init__(self):
            super().__init__()
            self.net = Sequential(Linear(784, 256), GELU(), Linear(256, 10))

        def forward(self, x):
            return self.net(x.reshape((-1, 784)))
"""

from sneppx_core import require_core

require_core("0.1", "0.2", "sneppx-nn")

__version__ = "0.1.0"

from . import functional, init  # noqa: E402
from ._state import IncompatibleKeys  # noqa: E402
from .activation import (  # noqa: E402
    GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Softmax2d, Softmin, Tanh,
)
from .activation_extra import (  # noqa: E402
    CELU, ELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LogSigmoid, Mish, PReLU, ReLU6, Softplus,
    RReLU, Softshrink, Softsign, Tanhshrink, Threshold,
)
from .batchnorm import (  # noqa: E402
    BatchNorm1d, BatchNorm2d, BatchNorm3d, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
)
from .syncbatchnorm import SyncBatchNorm  # noqa: E402
from .attention import MultiheadAttention  # noqa: E402
from .block import TransformerBlock  # noqa: E402
from .checkpoint import load, read_metadata, save  # noqa: E402
from .containers import ModuleDict, ModuleList, Sequential  # noqa: E402
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d  # noqa: E402
from .dropout import AlphaDropout, Dropout, Dropout1d, Dropout2d, Dropout3d, FeatureAlphaDropout  # noqa: E402
from .embedding import Embedding, EmbeddingBag  # noqa: E402
from .heads import AdaptiveLogSoftmaxWithLoss, LinearCrossEntropyLoss, LinearCrossEntropyOptions  # noqa: E402
from .linear import Bilinear, Flatten, Identity, Linear, Unflatten  # noqa: E402
from .lazy import (  # noqa: E402
    LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d, LazyConv3d, LazyConvTranspose1d,
    LazyConvTranspose2d, LazyConvTranspose3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d, LazyLinear,
)
from .loss import (  # noqa: E402
    BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, KLDivLoss, L1Loss, MSELoss, NLLLoss, NLLLoss2d, SmoothL1Loss,
)
from .loss_extra import (  # noqa: E402
    CosineEmbeddingLoss, CTCLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, MarginRankingLoss,
    MultiLabelMarginLoss, MultiLabelSoftMarginLoss, MultiMarginLoss, PoissonNLLLoss, SoftMarginLoss, TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)
from .module import Module, RemovableHandle  # noqa: E402
from .normalization import CrossMapLRN2d, GroupNorm, LayerNorm, LocalResponseNorm, RMSNorm  # noqa: E402
from .parameter import Parameter  # noqa: E402
from .parameter_containers import ParameterDict, ParameterList  # noqa: E402
from .pooling import (  # noqa: E402
    AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d, AdaptiveMaxPool2d, AdaptiveMaxPool3d,
    AvgPool1d, AvgPool2d, AvgPool3d, LPPool1d, LPPool2d, LPPool3d, MaxPool1d, MaxPool2d, MaxPool3d, MaxUnpool1d,
    MaxUnpool2d, MaxUnpool3d,
)
from .pooling_fractional import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: E402
from .resample import (  # noqa: E402
    ChannelShuffle, CircularPad1d, CircularPad2d, CircularPad3d, ConstantPad1d, ConstantPad2d, ConstantPad3d,
    CosineSimilarity, Fold, PairwiseDistance, PixelShuffle, PixelUnshuffle, ReflectionPad1d, ReflectionPad2d,
    ReflectionPad3d, ReplicationPad1d, ReplicationPad2d, ReplicationPad3d, Unfold, Upsample, UpsamplingBilinear2d,
    UpsamplingNearest2d, ZeroPad1d, ZeroPad2d, ZeroPad3d,
)
from .rnn import GRU, LSTM, RNN, RNNBase  # noqa: E402
from .rnn_cell import GRUCell, LSTMCell, RNNCell, RNNCellBase  # noqa: E402
from . import utils  # noqa: E402
from .transformer import KVCache, Transformer  # noqa: E402
from .transformer_layers import (  # noqa: E402
    TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer,
)

from . import modules  # noqa: E402  (torch.nn.modules' file layout; needs the classes above)

__all__ = [
    "__version__", "Module", "Parameter", "RemovableHandle", "IncompatibleKeys", "init", "functional",
    "Linear", "Bilinear", "Identity", "Flatten", "Unflatten", "Embedding", "LayerNorm", "RMSNorm", "Dropout",
    "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict",
    "GELU", "ReLU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax", "LeakyReLU",
    "MultiheadAttention", "TransformerBlock", "Transformer", "KVCache",
    "MSELoss", "L1Loss", "SmoothL1Loss", "CrossEntropyLoss", "NLLLoss", "BCELoss", "BCEWithLogitsLoss", "KLDivLoss",
    "HuberLoss", "MarginRankingLoss", "CosineEmbeddingLoss", "TripletMarginLoss", "PoissonNLLLoss", "GaussianNLLLoss",
    "CTCLoss", "TripletMarginWithDistanceLoss", "HingeEmbeddingLoss", "SoftMarginLoss", "MultiLabelSoftMarginLoss",
    "MultiMarginLoss", "MultiLabelMarginLoss",
    "save", "load", "read_metadata",
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "BatchNorm1d", "BatchNorm2d",
    "InstanceNorm1d", "InstanceNorm2d", "GroupNorm", "Dropout1d", "Dropout2d", "Upsample", "PixelShuffle",
    "PixelUnshuffle", "ZeroPad1d", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "CircularPad1d", "CircularPad2d", "Unfold", "Fold",
    "CosineSimilarity", "PairwiseDistance", "Hardtanh", "ReLU6", "Hardsigmoid", "Hardswish", "Mish", "ELU", "CELU",
    "SELU", "Softplus", "LogSigmoid", "Softsign", "Tanhshrink", "PReLU", "Hardshrink", "Softshrink", "Threshold", "GLU",
    "Softmin", "Softmax2d", "MaxUnpool1d", "MaxUnpool2d", "UpsamplingNearest2d", "UpsamplingBilinear2d",
    "ChannelShuffle", "LocalResponseNorm", "ZeroPad3d", "ConstantPad3d", "ReflectionPad3d", "ReplicationPad3d",
    "CircularPad3d", "Conv3d", "ConvTranspose3d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d", "AdaptiveMaxPool3d",
    "MaxUnpool3d", "LPPool1d", "LPPool2d", "LPPool3d", "BatchNorm3d", "InstanceNorm3d", "SyncBatchNorm",
    "LazyLinear", "LazyConv1d", "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d",
    "LazyConvTranspose3d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d",
    "TransformerEncoderLayer", "TransformerEncoder", "TransformerDecoderLayer", "TransformerDecoder",
    "RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "utils", "modules",
    "EmbeddingBag", "RReLU", "AlphaDropout", "FeatureAlphaDropout", "Dropout3d",
    "FractionalMaxPool2d", "FractionalMaxPool3d", "AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyLoss",
    "LinearCrossEntropyOptions", "CrossMapLRN2d", "NLLLoss2d",
]
