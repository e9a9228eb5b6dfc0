"""More activation layers: Hardtanh, ReLU6, Hardsigmoid, Hardswish, Mish, ELU, CELU, SELU, Softplus,
LogSigmoid, Softsign, Tanhshrink, Hardshrink, Softshrink, Threshold, GLU, PReLU (learned negative slope) and
RReLU (random negative slope)."""

from __future__ import annotations

import sneppx_core as sx
import sneppx_core.functional as F

from .module import Module
from .parameter import Parameter


class Hardtanh(Module, record_config=True):
    """hardtanh(x) = clamp(x, min_val, max_val)."""

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
        super().__init__()
        if min_val > max_val:
            raise ValueError(f"[Hardtanh] min_val {min_val} must not exceed max_val {max_val}")
        self.min_val, self.max_val, self.inplace = min_val, max_val, inplace

    def forward(self, input):
        """clamp(input, min_val, max_val)."""
        return F.hardtanh(input, self.min_val, self.max_val)

    def extra_repr(self) -> str:
        return f"min_val={self.min_val}, max_val={self.max_val}"


class ReLU6(Hardtanh, record_config=True):
    """relu6(x) = min(max(x, 0), 6)."""

    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)


class _Pointwise(Module):
    """An activation without parameters: ``_fn(input)``; ``inplace`` is accepted for compatibility."""

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        """The activation applied elementwise."""
        return type(self)._fn(input)


class Hardsigmoid(_Pointwise, record_config=True):
    """hardsigmoid(x) = relu6(x + 3) / 6."""

    _fn = staticmethod(F.hardsigmoid)


class Hardswish(_Pointwise, record_config=True):
    """hardswish(x) = x * relu6(x + 3) / 6."""

    _fn = staticmethod(F.hardswish)


class Mish(_Pointwise, record_config=True):
    """mish(x) = x * tanh(softplus(x))."""

    _fn = staticmethod(F.mish)


class SELU(_Pointwise, record_config=True):
    """selu(x) = 1.0507 * elu(x, 1.6733)."""

    _fn = staticmethod(F.selu)


class LogSigmoid(_Pointwise, record_config=True):
    """logsigmoid(x) = -softplus(-x)."""

    _fn = staticmethod(F.logsigmoid)


class Softsign(_Pointwise, record_config=True):
    """softsign(x) = x / (1 + |x|)."""

    _fn = staticmethod(F.softsign)


class Tanhshrink(_Pointwise, record_config=True):
    """tanhshrink(x) = x - tanh(x)."""

    _fn = staticmethod(F.tanhshrink)


class Hardshrink(Module, record_config=True):
    """hardshrink(x) = x where |x| > lambd, else 0."""

    def __init__(self, lambd: float = 0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        """hardshrink(input, lambd)."""
        return F.hardshrink(input, self.lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink, record_config=True):
    """softshrink(x) = x - lambd where x > lambd, x + lambd where x < -lambd, else 0."""

    def forward(self, input):
        """softshrink(input, lambd)."""
        return F.softshrink(input, self.lambd)


class Threshold(Module, record_config=True):
    """threshold(x) = x where x > threshold, else value."""

    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__()
        self.threshold, self.value, self.inplace = threshold, value, inplace

    def forward(self, input):
        """threshold(input, threshold, value)."""
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self) -> str:
        return f"threshold={self.threshold}, value={self.value}" + (", inplace=True" if self.inplace else "")


class GLU(Module, record_config=True):
    """glu(x) = a * sigmoid(b), with (a, b) the two halves of x along ``dim``."""

    def __init__(self, dim: int = -1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        """glu(input, dim)."""
        return F.glu(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class ELU(Module, record_config=True):
    """elu(x) = x if x > 0 else alpha * (exp(x) - 1)."""

    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__()
        self.alpha, self.inplace = alpha, inplace

    def forward(self, input):
        """elu(input, alpha)."""
        return F.elu(input, self.alpha)

    def extra_repr(self) -> str:
        return f"alpha={self.alpha}"


class CELU(ELU, record_config=True):
    """celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))."""

    def forward(self, input):
        """celu(input, alpha)."""
        return F.celu(input, self.alpha)


class Softplus(Module, record_config=True):
    """softplus(x) = log(1 + exp(beta x)) / beta, and x where beta x > threshold."""

    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__()
        self.beta, self.threshold = beta, threshold

    def forward(self, input):
        """softplus(input, beta, threshold)."""
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self) -> str:
        return f"beta={self.beta}, threshold={self.threshold}"


class PReLU(Module, record_config=True):
    """prelu(x) = max(0, x) + a * min(0, x) with a learned ``weight`` a: one value, or one per channel
    (``num_parameters`` = C, channel dim 1), initialised to ``init``."""

    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(sx.full((num_parameters,), float(init), dtype=dtype or sx.float32, device=device))

    def reset_parameters(self) -> None:
        """Sets every slope to ``init``."""
        with sx.no_grad():
            self.weight.fill_(float(self.init))

    def forward(self, input):
        """prelu(input, weight)."""
        return F.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class RReLU(Module, record_config=True):
    """Randomized leaky ReLU: x where x > 0, else a x, with a drawn for each element from uniform(lower, upper)
    in training mode and a = (lower + upper) / 2 in eval mode."""

    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__()
        self.lower, self.upper, self.inplace = lower, upper, inplace

    def forward(self, input):
        """rrelu(input, lower, upper, training, inplace)."""
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"lower={self.lower}, upper={self.upper}" + (", inplace=True" if self.inplace else "")
