"""spx: PyTorch-shaped training on JAX.

Torch-named conveniences live here (``spx.manual_seed``, ``spx.device``, ``spx.zeros``,
``spx.save``/``spx.load``, dtypes); ``spx.nn``, ``spx.optim``, ``spx.data`` and
``spx.distributed`` mirror their torch namesakes. Gradients: :func:`spx.backward` (torch flow,
fills ``p.grad``) and :func:`spx.value_and_grad` (functional); :func:`spx.compile` fuses a
whole training step into one XLA program.
"""

from spx import data as data
from spx import nn as nn
from spx import optim as optim
from spx import random as random
from spx import serialization as serialization
from spx.autograd import backward as backward
from spx.autograd import grad as grad
from spx.autograd import no_grad as no_grad
from spx.autograd import value_and_grad as value_and_grad
from spx.compile import compile as compile
from spx.creation import arange as arange
from spx.creation import as_tensor as as_tensor
from spx.creation import cat as cat
from spx.creation import from_numpy as from_numpy
from spx.creation import full as full
from spx.creation import ones as ones
from spx.creation import ones_like as ones_like
from spx.creation import rand as rand
from spx.creation import randint as randint
from spx.creation import randn as randn
from spx.creation import stack as stack
from spx.creation import tensor as tensor
from spx.creation import zeros as zeros
from spx.creation import zeros_like as zeros_like
from spx.device import device as device
from spx.dtypes import *  # noqa: F403 - the dtype names, listed in spx.dtypes.__all__
from spx.random import initial_seed as initial_seed
from spx.random import manual_seed as manual_seed
from spx.serialization import load as load
from spx.serialization import save as save

__version__ = "0.1.0"

# Last, so that spx.distributed can use all of the above. Under spx-run it records an uncaught
# exception into TORCHELASTIC_ERROR_FILE for the launcher's failure report (no-op otherwise).
from spx.distributed.elastic import autorecord as _autorecord
