"""spx.range and spx.chain_matmul against torch's: values, dtypes, and torch's deprecation
warnings."""

import numpy as np
import pytest

import spx
from tests.tensor._parity import assert_same, check, check_grad

torch = pytest.importorskip("torch")


@pytest.mark.parametrize(
    "args,kwargs",
    [((1, 4), {}), ((0, 1, 0.25), {}), ((4, 1, -1), {}), ((0, 0.9, 0.3), {}), ((2, 2), {}),
     ((1, 4), {"dtype": "int32"}), ((0.5, 3.2, 0.7), {}), ((-3, 3, 2), {})],
)  # fmt: skip
def test_range_is_inclusive_and_float_by_default(args, kwargs):
    t_kw = {k: getattr(torch, v) for k, v in kwargs.items()}
    s_kw = {k: getattr(spx, v) for k, v in kwargs.items()}
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        want = torch.range(*args, **t_kw)
    with pytest.warns(UserWarning, match="torch.range is deprecated"):
        got = spx.range(*args, **s_kw)
    assert_same(got, want)


def test_range_with_the_wrong_step_sign_raises():
    with pytest.raises(RuntimeError), pytest.warns(UserWarning):
        torch.range(4, 1)
    with pytest.raises(RuntimeError, match="step sign"), pytest.warns(UserWarning):
        spx.range(4, 1)


def test_chain_matmul_warns_and_matches_torch():
    rng = np.random.default_rng(0)
    mats = [rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (3, 5), (5, 4))]
    with pytest.warns(UserWarning, match="chain_matmul is deprecated"):
        check(lambda m, a, b, c: m.chain_matmul(a, b, c), *mats, rtol=1e-5, atol=1e-5)
    with pytest.warns(UserWarning):
        check_grad(lambda m, a, b: m.chain_matmul(a, b), mats[0], mats[1])
    with pytest.warns(UserWarning):
        check(lambda m, a: m.chain_matmul(a), mats[0])


def test_chain_matmul_refuses_non_matrices():
    with pytest.raises(RuntimeError), pytest.warns(UserWarning):
        spx.chain_matmul(spx.ones(2, 3), spx.ones(3))
