"""The Distribution base class: validation switches, inputs, traced values, subclassing."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
import spx.distributions as D
from spx import nn
from tests.distributions._parity import host

torch = pytest.importorskip("torch")


@pytest.fixture
def restore_validation():
    yield
    D.Distribution.set_default_validate_args(True)


def test_validation_is_on_by_default_as_in_torch():
    assert D.Distribution._validate_args is torch.distributions.Distribution._validate_args
    assert D.Normal(0.0, 1.0)._validate_args


def test_set_default_validate_args_switches_every_new_distribution(restore_validation):
    D.Distribution.set_default_validate_args(False)
    d = D.Normal(0.0, -1.0)  # not checked
    assert np.isnan(host(d.log_prob(spx.tensor(float("nan")))))
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Normal(0.0, -1.0, validate_args=True)  # the argument wins
    D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError, match="Expected parameter scale"):
        D.Normal(0.0, -1.0)
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


def test_expand_keeps_the_validation_setting():
    d = D.Normal(spx.zeros(2), spx.ones(2), validate_args=False).expand((3, 2))
    assert not d._validate_args
    d = D.Normal(spx.zeros(2), spx.ones(2)).expand((3, 2))
    with pytest.raises(ValueError, match="Expected value argument"):
        d.log_prob(spx.full((3, 2), float("nan")))


def test_jax_and_numpy_arrays_are_accepted_as_parameters_and_values():
    d = D.Normal(jnp.zeros(3), np.ones(3, np.float32))
    assert isinstance(d.loc, spx.Tensor) and d.batch_shape == (3,)
    lp = d.log_prob(jnp.zeros(3))
    assert isinstance(lp, spx.Tensor)
    np.testing.assert_allclose(host(lp), -0.5 * np.log(2 * np.pi), rtol=1e-6)
    c = D.Categorical(logits=np.zeros((2, 3), np.float32))
    assert c.log_prob(np.array([0, 2])).shape == (2,)


def test_sample_n_warns_and_draws_n():
    with pytest.warns(FutureWarning, match="sample_n"):
        x = D.Normal(spx.zeros(2), 1.0).sample_n(4)
    assert x.shape == (4, 2)


def test_sample_carries_no_gradient_and_rsample_does():
    loc = spx.zeros(2, requires_grad=True)
    d = D.Normal(loc, 1.0)
    assert not d.sample().requires_grad
    assert d.rsample().requires_grad
    with pytest.raises(NotImplementedError, match="has_rsample is False"):
        D.Bernoulli(spx.tensor([0.5])).rsample()


def test_repr_matches_torch():
    assert repr(D.Normal(0.0, 1.0)) == repr(torch.distributions.Normal(0.0, 1.0))
    s = repr(D.Categorical(probs=spx.ones(2, 3)))
    assert s == "Categorical(probs: spx.Size([2, 3]))"


def test_subclass_rules_follow_torch():
    class NoConstraints(D.Distribution):
        pass

    with pytest.warns(UserWarning, match="does not define `arg_constraints`"):
        NoConstraints()
    NoConstraints(validate_args=False)
    d = NoConstraints(validate_args=False)
    for name in ("mean", "variance"):
        with pytest.raises(NotImplementedError):
            getattr(d, name)
    with pytest.raises(NotImplementedError):
        d.log_prob(spx.zeros(1))

    class Shifted(D.Normal):
        def __init__(self, loc):
            super().__init__(loc, 1.0)

    with pytest.raises(NotImplementedError, match=r"must also define a custom \.expand"):
        Shifted(spx.zeros(2)).expand((3, 2))


def test_validation_is_skipped_for_traced_values_inside_spx_compile():
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.loc = nn.Parameter(spx.zeros(2))

    @spx.compile
    def log_prob(model, x, scale):
        return D.Normal(model.loc, scale).log_prob(x)

    # Values only known when the program runs: the checks can't run, nothing raises.
    out = host(log_prob(Model(), spx.tensor([float("nan"), 0.0]), spx.tensor([1.0, -1.0])))
    assert np.isnan(out).all()


def test_validation_is_skipped_inside_jax_jit():
    @jax.jit
    def f(x):
        return jnp.asarray(D.Normal(0.0, 1.0).log_prob(spx.as_tensor(x)))

    assert np.isnan(np.asarray(f(jnp.array([jnp.nan])))).all()
    # Shape errors do not depend on values and still raise under a trace.
    with pytest.raises(ValueError, match="not broadcastable"):
        jax.jit(lambda x: jnp.asarray(D.Normal(spx.zeros(3), 1.0).log_prob(spx.as_tensor(x))))(
            jnp.zeros(2)
        )
