"""``spx.backends``: the ``torch.backends`` switches training scripts set.

* :mod:`.cuda` — ``matmul.allow_tf32``, wired to spx's float32 matmul precision;
* :mod:`.cudnn` — ``benchmark``, ``deterministic``, ... (accepted; XLA picks its own kernels);
* :mod:`.mps` — Apple's Metal backend: never available to spx (JAX runs on CPU, GPU, TPU).
"""

from spx.backends import cuda as cuda
from spx.backends import cudnn as cudnn
from spx.backends import mps as mps
