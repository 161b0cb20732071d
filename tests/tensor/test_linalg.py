"""Matrix products and linear algebra methods of spx.Tensor against torch, with gradients."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import check, check_grad, check_raises, data

torch = pytest.importorskip("torch")


def _spd(n: int, batch: tuple = ()) -> np.ndarray:
    """Well-conditioned matrices (a @ a.T + n I)."""
    a = data((*batch, n, n), 11)
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(np.float32)


SQUARE = [
    ("det", lambda m, x: x.det()),
    ("inverse", lambda m, x: x.inverse()),
    ("logdet", lambda m, x: x.logdet()),
    ("slogdet", lambda m, x: x.slogdet()),
    ("matrix_power_3", lambda m, x: x.matrix_power(3)),
    ("matrix_power_0", lambda m, x: x.matrix_power(0)),
    ("matrix_power_neg", lambda m, x: x.matrix_power(-2)),
    ("matrix_exp", lambda m, x: (x / 10).matrix_exp()),
    ("pinverse", lambda m, x: x.pinverse()),
]


@pytest.mark.parametrize("fn", [c[1] for c in SQUARE], ids=[c[0] for c in SQUARE])
@pytest.mark.parametrize("batch", [(), (2,)], ids=["matrix", "batched"])
def test_square_matrix_functions(fn, batch):
    x = _spd(3, batch)
    check(fn, x, rtol=1e-4, atol=1e-4)
    check_grad(fn, x, rtol=1e-3, atol=1e-4)


def test_logdet_of_negative_and_singular():
    check(lambda m, x: x.logdet(), np.array([[0.0, 1.0], [1.0, 0.0]], np.float32))  # det -1
    check(lambda m, x: x.logdet(), np.zeros((2, 2), np.float32))


def test_non_square_errors():
    for name in ("det", "inverse", "logdet", "slogdet", "matrix_exp"):
        check_raises(lambda m, x, n=name: getattr(x, n)(), (2, 3), error=RuntimeError)
    check_raises(lambda m, x: x.det(), (3,), error=RuntimeError)


ADDS = [
    ("addmv", lambda m, x, a, b: x.addmv(a, b, beta=0.5, alpha=2), (2,), (2, 3), (3,)),
    ("addr", lambda m, x, a, b: x.addr(a, b, alpha=-1), (2, 3), (2,), (3,)),
    ("addbmm", lambda m, x, a, b: x.addbmm(a, b, beta=2), (2, 4), (3, 2, 5), (3, 5, 4)),
    ("addmm", lambda m, x, a, b: x.addmm(a, b), (2, 4), (2, 3), (3, 4)),
]


@pytest.mark.parametrize("fn,x,a,b", [c[1:] for c in ADDS], ids=[c[0] for c in ADDS])
def test_add_products(fn, x, a, b):
    check(fn, x, a, b, rtol=1e-5, atol=1e-5)
    check_grad(fn, x, a, b, rtol=1e-4)
    name = fn.__code__.co_names[0]

    def inplace(m, x, a, b):
        y = x.clone()
        out = getattr(y, name + "_")(a, b)
        assert out is y
        return y

    check(inplace, x, a, b, rtol=1e-5, atol=1e-5)


def test_cross_dist_adjoint():
    check(lambda m, a, b: a.cross(b, dim=-1), (4, 3), (4, 3))
    check(lambda m, a, b: a.cross(b, dim=0), (3, 2), (3, 2))
    check_grad(lambda m, a, b: a.cross(b, dim=1), (4, 3), (4, 3))
    check(lambda m, a, b: a.dist(b), (2, 3), (2, 3))
    check(lambda m, a, b: a.dist(b, 1), (2, 3), (3,))
    check(lambda m, a: a.adjoint(), (2, 3, 4))
    check(lambda m, a: a.mH, (2, 3))
    check(lambda m, a: a.H, (2, 3))
    check_raises(lambda m, a: a.H, (2, 3, 4), error=RuntimeError)
    check_raises(lambda m, a, b: a.cross(b, dim=1), (4, 3), (4, 3)[::-1], error=RuntimeError)


def test_outer_inner_kron_vdot_methods():
    check(lambda m, a, b: a.outer(b), (3,), (2,))
    check(lambda m, a, b: a.ger(b), (3,), (2,))
    check(lambda m, a, b: a.inner(b), (2, 3), (3,))
    check(lambda m, a, b: a.kron(b), (2, 1), (1, 3))
    check(lambda m, a, b: a.vdot(b), (4,), (4,))
    check_grad(lambda m, a, b: a.kron(b), (2, 1), (2, 3))


def test_functions():
    x = _spd(3)
    for name in ("det", "inverse", "logdet", "matrix_exp", "pinverse", "adjoint"):
        check(lambda m, t, n=name: getattr(m, n)(t), x, rtol=1e-4, atol=1e-4)
    check(lambda m, t: m.slogdet(t), x, rtol=1e-4)
    check(lambda m, t: m.matrix_power(t, 2), x, rtol=1e-5)
    assert spx.slogdet(spx.tensor(x)).sign.item() == 1.0
    check(lambda m, v, a, b: m.addmv(v, a, b), (2,), (2, 3), (3,))
    check(lambda m, v, a, b: m.addr(v, a, b), (2, 3), (2,), (3,))
    check(lambda m, v, a, b: m.addbmm(v, a, b), (2, 2), (3, 2, 4), (3, 4, 2))
