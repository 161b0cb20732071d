"""Everything ``import spx`` offers (the package docstring says what): ``spx/__init__.py`` imports
it at once, or, in ``spx-run``'s own process, on first use (:mod:`spx._lazy`)."""

from spx import accelerator as accelerator
from spx import amp as amp
from spx import autograd as autograd
from spx import backends as backends
from spx import cuda as cuda
from spx import data as data
from spx import distributions as distributions
from spx import fft as fft
from spx import func as func
from spx import linalg as linalg
from spx import multiprocessing as multiprocessing
from spx import nn as nn
from spx import optim as optim
from spx import random as random
from spx import serialization as serialization
from spx import special as special
from spx import testing as testing
from spx import utils as utils
from spx._compile import compile as compile
from spx._device import device as device
from spx._tensor._dims import Size as Size
from spx._tensor.grad_mode import enable_grad as enable_grad
from spx._tensor.grad_mode import inference_mode as inference_mode
from spx._tensor.grad_mode import is_grad_enabled as is_grad_enabled
from spx._tensor.grad_mode import is_inference_mode_enabled as is_inference_mode_enabled
from spx._tensor.grad_mode import no_grad as no_grad
from spx._tensor.grad_mode import set_grad_enabled as set_grad_enabled
from spx._tensor.legacy_types import BFloat16Tensor as BFloat16Tensor
from spx._tensor.legacy_types import BoolTensor as BoolTensor
from spx._tensor.legacy_types import ByteTensor as ByteTensor
from spx._tensor.legacy_types import CharTensor as CharTensor
from spx._tensor.legacy_types import DoubleTensor as DoubleTensor
from spx._tensor.legacy_types import FloatTensor as FloatTensor
from spx._tensor.legacy_types import HalfTensor as HalfTensor
from spx._tensor.legacy_types import IntTensor as IntTensor
from spx._tensor.legacy_types import LongTensor as LongTensor
from spx._tensor.legacy_types import ShortTensor as ShortTensor
from spx._tensor.legacy_types import set_default_tensor_type as set_default_tensor_type
from spx._tensor.printing import set_printoptions as set_printoptions
from spx._tensor.tensor import Tensor as Tensor
from spx._tensor.tensor import is_tensor as is_tensor
from spx.amp import GradScaler as GradScaler
from spx.amp import autocast as autocast
from spx.amp import get_autocast_dtype as get_autocast_dtype
from spx.amp import is_autocast_enabled as is_autocast_enabled
from spx.autograd.anomaly_mode import (
    is_anomaly_check_nan_enabled as is_anomaly_check_nan_enabled,
)
from spx.autograd.anomaly_mode import is_anomaly_enabled as is_anomaly_enabled
from spx.autograd.functional import backward as backward
from spx.autograd.functional import grad as grad
from spx.autograd.functional import value_and_grad as value_and_grad
from spx.constants import *  # noqa: F403 - pi, inf, nan, memory formats: spx.constants.__all__
from spx.determinism import (
    are_deterministic_algorithms_enabled as are_deterministic_algorithms_enabled,
)
from spx.determinism import get_deterministic_debug_mode as get_deterministic_debug_mode
from spx.determinism import (
    is_deterministic_algorithms_warn_only_enabled as is_deterministic_algorithms_warn_only_enabled,
)
from spx.determinism import set_deterministic_debug_mode as set_deterministic_debug_mode
from spx.determinism import use_deterministic_algorithms as use_deterministic_algorithms
from spx.dtypes import *  # noqa: F403 - the dtype names, listed in spx.dtypes.__all__
from spx.func import vmap as vmap
from spx.generator import Generator as Generator
from spx.generator import default_generator as default_generator
from spx.matmul_precision import get_float32_matmul_precision as get_float32_matmul_precision
from spx.matmul_precision import set_float32_matmul_precision as set_float32_matmul_precision
from spx.ops import *  # noqa: F403 - torch's top-level functions, listed in spx.ops.__all__
from spx.random import get_rng_state as get_rng_state
from spx.random import initial_seed as initial_seed
from spx.random import manual_seed as manual_seed
from spx.random import seed as seed
from spx.random import set_rng_state as set_rng_state
from spx.serialization import load as load
from spx.serialization import save as save
from spx.threads import get_num_interop_threads as get_num_interop_threads
from spx.threads import get_num_threads as get_num_threads
from spx.threads import set_num_interop_threads as set_num_interop_threads
from spx.threads import set_num_threads as set_num_threads

# `import *` copies what __all__ names: the public names, and the underscore functions of torch's
# that spx.ops exports (the _foreach_* list operations, which EMA helpers call).
__all__ = sorted(n for n in list(globals()) if n[0] != "_" or n.startswith("_foreach_"))

_complete = True  # spx._lazy copies the names into the package only once all are here
