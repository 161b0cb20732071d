"""spx.linalg's inverses and solves (inv, inv_ex, solve, solve_triangular, lstsq, tensorinv,
tensorsolve) and pinv/matrix_rank against torch.linalg's. Matrices are well-conditioned
(condition number ~3), so float32 results agree to ~1e-5 relative."""

import numpy as np
import pytest

import spx
from tests.linalg._matrices import general, spd, well_conditioned
from tests.tensor._parity import check, check_grad, check_raises

torch = pytest.importorskip("torch")

TOL = {"rtol": 1e-4, "atol": 1e-5}


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_inv(shape):
    check(lambda m, a: m.linalg.inv(a), well_conditioned(*shape), **TOL)
    check_grad(lambda m, a: m.linalg.inv(a), well_conditioned(*shape), **TOL)


def test_inv_ex():
    a = well_conditioned(2, 3, 3)
    check(lambda m, x: m.linalg.inv_ex(x), a, **TOL)
    check_grad(lambda m, x: m.linalg.inv_ex(x).inverse, a, **TOL)
    singular = np.stack([np.eye(3, dtype=np.float32), np.zeros((3, 3), np.float32)])
    singular[1, 0, 0] = 1.0
    got = spx.linalg.inv_ex(spx.tensor(singular)).info.tolist()
    assert got == torch.linalg.inv_ex(torch.tensor(singular)).info.tolist() == [0, 2]


def test_inv_ex_check_errors_raises_like_torch():
    check_raises(lambda m, a: m.linalg.inv_ex(a, check_errors=True), np.zeros((2, 2), np.float32))
    with pytest.raises(RuntimeError, match=r"diagonal element 1 is zero"):
        spx.linalg.inv_ex(spx.zeros(2, 2), check_errors=True)


SOLVES = [
    ("matrix", (3, 3), (3, 2), True),
    ("vector", (3, 3), (3,), True),
    ("batched_vector", (2, 3, 3), (2, 3), True),
    ("broadcast_A", (3, 3), (4, 3, 2), True),
    ("broadcast_B", (2, 3, 3), (3, 1), True),
    ("right", (3, 3), (2, 3), False),
    ("right_batched", (2, 3, 3), (2, 4, 3), False),
]


@pytest.mark.parametrize("a,b,left", [c[1:] for c in SOLVES], ids=[c[0] for c in SOLVES])
def test_solve(a, b, left):
    A = well_conditioned(*a)
    fn = lambda m, x, y: m.linalg.solve(x, y, left=left)  # noqa: E731
    check(fn, A, b, **TOL)
    check_grad(fn, A, b, **TOL)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(upper, left, unit):
    A = well_conditioned(2, 3, 3)  # the other triangle is ignored: not zeroed on purpose
    B = (2, 3, 4) if left else (2, 4, 3)

    def fn(m, x, y):
        return m.linalg.solve_triangular(x, y, upper=upper, left=left, unitriangular=unit)

    check(fn, A, B, **TOL)
    check_grad(fn, A, B, **TOL)


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("a,b", [((5, 3), (5, 2)), ((2, 5, 3), (2, 5, 2)), ((5, 3), (5,))])
def test_lstsq_overdetermined(driver, a, b):
    fn = lambda m, x, y: m.linalg.lstsq(x, y, driver=driver)  # noqa: E731
    check(fn, general(*a), b, rtol=1e-4, atol=1e-4)
    check_grad(lambda m, x, y: fn(m, x, y).solution, general(*a), b, rtol=1e-3, atol=1e-4)


@pytest.mark.parametrize("driver", ["gelsy", "gelsd", "gelss"])
def test_lstsq_underdetermined_gives_the_minimum_norm_solution(driver):
    fn = lambda m, x, y: m.linalg.lstsq(x, y, driver=driver)  # noqa: E731
    check(fn, general(3, 5), (3, 2), rtol=1e-4, atol=1e-4)


def test_lstsq_rank_deficient_rank():
    a = general(5, 3)
    a[:, 2] = a[:, 0] + a[:, 1]
    check(lambda m, x, y: m.linalg.lstsq(x, y, driver="gelsy").rank, a, (5, 2))
    check(lambda m, x, y: m.linalg.lstsq(x, y, rcond=1e-3, driver="gelsd")[0], a, (5, 2),
          rtol=1e-3, atol=1e-4)  # fmt: skip


@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("tols", [{}, {"atol": 0.5}, {"rtol": 0.2}, {"atol": 0.1, "rtol": 0.3}])
def test_pinv(hermitian, tols):
    a = spd(2, 4, 4) / 4 if hermitian else general(2, 4, 3)
    fn = lambda m, x: m.linalg.pinv(x, hermitian=hermitian, **tols)  # noqa: E731
    check(fn, a, rtol=1e-4, atol=1e-4)
    check_grad(fn, a, rtol=1e-3, atol=1e-4)


def test_pinv_rcond_positional_and_rank_deficient():
    a = general(4, 3)
    a[:, 2] = a[:, 0]
    check(lambda m, x: m.linalg.pinv(x, 1e-4), a, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("tols", [{}, {"atol": 2.0}, {"rtol": 0.5}, {"tol": 1.0}])
def test_matrix_rank(hermitian, tols):
    a = spd(2, 4, 4) if hermitian else general(2, 4, 3)
    if "tol" in tols:
        check(lambda m, x: m.linalg.matrix_rank(x, tols["tol"], hermitian), a)
    else:
        check(lambda m, x: m.linalg.matrix_rank(x, hermitian=hermitian, **tols), a)
    low = general(5, 2) @ general(2, 4)
    check(lambda m, x: m.linalg.matrix_rank(x), low)


def test_tensorinv_and_tensorsolve():
    a = well_conditioned(6, 6).reshape(2, 3, 6)
    check(lambda m, x: m.linalg.tensorinv(x, ind=2), a, **TOL)
    check_grad(lambda m, x: m.linalg.tensorinv(x, ind=2), a, **TOL)
    check(lambda m, x, y: m.linalg.tensorsolve(x, y), a, (2, 3), **TOL)
    check_grad(lambda m, x, y: m.linalg.tensorsolve(x, y), a, (2, 3), **TOL)
    moved = np.moveaxis(well_conditioned(6, 6).reshape(6, 2, 3), 0, 2).copy()
    check(lambda m, x, y: m.linalg.tensorsolve(x, y, dims=(0,)), moved.transpose(2, 0, 1).copy(),
          (2, 3), **TOL)  # fmt: skip


@pytest.mark.parametrize(
    "fn,shapes,error",
    [
        (lambda m, a: m.linalg.inv(a), [(2, 3)], RuntimeError),
        (lambda m, a, b: m.linalg.solve(a, b), [(3, 3), (4, 1)], RuntimeError),
        (lambda m, a, b: m.linalg.solve(a, b), [(2, 3), (2, 1)], RuntimeError),
        (lambda m, a, b: m.linalg.solve(a, b, left=False), [(3, 3), (3,)], RuntimeError),
        (lambda m, a, b: m.linalg.solve(a, b), [(2, 3, 3), (4, 3, 1)], RuntimeError),
        (lambda m, a, b: m.linalg.lstsq(a, b), [(3, 3), (4, 3)], RuntimeError),
        (lambda m, a, b: m.linalg.lstsq(a, b, driver="foo"), [(3, 3), (3, 3)], RuntimeError),
        (lambda m, a: m.linalg.pinv(a), [(3,)], RuntimeError),
        (lambda m, a: m.linalg.tensorinv(a, ind=0), [(2, 2)], RuntimeError),
        (lambda m, a: m.linalg.tensorinv(a, ind=1), [(2, 3)], RuntimeError),
        (lambda m, a, b: m.linalg.solve_triangular(a, b, upper=True), [(3, 3), (2, 1)],
         RuntimeError),
    ],
)  # fmt: skip
def test_solver_errors(fn, shapes, error):
    check_raises(fn, *shapes, error=error)


def test_solver_messages():
    with pytest.raises(RuntimeError, match=r"equation AX = B \(3x3 and 4x1\)"):
        spx.linalg.solve(spx.eye(3), spx.ones(4, 1))
    with pytest.raises(RuntimeError, match=r"should be one of \(gels, gelsy, gelsd, gelss\)"):
        spx.linalg.lstsq(spx.eye(3), spx.ones(3, 1), driver="foo")
    with pytest.raises(TypeError, match=r"rtol= or its older name rcond"):
        spx.linalg.pinv(spx.eye(2), 0.1, rtol=0.1)


def _failures():
    """Matrices torch's LAPACK calls reject: singular (a zero pivot), not positive-definite
    (the leading minor of order 2; of order 1 for -I), batched with a good one first."""
    eye = np.eye(3, dtype=np.float32)
    singular = np.array([[1, 2, 0], [2, 4, 0], [0, 0, 1]], np.float32)
    indefinite = np.array([[4, 2, 0], [2, 1, 0], [0, 0, 1]], np.float32)
    return eye, singular, indefinite


def _raised(fn):
    try:
        out = fn()
        out = out.tolist() if hasattr(out, "tolist") else out  # a read: deferred checks run
    except RuntimeError as e:
        return type(e).__name__.lstrip("_"), str(e).split("\n")[0]
    return "ok", out


CALLS = [
    ("cholesky", lambda m, a: m.linalg.cholesky(a)),
    ("cholesky_upper", lambda m, a: m.linalg.cholesky(a.mT.contiguous(), upper=True)),
    ("tensor_cholesky", lambda m, a: m.linalg.cholesky(a).sum()),
    ("inv", lambda m, a: m.linalg.inv(a)),
    ("inverse", lambda m, a: a.inverse().sum()),
    ("solve", lambda m, a: m.linalg.solve(a, m.ones(a.shape[-1]))),
    ("solve_right", lambda m, a: m.linalg.solve(a, m.ones(2, a.shape[-1]), left=False)),
    ("cholesky_ex", lambda m, a: m.linalg.cholesky_ex(a).info),
    ("cholesky_ex_check", lambda m, a: m.linalg.cholesky_ex(a, check_errors=True).info),
    ("solve_ex", lambda m, a: m.linalg.solve_ex(a, m.ones(a.shape[-1])).info),
    ("solve_ex_check", lambda m, a: m.linalg.solve_ex(a, m.ones(3), check_errors=True).info),
    ("inv_ex", lambda m, a: m.linalg.inv_ex(a).info),
]


@pytest.mark.parametrize("call", [c[1] for c in CALLS], ids=[c[0] for c in CALLS])
@pytest.mark.parametrize("which", ["singular", "indefinite", "negative", "batch", "nan", "good"])
def test_singular_and_indefinite_matrices_raise_torchs_linalgerror(call, which):
    # spx returned NaNs and infs where torch raises; the *_ex functions report LAPACK's info.
    eye, singular, indefinite = _failures()
    a = {
        "singular": singular,
        "indefinite": indefinite,
        "negative": -eye,
        "batch": np.stack([eye, indefinite, singular]),
        "nan": np.where(eye == 1, eye, np.nan).astype(np.float32),
        "good": eye * 2 + 0.5,
    }[which]
    want = _raised(lambda: call(torch, torch.tensor(a)))
    got = _raised(lambda: call(spx, spx.tensor(a)))
    if want[0] == "ok" and not isinstance(want[1], list | int):
        assert got[0] == "ok"
    elif want[0] == "ok" and np.isnan(np.asarray(want[1], dtype=float)).any():
        assert got[0] == "ok" and np.isnan(np.asarray(got[1], dtype=float)).any()
    else:
        if want[0] == "ok":  # values: compare where torch's are finite
            want = (want[0], np.asarray(want[1], np.float64).round(4).tolist())
            got = (got[0], np.asarray(got[1], np.float64).round(4).tolist())
        assert got == want
    assert issubclass(spx.linalg.LinAlgError, RuntimeError)


def test_empty_matrices_factorize_and_tensor_cholesky_names_itself():
    for shape in ((0, 0), (3, 0, 0)):
        got = spx.linalg.cholesky_ex(spx.zeros(*shape))
        want = torch.linalg.cholesky_ex(torch.zeros(*shape))
        assert tuple(got.L.shape) == tuple(want.L.shape)
        assert got.info.tolist() == want.info.tolist()
    with pytest.raises(spx.linalg.LinAlgError, match=r"^cholesky: "):
        spx.tensor([[1.0, 2.0], [2.0, 1.0]]).cholesky().sum().item()


def test_a_failing_cholesky_raises_at_the_next_read_and_leaves_compiled_steps_alone():
    _, _, indefinite = _failures()
    factor = spx.linalg.cholesky(spx.tensor(indefinite) * spx.ones(1))  # a pending value
    with pytest.raises(spx.linalg.LinAlgError, match="leading minor of order 2"):
        factor.sum().item()

    @spx.compile
    def step(a):
        return spx.linalg.cholesky(a)

    assert np.isnan(step(spx.tensor(indefinite)).numpy()).any()  # traced: NaN, as JAX gives
