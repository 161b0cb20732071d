"""spx.serialization: safetensors checkpoints — no pickle, atomic writes, lazy partial reads.

* :func:`save` / :func:`load` — a flat ``dict[str, array]`` to/from one file (or, for
  ``load``, a Hugging Face sharded directory).
* :func:`save_sharded` — ``model-0000K-of-0000N.safetensors`` + ``model.safetensors.index.json``.
* :func:`open_checkpoint` — a lazy read-only mapping over a file or a sharded directory.
* :func:`load_checkpoint` — fill a module, reading only its tensors (``partial=True`` for a
  pipeline stage reading from a full-model checkpoint).
* :func:`save_optimizer` / :func:`load_optimizer` — ``Optimizer.state_dict()`` round trip.
"""

from spx.serialization.checkpoint import Checkpoint as Checkpoint
from spx.serialization.checkpoint import open_checkpoint as open_checkpoint
from spx.serialization.module_io import load_checkpoint as load_checkpoint
from spx.serialization.optimizer_io import load_optimizer as load_optimizer
from spx.serialization.optimizer_io import save_optimizer as save_optimizer
from spx.serialization.sharded import save_sharded as save_sharded
from spx.serialization.tensors import load as load
from spx.serialization.tensors import save as save
