"""``spx.distributed.elastic``: the machinery behind ``spx-run`` (torchelastic's counterpart).

- :mod:`.config`: the launch configuration and its checks; :mod:`.devices`: workers per node and
  their GPUs, found without starting JAX;
- :mod:`.worker_env`: ranks, the torchrun environment and the worker command;
- :mod:`.agent`: start, monitor, restart, stop workers; :mod:`.rendezvous` and :mod:`.store`:
  how the agents of a multi-node job agree;
- :mod:`.multiprocessing`: worker processes, logs (``--tee``/``--redirects``), error files and
  ``@record`` (``spx.distributed.elastic.multiprocessing.errors``);
- :mod:`.threads` and :mod:`.thread_overlay`: ``spx-run --threads``;
- :mod:`.autorecord`: the exception hook ``import spx`` installs in workers.

Importing this package loads only the standard library: ``spx-run`` never starts JAX itself.
"""

from spx.distributed.elastic.multiprocessing.errors import ChildFailedError as ChildFailedError
from spx.distributed.elastic.multiprocessing.errors import ProcessFailure as ProcessFailure
from spx.distributed.elastic.multiprocessing.errors import record as record
