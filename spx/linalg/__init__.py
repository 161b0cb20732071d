"""``spx.linalg``: torch's ``torch.linalg`` namespace (norms, decompositions, solves,
inverses, products), with torch's names, argument names, defaults and named-tuple results.

One file per kind:

* :mod:`._norms` — ``vector_norm``, ``matrix_norm``, ``norm``, ``cond``
* :mod:`._decompositions` — ``cholesky``, ``cholesky_ex``, ``qr``, ``svd``, ``svdvals``,
  ``eigh``, ``eigvalsh``
* :mod:`._solvers` — ``inv``, ``inv_ex``, ``solve``, ``solve_ex``, ``solve_triangular``,
  ``lstsq``, ``tensorinv``, ``tensorsolve``
* :mod:`._errors` — ``LinAlgError`` for a singular or non-positive-definite matrix (raised
  once the value is computed) and the ``info`` of the ``*_ex`` functions
* :mod:`._rank` — ``pinv``, ``matrix_rank``
* :mod:`._products` — ``det``, ``slogdet``, ``matrix_power``, ``matrix_exp``, ``cross``,
  ``vecdot``, ``multi_dot``, ``diagonal``, ``matmul``, ``vander``

Not here (yet): ``eig``/``eigvals`` (general eigenproblems: JAX computes them on the CPU
only), the ``lu``/``ldl`` families, ``householder_product``.
Decompositions are differentiated by JAX; for float16/bfloat16 inputs, autocast regions
compute them in float32 as torch does.

Example:
    >>> import spx
    >>> Q, R = spx.linalg.qr(spx.tensor([[3.0, 0.0], [4.0, 5.0]]))
    >>> spx.allclose(Q @ R, spx.tensor([[3.0, 0.0], [4.0, 5.0]]), atol=1e-6)
    True
"""

from spx.linalg._decompositions import QR as QR
from spx.linalg._decompositions import SVD as SVD
from spx.linalg._decompositions import CholeskyEx as CholeskyEx
from spx.linalg._decompositions import Eigh as Eigh
from spx.linalg._decompositions import cholesky as cholesky
from spx.linalg._decompositions import cholesky_ex as cholesky_ex
from spx.linalg._decompositions import eigh as eigh
from spx.linalg._decompositions import eigvalsh as eigvalsh
from spx.linalg._decompositions import qr as qr
from spx.linalg._decompositions import svd as svd
from spx.linalg._decompositions import svdvals as svdvals
from spx.linalg._errors import LinAlgError as LinAlgError
from spx.linalg._norms import cond as cond
from spx.linalg._norms import matrix_norm as matrix_norm
from spx.linalg._norms import norm as norm
from spx.linalg._norms import vector_norm as vector_norm
from spx.linalg._products import cross as cross
from spx.linalg._products import det as det
from spx.linalg._products import diagonal as diagonal
from spx.linalg._products import matmul as matmul
from spx.linalg._products import matrix_exp as matrix_exp
from spx.linalg._products import matrix_power as matrix_power
from spx.linalg._products import multi_dot as multi_dot
from spx.linalg._products import slogdet as slogdet
from spx.linalg._products import vander as vander
from spx.linalg._products import vecdot as vecdot
from spx.linalg._rank import matrix_rank as matrix_rank
from spx.linalg._rank import pinv as pinv
from spx.linalg._solvers import InvEx as InvEx
from spx.linalg._solvers import Lstsq as Lstsq
from spx.linalg._solvers import SolveEx as SolveEx
from spx.linalg._solvers import inv as inv
from spx.linalg._solvers import inv_ex as inv_ex
from spx.linalg._solvers import lstsq as lstsq
from spx.linalg._solvers import solve as solve
from spx.linalg._solvers import solve_ex as solve_ex
from spx.linalg._solvers import solve_triangular as solve_triangular
from spx.linalg._solvers import tensorinv as tensorinv
from spx.linalg._solvers import tensorsolve as tensorsolve
