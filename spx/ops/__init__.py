"""torch's top-level functions returning Tensors, re-exported by ``spx`` (``spx.cat``, ...).

One module per kind, each listing its public names in ``__all__``:

* :mod:`.creation` — ``zeros``, ``arange``, ``randn``, ``tensor``, ``*_like``, ...
* :mod:`.math` — pointwise math (``exp``, ``add``, ``clamp``, ``softmax``, ...)
* :mod:`.comparison` — ``eq``, ``maximum``, ``allclose``, ``isnan``, ``sort``, ``topk``, ...
* :mod:`.reduction` — ``sum``, ``mean``, ``max``, ``std_mean``, ``cumsum``, ``unique``, ...
* :mod:`.shape` — ``cat``, ``stack``, ``split``, ``meshgrid``, ``tril``, ``flatten``, ...
* :mod:`.indexing` — ``where``, ``gather``, ``scatter``, ``index_select``, ``searchsorted``, ...
* :mod:`.linalg` — ``matmul``, ``bmm``, ``einsum``, ``outer``, ``cdist``, ...
* :mod:`.sampling` — ``multinomial``, ``normal``, ``bernoulli``, ``poisson``
* :mod:`.complex_numbers` — ``complex``, ``polar``, ``view_as_complex``, ``view_as_real``
* :mod:`.windows` — ``hann_window``, ``hamming_window``, ... (torch's signal windows)
* :mod:`.types` — ``dtype``, ``get_default_dtype``, ``finfo``, ``promote_types``, ...
* :mod:`.from_data` — ``asarray``, ``frombuffer``
* :mod:`.integration` — ``trapezoid``, ``trapz``, ``cumulative_trapezoid``
* :mod:`.differentiation` — ``gradient``
* :mod:`.histograms` — ``histogram``
* :mod:`.scaling` — ``frexp``, ``renorm``
* :mod:`.spectral` — ``stft``, ``istft``
* :mod:`.unravel` — ``unravel_index``; :mod:`.vandermonde` — ``vander``
* :mod:`.predicates` — ``is_same_size``, ``is_signed``
* :mod:`.foreach` — torch's ``_foreach_*`` list-wise operations (``_foreach_mul_``, ...)
* :mod:`.inplace` — the top-level in-place functions (``relu_``, ``clamp_``, ``sigmoid_``, ...)
* :mod:`.out` — the ``out=`` keyword every function here takes
* :mod:`.deprecated` — ``range``, ``chain_matmul`` (with torch's deprecation warnings)

Arguments may be Tensors, ``jax.Array``, numpy arrays or Python numbers (:mod:`._args`).
"""

from spx.ops import comparison as comparison
from spx.ops import complex_numbers as complex_numbers
from spx.ops import creation as creation
from spx.ops import deprecated as deprecated
from spx.ops import differentiation as differentiation
from spx.ops import foreach as foreach
from spx.ops import from_data as from_data
from spx.ops import histograms as histograms
from spx.ops import indexing as indexing
from spx.ops import inplace as inplace
from spx.ops import integration as integration
from spx.ops import linalg as linalg
from spx.ops import math as math
from spx.ops import predicates as predicates
from spx.ops import reduction as reduction
from spx.ops import sampling as sampling
from spx.ops import scaling as scaling
from spx.ops import shape as shape
from spx.ops import spectral as spectral
from spx.ops import types as types
from spx.ops import unravel as unravel
from spx.ops import vandermonde as vandermonde
from spx.ops import windows as windows
from spx.ops.comparison import *  # noqa: F403
from spx.ops.complex_numbers import *  # noqa: F403
from spx.ops.creation import *  # noqa: F403
from spx.ops.deprecated import *  # noqa: F403
from spx.ops.differentiation import *  # noqa: F403
from spx.ops.foreach import *  # noqa: F403
from spx.ops.from_data import *  # noqa: F403
from spx.ops.histograms import *  # noqa: F403
from spx.ops.indexing import *  # noqa: F403
from spx.ops.inplace import *  # noqa: F403
from spx.ops.integration import *  # noqa: F403
from spx.ops.linalg import *  # noqa: F403
from spx.ops.math import *  # noqa: F403
from spx.ops.predicates import *  # noqa: F403
from spx.ops.reduction import *  # noqa: F403
from spx.ops.sampling import *  # noqa: F403
from spx.ops.scaling import *  # noqa: F403
from spx.ops.shape import *  # noqa: F403
from spx.ops.spectral import *  # noqa: F403
from spx.ops.types import *  # noqa: F403
from spx.ops.unravel import *  # noqa: F403
from spx.ops.vandermonde import *  # noqa: F403
from spx.ops.windows import *  # noqa: F403

__all__ = [
    *comparison.__all__,
    *complex_numbers.__all__,
    *creation.__all__,
    *indexing.__all__,
    *inplace.__all__,
    *linalg.__all__,
    *math.__all__,
    *reduction.__all__,
    *sampling.__all__,
    *shape.__all__,
    *types.__all__,
    *windows.__all__,
    *deprecated.__all__,
    *foreach.__all__,
    *from_data.__all__,
    *histograms.__all__,
    *integration.__all__,
    *differentiation.__all__,
    *predicates.__all__,
    *scaling.__all__,
    *spectral.__all__,
    *unravel.__all__,
    *vandermonde.__all__,
]

# torch's out= keyword on every function here that returns tensors (spx/ops/out.py).
from spx.ops.out import add_out as _add_out

# (Not on the in-place functions: they write into their input, as torch's take no out=.)
_add_out(globals(), [n for n in __all__ if n not in set(inplace.__all__)], set(creation.__all__))
