"""``SyncBatchNorm``: batch normalization over the global batch of every data-parallel rank.

Mirrors ``torch.nn.SyncBatchNorm``. In training, with a process group of more than one rank,
each rank's per-channel sums are added over the group, so every rank normalizes with the mean
and variance of the *global* batch (the concatenation of the ranks' batches), and the running
statistics follow the global batch too. Anywhere else (eval, one rank, no process group) it is
``BatchNorm``, as torch's is.

How it runs on spx: the two reductions (the sum of ``x``, then the sum of squared deviations
from the global mean: the two-pass variance a single device computes) are eager collectives of
:mod:`spx.distributed`, and each one's backward is its gradient summed over the ranks, run by a
hook where the backward pass reaches it. That is torch's gradient (``sync_batch_norm``'s
backward all-reduces the same two per-channel sums), so DDP + SyncBatchNorm over ``n`` ranks
trains as one device on the global batch. Unlike torch's, it runs on CPU as well as GPU.

Collectives run between compiled programs, not inside one: a training step containing a
SyncBatchNorm that must synchronize cannot run inside ``spx.compile``, nor under the functional
``spx.backward(fn, model)`` (which runs no hooks); both raise with the fix. Write the step as
``loss.backward()`` outside ``spx.compile``, or keep ``BatchNorm`` (per-rank statistics).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from spx._tensor import graph
from spx._tensor.grad_mode import no_grad
from spx._tensor.tensor import Tensor
from spx.nn.module import Module
from spx.nn.modules.batchnorm import _BatchNorm
from spx.nn.modules.instancenorm import _InstanceNorm
from spx.ops.creation import full
from spx.ops.shape import cat

_IN_COMPILE = (
    "SyncBatchNorm: training with {n} ranks synchronizes batch statistics with collectives "
    "that run between compiled programs, not inside spx.compile. Run this training step "
    "without spx.compile (loss.backward() eagerly), or use nn.BatchNorm*d (per-rank "
    "statistics) in the compiled step."
)
_UNDER_JAX_BACKWARD = (
    "SyncBatchNorm: training with {n} ranks sends the gradient of its batch statistics to the "
    "other ranks from spx's own backward pass, which spx.backward(fn, model) / "
    "spx.value_and_grad do not run. Write the step torch's way: "
    "loss = loss_fn(model(x), y); loss.backward()."
)


def _all_reduced(t: Tensor, group: Any) -> Tensor:
    """The sum over the ranks, on ``t``'s device (a collective returns it on the rank's device,
    and with thread ranks a model left on the first device computes there)."""
    from spx.distributed import functional as dist_f

    out = dist_f.all_reduce(t, group=group)
    sharding = t._data.sharding
    if out._data.sharding != sharding:
        out = Tensor._of(jax.device_put(out._data, sharding))
    return out


def _summed_over_ranks(t: Tensor, group: Any) -> tuple[Tensor, jax.Array]:
    """``t`` summed over the ranks of ``group``; its gradient flows back summed over the ranks.

    Every rank's result depends on every rank's ``t``, so the gradient reaching a rank's ``t``
    is the sum of the gradients of all ranks' results: the hook all-reduces it.
    """
    total = _all_reduced(t.detach(), group)
    if not t.requires_grad:
        return total, total._data
    t.register_hook(lambda g: _all_reduced(g, group))
    # The value is exactly ``total`` (t - t.detach() is 0); the gradient reaches ``t``.
    return total + (t - t.detach()), total._data


class SyncBatchNorm(_BatchNorm):
    """Batch normalization synchronized over a process group (mirrors ``nn.SyncBatchNorm``).

    Same parameters, buffers and ``state_dict`` keys as ``BatchNorm*d``; any input of rank 2 or
    more, ``(N, C, *)``. In training with more than one rank in ``process_group`` (the default
    group when None), the batch mean and variance are those of all ranks' inputs together;
    otherwise it is ``BatchNorm``. Build it from a model's BatchNorm layers with
    :meth:`convert_sync_batchnorm`.

    Args:
        num_features: channels ``C``.
        eps: added to the variance.
        momentum: running-statistics momentum, or None for a cumulative average.
        affine: learn ``weight`` (ones) and ``bias`` (zeros).
        track_running_stats: keep running statistics (else batch statistics in eval too).
        process_group: the ranks to synchronize over (None: the default group).
        device: optional device spec.
        dtype: parameter/buffer dtype (default float32).
        bias: learn ``bias`` (only with ``affine``; keyword-only, as in torch).

    Shapes:
        ``(N, C, *)`` -> same.

    Example:
        >>> import spx
        >>> from spx import nn
        >>> model = nn.Sequential(nn.Linear(4, 3), nn.BatchNorm1d(3))
        >>> model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
        >>> type(model[1]).__name__
        'SyncBatchNorm'
        >>> model(spx.ones(5, 4)).shape  # no process group: BatchNorm's result
        spx.Size([5, 3])
    """

    def __init__(
        self,
        num_features: int,
        eps: float = 1e-5,
        momentum: float | None = 0.1,
        affine: bool = True,
        track_running_stats: bool = True,
        process_group: Any = None,
        device: Any = None,
        dtype: Any = None,
        *,
        bias: bool = True,
    ) -> None:
        super().__init__(
            num_features, eps, momentum, affine, track_running_stats, device, dtype, bias=bias
        )
        self.process_group = process_group

    def _check_input(self, x: Any) -> None:
        if x.ndim < 2:
            raise ValueError(
                f"SyncBatchNorm: expected at least 2D input (N, C, *) (got {x.ndim}D input)"
            )
        if x.shape[1] == 0:
            raise ValueError("SyncBatchNorm number of input channels should be non-zero")
        if x.shape[1] != self.num_features:
            raise ValueError(
                f"SyncBatchNorm: input has {x.shape[1]} channels at dim 1 (shape "
                f"{tuple(x.shape)}), but this layer has num_features={self.num_features}"
            )

    def _check_input_dim(self, input: Any) -> None:  # torch's name, kept for subclasses
        self._check_input(input)

    def _sync_world(self) -> int:
        """The number of ranks to synchronize over now (1: no synchronization)."""
        from spx import distributed as dist

        if not (self.training and self._uses_batch_stats() and dist.is_initialized()):
            return 1
        return dist.get_world_size(self.process_group)

    def forward(self, input: Tensor) -> Tensor:
        self._check_input(input)
        momentum = self._count_batch()
        world = self._sync_world()
        if world <= 1:
            return self._local_batch_norm(input, momentum)
        if graph.STATE.jax_backward:
            raise RuntimeError(_UNDER_JAX_BACKWARD.format(n=world))
        # Traced: the input, or (an input the step closes over) the module's own state.
        state = [t for t in (input, self.weight, self.running_mean) if t is not None]
        if any(isinstance(t._data, jax.core.Tracer) for t in state):
            raise RuntimeError(_IN_COMPILE.format(n=world))
        return self._synced(input, momentum)

    def _synced(self, input: Tensor, momentum: Any) -> Tensor:
        c = input.shape[1]
        dims = (0, *range(2, input.ndim))
        shape = (1, c) + (1,) * (input.ndim - 2)
        # Statistics in float32 at least, as BatchNorm's (float16/bfloat16 inputs).
        x = input.to(jnp.promote_types(input.dtype, jnp.float32))
        # The count rides along with the sums: ranks may hold batches of different sizes.
        count = full((1,), float(input.numel() // c), dtype=x.dtype, device=x.device)
        sums, computed = _summed_over_ranks(cat([x.sum(dims), count]), self.process_group)
        if float(computed[c]) <= 1:
            raise ValueError(
                f"Expected more than 1 value per channel when training, got "
                f"{int(computed[c])} in all ranks' batches together (input size "
                f"{tuple(input.shape)} on this rank); use a larger batch"
            )
        n = sums[c]
        mean = sums[:c] / n
        centered = x - mean.reshape(shape)
        var = _summed_over_ranks((centered * centered).sum(dims), self.process_group)[0] / n
        out = centered * (var + self.eps).rsqrt().reshape(shape)
        if self.weight is not None:
            out = out * self.weight.reshape(shape)
        if self.bias is not None:
            out = out + self.bias.reshape(shape)
        if self.track_running_stats and self.running_mean is not None:
            with no_grad():
                unbiased = var * (n / (n - 1))
                for buf, stat in ((self.running_mean, mean), (self.running_var, unbiased)):
                    buf.copy_((1 - momentum) * buf + momentum * stat)
        return out.to(input.dtype)

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group: Any = None) -> Module:
        """``module`` with every ``BatchNorm*d`` in it replaced by a ``SyncBatchNorm``.

        As torch's: the new layers take over the parameters and buffers (the same objects) and
        the training flag; a BatchNorm passed itself is returned as a new SyncBatchNorm, any
        other module is changed in place and returned.

        Example:
            >>> from spx import nn
            >>> net = nn.SyncBatchNorm.convert_sync_batchnorm(nn.BatchNorm2d(8))
            >>> type(net).__name__, net.num_features
            ('SyncBatchNorm', 8)
        """
        out = module
        if isinstance(module, _BatchNorm) and not isinstance(module, _InstanceNorm):
            if module._is_lazy():
                raise ValueError(
                    f"convert_sync_batchnorm: {type(module).__name__} has not seen an input yet "
                    "(its num_features is unknown); run one forward pass before converting"
                )
            out = cls(
                module.num_features,
                module.eps,
                module.momentum,
                module.affine,
                module.track_running_stats,
                process_group,
                bias=module.bias is not None,
            )
            if module.affine:
                with no_grad():
                    out.weight = module.weight
                    out.bias = module.bias
            out.running_mean = module.running_mean
            out.running_var = module.running_var
            out.num_batches_tracked = module.num_batches_tracked
            out.training = module.training
            if hasattr(module, "qconfig"):
                out.qconfig = module.qconfig
        for name, child in module.named_children():
            out.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return out
