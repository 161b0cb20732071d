"""Worker processes of one node, as ``torch.distributed.elastic.multiprocessing``.

Start/stop in :mod:`.processes`, logs in :mod:`.logs` and :mod:`.tail_log`, error files and
``@record`` in :mod:`.errors`.
"""

from spx.distributed.elastic.multiprocessing.logs import LogsSpecs as LogsSpecs
from spx.distributed.elastic.multiprocessing.logs import Std as Std
