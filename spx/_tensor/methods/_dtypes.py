"""torch dtypes as the dtypes spx computes in.

Without ``jax_enable_x64`` JAX computes 64-bit types in 32 bits (and warns each time it is
asked for one). torch code names ``torch.long``/``torch.float64`` everywhere
(``torch.zeros(n, dtype=torch.long)``), so spx maps them to what JAX will compute —
``int64 -> int32``, ``float64 -> float32`` — up front, silently, as ``Tensor.long()`` does.
With x64 on, dtypes are kept.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np


def canonical(dtype: Any) -> np.dtype:
    """``dtype`` as spx will hold it (64-bit types narrowed unless x64 is on)."""
    return np.dtype(jax.dtypes.canonicalize_dtype(np.dtype(dtype)))
