"""spx's products and distances (matmul, bmm, einsum, outer, cdist, ...) against torch."""

import jax.numpy as jnp
import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

PRODUCTS = [
    ("matmul_2d", lambda m, a, b: m.matmul(a, b), (2, 3), (3, 4)),
    ("matmul_batched", lambda m, a, b: m.matmul(a, b), (5, 2, 3), (3, 4)),
    ("matmul_broadcast", lambda m, a, b: m.matmul(a, b), (2, 1, 2, 3), (5, 3, 4)),
    ("matmul_vec_mat", lambda m, a, b: m.matmul(a, b), (3,), (2, 3, 4)),
    ("matmul_mat_vec", lambda m, a, b: m.matmul(a, b), (2, 3), (3,)),
    ("matmul_vec_vec", lambda m, a, b: m.matmul(a, b), (3,), (3,)),
    ("mm", lambda m, a, b: m.mm(a, b), (2, 3), (3, 4)),
    ("bmm", lambda m, a, b: m.bmm(a, b), (2, 2, 3), (2, 3, 4)),
    ("mv", lambda m, a, b: m.mv(a, b), (2, 3), (3,)),
    ("dot", lambda m, a, b: m.dot(a, b), (3,), (3,)),
    ("vdot", lambda m, a, b: m.vdot(a, b), (3,), (3,)),
    ("inner", lambda m, a, b: m.inner(a, b), (2, 3), (4, 3)),
    ("outer", lambda m, a, b: m.outer(a, b), (2,), (3,)),
    ("ger", lambda m, a, b: m.ger(a, b), (2,), (3,)),
    ("kron", lambda m, a, b: m.kron(a, b), (2, 2), (3, 2)),
    ("tensordot", lambda m, a, b: m.tensordot(a, b, 1), (2, 3), (3, 4)),
    ("tensordot_pairs", lambda m, a, b: m.tensordot(a, b, ([0, 1], [1, 0])), (2, 3), (3, 2)),
    ("cross", lambda m, a, b: m.cross(a, b, dim=1), (2, 3), (2, 3)),
    ("cross_default", lambda m, a, b: m.cross(a, b), (3, 2), (3, 2)),
    ("dist", lambda m, a, b: m.dist(a, b), (2, 3), (2, 3)),
    ("dist_p1", lambda m, a, b: m.dist(a, b, 1), (2, 3), (3,)),
]


@pytest.mark.parametrize("fn,a,b", [c[1:] for c in PRODUCTS], ids=[c[0] for c in PRODUCTS])
def test_product(fn, a, b):
    check(fn, a, b, rtol=1e-5, atol=1e-5)
    check_grad(fn, a, b, rtol=1e-4, atol=1e-5)


def test_addmm_baddbmm():
    check(lambda m, x, a, b: m.addmm(x, a, b), (2, 4), (2, 3), (3, 4))
    check(lambda m, x, a, b: m.addmm(x, a, b, beta=0.5, alpha=-1), (4,), (2, 3), (3, 4))
    check(lambda m, x, a, b: m.baddbmm(x, a, b, alpha=2), (2, 2, 4), (2, 2, 3), (2, 3, 4))
    check_grad(lambda m, x, a, b: m.addmm(x, a, b, beta=2), (2, 4), (2, 3), (3, 4))


EINSUMS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("i,i->", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ii->i", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("bhqd, bhkd -> bhqk", [(1, 2, 3, 4), (1, 2, 5, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
]


@pytest.mark.parametrize("eq,shapes", EINSUMS, ids=[e[0] for e in EINSUMS])
def test_einsum(eq, shapes):
    check(lambda m, *xs: m.einsum(eq, *xs), *shapes, rtol=1e-5, atol=1e-5)
    check(lambda m, *xs: m.einsum(eq, list(xs)), *shapes, rtol=1e-5, atol=1e-5)
    check_grad(lambda m, *xs: m.einsum(eq, *xs), *shapes, rtol=1e-4)


def test_einsum_sublist_form():
    # torch.einsum(op, sublist, op, sublist, ..., [output sublist])
    check(lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [0, 2]), (2, 3), (3, 4))
    check(lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2]), (2, 3), (3, 4))
    check(lambda m, a: m.einsum(a, [0, 0]), (3, 3))  # the trace
    check(lambda m, a: m.einsum(a, [..., 1], [...]), (2, 5, 3))
    check(lambda m, a, b: m.einsum(a, [Ellipsis, 0], b, [0, 27], [Ellipsis, 27]), (2, 3), (3, 4))
    check_grad(lambda m, a, b: m.einsum(a, [0, 1], b, [1, 2], [0, 2]), (2, 3), (3, 4), rtol=1e-4)
    # the implicit output orders subscripts as torch's letters (0-25 A-Z, 26-51 a-z) sort
    check(lambda m, a: m.einsum(a, [30, 3]), (3, 4))
    check(lambda m, a, b: m.einsum(a, [26, 25], b, [25, 1]), (2, 3), (3, 4))
    check(lambda m, a: m.einsum(a, [np.int64(0), np.int64(1)], [np.int64(1)]), (3, 4))


def test_einsum_errors():
    check_raises(lambda m, a: m.einsum("ij,jk->ik", a), (2, 2), error=RuntimeError)
    check_raises(lambda m, a: m.einsum(a, [0, 60]), (2, 2), error=ValueError)


@pytest.mark.parametrize("p", [2.0, 1.0, 0.0, 3.0, float("inf")])
def test_cdist(p):
    check(lambda m, a, b: m.cdist(a, b, p=p), (4, 3), (5, 3), rtol=1e-5, atol=1e-5)
    check(lambda m, a, b: m.cdist(a, b, p), (2, 4, 3), (2, 5, 3), rtol=1e-5, atol=1e-5)
    if p != 0.0:
        check_grad(lambda m, a, b: m.cdist(a, b, p=p), (4, 3), (5, 3), rtol=1e-4)


def test_cdist_zero_distance_grad_is_zero():
    check_grad(lambda m, a: m.cdist(a, a), (3, 2))


def test_cdist_errors():
    check_raises(lambda m, a, b: m.cdist(a, b), (4, 3), (5, 2), error=RuntimeError)
    check_raises(lambda m, a, b: m.cdist(a, b), (3,), (5, 3), error=RuntimeError)
    check_raises(lambda m, a, b: m.cdist(a, b, p=-1), (4, 3), (5, 3), error=RuntimeError)


ERRORS = [
    ("mm_vec", lambda m, a, b: m.mm(a, b), (3,), (3, 4)),
    ("mm_inner", lambda m, a, b: m.mm(a, b), (2, 3), (2, 4)),
    ("bmm_batch", lambda m, a, b: m.bmm(a, b), (2, 2, 3), (3, 3, 4)),
    ("matmul_inner", lambda m, a, b: m.matmul(a, b), (2, 3), (4, 5)),
    ("dot_size", lambda m, a, b: m.dot(a, b), (3,), (4,)),
    ("cross_size", lambda m, a, b: m.cross(a, b, dim=0), (2, 3), (2, 3)),
    ("cross_ndim", lambda m, a, b: m.cross(a, b, dim=-1), (2, 4, 3), (3,)),  # was a ValueError
    ("cross_ndim_method", lambda m, a, b: a.cross(b, dim=-1), (3,), (2, 3)),
]


@pytest.mark.parametrize("fn,a,b", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_product_errors(fn, a, b):
    check_raises(fn, a, b, error=RuntimeError)


def test_matmul_error_message_names_shapes():
    with pytest.raises(RuntimeError, match=r"\(2x3 and 4x5\)"):
        spx.matmul(spx.ones(2, 3), spx.ones(4, 5))


def test_accepts_arrays():
    out = spx.matmul(jnp.ones((2, 3)), np.ones((3, 1), np.float32))
    assert isinstance(out, spx.Tensor) and out.tolist() == [[3.0], [3.0]]


# -- torch's older decompositions (torch.svd / qr / cholesky and their Tensor methods) -----------
@pytest.mark.parametrize("some", [True, False])
@pytest.mark.parametrize("shape", [(4, 3), (2, 3, 5)])
def test_old_svd_returns_v_not_vh(shape, some):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    tU, tS, tV = torch.svd(torch.tensor(a), some=some)
    for U, S, V in (spx.svd(spx.tensor(a), some=some), spx.tensor(a).svd(some=some)):
        assert (U.shape, S.shape, V.shape) == (tU.shape, tS.shape, tV.shape)
        np.testing.assert_allclose(S.numpy(), tS.numpy(), rtol=1e-5, atol=1e-6)
        k = S.shape[-1]  # U diag(S) V^H rebuilds the input (U and V are sign-ambiguous)
        rebuilt = (U[..., :k] * S[..., None, :]) @ V[..., :k].mT
        np.testing.assert_allclose(rebuilt.numpy(), a, rtol=1e-4, atol=1e-5)
    tU0, tS0, tV0 = torch.svd(torch.tensor(a), compute_uv=False)
    U0, S0, V0 = spx.svd(spx.tensor(a), compute_uv=False)
    np.testing.assert_array_equal(U0.numpy(), tU0.numpy())  # zero-filled, torch's shapes
    np.testing.assert_array_equal(V0.numpy(), tV0.numpy())
    np.testing.assert_allclose(S0.numpy(), tS0.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("some", [True, False])
def test_old_qr_and_cholesky(some):
    a = np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32)
    tQ, tR = torch.qr(torch.tensor(a), some=some)
    for Q, R in (spx.qr(spx.tensor(a), some=some), spx.tensor(a).qr(some)):
        assert (Q.shape, R.shape) == (tQ.shape, tR.shape)
        np.testing.assert_allclose((Q @ R).numpy(), a, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(np.abs(R.numpy()), np.abs(tR.numpy()), rtol=1e-4, atol=1e-5)
    spd = a.T @ a + np.eye(3, dtype=np.float32)
    check(lambda m, x: m.cholesky(x), spd, rtol=1e-5, atol=1e-5)
    check(lambda m, x: x.cholesky(upper=True), spd, rtol=1e-5, atol=1e-5)
    check_grad(lambda m, x: m.cholesky(x @ x.mT + m.eye(3)), a[:3], rtol=1e-4, atol=1e-5)


def test_top_level_distances_as_torch():
    check(lambda m, a, b: m.cosine_similarity(a, b, dim=0), (3, 4), (3, 4), rtol=1e-5)
    check_grad(lambda m, a, b: m.cosine_similarity(a, b), (3, 4), (3, 4), rtol=1e-4)
    check(lambda m, a, b: m.pairwise_distance(a, b, p=1.5, keepdim=True), (3, 4), (3, 4))
    check_grad(lambda m, a, b: m.pairwise_distance(a, b), (3, 4), (3, 4), rtol=1e-4)
