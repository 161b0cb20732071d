"""``spx.cuda.amp``: torch's older CUDA mixed precision names (``torch.cuda.amp``).

``autocast(...)`` is ``spx.autocast("cuda", ...)`` and ``GradScaler(...)`` is
``spx.amp.GradScaler("cuda", ...)``, as in torch (which deprecates them in favour of those).
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from spx.amp import GradScaler as _GradScaler
from spx.amp import autocast as _autocast

__all__ = ["GradScaler", "autocast"]


def autocast(enabled: bool = True, dtype: Any = jnp.float16, cache_enabled: bool = True) -> Any:
    """``spx.autocast("cuda", dtype, enabled, cache_enabled)``."""
    return _autocast("cuda", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)


def GradScaler(
    init_scale: float = 2.0**16,
    growth_factor: float = 2.0,
    backoff_factor: float = 0.5,
    growth_interval: int = 2000,
    enabled: bool = True,
) -> _GradScaler:
    """``spx.amp.GradScaler("cuda", ...)``."""
    return _GradScaler("cuda", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
