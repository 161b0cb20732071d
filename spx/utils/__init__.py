"""``spx.utils``: torch's ``torch.utils`` import paths, so ``from torch.utils.data import ...``
ports by renaming ``torch`` to ``spx``.

* :mod:`spx.utils.checkpoint` — activation checkpointing (``checkpoint``,
  ``checkpoint_sequential``).
* :mod:`spx.utils.data` — the data pipeline (:mod:`spx.data` under torch's module names).
* :mod:`spx.utils.hooks` — ``RemovableHandle``, what registering a hook returns.
"""

from spx.utils import checkpoint as checkpoint
from spx.utils import data as data
from spx.utils import hooks as hooks
