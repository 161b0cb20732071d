"""``spx.utils``: torch's ``torch.utils`` import paths, so ``from torch.utils.data import ...``
ports by renaming ``torch`` to ``spx``.

* :mod:`spx.utils.data` — the data pipeline (:mod:`spx.data` under torch's module names).
"""

from spx.utils import data as data
