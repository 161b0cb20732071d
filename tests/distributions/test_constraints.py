"""spx.distributions.constraints against torch.distributions.constraints."""

import numpy as np
import pytest

import spx
from spx.distributions import constraints as C
from tests.distributions._parity import host

torch = pytest.importorskip("torch")
TC = torch.distributions.constraints

_F = np.float32

VALUES = {
    "scalars": np.array([-2.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, np.nan, np.inf], _F),
    "vectors": np.array([[0.2, 0.8], [0.5, 0.6], [-0.1, 1.1], [1.0, 0.0], [2.0, 3.0]], _F),
    "matrices": np.array(
        [
            [[2.0, 0.0], [1.0, 1.0]],
            [[2.0, 1.0], [1.0, 1.0]],
            [[1.0, 2.0], [2.0, 1.0]],
            [[-1.0, 0.0], [0.5, 1.0]],
            [[1.0, 0.0], [0.0, 1.0]],
        ],
        _F,
    ),
    "symmetric_matrices": np.array(
        [
            [[2.0, 1.0], [1.0, 1.0]],
            [[1.0, 2.0], [2.0, 1.0]],
            [[1.0, 0.0], [0.0, 0.0]],
            [[1.0, 0.0], [0.0, 1.0]],
        ],
        _F,
    ),
}

# (name, arguments, which VALUES it checks)
CONSTRAINTS = [
    ("real", None, "scalars"),
    ("positive", None, "scalars"),
    ("nonnegative", None, "scalars"),
    ("unit_interval", None, "scalars"),
    ("boolean", None, "scalars"),
    ("nonnegative_integer", None, "scalars"),
    ("positive_integer", None, "scalars"),
    ("greater_than", (0.5,), "scalars"),
    ("greater_than_eq", (0.5,), "scalars"),
    ("less_than", (1.0,), "scalars"),
    ("interval", (-1.0, 1.0), "scalars"),
    ("half_open_interval", (-1.0, 1.0), "scalars"),
    ("integer_interval", (0, 2), "scalars"),
    ("real_vector", None, "vectors"),
    ("simplex", None, "vectors"),
    ("one_hot", None, "vectors"),
    ("multinomial", (3,), "vectors"),
    ("lower_triangular", None, "matrices"),
    ("lower_cholesky", None, "matrices"),
    ("square", None, "matrices"),
    ("symmetric", None, "matrices"),
    ("positive_definite", None, "symmetric_matrices"),
    ("positive_semidefinite", None, "symmetric_matrices"),
]


def _get(module, name, args):
    c = getattr(module, name)
    return c(*args) if args is not None else c


@pytest.mark.parametrize(("name", "args", "kind"), CONSTRAINTS, ids=[c[0] for c in CONSTRAINTS])
def test_check_and_repr_match_torch(name, args, kind):
    s, t = _get(C, name, args), _get(TC, name, args)
    v = VALUES[kind]
    got, want = s.check(spx.tensor(v)), t.check(torch.tensor(v))
    np.testing.assert_array_equal(host(got), want.numpy())
    assert repr(s) == repr(t)
    assert s.is_discrete == t.is_discrete
    assert s.event_dim == t.event_dim


def test_independent_reduces_the_reinterpreted_dims():
    v = np.array([[1.0, 2.0], [1.0, -1.0]], _F)
    s, t = C.independent(C.positive, 1), TC.independent(TC.positive, 1)
    np.testing.assert_array_equal(host(s.check(spx.tensor(v))), t.check(torch.tensor(v)).numpy())
    assert s.event_dim == 1 and repr(s) == repr(t)
    with pytest.raises(ValueError, match=r"Expected value\.dim"):
        C.independent(C.positive, 2).check(spx.tensor([1.0]))


def test_cat_and_stack_match_torch():
    v = np.array([[0.5, -1.0, 2.0], [1.5, 1.0, -2.0]], _F)
    s = C.cat([C.unit_interval, C.positive], dim=1, lengths=[1, 2])
    t = TC.cat([TC.unit_interval, TC.positive], dim=1, lengths=[1, 2])
    np.testing.assert_array_equal(host(s.check(spx.tensor(v))), t.check(torch.tensor(v)).numpy())
    s = C.stack([C.unit_interval, C.positive, C.real], dim=1)
    t = TC.stack([TC.unit_interval, TC.positive, TC.real], dim=1)
    np.testing.assert_array_equal(host(s.check(spx.tensor(v))), t.check(torch.tensor(v)).numpy())


def test_dependent_constraints_are_not_checkable():
    assert C.is_dependent(C.dependent) and not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity of dependent constraint"):
        C.dependent.check(spx.zeros(1))
    with pytest.raises(NotImplementedError):
        _ = C.dependent.event_dim
    assert C.dependent(is_discrete=True, event_dim=1).event_dim == 1

    class Thing:
        @C.dependent_property(is_discrete=False, event_dim=0)
        def support(self):
            return C.interval(0.0, 1.0)

    assert C.is_dependent(Thing.support) and Thing.support.event_dim == 0
    assert repr(Thing().support) == "Interval(lower_bound=0.0, upper_bound=1.0)"


def test_positive_definite_checks_each_matrix_of_a_mixed_batch():
    # torch returns only the symmetry check for the whole batch once any matrix in it is not
    # symmetric (so [[1, 2], [2, 1]] passes there); spx checks every matrix (no Python branch
    # on tensor values, which could not run inside spx.compile).
    v = VALUES["matrices"]
    got = host(C.positive_definite.check(spx.tensor(v)))
    np.testing.assert_array_equal(got, [False, True, False, False, True])
    got = host(C.positive_semidefinite.check(spx.tensor(v)))
    np.testing.assert_array_equal(got, [False, True, False, False, True])
