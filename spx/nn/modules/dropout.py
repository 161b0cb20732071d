"""Dropout modules: ``Dropout``, ``Dropout1d/2d/3d``, ``AlphaDropout``, ``FeatureAlphaDropout``.

All mirror ``torch.nn``.

In training mode each call draws a fresh key from the calling rank's generator
(``spx.random.next_key()``, seeded by ``spx.manual_seed``, drawn by ``spx.nn.functional``), so
masks differ from call to call and a seeded run is reproducible; under ``spx.compile`` that key
is threaded through the compiled program as state. In eval mode (``model.eval()``), or with
``p=0``, ``Dropout`` returns its input tensor itself (as torch) and no key is drawn. Under a
plain ``jax.jit`` nobody would thread the key: drawing there raises an error that shows the
alternatives (``spx.compile``, ``model.eval()``, ``F.dropout(..., key=key)``).
"""

from __future__ import annotations

from typing import Any

import jax

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.module import Module

Array = jax.Array


class _DropoutNd(Module):
    _fn: Any = None

    def __init__(self, p: float = 0.5, inplace: bool = False) -> None:
        super().__init__()
        name = type(self).__name__
        checked = _validate.as_float(
            p, "p (the dropout probability)", name, minimum=0, maximum=1,
            hint=f"pass e.g. nn.{name}(p=0.1)",
        )  # fmt: skip
        # A Python number is kept as given: torch's repr shows Dropout(p=0) for p=0.
        self.p = p if type(p) in (int, float) else checked
        self.inplace = inplace

    def forward(self, input: Tensor) -> Tensor:
        return type(self)._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


class Dropout(_DropoutNd):
    """Zero each element with probability ``p`` while training; scale the rest by ``1/(1-p)``.

    Mirrors ``torch.nn.Dropout``. The mask comes from ``spx.random.next_key()``.

    Args:
        p: drop probability in ``[0, 1]`` (ValueError otherwise).
        inplace: write the result into the input Tensor and return it, as torch does.

    Shapes:
        input ``(*)`` -> output ``(*)``.

    Example:
        >>> import jax.numpy as jnp, spx
        >>> from spx import nn
        >>> _ = spx.manual_seed(0)
        >>> drop = nn.Dropout(0.5)
        >>> y = drop(jnp.ones((2, 4)))  # zeros and 2.0s
        >>> bool((drop.eval()(jnp.ones(3)) == 1).all())
        True
    """

    _fn = staticmethod(F.dropout)


class Dropout1d(_DropoutNd):
    """Zero whole channels of ``(N, C, L)`` or ``(C, L)`` input (mirrors ``nn.Dropout1d``).

    Args:
        p: channel drop probability in ``[0, 1]``.
        inplace: write the result into the input Tensor, as torch does.

    Shapes:
        ``(N, C, L)`` or ``(C, L)`` -> same.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Dropout1d(0.5)(jnp.ones((2, 3, 5))).shape
        spx.Size([2, 3, 5])
    """

    _fn = staticmethod(F.dropout1d)


class Dropout2d(_DropoutNd):
    """Zero whole channels of ``(N, C, H, W)`` input (mirrors ``nn.Dropout2d``).

    Args:
        p: channel drop probability in ``[0, 1]``.
        inplace: write the result into the input Tensor, as torch does.

    Shapes:
        ``(N, C, H, W)`` -> same (a 3-D input is read as ``(N, C, L)``, as in torch).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Dropout2d(0.5)(jnp.ones((2, 3, 4, 4))).shape
        spx.Size([2, 3, 4, 4])
    """

    _fn = staticmethod(F.dropout2d)


class Dropout3d(_DropoutNd):
    """Zero whole channels of ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (``nn.Dropout3d``).

    Args:
        p: channel drop probability in ``[0, 1]``.
        inplace: write the result into the input Tensor, as torch does.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.Dropout3d(0.5)(jnp.ones((2, 3, 2, 2, 2))).shape
        spx.Size([2, 3, 2, 2, 2])
    """

    _fn = staticmethod(F.dropout3d)


class AlphaDropout(_DropoutNd):
    """Dropout that keeps SELU's zero mean and unit variance (mirrors ``nn.AlphaDropout``).

    Args:
        p: drop probability in ``[0, 1]``.
        inplace: write the result into the input Tensor, as torch does.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.AlphaDropout(0.2)(jnp.ones(8)).shape
        spx.Size([8])
    """

    _fn = staticmethod(F.alpha_dropout)


class FeatureAlphaDropout(_DropoutNd):
    """Alpha dropout of whole channels (mirrors ``nn.FeatureAlphaDropout``).

    In training mode each ``(sample, channel)`` of an ``(N, C, *)`` input is dropped with
    probability ``p`` (set to SELU's negative saturation value) and an affine correction keeps
    zero mean and unit variance, as :class:`AlphaDropout` does per element.

    Args:
        p: channel drop probability in ``[0, 1]``.
        inplace: write the result into the input Tensor, as torch does.

    Shapes:
        ``(N, C, *)`` -> same (at least 2 dims).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.FeatureAlphaDropout(0.2)(jnp.ones((2, 3, 4, 4))).shape
        spx.Size([2, 3, 4, 4])
    """

    _fn = staticmethod(F.feature_alpha_dropout)
