"""Batch normalization: ``BatchNorm1d``, ``BatchNorm2d``, ``BatchNorm3d`` (mirroring torch.nn).

Parameters ``weight``/``bias`` and buffers ``running_mean``/``running_var``/
``num_batches_tracked`` have torch's names, order and shapes, so ``state_dict`` keys match.

**How the running statistics change.** As in torch, a training-mode forward updates the
buffers *in place*: ``F.batch_norm`` copies the new ``running_mean``/``running_var`` into them
(under ``no_grad``) and ``num_batches_tracked`` is incremented with ``add_(1)``. The buffer
objects keep their identity, so ``state_dict()`` aliases and a compiled step see the new values.
(Under a plain ``jax.jit`` the update of a module passed as an argument lands on its traced copy
only, as with any pure function; a module the jitted function closes over raises instead, since
the update would leak a tracer: see ``spx._transforms``.)

``num_batches_tracked`` is an int32 scalar: JAX runs with 64-bit types off, so torch's int64
is stored as int32 (a torch checkpoint's int64 value loads fine, cast on load).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from spx import _validate
from spx._tensor.tensor import Tensor
from spx.nn import functional as F
from spx.nn import init
from spx.nn.module import Module
from spx.nn.modules.lazy import become_materialized
from spx.nn.parameter import Parameter, UninitializedParameter
from spx.ops.types import get_default_dtype

Array = jax.Array


def _array(shape: tuple[int, ...], fill: float, dtype: Any, device: Any) -> jax.Array:
    x = jnp.full(shape, fill, dtype=dtype)
    if device is not None:
        from spx._device import device as resolve_device

        x = jax.device_put(x, resolve_device(device))
    return x


class _BatchNorm(Module):
    """Shared implementation; subclasses set the accepted input ranks."""

    _ranks: tuple[int, ...] = ()
    _layout = ""

    def __init__(
        self,
        num_features: int | None,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        num_features = _validate.as_optional_int(
            num_features, "num_features", name, minimum=1,
            hint=f"or None (nn.Lazy{name.removeprefix('Lazy')}) to infer it from the first input",
        )  # fmt: skip
        if momentum is not None:  # validated; kept as given (torch's repr shows it as given)
            _validate.as_float(
                momentum, "momentum", name, minimum=0, maximum=1,
                hint="or None for a cumulative average",
            )  # fmt: skip
        # 0 until a lazy layer sees its first input, as torch's lazy norms show it.
        self.num_features = 0 if num_features is None else num_features
        self.eps = eps
        self.momentum = momentum
        self.affine = affine
        self.track_running_stats = track_running_stats
        dtype = dtype or get_default_dtype()
        self._dtype, self._device = dtype, device
        lazy = num_features is None
        if affine:
            self.weight = UninitializedParameter() if lazy else self._filled(num_features, 1.0)
            if bias:
                self.bias = UninitializedParameter() if lazy else self._filled(num_features, 0.0)
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            # A lazy layer holds empty statistics until its first input: unlike torch's
            # UninitializedBuffer they are real arrays, so .to(...) before the first call works
            # (and its dtype and device carry over to the statistics made then).
            self.register_buffer("running_mean", _array((self.num_features,), 0.0, dtype, device))
            self.register_buffer("running_var", _array((self.num_features,), 1.0, dtype, device))
            # int32, not torch's int64: JAX's 64-bit mode is off (see the module docstring).
            self.register_buffer("num_batches_tracked", _array((), 0, jnp.int32, device))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)
        self.reset_parameters()

    def reset_running_stats(self) -> None:
        """Running mean 0, running variance 1, ``num_batches_tracked`` 0 (in place, as torch)."""
        if self.track_running_stats:
            self.running_mean.zero_()
            self.running_var.fill_(1)
            self.num_batches_tracked.zero_()

    def reset_parameters(self) -> None:
        """Reset the running statistics and set ``weight`` to ones, ``bias`` to zeros."""
        self.reset_running_stats()
        if self.affine and not self._is_lazy():
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def _filled(self, n: int, fill: float) -> Parameter:
        return Parameter(_array((n,), fill, self._dtype, self._device))

    def _is_lazy(self) -> bool:
        """Whether ``num_features`` still waits for the first input (or a state dict).

        Read from the state, not from ``num_features``: ``spx.compile`` traces a step twice
        and restores the parameters and buffers (the weight becomes an UninitializedParameter
        again, the statistics empty) after the first trace, but not this Python attribute.
        A layer with neither holds nothing to materialize; ``num_features`` decides then.
        """
        weight = self._parameters.get("weight")
        if weight is not None:  # (functional_call may stand a plain Tensor in for it)
            return bool(getattr(weight, "is_uninitialized", False))
        stats = self._buffers.get("running_mean")
        if stats is not None:
            return stats.shape[0] == 0
        return self.num_features == 0

    def _materialize(self, num_features: int) -> None:
        """Give a lazy layer its ``num_features``: torch's ``initialize_parameters``.

        ``weight`` and ``bias`` stay the same Parameter objects (an optimizer built before the
        first call keeps them); the statistics keep the empty ones' dtype and device.
        """
        self.num_features = num_features
        dtype = self._dtype
        if self.running_mean is not None:
            dtype = self.running_mean.dtype  # as moved by .to() before the first call
            for name, fill in (("running_mean", 0.0), ("running_var", 1.0)):
                old = self._buffers[name]._data
                new = jnp.full((num_features,), fill, old.dtype)
                if not isinstance(old, jax.core.Tracer):
                    new = jax.device_put(new, old.sharding)
                self.register_buffer(name, new)
        if self.affine:
            for name, fill in (("weight", 1.0), ("bias", 0.0)):
                param = self._parameters.get(name)
                if param is not None and param.is_uninitialized:
                    param.materialize(_array((num_features,), fill, dtype, self._device))
        become_materialized(self)

    def _materialize_from(self, input: Tensor, channel_dim: int) -> None:
        if self._is_lazy():
            self._materialize(input.shape[channel_dim])

    def _prepare_state_dict(self, state_dict: Any, prefix: str) -> None:
        # A lazy layer takes its size from the checkpoint, as torch's lazy modules do.
        if self._is_lazy():
            for key in ("weight", "running_mean"):
                value = state_dict.get(prefix + key)
                if getattr(value, "ndim", None) == 1:
                    self._materialize(int(value.shape[0]))
                    break
        # torch's BatchNorm (version 2) added num_batches_tracked; a state dict without it (an
        # old checkpoint) keeps the current count, as torch's _load_from_state_dict does.
        key = prefix + "num_batches_tracked"
        if self.track_running_stats and key not in state_dict:
            current = self.num_batches_tracked
            state_dict[key] = current if current is not None else jnp.zeros((), jnp.int32)

    def _check_input(self, x: Array) -> None:
        name = type(self).__name__
        if x.ndim not in self._ranks:
            ranks = " or ".join(f"{r}D" for r in self._ranks)
            raise ValueError(f"{name}: expected {ranks} input {self._layout}, got {x.ndim}D input")
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"{name}: input has {x.shape[1]} channels at dim 1 (shape {tuple(x.shape)}), "
                f"but this layer has num_features={self.num_features}"
            )

    def forward(self, input: Tensor) -> Tensor:
        if input.ndim in self._ranks:
            self._materialize_from(input, 1)
        self._check_input(input)
        return self._local_batch_norm(input, self._count_batch())

    def _count_batch(self) -> Any:
        """Count a training batch (``num_batches_tracked += 1``); the momentum to use."""
        momentum: Any = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:  # cumulative moving average, as in torch
                # A recorded value, not torch's float(): reading it would cost a sync per step.
                momentum = 1.0 / self.num_batches_tracked.float()
        return momentum

    def _uses_batch_stats(self) -> bool:
        # Batch statistics while training, and in eval when there are no running stats.
        return self.training or (self.running_mean is None and self.running_var is None)

    def _local_batch_norm(self, input: Tensor, momentum: Any) -> Tensor:
        # Running stats are read in eval and updated (in place, by F) in training when tracked.
        pass_stats = not self.training or self.track_running_stats
        return F.batch_norm(
            input,
            self.running_mean if pass_stats else None,
            self.running_var if pass_stats else None,
            self.weight,
            self.bias,
            self._uses_batch_stats(),
            momentum,
            self.eps,
        )

    def extra_repr(self) -> str:
        return (
            f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
            f"affine={self.affine}, bias={self.bias is not None}, "
            f"track_running_stats={self.track_running_stats}"
        )


class BatchNorm1d(_BatchNorm):
    """Batch normalization over ``(N, C)`` or ``(N, C, L)`` input (mirrors ``nn.BatchNorm1d``).

    Training normalizes with the batch mean and biased variance and updates
    ``running_mean``/``running_var`` (the latter with the *unbiased* variance) by
    ``new = (1 - momentum) * old + momentum * batch_stat``; ``momentum=None`` uses the cumulative
    average ``1 / num_batches_tracked``. Eval normalizes with the running statistics.

    Args:
        num_features: channels ``C``.
        eps: added to the variance.
        momentum: running-statistics momentum, or None for a cumulative average.
        affine: learn ``weight`` (ones) and ``bias`` (zeros).
        track_running_stats: keep running statistics (else batch statistics in eval too).
        device: optional device spec.
        dtype: parameter/buffer dtype (default float32).
        bias: learn ``bias`` (only with ``affine``; keyword-only, as in torch).

    Shapes:
        ``(N, C)`` or ``(N, C, L)`` -> same.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> bn = nn.BatchNorm1d(3)
        >>> y = bn(spx.arange(12.0).reshape(4, 3))
        >>> bn.running_mean  # 0.1 * batch mean: [0.45, 0.55, 0.65]
    """

    _ranks = (2, 3)
    _layout = "(N, C) or (N, C, L)"


class BatchNorm2d(_BatchNorm):
    """Batch normalization over ``(N, C, H, W)`` input (mirrors ``nn.BatchNorm2d``).

    Same statistics and arguments as :class:`BatchNorm1d`.

    Args:
        num_features: channels ``C``.
        eps: added to the variance.
        momentum: running-statistics momentum, or None for a cumulative average.
        affine: learn ``weight`` and ``bias``.
        track_running_stats: keep running statistics.
        device: optional device spec.
        dtype: parameter/buffer dtype (default float32).
        bias: learn ``bias`` (keyword-only).

    Shapes:
        ``(N, C, H, W)`` -> same.

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.BatchNorm2d(3)(jnp.ones((2, 3, 4, 4))).shape
        spx.Size([2, 3, 4, 4])
    """

    _ranks = (4,)
    _layout = "(N, C, H, W)"


class BatchNorm3d(_BatchNorm):
    """Batch normalization over ``(N, C, D, H, W)`` input (mirrors ``nn.BatchNorm3d``).

    Same statistics and arguments as :class:`BatchNorm1d`.

    Args:
        num_features: channels ``C``.
        eps: added to the variance.
        momentum: running-statistics momentum, or None for a cumulative average.
        affine: learn ``weight`` and ``bias``.
        track_running_stats: keep running statistics.
        device: optional device spec.
        dtype: parameter/buffer dtype (default float32).
        bias: learn ``bias`` (keyword-only).

    Example:
        >>> import jax.numpy as jnp
        >>> from spx import nn
        >>> nn.BatchNorm3d(2)(jnp.ones((2, 2, 3, 3, 3))).shape
        spx.Size([2, 2, 3, 3, 3])
    """

    _ranks = (5,)
    _layout = "(N, C, D, H, W)"


class _LazyBatchNorm(_BatchNorm):
    """torch's ``_LazyNormBase`` arguments: everything but ``num_features``."""

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


class LazyBatchNorm1d(_LazyBatchNorm, BatchNorm1d):
    """A :class:`BatchNorm1d` whose ``num_features`` is inferred from the first input.

    Mirrors ``torch.nn.LazyBatchNorm1d`` (the arguments of :class:`BatchNorm1d` minus
    ``num_features``). Until the first call ``num_features`` is 0, ``weight``/``bias`` are
    :class:`~spx.nn.UninitializedParameter` (materialized in place, so an optimizer built
    earlier keeps them) and the running statistics are empty; ``load_state_dict`` sizes the
    layer from the checkpoint instead, as torch's lazy modules do. The layer stays a
    ``LazyBatchNorm1d`` afterwards (torch turns it into a ``BatchNorm1d``; both are
    ``isinstance(m, nn.BatchNorm1d)``).

    Shapes:
        ``(N, C)`` or ``(N, C, L)`` -> same; ``num_features = C`` of the first input.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> bn = nn.LazyBatchNorm1d()
        >>> bn(spx.randn(4, 3)).shape, bn.weight.shape, bn.running_mean.shape
        (spx.Size([4, 3]), spx.Size([3]), spx.Size([3]))
    """

    cls_to_become = BatchNorm1d  # what it becomes once materialized (.lazy)


class LazyBatchNorm2d(_LazyBatchNorm, BatchNorm2d):
    """A :class:`BatchNorm2d` whose ``num_features`` is inferred from the first input.

    Mirrors ``torch.nn.LazyBatchNorm2d``; see :class:`LazyBatchNorm1d`.

    Shapes:
        ``(N, C, H, W)`` -> same; ``num_features = C`` of the first input.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> bn = nn.LazyBatchNorm2d()
        >>> bn(spx.randn(2, 3, 4, 4)).shape, bn.num_features
        (spx.Size([2, 3, 4, 4]), 3)
    """

    cls_to_become = BatchNorm2d  # what it becomes once materialized (.lazy)


class LazyBatchNorm3d(_LazyBatchNorm, BatchNorm3d):
    """A :class:`BatchNorm3d` whose ``num_features`` is inferred from the first input.

    Mirrors ``torch.nn.LazyBatchNorm3d``; see :class:`LazyBatchNorm1d`.

    Shapes:
        ``(N, C, D, H, W)`` -> same; ``num_features = C`` of the first input.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> nn.LazyBatchNorm3d()(spx.randn(2, 3, 2, 2, 2)).shape
        spx.Size([2, 3, 2, 2, 2])
    """

    cls_to_become = BatchNorm3d  # what it becomes once materialized (.lazy)
