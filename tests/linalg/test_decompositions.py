"""spx.linalg's decompositions (cholesky, qr, svd, svdvals, eigh, eigvalsh) against torch.

Eigen- and singular vectors are unique only up to sign, so cases compare sign-invariant
quantities (reconstructions, squared entries) and differentiate sign-invariant losses. float32
decompositions agree to ~1e-5 relative; gradients, which divide by eigenvalue gaps, to ~1e-4.
"""

import numpy as np
import pytest

import spx
from tests.linalg._matrices import general, spd, well_conditioned
from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

DEC = {"rtol": 1e-4, "atol": 1e-5}
GRAD = {"rtol": 1e-3, "atol": 1e-4}


@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_cholesky(upper, shape):
    fn = lambda m, a: m.linalg.cholesky(a, upper=upper)  # noqa: E731
    check(fn, spd(*shape), **DEC)
    check_grad(fn, spd(*shape), **GRAD)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_reads_one_triangle(upper):
    a = spd(3, 3)
    a[0, 2] += 0.5  # the two triangles now disagree: each call reads its own
    a[2, 0] -= 0.5
    check(lambda m, x: m.linalg.cholesky(x, upper=upper), a, **DEC)
    check_grad(lambda m, x: m.linalg.cholesky(x, upper=upper), a, **GRAD)


@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (2, 3, 3)])
def test_qr(mode, shape):
    a = general(*shape)
    check(lambda m, x: m.linalg.qr(x, mode=mode), a, **DEC)
    if mode == "r" or (mode == "complete" and shape[-2] > shape[-1]):
        return  # torch cannot differentiate these either
    if mode == "reduced" and shape[-2] < shape[-1]:
        return  # torch: "The derivative of linalg.qr depends on Q, which is not computed..."
    check_grad(lambda m, x: m.linalg.qr(x, mode=mode), a, **GRAD)


def test_qr_returns_the_named_tuple():
    q, r = out = spx.linalg.qr(spx.tensor(general(3, 2)))
    assert out.Q is q and out.R is r and out._fields == ("Q", "R")
    assert spx.linalg.qr(spx.ones(3, 2), mode="r").Q.shape == (0,)


def _svd_invariants(m, a, full):
    U, S, Vh = m.linalg.svd(a, full_matrices=full)
    k = S.shape[-1]
    recon = (U[..., :k] * S[..., None, :]) @ Vh[..., :k, :]
    # Beyond the k-th, full_matrices' columns span a null space in no particular basis.
    return S, recon, U[..., :k] ** 2, Vh[..., :k, :] ** 2


@pytest.mark.parametrize("full", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_svd(full, shape):
    a = general(*shape)
    check(lambda m, x: _svd_invariants(m, x, full), a, **DEC)
    U, S, Vh = spx.linalg.svd(spx.tensor(a), full_matrices=full)
    tU, tS, tVh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
    assert U.shape == tU.shape and S.shape == tS.shape and Vh.shape == tVh.shape


@pytest.mark.parametrize("full", [False, True])
@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3), (2, 5, 3)])
def test_svd_gradients(full, shape):
    # U*U and Vh*Vh are invariant under the sign of each singular pair. full_matrices=True is
    # the default: on a non-square matrix JAX alone has no derivative for it.
    check_grad(lambda m, x: _svd_invariants(m, x, full), general(*shape), **GRAD)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5)])
def test_complete_svd_factors_are_orthogonal(shape):
    U, _, Vh = spx.linalg.svd(spx.tensor(general(*shape)))  # full_matrices=True
    for q in (U, Vh):
        np.testing.assert_allclose((q.mT @ q).numpy(), np.eye(q.shape[-1]), atol=1e-5)


@pytest.mark.parametrize("shape", [(4, 3), (3, 5), (2, 3, 3)])
def test_svdvals(shape):
    check(lambda m, a: m.linalg.svdvals(a), general(*shape), **DEC)
    check_grad(lambda m, a: m.linalg.svdvals(a), general(*shape), **GRAD)


def _eigh_invariants(m, a, uplo):
    w, v = m.linalg.eigh(a, UPLO=uplo)
    return w, v * v, (v * w[..., None, :]) @ v.mT


@pytest.mark.parametrize("uplo", ["L", "U"])
@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 3)])
def test_eigh(uplo, shape):
    a = spd(*shape)
    check(lambda m, x: _eigh_invariants(m, x, uplo), a, **DEC)
    check_grad(lambda m, x: _eigh_invariants(m, x, uplo), a, **GRAD)
    check(lambda m, x: m.linalg.eigvalsh(x, uplo), a, **DEC)
    check_grad(lambda m, x: m.linalg.eigvalsh(x, uplo), a, **GRAD)


@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_reads_one_triangle_and_gives_torchs_gradient(uplo):
    a = well_conditioned(4, 4) + np.diag(np.arange(4.0, dtype=np.float32))  # not symmetric
    check(lambda m, x: _eigh_invariants(m, x, uplo), a, **DEC)
    check_grad(lambda m, x: _eigh_invariants(m, x, uplo), a, **GRAD)


def test_eigh_complex_hermitian():
    b = general(3, 3) + 1j * general(3, 3, seed=1)
    a = (b @ b.conj().T + 3 * np.eye(3)).astype(np.complex64)
    check(lambda m, x: m.linalg.eigvalsh(x), a, **DEC)
    check(lambda m, x: m.linalg.eigh(x).eigenvalues, a, **DEC)


def test_named_fields():
    w, v = e = spx.linalg.eigh(spx.tensor(spd(3, 3)))
    assert e.eigenvalues is w and e.eigenvectors is v
    s = spx.linalg.svd(spx.tensor(general(3, 3)))
    assert s._fields == ("U", "S", "Vh")


@pytest.mark.parametrize(
    "fn,shape",
    [
        (lambda m, a: m.linalg.cholesky(a), (2, 3)),
        (lambda m, a: m.linalg.eigh(a), (2, 3)),
        (lambda m, a: m.linalg.eigh(a, UPLO="X"), (3, 3)),
        (lambda m, a: m.linalg.eigvalsh(a), (3,)),
        (lambda m, a: m.linalg.qr(a, mode="x"), (3, 3)),
        (lambda m, a: m.linalg.qr(a), (3,)),
        (lambda m, a: m.linalg.svd(a), (3,)),
        (lambda m, a: m.linalg.svdvals(a), (3,)),
    ],
)
def test_decomposition_errors(fn, shape):
    check_raises(fn, shape, error=RuntimeError)


def test_error_messages():
    with pytest.raises(RuntimeError, match=r"square matrices, but they are 2 by 3"):
        spx.linalg.cholesky(spx.ones(2, 3))
    with pytest.raises(RuntimeError, match=r"'L' or 'U', but got X"):
        spx.linalg.eigh(spx.eye(2), UPLO="X")
    with pytest.raises(RuntimeError, match=r"Got int32; convert it first"):
        spx.linalg.svdvals(spx.ones(2, 2, dtype=spx.int32))
