"""The ``Optimizer`` base class: parameter groups, per-parameter state, state dicts.

Subclasses only implement ``_step_group(group, params, grads)``, which updates every parameter of one
group that has a gradient through a single fused kernel call from ``sneppx_core.functional``.
"""

from __future__ import annotations

import math
from numbers import Real

import sneppx_core as sx


def _name(obj) -> str:
    return type(obj).__name__


def check_range(opt_name: str, key: str, value, low=0.0, high=math.inf, low_open=False, high_open=True) -> None:
    """Raise ``ValueError`` unless ``value`` is a real number in the given interval.

    The message reads like ``"AdamW: lr must be >= 0, got -1"``.
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{opt_name}: {key} must be a real number, got {type(value).__name__} {value!r}")
    too_low = value <= low if low_open else value < low
    too_high = value >= high if high_open else value > high
    if math.isnan(value) or too_low or too_high:
        rule = f"{'>' if low_open else '>='} {low:g}"
        if high != math.inf:
            rule = f"in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
        raise ValueError(f"{opt_name}: {key} must be {rule}, got {value}")


def check_betas(opt_name: str, betas) -> None:
    """Raise unless ``betas`` is a pair of numbers in [0, 1)."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise ValueError(f"{opt_name}: betas must be a pair (beta1, beta2), got {betas!r}")
    check_range(opt_name, "betas[0]", betas[0], 0.0, 1.0)
    check_range(opt_name, "betas[1]", betas[1], 0.0, 1.0)


class Optimizer:
    """Base class of all optimizers (PyTorch's ``torch.optim.Optimizer`` interface).

    Args:
        params: an iterable of Tensors, or of dicts each with a ``"params"`` entry and optional
            per-group hyperparameters that override ``defaults``.
        defaults: the hyperparameters every group starts from.

    Attributes:
        param_groups: list of dicts, one per group: ``"params"`` plus its hyperparameters.
        state: dict mapping a parameter to its state (e.g. ``step``, ``exp_avg``).
        defaults: the default hyperparameters.
    """

    # True where state["step"] is an int (the fused steps' bucket key): load_state_dict turns a
    # tensor step back into one
    _int_step = False

    def __init__(self, params, defaults: dict) -> None:
        if isinstance(params, (sx.Tensor, dict)):
            raise TypeError(f"{_name(self)}: params must be an iterable of Tensors or of dicts, "
                            f"got a single {type(params).__name__}")
        self.defaults = dict(defaults)
        if self.defaults.get("differentiable"):
            raise NotImplementedError(f"{_name(self)}: differentiable=True (autograd through the update) is not "
                                      "supported: steps run outside autograd")
        self.state: dict = {}
        self.param_groups: list[dict] = []
        groups = list(params)
        if not groups:
            raise ValueError(f"{_name(self)}: got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        lines = [f"{_name(self)} ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines += [f"    {k}: {v}" for k, v in sorted(group.items()) if k != "params"]
        return "\n".join(lines) + "\n)"

    def add_param_group(self, param_group: dict) -> None:
        """Adds a group of parameters (a dict with ``"params"`` and optional hyperparameters).

        Missing hyperparameters are taken from ``defaults``; values are validated, and a parameter
        may belong to one group only.
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"{_name(self)}.add_param_group: expected a dict, got {type(param_group).__name__}")
        if "params" not in param_group:
            raise ValueError(f"{_name(self)}.add_param_group: the group has no 'params' entry")
        params = param_group["params"]
        if isinstance(params, sx.Tensor):
            params = [params]
        elif isinstance(params, (set, frozenset)):
            raise TypeError(f"{_name(self)}: parameters must be an ordered collection, not a set")
        params = list(params)
        for p in params:
            if not isinstance(p, sx.Tensor):
                raise TypeError(f"{_name(self)}: can only optimize Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError(f"{_name(self)}: can't optimize a non-leaf Tensor of shape {tuple(p.shape)}")
        group = {**self.defaults, **param_group, "params": params}
        self._validate(group)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in params}) != len(params) or seen & {id(p) for p in params}:
            raise ValueError(f"{_name(self)}: a parameter appears more than once (in this or another group)")
        self.param_groups.append(group)

    def _validate(self, group: dict) -> None:
        """Raise ValueError if a hyperparameter of ``group`` is out of range (subclasses override)."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clears the gradients of all parameters: sets them to ``None`` (default) or to zero."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.zero_()

    def step(self, closure=None):
        """Performs one optimization step over every parameter that has a gradient.

        Args:
            closure: optional callable that re-evaluates the model and returns the loss; it runs
                with gradients enabled, before the update.

        Returns:
            The closure's loss, or ``None``.
        """
        loss = None
        if closure is not None:
            with sx.enable_grad():
                loss = closure()
        with sx.no_grad():
            for group in self.param_groups:
                params, grads = [], []
                for p in group["params"]:
                    g = p.grad
                    if g is not None:
                        params.append(p)
                        grads.append(g)
                if params:
                    self._step_group(group, params, grads)
        return loss

    def _step_group(self, group: dict, params: list, grads: list) -> None:
        """Updates ``params`` (those of ``group`` that have a gradient) given their ``grads``."""
        raise NotImplementedError(f"{_name(self)} does not implement _step_group")

    def _buckets(self, params: list, grads: list, init, key=None) -> list:
        """Splits ``params`` (and their ``grads``) into lists that one fused kernel call can take.

        A kernel call needs one dtype and, for Adam and LAMB, one step count (a parameter that
        missed steps has a smaller count); ``key(state)`` adds such a criterion. A group whose
        parameters share a dtype and trained together gives a single bucket. State is created
        with ``init(p)`` where missing. A complex parameter is stepped as its (real, imaginary) pairs
        (``view_as_real``), as PyTorch steps it, and its state is made of real tensors of the pairs' shape.

        Returns:
            A list of ``(key, params, grads, states)``.
        """
        state, out = self.state, {}
        for param, g in zip(params, grads):
            p = param
            if p.is_complex():  # stepped as its (real, imaginary) pairs, as PyTorch does; so is its state
                p, g = sx.view_as_real(p), sx.view_as_real(g)
            st = state.get(param)
            if st is None:
                st = state[param] = init(p)
            # the element size tells float32 from float64 (the kernels' dtypes) more cheaply than p.dtype
            k = (p.element_size(), key(st) if key is not None else None)
            bucket = out.get(k)
            if bucket is None:
                bucket = out[k] = (k[1], [], [], [])
            bucket[1].append(p)
            bucket[2].append(g if g.is_contiguous() else g.contiguous())
            bucket[3].append(st)
        return list(out.values())

    def state_dict(self) -> dict:
        """The optimizer's state as ``{"state": {index: {...}}, "param_groups": [...]}``.

        Parameters are replaced by their index across all groups (in order), as in PyTorch. The
        state tensors are the live ones (not copies): save or copy them before stepping again.
        """
        index: dict[int, int] = {}
        groups = []
        for group in self.param_groups:
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index.setdefault(id(p), len(index)) for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)]: _state_out(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Loads a state from :meth:`state_dict` (tensors are copied, so the source may change later).

        Group hyperparameters are restored exactly; lists are turned back into tuples where the
        current group holds a tuple (so a state dict that went through JSON loads too).
        """
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError(f"{_name(self)}.load_state_dict: the state has {len(saved)} parameter groups, "
                             f"the optimizer has {len(self.param_groups)}")
        by_index = {}
        for i, (old, new) in enumerate(zip(saved, self.param_groups)):
            if len(old["params"]) != len(new["params"]):
                raise ValueError(f"{_name(self)}.load_state_dict: group {i} has {len(old['params'])} parameters "
                                 f"in the state and {len(new['params'])} in the optimizer")
            by_index.update(zip(old["params"], new["params"]))
        self.state = {}
        for idx, st in state_dict["state"].items():
            p = by_index.get(int(idx))
            if p is None:
                raise ValueError(f"{_name(self)}.load_state_dict: state for unknown parameter index {idx}")
            self.state[p] = {k: _copy_state(v, p) for k, v in st.items()}
            if self._int_step and isinstance(self.state[p].get("step"), sx.Tensor):
                self.state[p]["step"] = int(self.state[p]["step"].item())  # a state dict's form, or PyTorch's
        for i, old in enumerate(saved):
            cur = self.param_groups[i]
            group = {k: (tuple(v) if isinstance(v, list) and isinstance(cur.get(k), tuple) else v)
                     for k, v in old.items() if k != "params"}
            self.param_groups[i] = {**group, "params": cur["params"]}


def _state_out(state: dict) -> dict:
    """A parameter's state as state_dict gives it: a step count kept as an int (the bucket key of the
    fused steps) becomes a 0-d float32 tensor, PyTorch's form of ``state["step"]``."""
    out = dict(state)
    step = out.get("step")
    if isinstance(step, int) and not isinstance(step, bool):
        out["step"] = sx.tensor(float(step))
    return out


def _copy_state(value, param):
    if isinstance(value, sx.Tensor):
        out = value.detach().clone()
        if out.is_floating_point() and out.dtype != param.dtype:
            out = out.to(param.dtype)
        return out
    return value

