"""``spx.distributed``: torch.distributed-shaped process groups, collectives and p2p on JAX.

Ranks run as processes launched by ``spx-run``/``torchrun`` (one JAX device each, on JAX's
multi-controller runtime: :mod:`spx.distributed.multiprocess`) or as threads of one process
(:func:`spawn`, one local device each: :mod:`spx.distributed._thread_backend`). The same
per-rank script runs on both. As in torch, collectives write their results into their tensor
arguments in place (:mod:`spx.distributed.collectives`); :mod:`spx.distributed.functional` has
forms that return the result instead. :mod:`spx.distributed.device_mesh` builds n-D meshes of
process groups. :mod:`spx.distributed.backend` is the interface a backend implements.

The names are defined in :mod:`spx.distributed._namespace`; only ``spx-run``'s own process
loads them on first use (:mod:`spx._lazy`), so that the launcher starts without importing jax.
"""

from spx import _lazy

if _lazy.launcher_process():
    __getattr__, __dir__ = _lazy.lazy_namespace("spx.distributed", "spx.distributed._namespace")
else:
    from spx.distributed._namespace import *  # noqa: F403
