"""``spx.special``: torch's special functions (``torch.special``), with torch's names,
argument order, values at the edges (poles, infinities, NaN) and derivatives.

One file per family:

* :mod:`.error` — ``erf``, ``erfc``, ``erfcx``, ``erfinv``, ``ndtr``, ``ndtri``, ``log_ndtr``
* :mod:`.gamma` — ``gammaln``, ``digamma``/``psi``, ``polygamma``, ``multigammaln``,
  ``gammainc``, ``gammaincc``, ``zeta``
* :mod:`.elementary` — ``expit``, ``logit``, ``exp2``, ``expm1``, ``log1p``, ``sinc``,
  ``round``, ``xlogy``, ``xlog1py``, ``entr``, ``softmax``, ``log_softmax``, ``logsumexp``
* :mod:`.modified_bessel` — ``i0``, ``i0e``, ``i1``, ``i1e``, ``modified_bessel_i0``/``i1``/
  ``k0``/``k1``, ``scaled_modified_bessel_k0``/``k1``
* :mod:`.bessel` — ``bessel_j0``/``j1``/``y0``/``y1``, ``spherical_bessel_j0``, ``airy_ai``
* :mod:`.polynomials` — Chebyshev ``T/U/V/W`` (plain and shifted), Hermite ``H``/``He``,
  Laguerre ``L``, Legendre ``P``

Integer and bool inputs are computed as float32, as torch promotes them; float16/bfloat16
inputs are computed in float32 and returned in their own dtype. Where torch has no derivative
spx has none either: the Bessel functions of the second group, ``airy_ai`` and the polynomials
return tensors that do not require grad (torch's have no ``grad_fn``), and ``backward()``
through ``zeta`` in ``input`` or ``gammainc``/``gammaincc`` in ``input`` raises, as torch's
does.

Example:
    >>> import spx
    >>> x = spx.tensor([0.5, 1.0], requires_grad=True)
    >>> spx.special.erf(x).sum().backward()
    >>> [f"{g:.4f}" for g in x.grad.tolist()]  # 2/sqrt(pi) exp(-x^2)
    ['0.8788', '0.4151']
"""

from spx.special.bessel import airy_ai as airy_ai
from spx.special.bessel import bessel_j0 as bessel_j0
from spx.special.bessel import bessel_j1 as bessel_j1
from spx.special.bessel import bessel_y0 as bessel_y0
from spx.special.bessel import bessel_y1 as bessel_y1
from spx.special.bessel import spherical_bessel_j0 as spherical_bessel_j0
from spx.special.elementary import entr as entr
from spx.special.elementary import exp2 as exp2
from spx.special.elementary import expit as expit
from spx.special.elementary import expm1 as expm1
from spx.special.elementary import log1p as log1p
from spx.special.elementary import log_softmax as log_softmax
from spx.special.elementary import logit as logit
from spx.special.elementary import logsumexp as logsumexp
from spx.special.elementary import round as round
from spx.special.elementary import sinc as sinc
from spx.special.elementary import softmax as softmax
from spx.special.elementary import xlog1py as xlog1py
from spx.special.elementary import xlogy as xlogy
from spx.special.error import erf as erf
from spx.special.error import erfc as erfc
from spx.special.error import erfcx as erfcx
from spx.special.error import erfinv as erfinv
from spx.special.error import log_ndtr as log_ndtr
from spx.special.error import ndtr as ndtr
from spx.special.error import ndtri as ndtri
from spx.special.gamma import digamma as digamma
from spx.special.gamma import gammainc as gammainc
from spx.special.gamma import gammaincc as gammaincc
from spx.special.gamma import gammaln as gammaln
from spx.special.gamma import multigammaln as multigammaln
from spx.special.gamma import polygamma as polygamma
from spx.special.gamma import psi as psi
from spx.special.gamma import zeta as zeta
from spx.special.modified_bessel import i0 as i0
from spx.special.modified_bessel import i0e as i0e
from spx.special.modified_bessel import i1 as i1
from spx.special.modified_bessel import i1e as i1e
from spx.special.modified_bessel import modified_bessel_i0 as modified_bessel_i0
from spx.special.modified_bessel import modified_bessel_i1 as modified_bessel_i1
from spx.special.modified_bessel import modified_bessel_k0 as modified_bessel_k0
from spx.special.modified_bessel import modified_bessel_k1 as modified_bessel_k1
from spx.special.modified_bessel import scaled_modified_bessel_k0 as scaled_modified_bessel_k0
from spx.special.modified_bessel import scaled_modified_bessel_k1 as scaled_modified_bessel_k1
from spx.special.polynomials import chebyshev_polynomial_t as chebyshev_polynomial_t
from spx.special.polynomials import chebyshev_polynomial_u as chebyshev_polynomial_u
from spx.special.polynomials import chebyshev_polynomial_v as chebyshev_polynomial_v
from spx.special.polynomials import chebyshev_polynomial_w as chebyshev_polynomial_w
from spx.special.polynomials import hermite_polynomial_h as hermite_polynomial_h
from spx.special.polynomials import hermite_polynomial_he as hermite_polynomial_he
from spx.special.polynomials import laguerre_polynomial_l as laguerre_polynomial_l
from spx.special.polynomials import legendre_polynomial_p as legendre_polynomial_p
from spx.special.polynomials import (
    shifted_chebyshev_polynomial_t as shifted_chebyshev_polynomial_t,
)
from spx.special.polynomials import (
    shifted_chebyshev_polynomial_u as shifted_chebyshev_polynomial_u,
)
from spx.special.polynomials import (
    shifted_chebyshev_polynomial_v as shifted_chebyshev_polynomial_v,
)
from spx.special.polynomials import (
    shifted_chebyshev_polynomial_w as shifted_chebyshev_polynomial_w,
)
