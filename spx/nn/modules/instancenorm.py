"""Instance normalization: ``InstanceNorm1d/2d/3d`` and their lazy forms.

Each (sample, channel) plane is normalized over its own spatial dims. Parameters and buffers
have torch's names, order and shapes (they share :class:`~spx.nn.modules.batchnorm._BatchNorm`'s
construction), with torch's instance-norm defaults ``affine=False`` and
``track_running_stats=False``. With ``track_running_stats=True`` a training forward updates
``running_mean``/``running_var`` in place as torch does: by the batch average of the
per-instance mean and *unbiased* variance (``num_batches_tracked`` is not incremented, as in
torch); eval then normalizes with them.

See https://pytorch.org/docs/stable/generated/torch.nn.InstanceNorm2d.html
"""

from __future__ import annotations

from typing import Any

from spx import _user_code
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn.modules.batchnorm import _BatchNorm


class _InstanceNorm(_BatchNorm):
    """Shared implementation; subclasses set ``_nd`` (the number of spatial dims)."""

    _nd = 0

    def __init__(
        self,
        num_features: int | None,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = False,
        track_running_stats: bool = False,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )

    def forward(self, input: Tensor) -> Tensor:
        name, nd = type(self).__name__, self._nd
        if input.ndim not in (nd + 1, nd + 2):
            raise ValueError(
                f"{name}: expected {nd + 1}D or {nd + 2}D input (got {input.ndim}D input)"
            )
        self._materialize_from(input, -nd - 1)
        channels = input.shape[-nd - 1]
        if channels != self.num_features:
            if self.affine:
                raise ValueError(
                    f"{name}: expected input's size at dim={input.ndim - nd - 1} to match "
                    f"num_features ({self.num_features}), but got: {channels}."
                )
            _user_code.warn(
                f"{name}: input's size at dim={input.ndim - nd - 1} ({channels}) does not match "
                f"num_features ({self.num_features}); it is ignored since affine=False",
                UserWarning,
            )
        if input.ndim == nd + 1:
            return self._normalize(input[None])[0]
        return self._normalize(input)

    def _normalize(self, x: Tensor) -> Tensor:
        # F.instance_norm updates the running statistics when it uses the input's (training
        # with track_running_stats), as torch's does.
        use_input_stats = self.training or not self.track_running_stats
        return F.instance_norm(
            x,
            self.running_mean,
            self.running_var,
            self.weight,
            self.bias,
            use_input_stats,
            0.0 if self.momentum is None else self.momentum,
            self.eps,
        )


class InstanceNorm1d(_InstanceNorm):
    """Instance normalization over ``(N, C, L)`` input (mirrors ``torch.nn.InstanceNorm1d``).

    Args:
        num_features: channels ``C``.
        eps: added to the variance.
        momentum: running-statistics momentum (None: the statistics are not moved).
        affine: learn per-channel ``weight`` (ones) and ``bias`` (zeros); default False.
        track_running_stats: keep running statistics for eval; default False.
        device: optional device spec.
        dtype: parameter/buffer dtype (default float32).
        bias: learn ``bias`` (only with ``affine``; keyword-only, as in torch).

    Shapes:
        ``(N, C, L)`` or ``(C, L)`` -> same.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.InstanceNorm1d(3)(jnp.arange(24.0).reshape(2, 3, 4)).shape
        spx.Size([2, 3, 4])
    """

    _nd = 1


class InstanceNorm2d(_InstanceNorm):
    """Instance normalization over ``(N, C, H, W)`` input (mirrors ``torch.nn.InstanceNorm2d``).

    Args: as :class:`InstanceNorm1d`.

    Shapes:
        ``(N, C, H, W)`` or ``(C, H, W)`` -> same.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.InstanceNorm2d(3, affine=True)(jnp.ones((2, 3, 4, 4))).shape
        spx.Size([2, 3, 4, 4])
    """

    _nd = 2


class InstanceNorm3d(_InstanceNorm):
    """Instance normalization over ``(N, C, D, H, W)`` input (mirrors ``nn.InstanceNorm3d``).

    Args: as :class:`InstanceNorm1d`.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.InstanceNorm3d(2)(jnp.ones((1, 2, 3, 3, 3))).shape
        spx.Size([1, 2, 3, 3, 3])
    """

    _nd = 3


class _LazyInstanceNorm(_InstanceNorm):
    """torch's lazy instance-norm arguments. Note their defaults are ``affine=True`` and
    ``track_running_stats=True`` (the eager InstanceNorms default both to False), as in torch.
    """

    def __init__(
        self,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(None, eps, momentum, affine, track_running_stats, device, dtype, bias=bias)


class LazyInstanceNorm1d(_LazyInstanceNorm, InstanceNorm1d):
    """An :class:`InstanceNorm1d` whose ``num_features`` is inferred from the first input.

    Mirrors ``torch.nn.LazyInstanceNorm1d``, including its defaults ``affine=True`` and
    ``track_running_stats=True``. ``num_features`` is the channel dim ``C`` of the first input,
    batched ``(N, C, L)`` or unbatched ``(C, L)`` (torch reads dim 1 of an unbatched input,
    ``L``, and then rejects it). Lazy parameters and statistics behave as
    :class:`~spx.nn.LazyBatchNorm1d`'s.

    Shapes:
        ``(N, C, L)`` or ``(C, L)`` -> same.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> norm = nn.LazyInstanceNorm1d()
        >>> norm(spx.randn(2, 3, 5)).shape, norm.weight.shape
        (spx.Size([2, 3, 5]), spx.Size([3]))
    """

    cls_to_become = InstanceNorm1d  # what it becomes once materialized (.lazy)


class LazyInstanceNorm2d(_LazyInstanceNorm, InstanceNorm2d):
    """An :class:`InstanceNorm2d` whose ``num_features`` is inferred from the first input.

    Mirrors ``torch.nn.LazyInstanceNorm2d``; see :class:`LazyInstanceNorm1d`.

    Shapes:
        ``(N, C, H, W)`` or ``(C, H, W)`` -> same.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> nn.LazyInstanceNorm2d()(spx.randn(2, 3, 4, 4)).shape
        spx.Size([2, 3, 4, 4])
    """

    cls_to_become = InstanceNorm2d  # what it becomes once materialized (.lazy)


class LazyInstanceNorm3d(_LazyInstanceNorm, InstanceNorm3d):
    """An :class:`InstanceNorm3d` whose ``num_features`` is inferred from the first input.

    Mirrors ``torch.nn.LazyInstanceNorm3d``; see :class:`LazyInstanceNorm1d`.

    Shapes:
        ``(N, C, D, H, W)`` or ``(C, D, H, W)`` -> same.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> nn.LazyInstanceNorm3d()(spx.randn(1, 2, 3, 3, 3)).shape
        spx.Size([1, 2, 3, 3, 3])
    """

    cls_to_become = InstanceNorm3d  # what it becomes once materialized (.lazy)
