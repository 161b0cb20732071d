"""One rank per process: ``spx.distributed`` on JAX's multi-controller runtime.

``init_process_group()`` under ``spx-run``/``torchrun`` (``WORLD_SIZE`` > 1 in the
environment, outside ``spx.distributed.spawn``) starts this backend. The layers, bottom up:

- ``kvstore``        the job's key-value store (JAX's coordination service), wrapped in one place;
- ``runtime``        ``jax.distributed.initialize`` from torchrun's environment, addresses, devices;
- ``compile_cache``  a persistent compilation cache for every rank, not just process 0;
- ``lifecycle``      abort on failure, the watchdog that stops blocked ranks, the exit handshake;
- ``mesh``           collectives as cached compiled programs over the group's devices;
- ``p2p``            send/recv and pipeline transfers with ``jax.experimental.transfer``;
- ``backend``        ``ProcessBackend``, the process-group backend built from the above.
"""

from spx.distributed.multiprocess.backend import ProcessBackend as ProcessBackend
from spx.distributed.multiprocess.backend import create_world_backend as create_world_backend
