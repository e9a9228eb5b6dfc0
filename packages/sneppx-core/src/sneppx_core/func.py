"""Function transforms, as ``torch.func``: ``vmap``, ``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``linearize``,
``jacrev``, ``jacfwd``, ``hessian``, ``functional_call``, ``stack_module_state``, ``replace_all_batch_norm_modules_``,
and ``functionalize`` and ``debug_unwrap`` (which have nothing to do here and return their argument).

SneppX has no batching rules and no forward-mode AD, so the transforms are built from what it has:

* ``vmap`` calls ``func`` once per index of the mapped dimension, on slices of the inputs (``select``), and stacks
  the results (``stack``). Values and gradients (both ops are differentiable) are those of PyTorch's batched call;
  the speed is that of a Python loop.
* ``grad``, ``vjp`` and ``jacrev`` run ``func`` on copies of the differentiated inputs that require grad (a view of
  an input that already requires grad, so the graph reaches it; else a new leaf) and call ``autograd.grad``.
  Transforms therefore compose: ``grad(grad(f))``, ``vmap(grad(f))``, ``jacrev(jacrev(f))``.
* ``jvp`` uses the double-backward trick of ``autograd.functional.jvp``; ``jacfwd`` and ``hessian`` return the
  values that reverse mode computes.

As in PyTorch, results carry an autograd graph (``create_graph``) only when grad mode is on and ``func``'s outputs
depend, through the graph, on a tensor from outside the transform that requires grad (an argument, or a tensor
``func`` captures, such as a module's parameters): found by walking the graph to its leaves. Otherwise they are
detached, and the per-sample graphs of ``vmap(grad(f))`` are not kept.
Pytrees are tuples (named tuples included), lists and dicts; any other value is a leaf.
"""

from __future__ import annotations

import functools
import importlib
import sys

from ._C_face import Tensor, is_grad_enabled
from ._factories import zeros, zeros_like
from ._grad_mode import enable_grad
from ._ops import stack
from ._tensor_math import allclose
from ._torch_more_num import get_rng_state, set_rng_state
from .autograd.functional import _fill, _grads, _reverse_jacobian

_RANDOM_ERROR = ("vmap: called random operation while in randomness error mode. Please either use the 'same' or "
                 "'different' randomness flags on vmap or perform the randomness operation out of vmap")


# ---- pytrees: a spec is None for a leaf, else (kind, keys or length, child specs) ----

def _flatten(tree):
    """``(leaves, spec)`` of a pytree."""
    if isinstance(tree, dict):
        ctx, kids = list(tree), [_flatten(v) for v in tree.values()]
        kind = dict
    elif isinstance(tree, (tuple, list)):
        ctx, kids = len(tree), [_flatten(v) for v in tree]
        kind = type(tree)
    else:
        return [tree], None
    return [leaf for leaves, _ in kids for leaf in leaves], (kind, ctx, [spec for _, spec in kids])


def _unflatten(leaves, spec):
    """The pytree of ``spec`` with ``leaves`` in order."""
    it = iter(leaves)

    def build(s):
        if s is None:
            return next(it)
        kind, ctx, kids = s
        vals = [build(k) for k in kids]
        if kind is dict:
            return dict(zip(ctx, vals))
        return kind(*vals) if hasattr(kind, "_fields") else kind(vals)

    return build(spec)


def _num_leaves(spec):
    return 1 if spec is None else sum(_num_leaves(k) for k in spec[2])


def _broadcast(dims, spec):
    """One dim per leaf of ``spec``: an int or None covers a whole subtree, a container must match the structure.
    None when it does not."""
    if not isinstance(dims, (tuple, list, dict)):
        return [dims] * _num_leaves(spec)
    if spec is None:
        return None
    kind, ctx, kids = spec
    if isinstance(dims, dict):
        if kind is not dict or set(dims) != set(ctx):
            return None
        parts = [_broadcast(dims[k], s) for k, s in zip(ctx, kids)]
    else:
        if kind is dict or len(dims) != len(kids):
            return None
        parts = [_broadcast(d, s) for d, s in zip(dims, kids)]
    return None if any(p is None for p in parts) else [d for p in parts for d in p]


def _structure(spec):
    """A short picture of a pytree's structure for error messages, leaves as ``*``."""
    if spec is None:
        return "*"
    kind, ctx, kids = spec
    inner = [_structure(k) for k in kids]
    if kind is dict:
        return "{" + ", ".join(f"{k!r}: {s}" for k, s in zip(ctx, inner)) + "}"
    if kind is list:
        return "[" + ", ".join(inner) + "]"
    return "(" + ", ".join(inner) + ("," if len(inner) == 1 else "") + ")"


def _release(tree, keep):
    """``tree`` itself when ``keep``, else with every tensor detached."""
    if keep:
        return tree
    leaves, spec = _flatten(tree)
    return _unflatten([x.detach() if isinstance(x, Tensor) else x for x in leaves], spec)


# ---- vmap ----

def _name(func):
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return getattr(func, "__name__", None) or repr(func)


def _rng_state():
    """The default generator's state; None on a backend that exposes none (NumPy), where draws go unnoticed."""
    try:
        return get_rng_state()
    except NotImplementedError:
        return None


def _drew(state):
    """Whether the default generator was drawn from since its state was ``state``."""
    return state is not None and not get_rng_state().equal(state)


def _check_randomness(randomness):
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}")


def vmap(func, in_dims=0, out_dims=0, randomness="error", *, chunk_size=None):
    """``func`` mapped over a dimension of its inputs, as ``torch.vmap``; returns the mapped function.

    ``in_dims`` (an int, or a tuple matching the positional arguments, nested as they are, with ints or None at its
    leaves) names the mapped dimension of each input; None leaves an input unmapped. Keyword arguments are not
    mapped. All mapped dimensions must have the same size ``B``. ``func`` runs once per index ``i < B`` on the
    slices ``x.select(dim, i)``, and each tensor of its outputs (a tensor or a pytree of them) is stacked at its
    ``out_dims`` entry (None: an output that is the same for every ``i``, which may be any value; a tensor that
    differs between samples raises, as PyTorch's batched one does).

    The result is that of PyTorch's vmap, at the speed of a loop; gradients flow through the slicing and stacking.
    ``randomness``: ``"error"`` raises when ``func`` draws from the default generator (seen by its state changing),
    ``"different"`` lets each call draw afresh, ``"same"`` resets the generator before each call so every sample
    gets the same draws. ``chunk_size`` (None or positive) has no effect: the calls are one at a time anyway.
    """
    _check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func, updated=())
    def wrapped(*args, **kwargs):
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)

    return wrapped


def _vmap_call(func, in_dims, out_dims, randomness, args, kwargs):
    name = _name(func)
    if not all(d is None or isinstance(d, int) for d in _flatten(out_dims)[0]):
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims}): `out_dims` must be an int, None or a python "
                         "collection of ints representing where in the outputs the vmapped dimension should appear.")
    leaves, spec, dims = _mapped_inputs(name, in_dims, args)
    sizes = [x.shape[d] for x, d in zip(leaves, dims) if d is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                         f"{sizes} for the mapped dimension")
    n = sizes[0]
    state = _rng_state()
    if randomness == "same" and state is None:
        raise NotImplementedError("vmap: randomness='same' needs the default generator's state, which this backend "
                                  "does not expose")
    outs = []
    for i in range(max(n, 1)):  # for B == 0, one call on zeros of a sample's shape gives the outputs' structure
        if randomness == "same":
            set_rng_state(state)
        sample = [x if d is None else _select(x, d, i, n) for x, d in zip(leaves, dims)]
        outs.append(_flatten(func(*_unflatten(sample, spec), **kwargs)))
        if randomness == "error" and _drew(state):
            raise RuntimeError(_RANDOM_ERROR)
    out_spec = outs[0][1]
    if any(s != out_spec for _, s in outs):
        raise ValueError(f"vmap({name}, ...): `{name}` returned outputs of different structures for different "
                         "samples")
    if out_spec is None and isinstance(out_dims, tuple) and len(out_dims) == 1:
        out_dims = out_dims[0]
    odims = _broadcast(out_dims, out_spec)
    if odims is None:
        raise ValueError(f"vmap({name}, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the "
                         f"structure of `outputs`. out_dims has structure {_structure(_flatten(out_dims)[1])} but "
                         f"outputs has structure {_structure(out_spec)}.")
    columns = zip(*[leaves for leaves, _ in outs])
    return _unflatten([_join(name, list(col), d, n) for col, d in zip(columns, odims)], out_spec)


def _mapped_inputs(name, in_dims, args):
    """The flat arguments, their spec and their checked, non-negative mapped dims (PyTorch's errors)."""
    head = f"vmap({name}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, (int, tuple)):
        raise ValueError(f"{head}: expected `in_dims` to be int or a (potentially nested) tuple matching the "
                         f"structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({name})(<inputs>): got no inputs. Maybe you forgot to add inputs, or you are trying "
                         "to vmap over a function with no inputs. The latter is unsupported.")
    leaves, spec = _flatten(args)
    dims = _broadcast(in_dims, spec)
    if dims is None:
        raise ValueError(f"{head}: in_dims is not compatible with the structure of `inputs`. in_dims has structure "
                         f"{_structure(_flatten(in_dims)[1])} but inputs has structure {_structure(spec)}.")
    for i, (x, d) in enumerate(zip(leaves, dims)):
        if d is None:
            continue
        if not isinstance(d, int):
            raise ValueError(f"{head}: Got in_dim={d} for an input but in_dim must be either an integer dimension or "
                             "None.")
        if not isinstance(x, Tensor):
            raise ValueError(f"{head}: Got in_dim={d} for an input but the input is of type {type(x)}. We cannot "
                             "vmap over non-Tensor arguments, please use None as the respective in_dim")
        if not -x.dim() <= d < x.dim():
            raise ValueError(f"{head}: Got in_dim={d} for some input, but that input is a Tensor of dimensionality "
                             f"{x.dim()} so expected in_dim to satisfy -{x.dim()} <= in_dim < {x.dim()}.")
        dims[i] = d % x.dim()
    return leaves, spec, dims


def _select(x, d, i, n):
    """Sample ``i`` of ``x`` along ``d``; zeros of a sample's shape when there are none (``n == 0``)."""
    return x.select(d, i) if n else zeros(x.shape[:d] + x.shape[d + 1:], dtype=x.dtype, device=x.device)


def _join(name, values, out_dim, n):
    """One output leaf across the ``n`` calls: stacked at ``out_dim``, or the common value for None."""
    if out_dim is None:
        first = values[0]
        if isinstance(first, Tensor) and not all(
                isinstance(v, Tensor) and v.shape == first.shape and v.dtype == first.dtype
                and allclose(v, first, rtol=0, atol=0, equal_nan=True) for v in values[1:]):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when out_dim is None")
        return first
    for v in values:
        if not isinstance(v, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type {type(v)}. Did you "
                             "mean to set out_dims= to None for output?")
    res = stack(values, out_dim)
    return res.narrow(out_dim % res.dim(), 0, 0) if n == 0 else res


# ---- reverse-mode transforms ----

def _argnums(args, argnums):
    """``argnums`` checked against ``args`` (PyTorch's errors), negative ones wrapped."""
    if not isinstance(argnums, (int, tuple)):
        raise RuntimeError(f"argnums must be int or Tuple[int, ...], got: {type(argnums)}")
    n = len(args)

    def wrap(a):
        if not isinstance(a, int):
            raise RuntimeError(f"argnum must be int, got: {type(a)}")
        if -n <= a < n:
            return a % n
        raise RuntimeError(f"Got argnum={a}, but only {n} positional inputs")

    if isinstance(argnums, int):
        return wrap(argnums)
    nums = tuple(wrap(a) for a in argnums)
    if not nums:
        raise RuntimeError("argnums must be non-empty")
    if len(set(nums)) != len(nums):
        raise RuntimeError(f"argnums elements must be unique, got {nums}")
    return nums


def _node(t):
    """The autograd node of ``t``: its ``grad_fn``, or for a leaf its gradient accumulator."""
    return t.grad_fn if t.grad_fn is not None else t.view_as(t).grad_fn.next_functions[0][0]


def _lift(tree, own):
    """``tree`` with each tensor replaced by one that requires grad: a view of a tensor that already does, else a
    new leaf, whose gradient accumulator is added to ``own``."""
    leaves, spec = _flatten(tree)
    lifted = []
    for x in leaves:
        if not isinstance(x, Tensor):
            raise ValueError(f"Thing passed to transform API must be Tensor, got {type(x)}")
        if x.requires_grad:
            x = x.view_as(x)
        else:
            x = x.detach().requires_grad_()
            own.add(_node(x))
        lifted.append(x)
    return _unflatten(lifted, spec)


def _lift_args(args, argnums, own):
    """``args`` with those at ``argnums`` lifted, and the lifted part: ``args[argnums]`` or a tuple of them."""
    nums = _argnums(args, argnums)
    args = list(args)
    for i in (nums,) if isinstance(nums, int) else nums:
        args[i] = _lift(args[i], own)
    return tuple(args), args[nums] if isinstance(nums, int) else tuple(args[i] for i in nums)


def _external(trees, own):
    """Whether the tensors in ``trees`` reach through the autograd graph a leaf other than the ``own`` ones made
    by ``_lift`` (an argument that required grad, a tensor ``func`` captured): then, as in PyTorch, the transform's
    results keep a graph (while grad mode is on); otherwise they are detached."""
    todo = [_node(t) for tree in trees for t in _flatten(tree)[0] if isinstance(t, Tensor) and t.requires_grad]
    seen = set()
    while todo:
        node = todo.pop()
        if node in seen or node in own:
            continue
        seen.add(node)
        nxt = [n for n, _ in node.next_functions if n is not None]
        if not nxt:  # the gradient accumulator of a leaf not made here
            return True
        todo.extend(nxt)
    return False


def _split_aux(output, has_aux, api):
    if not has_aux:
        return output, None
    if not (isinstance(output, tuple) and len(output) == 2):
        raise RuntimeError(f"{api}: output of function f should be a tuple: (output, aux) if has_aux is True")
    return output


def _check_outputs(outs, api, floating=False):
    if not outs or (len(outs) == 1 and outs[0] is None):
        raise RuntimeError(f"{api}: Expected f to be a function that has non-empty output (got output = {outs})")
    for o in outs:
        if not isinstance(o, Tensor):
            raise RuntimeError(f"{api}: expected f(*primals) to return only tensors, got unsupported type {type(o)}")
        if floating and not (o.is_floating_point() or o.is_complex()):
            raise RuntimeError(f"vjp(f, ...): All outputs of f must be floating-point or complex Tensors, got Tensor "
                               f"with dtype {o.dtype}")


def _grad_and_value(func, argnums, has_aux, args, kwargs):
    api = "grad_and_value(f)(*args)"
    enabled, own = is_grad_enabled(), set()
    with enable_grad():
        args, diff = _lift_args(args, argnums, own)
        output, aux = _split_aux(func(*args, **kwargs), has_aux, api)
        if not isinstance(output, Tensor):
            raise RuntimeError(f"{api}: Expected f(*args) to return a Tensor, got {type(output)}")
        if output.dim() != 0:
            raise RuntimeError(f"{api}: Expected f(*args) to return a scalar Tensor, got tensor with {output.dim()} "
                               "dims. Maybe you wanted to use the vjp or jacrev APIs instead?")
        keep = enabled and _external((output, aux), own)
        leaves, spec = _flatten(diff)
        grads = _fill("grad", _grads((output,), leaves, create_graph=keep), leaves, False, False, "back")
    return _release((_unflatten(grads, spec), (output, aux)), keep)


def grad_and_value(func, argnums=0, has_aux=False):
    """As ``grad``, but the function returns ``(gradient, value)`` (``(gradient, (value, aux))`` with ``has_aux``)."""

    @functools.wraps(func, updated=())
    def wrapper(*args, **kwargs):
        g, (value, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, (value, aux)) if has_aux else (g, value)

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of ``func`` (which returns a scalar tensor) with respect to its ``argnums`` arguments.

    Returns a function of ``func``'s arguments giving the gradient: shaped as ``args[argnums]`` (a tensor or a pytree
    of tensors) for an int ``argnums``, a tuple of those for a tuple. With ``has_aux``, ``func`` returns
    ``(output, aux)`` and the function returns ``(gradient, aux)``. Inputs the output does not depend on get zeros.
    Composes: ``grad(grad(f))`` is the second derivative, ``vmap(grad(f))`` gives per-sample gradients.
    """

    @functools.wraps(func, updated=())
    def wrapper(*args, **kwargs):
        g, (_, aux) = _grad_and_value(func, argnums, has_aux, args, kwargs)
        return (g, aux) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``, plus ``aux`` with ``has_aux``, as ``torch.func.vjp``.

    ``vjp_fn(cotangents, retain_graph=True, create_graph=None)`` takes cotangents shaped as the output and returns
    the tuple of vector-Jacobian products, one per primal (a pytree of tensors each). ``create_graph`` defaults to
    whether grad mode is on; the graph is kept, so ``vjp_fn`` may be called several times.
    """
    api = "vjp(f, *primals)"
    own = set()
    with enable_grad():
        primals = _lift(primals, own)
        output, aux = _split_aux(func(*primals), has_aux, api)
        outs, out_spec = _flatten(output)
        _check_outputs(outs, api, floating=True)
    external = _external((output, aux), own)
    keep = is_grad_enabled() and external
    leaves, spec = _flatten(primals)

    def vjp_fn(cotangents, retain_graph=True, create_graph=None):
        """The vector-Jacobian products of ``cotangents`` (shaped as the output): a tuple over the primals."""
        if create_graph is None:
            create_graph = is_grad_enabled()
        cots, cot_spec = _flatten(cotangents)
        if cot_spec != out_spec:
            raise RuntimeError("Expected pytree structure of cotangents to be the same as pytree structure of outputs "
                               f"to the function. cotangents: {_structure(cot_spec)}, primal output: "
                               f"{_structure(out_spec)}")
        create_graph = create_graph and (external or any(isinstance(c, Tensor) and c.requires_grad for c in cots))
        with enable_grad():
            grads = _grads(outs, leaves, cots, create_graph=create_graph, retain_graph=retain_graph)
        return _unflatten(_fill("vjp", grads, leaves, False, False, "back"), spec)

    res = (_release(output, keep), vjp_fn)
    return res + (_release(aux, keep),) if has_aux else res


def _check_tensor_list(ts, api, argname):
    if not ts:
        raise RuntimeError(f"{api}: Expected {argname} to contain at least one Tensor.")
    for t in ts:
        if not isinstance(t, Tensor):
            raise RuntimeError(f"{api}: Expected {argname} to only contain Tensors, got {type(t)}")


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J @ tangents)``, plus ``aux`` with ``has_aux``, as ``torch.func.jvp``.

    ``primals`` is a tuple (of pytrees of tensors); ``tangents`` has the same structure and shapes. The product has
    the output's structure. Computed without forward-mode AD by the double-backward trick: ``J v = d/du (J^T u . v)``.
    ``strict`` raises when an output does not depend on the inputs (else its tangent is zeros).
    """
    api = "jvp(f, primals, tangents)"
    if not isinstance(primals, tuple):
        raise RuntimeError(f"{api}: Expected primals to be a tuple. E.g. it should be valid to call f(*primals).")
    leaves, spec = _flatten(primals)
    tans, tan_spec = _flatten(tangents)
    if spec != tan_spec:
        raise RuntimeError(f"{api}: Expected primals and tangents to have the same python structure. For example, if "
                           f"primals is a tuple of 3 tensors, tangents also must be. Got primals with structure "
                           f"{_structure(spec)} and tangents with structure {_structure(tan_spec)}")
    _check_tensor_list(leaves, api, "primals")
    _check_tensor_list(tans, api, "tangents")
    for p, t in zip(leaves, tans):
        if tuple(p.shape) != tuple(t.shape):
            raise RuntimeError(f"{api}: Expected the tangent of each primal to have its shape: the primal is of size "
                               f"{list(p.shape)} while the tangent is of size {list(t.shape)}.")
    enabled, own = is_grad_enabled(), set()
    with enable_grad():
        primals = _lift(primals, own)
        output, aux = _split_aux(func(*primals), has_aux, api)
        leaves = _flatten(primals)[0]
        outs, out_spec = _flatten(output)
        _check_outputs(outs, api)
        keep = enabled and (_external((output, aux), own) or any(t.requires_grad for t in tans))
        diff = [o for o in outs if o.is_floating_point()]
        us = [zeros_like(o, requires_grad=True) for o in diff]
        back = iter(_grads(_grads(diff, leaves, us, create_graph=True), us, tans, create_graph=keep) if us else ())
    res = []
    for o in outs:
        t = next(back) if o.is_floating_point() else None
        if t is None and strict:
            raise RuntimeError("jvp(f, primals, tangents, strict=True): The output of f is independent of the inputs. "
                               "This is not allowed with strict=True.")
        res.append(zeros_like(o) if t is None else t)
    res = (_release(output, keep), _release(_unflatten(res, out_spec), keep))
    return res + (_release(aux, keep),) if has_aux else res


def _jacobian(func, argnums, has_aux, api, args):
    """The reverse-mode Jacobian that ``jacrev`` and ``jacfwd`` return."""
    enabled, own = is_grad_enabled(), set()
    with enable_grad():
        args, diff = _lift_args(args, argnums, own)
        output, aux = _split_aux(func(*args), has_aux, api)
        outs, out_spec = _flatten(output)
        _check_outputs(outs, api, floating=True)
        keep = enabled and _external((output, aux), own)
        leaves, spec = _flatten(diff)
        jac = _reverse_jacobian(outs, leaves, keep, False)
    res = _unflatten([_unflatten(row, spec) for row in jac], out_spec)
    return _release((res, aux) if has_aux else res, keep)


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """The Jacobian of ``func`` with respect to its ``argnums`` arguments, by reverse mode, as ``torch.func.jacrev``.

    Returns a function of ``func``'s positional arguments. For an output ``o`` and a differentiated input ``x`` the
    block has shape ``o.shape + x.shape``; the result nests the inputs' structure (as in ``grad``) inside the
    output's. With ``has_aux`` the function returns ``(jacobian, aux)``. One backward pass per output element;
    ``chunk_size`` (None or positive) does not change that.
    """
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")

    @functools.wraps(func, updated=())
    def wrapper(*args):
        return _jacobian(func, argnums, has_aux, "vjp(f, *primals)", args)

    return wrapper


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func``, as ``torch.func.jacfwd``: the same values and structure as ``jacrev``.

    There is no forward-mode AD, so the Jacobian is computed by reverse mode (one backward pass per output element
    rather than one forward pass per input element). ``func`` runs once: with ``randomness="error"`` a draw from the
    default generator raises, with ``"same"`` or ``"different"`` every column sees the same draw.
    """
    _check_randomness(randomness)

    @functools.wraps(func, updated=())
    def wrapper(*args):
        state = _rng_state()
        res = _jacobian(func, argnums, has_aux, "jvp(f, primals, tangents)", args)
        if randomness == "error" and _drew(state):
            raise RuntimeError(_RANDOM_ERROR)
        return res

    return wrapper


def hessian(func, argnums=0):
    """The Hessian of ``func`` with respect to its ``argnums`` arguments: ``jacfwd(jacrev(func, argnums), argnums)``,
    so for a scalar output and one input ``x`` of shape ``s`` it has shape ``s + s``."""
    return jacfwd(jacrev(func, argnums), argnums)


# ---- modules ----

def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *, tie_weights=True, strict=False):
    """``module(*args, **kwargs)`` with the named parameters and buffers of ``parameter_and_buffer_dicts`` (a dict,
    or a tuple or list of dicts with distinct keys) in place of the module's own, as ``torch.func.functional_call``.

    ``module`` must be a ``sneppx_nn.Module``; the call is ``sneppx_nn.utils.stateless.functional_call`` (sneppx_core
    does not import sneppx_nn: a module of that class means it is imported).
    """
    nn = sys.modules.get("sneppx_nn")
    if nn is None or not isinstance(module, nn.Module):
        raise TypeError(f"functional_call: expected a sneppx_nn.Module, got {type(module).__name__}")
    dicts = parameter_and_buffer_dicts
    if isinstance(dicts, (tuple, list)):
        if not all(isinstance(d, dict) for d in dicts):
            raise ValueError("Expected all elements of parameter_and_buffer_dicts to be dictionaries")
    elif not isinstance(dicts, dict):
        raise ValueError("Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
                         f"{type(dicts)}")
    stateless = importlib.import_module("sneppx_nn.utils.stateless")
    return stateless.functional_call(module, dicts, args, kwargs, tie_weights=tie_weights, strict=strict)


def _stacked(tensors, name):
    grads = {t.requires_grad for t in tensors}
    if len(grads) > 1:
        raise RuntimeError(f"Expected {name} from each model to have the same .requires_grad")
    res = stack([t.detach() for t in tensors])
    return res.requires_grad_() if grads == {True} else res


def stack_module_state(models):
    """``(params, buffers)``: dicts from each name of the models' parameters and buffers to the stack of the
    models' tensors (new leaves, detached; the parameters require grad when the models' do), as
    ``torch.func.stack_module_state``. The models must be of one class and all in training or all in eval mode."""
    models = list(models)
    if not models:
        raise RuntimeError("stack_module_state: Expected at least one model, got 0.")
    if len({bool(m.training) for m in models}) > 1:
        raise RuntimeError("stack_module_state: Expected all models to have the same training/eval mode.")
    if any(type(m) is not type(models[0]) for m in models):
        raise RuntimeError("stack_module_state: Expected all models to be of the same class.")
    params = [dict(m.named_parameters()) for m in models]
    buffers = [dict(m.named_buffers()) for m in models]
    return ({k: _stacked([p[k] for p in params], k) for k in params[0]},
            {k: _stacked([b[k] for b in buffers], k) for k in buffers[0]})


def linearize(func, *primals):
    """``(func(*primals), jvp_fn)`` with ``jvp_fn(*tangents)`` the Jacobian-vector product at ``primals``, as
    ``torch.func.linearize``. Each call of ``jvp_fn`` runs :func:`jvp` again (PyTorch records a linear graph
    once; the values are the same)."""
    output = func(*primals)

    def jvp_fn(*tangents):
        return jvp(func, primals, tangents)[1]

    return output, jvp_fn


def functionalize(func, *, remove="mutations"):
    """``func`` itself. PyTorch's functionalize rewrites in-place ops as out-of-place ones (and copies mutations
    of the inputs back) for graph compilers, with the same results; SneppX runs eagerly, so there is nothing to
    rewrite. ``remove`` is checked as in PyTorch."""
    if remove not in ("mutations", "mutations_and_views"):
        raise RuntimeError(f"functionalize(f, remove='mutations'): received invalid argument for remove={remove}. "
                           "Valid options are:\n     remove='mutations': all inplace and out= operators will be "
                           "removed from the program, and replaced with their out-of-place equivalents.\n     "
                           "remove='mutations_and_views': In addition to the above, all aliasing operators {view} "
                           "will be replaced with their non-aliasing counterparts, {view}_copy.\n")
    return func


def debug_unwrap(tensor, *, recurse=True):
    """``tensor`` itself: SneppX's transforms do not wrap tensors."""
    return tensor


def replace_all_batch_norm_modules_(root):
    """Makes every batch norm in ``root`` use batch statistics (``running_mean``/``running_var`` None,
    ``track_running_stats`` False), in place, as ``torch.func.replace_all_batch_norm_modules_``, so that
    vmapping over a model does not update shared running statistics. Returns ``root``."""
    for module in root.modules():
        batch_norm = any(c.__name__.endswith(("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"))
                         for c in type(module).__mro__)
        if batch_norm and module.track_running_stats:
            module.running_mean = module.running_var = module.num_batches_tracked = None
            module.track_running_stats = False
    return root


__all__ = ["vmap", "grad", "grad_and_value", "vjp", "jvp", "linearize", "jacrev", "jacfwd", "hessian", "functionalize",
           "debug_unwrap", "replace_all_batch_norm_modules_", "functional_call",
           "stack_module_state"]
