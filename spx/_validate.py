"""One validator for the integer and real arguments of every spx entry point.

Sizes, counts, dims and indices (``nn.Linear(in_features, ...)``, ``DataLoader(num_workers=)``,
``manual_seed(seed)``) and real settings (a dropout ``p``, a loss's ``beta``) are checked here,
once, the way torch accepts them: any integer that Python can use as an index (``int``,
``numpy.int64``, a 0-d integer array — everything with ``__index__``) but not ``bool``; any real
number (``float``, ``int``, ``numpy.float32``) but not ``bool`` or ``complex``. Values come back
as plain Python ``int``/``float``, so they hash and compare as static structure should.

Every error names the caller, the argument, the value and what was expected: a ``TypeError``
for the wrong kind of value, a ``ValueError`` for one out of range.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np


def _range_text(noun: str, minimum: float | None, maximum: float | None) -> str:
    """``a positive int``, ``a non-negative number``, ``an int in [0, 7]``, ``a number >= 2``."""
    article = "an" if noun == "int" else "a"
    if minimum is not None and maximum is not None:
        return f"{article} {noun} in [{minimum}, {maximum}]"
    if minimum == 1 and noun == "int":
        return "a positive int"
    if minimum == 0:
        return f"a non-negative {noun}"
    if minimum is not None:
        return f"{article} {noun} >= {minimum}"
    return f"{article} {noun} <= {maximum}"


def _is_real(value: Any) -> bool:
    if isinstance(value, int | float | np.integer | np.floating):
        return True
    # 0-d numpy or jax arrays of a real dtype.
    dtype, ndim = getattr(value, "dtype", None), getattr(value, "ndim", None)
    if dtype is None or ndim != 0:
        return False
    try:
        kind = np.dtype(dtype).kind
    except TypeError:
        return False
    return kind in "iuf" or str(dtype) == "bfloat16"


def _suffix(hint: str) -> str:
    return f"; {hint}" if hint else ""


def as_int(
    value: Any,
    name: str,
    where: str,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    hint: str = "",
    wrong_type: type[Exception] = TypeError,
) -> int:
    """``value`` as a Python ``int``, checked against ``[minimum, maximum]``.

    Args:
        value: the argument (``int``, a numpy integer, or anything with ``__index__``).
        name: the argument's name, for the message.
        where: who takes it (``"Linear"``, ``"DataLoader"``), for the message.
        minimum: smallest allowed value, if any.
        maximum: largest allowed value, if any.
        hint: a fix appended to the message.
        wrong_type: the exception for a value that is not an integer at all. ``TypeError`` by
            default; ``ValueError`` where torch raises that (``BatchSampler(batch_size=2.5)``).

    Returns:
        The value as a plain ``int``.

    Raises:
        TypeError: a bool, a float, a string, ... (named); see ``wrong_type``.
        ValueError: out of range (named, with the range).

    Example:
        >>> import numpy as np
        >>> as_int(np.int64(3), "in_features", "Linear", minimum=0)
        3
    """
    if isinstance(value, bool | np.bool_):
        raise wrong_type(f"{where}: {name} must be an int, got the bool {value!r}{_suffix(hint)}")
    try:
        number = operator.index(value)
    except TypeError:
        raise wrong_type(
            f"{where}: {name} must be an int, got {type(value).__name__} {value!r:.60}"
            f"{_suffix(hint)}"
        ) from None
    if (minimum is not None and number < minimum) or (maximum is not None and number > maximum):
        raise ValueError(
            f"{where}: {name} must be {_range_text('int', minimum, maximum)}, got {number}"
            f"{_suffix(hint)}"
        )
    return number


def as_optional_int(value: Any, name: str, where: str, **limits: Any) -> int | None:
    """:func:`as_int`, or ``None`` passed through.

    Example:
        >>> as_optional_int(None, "dim", "Softmax") is None
        True
    """
    return None if value is None else as_int(value, name, where, **limits)


def as_float(
    value: Any,
    name: str,
    where: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    hint: str = "",
) -> float:
    """``value`` as a Python ``float`` (any real number but bool), checked against a range.

    Args:
        value: the argument (``float``, ``int``, a numpy real scalar, a 0-d real array).
        name: the argument's name, for the message.
        where: who takes it, for the message.
        minimum: smallest allowed value, if any (inclusive).
        maximum: largest allowed value, if any (inclusive).
        hint: a fix appended to the message.

    Returns:
        The value as a plain ``float``.

    Raises:
        TypeError: not a real number (named).
        ValueError: NaN or out of range (named, with the range).

    Example:
        >>> import numpy as np
        >>> as_float(np.float32(0.5), "p", "Dropout", minimum=0, maximum=1)
        0.5
    """
    if isinstance(value, bool | np.bool_):
        raise TypeError(f"{where}: {name} must be a number, got the bool {value!r}{_suffix(hint)}")
    if not _is_real(value):
        raise TypeError(
            f"{where}: {name} must be a real number, got {type(value).__name__} {value!r:.60}"
            f"{_suffix(hint)}"
        )
    number = float(value)
    out_of_range = (minimum is not None and number < minimum) or (
        maximum is not None and number > maximum
    )
    if math.isnan(number) or out_of_range:
        limits = (
            _range_text("number", minimum, maximum)
            if (minimum, maximum) != (None, None)
            else "a number"
        )
        raise ValueError(f"{where}: {name} must be {limits}, got {number}{_suffix(hint)}")
    return number


def as_int_tuple(
    value: Any,
    n: int,
    name: str,
    where: str,
    *,
    minimum: int | None = None,
    hint: str = "",
) -> tuple[int, ...]:
    """An int (repeated ``n`` times) or a sequence of ``n`` ints, as a tuple of Python ints.

    torch's ``_single``/``_pair``/``_triple``: a one-element sequence is repeated too.

    Raises:
        TypeError: not an int or a sequence of ints (named).
        ValueError: a sequence of the wrong length, or an entry out of range.

    Example:
        >>> as_int_tuple(3, 2, "kernel_size", "Conv2d", minimum=1)
        (3, 3)
    """
    if isinstance(value, Sequence) and not isinstance(value, str):
        items = tuple(value)
        if len(items) == 1:
            items = items * n
        if len(items) != n:
            raise ValueError(
                f"{where}: {name} must be an int or a sequence of {n} ints, got {value!r}"
                f"{_suffix(hint)}"
            )
        return tuple(
            as_int(v, f"{name}[{i}]", where, minimum=minimum, hint=hint)
            for i, v in enumerate(items)
        )
    try:
        single = as_int(value, name, where, minimum=minimum, hint=hint)
    except TypeError:
        raise TypeError(
            f"{where}: {name} must be an int or a sequence of {n} ints, got "
            f"{type(value).__name__} {value!r:.60}{_suffix(hint)}"
        ) from None
    return (single,) * n


def is_int(value: Any) -> bool:
    """Whether :func:`as_int` would accept ``value``'s kind (range aside).

    Example:
        >>> is_int(3), is_int(True), is_int(3.0)
        (True, False, False)
    """
    if isinstance(value, bool | np.bool_):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True
