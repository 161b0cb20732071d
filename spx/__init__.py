"""spx: PyTorch-shaped training on JAX."""

from spx.device import device as device
from spx.random import initial_seed as initial_seed
from spx.random import manual_seed as manual_seed

__version__ = "0.1.0"
