"""The engine behind :class:`spx.Tensor`: recorded operations, compiled programs, autograd.

* :mod:`.graph` — nodes, storages, grad mode and pending values (per thread);
* :mod:`.dispatch` — recording one operation;
* :mod:`.program` — computing what was recorded as one cached XLA program, and the backward pass;
* :mod:`.autograd` — ``backward`` / ``grad`` in torch's form; :mod:`.grad_mode` — ``no_grad`` & co.;
* :mod:`.tensor` — the Tensor class; its methods live in :mod:`.methods`, one mixin per kind.
"""

# torch's float32 matmuls are full float32; JAX's default on GPU is TF32 (spx.matmul_precision).
# Set here, before anything computes: a script may import only spx.nn and never load the spx
# namespace (spx._lazy).
from spx import matmul_precision as _matmul_precision

_matmul_precision.use_torchs_default()
