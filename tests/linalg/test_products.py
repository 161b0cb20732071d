"""spx.linalg's determinants, powers and products against torch.linalg's."""

import numpy as np
import pytest

import spx
from tests.linalg._matrices import general, well_conditioned
from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

TOL = {"rtol": 1e-4, "atol": 1e-5}

SQUARE = [
    ("det", lambda m, a: m.linalg.det(a)),
    ("slogdet", lambda m, a: m.linalg.slogdet(a)),
    ("matrix_power_3", lambda m, a: m.linalg.matrix_power(a, 3)),
    ("matrix_power_0", lambda m, a: m.linalg.matrix_power(a, 0)),
    ("matrix_power_neg", lambda m, a: m.linalg.matrix_power(a, -2)),
    ("matrix_exp", lambda m, a: m.linalg.matrix_exp(a)),
]


@pytest.mark.parametrize("fn", [c[1] for c in SQUARE], ids=[c[0] for c in SQUARE])
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_square_functions(fn, shape):
    check(fn, well_conditioned(*shape) / 2, **TOL)
    check_grad(fn, well_conditioned(*shape) / 2, **TOL)


def test_slogdet_named_tuple_and_negative_determinant():
    a = -well_conditioned(3, 3)
    sign, logabsdet = out = spx.linalg.slogdet(spx.tensor(a))
    assert out.sign is sign and out.logabsdet is logabsdet and sign.item() == -1.0


@pytest.mark.parametrize("a,b,kw", [((4, 3), (4, 3), {}), ((3, 2), (3, 2), {"dim": 0}),
                                    ((2, 1, 3), (1, 4, 3), {})])  # fmt: skip
def test_cross(a, b, kw):
    check(lambda m, x, y: m.linalg.cross(x, y, **kw), a, b, rtol=1e-5, atol=1e-6)
    check_grad(lambda m, x, y: m.linalg.cross(x, y, **kw), a, b)


@pytest.mark.parametrize(
    "a,b,dim", [((3, 4), (4,), -1), ((2, 3), (2, 3), 0), ((2, 1, 3), (4, 3), 2)]
)
def test_vecdot(a, b, dim):
    check(lambda m, x, y: m.linalg.vecdot(x, y, dim=dim), a, b, rtol=1e-5, atol=1e-6)
    check_grad(lambda m, x, y: m.linalg.vecdot(x, y, dim=dim), a, b)


def test_vecdot_conjugates_the_first():
    x = (general(3) + 1j * general(3, seed=1)).astype(np.complex64)
    y = (general(3, seed=2) + 1j * general(3, seed=3)).astype(np.complex64)
    check(lambda m, a, b: m.linalg.vecdot(a, b), x, y, rtol=1e-5)


@pytest.mark.parametrize("shapes", [[(2, 3), (3, 4)], [(3,), (3, 4), (4, 5), (5,)],
                                    [(5, 2), (2, 6), (6, 3), (3, 1)], [(2, 3), (3,)]])  # fmt: skip
def test_multi_dot(shapes):
    fn = lambda m, *xs: m.linalg.multi_dot(list(xs))  # noqa: E731
    check(fn, *shapes, rtol=1e-5, atol=1e-5)
    check_grad(fn, *shapes, rtol=1e-4)


def test_diagonal_matmul_vander():
    check(lambda m, a: m.linalg.diagonal(a), (2, 3, 4))
    check(lambda m, a: m.linalg.diagonal(a, offset=1, dim1=0, dim2=2), (3, 2, 4))
    check_grad(lambda m, a: m.linalg.diagonal(a, offset=-1), (3, 3))
    check(lambda m, a, b: m.linalg.matmul(a, b), (2, 3), (3, 4), rtol=1e-5)
    check(lambda m, x: m.linalg.vander(x), (4,), rtol=1e-5)
    check(lambda m, x: m.linalg.vander(x, N=5), (2, 3), rtol=1e-5)
    check_grad(lambda m, x: m.linalg.vander(x, N=4), (2, 3), rtol=1e-4)
    check(lambda m, x: m.linalg.vander(x), np.array([1, 2, 3]))


@pytest.mark.parametrize(
    "fn,shapes",
    [
        (lambda m, a: m.linalg.det(a), [(2, 3)]),
        (lambda m, a: m.linalg.slogdet(a), [(3,)]),
        (lambda m, a: m.linalg.matrix_exp(a), [(2, 3)]),
        (lambda m, a: m.linalg.matrix_power(a, 2), [(2, 3)]),
        (lambda m, a, b: m.linalg.cross(a, b), [(3, 4), (3, 4)]),
        (lambda m, a, b: m.linalg.cross(a, b), [(2, 1, 3), (4, 3)]),
        (lambda m, a, b: m.linalg.vecdot(a, b), [(3, 4), (3, 5)]),
        (lambda m, a: m.linalg.multi_dot([a]), [(3, 3)]),
        (lambda m, a, b, c: m.linalg.multi_dot([a, b, c]), [(3, 3), (2, 3, 3), (3,)]),
        (lambda m, a, b: m.linalg.multi_dot([a, b]), [(2, 3), (4, 5)]),
        (lambda m, a: m.linalg.vander(a, N=1), [(3,)]),
    ],
)
def test_product_errors(fn, shapes):
    check_raises(fn, *shapes, error=RuntimeError)


def test_product_messages():
    with pytest.raises(RuntimeError, match=r"multi_dot\(\): tensor 1 must be 2D but got 3D"):
        spx.linalg.multi_dot([spx.ones(3, 3), spx.ones(2, 3, 3), spx.ones(3)])
    with pytest.raises(RuntimeError, match=r"dimension -1 must have length 3"):
        spx.linalg.cross(spx.ones(3, 4), spx.ones(3, 4))


def test_namespace_matches_torch_for_what_spx_has():
    ours = {n for n in dir(spx.linalg) if not n.startswith("_") and n[0].islower()}
    theirs = {n for n in dir(torch.linalg) if not n.startswith("_")}
    assert ours <= theirs, ours - theirs


@pytest.mark.parametrize(
    "fn",
    [
        lambda m, a: m.linalg.svdvals(a),
        lambda m, a: m.linalg.solve(a, a),
        lambda m, a: m.linalg.vecdot(a, a),
        lambda m, a: m.linalg.vector_norm(a),
        lambda m, a: m.fft.rfft(a),
    ],
)
def test_autocast_dtypes_follow_torchs_cpu_lists(fn):
    a = well_conditioned(3, 3)
    with spx.autocast("cpu"):
        got = fn(spx, spx.tensor(a))
    with torch.autocast("cpu"):
        want = fn(torch, torch.tensor(a))
    assert str(got.dtype) == str(want.dtype).removeprefix("torch.")
