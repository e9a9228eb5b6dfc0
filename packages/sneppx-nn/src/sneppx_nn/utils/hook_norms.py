r"""Weight and spectral normalisation as forward pre-hooks, as ``torch.nn.utils.weight_norm`` and
``torch.nn.utils.spectral_norm`` (the older form; :mod:`.parametrizations` has the newer one).

Each replaces the parameter ``name`` of a module by other parameters and buffers (so ``state_dict``
has their keys instead) and recomputes ``module.<name>``, a plain attribute, before every forward.
"""

from __future__ import annotations

import warnings

import sneppx_core as sx
import sneppx_core.functional as F

from ..conv import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..parameter import Parameter


def norm_except_dim(v, dim: int):
    """The 2-norm of ``v`` over every dim except ``dim``, kept as a tensor of ``v.ndim`` dims (size 1
    except along ``dim``); ``dim = -1`` means the norm of the whole tensor (a 0-d tensor)."""
    if dim == -1:
        return v.norm(2)
    dim = dim + v.ndim if dim < 0 else dim
    if not 0 <= dim < v.ndim:
        raise IndexError(f"[weight_norm] dim {dim} is out of range for a weight of shape {tuple(v.shape)}")
    shape = [1] * v.ndim
    shape[dim] = v.shape[dim]
    return v.movedim(dim, 0).reshape(v.shape[dim], -1).norm(2, dim=1).reshape(shape)


def weight_from_norm(v, g, dim: int):
    """``w = g * v / ||v||``, the norm taken over every dim except ``dim`` (all of them for -1)."""
    return v * (g / norm_except_dim(v, dim))


def _find(module, kind, name: str):
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return key, hook
    return None, None


def _weight_of(module, name: str, fn: str):
    weight = module._parameters.get(name)
    if weight is None:
        raise ValueError(f"[{fn}] {type(module).__name__} has no parameter named {name!r}")
    return weight


class WeightNorm:
    """The forward pre-hook of :func:`weight_norm`: sets ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int):
        self.name, self.dim = name, -1 if dim is None else dim

    def compute_weight(self, module):
        """``g * v / ||v||`` from the module's current ``<name>_g`` and ``<name>_v``."""
        return weight_from_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    def remove(self, module) -> None:
        """Replaces ``<name>_g`` and ``<name>_v`` by one parameter ``<name>`` holding the current weight."""
        weight = self.compute_weight(module).detach()
        delattr(module, self.name)
        del module._parameters[self.name + "_g"], module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module, name: str = "weight", dim: int = 0):
    r"""Reparametrises ``module.<name>`` as ``w = g v / ||v||`` (Salimans and Kingma, 2016).

    The parameter ``<name>`` is replaced by ``<name>_g`` (the norms, shape of ``w`` with size 1 in every
    dim but ``dim``) and ``<name>_v`` (the direction, initially ``w``); a forward pre-hook recomputes
    ``module.<name>`` before each call, so gradients reach ``g`` and ``v``. ``dim=None`` (or -1) takes
    one norm over the whole tensor. Deprecated in PyTorch (FutureWarning) in favour of
    :func:`sneppx_nn.utils.parametrizations.weight_norm`. Returns ``module``."""
    warnings.warn("`sneppx_nn.utils.weight_norm` is deprecated in favor of "
                  "`sneppx_nn.utils.parametrizations.weight_norm`.", FutureWarning, stacklevel=2)
    if _find(module, WeightNorm, name)[1] is not None:
        raise RuntimeError(f"[weight_norm] cannot register two weight_norm hooks on the same parameter {name}")
    fn = WeightNorm(name, dim)
    weight = _weight_of(module, name, "weight_norm")
    del module._parameters[name]
    module.register_parameter(name + "_g", Parameter(norm_except_dim(weight.detach(), fn.dim)))
    module.register_parameter(name + "_v", Parameter(weight.detach()))
    setattr(module, name, fn.compute_weight(module))
    module.register_forward_pre_hook(fn)
    return module


def remove_weight_norm(module, name: str = "weight"):
    """Undoes :func:`weight_norm`: ``<name>`` becomes one parameter again, holding ``g v / ||v||``."""
    return _remove(module, WeightNorm, name, "weight_norm")


def weight_to_matrix(weight, dim: int):
    """``weight`` with ``dim`` moved first and the other dims flattened: shape (size(dim), -1)."""
    if dim != 0:
        weight = weight.permute(dim, *[d for d in range(weight.ndim) if d != dim])
    return weight.reshape(weight.shape[0], -1)


class SpectralNorm:
    """The forward pre-hook of :func:`spectral_norm`: sets ``module.<name> = <name>_orig / sigma``."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12):
        if n_power_iterations <= 0:
            raise ValueError("[spectral_norm] expected n_power_iterations to be positive, got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.n_power_iterations, self.dim, self.eps = name, n_power_iterations, dim, eps

    def compute_weight(self, module, do_power_iteration: bool):
        """``W / sigma`` with ``sigma = u . (W v)``; first, when ``do_power_iteration``, updates the buffers
        ``u`` and ``v`` in place by ``n_power_iterations`` steps of ``v = normalize(W^T u)``,
        ``u = normalize(W v)`` (W the weight as a matrix; no gradient flows through u and v)."""
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = weight_to_matrix(weight, self.dim)
        if do_power_iteration:
            with sx.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(sx.mv(mat.t(), u), dim=0, eps=self.eps))
                    u.copy_(F.normalize(sx.mv(mat, v), dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        return weight / sx.dot(u, sx.mv(mat, v))

    def remove(self, module) -> None:
        """Replaces ``<name>_orig``, ``<name>_u`` and ``<name>_v`` by one parameter: the normalised weight."""
        with sx.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module, inputs):
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))


def spectral_norm(module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim=None):
    r"""Divides ``module.<name>`` by its spectral norm sigma (largest singular value), estimated by power
    iteration (Miyato et al., 2018).

    The parameter becomes ``<name>_orig``; buffers ``<name>_u`` and ``<name>_v`` (random unit vectors at
    first) hold the singular-vector estimates. Before each forward in training mode they take
    ``n_power_iterations`` steps; in eval mode they are used as they are. ``dim`` (default 0, or 1 for
    ConvTranspose layers) is the output dim, moved first before the other dims are flattened into a
    matrix. ``eps`` guards the normalisations. Returns ``module``."""
    if dim is None:
        dim = 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0
    if _find(module, SpectralNorm, name)[1] is not None:
        raise RuntimeError(f"[spectral_norm] cannot register two spectral_norm hooks on the same parameter {name}")
    fn = SpectralNorm(name, n_power_iterations, dim, eps)
    weight = _weight_of(module, name, "spectral_norm")
    with sx.no_grad():
        h, w = weight_to_matrix(weight, dim).shape
        u = F.normalize(sx.empty(h, dtype=weight.dtype, device=weight.device).normal_(0.0, 1.0), dim=0, eps=eps)
        v = F.normalize(sx.empty(w, dtype=weight.dtype, device=weight.device).normal_(0.0, 1.0), dim=0, eps=eps)
    delattr(module, name)
    module.register_parameter(name + "_orig", weight)
    setattr(module, name, weight.detach())
    module.register_buffer(name + "_u", u)
    module.register_buffer(name + "_v", v)
    module.register_forward_pre_hook(fn)
    return module


def remove_spectral_norm(module, name: str = "weight"):
    """Undoes :func:`spectral_norm`: ``<name>`` becomes one parameter holding the normalised weight
    (computed with the current ``u`` and ``v``, no further power iteration)."""
    return _remove(module, SpectralNorm, name, "spectral_norm")


def _remove(module, cls, name, kind):
    """Removes the ``cls`` hook of ``name`` (``remove_<kind>``): the parameter it computes becomes plain again."""
    key, hook = _find(module, cls, name)
    if hook is None:
        raise ValueError(f"[remove_{kind}] {kind} of {name!r} not found in {type(module).__name__}")
    hook.remove(module)
    del module._forward_pre_hooks[key]
    return module


__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm", "SpectralNorm", "spectral_norm", "remove_spectral_norm"]
