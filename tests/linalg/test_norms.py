"""spx.linalg's norms (vector_norm, matrix_norm, norm, cond) against torch.linalg's."""

import math

import pytest

import spx
from tests.linalg._matrices import general, well_conditioned
from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

VECTOR_ORDS = [2, 1, 0, 3, 0.5, -1, -2, math.inf, -math.inf]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), ((0, 2), True), (-1, True)])
def test_vector_norm(ord, dim, keepdim):
    fn = lambda m, x: m.linalg.vector_norm(x, ord, dim, keepdim)  # noqa: E731
    check(fn, (3, 4, 2), rtol=1e-5, atol=1e-6)
    if ord not in (0,):  # 0 counts non-zeros: no gradient in either library
        check_grad(fn, (3, 4, 2), rtol=1e-4, atol=1e-5)


def test_vector_norm_dtype_and_complex():
    check(lambda m, x: m.linalg.vector_norm(x, dtype=m.float32), (3,))
    z = (general(4) + 1j * general(4, seed=1)).astype("complex64")
    for p in (2, 1, 0, math.inf):
        check(lambda m, x, p=p: m.linalg.vector_norm(x, p), z, rtol=1e-5)


def test_vector_norm_zero_vector_gradient_is_zero_as_torch():
    import numpy as np

    check_grad(lambda m, x: m.linalg.vector_norm(x), np.zeros((3,), np.float32))


MATRIX_ORDS = ["fro", "nuc", math.inf, -math.inf, 1, -1, 2, -2]


@pytest.mark.parametrize("ord", MATRIX_ORDS)
@pytest.mark.parametrize("dim,keepdim", [((-2, -1), False), ((0, 2), True), ((2, 0), False)])
def test_matrix_norm(ord, dim, keepdim):
    fn = lambda m, a: m.linalg.matrix_norm(a, ord, dim, keepdim)  # noqa: E731
    a = general(3, 2, 4)
    # Singular values come from an SVD: float32 rounding, rtol 1e-5 of the largest.
    check(fn, a, rtol=1e-5, atol=1e-5)
    check_grad(fn, a, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"ord": 1},
        {"ord": "fro"},
        {"ord": "nuc"},
        {"ord": 3, "dim": 1},
        {"ord": -math.inf, "dim": (0, 1)},
        {"dim": (1, 2), "keepdim": True},
        {"ord": 2, "dim": 0, "keepdim": True},
    ],
)
def test_norm_dispatches_like_torch(args):
    shape = (3, 4) if "dim" not in args or args["dim"] != (1, 2) else (2, 3, 4)
    check(lambda m, a: m.linalg.norm(a, **args), shape, rtol=1e-5, atol=1e-5)
    check_grad(lambda m, a: m.linalg.norm(a, **args), shape, rtol=1e-4)


def test_norm_of_a_vector_with_ord():
    check(lambda m, x: m.linalg.norm(x, 3), (5,), rtol=1e-5)
    check(lambda m, x: m.linalg.norm(x, math.inf), (5,))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf])
def test_cond(p):
    a = well_conditioned(2, 3, 3)
    check(lambda m, x: m.linalg.cond(x, p), a, rtol=1e-4)
    if p in (None, 2, -2):  # torch's backward of the other orders fails (an in-place inv_ex)
        check_grad(lambda m, x: m.linalg.cond(x, p), a, rtol=1e-3, atol=1e-4)


def test_cond_of_a_rectangular_matrix():
    check(lambda m, x: m.linalg.cond(x), general(4, 3), rtol=1e-4)


@pytest.mark.parametrize(
    "fn,shape,error",
    [
        (lambda m, a: m.linalg.matrix_norm(a, 3), (3, 3), RuntimeError),
        (lambda m, a: m.linalg.matrix_norm(a, "abc"), (3, 3), RuntimeError),
        (lambda m, a: m.linalg.matrix_norm(a), (3,), RuntimeError),
        (lambda m, a: m.linalg.matrix_norm(a, dim=(0,)), (3, 3), RuntimeError),
        (lambda m, a: m.linalg.matrix_norm(a, dim=(0, 0)), (3, 3), RuntimeError),
        (lambda m, a: m.linalg.matrix_norm(a, dim=(0, 2)), (3, 3), IndexError),
        (lambda m, a: m.linalg.vector_norm(a, "fro"), (3,), TypeError),
        (lambda m, a: m.linalg.vector_norm(a, dim=3), (3, 3), IndexError),
        (lambda m, a: m.linalg.norm(a, 2), (3, 3, 3), RuntimeError),
        (lambda m, a: m.linalg.norm(a, "fro"), (3,), RuntimeError),
        (lambda m, a: m.linalg.norm(a, 2, dim=(0, 1, 2)), (3, 3, 3), RuntimeError),
        (lambda m, a: m.linalg.cond(a, 1), (2, 3), RuntimeError),
        (lambda m, a: m.linalg.cond(a, 3), (3, 3), RuntimeError),
    ],
)
def test_norm_errors(fn, shape, error):
    check_raises(fn, shape, error=error)


def test_norm_error_messages_name_the_value_and_fix():
    with pytest.raises(RuntimeError, match=r"Order 3 not supported.*vector_norm"):
        spx.linalg.matrix_norm(spx.ones(2, 2), 3)
    with pytest.raises(TypeError, match=r"'ord' must be a number, not str.*matrix_norm"):
        spx.linalg.vector_norm(spx.ones(2), "fro")
    with pytest.raises(RuntimeError, match=r"Got 3D\. Pass dim="):
        spx.linalg.norm(spx.ones(2, 2, 2), 1)
    with pytest.raises(RuntimeError, match=r"floating point or complex.*A.float\(\)"):
        spx.linalg.vector_norm(spx.ones(2, dtype=spx.int32))


def test_numpy_aliases():
    check(lambda m, x: m.linalg.vector_norm(x, axis=1, keepdims=True), (3, 4))
