"""``Chi2``: the chi-squared distribution (mirrors ``torch.distributions.Chi2``)."""

from __future__ import annotations

from typing import Any, ClassVar

from spx._tensor.tensor import Tensor
from spx.distributions import constraints
from spx.distributions.gamma import Gamma

__all__ = ["Chi2"]


class Chi2(Gamma):
    """Chi-squared distribution with ``df`` degrees of freedom: ``Gamma(df / 2, 1 / 2)``
    (``torch.distributions.Chi2``).

    Args:
        df: degrees of freedom, > 0 (float or Tensor).
        validate_args: check the parameter and ``log_prob`` values.

    Example:
        >>> import spx
        >>> from spx.distributions import Chi2
        >>> m = Chi2(spx.tensor([2.0]))
        >>> m.mean.tolist(), m.variance.tolist()
        ([2.0], [4.0])
    """

    arg_constraints: ClassVar[dict[str, constraints.Constraint]] = {"df": constraints.positive}

    def __init__(self, df: Any, validate_args: bool | None = None) -> None:
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape: Any, _instance: Any = None) -> Chi2:
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self) -> Tensor:
        return self.concentration * 2
