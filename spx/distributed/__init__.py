"""``spx.distributed``: torch.distributed-shaped process groups, collectives and p2p on JAX.

Ranks run as processes launched by ``spx-run``/``torchrun`` (one JAX device each, on JAX's
multi-controller runtime: :mod:`spx.distributed.multiprocess`) or as threads of one process
(:func:`spawn`, one local device each: :mod:`spx.distributed._thread_backend`). The same
per-rank script runs on both. As in torch, collectives write their results into their tensor
arguments in place (:mod:`spx.distributed.collectives`); :mod:`spx.distributed.functional` has
forms that return the result instead. :mod:`spx.distributed.device_mesh` builds n-D meshes of
process groups. :mod:`spx.distributed.backend` is the interface a backend implements.

The names live in :mod:`spx.distributed._namespace`, loaded on first use (:mod:`spx._lazy`), so
that the launcher (:mod:`spx.distributed.run`, :mod:`spx.distributed.elastic`) imports without jax.
"""

from typing import TYPE_CHECKING

from spx._lazy import lazy_namespace

__getattr__, __dir__ = lazy_namespace("spx.distributed", "spx.distributed._namespace")

if TYPE_CHECKING:
    from spx.distributed._namespace import *  # noqa: F403
