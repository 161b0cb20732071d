"""In-place methods of :class:`spx.Tensor` (``add_``, ``copy_``, ``zero_``, ``normal_``, ...).

Each computes its result as the out-of-place method would, casts it to ``self``'s dtype under
torch's rule (a float result cannot be written into an integer tensor), and rebinds ``self``
(``Tensor._assign``), writing through to the base of a view. They return ``self``. On a leaf
that requires grad they raise unless grad mode is off (``with spx.no_grad():``), as in torch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from spx._tensor import checks
from spx._tensor.dispatch import apply
from spx._tensor.methods._dtypes import canonical, cast, category, check_scalar_fits
from spx._tensor.placement import current_device, moved_to


def _full_like(x: Any, value: Any) -> Any:
    return jnp.full(x.shape, value, x.dtype)


# The random fills take the tensor they overwrite as their first input and ignore it: reading it
# runs the draw on that tensor's device (see spx/_tensor/placement.py).
def _uniform(_into: Any, key: Any, lo: Any, hi: Any, shape: tuple, dtype: Any) -> Any:
    return jax.random.uniform(key, shape, dtype, lo, hi)


def _normal(_into: Any, key: Any, mean: Any, std: Any, shape: tuple, dtype: Any) -> Any:
    return mean + std * jax.random.normal(key, shape, dtype)


def _bernoulli_p(key: Any, p: Any, shape: tuple, dtype: Any) -> Any:
    p = jnp.asarray(p)
    if not jnp.issubdtype(p.dtype, jnp.floating):  # bernoulli_(1) as torch; JAX wants a float
        p = p.astype(jnp.float32)
    return jax.random.bernoulli(key, p, shape).astype(dtype)


def _bernoulli(_into: Any, key: Any, p: Any, shape: tuple, dtype: Any) -> Any:
    return _bernoulli_p(key, p, shape, dtype)


def _exponential(_into: Any, key: Any, lambd: Any, shape: tuple, dtype: Any) -> Any:
    return (jax.random.exponential(key, shape, jnp.float32) / lambd).astype(dtype)


def _cauchy(_into: Any, key: Any, median: Any, sigma: Any, shape: tuple, dtype: Any) -> Any:
    return (median + sigma * jax.random.cauchy(key, shape, jnp.float32)).astype(dtype)


def _log_normal(_into: Any, key: Any, mean: Any, std: Any, shape: tuple, dtype: Any) -> Any:
    return jnp.exp(mean + std * jax.random.normal(key, shape, jnp.float32)).astype(dtype)


def _geometric(_into: Any, key: Any, p: Any, shape: tuple, dtype: Any) -> Any:
    return jax.random.geometric(key, p, shape).astype(dtype)


def _randint(_into: Any, key: Any, lo: Any, hi: Any, shape: tuple, dtype: Any) -> Any:
    return jax.random.randint(key, shape, lo, hi, jnp.int32).astype(dtype)


def _bernoulli_of(key: Any, probs: Any) -> Any:
    # torch's bernoulli has a zero gradient with respect to the probabilities.
    p = jax.lax.stop_gradient(probs)
    return jax.random.bernoulli(key, p).astype(probs.dtype)


def _check_bernoulli(host: np.ndarray) -> None:
    # NaN fails both comparisons, as in torch.
    if host.size and not ((host >= 0) & (host <= 1)).all():
        raise RuntimeError(
            "Expected p_in >= 0 && p_in <= 1 to be true, but got false. (bernoulli's "
            f"probabilities lie in [{host.min()}, {host.max()}]; they must be in [0, 1])"
        )


def _check_probabilities(host: np.ndarray) -> None:
    if not np.all(np.isfinite(host)) or np.any(host < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")


def _lowest_probability(p: Any) -> Any:
    """What :func:`_check_probabilities` needs of a pending ``p``: its lowest entry, -1 for a
    non-finite one."""
    return jnp.min(jnp.where(jnp.isfinite(p), p, -1), initial=0)


def _multinomial(key: Any, probs: Any, n: int, replacement: bool) -> Any:
    logits = jnp.log(jax.lax.stop_gradient(probs).astype(jnp.float32))  # 0 -> -inf: never drawn
    if replacement:
        lead = probs.shape[:-1]
        out = jax.random.categorical(key, logits, axis=-1, shape=(n, *lead))
        return jnp.moveaxis(out, 0, -1).astype(jnp.int32)
    # Without replacement: the n largest of logits + Gumbel noise (the Gumbel-top-k trick).
    noisy = logits + jax.random.gumbel(key, probs.shape, jnp.float32)
    return jax.lax.top_k(noisy, n)[1].astype(jnp.int32)


def _fill_diagonal(x: Any, value: Any, wrap: bool) -> Any:
    # numpy's fill_diagonal: every (ncols + 1)-th element of the flat array (for N-D tensors
    # with equal sizes, every (1 + n + n**2 + ...)-th); wrapping past the first square only
    # if ``wrap``.
    if x.ndim == 2:
        step = x.shape[1] + 1
        end = x.size if wrap else min(x.shape) * x.shape[1]
    else:
        step = sum(x.shape[0] ** k for k in range(x.ndim))
        end = x.size
    pos = np.arange(0, end, step)
    return x.reshape(-1).at[pos].set(jnp.asarray(value, x.dtype)).reshape(x.shape)


def _copy_into(dst: Any, src: Any) -> Any:
    # ``dst`` is an input so that the overwritten value's history gets a zero gradient (torch
    # gives it zeros, not None).
    try:
        np.broadcast_shapes(jnp.shape(src), dst.shape)
    except ValueError:
        raise RuntimeError(
            f"copy_: the source's shape {list(jnp.shape(src))} doesn't broadcast to the "
            f"destination's {list(dst.shape)}"
        ) from None
    return jnp.broadcast_to(cast(jnp.asarray(src), dst.dtype), dst.shape)


def _key(generator: Any) -> Any:
    from spx import random as spx_random

    return spx_random.key_for(generator)


def _key_on(t: Any, generator: Any) -> Any:
    """The next key, on ``t``'s device (a draw runs where its key and ``t`` are)."""
    return moved_to(_key(generator), current_device(t))


def _draw_args(into: Any, generator: Any, *params: Any) -> tuple:
    """A random fill's inputs: the tensor it overwrites, the key (on its device), ``params``."""
    return (into, _key_on(into, generator), *params)


def _check_draw(ok: Callable[..., bool], message: str, *values: Any) -> None:
    """torch's RuntimeError for a distribution parameter out of its domain. Only Python
    numbers are checked: a tensor parameter's value is not read here (no synchronization)."""
    if all(isinstance(v, int | float) for v in values) and not ok(*values):
        raise RuntimeError(message)


class InplaceMethods:
    """In-place updates."""

    __slots__ = ()

    def _cast_for_inplace(self, dtype: Any) -> Any:
        src = np.dtype(self.dtype)
        dst = canonical(dtype)
        if category(dst) < category(src):  # torch's canCast: int32 into uint8 is fine
            raise RuntimeError(
                f"result type {src} can't be cast to the desired output type {dst}; write "
                f"into a tensor of a wider type, or cast explicitly: x.copy_(result.to({dst}))"
            )
        return apply(cast, (dst,), (self,))

    def copy_(self, src: Any, non_blocking: bool = False) -> Any:
        """Copy ``src`` (broadcast to ``self``'s shape, cast to its dtype) into ``self``."""
        # From another device as torch's cross-device copy: moved here first.
        return self._assign_op(_copy_into, (), (self, moved_to(src, current_device(self))))

    def fill_(self, value: Any) -> Any:
        check_scalar_fits(value, self.dtype)
        if getattr(value, "ndim", 0):
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with "
                f"{value.ndim} dimensions. (To write a tensor's values: x.copy_(value).)"
            )
        value = moved_to(value, current_device(self))
        return self._assign(apply(_full_like, (), (self, value)), same_everywhere=True)

    def zero_(self) -> Any:
        return self._assign(apply(_full_like, (), (self, 0)), same_everywhere=True)

    def fill_diagonal_(self, fill_value: Any, wrap: bool = False) -> Any:
        """Fill the main diagonal (of a matrix, or of an N-D tensor with equal sizes)."""
        shape = self._aval.shape
        if len(shape) < 2 or (len(shape) > 2 and len(set(shape)) != 1):
            raise RuntimeError(
                f"fill_diagonal_: dimensions must larger than 1 and all dimensions of input "
                f"must be of equal length (got {list(shape)})"
            )
        return self._assign_op(_fill_diagonal, (wrap,), (self, fill_value))

    def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator: Any = None) -> Any:
        _check_draw(
            lambda a, b: a <= b,
            f"uniform_ expects to return a [from, to) range, but found from={from_} > to={to}",
            from_,
            to,
        )
        static = (tuple(self.shape), np.dtype(self.dtype))
        return self._assign_op(_uniform, static, _draw_args(self, generator, from_, to))

    def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator: Any = None) -> Any:
        _check_draw(lambda s: s >= 0, f"normal expects std >= 0.0, but found std {std}", std)
        static = (tuple(self.shape), np.dtype(self.dtype))
        return self._assign_op(_normal, static, _draw_args(self, generator, mean, std))

    def bernoulli_(self, p: Any = 0.5, *, generator: Any = None) -> Any:
        _check_draw(
            lambda q: 0 <= q <= 1, f"bernoulli_ expects p to be in [0, 1], but got p={p}", p
        )
        static = (tuple(self.shape), np.dtype(self.dtype))
        return self._assign_op(_bernoulli, static, _draw_args(self, generator, p))

    def exponential_(self, lambd: float = 1.0, *, generator: Any = None) -> Any:
        _check_draw(
            lambda v: v > 0, f"exponential_ expects lambda > 0.0, but found lambda={lambd}", lambd
        )
        static = (tuple(self.shape), np.dtype(self.dtype))
        return self._assign_op(_exponential, static, _draw_args(self, generator, lambd))

    def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator: Any = None) -> Any:
        _check_draw(lambda v: v > 0, f"cauchy_ expects sigma > 0.0, but found sigma={sigma}", sigma)
        static = (tuple(self.shape), np.dtype(self.dtype))
        return self._assign_op(_cauchy, static, _draw_args(self, generator, median, sigma))

    def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator: Any = None) -> Any:
        """Samples whose logarithm is normal with ``mean`` and ``std``."""
        _check_draw(lambda v: v > 0, f"log_normal_ expects std > 0.0, but found std={std}", std)
        static = (tuple(self.shape), np.dtype(self.dtype))
        return self._assign_op(_log_normal, static, _draw_args(self, generator, mean, std))

    def geometric_(self, p: float, *, generator: Any = None) -> Any:
        """Number of Bernoulli(``p``) trials up to the first success (1, 2, ...)."""
        _check_draw(lambda q: 0 < q < 1, f"geometric_ expects p to be in (0, 1), but got p={p}", p)
        static = (tuple(self.shape), np.dtype(self.dtype))
        return self._assign_op(_geometric, static, _draw_args(self, generator, p))

    def random_(
        self, from_: int | None = None, to: int | None = None, *, generator: Any = None
    ) -> Any:
        if to is None:  # random_() draws from [0, 2**24]; random_(to) from [0, to)
            from_, to = 0, 2**24 if from_ is None else from_
        _check_draw(
            lambda a, b: a < b,
            f"random_ expects 'from' to be less than 'to', but got from={from_} >= to={to}",
            from_,
            to,
        )
        static = (tuple(self.shape), np.dtype(self.dtype))
        return self._assign_op(_randint, static, _draw_args(self, generator, from_, to))

    # -- random draws (not in place) ----------------------------------------------------------
    def bernoulli(self, p: Any = None, *, generator: Any = None) -> Any:
        """0/1 draws with probability ``self`` (or ``p``), in ``self``'s dtype."""
        if p is not None:
            static = (tuple(self.shape), np.dtype(self.dtype))
            return apply(_bernoulli_p, static, (_key_on(self, generator), p))
        checks.when_known(self, _check_bernoulli, reduce=checks.value_range)
        return apply(_bernoulli_of, (), (_key_on(self, generator), self))

    def multinomial(
        self, num_samples: int, replacement: bool = False, *, generator: Any = None
    ) -> Any:
        """Draw ``num_samples`` category indices per row, with probabilities proportional to
        the (non-negative) weights in ``self`` (1-D or 2-D); mirrors ``torch.multinomial``.

        Without replacement each category is drawn at most once (zero-weight categories come
        last). Weights are checked for negative/NaN values only when already computed.
        """
        shape = self._aval.shape
        if len(shape) not in (1, 2):
            raise RuntimeError(f"prob_dist must be 1 or 2 dim (got {len(shape)}-D)")
        if not jnp.issubdtype(self.dtype, jnp.floating):
            raise RuntimeError(
                f"multinomial only supports floating-point dtypes for input, got: {self.dtype}"
            )
        n = int(num_samples)
        if n <= 0:
            raise RuntimeError(f"cannot sample n_sample <= 0 samples (got {n})")
        if not replacement and n > shape[-1]:
            raise RuntimeError(
                f"cannot sample n_sample > prob_dist.size(-1) samples without replacement "
                f"({n} > {shape[-1]}); pass replacement=True"
            )
        checks.when_known(self, _check_probabilities, reduce=_lowest_probability)
        return apply(_multinomial, (n, bool(replacement)), (_key_on(self, generator), self))

    # Arithmetic operators in place: ``x += y`` is ``x.add_(y)`` in torch.
    def __iadd__(self, other: Any) -> Any:
        return self.add_(other)

    def __isub__(self, other: Any) -> Any:
        return self.sub_(other)

    def __imul__(self, other: Any) -> Any:
        return self.mul_(other)

    def __itruediv__(self, other: Any) -> Any:
        return self.div_(other)

    def __ifloordiv__(self, other: Any) -> Any:
        return self.floor_divide_(other)

    def __imod__(self, other: Any) -> Any:
        return self.remainder_(other)

    def __ipow__(self, other: Any) -> Any:
        return self.pow_(other)

    def __iand__(self, other: Any) -> Any:
        return self.bitwise_and_(other)

    def __ior__(self, other: Any) -> Any:
        return self.bitwise_or_(other)

    def __ixor__(self, other: Any) -> Any:
        return self.bitwise_xor_(other)

    def __ilshift__(self, other: Any) -> Any:
        return self.bitwise_left_shift_(other)

    def __irshift__(self, other: Any) -> Any:
        return self.bitwise_right_shift_(other)


_FROM_OUT_OF_PLACE = (
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide",
    "remainder", "fmod", "pow", "float_power", "atan2", "arctan2", "hypot", "copysign",
    "lerp", "addcmul", "addcdiv", "addmm", "baddbmm", "clamp", "clip",
    "clamp_min", "clamp_max", "masked_fill", "nan_to_num", "logit", "abs", "absolute", "neg",
    "negative", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "sqrt", "rsqrt", "sin",
    "cos", "tan", "asin", "arcsin", "acos", "arccos", "atan", "arctan", "sinh", "cosh", "tanh",
    "asinh", "acosh", "atanh", "sigmoid", "relu", "floor", "ceil", "round", "trunc", "fix",
    "frac", "sign", "sgn", "reciprocal", "square", "erf", "erfc", "erfinv", "lgamma", "digamma",
    "deg2rad", "rad2deg", "logical_not", "logical_and", "logical_or", "logical_xor",
    "bitwise_not", "bitwise_and", "bitwise_or", "bitwise_xor", "eq", "ne", "lt", "le", "gt",
    "ge", "xlogy", "scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy",
    "index_reduce",
    "index_fill", "cumsum", "cumprod", "sinc", "i0", "arccosh", "arcsinh", "arctanh", "less",
    "less_equal", "greater", "greater_equal", "not_equal", "bitwise_left_shift",
    "bitwise_right_shift", "heaviside", "gcd", "lcm", "ldexp", "square", "igamma", "igammac",
    "nextafter", "polygamma", "mvlgamma", "addmv", "addr", "addbmm", "renorm",
)  # fmt: skip


def _inplace_method(name: str) -> Any:
    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        self._check_inplace()
        return self._assign(getattr(self, name)(*args, **kwargs))

    method.__name__ = name + "_"
    method.__doc__ = f"In-place ``{name}`` (mirrors ``torch.Tensor.{name}_``); returns self."
    return method


for _name in _FROM_OUT_OF_PLACE:
    setattr(InplaceMethods, _name + "_", _inplace_method(_name))
