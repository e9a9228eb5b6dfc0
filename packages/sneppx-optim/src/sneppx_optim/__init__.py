"""sneppx_optim: optimizers, learning-rate schedulers, gradient clipping and a Trainer for SneppX.

SGD, Adam, AdamW, Lion and LAMB update all parameters of a param group through one fused kernel
of ``sneppx_core.functional``; Adagrad, Adadelta, RMSprop, Adamax, NAdam, RAdam, Rprop, ASGD and
Adafactor update each parameter with a few core ops; Muon orthogonalizes
the momentum of 2-d weights; LBFGS takes a closure::

    from sneppx_optim import AdamW, CosineAnnealingLR
    opt = AdamW(model.parameters(), lr=2e-4, weight_decay=0.01)
    sched = CosineAnnealingLR(opt, min_lr=1e-5, max_lr=2e-4, total_steps=100)
"""

from __future__ import annotations

__version__ = "0.1.0"

from sneppx_core import require_core

require_core("0.1", "0.2", "sneppx-optim")

from .adam import Adam, AdamW, SparseAdam  # noqa: E402, F401  (SparseAdam only raises: not in __all__)
from .adam_variants import Adamax, NAdam, RAdam  # noqa: E402
from .adaptive import Adadelta, Adagrad, RMSprop  # noqa: E402
from .callbacks import Callback, History  # noqa: E402
from .checkpoint import latest_checkpoint, load_checkpoint, read_checkpoint, save_checkpoint  # noqa: E402
from .clip_grad import clip_grad_norm_, clip_grad_value_  # noqa: E402
from .lbfgs import LBFGS  # noqa: E402
from .lion import LAMB, Lion  # noqa: E402
from .lr_scheduler import (  # noqa: E402
    ConstantLR, CosineAnnealingLR, ExponentialLR, LambdaLR, LinearLR, LRScheduler, MultiplicativeLR, MultiStepLR,
    PolynomialLR, SequentialLR, StepLR,
)
from .more_rules import ASGD, Adafactor, Rprop  # noqa: E402
from .muon import Muon  # noqa: E402
from .onecycle import CyclicLR, OneCycleLR  # noqa: E402
from .optimizer import Optimizer  # noqa: E402
from .plateau import ReduceLROnPlateau  # noqa: E402
from .sgd import SGD  # noqa: E402
from .tensorboard import SummaryWriter  # noqa: E402  (tensorboardX is imported only when one is made)
from .trainer import Trainer  # noqa: E402

__all__ = [
    "Optimizer", "SGD", "Adam", "AdamW", "Lion", "LAMB", "Adagrad", "Adadelta", "RMSprop", "Adamax", "NAdam", "RAdam",
    "Rprop", "ASGD", "Adafactor", "LBFGS", "Muon",
    "LRScheduler", "LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "ExponentialLR", "LinearLR",
    "PolynomialLR", "CosineAnnealingLR", "SequentialLR", "OneCycleLR", "CyclicLR", "ReduceLROnPlateau",
    "clip_grad_norm_", "clip_grad_value_",
    "Trainer", "Callback", "History", "save_checkpoint", "load_checkpoint", "read_checkpoint", "latest_checkpoint",
    "SummaryWriter", "__version__",
]
