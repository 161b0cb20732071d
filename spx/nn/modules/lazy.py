"""What a lazy module becomes once its parameters exist (torch's ``LazyModuleMixin.cls_to_become``).

torch turns a materialized ``LazyLinear`` into a plain ``Linear`` (``LazyConv2d`` into ``Conv2d``,
``LazyBatchNorm1d`` into ``BatchNorm1d``, ...): its class changes, so ``type(m) == nn.Linear``
holds after the first forward. Init functions written the d2l way (``if type(m) == nn.Linear:
nn.init.xavier_uniform_(m.weight)``) rely on it; left a ``LazyLinear``, such a layer would keep
its default init without a word.

Example:
    >>> import spx
    >>> from spx import nn
    >>> layer = nn.LazyLinear(3)
    >>> _ = layer(spx.ones(2, 5))
    >>> type(layer) is nn.Linear
    True
"""

from __future__ import annotations

from typing import Any


def become_materialized(module: Any) -> None:
    """Give a just-materialized lazy ``module`` its class's ``cls_to_become`` (if it has one)."""
    cls = getattr(type(module), "cls_to_become", None)
    if cls is not None:
        module.__class__ = cls
