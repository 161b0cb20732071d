"""torch's top-level constants: ``spx.pi``, ``spx.e``, ``spx.inf``, ``spx.nan``, ``spx.newaxis``
and the memory formats (``spx.channels_last``, ...).

A memory format is a layout hint in torch (NCHW vs NHWC strides); it never changes a value.
XLA picks its own layouts, so spx accepts the formats wherever torch takes ``memory_format=``
(``x.contiguous(memory_format=spx.channels_last)``, ``model.to(memory_format=...)``) and they
change nothing.

Example:
    >>> import spx
    >>> spx.pi, spx.inf, spx.channels_last
    (3.141592653589793, inf, spx.channels_last)
"""

from __future__ import annotations

import math

__all__ = [
    "channels_last", "channels_last_3d", "check_memory_format", "contiguous_format", "e", "inf",
    "memory_format", "nan", "newaxis", "pi", "preserve_format",
]  # fmt: skip

pi = math.pi
e = math.e
inf = math.inf
nan = math.nan
newaxis = None


class memory_format:  # torch's class name
    """torch's ``memory_format`` values (layout hints; see the module docstring)."""

    __slots__ = ("_name",)

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"spx.{self._name}"

    def __reduce__(self) -> str:
        return self._name  # pickles as the module-level singleton


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


def check_memory_format(value: object, where: str) -> None:
    """torch's error for a ``memory_format=`` that is not a memory format (None is fine).

    Example:
        >>> check_memory_format(channels_last, "to()")
    """
    if value is not None and not isinstance(value, memory_format):
        raise TypeError(
            f"{where}: memory_format must be a memory format such as spx.channels_last, got "
            f"{value!r}"
        )
