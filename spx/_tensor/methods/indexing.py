"""Indexing of :class:`spx.Tensor`: ``x[...]``, ``x[...] = v``, gather/scatter and friends.

``x[i]``, ``x[a:b]``, ``x[None]``, ``x[..., 0]`` are views (writes through them reach ``x``).
Integer indices and slice starts are program inputs, not part of the compiled program's key,
so ``X[i : i + batch]`` in a loop compiles once. Integer tensors/lists index as in numpy (a
copy, torch's "advanced indexing"); a boolean mask is turned into positions first, which needs
its value (a synchronization; inside a JAX transformation use ``masked_fill``/``spx.where``).
``x[mask] = scalar`` needs no synchronization.

Out-of-range integers raise IndexError as in torch. Index *tensors* (of ``x[...]``, gather,
scatter, index_select/add/copy/fill, take, put) are checked at once when their value is already
computed, and an index computed lazily in the same program once the program has computed it
(:mod:`spx._tensor.checks`: by the next read of a value on the host at the latest). Inside
``spx.compile`` an index is a tracer and is not checked (an out-of-range entry then reads NaN
for floats, as in JAX).
"""

from __future__ import annotations

import warnings
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from spx._tensor import _dims, checks
from spx._tensor.dispatch import apply
from spx._tensor.methods._dtypes import cast, check_same_dtype, check_scalar_fits


def _index(x: Any, *rest: Any) -> Any:
    """``x`` indexed by ``spec`` (last of ``rest``) with the dynamic parts in ``rest``.

    Integers select first (their dimension goes away before the rest is indexed), as torch
    does: ``x[1, :, idx]`` has ``idx``'s dimension last, where numpy would put it first.
    """
    spec = rest[-1]
    dyn = iter(rest[:-1])
    index: list[Any] = []
    axis = 0
    for e in spec:
        kind = e[0]
        if kind == "n":
            index.append(None)
            continue
        if kind == "i":
            x = lax.dynamic_index_in_dim(x, next(dyn), axis, keepdims=False)
            continue
        if kind == "I":  # a 0-d integer tensor: negative ones count from the end
            i = jnp.remainder(next(dyn), x.shape[axis])
            x = lax.dynamic_index_in_dim(x, i, axis, keepdims=False)
            continue
        if kind == "s":
            x = lax.dynamic_slice_in_dim(x, next(dyn), e[1], axis)
            index.append(slice(None))
        elif kind == "S":
            index.append(slice(e[1], e[2], e[3]))
        else:  # "a": an integer array
            index.append(next(dyn))
        axis += 1
    return x[tuple(index)] if index else x


def _setitem(x: Any, value: Any, *rest: Any) -> Any:
    """``x`` with the elements ``x[index]`` replaced by ``value`` (broadcast, cast)."""
    positions = jnp.arange(x.size, dtype=jnp.int32).reshape(x.shape)
    where = _index(positions, *rest)
    value = jnp.broadcast_to(cast(jnp.asarray(value), x.dtype), where.shape)
    return x.reshape(-1).at[where.reshape(-1)].set(value.reshape(-1)).reshape(x.shape)


def _additem(x: Any, value: Any, *rest: Any) -> Any:
    """``x`` with ``value`` added at ``x[index]`` (repeated positions accumulate)."""
    positions = jnp.arange(x.size, dtype=jnp.int32).reshape(x.shape)
    where = _index(positions, *rest)
    value = jnp.broadcast_to(cast(jnp.asarray(value), x.dtype), where.shape)
    return x.reshape(-1).at[where.reshape(-1)].add(value.reshape(-1)).reshape(x.shape)


def _masked_scatter(x: Any, mask: Any, source: Any) -> Any:
    """The i-th True position of ``mask`` (row-major) takes ``source.flatten()[i]``; ``x``
    and ``mask`` broadcast together, as torch's out-of-place masked_scatter does."""
    shape = jnp.broadcast_shapes(x.shape, mask.shape)
    x, mask = jnp.broadcast_to(x, shape), jnp.broadcast_to(mask, shape)
    if source.size == 0:  # nothing to take (a True position was refused by the size check)
        return x
    flat = mask.reshape(-1)
    take = jnp.clip(jnp.cumsum(flat) - 1, 0, max(source.size - 1, 0))
    picked = source.reshape(-1).astype(x.dtype)[take].reshape(x.shape)
    return jnp.where(mask, picked, x)


def _count_true(mask: Any) -> Any:
    return jnp.sum(mask, dtype=jnp.int32)


def _put(x: Any, index: Any, source: Any, accumulate: bool) -> Any:
    flat = x.reshape(-1)
    at = flat.at[index.reshape(-1)]
    src = source.reshape(-1).astype(x.dtype)
    return (at.add(src) if accumulate else at.set(src)).reshape(x.shape)


def _mask_fill(x: Any, mask: Any, value: Any) -> Any:
    mask = mask.reshape(mask.shape + (1,) * (x.ndim - mask.ndim))
    return jnp.where(mask, cast(jnp.asarray(value), x.dtype), x)


def _gather(x: Any, index: Any, axis: int) -> Any:
    _check_index("gather", x.shape, index, axis)
    # torch allows index smaller than x in the other dimensions: take the leading part.
    part = tuple(slice(None) if d == axis else slice(0, index.shape[d]) for d in range(x.ndim))
    return jnp.take_along_axis(x[part], index, axis=axis)


def _scatter_index(index: Any, axis: int) -> tuple:
    return tuple(
        index if d == axis else lax.broadcasted_iota(index.dtype, index.shape, d)
        for d in range(index.ndim)
    )


def _scatter(x: Any, index: Any, src: Any, axis: int, reduce: str | None) -> Any:
    _check_index("scatter", x.shape, index, axis, src)
    src = jnp.broadcast_to(jnp.asarray(src, x.dtype), index.shape) if jnp.ndim(src) == 0 else src
    src = src[tuple(slice(0, s) for s in index.shape)].astype(x.dtype)
    at = x.at[_scatter_index(index, axis)]
    if reduce is None:
        return at.set(src)
    if reduce in ("add", "sum"):
        return at.add(src)
    if reduce in ("multiply", "prod"):
        return at.multiply(src)
    if reduce == "amax":
        return at.max(src)
    if reduce == "amin":
        return at.min(src)
    raise RuntimeError(f"scatter: unknown reduce {reduce!r}")


def _scatter_mean(x: Any, index: Any, src: Any, axis: int, include_self: bool) -> Any:
    _check_index("scatter_reduce", x.shape, index, axis, src)
    idx = _scatter_index(index, axis)
    src = src[tuple(slice(0, s) for s in index.shape)].astype(x.dtype)
    base = x if include_self else jnp.zeros_like(x)
    total = base.at[idx].add(src)
    count = jnp.full(x.shape, 1 if include_self else 0, x.dtype).at[idx].add(1)
    out = total / jnp.maximum(count, 1)
    if not jnp.issubdtype(x.dtype, jnp.inexact):
        out = jnp.floor_divide(total, jnp.maximum(count, 1))
    return jnp.where(count > 0, out, x).astype(x.dtype)


def _scatter_reduce_excl(x: Any, index: Any, src: Any, axis: int, reduce: str) -> Any:
    _check_index("scatter_reduce", x.shape, index, axis, src)
    idx = _scatter_index(index, axis)
    src = src[tuple(slice(0, s) for s in index.shape)].astype(x.dtype)
    hit = jnp.zeros(x.shape, bool).at[idx].set(True)
    if reduce == "sum":
        out = jnp.zeros_like(x).at[idx].add(src)
    elif reduce == "prod":
        out = jnp.ones_like(x).at[idx].multiply(src)
    elif reduce == "amax":
        out = jnp.full_like(x, _lowest(x.dtype)).at[idx].max(src)
    else:
        out = jnp.full_like(x, _highest(x.dtype)).at[idx].min(src)
    return jnp.where(hit, out, x)


def _lowest(dtype: Any) -> Any:
    return -jnp.inf if jnp.issubdtype(dtype, jnp.inexact) else jnp.iinfo(dtype).min


def _highest(dtype: Any) -> Any:
    return jnp.inf if jnp.issubdtype(dtype, jnp.inexact) else jnp.iinfo(dtype).max


def _index_select(x: Any, index: Any, axis: int) -> Any:
    return jnp.take(x, index.reshape(-1), axis=axis)


def _index_update(x: Any, index: Any, src: Any, alpha: Any, axis: int, mode: str) -> Any:
    where = (slice(None),) * axis + (index.reshape(-1),)
    if mode == "add":
        return x.at[where].add((alpha * src).astype(x.dtype))
    if mode == "fill":
        return x.at[where].set(jnp.asarray(src, x.dtype))
    return x.at[where].set(src.astype(x.dtype))


def _take(x: Any, index: Any) -> Any:
    return jnp.take(x.reshape(-1), index)


def _take_along(x: Any, index: Any, axis: int | None) -> Any:
    if axis is None:
        return jnp.take(x.reshape(-1), index.reshape(-1))
    return jnp.take_along_axis(x, index, axis=axis)


def _check_index(what: str, x_shape: tuple, index: Any, d: int, src: Any = None) -> None:
    """torch's checks of a gather/scatter index (dtype, rank, sizes; not its values); called
    by the recorded functions, so it runs once per signature, while shapes are inferred."""
    dtype = getattr(index, "dtype", None)
    if dtype is None or not jnp.issubdtype(dtype, jnp.integer):
        raise RuntimeError(
            f"{what}(): Expected dtype int32/int64 for index, got {dtype}; cast it: index.long()"
        )
    i_shape = tuple(np.shape(index))
    if len(i_shape) != len(x_shape) and (i_shape or x_shape):
        raise RuntimeError(
            f"{what}(): Index tensor must have the same number of dimensions as input tensor "
            f"(index {list(i_shape)}, input {list(x_shape)})"
        )
    for k, (a, b) in enumerate(zip(i_shape, x_shape, strict=False)):
        if k != d and a > b:
            raise RuntimeError(
                f"{what}(): Size does not match at dimension {k} expected index {list(i_shape)} "
                f"to be no larger than self {list(x_shape)} apart from dimension {d}"
            )
    s_shape = tuple(np.shape(src)) if src is not None else ()
    if s_shape and any(a > b for a, b in zip(i_shape, s_shape, strict=False)):
        raise RuntimeError(
            f"{what}(): Expected index {list(i_shape)} to be no larger than src {list(s_shape)}"
        )


def _check_index_values(
    what: str,
    index: Any,
    size: int,
    dim: int,
    *,
    negative: bool = False,
    error: type[Exception] = RuntimeError,
    one_d: bool = False,
) -> None:
    """torch's error for index values outside ``[0, size)`` (``[-size, size)`` with
    ``negative``): at once when the index's value is known (a DataLoader batch,
    ``spx.tensor(...)``), else once it is computed (:mod:`spx._tensor.checks`; a traced index
    is not checked). ``one_d``: the indexed tensor is a vector (index_add raises torch's
    IndexError there, its RuntimeError otherwise)."""

    def check(host: np.ndarray) -> None:
        if not host.size or not np.issubdtype(host.dtype, np.integer):
            return
        low = -size if negative else 0
        bad = (host < low) | (host >= size)
        if not bad.any():
            return
        value = int(host[bad].reshape(-1)[0])
        if what in ("take", "put_"):
            raise IndexError(
                f"out of range: tried to access index {value} on a tensor of {size} elements."
            )
        if what == "index_select" or (what == "index_add" and one_d):
            # torch's 1-d kernels (index_add of a vector included) raise this IndexError.
            raise IndexError(
                f"index out of range in self: index {value} for dimension {dim} with size {size}"
            )
        prefix = f"{what}(): " if what == "index_copy_" else ""
        raise error(f"{prefix}index {value} is out of bounds for dimension {dim} with size {size}")

    checks.when_known(index, check)


def _check_vector_index(what: str, index: Any) -> None:
    """torch's error for an index_select/index_add/... index of more than one dimension."""
    ndim = np.ndim(index) if not hasattr(index, "_ref") else index.ndim
    if ndim <= 1:
        return
    fix = f"(got shape {list(np.shape(index))}); flatten it first: index.reshape(-1)"
    if what == "index_copy_":
        raise IndexError(f"index_copy_(): Index should have dimension 1 or 0 (got {ndim}) {fix}")
    if what == "index_fill_":
        raise RuntimeError(f"Index has to be a vector/scalar {fix}")
    raise IndexError(f"{what}(): Index is supposed to be a vector, but got dim: {ndim} {fix}")


def _check_bool_mask(what: str, mask: Any) -> None:
    dtype = getattr(mask, "dtype", None)
    if dtype is not None and dtype != jnp.bool_:
        raise RuntimeError(
            f"{what} only supports boolean masks, but got mask with dtype {dtype}; compare "
            "first, e.g. mask != 0"
        )


def _is_array_like(obj: Any) -> bool:
    return isinstance(obj, jax.Array | np.ndarray | list) or hasattr(obj, "_ref")


def _fills_by_mask(index: Any, value: Any) -> bool:
    """Whether torch writes ``x[index] = value`` as a masked fill, casting ``value``: one
    element, and the index's only tensor (or list) a bool mask (its
    ``canDispatchToMaskedFill``). Other writes by tensor indices need ``value``'s dtype."""
    if int(np.prod(np.shape(value))) != 1:
        return False
    # The index as torch reads it: a short list holding tensors or slices is a tuple, and a
    # 0-d integer tensor selects (it is not a tensor index).
    if type(index) is list and _sequence_as_tuple(index):
        index = tuple(index)
    parts = index if isinstance(index, tuple) else (index,)
    tensors = [p for p in map(_scalar_int_index, parts) if _is_array_like(p)]
    if len(tensors) != 1:
        return False
    mask = tensors[0]
    if isinstance(mask, list):
        return len(mask) > 0 and all(isinstance(v, bool | np.bool_) for v in mask)
    # A 0-d bool is not a mask in torch (it becomes a Long index): the dtypes must match.
    return np.dtype(mask.dtype) == np.bool_ and np.ndim(mask) > 0


def _mask_values(mask: Any) -> np.ndarray | None:
    """A boolean mask's values on the host (computed now if pending); None if traced."""
    value = mask._value() if hasattr(mask, "_ref") else mask
    return None if isinstance(value, jax.core.Tracer) else np.asarray(value)


def _bounds_check(n: int, axis: int) -> Any:
    """torch's IndexError for an integer index array with entries outside ``[-n, n)``."""

    def check(host: np.ndarray) -> None:
        if host.size and (host.max() >= n or host.min() < -n):
            bad = host.max() if host.max() >= n else host.min()
            raise IndexError(f"index {bad} is out of bounds for dimension {axis} with size {n}")

    return check


def _dtype_of(obj: Any) -> Any:
    if isinstance(obj, list):
        return np.asarray(obj).dtype
    return obj.dtype


_UINT8_INDEX = (
    "indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead."
)


def _uint8_as_mask(e: Any) -> Any:
    """A uint8 index is a mask, as torch still reads it (with its deprecation warning)."""
    if isinstance(e, list) or not _is_array_like(e) or np.dtype(e.dtype) != np.uint8:
        return e
    if not e.ndim:
        raise IndexError(
            "a 0-d uint8 index is a 0-d mask in torch, which spx does not support: index with "
            "an int (x[int(i)]) or, for the mask's meaning, x.unsqueeze(0) if i else x[:0]"
        )
    warnings.warn(_UINT8_INDEX, UserWarning, stacklevel=4)
    return e.bool() if hasattr(e, "_ref") else e.astype(bool)


class _IntTensor:
    """A 0-d integer tensor or array used as an index: torch selects with it as with an int."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _scalar_int_index(e: Any) -> Any:
    """A 0-d integer index as an int (numpy) or an :class:`_IntTensor` (a Tensor or a jax
    array), as torch indexes with it: a select, so ``x[i]`` is a view and ``x[i][1] = 7``
    writes into ``x`` (``for i in arange(3)``). The tensor's value is not read here: the
    program selects with it (also under ``spx.compile``, where it is traced)."""
    if isinstance(e, list) or not _is_array_like(e):
        return e
    ndim = e.ndim if hasattr(e, "_ref") else np.ndim(e)
    if ndim or not np.issubdtype(np.dtype(_dtype_of(e)), np.integer):
        return e
    return int(e) if isinstance(e, np.ndarray) else _IntTensor(e)


def _is_scalar_bool(e: Any) -> bool:
    if isinstance(e, bool | np.bool_):
        return True
    return _is_array_like(e) and np.ndim(e) == 0 and np.dtype(_dtype_of(e)) == np.bool_


def _check_scalar_bools(index: tuple) -> None:
    """A 0-d boolean index (``x[True]``) acts as ``None`` here; in torch it is an advanced
    index broadcast with the others, which ``None`` is not: refuse that mix."""
    bools = sum(_is_scalar_bool(e) for e in index)
    if not bools:
        return
    advanced = sum(
        isinstance(e, list) or (_is_array_like(e) and np.ndim(e) > 0)
        for e in index
        if not _is_scalar_bool(e)
    )
    if bools > 1 or advanced:
        raise IndexError(
            "a 0-d boolean index (x[True]) together with other tensor, list or boolean indices "
            "is not supported; apply it on its own first (y = x[True]; y[:, index])"
        )


_SEQUENCE_INDEX = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be "
    "changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be "
    "interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error "
    "or a different result"
)


def _sequence_as_tuple(index: list) -> bool:
    """torch's (and old numpy's) rule for a list index: short, holding a sequence, tensor,
    slice, ``None`` or ``...``, it is a tuple of indices (``x[[[0, 1], [2, 0]]]`` is
    ``x[[0, 1], [2, 0]]``); otherwise one index array."""
    if len(index) >= 32:
        return False
    for e in index:
        if type(e) is int:  # the common case, x[[0, 2, 5]]: checked first, cheaply
            continue
        if e is None or e is Ellipsis or hasattr(e, "_ref"):
            return True
        if isinstance(e, list | tuple | slice | np.ndarray | jax.Array):
            return True
    return False


def _parse(shape: tuple, index: Any) -> tuple[tuple, tuple]:
    """torch/numpy index -> ``(spec, dynamic values)``; checks ranges; expands ``...``."""
    if type(index) is list and _sequence_as_tuple(index):
        warnings.warn(_SEQUENCE_INDEX, UserWarning, stacklevel=4)
        index = tuple(index)
    if not isinstance(index, tuple):
        index = (index,)
    index = tuple([_scalar_int_index(_uint8_as_mask(e)) for e in index])
    consumed = 0
    for e in index:
        if e is None or e is Ellipsis or isinstance(e, bool):  # x[True] consumes nothing
            continue
        if _is_array_like(e) and np.dtype(_dtype_of(e)) == np.bool_:
            consumed += np.ndim(e) if not hasattr(e, "_ref") else e.ndim
        else:
            consumed += 1
    if consumed > len(shape):
        raise IndexError(f"too many indices for tensor of dimension {len(shape)} (got {consumed})")
    _check_scalar_bools(index)
    spec: list[tuple] = []
    dyn: list[Any] = []
    axis = 0
    expanded = False
    for e in index:
        if e is Ellipsis:
            # As torch: the first ``...`` stands for the unindexed dimensions, later ones for
            # none (numpy refuses a second ``...``).
            for _ in range(0 if expanded else len(shape) - consumed):
                spec.append(("S", None, None, None))
                axis += 1
            expanded = True
        elif e is None:
            spec.append(("n",))
        elif isinstance(e, slice):
            n = shape[axis]
            start, stop, step = e.start, e.stop, e.step
            step = 1 if step is None else int(step)
            if step <= 0:
                raise ValueError("step must be greater than zero")
            lo, hi, _ = slice(
                None if start is None else int(start), None if stop is None else int(stop), step
            ).indices(n)
            length = max(0, -(-(hi - lo) // step))
            if step == 1:
                spec.append(("s", length))
                dyn.append(lo if length else 0)
            else:
                spec.append(("S", lo, hi, step))
            axis += 1
        elif isinstance(e, _IntTensor):
            # Range-checked as torch does, once its value is known (not under a trace); the
            # program wraps a negative one.
            checks.when_known(e.value, _bounds_check(shape[axis], axis))
            spec.append(("I",))
            dyn.append(e.value)
            axis += 1
        elif isinstance(e, int | np.integer) and not isinstance(e, bool):
            n = shape[axis]
            i = int(e)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {axis} with size {n}")
            spec.append(("i",))
            dyn.append(i % n)
            axis += 1
        elif _is_array_like(e) or isinstance(e, bool):
            arr = e
            if isinstance(e, bool | list):
                arr = np.asarray(e)
            if np.dtype(_dtype_of(arr)) == np.bool_:
                host = _mask_values(arr)
                if host is None:
                    # The result's shape depends on the mask's values, which a trace does not
                    # have: JAX's own error (spx.compile names the user's line and the fix).
                    traced = arr._value() if hasattr(arr, "_ref") else arr
                    if isinstance(traced, jax.core.Tracer):
                        raise jax.errors.NonConcreteBooleanIndexError(traced)
                    raise IndexError(
                        "indexing with a boolean mask needs the mask's value, which is not "
                        "available inside a JAX transformation (its result's shape depends on "
                        "it). Use x.masked_fill(~mask, 0) or spx.where(mask, x, 0) instead."
                    )
                if host.ndim == 0:  # x[True]: a new dimension of 1, as None gives
                    if not host:
                        raise IndexError(
                            "x[False] (a 0-d False mask: a new dimension of size 0) is not "
                            "supported; write x[None][:0] for the same empty result"
                        )
                    spec.append(("n",))
                    continue
                for d in range(host.ndim):
                    if host.shape[d] != shape[axis + d]:
                        raise IndexError(
                            f"The shape of the mask {list(host.shape)} at index {d} does not "
                            f"match the shape of the indexed tensor {list(shape)} at index "
                            f"{axis + d}"
                        )
                for positions in np.nonzero(host):
                    spec.append(("a",))
                    dyn.append(positions.astype(np.int32))
                axis += host.ndim
                continue
            if not np.issubdtype(np.dtype(_dtype_of(arr)), np.integer):
                raise IndexError(
                    "tensors used as indices must be long, int, byte or bool tensors, got "
                    f"{_dtype_of(arr)}"
                )
            checks.when_known(arr, _bounds_check(shape[axis], axis))
            spec.append(("a",))
            dyn.append(np.asarray(arr) if isinstance(arr, list) else arr)
            axis += 1
        else:
            raise IndexError(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte "
                f"Variables are valid indices (got {type(e).__name__})"
            )
    return tuple(spec), tuple(dyn)


_PARSED: dict[tuple, tuple] = {}
_PLAIN = (int, type(None))


def _basic_key(index: Any) -> Any:
    """A hashable key for an index made of ints, slices of ints, None and ``...`` (whose
    parse depends only on the shape), or None for anything else (arrays, bools, tensors)."""
    kind = type(index)
    if kind is int:
        return index
    if kind is slice:
        index = (index,)
    elif kind is not tuple:
        return None
    key = []
    for e in index:
        kind = type(e)
        if kind is int or e is None or e is Ellipsis:
            key.append(e)
        elif kind is slice and _plain_slice(e):
            key.append(("slice", e.start, e.stop, e.step))
        else:
            return None
    return tuple(key)


def _plain_slice(e: slice) -> bool:
    return type(e.start) in _PLAIN and type(e.stop) in _PLAIN and type(e.step) in _PLAIN


def _parse_cached(shape: tuple, index: Any) -> tuple[tuple, tuple]:
    """``_parse`` remembered per shape for basic indices (``x[0]``, ``x[:, 1:3]``, ...)."""
    key = _basic_key(index)
    if key is None:
        return _parse(shape, index)
    full = (shape, key)
    found = _PARSED.get(full)
    if found is None:
        if len(_PARSED) > 4096:  # loops over many positions: keep the table small
            _PARSED.clear()
        found = _PARSED[full] = _parse(shape, index)
    return found


# torch's errors for a tensor source of another dtype: these writes do not cast it.
_INDEX_PUT_DTYPES = (
    "Index put requires the source and destination dtypes match, got {self} for the "
    "destination and {source} for the source."
)
_SCATTER_DTYPES = "scatter(): Expected self.dtype to be equal to src.dtype ({self}, {source})"


def _all_basic(spec: tuple) -> bool:
    return all(e[0] != "a" for e in spec)


class IndexingMethods:
    """``[]``, ``[] =``, gather/scatter, index_select/index_add/index_fill, masked_select."""

    __slots__ = ()

    def __getitem__(self, index: Any) -> Any:
        spec, dyn = _parse_cached(self._aval.shape, index)
        out = apply(_index, (spec,), (self, *dyn))
        if _all_basic(spec):
            return self._make_view(out, _index, (spec,), dyn)
        return out

    def __setitem__(self, index: Any, value: Any) -> None:
        check_scalar_fits(value, self._aval.dtype, half_types=False)
        view = self._view
        if view is not None and view.overlaps is not False:  # (known False: nothing to do)
            from spx._tensor.tensor import OVERLAPPING_WRITE, overlaps

            if overlaps(view):
                # An expanded view: torch writes the indexed part when it is itself one
                # element per base element (``e[0] = v`` of ``x.expand(4, 3)``), else refuses.
                part = self[index]
                pv = part._view
                if pv is None or pv.chain[: len(view.chain)] != view.chain or overlaps(pv):
                    raise RuntimeError(OVERLAPPING_WRITE)
                part[...] = value
                return
        shape = self._aval.shape
        if (
            (hasattr(index, "_ref") or isinstance(index, jax.Array | np.ndarray))
            and np.dtype(index.dtype) == np.bool_
            and np.ndim(value) == 0
        ):
            # x[mask] = scalar: a select, no need to know where the mask is True.
            self._assign_op(_mask_fill, (), (self, index, value))
            return
        spec, dyn = _parse_cached(shape, index)
        if not _all_basic(spec) and not _fills_by_mask(index, value):
            # torch's index_put; basic indexing casts as copy_ does, a mask fill as masked_fill
            check_same_dtype(self._aval.dtype, value, _INDEX_PUT_DTYPES)
        self._assign_op(_setitem, (spec,), (self, value, *dyn))

    def gather(self, dim: int, index: Any, *, sparse_grad: bool = False) -> Any:
        """``out[i][j] = self[index[i][j]][j]`` for ``dim=0`` (and so on; mirrors torch).

        Index values are checked as torch checks them (an out-of-range index raises): at once
        when they are computed, else once the program computing them has run; a traced index
        is not, and an out-of-range entry then reads NaN (floats) or a fill value.
        """
        d = _dims.dim(dim, self.ndim)
        _check_index_values("gather", index, self.shape[d], d)
        return apply(_gather, (d,), (self, index))

    def take_along_dim(self, indices: Any, dim: int | None = None) -> Any:
        d = None if dim is None else _dims.dim(dim, self.ndim)
        size = self.numel() if d is None else self.shape[d]
        _check_index_values("take_along_dim", indices, size, 0 if d is None else d)
        return apply(_take_along, (d,), (self, indices))

    def take(self, index: Any) -> Any:
        _check_index_values("take", index, self.numel(), 0, negative=True)
        return apply(_take, (), (self, index))

    def scatter(self, dim: int, index: Any, src: Any = None, *, value=None, reduce=None) -> Any:
        """Write ``src`` (or ``value``) into ``self`` at ``index`` along ``dim`` (a copy)."""
        if src is None:
            src = value
        if src is None:
            raise TypeError("scatter() needs src (a tensor) or value (a number)")
        check_scalar_fits(src, self.dtype)
        if reduce is not None and reduce not in ("add", "multiply"):
            raise RuntimeError(f"reduce argument must be either add or multiply, got {reduce!r}")
        d = _dims.dim(dim, self.ndim)
        check_same_dtype(self.dtype, src, _SCATTER_DTYPES)
        _check_index_values("scatter", index, self.shape[d], d)
        return apply(_scatter, (d, reduce), (self, index, src))

    def scatter_add(self, dim: int, index: Any, src: Any) -> Any:
        d = _dims.dim(dim, self.ndim)
        check_same_dtype(self.dtype, src, _SCATTER_DTYPES)
        _check_index_values("scatter_add", index, self.shape[d], d)
        return apply(_scatter, (d, "add"), (self, index, src))

    def scatter_reduce(
        self, dim: int, index: Any, src: Any, reduce: str, *, include_self: bool = True
    ) -> Any:
        d = _dims.dim(dim, self.ndim)
        if reduce not in ("sum", "prod", "mean", "amax", "amin"):
            raise RuntimeError(
                f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}"
            )
        check_same_dtype(self.dtype, src, _SCATTER_DTYPES)
        _check_index_values("scatter_reduce", index, self.shape[d], d)
        if reduce == "mean":
            return apply(_scatter_mean, (d, include_self), (self, index, src))
        if include_self:
            return apply(_scatter, (d, reduce), (self, index, src))
        return apply(_scatter_reduce_excl, (d, reduce), (self, index, src))

    def index_select(self, dim: int, index: Any) -> Any:
        d = _dims.dim(dim, self.ndim)
        _check_vector_index("index_select", index)
        _check_index_values("index_select", index, self.shape[d], d)
        return apply(_index_select, (d,), (self, index))

    def index_add(self, dim: int, index: Any, source: Any, *, alpha: Any = 1) -> Any:
        d = _dims.dim(dim, self.ndim)
        _check_vector_index("index_add_", index)
        check_same_dtype(
            self.dtype,
            source,
            "index_add_(): self ({self}) and source ({source}) must have the same scalar type",
        )
        _check_index_values("index_add", index, self.shape[d], d, one_d=self.ndim <= 1)
        return apply(_index_update, (d, "add"), (self, index, source, alpha))

    def index_reduce(
        self, dim: int, index: Any, source: Any, reduce: str, *, include_self: bool = True
    ) -> Any:
        """Combine the slices of ``source`` into ``self``'s slices ``index`` along ``dim`` with
        ``reduce`` ("prod", "mean", "amax" or "amin"; ``include_self=False`` leaves ``self``'s
        values out where an index lands), a copy (mirrors ``torch.Tensor.index_reduce``).

        Example:
            >>> import spx
            >>> x = spx.ones(3, 2)
            >>> s = spx.tensor([[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]])
            >>> x.index_reduce(0, spx.tensor([0, 0, 2]), s, "prod").tolist()
            [[8.0, 15.0], [1.0, 1.0], [6.0, 7.0]]
        """
        if reduce not in ("prod", "mean", "amax", "amin"):
            raise RuntimeError(
                "index_reduce(): Expected reduce to be one of prod, mean, amax or amin but got "
                f"{reduce}."
            )
        d = _dims.dim(dim, self.ndim)
        _check_vector_index("index_reduce_", index)
        check_same_dtype(
            self.dtype,
            source,
            "index_reduce_(): self ({self}) and source ({source}) must have the same scalar type",
        )
        src_shape = tuple(getattr(source, "shape", ()))
        n = int(np.prod(np.shape(index)))
        size = src_shape[d] if len(src_shape) > d else 1
        if n != size:
            raise RuntimeError(
                f"index_reduce_(): Number of indices ({n}) should be equal to source.size(dim): "
                f"({size}), for dim: {dim}"
            )
        rest = tuple(s for i, s in enumerate(self.shape) if i != d)
        if (
            len(src_shape) != self.ndim
            or tuple(s for i, s in enumerate(src_shape) if i != d) != rest
        ):
            raise RuntimeError(
                f"index_reduce_(): Source/destination tensor must have same slice shapes. "
                f"Destination slice shape: {rest} at dimension {d} and source slice shape: "
                f"{tuple(s for i, s in enumerate(src_shape) if i != d)} at dimension 0."
            )
        _check_index_values("index_reduce", index, self.shape[d], d, error=IndexError)
        along = [1] * self.ndim
        along[d] = -1
        idx = index.reshape(along).expand(*src_shape)
        return self.scatter_reduce(d, idx, source, reduce, include_self=include_self)

    def index_copy(self, dim: int, index: Any, source: Any) -> Any:
        d = _dims.dim(dim, self.ndim)
        _check_vector_index("index_copy_", index)
        check_same_dtype(
            self.dtype,
            source,
            "index_copy_(): self and source expected to have the same dtype, "
            "but got (self) {self} and (source) {source}",
        )
        _check_index_values("index_copy_", index, self.shape[d], d, error=IndexError)
        return apply(_index_update, (d, "copy"), (self, index, source, 1))

    def index_fill(self, dim: int, index: Any, value: Any) -> Any:
        check_scalar_fits(value, self.dtype)
        if getattr(value, "ndim", 0):
            raise RuntimeError(
                f"index_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value.ndim} dimension(s). (To write a tensor's values: index_copy_.)"
            )
        d = _dims.dim(dim, self.ndim)
        _check_vector_index("index_fill_", index)
        _check_index_values("index_fill", index, self.shape[d], d, negative=True, error=IndexError)
        return apply(_index_update, (d, "fill"), (self, index, value, 1))

    def index_put(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        """A copy with ``values`` at ``self[indices]`` (added there with ``accumulate``)."""
        return self.clone().index_put_(indices, values, accumulate)

    def index_put_(self, indices: Any, values: Any, accumulate: bool = False) -> Any:
        """``self[indices] = values`` (``+=``, repeated positions summed, with ``accumulate``)."""
        if not isinstance(indices, tuple | list):
            raise TypeError("index_put_(): indices must be a tuple of tensors, e.g. (rows, cols)")
        if accumulate or not _fills_by_mask(tuple(indices), values):
            check_same_dtype(self._aval.dtype, values, _INDEX_PUT_DTYPES)
        spec, dyn = _parse(self._aval.shape, tuple(indices))
        fn = _additem if accumulate else _setitem
        return self._assign_op(fn, (spec,), (self, values, *dyn))

    def masked_scatter(self, mask: Any, source: Any) -> Any:
        """A copy where the True positions of ``mask`` take ``source``'s elements in order.

        A ``source`` with fewer elements than ``mask`` has True positions raises torch's error
        (at once when the mask's values are known, else once they are computed).
        """
        _check_bool_mask("masked_scatter_", mask)
        check_same_dtype(
            self.dtype,
            source,
            "masked_scatter: expected self and source to have same dtypes but "
            "got {self} and {source}",
        )
        shape = tuple(np.shape(mask))
        mask_size = int(np.prod(shape))
        if mask_size:
            # Broadcasting repeats each mask element the same number of times.
            repeat = int(np.prod(jnp.broadcast_shapes(tuple(self.shape), shape))) // mask_size
            have = int(np.prod(np.shape(source)))

            def check(count: np.ndarray) -> None:
                if int(np.sum(count)) * repeat > have:
                    raise RuntimeError("Number of elements of source < number of ones in mask")

            checks.when_known(mask, check, reduce=_count_true)
        return apply(_masked_scatter, (), (self, mask, source))

    def masked_scatter_(self, mask: Any, source: Any) -> Any:
        return self._assign(self.masked_scatter(mask, source))

    def put(self, index: Any, source: Any, accumulate: bool = False) -> Any:
        """A copy with ``source`` written at the flat positions ``index``."""
        check_same_dtype(
            self.dtype,
            source,
            "put_(): self and source expected to have the same dtype, but got "
            "self.dtype = {self} and source.dtype = {source}",
        )
        _check_index_values("put_", index, self.numel(), 0, negative=True)
        return apply(_put, (bool(accumulate),), (self, index, source))

    def put_(self, index: Any, source: Any, accumulate: bool = False) -> Any:
        return self._assign(self.put(index, source, accumulate))

    def masked_select(self, mask: Any) -> Any:
        """The elements where ``mask`` (broadcast to ``self``) is True, as a 1-D tensor."""
        if getattr(mask, "dtype", None) is not None and np.dtype(mask.dtype) != np.bool_:
            # An integer mask would otherwise index positions (x[mask]): a wrong result.
            raise RuntimeError(
                f"masked_select: expected BoolTensor for mask, got dtype {mask.dtype}; compare "
                "first, e.g. x.masked_select(mask != 0)"
            )
        shape = jnp.broadcast_shapes(tuple(self.shape), tuple(np.shape(mask)))
        full = self.expand(*shape) if tuple(self.shape) != shape else self
        m = mask if tuple(np.shape(mask)) == shape else _broadcast_mask(mask, shape)
        return full[m]

    def nonzero(self, *, as_tuple: bool = False) -> Any:
        """Indices of the non-zero elements: ``(n, ndim)``, or one 1-D tensor per dimension."""
        from spx._tensor.tensor import Tensor

        host = np.asarray(self._value_for_host("nonzero"))
        found = np.nonzero(host)
        if as_tuple:
            return tuple(Tensor._of(jnp.asarray(f.astype(np.int32))) for f in found)
        return Tensor._of(jnp.asarray(np.stack(found, axis=-1).astype(np.int32)))

    def argwhere(self) -> Any:
        return self.nonzero()


def _broadcast_mask(mask: Any, shape: tuple) -> Any:
    from spx._tensor.tensor import Tensor

    if hasattr(mask, "_ref"):
        return mask.expand(*shape)
    return Tensor._of(jnp.broadcast_to(jnp.asarray(mask), shape))
