"""spx: PyTorch-shaped training on JAX.

``spx.Tensor`` is torch's tensor (methods, in-place writes, ``loss.backward()``); torch's
top-level functions (``spx.zeros``, ``spx.cat``, ``spx.where``, ...), ``spx.manual_seed``,
``spx.device``, ``spx.save``/``spx.load``, dtypes and grad mode (``spx.no_grad``) live here;
``spx.nn``, ``spx.optim``, ``spx.data`` (also as ``spx.utils.data``), ``spx.autograd``,
``spx.cuda``, ``spx.accelerator``, ``spx.backends``, ``spx.special`` and ``spx.distributed``
mirror their torch namesakes.
:func:`spx.compile` fuses a whole training step into one XLA program; :func:`spx.backward` and
:func:`spx.value_and_grad` are functional forms over Modules.

The names are defined in :mod:`spx._namespace`; only ``spx-run``'s own process loads them on
first use (:mod:`spx._lazy`), so that the launcher starts without importing jax.
"""

from spx import _lazy

__version__ = "0.1.0"

if _lazy.launcher_process():
    __getattr__, __dir__ = _lazy.lazy_namespace("spx", "spx._namespace")
else:
    from spx._namespace import *  # noqa: F403

# Last, so that spx.distributed can use all of the above. Under spx-run it records an uncaught
# exception into TORCHELASTIC_ERROR_FILE for the launcher's failure report (no-op otherwise).
from spx.distributed.elastic import autorecord as _autorecord
