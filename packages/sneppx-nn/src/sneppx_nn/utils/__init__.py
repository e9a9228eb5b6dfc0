"""``torch.nn.utils``: gradient clipping, parameter vectors and variable-length sequences."""

from . import rnn
from .clip_grad import clip_grad_norm_, clip_grad_value_
from .convert_parameters import parameters_to_vector, vector_to_parameters

clip_grad_norm = clip_grad_norm_  # the older PyTorch name

__all__ = ["rnn", "clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "parameters_to_vector",
           "vector_to_parameters"]
