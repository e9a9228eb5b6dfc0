"""``torch.nn.utils``: gradient clipping and norms, parameter vectors, variable-length sequences, weight and
spectral normalisation (as hooks and as parametrizations), parametrizations, pruning (``prune``),
conv/linear + batch-norm fusion, ``skip_init`` and ``functional_call``."""

from . import parametrizations, parametrize, prune, rnn, stateless
from .clip_grad import clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_, get_total_norm
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval, fuse_linear_bn_weights
from .hook_norms import remove_spectral_norm, remove_weight_norm, spectral_norm, weight_norm
from .init import skip_init

clip_grad_norm = clip_grad_norm_  # the older PyTorch name

__all__ = ["rnn", "parametrize", "parametrizations", "prune", "stateless", "clip_grad_norm_", "clip_grad_norm",
           "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_", "parameters_to_vector",
           "vector_to_parameters", "weight_norm", "remove_weight_norm", "spectral_norm", "remove_spectral_norm",
           "fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval", "fuse_linear_bn_weights", "skip_init"]
