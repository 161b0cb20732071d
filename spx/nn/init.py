"""Parameter initialization mirroring ``torch.nn.init``.

Two forms of every random initializer:

* **in place**, torch's names with a trailing underscore (``kaiming_uniform_(param, a=...)``):
  takes an :class:`spx.Tensor` (a :class:`spx.nn.Parameter`), writes new values of the same
  shape and dtype into it in place (under ``no_grad``) and returns it —
  torch's contract, so ``reset_parameters`` code ports unchanged. A bare ``jax.Array`` cannot be
  written in place, so it is rejected with a TypeError pointing at the alternatives.
* **out of place**, the same name without the underscore and a shape instead of a tensor
  (``kaiming_uniform((out, in), a=...)``): returns a new array, for code that builds arrays
  directly. (torch's long-deprecated tensor-taking aliases of the same names are not provided.)

Randomness comes from ``spx.manual_seed``'s per-rank generator (``spx.random.next_key()``);
``generator=`` may be an :class:`spx.Generator` or a jax PRNG key for an explicit,
reproducible draw. Values are drawn in
at least float32 and cast to the parameter's dtype.

See https://pytorch.org/docs/stable/nn.init.html
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx import random as spx_random
from spx._tensor.grad_mode import no_grad
from spx._tensor.tensor import Tensor
from spx.generator import Generator

Array = jax.Array
Shape = int | Sequence[int]

_LINEAR_FNS = (
    "linear", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
)  # fmt: skip


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """The recommended gain for a nonlinearity (mirrors ``torch.nn.init.calculate_gain``).

    Args:
        nonlinearity: ``"linear"``, ``"conv{1,2,3}d"``, ``"conv_transpose{1,2,3}d"``,
            ``"sigmoid"`` (1), ``"tanh"`` (5/3), ``"relu"`` (sqrt 2), ``"leaky_relu"``
            (sqrt(2 / (1 + slope^2))) or ``"selu"`` (3/4).
        param: the negative slope for ``"leaky_relu"`` (default 0.01).

    Example:
        >>> init.calculate_gain("leaky_relu", 0.2)
    """
    if nonlinearity in _LINEAR_FNS or nonlinearity == "sigmoid":
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, int | float) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"calculate_gain: negative_slope {param!r} is not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(
        f"Unsupported nonlinearity {nonlinearity!r}; expected one of "
        f"{(*_LINEAR_FNS, 'sigmoid', 'tanh', 'relu', 'leaky_relu', 'selu')}"
    )


def _shape_of(tensor_or_shape: Any) -> tuple[int, ...]:
    if hasattr(tensor_or_shape, "shape"):
        return tuple(tensor_or_shape.shape)
    if isinstance(tensor_or_shape, int):
        return (tensor_or_shape,)
    return tuple(int(s) for s in tensor_or_shape)


def _calculate_fan_in_and_fan_out(tensor: Any) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight (torch's private helper of the same name).

    ``fan_in = size(1) * receptive_field``, ``fan_out = size(0) * receptive_field`` where the
    receptive field is the product of the dims after the first two.

    Args:
        tensor: a Parameter, an array, or a shape tuple with at least 2 dims.
    """
    shape = _shape_of(tensor)
    if len(shape) < 2:
        raise ValueError(
            f"Fan in and fan out can not be computed for a tensor with fewer than 2 dimensions "
            f"(shape {shape})"
        )
    receptive = math.prod(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _calculate_correct_fan(tensor: Any, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode!r} not supported, please use one of 'fan_in', 'fan_out'")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


# -- out-of-place ---------------------------------------------------------------------------


def _key(generator: Any) -> Array:
    if generator is None:
        return spx_random.next_key()
    if isinstance(generator, Generator):
        return generator.next_key()
    if spx_random.is_key(generator):
        return generator
    raise TypeError(
        f"generator must be an spx.Generator or a jax PRNG key (jax.random.key(n)), got "
        f"{type(generator).__name__}; omit it to draw from spx.manual_seed's generator"
    )


def _draw_dtype(dtype: Any) -> Any:
    # Draw low-precision values in float32 (then cast), like a float32 master copy would.
    return jnp.promote_types(dtype, jnp.float32)


def _checked_shape(shape: Any, fn: str) -> tuple[int, ...]:
    if hasattr(shape, "shape") or hasattr(shape, "data"):
        raise TypeError(
            f"init.{fn}(shape, ...) is the out-of-place form and takes a shape; to fill a "
            f"Parameter in place use init.{fn}_(param, ...)"
        )
    return _shape_of(shape)


# The sampling bodies are jitted with static shape/dtype and traced bounds: building a model
# then costs one small compile per distinct parameter shape, not one per primitive and shape
# (eager mode), and changing a bound or std does not recompile.
@functools.partial(jax.jit, static_argnames=("shape", "dtype"))
def _uniform_impl(key: Array, a: Array, b: Array, shape: tuple[int, ...], dtype: Any) -> Array:
    return jax.random.uniform(key, shape, _draw_dtype(dtype), a, b).astype(dtype)


@functools.partial(jax.jit, static_argnames=("shape", "dtype"))
def _normal_impl(key: Array, mean: Array, std: Array, shape: tuple[int, ...], dtype: Any) -> Array:
    return (jax.random.normal(key, shape, _draw_dtype(dtype)) * std + mean).astype(dtype)


@functools.partial(jax.jit, static_argnames=("shape", "dtype"))
def _trunc_normal_impl(
    key: Array, mean: Array, std: Array, a: Array, b: Array, shape: tuple[int, ...], dtype: Any
) -> Array:
    lo, hi = (a - mean) / std, (b - mean) / std
    z = jax.random.truncated_normal(key, lo, hi, shape, _draw_dtype(dtype))
    # Clip like torch does, guarding against rounding just outside [a, b].
    return jnp.clip(z * std + mean, a, b).astype(dtype)


@functools.partial(jax.jit, static_argnames=("shape", "dtype"))
def _orthogonal_impl(key: Array, gain: Array, shape: tuple[int, ...], dtype: Any) -> Array:
    rows = shape[0]
    cols = math.prod(shape) // rows
    flat = jax.random.normal(key, (rows, cols), _draw_dtype(dtype))
    if rows < cols:
        flat = flat.T
    q, r = jnp.linalg.qr(flat)
    q = q * jnp.sign(jnp.diagonal(r))
    if rows < cols:
        q = q.T
    return (q * gain).reshape(shape).astype(dtype)


def uniform(
    shape: Shape, a: float = 0.0, b: float = 1.0, *, dtype: Any = jnp.float32, generator: Any = None
) -> Array:
    """A new array drawn from ``U(a, b)``.

    Example:
        >>> init.uniform((3, 4), -0.1, 0.1).shape  # (3, 4)
    """
    shape = _checked_shape(shape, "uniform")
    return _uniform_impl(_key(generator), a, b, shape, jnp.dtype(dtype))


def normal(
    shape: Shape,
    mean: float = 0.0,
    std: float = 1.0,
    *,
    dtype: Any = jnp.float32,
    generator: Any = None,
) -> Array:
    """A new array drawn from ``N(mean, std^2)``.

    Example:
        >>> init.normal((3, 4), std=0.02).shape  # (3, 4)
    """
    shape = _checked_shape(shape, "normal")
    return _normal_impl(_key(generator), mean, std, shape, jnp.dtype(dtype))


def trunc_normal(
    shape: Shape,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    *,
    dtype: Any = jnp.float32,
    generator: Any = None,
) -> Array:
    """A new array from ``N(mean, std^2)`` truncated to ``[a, b]`` (absolute bounds, as torch).

    Example:
        >>> init.trunc_normal((3, 4), std=0.02, a=-0.04, b=0.04).shape  # (3, 4)
    """
    shape = _checked_shape(shape, "trunc_normal")
    if std <= 0 or a >= b:
        raise ValueError(f"trunc_normal: need std > 0 and a < b, got std={std}, a={a}, b={b}")
    return _trunc_normal_impl(_key(generator), mean, std, a, b, shape, jnp.dtype(dtype))


def xavier_uniform(
    shape: Shape, gain: float = 1.0, *, dtype: Any = jnp.float32, generator: Any = None
) -> Array:
    """``U(-bound, bound)`` with ``bound = gain * sqrt(6 / (fan_in + fan_out))``.

    Example:
        >>> init.xavier_uniform((64, 32)).shape  # (64, 32)
    """
    shape = _checked_shape(shape, "xavier_uniform")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(shape)
    bound = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform(shape, -bound, bound, dtype=dtype, generator=generator)


def xavier_normal(
    shape: Shape, gain: float = 1.0, *, dtype: Any = jnp.float32, generator: Any = None
) -> Array:
    """``N(0, std^2)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    Example:
        >>> init.xavier_normal((64, 32)).shape  # (64, 32)
    """
    shape = _checked_shape(shape, "xavier_normal")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(shape)
    std = gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return normal(shape, 0.0, std, dtype=dtype, generator=generator)


def kaiming_uniform(
    shape: Shape,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    *,
    dtype: Any = jnp.float32,
    generator: Any = None,
) -> Array:
    """``U(-bound, bound)`` with ``bound = gain(nonlinearity, a) * sqrt(3 / fan_mode)``.

    Example:
        >>> init.kaiming_uniform((64, 32), a=math.sqrt(5)).shape  # torch's Linear default
    """
    shape = _checked_shape(shape, "kaiming_uniform")
    fan = _calculate_correct_fan(shape, mode)
    bound = math.sqrt(3.0) * calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return uniform(shape, -bound, bound, dtype=dtype, generator=generator)


def kaiming_normal(
    shape: Shape,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    *,
    dtype: Any = jnp.float32,
    generator: Any = None,
) -> Array:
    """``N(0, std^2)`` with ``std = gain(nonlinearity, a) / sqrt(fan_mode)``.

    Example:
        >>> init.kaiming_normal((64, 32), mode="fan_out", nonlinearity="relu").shape
    """
    shape = _checked_shape(shape, "kaiming_normal")
    fan = _calculate_correct_fan(shape, mode)
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan)
    return normal(shape, 0.0, std, dtype=dtype, generator=generator)


def orthogonal(
    shape: Shape, gain: float = 1.0, *, dtype: Any = jnp.float32, generator: Any = None
) -> Array:
    """A (semi-)orthogonal matrix, viewed as ``(shape[0], prod(shape[1:]))``, times ``gain``.

    torch's recipe: QR of a Gaussian matrix, with Q's columns sign-corrected by ``diag(R)`` so
    the result is uniformly (Haar) distributed.

    Example:
        >>> w = init.orthogonal((4, 6)); w @ w.T  # ~identity
    """
    shape = _checked_shape(shape, "orthogonal")
    if len(shape) < 2:
        raise ValueError(f"orthogonal: only shapes with 2 or more dims are supported, got {shape}")
    rows = shape[0]
    cols = math.prod(shape) // rows if rows else 0
    if rows * cols == 0:
        return jnp.zeros(shape, dtype)
    return _orthogonal_impl(_key(generator), gain, shape, jnp.dtype(dtype))


# -- in place -------------------------------------------------------------------------------


# Fills have no init.* out-of-place form: point at the jnp constructor instead.
_OUT_OF_PLACE = {
    "constant": "jnp.full(w.shape, val, w.dtype)",
    "ones": "jnp.ones_like(w)",
    "zeros": "jnp.zeros_like(w)",
    "eye": "jnp.eye(*w.shape, dtype=w.dtype)",
    "dirac": "init.dirac_(spx.nn.Parameter(w)).data",
}


def _target(tensor: Any, fn: str) -> Tensor:
    """``tensor`` validated for an in-place write (its shape and dtype need no computation)."""
    if isinstance(tensor, jax.Array | np.ndarray):
        kind = "jax.Array" if isinstance(tensor, jax.Array) else "numpy array"
        out_of_place = _OUT_OF_PLACE.get(fn, f"init.{fn}(w.shape, ...)")
        raise TypeError(
            f"init.{fn}_ writes into its argument, but a {kind} cannot be updated in place. "
            f"Wrap it in a Parameter and keep the returned object, or build a new array:\n"
            f"    w = spx.nn.Parameter(w); init.{fn}_(w)\n"
            f"    w = {out_of_place}"
        )
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"init.{fn}_ expects an spx.Tensor or nn.Parameter to fill in place, got "
            f"{type(tensor).__name__}"
        )
    return tensor


def _fill(tensor: Any, fn: str, make: Callable[[tuple[int, ...], Any], Array]) -> Any:
    data = _target(tensor, fn)
    if data.numel() == 0:
        if fn.startswith(("kaiming", "xavier")):  # the ones torch warns about
            warnings.warn("Initializing zero-element tensors is a no-op", UserWarning, stacklevel=3)
        return tensor
    # In place and without autograd, as torch's init functions (views write through).
    with no_grad():
        tensor.copy_(make(tuple(data.shape), data.dtype))
    return tensor


def uniform_(tensor: Any, a: float = 0.0, b: float = 1.0, generator: Any = None) -> Any:
    """Fill ``tensor`` from ``U(a, b)`` in place (mirrors ``torch.nn.init.uniform_``).

    Args:
        tensor: a Parameter of any shape.
        a: lower bound.
        b: upper bound.
        generator: optional jax PRNG key.

    Example:
        >>> w = spx.nn.Parameter(jnp.empty((3, 4))); init.uniform_(w, -0.1, 0.1)
    """
    return _fill(tensor, "uniform", lambda s, d: uniform(s, a, b, dtype=d, generator=generator))


def normal_(tensor: Any, mean: float = 0.0, std: float = 1.0, generator: Any = None) -> Any:
    """Fill ``tensor`` from ``N(mean, std^2)`` in place (mirrors ``torch.nn.init.normal_``).

    Example:
        >>> init.normal_(spx.nn.Parameter(jnp.empty((10, 4))), std=0.02)  # Embedding-style
    """
    return _fill(tensor, "normal", lambda s, d: normal(s, mean, std, dtype=d, generator=generator))


def trunc_normal_(
    tensor: Any,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Any = None,
) -> Any:
    """Fill from ``N(mean, std^2)`` truncated to ``[a, b]`` (mirrors ``torch...trunc_normal_``).

    ``a`` and ``b`` are absolute bounds (not in units of ``std``), as in torch.

    Example:
        >>> init.trunc_normal_(spx.nn.Parameter(jnp.empty((4, 4))), std=0.02, a=-0.04, b=0.04)
    """
    return _fill(
        tensor,
        "trunc_normal",
        lambda s, d: trunc_normal(s, mean, std, a, b, dtype=d, generator=generator),
    )


def constant_(tensor: Any, val: float) -> Any:
    """Fill ``tensor`` with ``val`` (mirrors ``torch.nn.init.constant_``).

    Example:
        >>> init.constant_(spx.nn.Parameter(jnp.empty(4)), 0.1)
    """
    return _fill(tensor, "constant", lambda s, d: jnp.full(s, val, d))


def ones_(tensor: Any) -> Any:
    """Fill ``tensor`` with ones (mirrors ``torch.nn.init.ones_``).

    Example:
        >>> init.ones_(spx.nn.Parameter(jnp.empty(4)))  # a LayerNorm weight
    """
    return _fill(tensor, "ones", jnp.ones)


def zeros_(tensor: Any) -> Any:
    """Fill ``tensor`` with zeros (mirrors ``torch.nn.init.zeros_``).

    Example:
        >>> init.zeros_(spx.nn.Parameter(jnp.empty(4)))  # a bias
    """
    return _fill(tensor, "zeros", jnp.zeros)


def eye_(tensor: Any) -> Any:
    """Fill a 2-D ``tensor`` with the identity (mirrors ``torch.nn.init.eye_``).

    Example:
        >>> init.eye_(spx.nn.Parameter(jnp.empty((3, 5))))
    """
    if _target(tensor, "eye").ndim != 2:
        raise ValueError(f"eye_: only 2-D tensors are supported, got shape {tuple(tensor.shape)}")
    return _fill(tensor, "eye", lambda s, d: jnp.eye(s[0], s[1], dtype=d))


def dirac_(tensor: Any, groups: int = 1) -> Any:
    """Fill a 3-5-D conv weight with the Dirac delta (mirrors ``torch.nn.init.dirac_``).

    The conv then preserves the identity of (the first) input channels, per group.

    Args:
        tensor: a Parameter shaped ``(out, in/groups, *kernel)``.
        groups: number of groups the output channels are split into.

    Example:
        >>> init.dirac_(spx.nn.Parameter(jnp.empty((4, 4, 3, 3))))  # identity conv
    """
    data = _target(tensor, "dirac")
    if data.ndim not in (3, 4, 5):
        raise ValueError(
            f"dirac_: only 3-, 4- and 5-D tensors are supported, got {tuple(data.shape)}"
        )
    if data.shape[0] % groups:
        raise ValueError(f"dirac_: dim 0 ({data.shape[0]}) must be divisible by groups {groups}")
    out_per_group = data.shape[0] // groups
    w = np.zeros(data.shape, np.float32)
    centre = tuple(k // 2 for k in data.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, data.shape[1])):
            w[(g * out_per_group + d, d, *centre)] = 1
    with no_grad():  # in place, as torch's dirac_
        tensor.copy_(jnp.asarray(w, data.dtype))
    return tensor


def xavier_uniform_(tensor: Any, gain: float = 1.0, generator: Any = None) -> Any:
    """Glorot uniform in place (mirrors ``torch.nn.init.xavier_uniform_``).

    Example:
        >>> init.xavier_uniform_(spx.nn.Parameter(jnp.empty((64, 32))))
    """
    return _fill(
        tensor, "xavier_uniform", lambda s, d: xavier_uniform(s, gain, dtype=d, generator=generator)
    )


def xavier_normal_(tensor: Any, gain: float = 1.0, generator: Any = None) -> Any:
    """Glorot normal in place (mirrors ``torch.nn.init.xavier_normal_``).

    Example:
        >>> init.xavier_normal_(spx.nn.Parameter(jnp.empty((64, 32))), gain=0.5)
    """
    return _fill(
        tensor, "xavier_normal", lambda s, d: xavier_normal(s, gain, dtype=d, generator=generator)
    )


def kaiming_uniform_(
    tensor: Any,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Any:
    """He uniform in place (mirrors ``torch.nn.init.kaiming_uniform_``).

    Args:
        tensor: a Parameter with at least 2 dims.
        a: negative slope of the following leaky_relu (``math.sqrt(5)`` is torch's Linear and
            Conv default).
        mode: ``"fan_in"`` (preserve forward variance) or ``"fan_out"`` (backward).
        nonlinearity: the following nonlinearity, see :func:`calculate_gain`.
        generator: optional jax PRNG key.

    Example:
        >>> init.kaiming_uniform_(spx.nn.Parameter(jnp.empty((64, 32))), a=math.sqrt(5))
    """
    return _fill(
        tensor,
        "kaiming_uniform",
        lambda s, d: kaiming_uniform(s, a, mode, nonlinearity, dtype=d, generator=generator),
    )


def kaiming_normal_(
    tensor: Any,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Any = None,
) -> Any:
    """He normal in place (mirrors ``torch.nn.init.kaiming_normal_``).

    Example:
        >>> init.kaiming_normal_(spx.nn.Parameter(jnp.empty((64, 32))), nonlinearity="relu")
    """
    return _fill(
        tensor,
        "kaiming_normal",
        lambda s, d: kaiming_normal(s, a, mode, nonlinearity, dtype=d, generator=generator),
    )


def orthogonal_(tensor: Any, gain: float = 1.0, generator: Any = None) -> Any:
    """(Semi-)orthogonal init in place (mirrors ``torch.nn.init.orthogonal_``).

    Example:
        >>> w = init.orthogonal_(spx.nn.Parameter(jnp.empty((4, 6)))).data; w @ w.T  # ~I
    """
    if _target(tensor, "orthogonal").ndim < 2:
        raise ValueError(
            f"orthogonal_: only tensors with 2 or more dims are supported, got "
            f"{tuple(tensor.shape)}"
        )
    return _fill(
        tensor, "orthogonal", lambda s, d: orthogonal(s, gain, dtype=d, generator=generator)
    )
