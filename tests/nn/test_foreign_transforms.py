"""Modules under a plain ``jax.jit`` / ``jax.grad`` ("foreign" transforms, not spx's own):
state updates are never silently dropped and tracers never leak into spx's state."""

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import spx
from spx import nn

torch = pytest.importorskip("torch")

X = jnp.asarray(np.linspace(-2, 2, 12, dtype=np.float32).reshape(4, 3))


def test_dropout_under_jax_jit_raises_and_leaves_the_generator_usable():
    spx.manual_seed(0)
    drop = nn.Dropout(0.5)
    with pytest.raises(RuntimeError, match=r"(?s)plain JAX transform.*spx\.compile.*model\.eval"):
        jax.jit(lambda x: drop(x))(X)
    # Before: the generator held a tracer and every later eager draw raised.
    assert not isinstance(spx.random.get_key(), jax.core.Tracer)
    assert nn.Linear(3, 3).weight.shape == (3, 3)
    with pytest.raises(RuntimeError, match="plain JAX transform"):
        jax.jit(lambda m, x: m(x))(drop, X)  # the module as an argument: the same


def test_dropout_under_spx_compile_draws_fresh_masks():
    spx.manual_seed(0)
    drop = nn.Dropout(0.5)
    step = spx.compile(lambda m, x: m(x))
    masks = [np.asarray(step(drop, jnp.ones((64,)))) != 0 for _ in range(2)]
    assert not np.array_equal(masks[0], masks[1])


def test_dropout_under_eager_jax_grad_is_correct():
    # No jit: the key stays concrete, the mask is an ordinary constant and the gradient is
    # mask / (1 - p), as torch's.
    spx.manual_seed(0)
    drop = nn.Dropout(0.5)
    before = spx.random.get_key()
    out, grad = jax.value_and_grad(lambda x: jnp.asarray(drop(x).sum()))(jnp.ones((32,)))
    kept = np.asarray(grad) != 0
    np.testing.assert_allclose(np.asarray(grad)[kept], 2.0)
    np.testing.assert_allclose(float(out), 2.0 * kept.sum())
    assert spx.random.get_key() is not before  # the generator advanced, concretely
    assert not isinstance(spx.random.get_key(), jax.core.Tracer)


def test_batchnorm_training_closed_over_by_jax_jit_raises():
    # Before: ran, and left tracers in the module's buffers.
    bn = nn.BatchNorm1d(3)
    with pytest.raises(RuntimeError, match=r"(?s)BatchNorm1d\..*plain JAX transform.*spx\.compile"):
        jax.jit(lambda x: jnp.asarray(bn(x).sum()))(X)
    np.testing.assert_array_equal(np.asarray(bn.running_mean), np.zeros(3))
    assert not isinstance(bn.running_mean, jax.core.Tracer)
    assert int(bn.num_batches_tracked) == 0


def test_batchnorm_updates_dropped_by_jax_jit_are_reported():
    # Before: the traced copy's new statistics vanished without a word.
    bn = nn.BatchNorm1d(3)

    def loss(m, x):
        return jnp.asarray(m(x).sum())

    with pytest.warns(RuntimeWarning, match=r"(?s)running_mean.*dropped.*return the module") as w:
        jax.jit(loss)(bn, X)
    assert w[0].filename == __file__  # points at the user's line that ran the module
    np.testing.assert_array_equal(np.asarray(bn.running_mean), np.zeros(3))


def test_batchnorm_module_returned_from_jax_jit_carries_torchs_statistics():
    t_bn = torch.nn.BatchNorm1d(3)
    t_out = t_bn(torch.tensor(np.asarray(X)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # handed on, so nothing is reported
        out, updated = jax.jit(lambda m, x: (m(x), m))(nn.BatchNorm1d(3), X)
    np.testing.assert_allclose(np.asarray(out), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        np.asarray(updated.running_mean), t_bn.running_mean.numpy(), rtol=1e-6, atol=1e-7
    )
    assert int(updated.num_batches_tracked) == 1


def test_batchnorm_under_eager_jax_grad_raises_with_the_right_code():
    # Even without jit, the new statistics are JVP tracers under jax.grad: storing them would
    # leak tracers into the module. The issue allows "update correctly, or raise an error
    # that shows the right code"; torch users get the same numbers with loss.backward().
    bn = nn.BatchNorm1d(3)
    with pytest.raises(RuntimeError, match=r"(?s)BatchNorm1d\.\w+.*spx\.compile"):
        jax.grad(lambda x: jnp.asarray(bn(x).sum()))(X)
    assert not isinstance(bn.running_mean._data, jax.core.Tracer)
    np.testing.assert_array_equal(np.asarray(bn.running_mean), np.zeros(3))
    assert int(bn.num_batches_tracked) == 0  # nothing half-written


def test_batchnorm_right_code_matches_torch():
    t_bn = torch.nn.BatchNorm1d(3)
    t_out = t_bn(torch.tensor(np.asarray(X)))
    bn = nn.BatchNorm1d(3)
    out = spx.compile(lambda m, x: m(x))(bn, X)  # the code the error shows
    # (a compiled forward's result requires grad, as torch.compile's: detach for numpy)
    np.testing.assert_allclose(
        np.asarray(out.detach()), t_out.detach().numpy(), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        np.asarray(bn.running_mean), t_bn.running_mean.numpy(), rtol=1e-6, atol=1e-7
    )
    np.testing.assert_allclose(
        np.asarray(bn.running_var), t_bn.running_var.numpy(), rtol=1e-6, atol=1e-7
    )
    # In eval mode nothing is written, so a plain jax.jit is fine and matches torch.
    bn.eval(), t_bn.eval()
    out = jax.jit(lambda m, x: m(x))(bn, X)
    t_out = t_bn(torch.tensor(np.asarray(X)))
    np.testing.assert_allclose(np.asarray(out), t_out.detach().numpy(), rtol=1e-5, atol=1e-6)
