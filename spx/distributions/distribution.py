"""``Distribution``: the base class of every distribution (mirrors
``torch.distributions.Distribution``).

A distribution has a ``batch_shape`` (independent, differently parameterized copies) and an
``event_shape`` (the shape of one draw); ``sample(sample_shape)`` returns
``sample_shape + batch_shape + event_shape``. Parameters and values are spx Tensors, so
``log_prob(x).sum().backward()`` fills the parameters' ``.grad`` and the same code runs inside
``spx.compile``.

Validation follows torch: on by default (off under ``python -O``), switched globally by
:meth:`Distribution.set_default_validate_args` or per instance by ``validate_args=``. It raises
torch's ``ValueError`` for parameters outside ``arg_constraints`` and for values outside the
``support``. Inside ``spx.compile``/``jax.jit`` the values are traced and unknown, so the value
checks are skipped there (shape checks still run).
"""

from __future__ import annotations

import warnings
from typing import Any

import spx
from spx._tensor._dims import Size
from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.utils import as_tensor, concrete_all, lazy_property

__all__ = ["Distribution"]


class Distribution:
    """Abstract base class of probability distributions (``torch.distributions.Distribution``).

    Args:
        batch_shape: the shape over which parameters are batched.
        event_shape: the shape of a single sample (without batching).
        validate_args: whether to check parameters and values; None takes the default
            (:meth:`set_default_validate_args`).

    Example:
        >>> import spx
        >>> from spx.distributions import Normal
        >>> d = Normal(spx.zeros(3), spx.ones(3))
        >>> d.batch_shape, d.event_shape, d.sample((2,)).shape
        (spx.Size([3]), spx.Size([]), spx.Size([2, 3]))
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Switch validation on or off for every distribution made without
        ``validate_args=`` (torch's default: on, off under ``python -O``)."""
        if value not in [True, False]:
            raise ValueError(f"set_default_validate_args expects True or False, got {value!r}")
        Distribution._validate_args = value

    def __init__(
        self,
        batch_shape: Any = (),
        event_shape: Any = (),
        validate_args: bool | None = None,
    ) -> None:
        self._batch_shape = Size(batch_shape)
        self._event_shape = Size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
                warnings.warn(
                    f"{self.__class__} does not define `arg_constraints`. Please set "
                    "`arg_constraints = {}` or initialize the distribution with "
                    "`validate_args=False` to turn off validation.",
                    stacklevel=2,
                )
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue  # skip constraints that cannot be checked
                if param not in self.__dict__ and isinstance(
                    getattr(type(self), param, None), lazy_property
                ):
                    continue  # skip lazily-constructed args (logits made from probs)
                value = getattr(self, param)
                if not concrete_all(constraint.check(value)):
                    raise ValueError(
                        f"Expected parameter {param} "
                        f"({type(value).__name__} of shape {tuple(value.shape)}) "
                        f"of distribution {self!r} "
                        f"to satisfy the constraint {constraint!r}, "
                        f"but found invalid values:\n{value}"
                    )
        super().__init__()

    def expand(self, batch_shape: Any, _instance: Any = None) -> Distribution:
        """A new distribution with its batch dimensions expanded to ``batch_shape`` (the
        parameters are ``Tensor.expand``-ed; nothing is validated again)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not implement expand(); subclasses must define it"
        )

    @property
    def batch_shape(self) -> Size:
        """The shape over which parameters are batched."""
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        """The shape of a single sample (without batching)."""
        return self._event_shape

    @property
    def arg_constraints(self) -> dict[str, constraints.Constraint]:
        """The constraint each tensor argument must satisfy."""
        raise NotImplementedError

    @property
    def support(self) -> Any:
        """The constraint the distribution's values satisfy."""
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape: Any = ()) -> Tensor:
        """A ``sample_shape + batch_shape + event_shape`` draw, without gradient."""
        with spx.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape: Any = ()) -> Tensor:
        """A reparameterized draw: gradients flow to the parameters (``has_rsample``)."""
        raise NotImplementedError(
            f"{type(self).__name__} has no reparameterized sampler (has_rsample is False); "
            "use sample(), or a score-function estimator with log_prob()"
        )

    def sample_n(self, n: int) -> Tensor:
        """``n`` draws (deprecated in torch: use ``sample((n,))``)."""
        warnings.warn(
            "`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
            FutureWarning,
            stacklevel=2,
        )
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        """Log density (or mass) at ``value``."""
        raise NotImplementedError(f"{self.__class__} does not implement log_prob")

    def cdf(self, value: Tensor) -> Tensor:
        """Cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{self.__class__} does not implement cdf")

    def icdf(self, value: Tensor) -> Tensor:
        """Inverse cumulative distribution function at ``value``."""
        raise NotImplementedError(f"{self.__class__} does not implement icdf")

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """All values of a discrete distribution along dim 0:
        ``(cardinality,) + batch_shape + event_shape`` (singleton batch dims if not
        ``expand``)."""
        raise NotImplementedError(f"{self.__class__} does not implement enumerate_support")

    def entropy(self) -> Tensor:
        """Entropy, batched over ``batch_shape``."""
        raise NotImplementedError(f"{self.__class__} does not implement entropy")

    def perplexity(self) -> Tensor:
        """``exp(entropy())``."""
        return spx.exp(self.entropy())

    def _extended_shape(self, sample_shape: Any = ()) -> Size:
        """``sample_shape + batch_shape + event_shape``."""
        if not isinstance(sample_shape, Size):
            sample_shape = Size(sample_shape)
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value: Any) -> None:
        """torch's checks of a value given to ``log_prob``/``cdf``: its right-most dims match
        the event shape, it broadcasts with the batch shape, and it lies in the support."""
        value = as_tensor(value)
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(
                "The right-most size of value must match event_shape: "
                f"{value.size()} vs {self._event_shape}."
            )
        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape), strict=False):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    "Value is not broadcastable with batch_shape+event_shape: "
                    f"{actual_shape} vs {Size(expected_shape)}."
                )
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(
                f"{self.__class__} does not define `support` to enable sample validation. "
                "Please initialize the distribution with `validate_args=False` to turn off "
                "validation.",
                stacklevel=2,
            )
            return
        if not concrete_all(support.check(value)):
            raise ValueError(
                "Expected value argument "
                f"({type(value).__name__} of shape {tuple(value.shape)}) "
                f"to be within the support ({support!r}) "
                f"of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls: type, _instance: Any = None) -> Any:
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__ method must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self) -> str:
        try:
            names = [k for k in self.arg_constraints if k in self.__dict__]
        except NotImplementedError:
            names = []
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].size()}"
            for p in names
        )
        return f"{self.__class__.__name__}({args})"
