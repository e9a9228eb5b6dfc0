"""``biject_to`` and ``transform_to``: from a constraint to a transform from the reals onto it.

``biject_to(constraint)`` gives a bijective transform (with ``log_abs_det_jacobian``), e.g. for HMC in an
unconstrained space; ``transform_to(constraint)`` gives one that need not be bijective, e.g. for optimising
a constrained parameter through an unconstrained one::

    unconstrained = sx.zeros(100, requires_grad=True)
    scale = transform_to(Normal.arg_constraints["scale"])(unconstrained)

They differ on ``constraints.simplex`` (``StickBreakingTransform`` against ``SoftmaxTransform``) and on
lower-Cholesky and positive-definite matrices (only ``transform_to`` has them). Both look a constraint up by
its exact class and can be extended with :meth:`ConstraintRegistry.register`.
"""

from __future__ import annotations

import numbers

from . import constraints, transforms


class ConstraintRegistry:
    """A registry from constraint classes to factories ``factory(constraint) -> Transform``."""

    def __init__(self):
        self._registry = {}
        super().__init__()

    def register(self, constraint, factory=None):
        """Registers ``factory`` for ``constraint`` (a Constraint subclass, or an instance standing for its
        class); without ``factory`` it returns a decorator."""
        if factory is None:
            return lambda factory: self.register(constraint, factory)
        if isinstance(constraint, constraints.Constraint):
            constraint = type(constraint)
        if not isinstance(constraint, type) or not issubclass(constraint, constraints.Constraint):
            raise TypeError(f"Expected constraint to be either a Constraint subclass or instance, but got "
                            f"{constraint}")
        self._registry[constraint] = factory
        return factory

    def __call__(self, constraint):
        """The transform for ``constraint``; NotImplementedError when its class has no registration."""
        try:
            factory = self._registry[type(constraint)]
        except KeyError:
            raise NotImplementedError(f"Cannot transform {type(constraint).__name__} constraints") from None
        return factory(constraint)


biject_to = ConstraintRegistry()
transform_to = ConstraintRegistry()


@biject_to.register(constraints.real)
@transform_to.register(constraints.real)
def _transform_to_real(constraint):
    return transforms.identity_transform


@biject_to.register(constraints.independent)
def _biject_to_independent(constraint):
    return transforms.IndependentTransform(biject_to(constraint.base_constraint), constraint.reinterpreted_batch_ndims)


@transform_to.register(constraints.independent)
def _transform_to_independent(constraint):
    return transforms.IndependentTransform(transform_to(constraint.base_constraint),
                                           constraint.reinterpreted_batch_ndims)


# positive and nonnegative are instances of greater_than/greater_than_eq, so this covers them too
@biject_to.register(constraints.greater_than)
@biject_to.register(constraints.greater_than_eq)
@transform_to.register(constraints.greater_than)
@transform_to.register(constraints.greater_than_eq)
def _transform_to_greater_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.lower_bound, 1)])


@biject_to.register(constraints.less_than)
@transform_to.register(constraints.less_than)
def _transform_to_less_than(constraint):
    return transforms.ComposeTransform([transforms.ExpTransform(),
                                        transforms.AffineTransform(constraint.upper_bound, -1)])


@biject_to.register(constraints.interval)
@biject_to.register(constraints.half_open_interval)
@transform_to.register(constraints.interval)
@transform_to.register(constraints.half_open_interval)
def _transform_to_interval(constraint):
    lower, upper = constraint.lower_bound, constraint.upper_bound
    if isinstance(lower, numbers.Number) and lower == 0 and isinstance(upper, numbers.Number) and upper == 1:
        return transforms.SigmoidTransform()
    return transforms.ComposeTransform([transforms.SigmoidTransform(),
                                        transforms.AffineTransform(lower, upper - lower)])


@biject_to.register(constraints.simplex)
def _biject_to_simplex(constraint):
    return transforms.StickBreakingTransform()


@transform_to.register(constraints.simplex)
def _transform_to_simplex(constraint):
    return transforms.SoftmaxTransform()


@transform_to.register(constraints.lower_cholesky)
def _transform_to_lower_cholesky(constraint):
    return transforms.LowerCholeskyTransform()


@transform_to.register(constraints.positive_definite)
@transform_to.register(constraints.positive_semidefinite)
def _transform_to_positive_definite(constraint):
    return transforms.PositiveDefiniteTransform()


@biject_to.register(constraints.corr_cholesky)
@transform_to.register(constraints.corr_cholesky)
def _transform_to_corr_cholesky(constraint):
    return transforms.CorrCholeskyTransform()


def _joined(registry, constraint):
    """A Cat/StackTransform of ``registry``'s transforms for the parts of a cat/stack constraint."""
    parts = [registry(c) for c in constraint.cseq]
    if isinstance(constraint, constraints.cat):
        return transforms.CatTransform(parts, constraint.dim, constraint.lengths)
    return transforms.StackTransform(parts, constraint.dim)


biject_to.register(constraints.cat, lambda constraint: _joined(biject_to, constraint))
biject_to.register(constraints.stack, lambda constraint: _joined(biject_to, constraint))
transform_to.register(constraints.cat, lambda constraint: _joined(transform_to, constraint))
transform_to.register(constraints.stack, lambda constraint: _joined(transform_to, constraint))

__all__ = ["ConstraintRegistry", "biject_to", "transform_to"]
