"""Custom differentiable operations: ``autograd.Function``, as ``torch.autograd.Function``.

A subclass writes ``forward`` (run without recording) and ``backward`` (given the outputs' gradients,
returns one gradient or None per argument of ``forward``); ``apply`` runs forward and records one node
that calls backward during the backward pass. In grad mode backward builds a graph of its own, so a
backward written with differentiable ops gives higher derivatives too (``once_differentiable`` forbids
that). A Function with several differentiable outputs records one node per output, each handing its
gradient to a shared node that calls backward once with all of them.

Outputs are fresh aliases of what forward returns (sharing its memory), so a tensor that forward saves
for backward never points back at the node (no reference cycle), and an input returned as an output
becomes a new tensor with the node as its ``grad_fn``. An input modified in place and marked with
``ctx.mark_dirty`` is returned itself, its history continued by the node.
"""

from __future__ import annotations

import functools

from .._backend import NAME, _C
from .._C_face import Tensor
from .._factories import zeros
from .._grad_mode import no_grad


class FunctionCtx:
    """The ``ctx`` passed to a Function's forward (or ``setup_context``) and backward."""

    def __init__(self, needs_input_grad=()):
        self.needs_input_grad = tuple(needs_input_grad)
        self.materialize_grads = True
        self._saved = None
        self._versions = ()
        self._dirty = ()
        self._non_differentiable = ()
        self._output_nodes = {}  # saved_tensors index -> weak reference to that output's node

    def save_for_backward(self, *tensors):
        """Keeps tensors (or None) for backward, where ``saved_tensors`` gives them back; backward raises if
        one of them was modified in place in between."""
        for t in tensors:
            if t is not None and not isinstance(t, Tensor):
                raise TypeError(f"[save_for_backward] expected Tensors or None, got {type(t).__name__}")
        self._saved = tensors
        self._versions = tuple(None if t is None else t._version for t in tensors)

    @property
    def saved_tensors(self):
        """The tensors given to ``save_for_backward``, checked against in-place changes since. A saved
        output comes back with the Function's node as its ``grad_fn`` while backward records a graph."""
        if self._saved is None:
            return ()
        for i, (t, v) in enumerate(zip(self._saved, self._versions)):
            if t is not None and t._version != v:
                raise RuntimeError(
                    f"[backward] one of the tensors saved for backward (saved_tensors[{i}], shape "
                    f"{tuple(t.shape)}, dtype {t.dtype}) was modified by an in-place operation: version "
                    f"{t._version} instead of {v}")
        out = list(self._saved)
        if NAME == "c" and _C.is_grad_enabled():
            for i, weak in self._output_nodes.items():
                node = weak.lock()
                if node is not None:
                    out[i] = _C._alias_with_grad_fn(out[i], node)
        return tuple(out)

    def save_for_forward(self, *tensors):
        """Accepted for compatibility; forward-mode AD is not available, so nothing uses them."""
        self._saved_forward = tensors

    def mark_dirty(self, *tensors):
        """Declares the inputs that forward modified in place (each must also be returned as an output)."""
        self._dirty = tensors

    def mark_non_differentiable(self, *tensors):
        """Declares outputs that get no gradient (backward receives zeros, or None, for them)."""
        self._non_differentiable = tensors

    def set_materialize_grads(self, value):
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class _FunctionMeta(type):
    """Gives each Function subclass the class of its backward nodes' name, as PyTorch's ``_backward_cls``."""

    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        cls._backward_name = name + "Backward"


class Function(metaclass=_FunctionMeta):
    """Base class of custom differentiable operations (``torch.autograd.Function``).

    Subclasses define static methods ``forward(ctx, *args, **kwargs)`` (or ``forward(*args, **kwargs)``
    with ``setup_context(ctx, inputs, output)``) and ``backward(ctx, *grad_outputs)``, and are called with
    ``MyFunction.apply(*args)``. ``backward`` gets one gradient per output of forward and returns one per
    argument of forward (None for non-tensor arguments or where no gradient is needed).
    """

    def __call__(self, *args, **kwargs):
        raise RuntimeError(f"[{type(self).__name__}] call a Function through its class: "
                           f"{type(self).__name__}.apply(...) (legacy instance calls are not supported)")

    @staticmethod
    def forward(*args, **kwargs):
        """Computes the outputs (run without recording a graph)."""
        raise NotImplementedError("[Function] subclasses must define forward")

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Saves what backward needs, for a forward that takes no ``ctx``."""
        raise NotImplementedError("[Function] setup_context is not defined")

    @staticmethod
    def backward(ctx, *grad_outputs):
        """Maps the outputs' gradients to the inputs' gradients."""
        raise NotImplementedError("[Function] subclasses must define backward to be differentiated")

    @staticmethod
    def jvp(ctx, *grad_inputs):
        """Forward-mode derivative: not available (there is no forward-mode AD)."""
        raise NotImplementedError("[Function] forward-mode AD (jvp) is not available")

    @classmethod
    def apply(cls, *args, **kwargs):
        """Runs forward on ``args`` and records backward for the tensors among them that require grad."""
        return _apply(cls, args, kwargs)


def _custom_setup(cls):
    for klass in cls.__mro__:
        if "setup_context" in klass.__dict__:
            return klass is not Function
    return False


def _apply(cls, args, kwargs):
    ctx = FunctionCtx(isinstance(a, Tensor) and a.requires_grad for a in args)
    with no_grad():
        if _custom_setup(cls):
            out = cls.forward(*args, **kwargs)
            cls.setup_context(ctx, args, out)
        else:
            out = cls.forward(ctx, *args, **kwargs)
    is_tuple = isinstance(out, tuple)
    outs = list(out) if is_tuple else [out]
    outs_before = list(outs)
    ins = [(i, a) for i, a in enumerate(args) if isinstance(a, Tensor)]
    dirty = [any(o is d for d in ctx._dirty) for o in outs]
    for d in ctx._dirty:
        if not any(o is d for o in outs):
            raise RuntimeError(f"[{cls.__name__}] a tensor marked dirty in forward was not returned as an output")
    for j, o in enumerate(outs):  # an input returned unchanged becomes a new tensor (as PyTorch's view)
        if isinstance(o, Tensor) and not dirty[j] and any(o is a for _, a in ins):
            outs[j] = o.detach()
    recording = NAME == "c" and _C.is_grad_enabled() and any(a.requires_grad for _, a in ins)
    if recording:
        nondiff = ctx._non_differentiable
        diff = [j for j, o in enumerate(outs) if isinstance(o, Tensor)
                and (o.dtype.is_floating_point or o.dtype.is_complex) and not any(o is n for n in nondiff)]
        for j in diff:
            if dirty[j] and outs[j].requires_grad and outs[j].grad_fn is None:
                raise RuntimeError(f"[{cls.__name__}] a leaf Variable that requires grad is being used in an "
                                   "in-place operation (marked dirty in forward)")
            if not dirty[j]:
                outs[j] = outs[j].detach()
        _record(cls, ctx, args, ins, outs, diff)
        _keep_saved_outputs(ctx, outs_before, outs, [j for j in diff if dirty[j]
                                                      or not any(outs_before[j] is a for _, a in ins)])
    return tuple(outs) if is_tuple else outs[0]


def _keep_saved_outputs(ctx, returned, outs, diff):
    """Saved tensors that are outputs (``returned[j]`` for j in ``diff``, inputs returned unchanged left out):
    keep their data without the node and a weak reference to it, so that the node (which holds ctx) is
    not kept alive by ctx (see ``saved_tensors``)."""
    if not ctx._saved:
        return
    saved = list(ctx._saved)
    for k, t in enumerate(saved):
        for j in diff:
            if t is not None and t is returned[j] and outs[j].grad_fn is not None:
                ctx._output_nodes[k] = _C._weak_node(outs[j].grad_fn)
                saved[k] = t.detach() if t.grad_fn is not None else t
                break
    ctx._saved = tuple(saved)


def _record(cls, ctx, args, ins, outs, diff):
    """Records the node (or nodes, one per differentiable output plus a joint one) for ``outs``."""
    name = cls._backward_name
    tensors = [a for _, a in ins]
    like = [(tuple(o.shape), o.dtype, o.device) if isinstance(o, Tensor) else None for o in outs]
    metas = [(i, a.requires_grad, tuple(a.shape), a.dtype, a.device) for i, a in ins]  # the inputs stay unheld
    call = functools.partial(_run_backward, cls, ctx, len(args), metas, like)
    if len(diff) == 1:
        j = diff[0]
        _C._record_function(name, tensors, outs[j], lambda g: call({j: g}))
        return
    if not diff:
        return
    slot = {}  # the outputs' gradients, gathered by their nodes for the joint one
    with no_grad():
        anchor, zero = Tensor(0.0), Tensor(0.0)

    def joint(g):
        grads = dict(slot)
        slot.clear()
        return call(grads)

    _C._record_function(name, tensors, anchor, joint)

    def gather(j, g):
        slot[j] = g
        return [zero]  # a gradient for the anchor, only so that the joint node runs

    for j in diff:
        _C._record_function(name, [anchor], outs[j], functools.partial(gather, j))


def _run_backward(cls, ctx, nargs, metas, like, grads):
    """Calls ``cls.backward`` with one gradient per output (``like``: each output's shape, dtype and device,
    None for non-tensors) and checks what it returns against ``metas`` (each tensor argument's position,
    requires_grad, shape, dtype and device): one gradient per argument of forward."""
    name = cls._backward_name
    gs = []
    for j, spec in enumerate(like):
        g = grads.get(j)
        if g is None and ctx.materialize_grads and spec is not None:
            g = zeros(spec[0], dtype=spec[1], device=spec[2])
        gs.append(g)
    res = cls.backward(ctx, *gs)
    if not isinstance(res, tuple):
        res = (res,)
    if len(res) < nargs or any(r is not None for r in res[nargs:]):
        raise RuntimeError(f"[{name}] function {name} returned an incorrect number of gradients "
                           f"(expected {nargs}, got {len(res)})")
    result = []
    for i, needs, shape, dtype, device in metas:
        g = res[i]
        if g is None or not needs:
            result.append(None)
            continue
        if not isinstance(g, Tensor):
            raise TypeError(f"[{name}] backward returned {type(g).__name__} as the gradient of input {i}; "
                            "expected a Tensor or None")
        if tuple(g.shape) != shape:
            if not _expandable(shape, tuple(g.shape)):
                raise RuntimeError(f"[{name}] function {name} returned an invalid gradient at index {i} - got "
                                   f"{list(g.shape)} but expected shape compatible with {list(shape)}")
            g = g.sum_to_size(shape)
        if g.device != device:
            raise RuntimeError(f"[{name}] function {name} returned a gradient on {g.device} for input {i} on "
                               f"{device}")
        if g.dtype != dtype:
            g = g.to(dtype)
        result.append(g)
    return result


def _expandable(shape, target):
    """Whether ``shape`` broadcasts to ``target``."""
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target)))


def once_differentiable(backward):
    """Decorates a Function's backward whose own gradient is not defined: it runs without recording, and a
    second backward through its results (``create_graph=True``) raises RuntimeError."""

    @functools.wraps(backward)
    def wrapper(ctx, *grad_outputs):
        with no_grad():
            res = backward(ctx, *grad_outputs)
        live = [g for g in grad_outputs if isinstance(g, Tensor) and g.requires_grad]
        if NAME != "c" or not _C.is_grad_enabled() or not live:
            return res
        name = getattr(backward, "__qualname__", "backward")

        def refuse(g):
            raise RuntimeError(f"[backward] trying to differentiate twice a function that was marked with "
                               f"@once_differentiable ({name})")

        s = sum((g * 0).sum() for g in live)
        s.register_hook(refuse)
        guard = s - s.detach()
        single = not isinstance(res, tuple)
        items = [res] if single else list(res)
        items = [r + guard.to(r.dtype) if isinstance(r, Tensor) and (r.dtype.is_floating_point or r.dtype.is_complex)
                 else r for r in items]
        return items[0] if single else tuple(items)

    return wrapper


class InplaceFunction(Function):
    """A Function taking an ``inplace`` flag, as ``torch.autograd.function.InplaceFunction``."""

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace


__all__ = ["Function", "FunctionCtx", "InplaceFunction", "once_differentiable"]
