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

Environment (besides torchrun's RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT):

- ``SPX_LOCAL_ADDR``: the address this rank's sockets bind to (default: loopback when the master
  is on loopback, else this host's address on the route to the master);
- ``SPX_COMPILATION_CACHE=0`` / ``SPX_COMPILATION_CACHE_DIR``: the per-rank compilation cache;
- ``SPX_WATCHDOG_INTERVAL`` (0.5 s), ``SPX_EXIT_GRACE`` (5 s): failure detection;
- ``TORCH_DISTRIBUTED_DEBUG=DETAIL``: check every collective's signature across ranks.

SIGTERM (what launchers send to stop workers) aborts the job and ends the rank by SIGTERM within
a second or two, even when it is blocked in a collective; JAX's preemption service, which would
catch SIGTERM and keep the rank running, stays off unless ``JAX_ENABLE_PREEMPTION_SERVICE`` is
set (then the rank survives SIGTERM until the launcher's SIGKILL). The job's lifetime is bound
to rank 0, which hosts JAX's coordination service: it waits at exit until every rank is done
(the exit handshake).
"""

from spx.distributed.multiprocess.backend import ProcessBackend as ProcessBackend
from spx.distributed.multiprocess.backend import create_world_backend as create_world_backend
