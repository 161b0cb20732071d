"""torch's top-level functions returning Tensors, re-exported by ``spx`` (``spx.cat``, ...).

One module per kind; each lists its public names in ``__all__``.
"""

from spx.ops import creation as creation
from spx.ops.creation import *  # noqa: F403

__all__ = [*creation.__all__]
