"""``spx.autocast``: torch's automatic mixed precision regions (mirrors ``torch.autocast``).

Inside ``with spx.autocast("cuda"):`` (or ``"cpu"``), each operation on torch's
"lower precision" list — matrix products, ``linear``, convolutions, attention — casts its
floating inputs to the region's dtype (float16 for ``"cuda"``, bfloat16 for ``"cpu"`` by default)
and runs there; operations on the "float32" list (losses; on ``"cuda"`` also softmax, norms,
exp/log, sums) cast float16/bfloat16 inputs up to float32; every other operation runs in the
dtype its inputs have. The lists are torch's (``aten/src/ATen/autocast_mode.cpp``), per device
type, restricted to the operations spx has. Casts are recorded operations, so gradients flow
back to float32 parameters in float32, as in torch.

Regions are per thread and per device type, like torch's. A ``"cuda"`` region needs a GPU: without
one it is disabled with a warning, as in torch (and as ``GradScaler("cuda")`` is), so a float16
script run on the CPU trains in float32 rather than in float16 without loss scaling. The policy
applies to the operations recorded in the innermost enabled region (spx does not look up each
operation's device; with CPU and GPU regions nested, the inner one decides).

Example:
    >>> import spx
    >>> lin = spx.nn.Linear(4, 3)
    >>> with spx.autocast("cpu"):
    ...     y = lin(spx.ones(2, 4))
    ...     loss = spx.nn.functional.mse_loss(y, spx.zeros(2, 3))
    >>> y.dtype, loss.dtype
    (dtype(bfloat16), dtype('float32'))
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor import graph

__all__ = ["autocast", "get_autocast_dtype", "is_autocast_enabled"]

_DEFAULT_DTYPE = {"cpu": np.dtype(jnp.bfloat16), "cuda": np.dtype(jnp.float16)}
_LOW = (np.dtype(jnp.float16), np.dtype(jnp.bfloat16))
_CASTABLE = (*_LOW, np.dtype(np.float32))  # torch never casts float64 (nor complex)

# (module, function) of the array implementations behind spx's operations, by torch's lists.
_LOWER_COMMON = [
    ("spx.nn.functional.linear", "linear"),
    ("spx.nn.functional.conv", "conv1d"), ("spx.nn.functional.conv", "conv2d"),
    ("spx.nn.functional.conv", "conv3d"), ("spx.nn.functional.conv", "conv_transpose1d"),
    ("spx.nn.functional.conv", "conv_transpose2d"),
    ("spx.nn.functional.conv", "conv_transpose3d"),
    ("spx.nn.functional.activation", "prelu"),
    ("spx.nn.functional.attention", "scaled_dot_product_attention"),
    ("spx.nn.functional.attention", "multi_head_attention_forward"),
    ("spx._tensor.methods.linalg", "_matmul"), ("spx._tensor.methods.linalg", "_mm"),
    ("spx._tensor.methods.linalg", "_bmm"), ("spx._tensor.methods.linalg", "_addmm"),
    ("spx._tensor.methods.linalg", "_addbmm"),
    # torch runs these through bmm/mm, which are on the list, so they come out low too.
    ("spx.ops.linalg", "_einsum"), ("spx.ops.linalg", "_tensordot"),
    ("spx.linalg._products", "_vecdot"),  # linalg_vecdot: on both of torch's lists
    # A CPU LSTM is mkldnn_rnn_layer (on the list); an Elman RNN or cell is linear + tanh/relu
    # with nothing after to widen it, so it comes out low too (a GRU's or an LSTMCell's gate
    # arithmetic with the float32 state widens theirs: those stay off the CPU list).
    ("spx.nn.functional.rnn", "lstm_layer"), ("spx.nn.functional.rnn", "rnn_tanh_layer"),
    ("spx.nn.functional.rnn", "rnn_relu_layer"), ("spx.nn.functional.rnn", "rnn_tanh_cell"),
    ("spx.nn.functional.rnn", "rnn_relu_cell"),
    # linalg_multi_dot on CUDA; on the CPU torch's multi_dot (and chain_matmul) is mm calls.
    ("spx.linalg._products", "_multi_dot"),
]  # fmt: skip
_LOWER_CUDA_ONLY = [
    ("spx._tensor.methods.linalg", "_mv"), ("spx._tensor.methods.linalg", "_addr"),
    ("spx._tensor.methods.linalg", "_addmv"),
    # The cells are on torch's CUDA list; the layers run as cuDNN RNNs, which autocast casts
    # to float16 too (aten/src/ATen/cudnn/AutocastRNN.cpp).
    ("spx.nn.functional.rnn", "gru_layer"), ("spx.nn.functional.rnn", "lstm_cell"),
    ("spx.nn.functional.rnn", "gru_cell"),
]  # fmt: skip
_FP32_COMMON = [
    ("spx.nn.functional.cross_entropy", "cross_entropy"),
    ("spx.nn.functional.cross_entropy", "nll_loss"),
    ("spx.nn.functional.ctc_loss", "_ctc_loss"),  # (torch's CPU autocast: float32 too)
    *[
        ("spx.nn.functional.loss", name)
        for name in (
            "mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div",
            "binary_cross_entropy", "binary_cross_entropy_with_logits", "margin_ranking_loss",
            "soft_margin_loss",
        )
    ],
    *[
        ("spx.nn.functional.margin_loss", name)
        for name in (
            "multi_margin_loss", "multilabel_margin_loss", "hinge_embedding_loss",
            "poisson_nll_loss", "cosine_embedding_loss", "triplet_margin_loss",
            "triplet_from_distances",
        )
    ],
    # torch's CPU list: 3-d pooling (max_pool3d with indices is not on it), fractional and
    # unpooling, grid_sampler, quantile.
    *[
        ("spx.nn.functional.pooling", name)
        for name in ("avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "adaptive_max_pool3d")
    ],
    *[
        ("spx.nn.functional.pool_indices", name)
        for name in (
            "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d",
        )
    ],
    ("spx.nn.functional.fractional_pool", "_fractional_max_pool"),
    ("spx.nn.functional.grid_sample", "grid_sample"),
    ("spx._tensor.methods.ordering", "_quantile"),
    ("spx.ops.linalg", "_cdist"), ("spx._tensor.methods.reduction", "_prod"),
    # Linear algebra (LAPACK has no bfloat16/float16 kernels) and trace.
    ("spx._tensor.methods.linalg", "_inverse"), ("spx._tensor.methods.linalg", "_det"),
    ("spx._tensor.methods.linalg", "_logdet"), ("spx._tensor.methods.linalg", "_pinverse"),
    ("spx._tensor.methods.arrange", "_trace"),
    # torch.linalg's decompositions and solves and every torch.fft transform: torch's CPU
    # list. On CUDA torch has no half kernels for the former, and its half FFTs give complex32,
    # which spx lacks: float32 is what runs there too.
    *[
        ("spx.linalg._decompositions", name)
        for name in ("_cholesky", "_qr", "_svd", "_svdvals", "_eigh", "_eigvalsh")
    ],
    *[("spx.linalg._solvers", name) for name in ("_solve", "_lstsq")],
    # The LAPACK-style info of cholesky/inv/solve (spx.linalg._errors) factorizes again.
    *[
        ("spx.linalg._errors", name)
        for name in ("first_zero_pivot", "_cholesky_info", "_lu_info", "_solve_info")
    ],
    ("spx.linalg._rank", "_matrix_rank"), ("spx.linalg._norms", "_cond"),
    *[
        ("spx.fft", name)
        for name in ("_c2c", "_r2c", "_c2r", "_hermitian_to_real", "_real_to_hermitian")
    ],
]  # fmt: skip
_FP32_CUDA_ONLY = [
    ("spx.nn.functional.activation", "softmax"), ("spx.nn.functional.activation", "log_softmax"),
    ("spx.nn.functional.activation", "softmin"), ("spx.nn.functional.activation", "softplus"),
    ("spx._tensor.methods.math", "_softmax"), ("spx._tensor.methods.math", "_log_softmax"),
    ("spx.nn.functional.normalization", "layer_norm"),
    ("spx.nn.functional.normalization", "group_norm"),
    ("spx.nn.functional.distance", "cosine_similarity"),
    ("spx._tensor.methods.reduction", "_sum"), ("spx._tensor.methods.reduction", "_cumsum"),
    ("spx._tensor.methods.reduction", "_cumprod"),
    ("spx._tensor.methods.reduction", "_logsumexp"),
    ("jax.numpy", "exp"), ("jax.numpy", "expm1"), ("jax.numpy", "log"), ("jax.numpy", "log2"),
    ("jax.numpy", "log10"), ("jax.numpy", "log1p"), ("jax.numpy", "reciprocal"),
    ("jax.numpy", "sinh"), ("jax.numpy", "cosh"), ("jax.numpy", "tan"), ("jax.numpy", "arcsin"),
    ("jax.numpy", "arccos"),
    # linalg_vector_norm/linalg_matrix_norm (torch's fp32-with-dtype list, CUDA only).
    ("spx.linalg._norms", "_vector_norm"), ("spx.linalg._norms", "_matrix_norm"),
    # torch's upsample_nearest*/_upsample_nearest_exact*, upsample_linear1d/bilinear2d/
    # trilinear3d and upsample_bicubic2d (F.interpolate; its 'area' mode is an adaptive pool).
    ("spx.nn.functional.upsampling", "upsample_nearest"),
    ("spx.nn.functional.upsampling", "upsample_linear"),
    ("spx.nn.functional.upsampling", "upsample_bicubic2d"),
    ("spx.nn.functional.upsampling", "upsample_bilinear2d_aa"),
    ("spx.nn.functional.upsampling", "upsample_bicubic2d_aa"),
]  # fmt: skip


def _functions(pairs: list[tuple[str, str]]) -> frozenset:
    import importlib

    out = set()
    for module, name in pairs:
        fn = getattr(importlib.import_module(module), name, None)
        if fn is None:
            raise AssertionError(f"autocast table: {module}.{name} does not exist")
        out.add(fn)
    return frozenset(out)


@functools.cache
def _tables(device_type: str) -> tuple[frozenset, frozenset]:
    """(lower-precision functions, float32 functions) for a device type (built on first use)."""
    lower, fp32 = list(_LOWER_COMMON), list(_FP32_COMMON)
    if device_type == "cuda":
        lower += _LOWER_CUDA_ONLY
        fp32 += _FP32_CUDA_ONLY
    return _functions(lower), _functions(fp32)


class _Policy:
    """What an autocast region does to the inputs of one recorded operation."""

    __slots__ = ("device_type", "dtype", "fp32", "lower")

    def __init__(self, device_type: str, dtype: np.dtype) -> None:
        self.device_type, self.dtype = device_type, dtype
        self.lower, self.fp32 = _tables(device_type)

    def cast_args(self, fn: Any, args: tuple) -> tuple:
        target = self._target(fn)
        if target is None:
            return args
        return tuple([_cast(a, target) for a in args])

    def cast_call(self, fn: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
        target = self._target(fn)
        if target is None:
            return args, kwargs
        args = tuple([_cast(a, target) for a in args])
        return args, {k: _cast(v, target) for k, v in kwargs.items()}

    def _target(self, fn: Any) -> np.dtype | None:
        if fn in self.lower:
            return self.dtype
        if fn in self.fp32:
            return np.dtype(np.float32)
        return None


def _cast(x: Any, target: np.dtype) -> Any:
    dtype = getattr(x, "dtype", None)
    if dtype is None or dtype == target or jnp.issubdtype(dtype, jax.dtypes.prng_key):
        return x  # (a random key passed to a recorded op: not a number)
    dtype = np.dtype(dtype)
    if target == np.float32 and dtype not in _LOW:
        return x  # the float32 list only widens float16/bfloat16 inputs
    if dtype not in _CASTABLE:
        return x  # integers, bool, float64, complex: as they are (torch's is_eligible)
    if hasattr(x, "_ref"):
        return x.to(target)
    return jnp.asarray(x).astype(target)


def _device_type(device_type: Any) -> str:
    if not isinstance(device_type, str) or device_type not in _DEFAULT_DTYPE:
        raise RuntimeError(
            f"User specified an unsupported autocast device_type {device_type!r}; spx supports "
            "'cuda' and 'cpu'"
        )
    return device_type


class _Regions:
    """A thread's autocast regions: a stack of ``(device_type, policy or None)``.

    torch keeps one state per device type; an operation here applies the innermost enabled
    region (spx does not look up each operation's device), and ``enabled=False`` for a device
    type switches off the regions of that type around it.
    """

    __slots__ = ("stack",)

    def __init__(self) -> None:
        self.stack: list[tuple[str, _Policy | None]] = []

    def state(self, device_type: str) -> _Policy | None:
        for device, policy in reversed(self.stack):
            if device == device_type:
                return policy
        return None

    def active(self) -> _Policy | None:
        seen: set[str] = set()
        for device, policy in reversed(self.stack):
            if device in seen:
                continue
            seen.add(device)
            if policy is not None:
                return policy
        return None


def _regions() -> _Regions:
    state = graph.STATE
    regions = getattr(state, "autocast_regions", None)
    if regions is None:
        regions = state.autocast_regions = _Regions()
    return regions


class autocast:
    """A mixed precision region (``torch.autocast``): a context manager and a decorator.

    Args:
        device_type: ``"cuda"`` or ``"cpu"``. ``"cuda"`` without a GPU disables the region with
            a warning, as torch does (so it agrees with ``GradScaler("cuda")``, which torch
            and spx also disable there).
        dtype: ``float16`` or ``bfloat16``; default float16 for cuda, bfloat16 for cpu.
        enabled: False makes the region a no-op and switches off enclosing regions of the
            same device type inside it.
        cache_enabled: accepted (torch caches cast weights; XLA fuses the casts instead).
    """

    def __init__(
        self,
        device_type: str,
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        self.device = _device_type(device_type)
        self.fast_dtype = _DEFAULT_DTYPE[self.device] if dtype is None else np.dtype(dtype)
        self._enabled = bool(enabled)
        if self._enabled and self.device == "cuda":
            from spx import cuda

            if not cuda.is_available():
                warnings.warn(
                    "User provided device_type of 'cuda', but there is no GPU. Disabling "
                    "autocast (use spx.autocast('cpu') for mixed precision on the CPU).",
                    UserWarning,
                    stacklevel=2,
                )
                self._enabled = False
        if self._enabled and self.fast_dtype not in _LOW:
            warnings.warn(
                f"In {self.device} autocast, but the target dtype {self.fast_dtype} is not "
                "supported (float16 or bfloat16). Disabling autocast.",
                UserWarning,
                stacklevel=2,
            )
            self._enabled = False

    def __enter__(self) -> autocast:
        regions = _regions()
        policy = _Policy(self.device, self.fast_dtype) if self._enabled else None
        regions.stack.append((self.device, policy))
        graph.STATE.autocast = regions.active()
        return self

    def __exit__(self, *exc: Any) -> None:
        regions = _regions()
        regions.stack.pop()
        graph.STATE.autocast = regions.active()

    def __call__(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self:
                return fn(*args, **kwargs)

        return wrapper


def signature() -> tuple | None:
    """The active policy as a hashable value (what a compiled program was traced under)."""
    policy = graph.STATE.autocast
    return None if policy is None else (policy.device_type, str(policy.dtype))


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """Whether an autocast region for ``device_type`` (default ``"cuda"``) is on here."""
    device = _device_type("cuda" if device_type is None else device_type)
    return _regions().state(device) is not None


def get_autocast_dtype(device_type: str) -> np.dtype:
    """The dtype of the region for ``device_type``, else that device type's default."""
    device = _device_type(device_type)
    policy = _regions().state(device)
    return _DEFAULT_DTYPE[device] if policy is None else policy.dtype
